//! Pure pieces of replication: a stored object → the replica a cache holds, a store key →
//! the replicated resource it belongs to, and the diff between a shard and a cache.

use protocol::cache::{change, Change, Replica, ReplicaKey};
use protocol::meta;
use protocol::replication;
use protocol::wellknown::{ORIGIN_ANNOTATION, SOURCE_RV_ANNOTATION};
use serde_json::Value;
use std::collections::HashMap;

/// The replicated resource a store key belongs to, with its cluster, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyParts<'a> {
    /// The table row.
    pub row: &'static replication::Replicated,
    /// Logical cluster, namespace ("" for cluster-scoped) and name.
    pub cluster: &'a str,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: &'a str,
    /// Name.
    pub name: &'a str,
}

/// Splits a shard store key (`<group|core>/<resource>/<cluster>/<namespace>/<name>`) when
/// it is of a replicated resource.
pub fn replicated_key(key: &[u8]) -> Option<KeyParts<'_>> {
    let key = std::str::from_utf8(key).ok()?;
    let mut parts = key.splitn(5, '/');
    let group = parts.next()?;
    let group = if group == "core" { "" } else { group };
    let row = replication::replicated(group, parts.next()?)?;
    Some(KeyParts { row, cluster: parts.next()?, namespace: parts.next()?, name: parts.next()? })
}

/// The replica of `object` (as decoded from the store, resourceVersion stamped), or `None`
/// when the table does not replicate it. `path` is its logical cluster's canonical path.
pub fn replica_of(origin: &str, parts: &KeyParts<'_>, object: &Value, path: Option<&str>) -> Option<Replica> {
    if !replication::is_replicated(parts.row.group, parts.row.resource, object) {
        return None;
    }
    let source_rv: u64 = meta::meta_str(object, "resourceVersion")?.parse().ok()?;
    let mut object = object.clone();
    if let Some(path) = path {
        meta::set_annotation(&mut object, protocol::wellknown::PATH_ANNOTATION, path);
    }
    meta::set_annotation(&mut object, protocol::wellknown::CLUSTER_ANNOTATION, parts.cluster);
    meta::set_annotation(&mut object, SOURCE_RV_ANNOTATION, &source_rv.to_string());
    meta::set_annotation(&mut object, ORIGIN_ANNOTATION, origin);
    Some(Replica {
        key: Some(key_of(origin, parts)),
        uid: meta::meta_str(&object, "uid").unwrap_or_default().to_string(),
        source_rv,
        object: serde_json::to_vec(&object).ok()?,
        sender: origin.to_string(),
    })
}

/// The cache key of a replicated object of `origin`.
pub fn key_of(origin: &str, parts: &KeyParts<'_>) -> ReplicaKey {
    ReplicaKey {
        origin: origin.to_string(),
        cluster: parts.cluster.to_string(),
        group: parts.row.group.to_string(),
        resource: parts.row.resource.to_string(),
        namespace: parts.namespace.to_string(),
        name: parts.name.to_string(),
    }
}

/// An upsert.
pub fn upsert(replica: Replica, force: bool) -> Change {
    Change { change: Some(change::Change::Upsert(replica)), force }
}

/// A tombstone.
pub fn tombstone(key: ReplicaKey) -> Change {
    Change { change: Some(change::Change::Tombstone(key)), force: false }
}

/// What makes the cache equal to the shard: `local` is every replica the shard would send
/// now, `cached` every replica the cache holds of this origin. Missing and older replicas
/// are sent as plain upserts; replicas whose content differs at the same or a later source
/// version were altered in the cache and are forced back; replicas the shard no longer
/// has get tombstones.
pub fn diff(local: Vec<Replica>, cached: Vec<Replica>) -> Vec<Change> {
    let mut cached: HashMap<String, Replica> =
        cached.into_iter().filter_map(|r| Some((replication::replica_key(r.key.as_ref()?), r))).collect();
    let mut changes = Vec::new();
    for replica in local {
        let Some(key) = replica.key.as_ref().map(replication::replica_key) else { continue };
        match cached.remove(&key) {
            None => changes.push(upsert(replica, false)),
            Some(held) if held.source_rv < replica.source_rv => changes.push(upsert(replica, false)),
            Some(held) if held.uid != replica.uid || !same_json(&held.object, &replica.object) => {
                changes.push(upsert(replica, true))
            }
            Some(_) => {}
        }
    }
    let mut gone: Vec<Replica> = cached.into_values().collect();
    gone.sort_by_cached_key(|r| r.key.as_ref().map(replication::replica_key));
    changes.extend(gone.into_iter().filter_map(|r| r.key).map(tombstone));
    changes
}

