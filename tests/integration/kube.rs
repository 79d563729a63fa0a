//! `loadrig kube`: the manifests parsed back into the Kubernetes API types and checked for
//! what matters (indexed completion, parallelism, the shard arguments, the Secret), then
//! the pods' own command lines run here as shard processes and merged.

use crate::common::Dir;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Container, PersistentVolumeClaim};
use serde_json::Value;

fn items(stdout: &str) -> Vec<Value> {
    let list: Value = serde_json::from_str(stdout).expect("a JSON List");
    assert_eq!(list["kind"], "List");
    list["items"].as_array().expect("items").clone()
}

fn of_kind<T: serde::de::DeserializeOwned>(items: &[Value], kind: &str) -> T {
    let item = items
        .iter()
        .find(|i| i["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind}"));
    serde_json::from_value(item.clone()).expect(kind)
}

fn container(job: &Job) -> Container {
    let spec = job.spec.as_ref().expect("job spec");
    let pod = spec.template.spec.as_ref().expect("pod spec");
    pod.containers[0].clone()
}

#[test]
fn manifests_are_an_indexed_job_with_the_target_from_a_secret() {
    let d = Dir::new();
    let out = d.ok(&[
        "kube",
        "noop",
        "--shards",
        "4",
        "-c",
        "8",
        "-d",
        "1s",
        "--image",
        "reg/loadrig:1",
        "--namespace",
        "bench",
        "--target-secret",
        "db-url",
    ]);
    let items = items(&out);
    let config: ConfigMap = of_kind(&items, "ConfigMap");
    let workload = &config.data.as_ref().expect("data")["workload.toml"];
    assert!(workload.contains("name = \"noop\""), "{workload}");
    let claim: PersistentVolumeClaim = of_kind(&items, "PersistentVolumeClaim");
    let modes = claim.spec.expect("spec").access_modes.expect("modes");
    assert_eq!(modes, vec!["ReadWriteMany".to_string()]);
    let job: Job = of_kind(&items, "Job");
    assert_eq!(job.metadata.namespace.as_deref(), Some("bench"));
    let spec = job.spec.as_ref().expect("spec");
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!((spec.parallelism, spec.completions), (Some(4), Some(4)));
    let c = container(&job);
    assert_eq!(c.image.as_deref(), Some("reg/loadrig:1"));
    let args = c.args.clone().expect("args");
    let after = |flag: &str| {
        let i = args
            .iter()
            .position(|a| a == flag)
            .unwrap_or_else(|| panic!("{flag}"));
        args[i + 1].clone()
    };
    assert_eq!(after("--shard"), "$(JOB_COMPLETION_INDEX)/4");
    assert_eq!(after("--target"), "${LOADRIG_TARGET}");
    assert_eq!(after("--clients"), "8");
    assert!(humantime::parse_rfc3339(&after("--start-at")).is_ok());
    let env = c.env.expect("env");
    let target = env
        .iter()
        .find(|e| e.name == "LOADRIG_TARGET")
        .expect("env");
    let secret = target
        .value_from
        .as_ref()
        .and_then(|v| v.secret_key_ref.as_ref())
        .expect("from a Secret");
    assert_eq!(
        (secret.name.as_str(), secret.key.as_str()),
        ("db-url", "url")
    );
    assert!(target.value.is_none());
    // A password on the command line is refused, and nothing is printed.
    let (stdout, err) = d.code(
        2,
        &[
            "kube",
            "noop",
            "--shards",
            "2",
            "-t",
            "redis://:hunter2@127.0.0.1:6379/0",
        ],
    );
    assert!(stdout.is_empty() && !err.contains("hunter2"), "{err}");
    assert!(err.contains("Secret"), "{err}");
}

#[test]
fn the_pods_command_lines_run_as_shards_and_merge() {
    let d = Dir::new();
    let out = d.ok(&[
        "kube",
        "noop",
        "--shards",
        "3",
        "-c",
        "3",
        "--ops",
        "300",
        "--pipeline",
        "2",
        "--connect-rate",
        "500/s",
        "--label",
        "pods",
        "--load-timeout",
        "30s",
        "--start-at",
        "+2s",
    ]);
    let items = items(&out);
    let config: ConfigMap = of_kind(&items, "ConfigMap");
    d.write(
        "workload.toml",
        &config.data.expect("data")["workload.toml"],
    );
    let job: Job = of_kind(&items, "Job");
    let args = container(&job).args.expect("args");
    // What Kubernetes and the pod would do: the index, the Secret's URL, the mounts.
    let children: Vec<_> = (0..3)
        .map(|i| {
            let local: Vec<String> = args
                .iter()
                .map(|a| {
                    a.replace("$(JOB_COMPLETION_INDEX)", &i.to_string())
                        .replace("/workload/", "")
                        .replace("/results/", "")
                        .replace("0.0.0.0:9464", "127.0.0.1:0")
                })
                .collect();
            let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_loadrig"));
            cmd.current_dir(d.path())
                .env("LOADRIG_TARGET", "sleep://?latency=1ms")
                .args(&local)
                .stdout(std::process::Stdio::null());
            cmd.spawn().expect("shard")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("ran").success());
    }
    d.ok(&[
        "merge",
        "shard-0.json",
        "shard-1.json",
        "shard-2.json",
        "-o",
        "run.json",
    ]);
    let merged = d.result("run.json");
    assert_eq!(merged.total.ok, 300);
    // Every flag of the run reaches the pods: 3 connections x 2 streams, 50 ops each.
    assert_eq!(merged.load.clients(), 6);
    assert_eq!(merged.load.pipeline, 2);
    assert_eq!(merged.connect.as_ref().unwrap().rate_per_s, Some(1500.0));
    assert_eq!(merged.label.as_deref(), Some("pods"));
    for flag in ["--load-timeout", "30s"] {
        assert!(args.iter().any(|a| a == flag), "{args:?}");
    }
    assert_eq!(merged.target.url, "sleep://?latency=1ms");
    assert_eq!(merged.shards.expect("shards").merged, vec![0, 1, 2]);
}

#[test]
fn property_files_reach_the_pods_as_set_flags() {
    // The pods cannot read the files: their lines go as --set, before the command line's.
    let d = Dir::new();
    d.write(
        "w.properties",
        "# mine\nrecordcount=10\nreadallfields: false\n",
    );
    let out = d.ok(&[
        "kube",
        "ycsb-a",
        "--shards",
        "2",
        "-c",
        "2",
        "-P",
        "w.properties",
        "--set",
        "recordcount=20",
    ]);
    let job: Job = of_kind(&items(&out), "Job");
    let args = container(&job).args.expect("args");
    let sets: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0] == "--set")
        .map(|w| w[1].as_str())
        .collect();
    assert_eq!(
        sets,
        ["recordcount=10", "readallfields=false", "recordcount=20"]
    );
    assert!(!args.iter().any(|a| a == "-P" || a == "--properties"));
}
