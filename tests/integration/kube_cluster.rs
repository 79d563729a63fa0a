//! `loadrig kube` on a real one-node Kubernetes (`scripts/k8s.sh e2e` starts it and sets
//! `LOADRIG_K8S=1`; the test command runs that after the cargo tests): the manifests
//! applied as printed, 3 shards of an Indexed Job on the node's network against the
//! throwaway Redis on loopback, the results volume owned by root (a hostPath), the
//! shards' files copied off it and merged exactly, and the run of the collector they
//! streamed to (`--collector`) equal to that merge; one shard's pod deleted while the
//! others complete; an absent image and a missing Secret named with the pod's reason.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Dir;
use serde_json::{json, Value};

/// The cluster of `scripts/k8s.sh`, or `None` outside `scripts/k8s.sh e2e` (which the test
/// command runs, and which fails when it cannot build the cluster).
fn cluster() -> Option<Cluster> {
    if std::env::var("LOADRIG_K8S").as_deref() != Ok("1") {
        eprintln!("skipped: no cluster (scripts/k8s.sh e2e runs this test on one)");
        return None;
    }
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    Some(Cluster {
        image: var("LOADRIG_K8S_IMAGE"),
        state: PathBuf::from(var("LOADRIG_K8S_STATE")),
        redis: var("LOADRIG_REDIS_URL"),
        redis_open: var("LOADRIG_REDIS_OPEN_URL"),
    })
}

struct Cluster {
    image: String,
    state: PathBuf,
    redis: String,
    redis_open: String,
}

/// `kubectl ARGS` with `stdin`; panics with its error unless it succeeds.
fn kubectl(args: &[&str], stdin: &str) -> String {
    let (ok, out, err) = try_kubectl(args, stdin);
    assert!(ok, "kubectl {args:?}: {err}");
    out
}

fn try_kubectl(args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = Command::new("kubectl")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl");
    use std::io::Write;
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.as_bytes()).expect("write stdin");
    drop(input);
    let out = child.wait_with_output().expect("kubectl ran");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What `scripts/k8s.sh why NAMESPACE` says: each pod's state and reason, the warnings.