/// JSON equality of two encodings (key order and whitespace do not count).
fn same_json(a: &[u8], b: &[u8]) -> bool {
    match (serde_json::from_slice::<Value>(a), serde_json::from_slice::<Value>(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn export(rv: u64, spec: &str) -> Value {
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
               "metadata": {"name": "widgets", "uid": "u1", "resourceVersion": rv.to_string()},
               "spec": {"latestResourceSchemas": [spec]}})
    }

    fn replica(rv: u64, spec: &str) -> Replica {
        let key = b"apis.kcp.io/apiexports/abc//widgets";
        let parts = replicated_key(key).unwrap();
        replica_of("shard-1", &parts, &export(rv, spec), Some("root:org")).unwrap()
    }

    #[test]
    fn keys_of_replicated_resources_only() {
        let parts = replicated_key(b"rbac.authorization.k8s.io/clusterroles/c1//admin").unwrap();
        assert_eq!((parts.cluster, parts.namespace, parts.name), ("c1", "", "admin"));
        assert!(replicated_key(b"core/configmaps/c1/default/x").is_none());
        assert!(replicated_key(b"core.kcp.io/shards/root//shard-1").is_some());
    }

    #[test]
    fn replicas_carry_path_source_version_and_origin() {
        let r = replica(7, "v1.widgets.example.io");
        assert_eq!(r.source_rv, 7);
        assert_eq!(r.uid, "u1");
        let object = r.object_json().unwrap();
        let annotations = meta::annotations(&object);
        assert_eq!(annotations["kcp.io/path"], "root:org");
        assert_eq!(annotations["kcp.io/cluster"], "abc");
        assert_eq!(annotations[SOURCE_RV_ANNOTATION], "7");
        assert_eq!(annotations[ORIGIN_ANNOTATION], "shard-1");
        let unmarked = json!({"metadata": {"name": "r", "resourceVersion": "3"}});
        let parts = replicated_key(b"rbac.authorization.k8s.io/clusterroles/c1//r").unwrap();
        assert!(replica_of("s", &parts, &unmarked, None).is_none(), "unannotated RBAC stays home");
    }

    #[test]
    fn diff_repairs_missing_old_altered_and_extra() {
        let kinds = |changes: &[Change]| -> Vec<(String, bool)> {
            changes
                .iter()
                .map(|c| match c.change.as_ref().unwrap() {
                    change::Change::Upsert(r) => (format!("upsert {}", r.source_rv), c.force),
                    change::Change::Tombstone(k) => (format!("tombstone {}", k.name), c.force),
                    change::Change::Epoch(e) => (format!("epoch {}", e.epoch), c.force),
                })
                .collect()
        };
        assert_eq!(kinds(&diff(vec![replica(7, "a")], vec![])), [("upsert 7".to_string(), false)]);
        assert_eq!(kinds(&diff(vec![replica(7, "a")], vec![replica(5, "a")])), [("upsert 7".to_string(), false)]);
        assert!(diff(vec![replica(7, "a")], vec![replica(7, "a")]).is_empty());
        assert_eq!(kinds(&diff(vec![replica(7, "a")], vec![replica(7, "tampered")])), [("upsert 7".to_string(), true)]);
        assert_eq!(kinds(&diff(vec![], vec![replica(7, "a")])), [("tombstone widgets".to_string(), false)]);
    }
}
