//! The counters the core keeps itself; the binary that serves it registers them with its
//! Prometheus registry next to its own.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

/// Watches started and streaming.
#[derive(Debug, Clone, Default)]
pub struct CoreMetrics {
    /// Watches started.
    pub watches_started: Counter,
    /// Watches streaming now.
    pub watches_active: Gauge,
}

/// Decrements the active-watch gauge when the watch ends.
pub struct ActiveWatch<'a>(&'a Gauge);

impl Drop for ActiveWatch<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl CoreMetrics {
    /// Counts a watch as started, and as active until the guard drops.
    pub fn watch_started(&self) -> ActiveWatch<'_> {
        self.watches_started.inc();
        self.watches_active.inc();
        ActiveWatch(&self.watches_active)
    }
}