fn why(ns: &str) -> String {
    let out = Command::new("bash")
        .args(["scripts/k8s.sh", "why", ns])
        .output()
        .expect("scripts/k8s.sh why");
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// A namespace of the test's own, with the results volume: a hostPath folder owned by root
/// (mode 0755) bound to the claim `loadrig kube` makes, as a first user's would be.
struct Namespace {
    name: String,
    results: PathBuf,
}

impl Namespace {
    fn new(c: &Cluster, name: &str, claim: &str) -> Namespace {
        let results = c.state.join(format!("results-{name}"));
        std::fs::create_dir_all(&results).expect("results folder");
        std::os::unix::fs::chown(&results, Some(0), Some(0)).expect("owned by root");
        kubectl(&["create", "namespace", name], "");
        let volume = json!({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "claimRef": {"namespace": name, "name": claim},
                "hostPath": {"path": results, "type": "Directory"},
            }
        });
        kubectl(&["apply", "-f", "-"], &volume.to_string());
        Namespace {
            name: name.to_string(),
            results,
        }
    }

    /// `loadrig kube ARGS --namespace NAME`, applied.
    fn apply(&self, d: &Dir, args: &[&str]) -> String {
        let mut all = args.to_vec();
        all.extend(["--namespace", &self.name]);
        let manifests = d.ok(&all);
        let applied = kubectl(&["apply", "-f", "-"], &manifests);
        // What the walk-through in docs/distributed.md shows.
        eprintln!(
            "$ loadrig {} | kubectl apply -f -\n{applied}",
            all.join(" ")
        );
        applied
    }

    /// The Job's status once it completed or failed (every index finished).
    fn finished(&self, job: &str, within: Duration) -> Value {
        let started = Instant::now();
        loop {
            let out = kubectl(&["-n", &self.name, "get", "job", job, "-o", "json"], "");
            let status = serde_json::from_str::<Value>(&out).expect("job")["status"].clone();
            let done = status["conditions"].as_array().is_some_and(|cs| {
                cs.iter().any(|c| {
                    (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True"
                })
            });
            if done {
                let out = kubectl(&["-n", &self.name, "get", "job,pods", "-o", "wide"], "");
                eprintln!("$ kubectl -n {} get job,pods -o wide\n{out}", self.name);
                return status;
            }
            assert!(
                started.elapsed() < within,
                "job {job} not finished after {within:?}: {status}\n{}",
                why(&self.name)
            );
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// The first pod whose container waits for `reason` (any of them), and its message.
    fn waiting(&self, reasons: &[&str], within: Duration) -> String {
        let started = Instant::now();
        loop {
            let out = kubectl(&["-n", &self.name, "get", "pods", "-o", "json"], "");
            let pods: Value = serde_json::from_str(&out).expect("pods");
            for pod in pods["items"].as_array().into_iter().flatten() {
                let status = &pod["status"];
                let init = status["initContainerStatuses"].as_array().into_iter();
                let main = status["containerStatuses"].as_array().into_iter();
                for s in init.chain(main).flatten() {
                    let w = &s["state"]["waiting"];
                    if reasons.iter().any(|r| w["reason"] == *r) {
                        return format!("{}: {}", w["reason"], w["message"]);
                    }
                }
            }
            assert!(
                started.elapsed() < within,
                "no pod waits for {reasons:?}: {}",
                why(&self.name)
            );
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// The shards' files copied off the volume into `d`.
    fn copy_results(&self, d: &Dir) -> Vec<String> {
        let mut names = vec![];
        for entry in std::fs::read_dir(&self.results).expect("results") {
            let name = entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            if name.ends_with(".json") {
                std::fs::copy(self.results.join(&name), d.join(&name)).expect("copy");
                names.push(name);
            }
        }
        names.sort();
        names
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = try_kubectl(&["delete", "namespace", &self.name, "--timeout=60s"], "");
        let _ = try_kubectl(&["delete", "persistentvolume", &self.name], "");
        let _ = std::fs::remove_dir_all(&self.results);
    }
}

fn ok_count(d: &Dir, file: &str) -> u64 {
    d.result(file).total.ok
}

#[test]
fn kube_cluster_end_to_end() {
    let Some(c) = cluster() else { return };
    // Load goes to loopback only.
    for url in [&c.redis, &c.redis_open] {
        assert!(url.contains("@127.") || url.contains("://127."), "{url}");
    }
    three_shards_merge_exactly(&c);
    one_lost_shard_costs_only_that_shard(&c);
    an_absent_image_and_a_missing_secret_are_named(&c);
}

/// The whole path a user takes: Secret, manifests, Job, files, merge.
fn three_shards_merge_exactly(c: &Cluster) {
    let d = Dir::new();
    let ns = Namespace::new(c, "loadrig-e2e-merge", "loadrig-ycsb-a-results");
    // The Secret from the URL with its password, as docs/distributed.md tells.
    kubectl(
        &[
            "-n",
            &ns.name,
            "create",
            "secret",
            "generic",
            "loadrig-db",
            &format!("--from-literal=url={}", c.redis),
        ],
        "",
    );
    #[rustfmt::skip]
    ns.apply(&d, &[
        "kube", "ycsb-a", "--shards", "3", "-c", "6", "--ops", "600",
        "--set", "recordcount=300", "--image", &c.image, "--target-secret", "loadrig-db",
        "--host-network", "--start-at", "+20s", "--load-timeout", "60s", "--collector",
    ]);
    let status = ns.finished("loadrig-ycsb-a-run", Duration::from_secs(180));
    assert_eq!(status["succeeded"], 3, "{status}");
    // The collector the shards streamed to, on the node's loopback, ended with them.
    let status = ns.finished("loadrig-ycsb-a-collect", Duration::from_secs(60));
    assert_eq!(status["succeeded"], 1, "{status}\n{}", why(&ns.name));
    // (`kubectl logs` cannot reach this kubelet by its node name: the collected file tells.)
    // The init container gave the root-owned volume to the shards' user.
    let owner = std::fs::metadata(&ns.results).expect("results");
    assert_eq!((owner.uid(), owner.gid()), (65534, 65534));
    let all = ns.copy_results(&d);
    assert_eq!(all[0], "collected.json", "{all:?}");
    let files = all[1..].to_vec();
    for f in &all {
        let meta = std::fs::metadata(ns.results.join(f)).expect("shard file");
        eprintln!(
            "{f}: owner {}:{}, {} bytes",
            meta.uid(),
            meta.gid(),
            meta.len()
        );
    }
    assert_eq!(files, ["shard-0.json", "shard-1.json", "shard-2.json"]);
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["-o", "run.json"]);
    eprintln!("$ loadrig {}\n{}", args.join(" "), d.ok(&args));
    let merged = d.result("run.json");
    let sum: u64 = files.iter().map(|f| ok_count(&d, f)).sum();
    assert_eq!((merged.total.ok, merged.total.errors), (600, 0));
    assert_eq!(sum, 600);
    for op in &merged.operations {
        let shards: u64 = files
            .iter()
            .map(|f| {
                let r = d.result(f);
                r.operations
                    .iter()
                    .find(|o| o.name == op.name)
                    .map_or(0, |o| o.ok)
            })
            .sum();
        assert_eq!(op.ok, shards, "{}", op.name);
    }
    // The collector's run is the merge's, interval for interval, histogram for histogram;
    // it names the shards' files as they wrote them, on the volume.
    let mut collected = d.result("collected.json");
    assert_eq!((collected.total.ok, collected.total.errors), (600, 0));
    for f in &mut collected.shards.as_mut().expect("shards").files {
        *f = f
            .strip_prefix("/results/")
            .expect("on the volume")
            .to_string();
    }
    crate::collect::same_as_merge(&collected, &merged);
    let shards = merged.shards.expect("shards");
    assert_eq!((shards.merged, shards.partial), (vec![0, 1, 2], false));
    assert!(!merged.target.url.contains(&redact_password(&c.redis)));
}

/// The password of a `redis://:PASSWORD@…` URL, which no result file may hold.
fn redact_password(url: &str) -> String {
    let rest = url.split_once("://:").map_or("", |(_, r)| r);
    rest.split_once('@').map_or(rest, |(p, _)| p).to_string()
}

/// Pod 1 deleted mid-run (its node lost, say): shards 0 and 2 run to the end, the Job
/// says index 1 failed, `merge` refuses without `--allow-partial` and names it with.
fn one_lost_shard_costs_only_that_shard(c: &Cluster) {
    let d = Dir::new();
    let ns = Namespace::new(c, "loadrig-e2e-lost", "loadrig-ycsb-c-results");
    #[rustfmt::skip]
    ns.apply(&d, &[
        "kube", "ycsb-c", "--shards", "3", "-c", "3", "-d", "12s",
        "--set", "recordcount=100", "--image", &c.image, "--target", &open_redis(c),
        "--host-network", "--start-at", "+20s", "--load-timeout", "60s",
    ]);
    // Once the run is under way: shard 1's pod goes.
    std::thread::sleep(Duration::from_secs(25));
    eprintln!(
        "$ kubectl -n {} delete pod -l batch.kubernetes.io/job-completion-index=1 --grace-period=5",
        ns.name
    );
    kubectl(
        &[
            "-n",
            &ns.name,
            "delete",
            "pod",
            "-l",
            "batch.kubernetes.io/job-completion-index=1",
            "--grace-period=5",
        ],
        "",
    );
    let status = ns.finished("loadrig-ycsb-c-run", Duration::from_secs(120));
    assert_eq!(status["failedIndexes"], "1", "{status}");
    assert_eq!(status["completedIndexes"], "0,2", "{status}");
    let files = ns.copy_results(&d);
    let present: Vec<&str> = ["shard-0.json", "shard-2.json"]
        .into_iter()
        .filter(|f| files.iter().any(|g| g == f))
        .collect();
    assert_eq!(present, ["shard-0.json", "shard-2.json"], "{files:?}");
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["-o", "run.json"]);
    let (_, err) = d.code(2, &args);
    eprintln!("$ loadrig {}\n{err}", args.join(" "));
    assert!(err.contains("shard 1"), "{err}");
    args.push("--allow-partial");
    eprintln!("$ loadrig {}\n{}", args.join(" "), d.ok(&args));
    let merged = d.result("run.json");
    let shards = merged.shards.expect("shards");
    assert!(shards.partial);
    assert!(
        shards.missing.contains(&1) || shards.interrupted.contains(&1),
        "{shards:?}"
    );
    let sum: u64 = files.iter().map(|f| ok_count(&d, f)).sum();
    assert_eq!(merged.total.ok, sum);
    assert!(sum > 0);
}

/// The throwaway Redis without a password, whose URL may go on the command line.
fn open_redis(c: &Cluster) -> String {
    c.redis_open.clone()
}

/// What no `loadrig kube` can see before it runs: the pods say it, and `scripts/k8s.sh why`
/// names the reason.
fn an_absent_image_and_a_missing_secret_are_named(c: &Cluster) {
    let d = Dir::new();
    let ns = Namespace::new(c, "loadrig-e2e-bad", "loadrig-noop-results");
    #[rustfmt::skip]
    ns.apply(&d, &[
        "kube", "noop", "--shards", "2", "-c", "2", "-d", "1s", "--image", "loadrig.local/absent:1",
        "--target", "noop://", "--host-network",
    ]);
    let reason = ns.waiting(
        &["ErrImagePull", "ImagePullBackOff"],
        Duration::from_secs(90),
    );
    assert!(reason.contains("loadrig.local/absent:1"), "{reason}");
    let told = why(&ns.name);
    eprintln!("$ scripts/k8s.sh why {}\n{told}", ns.name);
    assert!(told.contains("loadrig.local/absent:1"), "{told}");
    drop(ns);

    let ns = Namespace::new(c, "loadrig-e2e-secret", "loadrig-noop-results");
    #[rustfmt::skip]
    ns.apply(&d, &[
        "kube", "noop", "--shards", "2", "-c", "2", "-d", "1s", "--image", &c.image,
        "--target-secret", "absent", "--host-network",
    ]);
    let reason = ns.waiting(&["CreateContainerConfigError"], Duration::from_secs(90));
    assert!(
        reason.contains("secret \\\"absent\\\" not found"),
        "{reason}"
    );
    let told = why(&ns.name);
    eprintln!("$ scripts/k8s.sh why {}\n{told}", ns.name);
    assert!(
        told.contains("CreateContainerConfigError: secret \"absent\" not found"),
        "{told}"
    );
}
