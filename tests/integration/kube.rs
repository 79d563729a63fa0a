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
    // A failed shard costs its own index only: the others run on (no Job-wide limit).
    assert_eq!(
        (spec.backoff_limit_per_index, spec.max_failed_indexes),
        (Some(0), Some(4))
    );
    assert_eq!(spec.backoff_limit, None);
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
    // The shards run as nobody; the init container gives them the results directory.
    let pod = spec.template.spec.as_ref().expect("pod spec");
    let security = pod.security_context.as_ref().expect("pod security");
    assert_eq!(
        (
            security.run_as_user,
            security.run_as_group,
            security.fs_group
        ),
        (Some(65534), Some(65534), Some(65534))
    );
    let shard = c.security_context.as_ref().expect("container security");
    assert_eq!(shard.run_as_non_root, Some(true));
    assert_eq!(shard.allow_privilege_escalation, Some(false));
    let init = &pod.init_containers.as_ref().expect("init containers")[0];
    assert_eq!(init.image.as_deref(), Some("reg/loadrig:1"));
    assert_eq!(
        init.args.as_deref().expect("args"),
        ["kube-results", "/results", "--owner", "65534:65534"]
    );
    let caps = init.security_context.as_ref().expect("init security");
    assert_eq!(caps.run_as_user, Some(0));
    let caps = caps.capabilities.as_ref().expect("capabilities");
    assert_eq!(caps.add.as_deref(), Some(&["CHOWN".to_string()][..]));
    assert_eq!(caps.drop.as_deref(), Some(&["ALL".to_string()][..]));
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

#[test]
fn the_results_directory_becomes_the_shards_and_run_as_root_needs_no_init() {
    let d = Dir::new();
    let out = d.ok(&[
        "kube", "noop", "--shards", "2", "-c", "2", "--run-as", "0:0",
    ]);
    let job: Job = of_kind(&items(&out), "Job");
    let pod = job.spec.expect("spec").template.spec.expect("pod");
    assert!(pod.init_containers.is_none());
    assert_eq!(pod.security_context.expect("security").run_as_user, Some(0));
    let (stdout, err) = d.code(
        2,
        &[
            "kube", "noop", "--shards", "2", "-c", "2", "--run-as", "nobody",
        ],
    );
    assert!(stdout.is_empty() && err.contains("UID:GID"), "{err}");
    // The init container's command, on a directory owned by this test's user (mode 0755).
    let results = d.join("results");
    std::fs::create_dir(&results).expect("mkdir");
    let dir = results.to_str().expect("utf-8");
    // SAFETY: geteuid only reads the process's user id.
    if unsafe { libc::geteuid() } == 0 {
        d.ok(&["kube-results", dir, "--owner", "65534:65534"]);
        let meta = std::fs::metadata(&results).expect("meta");
        use std::os::unix::fs::MetadataExt;
        assert_eq!((meta.uid(), meta.gid()), (65534, 65534));
        // Theirs now: nothing more to do, and nothing said.
        let (_, err) = d.code(0, &["kube-results", dir, "--owner", "65534:65534"]);
        assert!(err.is_empty(), "{err}");
    } else {
        let (_, err) = d.code(2, &["kube-results", dir, "--owner", "65534:65534"]);
        assert!(err.contains("--run-as"), "{err}");
    }
}

#[test]
fn host_network_for_one_machine_binds_no_port() {
    let d = Dir::new();
    let out = d.ok(&["kube", "noop", "--shards", "2", "-c", "2", "--host-network"]);
    let job: Job = of_kind(&items(&out), "Job");
    let template = job.spec.expect("spec").template;
    assert!(template.metadata.expect("meta").annotations.is_none());
    let pod = template.spec.expect("pod");
    assert_eq!(pod.host_network, Some(true));
    let c = &pod.containers[0];
    assert!(c.ports.is_none());
    let args = c.args.clone().expect("args");
    assert!(!args.iter().any(|a| a == "--metrics-addr"), "{args:?}");
}

#[test]
fn names_kubernetes_would_refuse_are_refused_first() {
    let d = Dir::new();
    for (flag, value) in [
        ("--image", "Loadrig:1"),
        ("--image", "reg/load rig:1"),
        ("--namespace", "Bench"),
        ("--target-secret", "db_url"),
        ("--results-claim", "-claim"),
    ] {
        let (stdout, err) = d.code(2, &["kube", "noop", "--shards", "1", flag, value]);
        assert!(
            stdout.is_empty() && err.contains(flag),
            "{flag} {value}: {err}"
        );
    }
    d.ok(&[
        "kube",
        "noop",
        "--shards",
        "1",
        "--image",
        "localhost:5000/loadrig:V1",
    ]);
}
