//! How far the routing index trails the shards: the lag of each applied index-feed
//! change, a histogram the proxy's `/metrics` serves.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// Labels of an index-feed observation.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ShardLabels {
    /// The shard that streamed the change.
    pub shard: String,
}

fn lag_histogram() -> Histogram {
    // 1 ms to 65 s, doubling.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// `atoll_front_proxy_index_feed_lag_seconds{shard}`: from a shard seeing a Workspace or
/// LogicalCluster change committed to this proxy applying it to its routing index, by the
/// two hosts' clocks (so it includes their skew).
#[derive(Clone, Debug)]
pub struct FeedLag(pub(crate) Family<ShardLabels, Histogram, fn() -> Histogram>);

impl Default for FeedLag {
    fn default() -> Self {
        FeedLag(Family::new_with_constructor(lag_histogram))
    }
}

impl FeedLag {
    /// Observes one applied change the shard saw committed at `committed_unix_micros`.
    pub fn observe(&self, shard: &str, committed_unix_micros: i64) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| i64::try_from(since.as_micros()).unwrap_or(i64::MAX));
        let lag = now.saturating_sub(committed_unix_micros).max(0) as f64 / 1e6;
        self.0.get_or_create(&ShardLabels { shard: shard.to_string() }).observe(lag);
    }
}
