//! Cache informers: what this shard knows of other shards' replicated objects.
//!
//! One informer lists every replica of a cache server (`--cache-watch-server`, else the
//! caches this shard replicates to; failing over in order), then watches it, relisting
//! after a 410 (`OUT_OF_RANGE`): the shared watcher of [`protocol::watcher`]. [`CacheIndex`] holds the result in memory: replicas are
//! few by design (exports, schemas, workspace types, shards and marked RBAC).
//!
//! - [`lister`]: the fallback lister controllers read through — local store first, then
//!   this index. Absence in the cache proves nothing (replication lags).

pub mod lister;

use parking_lot::RwLock;
use protocol::cache::cache_client::CacheClient;
use protocol::cache::watch_event::Kind;
use protocol::cache::{Replica, WatchEvent};
use protocol::meta;
use protocol::replication::LIST_BYTES_MAX;
use protocol::watcher::cache::{CacheConsumer, CacheSource};
use protocol::watcher::{drive, Backoff};
use security::grpc::GrpcClient;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// `(group, resource)` of a replicated resource.
type GroupResource = (String, String);
/// `(cluster, namespace, name)` of one object.
type ObjectKey = (String, String, String);

/// Replicas by resource, then by logical cluster, namespace and name.
#[derive(Debug, Default)]
pub struct CacheIndex {
    objects: RwLock<HashMap<GroupResource, BTreeMap<ObjectKey, Arc<Value>>>>,
    /// Canonical path → logical cluster, from the replicas' `kcp.io/path` annotations.
    paths: RwLock<HashMap<String, String>>,
    /// Logical cluster → the shard its replicas come from (the shard hosting it).
    origins: RwLock<HashMap<String, String>>,
    /// Whether the first list has been applied.
    synced: tokio::sync::watch::Sender<bool>,
}

impl CacheIndex {
    /// The replica of `group/resource` named `name` in `cluster` (`namespace` empty for
    /// cluster-scoped objects).
    pub fn get(&self, group: &str, resource: &str, cluster: &str, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let objects = self.objects.read();
        let key = (cluster.to_string(), namespace.to_string(), name.to_string());
        objects.get(&(group.to_string(), resource.to_string()))?.get(&key).cloned()
    }

    /// Every replica of `group/resource` in `cluster`.
    pub fn list(&self, group: &str, resource: &str, cluster: &str) -> Vec<Arc<Value>> {
        let objects = self.objects.read();
        let Some(of_resource) = objects.get(&(group.to_string(), resource.to_string())) else { return Vec::new() };
        let from = (cluster.to_string(), String::new(), String::new());
        of_resource.range(from..).take_while(|((c, _, _), _)| c == cluster).map(|(_, v)| v.clone()).collect()
    }

