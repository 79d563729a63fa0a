//! `loadrig kube WORKLOAD --shards N [run flags]`: the Kubernetes objects that run a
//! workload as N shards started at one instant (docs/distributed.md), printed as one JSON
//! `List` for `kubectl apply -f -`: a ConfigMap holding the workload, a volume claim for
//! the results (unless one is named), and an Indexed Job whose pod I runs
//! `loadrig run … --shard I/N --start-at T` (after an init container that gives the results
//! directory to the shards' user: `loadrig kube-results`, also here). The target's URL,
//! password included, comes from a Secret through an environment variable, never from the
//! manifests.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Result;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EnvVar, EnvVarSource,
    ObjectFieldSelector, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, PodSecurityContext, PodSpec, PodTemplateSpec,
    SecretKeySelector, SecurityContext, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{json, Value};

use crate::cli::{KubeArgs, KubeResultsArgs, RunArgs};
use crate::error::InputError;
use crate::plan;
use crate::workload::{builtin, Setting};

mod collector;

/// Where the pods find the workload, write their results and serve their metrics.
const WORKLOAD_DIR: &str = "/workload";
const RESULTS_DIR: &str = "/results";
const METRICS_PORT: i32 = 9464;
/// The environment variable the target URL reaches the pod in (from the Secret).
const TARGET_ENV: &str = "LOADRIG_TARGET";
/// When the shards start, unless `--start-at` says: time to pull the image and connect.
const DEFAULT_START: &str = "+2m";

pub fn kube(args: &KubeArgs) -> Result<ExitCode> {
    let objects = manifests(args, SystemTime::now())?;
    let job = objects
        .iter()
        .find(|o| o["kind"] == "Job")
        .and_then(|o| o["metadata"]["name"].as_str())
        .unwrap_or("loadrig-run")
        .to_string();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    println!("{}", serde_json::to_string_pretty(&list)?);
    eprint!("{}", next_steps(args, &job));
    Ok(ExitCode::SUCCESS)
}

/// The objects, checked as `loadrig run` would check the flags, before anything is printed.
pub fn manifests(args: &KubeArgs, now: SystemTime) -> Result<Vec<Value>, InputError> {
    let user = check(args)?;
    let (_, text) = builtin::resolve(&args.run.workload)?;
    let mut first = args.run.clone();
    first.shard = Some(format!("0/{}", args.shards));
    let (workload, _, load) = plan::resolve_offline(&first)?;
    let start = args.run.start_at.as_deref().unwrap_or(DEFAULT_START);
    let at = plan::parse_start_at(start, load.interval, now)?;
    let at = humantime::format_rfc3339(at).to_string();
    let name = object_name(&workload.name);
    let claim = args
        .results_claim
        .clone()
        .unwrap_or_else(|| format!("{name}-results"));
    let config = ConfigMap {
        metadata: meta(&name, "workload", &args.namespace),
        data: Some(BTreeMap::from([("workload.toml".to_string(), text)])),
        ..Default::default()
    };
    let mut objects = vec![to_value(&config)];
    if args.results_claim.is_none() {
        objects.push(to_value(&results_claim(&claim, &args.namespace)));
    }
    let sets = plan::settings(&args.run)?;
    let mut job = job(
        args,
        &name,
        &claim,
        &run_args(&args.run, &sets, args.shards, &at, !args.host_network),
        user,
    );
    if args.collector {
        let addr = collector::Address::new(args, &name)?;
        addr.attach(&mut job);
        objects.extend(addr.objects(args, &name, &claim, user));
    }
    objects.push(to_value(&job));
    Ok(objects)
}

/// The flags checked; the user and group the shards run as.
fn check(args: &KubeArgs) -> Result<User, InputError> {
    let r = &args.run;
    if args.shards == 0 || args.shards > 10_000 {
        return Err(InputError::new(format!(
            "--shards {}: expected 1 to 10000",
            args.shards
        )));
    }
    check_names(args)?;
    let set = [
        (r.shard.is_some(), "--shard (each pod gets its own)"),
        (
            r.out.is_some(),
            "--out (each pod writes into the results volume)",
        ),
        (r.report.is_some(), "--report (report the merged run)"),
        (
            r.metrics_addr.is_some(),
            "--metrics-addr (each pod serves on port 9464)",
        ),
    ];
    if let Some((_, flag)) = set.iter().find(|(given, _)| *given) {
        return Err(InputError::new(format!("loadrig kube sets {flag}"))
            .help("leave it out; the manifests set it for every pod"));
    }
    if let Some(url) = &r.target {
        if crate::targets::redact(url) != *url {
            return Err(InputError::new(
                "--target holds a password, which must not go into the manifests",
            )
            .help(format!(
                "put the URL in a Secret (kubectl create secret generic {} --from-literal=url=URL) and leave --target out",
                args.target_secret
            )));
        }
    }
    User::parse(&args.run_as)
}

