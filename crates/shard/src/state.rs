//! The shard's shared state, handed to every request and controller.

use crate::authn::Authenticator;
use crate::metrics::Metrics;
use crate::registry::Registry;
use store::Store;

/// The name of the object that makes a logical cluster exist.
pub const LOGICAL_CLUSTER_OBJECT: &str = "cluster";
/// The logical cluster the root shard bootstraps.
pub const ROOT_CLUSTER: &str = "root";

/// Everything a request handler or controller needs.
pub struct Shard {
    /// This shard's name.
    pub name: String,
    /// The object store.
    pub store: Store,
    /// The served resources.
    pub registry: Registry,
    /// Who is calling.
    pub authn: Authenticator,
    /// Prometheus metrics.
    pub metrics: Metrics,
    /// `https://host:port` this shard serves on.
    pub base_url: String,
}

impl Shard {
    /// The stored `LogicalCluster` object of a cluster, if it exists. A point read in
    /// RocksDB is cheap enough that no cache (and so no cache invalidation) is needed; the
    /// value stays undecoded, since most requests only need to know that it exists.
    pub fn logical_cluster_record(&self, cluster: &str) -> Option<store::Versioned> {
        let rt = self.registry.get("core.kcp.io", "v1alpha1", "logicalclusters").expect("built in");
        let key = crate::objects::key(&rt, cluster, None, LOGICAL_CLUSTER_OBJECT);
        self.store.get(key.as_bytes()).ok().flatten()
    }

    /// Whether the cluster's `LogicalCluster` object exists.
    pub fn cluster_exists(&self, cluster: &str) -> bool {
        self.logical_cluster_record(cluster).is_some()
    }
}
