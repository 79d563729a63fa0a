//! One shard's connection to the collector: TLS when configured, the hello read and handed
//! to the collector's loop to judge, then each line parsed and handed on; the loop's
//! answers written back. A stream that is not a loadrig shard's is refused here.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;

use crate::live::wire::{self, Hello, ServerFigures, ToCollector, ToShard};
use crate::result::stream::StreamHeader;
use crate::result::{IntervalRecord, RunResult};

/// How long a new connection has to finish its TLS handshake and say hello.
const HELLO_WITHIN: Duration = Duration::from_secs(10);

/// What a connection tells the collector's loop.
pub enum Event {
    Hello {
        conn: u64,
        from: SocketAddr,
        hello: Box<Hello>,
        /// The loop's answers to this connection.
        answer: mpsc::UnboundedSender<ToShard>,
    },
    /// Refused before it could say who it is.
    Refused {
        from: SocketAddr,
        reason: String,
    },
    Header(u64, Box<StreamHeader>),
    Interval(u64, Box<IntervalRecord>),
    Server(u64, Box<ServerFigures>),
    Ping(u64),
    Result(u64, Box<RunResult>),
    Closed(u64, String),
}

/// Serve one connection until either side ends it.
pub async fn serve(
    tcp: TcpStream,
    from: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
    conn: u64,
    events: mpsc::UnboundedSender<Event>,
) {
    let _ = tcp.set_nodelay(true);
    match tls {
        Some(config) => {
            let accepted =
                tokio::time::timeout(HELLO_WITHIN, TlsAcceptor::from(config).accept(tcp)).await;
            match accepted {
                Ok(Ok(stream)) => talk(stream, from, conn, events).await,
                Ok(Err(e)) => {
                    let _ = events.send(Event::Refused {
                        from,
                        reason: format!("TLS handshake failed: {e}"),
                    });
                }
                Err(_) => {
                    let _ = events.send(Event::Refused {
                        from,
                        reason: "no TLS handshake within 10s".into(),
                    });
                }
            }
        }
        None => talk(tcp, from, conn, events).await,
    }
}

async fn talk<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    from: SocketAddr,
    conn: u64,
    events: mpsc::UnboundedSender<Event>,
) {
    let (read, mut write) = tokio::io::split(stream);
    let mut read = BufReader::new(read);
    let first =
        tokio::time::timeout(HELLO_WITHIN, wire::read_line(&mut read, wire::MAX_HELLO)).await;
    let hello = match first {
        Ok(Ok(Some(line))) => match serde_json::from_slice::<ToCollector>(&line) {
            Ok(ToCollector::Hello(h)) => h,
            _ => return refuse_stranger(&mut write, from, &events, &line).await,
        },
        Ok(Ok(None)) => return,
        Ok(Err(e)) => {
            let reason = format!("not a loadrig shard's stream: {e}");
            let _ = events.send(Event::Refused { from, reason });
            return;
        }
        Err(_) => {
            let reason = "it said nothing within 10s".to_string();
            let _ = events.send(Event::Refused { from, reason });
            return;
        }
    };
    let (answer, mut answers) = mpsc::unbounded_channel();
    let _ = events.send(Event::Hello {
        conn,
        from,
        hello,
        answer,
    });
    // The loop's answers, written as they come; a refusal or a receipt ends the stream.
    let writer = tokio::spawn(async move {
        while let Some(a) = answers.recv().await {
            let last = matches!(a, ToShard::Refused { .. } | ToShard::Received {});
            if write.write_all(&wire::line(&a)).await.is_err() || last {
                break;
            }
        }
        let _ = write.shutdown().await;
    });
    let why = loop {
        let line = match wire::read_line(&mut read, wire::MAX_LINE).await {
            Ok(Some(l)) => l,
            Ok(None) => break "its connection closed".to_string(),
            Err(e) => break format!("its stream broke: {e}"),
        };
        let event = match serde_json::from_slice::<ToCollector>(&line) {
            Ok(ToCollector::Header(h)) => Event::Header(conn, h),
            Ok(ToCollector::Interval(r)) => Event::Interval(conn, r),
            Ok(ToCollector::Server(f)) => Event::Server(conn, f),
            Ok(ToCollector::Ping {}) => Event::Ping(conn),
            Ok(ToCollector::Result(r)) => Event::Result(conn, r),
            Ok(ToCollector::Hello(_)) => break "it said hello twice".to_string(),
            Err(e) => break format!("it sent a line that is not a stream message: {e}"),
        };
        if events.send(event).is_err() {
            break "the collector is ending".to_string();
        }
    };
    let _ = events.send(Event::Closed(conn, why));
    writer.abort();
}

/// A first line that is not a hello: refused, with a message it may show.
async fn refuse_stranger<W: AsyncWrite + Unpin>(
    write: &mut W,
    from: SocketAddr,
    events: &mpsc::UnboundedSender<Event>,
    line: &[u8],
) {
    // Another version's hello still names its stream and version: say which.
    let v: serde_json::Value = serde_json::from_slice(line).unwrap_or_default();
    let reason = match (
        v["hello"]["stream"].as_str(),
        v["hello"]["version"].as_u64(),
    ) {
        (Some(stream), Some(version)) if version != u64::from(wire::VERSION) => format!(
            "it speaks stream version {version} of '{stream}'; this collector reads version {}",
            wire::VERSION
        ),
        _ => "not a loadrig shard's stream (its first line is no hello)".to_string(),
    };
    let refusal = ToShard::Refused {
        message: reason.clone(),
        help: Some("run the same loadrig version on the shards and the collector".into()),
    };
    let _ = write.write_all(&wire::line(&refusal)).await;
    let _ = write.shutdown().await;
    let _ = events.send(Event::Refused { from, reason });
}
