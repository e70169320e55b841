//! Storage keys and the object codec between the store's bytes and API JSON.
//!
//! Key layout: `<group|core>/<resource>/<cluster>/<namespace>/<name>`, with an empty
//! namespace segment for cluster-scoped objects. Resource first, so that a wildcard list
//! across every logical cluster is one prefix scan (as kcp lays out etcd); cluster second,
//! so one cluster's objects of a resource are contiguous.
//!
//! The resourceVersion is not part of the stored bytes: the store keeps it beside the
//! value, and [`decode`] writes it into `metadata.resourceVersion` on the way out.

use crate::registry::ResourceType;
use crate::rest::status::{ApiError, ApiResult};
use bytes::Bytes;
use protocol::meta;
use serde_json::Value;
use store::Versioned;

/// The storage key of one object.
pub fn key(rt: &ResourceType, cluster: &str, namespace: Option<&str>, name: &str) -> String {
    debug_assert!(!name.is_empty() && !name.contains('/'), "validated names only: {name:?}");
    debug_assert_eq!(rt.namespaced, namespace.is_some(), "{} scope", rt.resource);
    let mut key = rt.key_prefix(Some(cluster));
    key.push_str(namespace.unwrap_or(""));
    key.push('/');
    key.push_str(name);
    key
}

/// The key prefix of a collection: a namespace, a whole cluster, or every cluster.
pub fn collection_prefix(rt: &ResourceType, cluster: Option<&str>, namespace: Option<&str>) -> String {
    match (cluster, namespace) {
        (Some(cluster), Some(ns)) => format!("{}{ns}/", rt.key_prefix(Some(cluster))),
        (Some(cluster), None) => rt.key_prefix(Some(cluster)),
        (None, _) => rt.key_prefix(None),
    }
}

/// The parts of a stored key: cluster, namespace and name.
pub fn split_key(key: &[u8]) -> Option<(&str, &str, &str)> {
    let key = std::str::from_utf8(key).ok()?;
    let mut parts = key.splitn(5, '/');
    let (_group, _resource) = (parts.next()?, parts.next()?);
    Some((parts.next()?, parts.next()?, parts.next()?))
}

/// Serializes an object for storage, without its resourceVersion.
pub fn encode(object: &Value) -> ApiResult<Bytes> {
    let bytes = if meta::meta_str(object, "resourceVersion").is_some() {
        let mut object = object.clone();
        meta::set_meta_str(&mut object, "resourceVersion", None);
        serde_json::to_vec(&object)
    } else {
        serde_json::to_vec(object)
    };
    let bytes = bytes.map_err(|e| ApiError::internal(format!("encode object: {e}")))?;
    if bytes.len() > OBJECT_BYTES_MAX {
        return Err(ApiError::too_large_object(bytes.len(), OBJECT_BYTES_MAX));
    }
    Ok(Bytes::from(bytes))
}

/// The largest object stored (etcd's default request limit, which kube users know).
/// Patches and updates that grow an object past it are refused; nothing larger ever
/// reaches the change log or the watch buffers.
pub const OBJECT_BYTES_MAX: usize = 1_572_864;

/// Calls `observe(cluster, object)` for every stored object of `rt` in every logical
/// cluster, in one snapshot read: how the in-memory indexes (paths, CRDs, bindings) are
/// rebuilt at start-up. Undecodable records are skipped.
pub fn scan(
    store: &store::Store,
    rt: &ResourceType,
    mut observe: impl FnMut(&str, &Value),
) -> Result<(), store::StoreError> {
    let prefix = collection_prefix(rt, None, None);
    let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
    let page = store.list(&options, |_, _| true)?;
    for (key, stored) in &page.items {
        let Some((cluster, _, _)) = split_key(key) else { continue };
        if let Ok(object) = decode(stored) {
            observe(cluster, &object);
        }
    }
    Ok(())
}

/// Every stored object of `rt` in `cluster` (all namespaces), decoded, in key order.
pub fn list_in_cluster(store: &store::Store, rt: &ResourceType, cluster: &str) -> ApiResult<Vec<Value>> {
    let prefix = collection_prefix(rt, Some(cluster), None);
    let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
    let page = store.list(&options, |_, _| true).map_err(ApiError::from)?;
    page.items.iter().map(|(_, stored)| decode(stored)).collect()
}

