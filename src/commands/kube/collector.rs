//! `loadrig kube --collector`: a collector (`loadrig collect`) run as a Job of one pod next
//! to the shards' Job, the shards streaming their intervals to it (`run --collect ADDR`),
//! and the merged run written to the results volume as `collected.json` (docs/live.md,
//! docs/distributed.md). On a one-machine cluster (`--host-network`) it listens on the
//! node's 127.0.0.1 on a port free when the manifests are made; otherwise on the pod
//! network behind a Service, which the stream then crosses with the token and over TLS from
//! the Secret `--collect-secret`.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, PodSpec, PodTemplateSpec, SecretVolumeSource, Service, ServicePort,
    ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::RESULTS_DIR;
use super::{meta, mount, pod_security, results_owner, to_value, unprivileged, volumes, User};
use crate::cli::KubeArgs;
use crate::error::InputError;

/// The collector's port on the pod network (its Service's too).
const PORT: i32 = 7070;
/// Where the Secret's token and TLS files are mounted, in the collector and the shards.
const SECRET_DIR: &str = "/collect";
/// The merged run the collector writes (beside the shards' `shard-I.json`).
pub const COLLECTED: &str = "collected.json";
/// The label that picks the collector's pod for its Service.
const COMPONENT: &str = "app.kubernetes.io/component";

/// Where the collector listens and where the shards send.
pub struct Address {
    listen: String,
    reach: String,
    /// Beyond loopback: the stream needs the token and TLS of the Secret.
    secret: Option<String>,
}

impl Address {
    /// On the node's loopback (a free port there now) or behind the Service.
    pub fn new(args: &KubeArgs, name: &str) -> Result<Address, InputError> {
        if args.host_network {
            // The pods share the node's network: a fixed port could be taken by anything.
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| {
                    InputError::new(format!("--collector: no free port on 127.0.0.1: {e}"))
                })?
                .port();
            let addr = format!("127.0.0.1:{port}");
            return Ok(Address {
                listen: addr.clone(),
                reach: addr,
                secret: None,
            });
        }
        Ok(Address {
            listen: format!("0.0.0.0:{PORT}"),
            reach: format!("{name}-collect.{}.svc:{PORT}", args.namespace),
            secret: Some(args.collect_secret.clone()),
        })
    }

    /// The shards' flags: send to the collector (with the token and its CA beyond loopback).
    pub fn shard_args(&self) -> Vec<String> {
        let mut a = vec!["--collect".to_string(), self.reach.clone()];
        if self.secret.is_some() {
            a.extend([
                "--collect-token-file".to_string(),
                format!("{SECRET_DIR}/token"),
                "--collect-ca".to_string(),
                format!("{SECRET_DIR}/ca.crt"),
            ]);
        }
        a
    }

    /// The shards' Job sends to the collector: its flags, and the Secret mounted.
    pub fn attach(&self, job: &mut Job) {
        let Some(pod) = job.spec.as_mut().and_then(|s| s.template.spec.as_mut()) else {
            return;
        };
        if let Some(args) = pod.containers[0].args.as_mut() {
            args.extend(self.shard_args());
        }
        if let Some(secret) = &self.secret {
            pod.volumes
                .get_or_insert_with(Vec::new)
                .push(secret_volume(secret));
            pod.containers[0]
                .volume_mounts
                .get_or_insert_with(Vec::new)
                .push(secret_mount());
        }
    }

    /// The collector's Job and, on the pod network, its Service.
    pub fn objects(&self, args: &KubeArgs, name: &str, claim: &str, user: User) -> Vec<Value> {
        let mut objects = vec![to_value(&self.job(args, name, claim, user))];
        if self.secret.is_some() {
            objects.push(to_value(&service(name, &args.namespace)));
        }
        objects
    }

    /// One pod, never retried (a second collector would start without the shards' first
    /// intervals; `loadrig merge` of the shards' files makes the same run).
    fn job(&self, args: &KubeArgs, name: &str, claim: &str, user: User) -> Job {
        let mut run = vec![
            "collect".to_string(),
            "--listen".to_string(),
            self.listen.clone(),
            "--shards".to_string(),
            args.shards.to_string(),
            "--out".to_string(),
            format!("{RESULTS_DIR}/{COLLECTED}"),
        ];
        let mut mounts = vec![mount("results", RESULTS_DIR)];
        let mut vols: Vec<Volume> = volumes(name, claim)
            .into_iter()
            .filter(|v| v.name == "results")
            .collect();
        if let Some(secret) = &self.secret {
            run.extend(
                [
                    "--token-file",
                    &format!("{SECRET_DIR}/token"),
                    "--tls-cert",
                    &format!("{SECRET_DIR}/tls.crt"),
                    "--tls-key",
                    &format!("{SECRET_DIR}/tls.key"),
                ]
                .map(String::from),
            );
            mounts.push(secret_mount());
            vols.push(secret_volume(secret));
        }
        let container = Container {
            name: "collect".to_string(),
            image: Some(args.image.clone()),
            args: Some(run),
            ports: self.secret.is_some().then(|| {
                vec![ContainerPort {
                    name: Some("collect".to_string()),
                    container_port: PORT,
                    ..Default::default()
                }]
            }),
            volume_mounts: Some(mounts),
            security_context: Some(unprivileged(&[], Some(!user.is_root()))),
            ..Default::default()
        };
        let mut pod_meta = meta(name, "collect", &args.namespace);
        pod_meta.name = None;
        pod_meta.namespace = None;
        pod_meta
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(COMPONENT.to_string(), "collector".to_string());
        Job {
            metadata: meta(name, "collect", &args.namespace),
            spec: Some(JobSpec {
                completions: Some(1),
                parallelism: Some(1),
                backoff_limit: Some(0),
                template: PodTemplateSpec {
                    metadata: Some(pod_meta),
                    spec: Some(PodSpec {
                        init_containers: results_owner(&args.image, user),
                        containers: vec![container],
                        restart_policy: Some("Never".to_string()),
                        host_network: args.host_network.then_some(true),
                        automount_service_account_token: Some(false),
                        security_context: Some(pod_security(user)),
                        volumes: Some(vols),
                        ..Default::default()
                    }),
                },
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}

/// `{name}-collect` in front of the collector's pod, which the shards reach by its DNS name.
fn service(name: &str, namespace: &str) -> Service {
    Service {
        metadata: meta(name, "collect", namespace),
        spec: Some(ServiceSpec {
            selector: Some(BTreeMap::from([
                ("app.kubernetes.io/name".to_string(), "loadrig".to_string()),
                (COMPONENT.to_string(), "collector".to_string()),
                (
                    "batch.kubernetes.io/job-name".to_string(),
                    format!("{name}-collect"),
                ),
            ])),
            ports: Some(vec![ServicePort {
                name: Some("collect".to_string()),
                port: PORT,
                target_port: Some(IntOrString::String("collect".to_string())),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The Secret's keys `token`, `tls.crt`, `tls.key` and `ca.crt` as files.
fn secret_volume(secret: &str) -> Volume {
    Volume {
        name: "collect".to_string(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.to_string()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn secret_mount() -> VolumeMount {
    VolumeMount {
        read_only: Some(true),
        ..mount("collect", SECRET_DIR)
    }
}
