//! Prometheus metrics of a cache server, served as text at `/metrics` to callers with a
//! client certificate of the installation.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use store::Store;

/// Labels of the changes a sender replicated here.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SenderLabels {
    /// The sender's name (a shard, or a child cache).
    pub sender: String,
}

/// The cache server's metrics: its store's, what senders replicated to it, and the lag
/// of its own uplink to a parent.
pub struct Metrics {
    /// Replication batches applied, by sender.
    pub batches_applied: Family<SenderLabels, Counter>,
    /// Replicated changes applied, by sender.
    pub changes_applied: Family<SenderLabels, Counter>,
    /// The uplink's lag to each parent.
    pub replication_lag: sender::LagMetrics,
    registry: Registry,
}

impl Metrics {
    /// Registers every metric, `store`'s among them.
    pub fn new(store: &Store) -> Metrics {
        let mut registry = Registry::default();
        let batches_applied = Family::<SenderLabels, Counter>::default();
        let changes_applied = Family::<SenderLabels, Counter>::default();
        let replication_lag = sender::LagMetrics::default();
        registry.register(
            "atoll_cache_batches_applied",
            "Replication batches this cache applied durably, by sender",
            batches_applied.clone(),
        );
        registry.register(
            "atoll_cache_changes_applied",
            "Replicated changes (upserts and tombstones) this cache applied, by sender",
            changes_applied.clone(),
        );
        replication_lag.register(&mut registry);
        store.metrics().register(&mut registry);
        Metrics { batches_applied, changes_applied, replication_lag, registry }
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.push_str("# encoding metrics failed\n");
        }
        out
    }
}