/// Deserializes a stored object and stamps its resourceVersion.
pub fn decode(stored: &Versioned) -> ApiResult<Value> {
    let mut object: Value = serde_json::from_slice(&stored.value)
        .map_err(|e| ApiError::internal(format!("stored object does not decode: {e}")))?;
    meta::set_meta_str(&mut object, "resourceVersion", Some(&stored.rv.to_string()));
    Ok(object)
}

/// Whether a stored object carries a deletionTimestamp, reading only that field: the
/// request path checks namespaces and logical clusters on every write, and decoding them
/// whole would cost more than the check is worth.
pub fn is_marked_for_deletion(stored: &[u8]) -> ApiResult<bool> {
    // Stored objects are written by [`encode`], which never escapes a letter: bytes without
    // the field's name cannot hold the field, and nearly no object is being deleted.
    if memchr::memmem::find(stored, b"\"deletionTimestamp\"").is_none() {
        return Ok(false);
    }
    #[derive(serde::Deserialize)]
    struct Marked {
        metadata: MarkedMeta,
    }
    #[derive(serde::Deserialize)]
    struct MarkedMeta {
        #[serde(rename = "deletionTimestamp")]
        deletion_timestamp: Option<serde::de::IgnoredAny>,
    }
    let marked: Marked = serde_json::from_slice(stored)
        .map_err(|e| ApiError::internal(format!("stored object does not decode: {e}")))?;
    Ok(marked.metadata.deletion_timestamp.is_some())
}

/// Parses a resourceVersion string as kube clients send it.
pub fn parse_rv(rv: &str) -> ApiResult<u64> {
    rv.parse::<u64>()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version \"{rv}\": must be a decimal number")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use serde_json::json;

    #[test]
    fn only_a_deletion_timestamp_in_metadata_marks_an_object() {
        let marked = |object: Value| is_marked_for_deletion(&serde_json::to_vec(&object).unwrap()).unwrap();
        assert!(!marked(json!({"metadata": {"name": "a"}})));
        assert!(marked(json!({"metadata": {"name": "a", "deletionTimestamp": "2026-11-28T16:00:00Z"}})));
        // The name elsewhere (an annotation, the data) is not the field.
        assert!(!marked(
            json!({"metadata": {"annotations": {"deletionTimestamp": "x"}}, "data": {"deletionTimestamp": "y"}})
        ));
        assert!(!marked(json!({"metadata": {"name": "a", "deletionTimestamp": null}})));
    }

    #[test]
    fn keys_split_back_into_their_parts() {
        let registry = Registry::builtin();
        let cm = registry.get("", "v1", "configmaps").unwrap();
        let ns = registry.get("", "v1", "namespaces").unwrap();
        let rbac = registry.get("rbac.authorization.k8s.io", "v1", "roles").unwrap();
        for (key, parts) in [
            (key(&cm, "c1", Some("default"), "a"), ("c1", "default", "a")),
            (key(&ns, "root", None, "kube-system"), ("root", "", "kube-system")),
            (key(&rbac, "c1", Some("x"), "r.1"), ("c1", "x", "r.1")),
        ] {
            assert_eq!(split_key(key.as_bytes()), Some(parts), "{key}");
        }
        assert!(key(&cm, "c1", Some("ns"), "a").starts_with(&collection_prefix(&cm, Some("c1"), Some("ns"))));
        assert!(!key(&cm, "c1", Some("ns1"), "a").starts_with(&collection_prefix(&cm, Some("c1"), Some("ns"))));
        assert!(key(&cm, "c1", Some("ns"), "a").starts_with(&collection_prefix(&cm, None, None)));
    }

    #[test]
    fn codec_strips_and_restores_the_resource_version() {
        let object = json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "7"}});
        let bytes = encode(&object).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("resourceVersion"));
        let decoded = decode(&Versioned { rv: 9, value: bytes }).unwrap();
        assert_eq!(decoded["metadata"]["resourceVersion"], "9");
    }
}
