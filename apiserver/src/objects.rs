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
    split_key_in_full(key).map(|parts| (parts.cluster, parts.namespace, parts.name))
}

/// Every part of a stored key ([`key`]'s layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyParts<'k> {
    /// The storage group: `core` for the core group.
    pub group: &'k str,
    pub resource: &'k str,
    pub cluster: &'k str,
    /// Empty for cluster-scoped objects.
    pub namespace: &'k str,
    pub name: &'k str,
}

/// The parts of a stored key, or `None` for bytes that are not one. Every committed write
/// passes here (the watchers that see every event split its key), so the key is cut at its
/// `/` bytes in one pass rather than by a generic string splitter: `/` is one byte and never
/// part of a longer UTF-8 character, so cutting there leaves whole strings.
pub fn split_key_in_full(key: &[u8]) -> Option<KeyParts<'_>> {
    let mut rest = std::str::from_utf8(key).ok()?;
    let mut segments = [""; 4];
    for segment in &mut segments {
        let slash = rest.bytes().position(|byte| byte == b'/')?;
        *segment = &rest[..slash];
        rest = &rest[slash + 1..];
    }
    let [group, resource, cluster, namespace] = segments;
    Some(KeyParts { group, resource, cluster, namespace, name: rest })
}

/// Serializes an object for storage, without its resourceVersion.
pub fn encode(object: &Value) -> ApiResult<Bytes> {
    encode_marked(object).map(|encoded| encoded.bytes)
}

/// An object as stored, and where its `metadata` closes: the answer to a write is the
/// stored object plus its new resourceVersion, and splicing the version in costs a copy
/// where serializing the object again cost as much as storing it.
#[derive(Debug, Clone)]
pub struct Encoded {
    /// What the store keeps ([`encode`]'s bytes).
    pub bytes: Bytes,
    /// The offset of the `}` that closes a top-level `metadata` object.
    metadata_end: Option<usize>,
}

impl Encoded {
    /// The object's JSON with `metadata.resourceVersion` set to `rv`: byte for byte what
    /// `serde_json::to_vec` gives for the object once [`meta::set_meta_str`] has added the
    /// version (a new key goes last). `None` when the object has no `metadata` object.
    pub fn with_resource_version(&self, rv: u64) -> Option<Bytes> {
        let end = self.metadata_end?;
        let empty = end > 0 && self.bytes[end - 1] == b'{';
        let mut json = Vec::with_capacity(self.bytes.len() + 40);
        json.extend_from_slice(&self.bytes[..end]);
        if !empty {
            json.push(b',');
        }
        json.extend_from_slice(b"\"resourceVersion\":\"");
        json.extend_from_slice(rv.to_string().as_bytes());
        json.push(b'"');
        json.extend_from_slice(&self.bytes[end..]);
        Some(Bytes::from(json))
    }
}

/// [`encode`], noting where `metadata` ends. The top level is written key by key, exactly
/// as serde_json writes a map (compact, in the map's order), so the bytes are the same.
pub fn encode_marked(object: &Value) -> ApiResult<Encoded> {
    let unversioned;
    let object = if meta::meta_str(object, "resourceVersion").is_some() {
        let mut copy = object.clone();
        meta::set_meta_str(&mut copy, "resourceVersion", None);
        unversioned = copy;
        &unversioned
    } else {
        object
    };
    let failed = |e: serde_json::Error| ApiError::internal(format!("encode object: {e}"));
    let mut metadata_end = None;
    let bytes = match object.as_object() {
        Some(map) => {
            let mut bytes = Vec::with_capacity(1024);
            bytes.push(b'{');
            for (index, (key, value)) in map.iter().enumerate() {
                if index > 0 {
                    bytes.push(b',');
                }
                write_str(&mut bytes, key).map_err(failed)?;
                bytes.push(b':');
                write_json(&mut bytes, value).map_err(failed)?;
                if key == "metadata" && value.is_object() {
                    metadata_end = Some(bytes.len() - 1);
                }
            }
            bytes.push(b'}');
            bytes
        }
        None => serde_json::to_vec(object).map_err(failed)?,
    };
    if bytes.len() > OBJECT_BYTES_MAX {
        return Err(ApiError::too_large_object(bytes.len(), OBJECT_BYTES_MAX));
    }
    Ok(Encoded { bytes: Bytes::from(bytes), metadata_end })
}

/// Writes `value` exactly as `serde_json::to_writer` does (compact, maps in their order),
/// but copies strings with nothing to escape after one vectorisable scan, where serde_json
/// looks every byte up in its escape table (~10,000 instructions for a create of a 1 KiB
/// ConfigMap). Numbers and strings that need escapes are written by serde_json itself.
fn write_json(out: &mut Vec<u8>, value: &Value) -> Result<(), serde_json::Error> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => serde_json::to_writer(&mut *out, number)?,
        Value::String(string) => write_str(out, string)?,
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_json(out, item)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_str(out, key)?;
                out.push(b':');
                write_json(out, item)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// A JSON string as serde_json writes it.
fn write_str(out: &mut Vec<u8>, string: &str) -> Result<(), serde_json::Error> {
    if needs_escape(string.as_bytes()) {
        return serde_json::to_writer(&mut *out, string);
    }
    out.reserve(string.len() + 2);
    out.push(b'"');
    out.extend_from_slice(string.as_bytes());
    out.push(b'"');
    Ok(())
}