/// What Kubernetes would refuse only at `kubectl apply` (names), or the kubelet only once
/// the pods exist (`InvalidImageName`), refused before anything is printed.
fn check_names(args: &KubeArgs) -> Result<(), InputError> {
    let names = [
        ("--namespace", Some(&args.namespace), 63, false),
        ("--target-secret", Some(&args.target_secret), 253, true),
        ("--results-claim", args.results_claim.as_ref(), 253, true),
        ("--collect-secret", Some(&args.collect_secret), 253, true),
    ];
    for (flag, name, max, dots) in names {
        let Some(name) = name else { continue };
        let ok = name.len() <= max
            && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && name.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && name.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || (dots && c == '.')
            });
        if !ok {
            return Err(InputError::new(format!(
                "{flag} '{name}': not a Kubernetes name"
            ))
            .help(format!(
                "lowercase letters, digits and '-'{}, at most {max}, starting and ending with a letter or digit",
                if dots { " or '.'" } else { "" }
            )));
        }
    }
    // The repository's path (after the registry, before the tag or digest) is lowercase.
    let image = &args.image;
    let name = image.split('@').next().unwrap_or_default();
    let path = name.split_once('/').map_or(name, |(host, path)| {
        if host.contains(['.', ':']) || host == "localhost" {
            path
        } else {
            name
        }
    });
    let path = path.rsplit_once(':').map_or(path, |(p, _)| p);
    if path.is_empty()
        || image.chars().any(char::is_whitespace)
        || path.chars().any(|c| c.is_ascii_uppercase())
    {
        return Err(
            InputError::new(format!("--image '{image}': not an image reference")).help(
                "REGISTRY/NAME:TAG, the name in lowercase, e.g. registry.example.com/loadrig:1",
            ),
        );
    }
    Ok(())
}

/// A numeric user and group (the image has no /etc/passwd to look names up in).
#[derive(Clone, Copy, Debug, PartialEq)]
struct User {
    uid: u32,
    gid: u32,
}

impl User {
    fn parse(text: &str) -> Result<User, InputError> {
        let bad = || {
            InputError::new(format!("--run-as '{text}': expected UID:GID"))
                .help("numbers, e.g. 65534:65534 (nobody) or 0:0 (root)")
        };
        let (uid, gid) = text.split_once(':').ok_or_else(bad)?;
        Ok(User {
            uid: uid.parse().map_err(|_| bad())?,
            gid: gid.parse().map_err(|_| bad())?,
        })
    }

    fn is_root(self) -> bool {
        self.uid == 0
    }
}

/// A name Kubernetes accepts (DNS-1123 label), from the workload's name.
fn object_name(workload: &str) -> String {
    let mut name: String = workload
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name.truncate(40);
    format!("loadrig-{}", name.trim_matches('-'))
}

fn meta(name: &str, part: &str, namespace: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(format!("{name}-{part}")),
        namespace: Some(namespace.to_string()),
        labels: Some(BTreeMap::from([(
            "app.kubernetes.io/name".to_string(),
            "loadrig".to_string(),
        )])),
        ..Default::default()
    }
}

fn to_value<T: serde::Serialize>(object: &T) -> Value {
    // The API types always serialise.
    serde_json::to_value(object).unwrap_or(Value::Null)
}

