//! Prometheus metrics of the proxy: requests by code, latency, and the index size.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::feed::Routing;
use crate::feed_lag::FeedLag;

/// Labels of the request counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CodeLabels {
    /// The HTTP status code (a number: no allocation per request).
    pub code: u16,
}

/// The proxy's metrics.
pub struct Metrics {
    requests: Family<CodeLabels, Counter>,
    request_seconds: Histogram,
    indexed_clusters: Gauge,
    known_shards: Gauge,
    registry: Registry,
}

impl Metrics {
    /// Registers every metric, the index feed's lag (which `feed_lag` observes) among them.
    pub fn new(feed_lag: &FeedLag) -> Self {
        let requests = Family::<CodeLabels, Counter>::default();
        let request_seconds = Histogram::new(exponential_buckets(0.000_1, 2.0, 20));
        let indexed_clusters = Gauge::default();
        let known_shards = Gauge::default();
        let mut registry = Registry::with_prefix("atoll_front_proxy");
        registry.register("requests", "Requests by HTTP status code", requests.clone());
        registry.register(
            "request_seconds",
            "Time to the response headers (watches: to the start of the stream)",
            request_seconds.clone(),
        );
        registry.register(
            "indexed_logical_clusters",
            "Logical clusters in the routing index",
            indexed_clusters.clone(),
        );
        registry.register("shards", "Shards the proxy routes to", known_shards.clone());
        registry.register(
            "index_feed_lag_seconds",
            "From a shard seeing a Workspace or LogicalCluster change committed to this proxy applying it",
            feed_lag.0.clone(),
        );
        Metrics { requests, request_seconds, indexed_clusters, known_shards, registry }
    }

    /// Counts one answered request.
    pub fn observe(&self, code: u16, elapsed: Duration) {
        self.requests.get_or_create(&CodeLabels { code }).inc();
        self.request_seconds.observe(elapsed.as_secs_f64());
    }

    /// The OpenMetrics text, with the gauges read from `routing` at this moment.
    pub fn render(&self, routing: &Routing) -> String {
        self.indexed_clusters.set(routing.index.read().cluster_count() as i64);
        self.known_shards.set(routing.shard_names().len() as i64);
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}
