//! `grpc://HOST:PORT[?deadline=D]`: a gRPC server over HTTP/2; `grpcs://…` over TLS
//! (options `ca=PATH`, `insecure=true`: see [`super::tls`]; ALPN `h2`).
//!
//! - native `grpc = { method, request, reply }` (see `workload/ops/grpc.rs`) calls a unary
//!   or server-streaming method that the workload's `[grpc] proto` describes: the request
//!   is the workload's message with its generated fields filled in. A unary call counts
//!   rows 1. A server-streaming call is timed as a whole, from sending the request to the
//!   stream's end (its trailers), and counts each message it received in `rows`. With
//!   `capture`, the reply (a stream's first message) is decoded and the `reply` paths
//!   read; otherwise replies are counted without being decoded.
//! - `deadline=D` sends `grpc-timeout` with every call, so the server gives up at D and
//!   answers DEADLINE_EXCEEDED (class `timeout`); `--op-timeout` limits the client's wait.
//! - kv operations speak etcd's KV API to keys under `loadrig/` (see [`etcd`]), and
//!   `[data]` is loaded as Txns of 128 puts, and `cleanup` deletes that prefix in one
//!   DeleteRange. Both need an etcd (or a server of
//!   its API); any other service answers UNIMPLEMENTED, and its cleanup removes nothing:
//!   loadrig cannot know what an arbitrary service's calls created.
//! - `--pipeline P`: P client streams share one HTTP/2 connection, each call on a stream of
//!   its own (up to the server's SETTINGS_MAX_CONCURRENT_STREAMS at once, which the result
//!   records, as the settings exchange's time: see [`settings`]).
//! - `server_version` asks Maintenance/Status (etcd's version), and is empty elsewhere.
//!
//! Errors: a call's status by the table in [`status`]; a lost connection is UNAVAILABLE
//! (class `connect`: the engine opens a new one); connecting must finish within 5 s.

mod codec;
pub mod etcd;
mod settings;
pub mod status;
mod transport;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::uri::PathAndQuery;
use prost_reflect::{DynamicMessage, MessageDescriptor};
use tonic::client::Grpc as Client;

use self::codec::{DynamicCodec, Reply};
use self::transport::{Channel, Server};
use super::endpoint::Endpoint;
use super::tls::Tls;
use super::{unsupported, Session, Target, TargetUrl};
use crate::duration;
use crate::error::InputError;
use crate::stats::connect_phases::{ConnectPhases, PhaseClock};
use crate::vocab::{ErrorClass, Family, GrpcCall, NativeOp, Op, OpError, Outcome};

pub struct Grpc {
    server: Arc<Server>,
    deadline: Option<Duration>,
}

impl Grpc {
    pub fn open(url: &TargetUrl) -> Result<Grpc, InputError> {
        let mut known = vec!["deadline"];
        known.extend(super::tls::OPTIONS);
        url.check_options(&known)?;
        let on = url.scheme == "grpcs";
        let tls = Tls::from_url(url, on)?;
        let end = Endpoint::parse(url)?;
        if end.user.is_some() || !end.path.is_empty() {
            return Err(InputError::new(format!(
                "{}: a {}:// URL is HOST:PORT, with no user or path",
                end.shown, url.scheme
            ))
            .help("like grpc://127.0.0.1:2379; the method and service come from the workload"));
        }
        let Some(port) = end.port else {
            return Err(InputError::new(format!(
                "{}: give the server's port, like {}://127.0.0.1:2379",
                end.shown, url.scheme
            )));
        };
        let addrs: Vec<SocketAddr> =
            std::net::ToSocketAddrs::to_socket_addrs(&(end.host.as_str(), port))
                .map_err(|e| {
                    InputError::new(format!("{}: cannot resolve {}: {e}", end.shown, end.host))
                })?
                .collect();
        let host_port = if end.host.contains(':') {
            format!("[{}]:{port}", end.host)
        } else {
            format!("{}:{port}", end.host)
        };
        let origin = format!("{}://{host_port}", if on { "https" } else { "http" })
            .parse::<http::Uri>()
            .map_err(|e| InputError::new(format!("{}: not a valid host: {e}", end.shown)))?;
        let alpn = tls.config().map(|c| {
            let mut config = (*c).clone();
            config.alpn_protocols = vec![b"h2".to_vec()];
            Arc::new(config)
        });
        let deadline = match url.options.get("deadline") {
            None => None,
            Some(d) => {
                let d = duration::parse(d, "deadline")?;
                if d.is_zero() {
                    return Err(InputError::new(
                        "deadline=0: give a duration above zero, like 100ms",
                    ));
                }
                Some(d)
            }
        };
        Ok(Grpc {
            server: Arc::new(Server {
                addrs,
                host: end.host,
                shown: host_port,
                tls,
                alpn,
                origin,
                phases: PhaseClock::default(),
            }),
            deadline,
        })
    }

    fn session(&self, client: Client<Channel>) -> GrpcSession {
        GrpcSession {
            client,
            deadline: self.deadline,
        }
    }
}

impl Target for Grpc {
    type Session = GrpcSession;

    fn from_url(url: &TargetUrl, _params: &super::Params) -> Result<Self, InputError> {
        Self::open(url)
    }

