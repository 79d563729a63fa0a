//! Where a run's finished intervals go while it runs: the console, the metrics endpoint,
//! the live dashboard and the collector of a sharded run.

use std::time::Duration;

use crate::engine::{IntervalData, Observer};
use crate::live::cpu;
use crate::live::dashboard::Watch;
use crate::live::link::Link;
use crate::report::console::Live;
use crate::report::metrics::MetricsServer;
use crate::result::IntervalRecord;

/// Hands each finished interval to the console view and, when asked, the metrics endpoint,
/// the dashboard and the collector.
pub struct Observers<'a> {
    /// The console view; none for a sweep point, which shows only its row.
    pub live: Option<&'a mut Live>,
    pub metrics: Option<&'a MetricsServer>,
    pub dashboard: Option<&'a mut Watch>,
    pub link: Option<&'a Link>,
    /// The operations' names, for the interval records.
    pub names: &'a [String],
}

impl Observer for Observers<'_> {
    fn interval(&mut self, data: &IntervalData) {
        if let Some(live) = self.live.as_deref_mut() {
            live.interval(data);
        }
        if let Some(m) = self.metrics {
            m.interval(data);
        }
        if self.dashboard.is_none() && self.link.is_none() {
            return;
        }
        // One record for both; the collector needs each client's count (fairness over
        // every client), the dashboard passes them over.
        let t = cpu::this_thread();
        let mut record = Some(IntervalRecord::of(data, self.names, self.link.is_some()));
        if let Some(watch) = self.dashboard.as_deref_mut() {
            // What is done for the dashboard alone is its cost: the record when only it
            // needs one, the histograms handed to it.
            let since = if self.link.is_some() {
                cpu::this_thread()
            } else {
                t
            };
            let hists = data.ops.iter().map(|c| c.latency.clone()).collect();
            let mine = if self.link.is_some() {
                record.clone()
            } else {
                record.take()
            };
            watch.charge_since(since);
            if let Some(r) = mine {
                watch.interval(r, Some(hists));
            }
        }
        if let (Some(link), Some(r)) = (self.link, record) {
            link.interval(r);
        }
    }

    fn tick(&mut self, elapsed: Duration) {
        if let Some(live) = self.live.as_deref_mut() {
            live.tick(elapsed);
        }
    }
}
