//! The shard's shared state, handed to every request and controller.

use crate::cache::CacheIndex;
use crate::membership::Membership;
use crate::metrics::Metrics;
use crate::paths::PathIndex;
use crate::peer::Peers;
use crate::tenancy::rows::TenancyRows;
use apiserver::registry::Core;
use protocol::ring::ClusterNames;
use protocol::types::LOGICAL_CLUSTER_NAME;
use security::authn::Authenticator;
use std::sync::Arc;

/// Everything a request handler or controller needs: the [`Core`] (reached through
/// `Deref`, so `shard.store` and `shard.registry` read as before) and the features' state.
pub struct Shard {
    /// The store and the resource table.
    pub core: Arc<Core>,
    /// This shard's name.
    pub name: String,
    /// Who is calling.
    pub authn: Authenticator,
    /// Prometheus metrics.
    pub metrics: Metrics,
    /// `https://host:port` this shard serves on.
    pub base_url: String,
    /// Where clients reach this shard (`--external-url`, else the base URL).
    pub external_url: String,
    /// The root shard's base URL; `None` on the root shard itself.
    pub root_shard_url: Option<String>,
    /// Canonical paths of the clusters hosted here.
    pub paths: Arc<PathIndex>,
    /// The installation's shards, as last read.
    pub membership: Membership,
    /// Clients for calls to other shards.
    pub peers: Peers,
    /// Where new logical-cluster names come from.
    pub cluster_names: ClusterNames,
    /// Other shards' replicated objects, from the cache informer.
    pub cache: Arc<CacheIndex>,
}

impl std::ops::Deref for Shard {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}

impl Shard {
    /// The stored `LogicalCluster` object of a cluster, if it exists. A point read in
    /// RocksDB is cheap enough that no cache (and so no cache invalidation) is needed; the
    /// value stays undecoded, since most requests only need to know that it exists.
    pub fn logical_cluster_record(&self, cluster: &str) -> Option<store::Versioned> {
        let rt = self.registry.logical_clusters();
        let key = apiserver::objects::key(&rt, cluster, None, LOGICAL_CLUSTER_NAME);
        // Read by nearly every request: kept in memory, exact (see `Store::get_hot`).
        self.store.get_hot(key.as_bytes()).ok().flatten()
    }

    /// Whether the cluster's `LogicalCluster` object exists.
    pub fn cluster_exists(&self, cluster: &str) -> bool {
        self.logical_cluster_record(cluster).is_some()
    }
}
