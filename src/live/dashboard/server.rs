//! The dashboard's HTTP side (hyper, HTTP/1.1) and the loop that takes in what the runner
//! or the collector hands it, both on the dashboard's own single-threaded runtime.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::mpsc;

use super::board::Board;
use super::Feed;

/// The page: its style and script put in at their places, once.
static PAGE: LazyLock<Bytes> = LazyLock::new(|| {
    let page = include_str!("page.html")
        .replace("/*STYLE*/", include_str!("page.css"))
        .replace("/*SCRIPT*/", include_str!("page.js"));
    Bytes::from(page)
});

/// The page runs its own inline script and style, and asks nothing of any address but its
/// own (the events, a report); nothing else can load, even if a string slipped through.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                   connect-src 'self'; img-src data: blob:; base-uri 'none'; form-action 'none'";

/// How long the end waits for the pages to take what they were sent.
const BYE_WAIT: Duration = Duration::from_secs(3);

type Shared = Arc<Mutex<Board>>;
type Reply = Response<http_body_util::combinators::UnsyncBoxBody<Bytes, Infallible>>;

fn lock(board: &Shared) -> MutexGuard<'_, Board> {
    board.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serve until the process ends ([`Feed::Bye`]).
pub async fn serve(
    listener: std::net::TcpListener,
    board: Shared,
    mut fed: mpsc::UnboundedReceiver<Feed>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let board = Arc::clone(&board);
                tokio::spawn(async move {
                    let service = service_fn(move |req| answer(req, Arc::clone(&board)));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            feed = fed.recv() => match feed {
                Some(Feed::Bye(done)) => {
                    lock(&board).bye();
                    let until = Instant::now() + BYE_WAIT;
                    let busy = |b: &Board| b.counters.pages_now > 0 || b.awaiting_report > 0;
                    while busy(&lock(&board)) && Instant::now() < until {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    let _ = done.send(());
                    return;
                }
                Some(f) => take(&board, f),
                None => return,
            },
        }
    }
}

fn take(board: &Shared, f: Feed) {
    let mut b = lock(board);
    match f {
        Feed::Begin(info) => b.begin(&info),
        Feed::Interval(r, hists) => b.interval(*r, hists),
        Feed::Server(r) => b.server(&r),
        Feed::Shards(table) => b.shards(&table),
        Feed::Note(line) => b.note(&line),
        Feed::End(result) => b.end(*result),
        Feed::Bye(_) => {}
    }
}

fn full(status: StatusCode, kind: &'static str, body: Bytes) -> Reply {
    let mut r = Response::new(Full::new(body).boxed_unsync());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

const TEXT: &str = "text/plain; charset=utf-8";

async fn answer(req: Request<Incoming>, board: Shared) -> Result<Reply, Infallible> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return Ok(full(
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            Bytes::from_static(b"the dashboard answers GET only\n"),
        ));
    }
    let path = req.uri().path().to_string();
    let numbered = |prefix: &str, suffix: &str| -> Option<u64> {
        path.strip_prefix(prefix)?
            .strip_suffix(suffix)?
            .parse()
            .ok()
    };
    let reply = if path == "/" || path == "/index.html" {
        let mut r = full(StatusCode::OK, "text/html; charset=utf-8", PAGE.clone());
        r.headers_mut()
            .insert("content-security-policy", HeaderValue::from_static(CSP));
        r
    } else if path == "/events" {
        events(&board)
    } else if let Some(id) = numbered("/report/", ".html") {
        match lock(&board).report(id) {
            Some(Ok(page)) => {
                let mut r = full(StatusCode::OK, "text/html; charset=utf-8", page);
                r.headers_mut().insert(
                    CONTENT_DISPOSITION,
                    HeaderValue::from_static("inline; filename=\"loadrig-report.html\""),
                );
                r
            }
            Some(Err(e)) => full(
                StatusCode::INTERNAL_SERVER_ERROR,
                TEXT,
                Bytes::from(format!("the report could not be made: {e}\n")),
            ),
            None => not_found(),
        }
    } else if let Some(id) = numbered("/result/", ".json") {
        match lock(&board).result(id) {
            Some(json) => full(StatusCode::OK, "application/json", json),
            None => not_found(),
        }
    } else {
        not_found()
    };
    Ok(reply)
}

fn not_found() -> Reply {
    full(
        StatusCode::NOT_FOUND,
        TEXT,
        Bytes::from_static(b"the dashboard serves /, /events, /report/N.html and /result/N.json of finished runs\n"),
    )
}

/// `/events`: a stream of server-sent events that ends when the process does.
fn events(board: &Shared) -> Reply {
    let rx = lock(board).subscribe();
    let body = EventBody {
        rx,
        board: Arc::clone(board),
    };
    let mut r = Response::new(body.boxed_unsync());
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// A page's stream: the frames its channel receives; counted out when hyper drops it (the
/// page went away, or the stream ended).
struct EventBody {
    rx: mpsc::Receiver<Bytes>,
    board: Shared,
}

impl Body for EventBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx
            .poll_recv(cx)
            .map(|frame| frame.map(|b| Ok(Frame::data(b))))
    }
}

impl Drop for EventBody {
    fn drop(&mut self) {
        lock(&self.board).page_closed();
    }
}