    fn families(&self) -> &'static [Family] {
        &[Family::Grpc]
    }

    fn blocking(&self) -> bool {
        false
    }

    async fn connect(&self) -> Result<GrpcSession, OpError> {
        Ok(self.session(transport::connect(&self.server, 1).await?))
    }

    /// HTTP/2 multiplexes: every stream of the connection is a call of its own.
    fn cannot_pipeline(&self) -> Option<&'static str> {
        None
    }

    async fn connect_shared(&self, n: usize) -> Result<Vec<GrpcSession>, OpError> {
        let client = transport::connect(&self.server, n).await?;
        Ok((0..n).map(|_| self.session(client.clone())).collect())
    }

    fn connect_phases(&self) -> Option<ConnectPhases> {
        self.server.phases.snapshot()
    }
}

/// One client's calls, on a connection of its own or one it shares with other streams.
pub struct GrpcSession {
    client: Client<Channel>,
    deadline: Option<Duration>,
}

/// What a call gave back: the messages received, and the first decoded reply.
struct Answer {
    messages: u64,
    first: Option<DynamicMessage>,
}

impl GrpcSession {
    /// One call: the request sent, every reply message read (a unary call's one, a stream's
    /// all), the status checked. `decode` asks for the first reply's fields.
    async fn call(
        &mut self,
        path: &str,
        streaming: bool,
        request: DynamicMessage,
        decode: Option<MessageDescriptor>,
    ) -> Result<Answer, OpError> {
        let path = PathAndQuery::try_from(path)
            .map_err(|e| OpError::new(ErrorClass::Other, format!("method path {path}: {e}")))?;
        let mut request = tonic::Request::new(request);
        if let Some(d) = self.deadline {
            request.set_timeout(d);
        }
        let codec = DynamicCodec { reply: decode };
        self.client
            .ready()
            .await
            .map_err(|e| status::op_error(&e))?;
        if !streaming {
            let reply: Reply = self
                .client
                .unary(request, path, codec)
                .await
                .map_err(|e| status::op_error(&e))?
                .into_inner();
            return Ok(Answer {
                messages: 1,
                first: reply,
            });
        }
        let mut stream = self
            .client
            .server_streaming(request, path, codec)
            .await
            .map_err(|e| status::op_error(&e))?
            .into_inner();
        let mut answer = Answer {
            messages: 0,
            first: None,
        };
        while let Some(reply) = stream.message().await.map_err(|e| status::op_error(&e))? {
            if answer.messages == 0 {
                answer.first = reply;
            }
            answer.messages += 1;
        }
        Ok(answer)
    }

    /// A workload's `grpc` operation.
    async fn native(
        &mut self,
        call: &GrpcCall,
        args: &[Vec<u8>],
        capture: bool,
    ) -> Result<Outcome, OpError> {
        let request = call
            .request(args)
            .map_err(|m| OpError::new(ErrorClass::Other, m))?;
        let decode = capture.then(|| call.method.output());
        let answer = self
            .call(
                &call.path,
                call.method.is_server_streaming(),
                request,
                decode,
            )
            .await?;
        let mut out = Outcome::rows(answer.messages);
        if let Some(reply) = &answer.first {
            out.captured = call.captured(reply);
        }
        Ok(out)
    }

    /// One of etcd's own calls ([`etcd::Call`]); its rows as the call counts them.
    async fn etcd(&mut self, c: etcd::Call) -> Result<(u64, DynamicMessage), OpError> {
        let answer = self
            .call(c.path, false, c.request, Some(c.method.output()))
            .await?;
        let reply = answer
            .first
            .unwrap_or_else(|| DynamicMessage::new(c.method.output()));
        Ok(((c.rows)(&reply), reply))
    }
}

impl Session for GrpcSession {
    async fn execute(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        match op {
            Op::Native {
                op: NativeOp::Grpc(g),
                args,
                capture,
            } => self.native(&g.call, args, *capture).await,
            Op::Put { .. } | Op::Get { .. } | Op::Update { .. } | Op::Delete { .. } => {
                let call = etcd::etcd()?
                    .kv(op)
                    .ok_or_else(|| unsupported(op, "grpc"))?;
                Ok(Outcome::rows(self.etcd(call).await?.0))
            }
            Op::Nop => Ok(Outcome::rows(0)),
            Op::Begin | Op::Commit | Op::Rollback | Op::Native { .. } => {
                Err(unsupported(op, "grpc"))
            }
        }
    }

    /// etcd: the data load as Txns of up to [`etcd::TXN_OPS`] puts each.
    async fn load(&mut self, records: &[(String, Vec<u8>)]) -> Result<(), OpError> {
        for batch in records.chunks(etcd::TXN_OPS) {
            let call = etcd::etcd()?.load(batch).ok_or_else(|| {
                OpError::new(
                    ErrorClass::Other,
                    "the shipped etcd/rpc.proto has no Txn puts",
                )
            })?;
            self.etcd(call).await?;
        }
        Ok(())
    }

    /// etcd's version from Maintenance/Status; none from another service.
    async fn server_version(&mut self) -> Option<String> {
        let call = etcd::etcd().ok()?.status();
        let (_, reply) = self.etcd(call).await.ok()?;
        etcd::version(&reply)
    }

    /// etcd: every key under `loadrig/`, in one DeleteRange. A service that is not etcd
    /// answers UNIMPLEMENTED, and loadrig has nothing of its own to remove there.
    async fn cleanup(&mut self) -> Result<u64, OpError> {
        match self.etcd(etcd::etcd()?.cleanup()).await {
            Ok((deleted, _)) => Ok(deleted),
            Err(e) if e.message.starts_with("UNIMPLEMENTED") => Ok(0),
            Err(e) => Err(e),
        }
    }
}
