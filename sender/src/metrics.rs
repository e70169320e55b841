//! Replication lag: how long after a change was committed locally its target held it.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::time::Duration;

/// Labels of a lag observation.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TargetLabels {
    /// The target cache, as its URL.
    pub to: String,
}

fn lag_histogram() -> Histogram {
    // 1 ms to 65 s, doubling.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// `atoll_replication_lag_seconds{to}`: from the moment the sender saw a change committed
/// in its store until the target acknowledged the batch carrying it as durable. Full syncs
/// and repairs are not observed (their changes were committed long before).
#[derive(Clone, Debug)]
pub struct LagMetrics {
    lag: Family<TargetLabels, Histogram, fn() -> Histogram>,
}

impl Default for LagMetrics {
    fn default() -> Self {
        LagMetrics { lag: Family::new_with_constructor(lag_histogram) }
    }
}

impl LagMetrics {
    /// Adds the histogram to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "atoll_replication_lag_seconds",
            "Time from a change's commit in the sender's store until its target acknowledged it durable",
            self.lag.clone(),
        );
    }

    pub(crate) fn observe(&self, to: &str, lag: Duration) {
        self.lag.get_or_create(&TargetLabels { to: to.to_string() }).observe(lag.as_secs_f64());
    }
}
