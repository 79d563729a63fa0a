//! Where a run's finished intervals go while it runs: the console and the metrics endpoint.

use std::time::Duration;

use crate::engine::{IntervalData, Observer};
use crate::report::console::Live;
use crate::report::metrics::MetricsServer;

/// Hands each finished interval to the console view and, when asked, the metrics endpoint.
pub struct Observers<'a> {
    /// The console view; none for a sweep point, which shows only its row.
    pub live: Option<&'a mut Live>,
    pub metrics: Option<&'a MetricsServer>,
}

impl Observer for Observers<'_> {
    fn interval(&mut self, data: &IntervalData) {
        if let Some(live) = self.live.as_deref_mut() {
            live.interval(data);
        }
        if let Some(m) = self.metrics {
            m.interval(data);
        }
    }

    fn tick(&mut self, elapsed: Duration) {
        if let Some(live) = self.live.as_deref_mut() {
            live.tick(elapsed);
        }
    }
}