fn results_claim(name: &str, namespace: &str) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            // Every pod writes its own file, from whichever node it runs on.
            access_modes: Some(vec!["ReadWriteMany".to_string()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity("1Gi".to_string()),
                )])),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The Indexed Job: pod I runs shard I of N; no pod is retried (a replacement would start
/// late and write over the result; `loadrig merge` names a missing shard instead), and a
/// failed pod costs its own index only: the other shards run to their end.
fn job(args: &KubeArgs, name: &str, claim: &str, run: &[String], user: User) -> Job {
    let n = args.shards as i32;
    let container = Container {
        name: "loadrig".to_string(),
        image: Some(args.image.clone()),
        args: Some(run.to_vec()),
        env: Some(env(args)),
        ports: (!args.host_network).then(|| {
            vec![ContainerPort {
                name: Some("metrics".to_string()),
                container_port: METRICS_PORT,
                ..Default::default()
            }]
        }),
        volume_mounts: Some(vec![
            mount("workload", WORKLOAD_DIR),
            mount("results", RESULTS_DIR),
        ]),
        security_context: Some(unprivileged(&[], Some(!user.is_root()))),
        ..Default::default()
    };
    let scrape = BTreeMap::from([
        ("prometheus.io/scrape".to_string(), "true".to_string()),
        ("prometheus.io/port".to_string(), METRICS_PORT.to_string()),
        ("prometheus.io/path".to_string(), "/metrics".to_string()),
    ]);
    let mut pod_meta = meta(name, "shard", &args.namespace);
    pod_meta.name = None;
    pod_meta.namespace = None;
    pod_meta.annotations = (!args.host_network).then_some(scrape);
    Job {
        metadata: meta(name, "run", &args.namespace),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".to_string()),
            completions: Some(n),
            parallelism: Some(n),
            // Per index (Kubernetes 1.29+): with the Job-wide `backoffLimit: 0` the first
            // failure ended every other shard (`BackoffLimitExceeded` deletes their pods).
            backoff_limit_per_index: Some(0),
            max_failed_indexes: Some(n),
            template: PodTemplateSpec {
                metadata: Some(pod_meta),
                spec: Some(PodSpec {
                    init_containers: results_owner(&args.image, user),
                    containers: vec![container],
                    restart_policy: Some("Never".to_string()),
                    host_network: args.host_network.then_some(true),
                    // The shards never talk to the Kubernetes API.
                    automount_service_account_token: Some(false),
                    security_context: Some(pod_security(user)),
                    volumes: Some(volumes(name, claim)),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The results directory made the shards' whatever the volume's owner; as root, the
/// shards can write it already.
fn results_owner(image: &str, user: User) -> Option<Vec<Container>> {
    (!user.is_root()).then(|| {
        vec![Container {
            name: "results-owner".to_string(),
            image: Some(image.to_string()),
            args: Some(vec![
                "kube-results".to_string(),
                RESULTS_DIR.to_string(),
                "--owner".to_string(),
                format!("{}:{}", user.uid, user.gid),
            ]),
            volume_mounts: Some(vec![mount("results", RESULTS_DIR)]),
            security_context: Some(SecurityContext {
                run_as_user: Some(0),
                run_as_group: Some(0),
                ..unprivileged(&["CHOWN"], Some(false))
            }),
            ..Default::default()
        }]
    })
}

/// The pod's user, and `fsGroup` for the volumes whose ownership Kubernetes manages (most
/// block storage): the shards' group then owns the results directory from the start.
fn pod_security(user: User) -> PodSecurityContext {
    PodSecurityContext {
        run_as_user: Some(user.uid.into()),
        run_as_group: Some(user.gid.into()),
        fs_group: Some(user.gid.into()),
        // Only the top directory's owner checked on each mount, not every file on a big volume.
        fs_group_change_policy: Some("OnRootMismatch".to_string()),
        ..Default::default()
    }
}

/// No privilege escalation and no capabilities but `add`.
fn unprivileged(add: &[&str], non_root: Option<bool>) -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_string()]),
            add: (!add.is_empty()).then(|| add.iter().map(|c| c.to_string()).collect()),
        }),
        run_as_non_root: non_root,
        ..Default::default()
    }
}

