// The Kubernetes control plane, kubelet and kubectl of scripts/k8s.sh as one binary (a
// "hyperkube"): k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces the staging
// modules), so this module requires it and pins each staging module to its published
// release. The component to run is the name the binary is called by (scripts/k8s.sh makes
// one symlink per component).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

var components = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kubelet":                 kubelet.NewKubeletCommand,
}

func main() {
	name := filepath.Base(os.Args[0])
	if name == "kubectl" {
		// kubectl prints its own errors, as its own main does.
		if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
		return
	}
	command, ok := components[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "%s: call me as kube-apiserver, kube-controller-manager, kube-scheduler, kubelet or kubectl\n", name)
		os.Exit(2)
	}
	os.Exit(cli.Run(command()))
}
