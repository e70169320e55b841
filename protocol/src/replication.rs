//! What shards replicate to cache servers, and how a cache server keys replicas.
//!
//! One table ([`REPLICATED`]) decides which objects leave their shard (placement's
//! Locations and SyncTargets among them). Keys order group and resource first, so a
//! cache informer lists and watches one resource across every shard and logical cluster
//! under one prefix.

use crate::cache::{Replica, ReplicaKey};
use crate::wellknown::REPLICATE_ANNOTATION;
use serde_json::Value;

/// Which objects of a resource are replicated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Every object.
    All,
    /// Only objects annotated [`REPLICATE_ANNOTATION`] (any value).
    Annotated,
}

/// One replicated resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replicated {
    /// API group ("" for core).
    pub group: &'static str,
    /// Plural resource.
    pub resource: &'static str,
    /// Which of its objects.
    pub rule: Rule,
}

/// Everything shards replicate. Nothing else leaves a shard.
pub const REPLICATED: &[Replicated] = &[
    Replicated { group: "apis.kcp.io", resource: "apiexports", rule: Rule::All },
    Replicated { group: "apis.kcp.io", resource: "apiresourceschemas", rule: Rule::All },
    Replicated { group: "apis.kcp.io", resource: "apiexportendpointslices", rule: Rule::All },
    Replicated { group: "tenancy.kcp.io", resource: "workspacetypes", rule: Rule::All },
    Replicated { group: "core.kcp.io", resource: "shards", rule: Rule::All },
    // Placement controllers on every shard read inventory workspaces through the cache.
    Replicated { group: "workload.kcp.io", resource: "synctargets", rule: Rule::All },
    Replicated { group: "scheduling.kcp.io", resource: "locations", rule: Rule::All },
    Replicated { group: "rbac.authorization.k8s.io", resource: "clusterroles", rule: Rule::Annotated },
    Replicated { group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", rule: Rule::Annotated },
];

/// The table row of `group/resource`, if it is replicated at all.
pub fn replicated(group: &str, resource: &str) -> Option<&'static Replicated> {
    REPLICATED.iter().find(|r| r.group == group && r.resource == resource)
}

/// Whether `object` of `group/resource` leaves its shard.
pub fn is_replicated(group: &str, resource: &str, object: &Value) -> bool {
    match replicated(group, resource).map(|r| r.rule) {
        Some(Rule::All) => true,
        Some(Rule::Annotated) => object
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .is_some_and(|a| a.contains_key(REPLICATE_ANNOTATION)),
        None => false,
    }
}

/// The largest gRPC message a cache client accepts: a List of every replica is one
/// message (tonic's default limit is 4 MiB; replicas are few but objects can be large).
pub const LIST_BYTES_MAX: usize = 1 << 30;

/// Separates key segments; never part of a name, namespace, cluster, shard or resource.
const SEP: char = '/';

/// The cache-store key prefix of every replica.
pub const REPLICA_PREFIX: &str = "r/";

/// The cache-store key prefix of one resource's replicas (all origins and clusters).
pub fn resource_prefix(group: &str, resource: &str) -> String {
    let group = if group.is_empty() { "core" } else { group };
    format!("{REPLICA_PREFIX}{group}{SEP}{resource}{SEP}")
}

/// The cache-store key of a replica:
/// `r/<group|core>/<resource>/<origin>/<cluster>/<namespace>/<name>`.
pub fn replica_key(key: &ReplicaKey) -> String {
    let mut out = resource_prefix(&key.group, &key.resource);
    for part in [&key.origin, &key.cluster, &key.namespace, &key.name] {
        out.push_str(part);
        out.push(SEP);
    }
    out.pop();
    out
}

/// The cache-store key of a sender's acknowledged position.
pub fn position_key(sender: &str) -> String {
    format!("p/{sender}")
}

/// Why a replica key is refused.
pub fn check_key(key: &ReplicaKey) -> Result<(), String> {
    let parts = [("origin", &key.origin), ("cluster", &key.cluster), ("resource", &key.resource), ("name", &key.name)];
    for (what, value) in parts {
        if value.is_empty() {
            return Err(format!("replica {what} must not be empty"));
        }
    }
    let all = [&key.origin, &key.cluster, &key.group, &key.resource, &key.namespace, &key.name];
    if all.iter().any(|part| part.contains(SEP)) {
        return Err(format!("replica key parts must not contain '{SEP}': {key:?}"));
    }
    Ok(())
}

impl Replica {
    /// The replicated object as JSON (`None` when the bytes are not JSON).
    pub fn object_json(&self) -> Option<Value> {
        serde_json::from_slice(&self.object).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(ns: &str) -> ReplicaKey {
        ReplicaKey {
            origin: "shard-1".into(),
            cluster: "abc".into(),
            group: "".into(),
            resource: "things".into(),
            namespace: ns.into(),
            name: "n".into(),
        }
    }

    #[test]
    fn keys_put_the_resource_first() {
        assert_eq!(replica_key(&key("")), "r/core/things/shard-1/abc//n");
        assert_eq!(replica_key(&key("ns")), "r/core/things/shard-1/abc/ns/n");
        assert!(replica_key(&key("")).starts_with(&resource_prefix("", "things")));
        assert!(check_key(&key("")).is_ok());
        assert!(check_key(&ReplicaKey { name: "a/b".into(), ..key("") }).is_err());
        assert!(check_key(&ReplicaKey { origin: "".into(), ..key("") }).is_err());
    }

    #[test]
    fn the_table_decides() {
        let plain = json!({"metadata": {"name": "x"}});
        let marked = json!({"metadata": {"name": "x", "annotations": {REPLICATE_ANNOTATION: "true"}}});
        assert!(is_replicated("apis.kcp.io", "apiexports", &plain));
        assert!(!is_replicated("rbac.authorization.k8s.io", "clusterroles", &plain));
        assert!(is_replicated("rbac.authorization.k8s.io", "clusterroles", &marked));
        assert!(!is_replicated("", "configmaps", &marked));
    }
}
