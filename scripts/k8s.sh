#!/usr/bin/env bash
# A one-node Kubernetes on this machine's loopback, for `loadrig kube`'s end-to-end test
# (docs/distributed.md): no registry, no Docker daemon, no pod network needed.
#
#   scripts/k8s.sh build  install Debian's packages and build the components and the pause
#                         image (cached), starting nothing: scripts/test.sh runs it beside cargo
#   scripts/k8s.sh up     install Debian's packages, build the components (cached), start
#                         containerd, etcd, the control plane and a kubelet, import the
#                         images (pause, loadrig); prints the environment to use it
#   scripts/k8s.sh env    export lines: eval "$(scripts/k8s.sh env)"
#   scripts/k8s.sh why [NAMESPACE]   each pod's state and reason, and the warning events
#   scripts/k8s.sh down   stop it all by pid, undo what the kubelet changed (sysctls,
#                         iptables chains), unmount and remove the state folder
#   scripts/k8s.sh e2e    up, the end-to-end test (tests/integration/kube_cluster.rs), down
#
# kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl are built
# from Go modules (scripts/k8s/kube: one binary called by each name) into
# ${XDG_CACHE_HOME:-~/.cache}/loadrig/k8s/VERSION, which outlives the clone: a second `up`
# takes seconds. Everything else lives in ${LOADRIG_K8S_DIR:-/tmp/loadrig-k8s}. One
# cluster per machine (fixed loopback ports). Needs root (containers, mounts).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

VERSION=v$(sed -n 's/^\tk8s.io\/kubernetes v\(.*\)$/\1/p' scripts/k8s/kube/go.mod | head -1)
CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/loadrig/k8s
CACHE=$CACHE_ROOT/$VERSION
STATE=$(realpath -m "${LOADRIG_K8S_DIR:-/tmp/loadrig-k8s}")
BIN=$CACHE/bin
NODE=loadrig-node
API_PORT=16443
ETCD_PORTS=(12379 12380)
PAUSE_IMAGE=loadrig.local/pause:1
LOADRIG_IMAGE=loadrig.local/loadrig:e2e
# The image for the test: the dev profile links in a fraction of a release build's time.
IMAGE_PROFILE=${LOADRIG_K8S_PROFILE:-dev}
COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
# What the kubelet sets on start; restored by `down`.
SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.ip_forward)
# Host folders the runtime creates outside the state folder; removed by `down` if `up` made them.
HOST_DIRS=(/run/containerd /var/log/containers /var/log/pods /var/lib/cni /run/netns)
export PATH=$BIN:$PATH KUBECONFIG=$STATE/kubeconfig

say() { echo "k8s: $*" >&2; }
die() {
    say "error: $*"
    exit 1
}
ctr_() { ctr --address "$STATE/containerd/containerd.sock" -n k8s.io "$@"; }
alive() { [ -f "$STATE/pids/$1" ] && kill -0 "$(cat "$STATE/pids/$1")" 2>/dev/null; }

