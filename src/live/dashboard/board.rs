//! What the dashboard holds: the current run's events so far (a page that connects gets
//! them all first), the pages' streams, the finished runs whose reports it offers, and the
//! counters its cost is recorded with. Owned by the dashboard thread; others read only the
//! counters.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::{events, RunInfo};
use crate::report::html;
use crate::result::{IntervalRecord, RunResult};
use crate::stats::Hist;

/// Finished runs whose reports stay on offer (a long sweep's oldest are forgotten).
const KEPT_RUNS: usize = 50;
/// Events a page may have waiting before it counts as stuck and is dropped (its browser
/// reconnects and catches up from the start).
const PAGE_BACKLOG: usize = 4096;

#[derive(Debug, Clone, Default)]
pub struct Counters {
    pub pages_now: usize,
    /// The most pages at once since the last mark.
    pub pages_max: usize,
    pub pages_opened: usize,
    pub events_sent: u64,
    pub bytes_sent: u64,
}

struct Finished {
    id: u64,
    title: String,
    result: Arc<RunResult>,
    html: Option<Bytes>,
}

#[derive(Default)]
pub struct Board {
    pub counters: Counters,
    /// The current run's number, from 1 (0 before the first).
    run: u64,
    run_frame: Option<Bytes>,
    title: String,
    /// The current run's events after its `run` event.
    frames: Vec<Bytes>,
    /// The measured latency so far, per operation, for the distribution.
    totals: Vec<Hist>,
    finished: Vec<Finished>,
    pages: Vec<mpsc::Sender<Bytes>>,
    seq: u64,
    closing: bool,
    /// Pages told of the last run's end that have not fetched its report yet: the end of
    /// the process waits for them (a while).
    pub awaiting_report: usize,
}

impl Board {
    fn frame(&mut self, event: &str, data: &Value) -> Bytes {
        self.seq += 1;
        Bytes::from(format!(
            "id: {}\nevent: {event}\ndata: {data}\n\n",
            self.seq
        ))
    }

    /// A new page's stream: everything of the current run so far, then what comes.
    pub fn subscribe(&mut self) -> mpsc::Receiver<Bytes> {
        let (tx, rx) = mpsc::channel(PAGE_BACKLOG + self.frames.len() + 4);
        let history = self.history();
        let mut first = vec![Bytes::from_static(b"retry: 2000\n\n"), history];
        first.extend(self.run_frame.clone());
        first.extend(self.frames.iter().cloned());
        if self.closing {
            first.push(Bytes::from_static(b"event: bye\ndata: {}\n\n"));
        }
        for f in first {
            self.count(f.len(), 1);
            let _ = tx.try_send(f);
        }
        if !self.closing {
            self.pages.push(tx);
        }
        let c = &mut self.counters;
        c.pages_now += 1;
        c.pages_opened += 1;
        c.pages_max = c.pages_max.max(c.pages_now);
        rx
    }

    pub fn page_closed(&mut self) {
        self.counters.pages_now = self.counters.pages_now.saturating_sub(1);
    }

    fn count(&mut self, bytes: usize, pages: usize) {
        self.counters.events_sent += pages as u64;
        self.counters.bytes_sent += (bytes * pages) as u64;
    }

    /// Send `frame` to every page (keeping it for pages to come when `keep`); a page too
    /// far behind is dropped, and its browser reconnects.
    fn broadcast(&mut self, frame: Bytes, keep: bool) {
        self.pages.retain(|p| p.try_send(frame.clone()).is_ok());
        let n = self.pages.len();
        self.count(frame.len(), n);
        if keep {
            self.frames.push(frame);
        }
    }

    /// The finished runs on offer, for a page that connects.
    fn history(&mut self) -> Bytes {
        let runs: Vec<Value> = self
            .finished
            .iter()
            .map(|f| {
                json!({"id": f.id, "title": f.title, "summary": events::summary(&f.result),
                       "report": format!("/report/{}.html", f.id), "result": format!("/result/{}.json", f.id)})
            })
            .collect();
        self.frame("history", &json!({ "runs": runs }))
    }

    pub fn begin(&mut self, info: &RunInfo) {
        self.run += 1;
        self.frames.clear();
        self.totals = info.ops.iter().map(|_| crate::stats::new_hist()).collect();
        self.title = info.title.clone();
        let frame = self.frame("run", &json!({"id": self.run, "info": info}));
        self.run_frame = Some(frame.clone());
        self.broadcast(frame, false);
    }

    pub fn interval(&mut self, record: IntervalRecord, hists: Option<Vec<Hist>>) {
        let data = events::interval(record, hists, &mut self.totals);
        let frame = self.frame("interval", &data);
        self.broadcast(frame, true);
    }

    /// An interval's server figures, after its `interval` event; kept, so that a page
    /// opened later replays them in the same order.
    pub fn server(&mut self, record: &IntervalRecord) {
        if let Some(data) = events::server(record) {
            let frame = self.frame("server", &data);
            self.broadcast(frame, true);
        }
    }

    pub fn shards(&mut self, table: &Value) {
        let frame = self.frame("shards", table);
        self.broadcast(frame, true);
    }

    pub fn note(&mut self, line: &str) {
        let frame = self.frame("note", &json!({ "text": line }));
        self.broadcast(frame, true);
    }

    /// The run ended: its summary to the pages, its report and result on offer.
    pub fn end(&mut self, result: RunResult) {
        let id = self.run;
        let data = json!({
            "id": id,
            "title": self.title,
            "summary": events::summary(&result),
            "report": format!("/report/{id}.html"),
            "result": format!("/result/{id}.json"),
        });
        self.finished.push(Finished {
            id,
            title: self.title.clone(),
            result: Arc::new(result),
            html: None,
        });
        if self.finished.len() > KEPT_RUNS {
            self.finished.remove(0);
        }
        // Pages fetch the report as soon as they hear: make it now, while they wait.
        if !self.pages.is_empty() {
            let _ = self.report(id);
        }
        self.awaiting_report = self.pages.len();
        let frame = self.frame("end", &data);
        self.broadcast(frame, true);
    }

    /// The process is ending: the pages are told, and their streams end.
    pub fn bye(&mut self) {
        self.closing = true;
        let frame = Bytes::from_static(b"event: bye\ndata: {}\n\n");
        self.broadcast(frame, false);
        self.pages.clear();
    }

    /// Finished run `id`'s HTML report, made on first request.
    pub fn report(&mut self, id: u64) -> Option<Result<Bytes, String>> {
        if id == self.run {
            self.awaiting_report = self.awaiting_report.saturating_sub(1);
        }
        let f = self.finished.iter_mut().find(|f| f.id == id)?;
        if let Some(h) = &f.html {
            return Some(Ok(h.clone()));
        }
        let label = format!("run {id}: {}", f.title);
        match html::render(&[(label, (*f.result).clone())]) {
            Ok(page) => {
                let page = Bytes::from(page);
                f.html = Some(page.clone());
                Some(Ok(page))
            }
            Err(e) => Some(Err(format!("{e:#}"))),
        }
    }

    /// Finished run `id`'s result file.
    pub fn result(&self, id: u64) -> Option<Bytes> {
        let f = self.finished.iter().find(|f| f.id == id)?;
        serde_json::to_vec_pretty(&*f.result).ok().map(Bytes::from)
    }
}
