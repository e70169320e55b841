//! The path index: canonical paths (`root:org:team`) of the logical clusters this shard
//! hosts, mapped to their names, so that `/clusters/<canonical-path>/…` resolves here.
//!
//! The truth is each LogicalCluster's `kcp.io/path` annotation; this is a cache of it.
//! It is filled from the store at start, and kept current by the code that creates and
//! finally removes LogicalCluster objects (before they answer), so a client that saw a
//! workspace become Ready can use its path at once. An entry is small (two short
//! strings), which keeps an empty workspace cheap.

use crate::tenancy::rows::TenancyRows;
use apiserver::registry::Core;
use parking_lot::RwLock;
use protocol::meta;
use protocol::wellknown::PATH_ANNOTATION;
use serde_json::Value;
use std::collections::HashMap;

/// Canonical path → logical-cluster name, for the clusters of this shard.
#[derive(Debug, Default)]
pub struct PathIndex {
    by_path: RwLock<HashMap<Box<str>, Box<str>>>,
}

impl PathIndex {
    /// The logical cluster whose canonical path is `path`, if this shard hosts it.
    pub fn resolve(&self, path: &str) -> Option<String> {
        self.by_path.read().get(path).map(|name| name.to_string())
    }

    /// Records a LogicalCluster object of cluster `cluster` (no-op without a path).
    pub fn observe(&self, cluster: &str, logical_cluster: &Value) {
        if let Some(path) = meta::annotations(logical_cluster).get(PATH_ANNOTATION) {
            self.by_path.write().insert(path.as_str().into(), cluster.into());
        }
    }

    /// Forgets `path`, but only while it still points at `cluster`: a newer cluster that
    /// took over the path (a workspace deleted and created again) keeps it.
    pub fn forget(&self, path: &str, cluster: &str) {
        let mut by_path = self.by_path.write();
        if by_path.get(path).is_some_and(|name| &**name == cluster) {
            by_path.remove(path);
        }
    }

    /// How many paths are indexed.
    pub fn len(&self) -> usize {
        self.by_path.read().len()
    }

    /// Whether no path is indexed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Rebuilds the index from every LogicalCluster in the store.
    pub fn load(&self, core: &Core) -> anyhow::Result<()> {
        let rt = core.registry.logical_clusters();
        apiserver::objects::scan(&core.store, &rt, |cluster, object| self.observe(cluster, object))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lc(path: &str) -> Value {
        json!({"metadata": {"name": "cluster", "annotations": {PATH_ANNOTATION: path}}})
    }

    #[test]
    fn paths_resolve_and_only_their_owner_forgets_them() {
        let index = PathIndex::default();
        index.observe("abc", &lc("root:org"));
        index.observe("nopath", &json!({"metadata": {"name": "cluster"}}));
        assert_eq!(index.resolve("root:org").as_deref(), Some("abc"));
        assert_eq!(index.len(), 1);
        // Re-created workspace: a new cluster takes over the path.
        index.observe("def", &lc("root:org"));
        index.forget("root:org", "abc");
        assert_eq!(index.resolve("root:org").as_deref(), Some("def"));
        index.forget("root:org", "def");
        assert!(index.resolve("root:org").is_none());
        assert!(index.is_empty());
    }
}
