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
    /// Whether the cluster's `LogicalCluster` object exists. A point read in RocksDB is
    /// cheap enough that no cache (and so no cache invalidation) is needed, and the value
    /// is not decoded: only existence matters on the request path.
    pub fn cluster_exists(&self, cluster: &str) -> bool {
        let rt = self.registry.get("core.kcp.io", "v1alpha1", "logicalclusters").expect("built in");
        let key = crate::objects::key(&rt, cluster, None, LOGICAL_CLUSTER_OBJECT);
        matches!(self.store.get(key.as_bytes()), Ok(Some(_)))
    }

    /// Whether the cluster's `LogicalCluster` is being deleted; new content is refused then
    /// (only the deletion mark is decoded).
    pub fn cluster_deleting(&self, cluster: &str) -> bool {
        #[derive(serde::Deserialize)]
        struct Marked {
            metadata: MarkedMeta,
        }
        #[derive(serde::Deserialize)]
        struct MarkedMeta {
            #[serde(rename = "deletionTimestamp")]
            deletion_timestamp: Option<serde::de::IgnoredAny>,
        }
        let rt = self.registry.get("core.kcp.io", "v1alpha1", "logicalclusters").expect("built in");
        let key = crate::objects::key(&rt, cluster, None, LOGICAL_CLUSTER_OBJECT);
        match self.store.get(key.as_bytes()) {
            Ok(Some(stored)) => serde_json::from_slice::<Marked>(&stored.value)
                .is_ok_and(|marked| marked.metadata.deletion_timestamp.is_some()),
            _ => false,
        }
    }
}
