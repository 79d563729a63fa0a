//! The grpc target's connections: TCP (and TLS with ALPN `h2` for `grpcs://`), then an
//! HTTP/2 connection with hyper, whose request sender is the tower service that tonic's
//! generic client calls ([`Channel`]).
//!
//! Not tonic's own `Channel`: that puts a buffer task and a channel in front of every
//! connection, made for clients shared across threads. A loadrig session lives on one
//! thread, so it sends on the connection's sender directly; hyper's connection task runs on
//! the client thread's runtime beside the clients, as the other network targets' drivers
//! do.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::combinators::MapErr;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use tokio_rustls::TlsConnector;
use tonic::body::Body;
use tonic::Status;

use super::settings;
use crate::stats::connect_phases::{PhaseClock, PhaseTimes};
use crate::targets::socket;
use crate::targets::tls::{NetStream, Tls};
use crate::vocab::{ErrorClass, OpError};

/// How long connecting (TCP, TLS and the HTTP/2 handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the server is and how to reach it; shared by every session.
pub struct Server {
    pub addrs: Vec<SocketAddr>,
    /// The host as given: the name a TLS certificate must carry.
    pub host: String,
    /// HOST:PORT, for messages.
    pub shown: String,
    pub tls: Tls,
    /// The TLS configuration with ALPN `h2` (gRPC servers refuse TLS without it).
    pub alpn: Option<Arc<ClientConfig>>,
    /// `http://HOST:PORT` or `https://…`: the scheme and authority of every call.
    pub origin: http::Uri,
    pub phases: PhaseClock,
}

/// A reply's body, its transport errors made statuses.
pub type ReplyBody = MapErr<Incoming, fn(hyper::Error) -> Status>;

/// One HTTP/2 connection's request sender, as the service tonic's client calls.
#[derive(Clone)]
pub struct Channel(http2::SendRequest<Body>);

/// A transport failure (a closed or reset connection, a failed write) as the status a gRPC
/// client gives it: UNAVAILABLE, which the engine answers with a new connection.
fn lost(e: hyper::Error) -> Status {
    Status::unavailable(format!("connection lost: {e}"))
}

impl tower_service::Service<http::Request<Body>> for Channel {
    type Response = http::Response<ReplyBody>;
    type Error = Status;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Status>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Status>> {
        self.0.poll_ready(cx).map_err(lost)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let sent = self.0.send_request(request);
        Box::pin(async move {
            let reply = sent.await.map_err(lost)?;
            Ok(reply.map(|body| body.map_err(lost as fn(hyper::Error) -> Status)))
        })
    }
}

/// A client on a new connection for `streams` client streams: TCP, TLS, the HTTP/2 preface
/// and settings exchange (timed as the connection's `http2` phase, with the stream limit
/// the server set), within the connect timeout. The connection's task runs on the current
/// runtime until every client of it is dropped.
pub async fn connect(
    server: &Server,
    streams: usize,
) -> Result<tonic::client::Grpc<Channel>, OpError> {
    let connecting = async {
        let started = Instant::now();
        let stream = open(server, started).await?;
        let preface = Instant::now();
        let (stream, heard) = settings::watch(stream);
        let failed = |e: &dyn std::fmt::Display| {
            OpError::new(
                ErrorClass::Connect,
                format!("HTTP/2 handshake with {} failed: {e}", server.shown),
            )
        };
        let (sender, connection) = http2::Builder::new(TokioExecutor::new())
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| failed(&e))?;
        tokio::spawn(async move {
            // Its end is seen by the calls on it; nothing to report here.
            let _ = connection.await;
        });
        let allowed = heard
            .await
            .map_err(|_| failed(&"the connection ended before the server's SETTINGS"))?;
        server
            .phases
            .record_http2(preface.elapsed(), allowed, streams as u64);
        Ok(tonic::client::Grpc::with_origin(
            Channel(sender),
            server.origin.clone(),
        ))
    };
    crate::targets::connect_within(CONNECT_TIMEOUT, &server.shown, connecting).await
}

/// TCP to the first address that answers, then TLS for `grpcs://`; the phases recorded.
async fn open(server: &Server, started: Instant) -> Result<NetStream, OpError> {
    let mut last = None;
    for addr in &server.addrs {
        match socket::connect(addr).await {
            Ok(tcp) => {
                let tcp_time = started.elapsed();
                let stream = match &server.alpn {
                    None => NetStream::Plain(tcp),
                    Some(config) => {
                        let name = ServerName::try_from(server.host.clone()).map_err(|_| {
                            OpError::new(
                                ErrorClass::Connect,
                                format!(
                                    "{}: '{}' is not a host name TLS can verify",
                                    server.shown, server.host
                                ),
                            )
                        })?;
                        let tls = TlsConnector::from(Arc::clone(config))
                            .connect(name, tcp)
                            .await
                            .map_err(|e| server.tls.handshake_error(&server.shown, &e))?;
                        NetStream::Tls(Box::new(tls))
                    }
                };
                server.phases.record(PhaseTimes {
                    tcp: tcp_time,
                    tls: server.alpn.is_some().then(|| started.elapsed() - tcp_time),
                    auth: None,
                });
                return Ok(stream);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(OpError::new(
        ErrorClass::Connect,
        format!(
            "cannot connect to {}: {}",
            server.shown,
            last.map_or_else(|| "no address".to_string(), |e| e.to_string())
        ),
    ))
}
