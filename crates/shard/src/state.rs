//! The shard's shared state, handed to every request and controller.

use crate::authn::Authenticator;
use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::storage::{self, ObjectRef};
use protocol::meta;
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

/// Whether a logical cluster exists on this shard, and whether it is being deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterState {
    /// No LogicalCluster object.
    Missing,
    /// Serving.
    Active,
    /// Its LogicalCluster is being deleted; its content is going away.
    Deleting,
}

impl Shard {
    /// Looks the cluster's `LogicalCluster` object up. A point read in RocksDB is cheap
    /// enough that no cache (and so no cache invalidation) is needed.
    pub fn cluster_state(&self, cluster: &str) -> ClusterState {
        let rt = self.registry.get("core.kcp.io", "v1alpha1", "logicalclusters").expect("built in");
        let at = ObjectRef { cluster, namespace: None, name: LOGICAL_CLUSTER_OBJECT };
        match storage::get(self, &rt, &at) {
            Ok((object, _)) if meta::is_deleting(&object) => ClusterState::Deleting,
            Ok(_) => ClusterState::Active,
            Err(_) => ClusterState::Missing,
        }
    }
}