/// The pod's index (for `$(…)` in the args) and, without `--target`, the URL from the Secret.
fn env(args: &KubeArgs) -> Vec<EnvVar> {
    let mut env = vec![EnvVar {
        // Set by the Job controller as well; declared so that `$(…)` in the args expands.
        name: "JOB_COMPLETION_INDEX".to_string(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                    .to_string(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }];
    if args.run.target.is_none() {
        env.push(EnvVar {
            name: TARGET_ENV.to_string(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: args.target_secret.clone(),
                    key: "url".to_string(),
                    optional: Some(false),
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    env
}

/// The workload's ConfigMap and the results claim.
fn volumes(name: &str, claim: &str) -> Vec<Volume> {
    vec![
        Volume {
            name: "workload".to_string(),
            config_map: Some(ConfigMapVolumeSource {
                name: format!("{name}-workload"),
                ..Default::default()
            }),
            ..Default::default()
        },
        Volume {
            name: "results".to_string(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.to_string(),
                read_only: Some(false),
            }),
            ..Default::default()
        },
    ]
}

fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.to_string(),
        mount_path: path.to_string(),
        ..Default::default()
    }
}

/// The container's arguments: `loadrig run` with the user's flags, this pod's shard, the
/// agreed start, the target from the environment (loadrig expands `${VAR}` in URLs), the
/// metrics endpoint unless the pods share the node's network.
/// `sets` are the `--properties` files' lines and the `--set` flags, all as `--set`: the
/// pods cannot read the files.
fn run_args(r: &RunArgs, sets: &[Setting], shards: usize, at: &str, metrics: bool) -> Vec<String> {
    let mut a: Vec<String> = vec!["run".into(), format!("{WORKLOAD_DIR}/workload.toml")];
    let mut flag = |name: &str, value: Option<String>| {
        if let Some(v) = value {
            a.push(name.to_string());
            a.push(v);
        }
    };
    let target = r.target.clone().unwrap_or(format!("${{{TARGET_ENV}}}"));
    flag("--target", Some(target));
    for s in sets {
        flag("--set", Some(format!("{}={}", s.name, s.value)));
    }
    for op in &r.only_ops {
        flag("--op", Some(op.clone()));
    }
    // Every load setting given, as its flag, in the table's order.
    for (setting, value) in r.load.iter() {
        flag(setting.spec().flag, Some(value.to_string()));
    }
    for c in &r.checks {
        flag("--check", Some(c.clone()));
    }
    for v in &r.validity {
        flag("--validity", Some(v.clone()));
    }
    flag("--label", r.label.clone());
    flag("--load-timeout", Some(r.load_timeout.clone()));
    flag("--shard", Some(format!("$(JOB_COMPLETION_INDEX)/{shards}")));
    flag("--start-at", Some(at.to_string()));
    flag(
        "--metrics-addr",
        metrics.then(|| format!("0.0.0.0:{METRICS_PORT}")),
    );
    flag(
        "--out",
        Some(format!("{RESULTS_DIR}/shard-$(JOB_COMPLETION_INDEX).json")),
    );
    if r.skip_load {
        a.push("--skip-load".into());
    }
    a
}

/// What to do with the manifests, on standard error (standard output is the List).
fn next_steps(args: &KubeArgs, job: &str) -> String {
    format!(
        "# 1. the target URL, password included, as a Secret (once):\n\
         #    kubectl -n {ns} create secret generic {secret} --from-literal=url='postgres://user:PASSWORD@db:5432/app'\n\
         # 2. apply these manifests before the start they name (they start the shards together):\n\
         #    loadrig kube ... | kubectl apply -f -\n\
         # 3. wait, then merge the shards' files on the results volume (docs/distributed.md):\n\
         #    kubectl -n {ns} wait --for=condition=complete job/{job} --timeout=1h\n\
         #    (copy the shard-*.json files off the results claim), then: loadrig merge shard-*.json -o run.json\n",
        ns = args.namespace,
        secret = args.target_secret
    )
}

/// `loadrig kube-results DIR --owner UID:GID`, the pods' init container (as root, with only
/// CAP_CHOWN): gives DIR to the shards' user unless that user can write it already (their
/// directory, an fsGroup-managed volume, a world-writable export).
pub fn results_dir(args: &KubeResultsArgs) -> Result<ExitCode> {
    use std::os::unix::fs::MetadataExt;
    let user = User::parse(&args.owner)?;
    let dir = &args.dir;
    let meta = std::fs::metadata(dir)
        .map_err(|e| anyhow::anyhow!("cannot read '{}': {e}", dir.display()))?;
    let writable = (meta.uid() == user.uid && meta.mode() & 0o300 == 0o300)
        || (meta.gid() == user.gid && meta.mode() & 0o030 == 0o030)
        || meta.mode() & 0o003 == 0o003;
    if writable {
        return Ok(ExitCode::SUCCESS);
    }
    std::os::unix::fs::chown(dir, Some(user.uid), Some(user.gid)).map_err(|e| {
        InputError::new(format!(
            "cannot give '{}' (owner {}:{}) to the shards' user {}:{}: {e}",
            dir.display(),
            meta.uid(),
            meta.gid(),
            user.uid,
            user.gid
        ))
        .help("give the volume's directory to that user, or run the shards as its owner (loadrig kube --run-as UID:GID)")
    })?;
    eprintln!(
        "gave '{}' (owner {}:{}) to {}:{}",
        dir.display(),
        meta.uid(),
        meta.gid(),
        user.uid,
        user.gid
    );
    Ok(ExitCode::SUCCESS)
}