install() {
    local need=()
    command -v containerd >/dev/null || need+=(containerd)
    command -v runc >/dev/null || need+=(runc)
    command -v etcd >/dev/null || need+=(etcd-server)
    [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
    command -v musl-gcc >/dev/null || need+=(musl-tools)
    command -v iptables-save >/dev/null || need+=(iptables)
    command -v openssl >/dev/null || need+=(openssl)
    [ ${#need[@]} -eq 0 ] && return
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null ||
        die "needs Debian's ${need[*]} (apt-get as root)"
    say "installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# The components, built once per version; the Go caches (3 GB) go when the binary is made.
build_kube() {
    if [ -x "$BIN/kube" ]; then
        return
    fi
    command -v go >/dev/null || die "needs Go 1.23 or later to build Kubernetes $VERSION"
    say "building Kubernetes $VERSION from Go modules into $BIN (once; minutes)"
    mkdir -p "$BIN"
    local started=$SECONDS
    (
        cd scripts/k8s/kube
        export GOMODCACHE=$CACHE_ROOT/go/mod GOCACHE=$CACHE_ROOT/go/build GOTOOLCHAIN=local CGO_ENABLED=0
        local minor=${VERSION#v1.}
        nice -n 10 go build -mod=readonly -trimpath -o "$BIN/kube.tmp" -ldflags "-s -w \
            -X k8s.io/component-base/version.gitVersion=$VERSION \
            -X k8s.io/component-base/version.gitMajor=1 \
            -X k8s.io/component-base/version.gitMinor=${minor%%.*}" .
    )
    mv "$BIN/kube.tmp" "$BIN/kube"
    for c in "${COMPONENTS[@]}"; do ln -sf kube "$BIN/$c"; done
    chmod -R u+w "$CACHE_ROOT/go" && rm -rf "$CACHE_ROOT/go"
    say "built in $((SECONDS - started)) s"
}

# The pod sandbox's image, from scripts/k8s/pause.c; cached by the source's hash.
build_pause() {
    local hash
    hash=$(sha256sum scripts/k8s/pause.c | cut -c1-12)
    PAUSE_TAR=$CACHE/pause-$hash.tar
    [ -f "$PAUSE_TAR" ] && return
    local rootfs
    rootfs=$(mktemp -d)
    musl-gcc -static -Os -o "$rootfs/pause" scripts/k8s/pause.c
    strip "$rootfs/pause"
    scripts/oci-image.sh "$rootfs" $PAUSE_IMAGE "$PAUSE_TAR" --user 65535:65535 --entrypoint /pause
    rm -rf "$rootfs"
}

build_loadrig() {
    LOADRIG_TAR=$ROOT/target/k8s/loadrig-$IMAGE_PROFILE.tar
    mkdir -p target/k8s
    scripts/image.sh --profile "$IMAGE_PROFILE" --ref $LOADRIG_IMAGE -o "$LOADRIG_TAR" >/dev/null
}

start() {
    local name=$1
    shift
    nohup "$@" >"$STATE/logs/$name.log" 2>&1 &
    echo $! >"$STATE/pids/$name"
}

wait_for() {
    local what=$1 seconds=$2
    shift 2
    for _ in $(seq $((seconds * 5))); do
        "$@" >/dev/null 2>&1 && return
        sleep 0.2
    done
    die "$what not ready after ${seconds}s (logs: $STATE/logs)"
}

# The rules and the chains of our own in every table (the built-in chains of a table that
# was first used meanwhile are no change).
iptables_rules() {
    for t in iptables ip6tables; do
        echo "# $t"
        "$t-save" 2>/dev/null | grep -E '^(-A |:[^ ]+ - )' | sed 's/ \[[0-9:]*\]$//' || true
    done
}

# What `down` must undo or check: the sysctls, the iptables chains, the host folders.
record_host() {
    for s in "${SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done >"$STATE/sysctls"
    iptables_rules >"$STATE/iptables.before"
    for d in "${HOST_DIRS[@]}"; do [ -e "$d" ] || echo "$d"; done >"$STATE/host-dirs"
    find /sys/fs/cgroup -maxdepth 2 -name k8s.io >"$STATE/cgroups.before" 2>/dev/null || true
    ip -br link | cut -d' ' -f1 >"$STATE/links.before"
}

write_configs() {
    mkdir -p "$STATE/cni" "$STATE/etcd" "$STATE/certs" "$STATE/kubelet" "$STATE/pod-logs"
    # restrict_oom_score_adj: even root may not lower an OOM score here, and every sandbox
    # failed without it. The CNI bridge is never used by the test (its pods use the
    # node's network) but the kubelet reports the node Ready only with a network: no
    # masquerading, so no iptables rules.
    cat >"$STATE/containerd.toml" <<EOF
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
[grpc]
  address = "$STATE/containerd/containerd.sock"
[ttrpc]
  address = "$STATE/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      Root = "$STATE/runc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"
EOF
    cat >"$STATE/cni/10-loadrig.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "loadrig", "plugins": [{"type": "bridge", "bridge": "loadrig0",
 "isGateway": false, "ipMasq": false, "ipam": {"type": "host-local", "dataDir": "$STATE/cni-ipam",
 "ranges": [[{"subnet": "10.88.77.0/24"}]]}}]}
EOF
    local token
    token=$(openssl rand -hex 16)
    echo "$token,admin,admin,system:masters" >"$STATE/tokens.csv"
    openssl genrsa -out "$STATE/sa.key" 2048 2>/dev/null
    cat >"$STATE/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: loadrig, cluster: {server: "https://127.0.0.1:$API_PORT", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: "$token"}}]
contexts: [{name: loadrig, context: {cluster: loadrig, user: admin}}]
current-context: loadrig
EOF
    cat >"$STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: unix://$STATE/containerd/containerd.sock
podLogsDir: $STATE/pod-logs
failSwapOn: false
address: 127.0.0.1
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
evictionHard: {memory.available: "100Mi"}
localStorageCapacityIsolation: false
EOF
}

up() {
    [ "$(id -u)" = 0 ] || die "needs root (containers, mounts, sysctls)"
    alive kubelet && { say "already up ($STATE)"; return; }
    [ -e "$STATE" ] && die "$STATE is left from an earlier cluster: scripts/k8s.sh down first"
    local started=$SECONDS
    install
    build_kube
    build_pause
    build_loadrig
    mkdir -p "$STATE/pids" "$STATE/logs"
    record_host
    write_configs
    start containerd containerd --config "$STATE/containerd.toml"
    wait_for containerd 30 ctr_ version
    ctr_ images import "$PAUSE_TAR" >/dev/null
    ctr_ images import "$LOADRIG_TAR" >/dev/null
    start etcd etcd --name loadrig --data-dir "$STATE/etcd" \
        --listen-client-urls "http://127.0.0.1:${ETCD_PORTS[0]}" --advertise-client-urls "http://127.0.0.1:${ETCD_PORTS[0]}" \
        --listen-peer-urls "http://127.0.0.1:${ETCD_PORTS[1]}" --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PORTS[1]}" \
        --initial-cluster "loadrig=http://127.0.0.1:${ETCD_PORTS[1]}"
    start apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:${ETCD_PORTS[0]}" \
        --bind-address 127.0.0.1 --secure-port $API_PORT --cert-dir "$STATE/certs" \
        --token-auth-file "$STATE/tokens.csv" --authorization-mode Node,RBAC \
        --service-cluster-ip-range 10.96.0.0/24 --service-account-key-file "$STATE/sa.key" \
        --service-account-signing-key-file "$STATE/sa.key" --service-account-issuer https://kubernetes.default.svc
    wait_for kube-apiserver 90 kubectl get --raw /readyz
    start controller-manager "$BIN/kube-controller-manager" --kubeconfig "$KUBECONFIG" \
        --service-account-private-key-file "$STATE/sa.key" --root-ca-file "$STATE/certs/apiserver.crt" \
        --bind-address 127.0.0.1 --leader-elect=false
    start scheduler "$BIN/kube-scheduler" --kubeconfig "$KUBECONFIG" --bind-address 127.0.0.1 --leader-elect=false
    start kubelet "$BIN/kubelet" --config "$STATE/kubelet.yaml" --kubeconfig "$KUBECONFIG" \
        --root-dir "$STATE/kubelet" --hostname-override $NODE
    wait_for "the node" 90 node_ready
    say "up in $((SECONDS - started)) s: node $NODE Ready, images $PAUSE_IMAGE and $LOADRIG_IMAGE"
    env_lines
}

node_ready() {
    kubectl get node $NODE -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' | grep -qx True
}

env_lines() {
    echo "export KUBECONFIG=$KUBECONFIG PATH=$BIN:\$PATH LOADRIG_K8S_IMAGE=$LOADRIG_IMAGE"
}

# Every pod's phase, and for a pod that is stuck or failed, its container's reason and
# message (ErrImagePull, CreateContainerConfigError: secret "…" not found, Error with exit
# code); then the warning events (FailedScheduling, FailedMount, BackoffLimitExceeded…).
why() {
    local ns=${1:---all-namespaces}
    [ "$ns" = --all-namespaces ] || ns="--namespace=$ns"
    kubectl get pods "$ns" -o go-template='{{range .items}}{{.metadata.namespace}}/{{.metadata.name}}: {{.status.phase}}{{range .status.initContainerStatuses}}{{with .state.waiting}} init {{.reason}}{{with .message}}: {{.}}{{end}}{{end}}{{with .state.terminated}}{{if .exitCode}} init {{.reason}} (exit {{.exitCode}}){{end}}{{end}}{{end}}{{range .status.containerStatuses}}{{with .state.waiting}} {{.reason}}{{with .message}}: {{.}}{{end}}{{end}}{{with .state.terminated}} {{.reason}} (exit {{.exitCode}}){{end}}{{end}}
{{end}}'
    kubectl get events "$ns" --field-selector type=Warning \
        -o go-template='{{range .items}}{{.involvedObject.kind}}/{{.involvedObject.name}}: {{.reason}}: {{.message}}
{{end}}'
}

stop_pid() {
    local name=$1 pid
    [ -f "$STATE/pids/$name" ] || return 0
    pid=$(cat "$STATE/pids/$name")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    rm -f "$STATE/pids/$name"
}

# Chains that the kubelet added (KUBE-IPTABLES-HINT, KUBE-KUBELET-CANARY, …): the rules
# that jump to them, then the chains. Chains that were there before `up` are kept.
remove_chains() {
    for t in iptables ip6tables; do
        command -v "$t-save" >/dev/null || continue
        for table in filter nat mangle; do
            local chains
            chains=$("$t-save" -t $table 2>/dev/null | sed -n 's/^:\(KUBE-[^ ]*\) .*/\1/p' |
                grep -vxF -f <(sed -n 's/^:\(KUBE-[^ ]*\) .*/\1/p' "$STATE/iptables.before") || true)
            [ -n "$chains" ] || continue
            for c in $chains; do
                { "$t-save" -t $table | grep -E "^-A .* -j $c( |$)" || true; } | while read -r rule; do
                    eval "$t -t $table -D ${rule#-A }"
                done
            done
            for c in $chains; do "$t" -t $table -F "$c"; done
            for c in $chains; do "$t" -t $table -X "$c"; done
        done
    done
}

down() {
    [ -d "$STATE" ] || { say "not up ($STATE)"; return 0; }
    if alive kubelet && alive apiserver; then
        # The kubelet stops the pods and unmounts their volumes itself.
        kubectl delete jobs,pods --all --all-namespaces --grace-period=1 --timeout=60s >/dev/null 2>&1 || true
    fi
    for name in kubelet scheduler controller-manager apiserver etcd; do stop_pid $name; done
    if alive containerd; then
        for task in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$task" 2>/dev/null || true; done
        sleep 0.5
        for task in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$task" >/dev/null 2>&1 || true; done
        for c in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers delete "$c" >/dev/null 2>&1 || true; done
    fi
    stop_pid containerd
    # containerd's shims outlive it: each is ours if its command line names our socket.
    for pid in $(pgrep -x containerd-shim-runc-v2 2>/dev/null || true); do
        tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$STATE/containerd/" && kill -KILL "$pid"
    done
    awk -v s="$STATE/" 'index($2, s) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m"
    done
    [ -f "$STATE/sysctls" ] && while IFS= read -r line; do sysctl -q -w "$line" >/dev/null; done <"$STATE/sysctls"
    [ -f "$STATE/iptables.before" ] && remove_chains
    if [ -f "$STATE/links.before" ]; then
        for link in $(ip -br link | cut -d' ' -f1 | grep -vxF -f "$STATE/links.before" | sed 's/@.*//'); do
            ip link delete "$link" 2>/dev/null || true
        done
    fi
    # containerd's cgroup (named after its namespace) in every hierarchy, empty by now.
    if [ -f "$STATE/cgroups.before" ]; then
        new_cgroups | while read -r d; do rmdir "$d" 2>/dev/null || true; done
    fi
    check_clean
    # The folders the runtime made outside the state folder, with what it left in them.
    [ -f "$STATE/host-dirs" ] && while read -r d; do rm -rf "$d"; done <"$STATE/host-dirs"
    rm -rf "$STATE"
    say "down: processes stopped, sysctls restored, no mounts, iptables chains or cgroups left, $STATE removed"
}

new_cgroups() {
    find /sys/fs/cgroup -maxdepth 2 -name k8s.io | grep -vxF -f "$STATE/cgroups.before" || true
}

# What `down` promises, checked: no mount under the state folder, the iptables rules as
# they were, no cgroup of containerd's left, no process of ours.
check_clean() {
    local bad=0
    if grep -qF " $STATE/" /proc/mounts; then say "still mounted: $(grep -F " $STATE/" /proc/mounts)"; bad=1; fi
    if [ -f "$STATE/iptables.before" ] && ! diff "$STATE/iptables.before" <(iptables_rules) >&2; then
        say "iptables rules differ from before up (above)"
        bad=1
    fi
    if [ -f "$STATE/cgroups.before" ] && [ -n "$(new_cgroups)" ]; then
        say "cgroups left: $(new_cgroups | tr '\n' ' ')"
        bad=1
    fi
    for f in "$STATE"/pids/*; do [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && { say "still running: $f"; bad=1; }; done
    [ $bad = 0 ] || die "not clean: see above ($STATE kept)"
}

e2e() {
    # One cluster per machine: a second e2e (another clone's test command) waits its turn.
    exec 9>"$STATE.lock"
    if ! flock -n 9; then
        say "e2e: another cluster runs on this machine; waiting for it"
        flock 9
    fi
    local started=$SECONDS
    trap 'down' EXIT
    up >/dev/null
    local up_s=$((SECONDS - started))
    if [ -z "${LOADRIG_REDIS_URL:-}" ] || [ -z "${LOADRIG_REDIS_OPEN_URL:-}" ]; then
        export LOADRIG_SERVICES_DIR=${LOADRIG_SERVICES_DIR:-/tmp/loadrig-k8s-services}
        trap 'down; scripts/services.sh down || true' EXIT
        scripts/services.sh up redis redis-open
        eval "$(scripts/services.sh env)"
    fi
    local test_started=$SECONDS
    if ! LOADRIG_K8S=1 LOADRIG_K8S_IMAGE=$LOADRIG_IMAGE LOADRIG_K8S_STATE=$STATE \
        cargo test --locked --test integration kube_cluster:: -- --nocapture; then
        say "the end-to-end test failed; the pods:"
        why || true
        exit 1
    fi
    say "e2e: cluster up in ${up_s} s, test $((SECONDS - test_started)) s"
}

case ${1:-} in
    build)
        install
        build_kube
        build_pause
        ;;
    up) up ;;
    down) down ;;
    env) env_lines ;;
    why) why "${2:-}" ;;
    e2e) e2e ;;
    *)
        echo "usage: $0 build|up|down|env|why [NAMESPACE]|e2e" >&2
        exit 2
        ;;
esac
