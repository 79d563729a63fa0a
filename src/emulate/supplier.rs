//! The supplier of the order-entry study (ECperf's supplier domain): it accepts purchase
//! orders over HTTP and hands each back as a delivery once `delay` has passed since its
//! receipt. The interface is in docs/emulate.md.

use std::collections::{HashSet, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::error::InputError;

/// What the supplier has seen, as `GET /stats` serves it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SupplierStats {
    /// Purchase-order ids in the order they were first received.
    pub received: Vec<u64>,
    /// Ids in the order `GET /delivery` handed them out.
    pub delivered: Vec<u64>,
    /// POSTs of an id already received (recorded, not scheduled again).
    pub duplicates: u64,
    /// Received and not yet delivered, due or not.
    pub pending: u64,
}

/// The supplier's books; one lock, held only to read or append.
#[derive(Default)]
struct Ledger {
    stats: SupplierStats,
    seen: HashSet<u64>,
    /// (due, id) in receipt order; with one delay for all, that is also due order.
    due: VecDeque<(Instant, u64)>,
}

type Shared = Arc<Mutex<Ledger>>;

fn lock(ledger: &Shared) -> MutexGuard<'_, Ledger> {
    // A handler never panics while holding it; recover the data if one ever did.
    ledger.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running supplier; dropping it stops the server and joins its thread.
pub struct SupplierHandle {
    addr: SocketAddr,
    ledger: Shared,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl SupplierHandle {
    /// The bound address (the real port when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn stats(&self) -> SupplierStats {
        lock(&self.ledger).stats.clone()
    }

    /// Forget every purchase order received and every delivery still due, so that the next
    /// run (whose database numbers its purchase orders from 1 again) starts clean.
    pub fn reset(&self) {
        *lock(&self.ledger) = Ledger::default();
    }
}

impl Drop for SupplierHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub struct Supplier;

impl Supplier {
    /// Bind `addr` now (so a bad address fails before anything runs) and serve on a
    /// thread of its own with a single-threaded runtime, to keep its CPU share small.
    pub fn start(
        addr: SocketAddr,
        delay: Duration,
        response_time: Duration,
    ) -> Result<SupplierHandle, InputError> {
        let listener = bind(addr)?;
        let bound = listener
            .local_addr()
            .map_err(|e| InputError::new(format!("--listen {addr}: {e}")))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| InputError::new(format!("cannot start the supplier's runtime: {e}")))?;
        let ledger = Shared::default();
        let (stop, stopped) = oneshot::channel();
        let serving = ledger.clone();
        let thread = std::thread::Builder::new()
            .name("supplier".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let config = Config {
                        delay,
                        response_time,
                    };
                    tokio::select! {
                        _ = stopped => {}
                        () = accept(listener, serving, config) => {}
                    }
                });
            })
            .map_err(|e| InputError::new(format!("cannot start the supplier's thread: {e}")))?;
        Ok(SupplierHandle {
            addr: bound,
            ledger,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

fn bind(addr: SocketAddr) -> Result<std::net::TcpListener, InputError> {
    if !addr.ip().is_loopback() {
        return Err(InputError::new(format!(
            "--listen {addr}: the supplier serves only on loopback"
        ))
        .help("use 127.0.0.1:PORT or [::1]:PORT (port 0 picks a free one)"));
    }
    let listener = std::net::TcpListener::bind(addr).map_err(|e| {
        InputError::new(format!("--listen {addr}: cannot bind: {e}")).help(
            "is another process listening there? choose another port, or port 0 for any free one",
        )
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| InputError::new(format!("--listen {addr}: {e}")))?;
    Ok(listener)
}

#[derive(Clone, Copy)]
struct Config {
    delay: Duration,
    response_time: Duration,
}

async fn accept(listener: tokio::net::TcpListener, ledger: Shared, config: Config) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors and the like: wait a little rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let ledger = ledger.clone();
        let service = service_fn(move |req| answer(req, ledger.clone(), config));
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn reply(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response
}

async fn answer(
    req: Request<Incoming>,
    ledger: Shared,
    config: Config,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let response = match (req.method(), req.uri().path()) {
        (&Method::POST, "/po") => purchase_order(req, &ledger, config).await,
        (&Method::GET, "/delivery") => delivery(&ledger),
        (&Method::GET, "/stats") => {
            let stats = lock(&ledger).stats.clone();
            let mut r = reply(
                StatusCode::OK,
                serde_json::to_vec(&stats).unwrap_or_default(),
            );
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            r
        }
        _ => reply(
            StatusCode::NOT_FOUND,
            "not found: POST /po, GET /delivery, GET /stats\n",
        ),
    };
    Ok(response)
}

/// Purchase-order ids are short decimal text; anything longer is not one.
const MAX_BODY: usize = 64;

async fn purchase_order(
    req: Request<Incoming>,
    ledger: &Shared,
    config: Config,
) -> Response<Full<Bytes>> {
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return reply(StatusCode::BAD_REQUEST, "expected a purchase-order id\n"),
    };
    let Some(id) = std::str::from_utf8(&body)
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
    else {
        return reply(
            StatusCode::BAD_REQUEST,
            "expected a purchase-order id: decimal digits\n",
        );
    };
    if !config.response_time.is_zero() {
        tokio::time::sleep(config.response_time).await;
    }
    let mut books = lock(ledger);
    if books.seen.insert(id) {
        books.stats.received.push(id);
        books.stats.pending += 1;
        books.due.push_back((Instant::now() + config.delay, id));
        reply(StatusCode::OK, format!("accepted {id}"))
    } else {
        books.stats.duplicates += 1;
        reply(StatusCode::OK, format!("duplicate {id}"))
    }
}

/// The oldest due delivery, or an empty body when none is due.
fn delivery(ledger: &Shared) -> Response<Full<Bytes>> {
    let mut books = lock(ledger);
    match books.due.front() {
        Some(&(due, id)) if due <= Instant::now() => {
            books.due.pop_front();
            books.stats.delivered.push(id);
            books.stats.pending -= 1;
            reply(StatusCode::OK, id.to_string())
        }
        _ => reply(StatusCode::OK, Bytes::new()),
    }
}
