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
        // The collector needs the encoded histograms and each client's count (fairness over
        // every client); the dashboard, handed the histograms, needs neither. What is done
        // for the dashboard alone is its cost.
        let record = self
            .link
            .map(|_| IntervalRecord::of(data, self.names, true));
        if let Some(watch) = self.dashboard.as_deref_mut() {
            let t = cpu::this_thread();
            let hists = data.ops.iter().map(|c| c.latency.clone()).collect();
            let mine = match &record {
                Some(r) => r.clone(),
                None => IntervalRecord::unencoded(data, self.names),
            };
            watch.charge_since(t);
            watch.interval(mine, Some(hists));
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