    /// Every replica of `group/resource`, in every logical cluster.
    pub fn list_all(&self, group: &str, resource: &str) -> Vec<Arc<Value>> {
        let objects = self.objects.read();
        objects
            .get(&(group.to_string(), resource.to_string()))
            .map(|o| o.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The logical cluster whose canonical path is `path`, as replicas tell it.
    pub fn cluster_of_path(&self, path: &str) -> Option<String> {
        self.paths.read().get(path).cloned()
    }

    /// The shard hosting logical cluster `cluster`, as its replicas tell it.
    pub fn origin_of(&self, cluster: &str) -> Option<String> {
        self.origins.read().get(cluster).cloned()
    }

    /// How many replicas are held.
    pub fn len(&self) -> usize {
        self.objects.read().values().map(BTreeMap::len).sum()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a first list has been applied.
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits until a first list has been applied, at most `timeout`.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        let mut synced = self.synced.subscribe();
        tokio::time::timeout(timeout, synced.wait_for(|s| *s)).await.is_ok_and(|r| r.is_ok())
    }

    /// Replaces everything with a fresh list.
    fn replace(&self, items: Vec<Replica>) {
        let mut objects: HashMap<GroupResource, BTreeMap<ObjectKey, Arc<Value>>> = HashMap::new();
        let mut paths = HashMap::new();
        let mut origins = HashMap::new();
        for replica in items {
            if let Some((gr, key, object)) = decode(&replica) {
                remember_path(&mut paths, &key.0, &object);
                remember_origin(&mut origins, &replica);
                objects.entry(gr).or_default().insert(key, object);
            }
        }
        *self.objects.write() = objects;
        *self.paths.write() = paths;
        *self.origins.write() = origins;
        self.synced.send_replace(true);
    }

    /// Applies one watch event.
    fn apply(&self, kind: Kind, replica: &Replica) {
        let Some((gr, key, object)) = decode(replica) else { return };
        match kind {
            Kind::Added | Kind::Modified => {
                remember_path(&mut self.paths.write(), &key.0, &object);
                remember_origin(&mut self.origins.write(), replica);
                self.objects.write().entry(gr).or_default().insert(key, object);
            }
            Kind::Deleted => {
                if let Some(of_resource) = self.objects.write().get_mut(&gr) {
                    of_resource.remove(&key);
                }
            }
            Kind::Bookmark => {}
        }
    }
}

fn decode(replica: &Replica) -> Option<(GroupResource, ObjectKey, Arc<Value>)> {
    let key = replica.key.as_ref()?;
    let object = replica.object_json()?;
    Some((
        (key.group.clone(), key.resource.clone()),
        (key.cluster.clone(), key.namespace.clone(), key.name.clone()),
        Arc::new(object),
    ))
}

fn remember_path(paths: &mut HashMap<String, String>, cluster: &str, object: &Value) {
    if let Some(path) = meta::annotations(object).get(protocol::wellknown::PATH_ANNOTATION) {
        paths.insert(path.clone(), cluster.to_string());
    }
}

fn remember_origin(origins: &mut HashMap<String, String>, replica: &Replica) {
    if let Some(key) = &replica.key {
        if origins.get(&key.cluster) != Some(&key.origin) {
            origins.insert(key.cluster.clone(), key.origin.clone());
        }
    }
}

/// Keeps `index` in step with the cache servers at `urls` (in failover order), forever,
/// through the shared watcher ([`protocol::watcher`]): its back-off starts over only after
/// a successful list, not on every failover.
pub async fn run(index: Arc<CacheIndex>, urls: Vec<String>, client: GrpcClient) {
    let mut source = CacheSource::new(clients(&urls, &client), Informer(index));
    drive::run("cache informer", &mut source, Backoff::reconnect()).await;
}

/// A gRPC client per cache server URL, named by it; a URL that does not parse is left out
/// (and logged), as no retry would make it work.
pub fn clients(urls: &[String], client: &GrpcClient) -> Vec<(String, CacheClient<GrpcClient>)> {
    let parsed = urls.iter().filter_map(|url| match url.parse::<http::Uri>() {
        Ok(uri) => Some((url.clone(), uri)),
        Err(error) => {
            tracing::error!(cache = url, %error, "not a cache server URL; leaving it out");
            None
        }
    });
    parsed
        .map(|(url, uri)| {
            (url, CacheClient::with_origin(client.clone(), uri).max_decoding_message_size(LIST_BYTES_MAX))
        })
        .collect()
}

/// Applies lists and events to the index.
struct Informer(Arc<CacheIndex>);

impl CacheConsumer for Informer {
    fn listed(&mut self, items: Vec<Replica>, rv: u64) {
        tracing::info!(replicas = items.len(), rv, "cache listed");
        self.0.replace(items);
    }

    async fn event(&mut self, event: WatchEvent) {
        let kind = Kind::try_from(event.kind).unwrap_or(Kind::Bookmark);
        if let Some(replica) = &event.replica {
            self.0.apply(kind, replica);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::cache::ReplicaKey;
    use serde_json::json;

    fn replica(cluster: &str, name: &str, path: &str) -> Replica {
        let object = json!({"metadata": {"name": name, "annotations": {"kcp.io/path": path}}});
        Replica {
            key: Some(ReplicaKey {
                origin: "s".into(),
                cluster: cluster.into(),
                group: "apis.kcp.io".into(),
                resource: "apiexports".into(),
                namespace: String::new(),
                name: name.into(),
            }),
            uid: "u".into(),
            source_rv: 1,
            object: serde_json::to_vec(&object).unwrap(),
            sender: "s".into(),
        }
    }

    #[test]
    fn index_follows_lists_and_events() {
        let index = CacheIndex::default();
        assert!(!index.is_synced());
        index.replace(vec![replica("a", "x", "root:org"), replica("b", "y", "root:other")]);
        assert!(index.is_synced());
        assert!(index.get("apis.kcp.io", "apiexports", "a", "", "x").is_some());
        assert_eq!(index.cluster_of_path("root:org").as_deref(), Some("a"));
        assert_eq!(index.origin_of("a").as_deref(), Some("s"));
        assert_eq!(index.list("apis.kcp.io", "apiexports", "a").len(), 1);
        index.apply(Kind::Added, &replica("a", "z", "root:org"));
        assert_eq!(index.list("apis.kcp.io", "apiexports", "a").len(), 2);
        index.apply(Kind::Deleted, &replica("a", "x", "root:org"));
        assert!(index.get("apis.kcp.io", "apiexports", "a", "", "x").is_none());
        index.replace(vec![]);
        assert!(index.is_empty());
    }
}
