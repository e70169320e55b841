//! The fallback lister: local store first; on NotFound, the cache informer's replicas.
//!
//! Controllers that depend on objects other shards own (API binding, placement) read
//! through here, so they keep working from the cache while the owning shard is down. A
//! miss in both proves nothing: replication lags, so callers retry.

use crate::state::Shard;
use apiserver::objects;
use serde_json::Value;

/// Where an object was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// This shard's store.
    Local,
    /// A replica from a cache server.
    Cache,
}

/// An object and where it came from.
#[derive(Debug, Clone)]
pub struct Found {
    /// The logical cluster it lives in.
    pub cluster: String,
    /// The object.
    pub object: Value,
    /// Local or cached.
    pub source: Source,
}

/// The logical cluster `cluster_or_path` names, if this shard hosts it.
pub fn local_cluster(shard: &Shard, cluster_or_path: &str) -> Option<String> {
    if let Some(cluster) = shard.paths.resolve(cluster_or_path) {
        return Some(cluster);
    }
    shard.cluster_exists(cluster_or_path).then(|| cluster_or_path.to_string())
}

/// The object `group/resource` `name` (in `namespace`, empty for cluster-scoped) of the
/// logical cluster named by `cluster_or_path` (a name or a canonical path).
pub fn get(
    shard: &Shard,
    group: &str,
    resource: &str,
    cluster_or_path: &str,
    namespace: &str,
    name: &str,
) -> Option<Found> {
    if let Some(cluster) = local_cluster(shard, cluster_or_path) {
        if let Some(object) = get_local(shard, group, resource, &cluster, namespace, name) {
            return Some(Found { cluster, object, source: Source::Local });
        }
    }
    let cluster = shard.cache.cluster_of_path(cluster_or_path).unwrap_or_else(|| cluster_or_path.to_string());
    let object = shard.cache.get(group, resource, &cluster, namespace, name)?;
    Some(Found { cluster, object: (*object).clone(), source: Source::Cache })
}

/// Every object of `group/resource` in `cluster` (a logical-cluster name): the local ones
/// when this shard hosts the cluster, else the cached replicas.
pub fn list(shard: &Shard, group: &str, resource: &str, cluster: &str) -> (Vec<Value>, Source) {
    if shard.cluster_exists(cluster) {
        if let Some(rt) = shard.registry.all().iter().find(|r| r.group == group && r.resource == resource) {
            let prefix = objects::collection_prefix(rt, Some(cluster), None);
            let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
            if let Ok(page) = shard.store.list(&options, |_, _| true) {
                let items = page.items.iter().filter_map(|(_, stored)| objects::decode(stored).ok()).collect();
                return (items, Source::Local);
            }
        }
    }
    let items = shard.cache.list(group, resource, cluster).iter().map(|o| (**o).clone()).collect();
    (items, Source::Cache)
}

fn get_local(shard: &Shard, group: &str, resource: &str, cluster: &str, namespace: &str, name: &str) -> Option<Value> {
    let rt = shard.registry.all().iter().find(|r| r.group == group && r.resource == resource)?.clone();
    let namespace = (!namespace.is_empty()).then_some(namespace);
    if rt.namespaced != namespace.is_some() || name.is_empty() || name.contains('/') {
        return None;
    }
    let key = objects::key(&rt, cluster, namespace, name);
    let stored = shard.store.get(key.as_bytes()).ok()??;
    objects::decode(&stored).ok()
}