/// Whether serde_json escapes any of `bytes`: it escapes `"`, `\` and the control
/// characters below 0x20, and writes every other byte (UTF-8 included) as it is. The
/// 32-byte chunks are folded without branching, so the compiler can use vector compares.
fn needs_escape(bytes: &[u8]) -> bool {
    // `|`, not `||`: no branch per byte.
    let escaped = |byte: u8| (byte < 0x20) | (byte == b'"') | (byte == b'\\');
    let mut chunks = bytes.chunks_exact(32);
    for chunk in &mut chunks {
        // A fixed-size array: the compiler unrolls the fold into vector compares.
        let chunk: &[u8; 32] = chunk.try_into().expect("chunks_exact(32) yields 32 bytes");
        if chunk.iter().fold(false, |found, &byte| found | escaped(byte)) {
            return true;
        }
    }
    chunks.remainder().iter().any(|&byte| escaped(byte))
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
    // The finder is built once: building one costs more than searching a namespace.
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"deletionTimestamp\""));
    if FINDER.find(stored).is_none() {
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

    /// The writer's bytes are serde_json's, for every character that may need escaping at
    /// every position of a string longer than the scan's chunks, and for every kind of value.
    #[test]
    fn objects_are_written_byte_for_byte_as_serde_json_writes_them() {
        let written = |value: &Value| {
            let mut out = Vec::new();
            write_json(&mut out, value).expect("writes");
            out
        };
        let mut values = vec![
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-17),
            json!(u64::MAX),
            json!(1.5),
            json!(-0.0),
            json!(1e300),
            json!(""),
            json!([]),
            json!({}),
            json!({"a": [1, "b", {"c": null}], "": {"é": "ü\u{1F600}"}, "k\"ey": "v\\al"}),
            json!([[[]], [{}], "\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}"]),
        ];
        let specials = ['"', '\\', '\n', '\r', '\t', '\u{0}', '\u{1f}', '\u{7f}', '/', '<', 'é', '\u{2028}'];
        for special in specials {
            for position in 0..70 {
                let mut text: String = "abcdefghij".repeat(7);
                text.insert(position, special);
                values.push(json!({ text.clone(): text }));
            }
        }
        for value in &values {
            let expected = serde_json::to_vec(value).expect("serde_json writes it");
            assert_eq!(String::from_utf8_lossy(&written(value)), String::from_utf8_lossy(&expected), "{value}");
        }
    }

    #[test]
    fn a_stored_object_answers_with_its_version_spliced_in() {
        let objects = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "uid": "u"}, "data": {"k": "v\"\u{e9}\n"}}),
            json!({"metadata": {}, "kind": "X"}),
            json!({"kind": "X", "metadata": {"name": "a", "resourceVersion": "3"}}),
            json!({"kind": "X"}),
            json!({"kind": "X", "metadata": "not an object"}),
        ];
        for object in objects {
            let encoded = encode_marked(&object).unwrap();
            let mut unversioned = object.clone();
            if meta::metadata(&object).is_some() {
                meta::set_meta_str(&mut unversioned, "resourceVersion", None);
            }
            assert_eq!(encoded.bytes, serde_json::to_vec(&unversioned).unwrap(), "{object}");
            let answered = encoded.with_resource_version(42);
            if meta::metadata(&object).is_some() {
                let mut versioned = unversioned.clone();
                meta::set_meta_str(&mut versioned, "resourceVersion", Some("42"));
                assert_eq!(answered.unwrap(), serde_json::to_vec(&versioned).unwrap(), "{object}");
            } else {
                assert_eq!(answered, None, "{object}");
            }
        }
    }

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
        assert_eq!(key(&cm, "c1", Some("default"), "a"), "core/configmaps/c1/default/a");
        assert_eq!(key(&rbac, "c1", Some("x"), "r.1"), "rbac.authorization.k8s.io/roles/c1/x/r.1");
        assert_eq!(key(&ns, "root", None, "kube-system"), "core/namespaces/root//kube-system");
        assert_eq!(collection_prefix(&cm, None, None), "core/configmaps/");
        assert_eq!(collection_prefix(&cm, Some("c1"), None), "core/configmaps/c1/");
    }

    #[test]
    fn a_key_splits_into_all_five_parts_or_none() {
        fn full(key: &str) -> Option<KeyParts<'_>> {
            split_key_in_full(key.as_bytes())
        }
        let parts = |group, resource, cluster, namespace, name| KeyParts { group, resource, cluster, namespace, name };
        assert_eq!(full("core/configmaps/c1/default/a"), Some(parts("core", "configmaps", "c1", "default", "a")));
        assert_eq!(
            full("core/namespaces/root//kube-system"),
            Some(parts("core", "namespaces", "root", "", "kube-system"))
        );
        assert_eq!(full("example.io/wïdgets/c/ns/ü"), Some(parts("example.io", "wïdgets", "c", "ns", "ü")));
        // The name is the rest, as a five-way split leaves it; an empty name is still a key.
        assert_eq!(full("g/r/c/ns/a/b"), Some(parts("g", "r", "c", "ns", "a/b")));
        assert_eq!(full("g/r/c/ns/"), Some(parts("g", "r", "c", "ns", "")));
        for not_a_key in ["", "g/r/c/ns", "core/configmaps/c1", "no-slash"] {
            assert_eq!(full(not_a_key), None, "{not_a_key:?}");
        }
        assert_eq!(split_key_in_full(b"g/r/c/ns/\xff"), None, "not UTF-8");
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
