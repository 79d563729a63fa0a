//! `loadrig kube --collector`: the collector's Job (and, on the pod network, its Service
//! and the Secret it shares with the shards) parsed back into the Kubernetes API types;
//! then, on one machine (`--host-network`), the collector's and the shards' own command
//! lines run here, the collector's run equal to `loadrig merge` of the shards' files.

use crate::collect::{merge, same_as_merge, spawn_logged, succeeded};
use crate::common::Dir;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use serde_json::Value;

fn items(stdout: &str) -> Vec<Value> {
    let list: Value = serde_json::from_str(stdout).expect("a JSON List");
    list["items"].as_array().expect("items").clone()
}

fn named<T: serde::de::DeserializeOwned>(items: &[Value], kind: &str, name: &str) -> T {
    let item = items
        .iter()
        .find(|i| i["kind"] == kind && i["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"));
    serde_json::from_value(item.clone()).expect(kind)
}

fn args(job: &Job) -> Vec<String> {
    let pod = job.spec.as_ref().and_then(|s| s.template.spec.as_ref());
    pod.expect("pod").containers[0].args.clone().expect("args")
}

fn after<'a>(args: &'a [String], flag: &str) -> &'a str {
    let i = args.iter().position(|a| a == flag);
    &args[i.unwrap_or_else(|| panic!("no {flag} in {args:?}")) + 1]
}

#[test]
fn on_one_machine_the_collectors_run_is_the_merge_of_the_shards() {
    let d = Dir::new();
    #[rustfmt::skip]
    let out = d.ok(&[
        "kube", "noop", "--shards", "3", "-c", "3", "--ops", "600", "--start-at", "+3s",
        "--host-network", "--collector",
    ]);
    let items = items(&out);
    // The collector's Job comes before the shards', and no Service: loopback only.
    let kinds: Vec<&str> = items.iter().filter_map(|i| i["kind"].as_str()).collect();
    assert_eq!(kinds, ["ConfigMap", "PersistentVolumeClaim", "Job", "Job"]);
    let collector: Job = named(&items, "Job", "loadrig-noop-collect");
    let shards: Job = named(&items, "Job", "loadrig-noop-run");
    let spec = collector.spec.as_ref().expect("spec");
    assert_eq!((spec.completions, spec.backoff_limit), (Some(1), Some(0)));
    let pod = spec.template.spec.as_ref().expect("pod");
    assert_eq!(pod.host_network, Some(true));
    assert_eq!(
        pod.init_containers.as_ref().expect("init")[0].name,
        "results-owner"
    );
    let (c, s) = (args(&collector), args(&shards));
    let listen = after(&c, "--listen");
    assert!(
        listen.starts_with("127.0.0.1:") && !listen.ends_with(":0"),
        "{c:?}"
    );
    assert_eq!(after(&s, "--collect"), listen);
    assert_eq!(after(&c, "--shards"), "3");
    assert_eq!(after(&c, "--out"), "/results/collected.json");
    assert!(!s.iter().any(|a| a.starts_with("--collect-")), "{s:?}");

    // What the pods would run, here: the collector, then the 3 shards.
    let config: ConfigMap = named(&items, "ConfigMap", "loadrig-noop-workload");
    d.write(
        "workload.toml",
        &config.data.expect("data")["workload.toml"],
    );
    let local = |args: &[String], i: usize| -> Vec<String> {
        args.iter()
            .map(|a| {
                a.replace("$(JOB_COMPLETION_INDEX)", &i.to_string())
                    .replace("/workload/", "")
                    .replace("/results/", "")
            })
            .collect()
    };
    let run = |name: &str, args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let target = [("LOADRIG_TARGET", "sleep://?latency=1ms")];
        spawn_logged(d.path(), name, &args, &target)
    };
    let collect = run("collect", local(&c, 0));
    let pods: Vec<_> = (0..3)
        .map(|i| run(&format!("s{i}"), local(&s, i)))
        .collect();
    for (i, p) in pods.into_iter().enumerate() {
        succeeded(p, d.path(), &format!("s{i}"));
    }
    succeeded(collect, d.path(), "collect");
    let merged = merge(&d, &["shard-0.json", "shard-1.json", "shard-2.json"], &[]);
    let collected = d.result("collected.json");
    assert_eq!((collected.total.ok, collected.total.errors), (600, 0));
    same_as_merge(&collected, &merged);
    let shards = collected.shards.expect("shards");
    assert_eq!((shards.merged, shards.partial), (vec![0, 1, 2], false));
}

#[test]
fn on_the_pod_network_the_collector_is_a_service_with_token_and_tls_from_a_secret() {
    let d = Dir::new();
    #[rustfmt::skip]
    let out = d.ok(&[
        "kube", "noop", "--shards", "2", "-c", "2", "--namespace", "bench",
        "--collector", "--collect-secret", "bench-collect",
    ]);
    let items = items(&out);
    let collector: Job = named(&items, "Job", "loadrig-noop-collect");
    let shards: Job = named(&items, "Job", "loadrig-noop-run");
    let service: Service = named(&items, "Service", "loadrig-noop-collect");
    let (c, s) = (args(&collector), args(&shards));
    assert_eq!(after(&c, "--listen"), "0.0.0.0:7070");
    assert_eq!(after(&c, "--token-file"), "/collect/token");
    assert_eq!(after(&c, "--tls-cert"), "/collect/tls.crt");
    assert_eq!(after(&c, "--tls-key"), "/collect/tls.key");
    assert_eq!(
        after(&s, "--collect"),
        "loadrig-noop-collect.bench.svc:7070"
    );
    assert_eq!(after(&s, "--collect-token-file"), "/collect/token");
    assert_eq!(after(&s, "--collect-ca"), "/collect/ca.crt");
    // Both pods mount the Secret, read-only; the Service picks the collector's pod only.
    for job in [&collector, &shards] {
        let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
        let vols = pod.volumes.as_ref().expect("volumes");
        let secret = vols.iter().find_map(|v| v.secret.as_ref()).expect("secret");
        assert_eq!(secret.secret_name.as_deref(), Some("bench-collect"));
        let mounts = pod.containers[0].volume_mounts.as_ref().expect("mounts");
        let m = mounts.iter().find(|m| m.name == "collect").expect("mount");
        assert_eq!(
            (m.mount_path.as_str(), m.read_only),
            ("/collect", Some(true))
        );
        assert_eq!(pod.host_network, None);
    }
    let spec = service.spec.expect("spec");
    let selector = spec.selector.expect("selector");
    let labels = collector
        .spec
        .unwrap()
        .template
        .metadata
        .unwrap()
        .labels
        .unwrap();
    for (k, v) in &selector {
        let job_label = k == "batch.kubernetes.io/job-name" && v == "loadrig-noop-collect";
        assert!(
            job_label || labels.get(k) == Some(v),
            "{k}={v} not on the pod"
        );
    }
    let shard_labels = shards
        .spec
        .unwrap()
        .template
        .metadata
        .unwrap()
        .labels
        .unwrap();
    assert!(selector.iter().any(|(k, v)| shard_labels.get(k) != Some(v)));
    assert_eq!(spec.ports.expect("ports")[0].port, 7070);

    // The shards' own --collect is refused (it needs --shard, which kube sets).
    #[rustfmt::skip]
    let (stdout, said) = d.code(2, &[
        "kube", "noop", "--shards", "2", "-c", "2", "--collect", "127.0.0.1:1",
    ]);
    assert!(stdout.is_empty() && said.contains("--collect"), "{said}");
}
