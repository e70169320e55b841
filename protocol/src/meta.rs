//! Access to the `metadata` of objects held as JSON values.
//!
//! The shard handles every resource generically (built-in or custom), so objects travel
//! as `serde_json::Value`; these helpers keep the pointer arithmetic in one place.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Maps with at most this many keys are searched by comparing names (see [`get`]).
const SMALL_MAP: usize = 8;

/// `map[key]`. An object's top level and its `metadata` hold a handful of keys, and
/// serde_json's map hashes every key it is asked for with SipHash, which costs more than
/// comparing a few names; large maps are still looked up by hash.
pub fn get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= SMALL_MAP {
        map.iter().find_map(|(name, value)| (name == key).then_some(value))
    } else {
        map.get(key)
    }
}

/// `map[key]` for writing, looked up as [`get`] does.
pub fn get_mut<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Value> {
    if map.len() <= SMALL_MAP {
        map.iter_mut().find_map(|(name, value)| (name == key).then_some(value))
    } else {
        map.get_mut(key)
    }
}

/// `map[key]`, first set to an empty object unless it holds one. Present (as it nearly
/// always is) it is found as [`get`] finds it; serde_json's `entry` would hash the key and
/// allocate it as a `String` on every call.
fn object_entry<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    if !get(map, key).is_some_and(Value::is_object) {
        map.insert(key.to_string(), Value::Object(Map::new()));
    }
    get_mut(map, key).and_then(Value::as_object_mut).expect("just made an object")
}

/// The top-level field `key` of an object ([`get`] on its map); `None` for non-objects.
pub fn field<'a>(object: &'a Value, key: &str) -> Option<&'a Value> {
    get(object.as_object()?, key)
}

/// The `metadata` map of an object, if present and an object.
pub fn metadata(object: &Value) -> Option<&Map<String, Value>> {
    field(object, "metadata")?.as_object()
}

/// The `metadata` map of an object, created when missing or not a map.
pub fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    let root = match object {
        Value::Object(map) => map,
        other => {
            *other = Value::Object(Map::new());
            other.as_object_mut().expect("just made an object")
        }
    };
    object_entry(root, "metadata")
}

/// A string field of `metadata` (`name`, `namespace`, `uid`, `resourceVersion`, …).
pub fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    get(metadata(object)?, field)?.as_str()
}

/// Sets or (with `None`) removes a string field of `metadata`.
pub fn set_meta_str(object: &mut Value, field: &str, value: Option<&str>) {
    let meta = metadata_mut(object);
    match value {
        Some(v) => {
            meta.insert(field.to_string(), Value::String(v.to_string()));
        }
        None => {
            meta.remove(field);
        }
    }
}

/// The object's name.
pub fn name(object: &Value) -> Option<&str> {
    meta_str(object, "name").filter(|n| !n.is_empty())
}

/// The object's namespace.
pub fn namespace(object: &Value) -> Option<&str> {
    meta_str(object, "namespace").filter(|n| !n.is_empty())
}

/// A string map of `metadata` (`labels` or `annotations`); values that are not strings are skipped.
pub fn string_map(object: &Value, field: &str) -> BTreeMap<String, String> {
    metadata(object)
        .and_then(|m| get(m, field))
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string()))).collect())
        .unwrap_or_default()
}

/// A string map of `metadata` (`labels` or `annotations`), borrowed from the object;
/// entries whose value is not a string are left out, as in [`string_map`].
pub fn string_map_ref<'a>(object: &'a Value, field: &str) -> BTreeMap<&'a str, &'a str> {
    metadata(object)
        .and_then(|m| get(m, field))
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v))).collect())
        .unwrap_or_default()
}

/// The object's labels.
pub fn labels(object: &Value) -> BTreeMap<String, String> {
    string_map(object, "labels")
}

/// The object's annotations.
pub fn annotations(object: &Value) -> BTreeMap<String, String> {
    string_map(object, "annotations")
}

/// Sets one annotation, creating the map when needed.
pub fn set_annotation(object: &mut Value, key: &str, value: &str) {
    set_map_entry(object, "annotations", key, Some(value));
}

/// Sets (`Some`) or removes (`None`) one entry of a string map of `metadata` (`labels` or
/// `annotations`), creating the map when needed; a map left empty is removed.
pub fn set_map_entry(object: &mut Value, field: &str, key: &str, value: Option<&str>) {
    let meta = metadata_mut(object);
    let entries = object_entry(meta, field);
    match value {
        Some(value) => drop(entries.insert(key.to_string(), Value::String(value.to_string()))),
        None => drop(entries.remove(key)),
    }
    if entries.is_empty() {
        meta.remove(field);
    }
}

/// The object's finalizers.
pub fn finalizers(object: &Value) -> Vec<String> {
    metadata(object)
        .and_then(|m| get(m, "finalizers"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Replaces the object's finalizers; an empty list removes the field.
pub fn set_finalizers(object: &mut Value, finalizers: &[String]) {
    let meta = metadata_mut(object);
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), Value::from(finalizers.to_vec()));
    }
}

/// Whether the object has a deletionTimestamp (it is being deleted).
pub fn is_deleting(object: &Value) -> bool {
    meta_str(object, "deletionTimestamp").is_some()
}

/// The object's `metadata.generation`, 0 when absent.
pub fn generation(object: &Value) -> i64 {
    metadata(object).and_then(|m| get(m, "generation")).and_then(Value::as_i64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_and_large_maps_answer_as_serde_json_does() {
        for size in 0..=12 {
            let map: Map<String, Value> = (0..size).map(|i| (format!("key{i}"), json!(i))).collect();
            for key in (0..=size).map(|i| format!("key{i}")).chain(["".to_string(), "key".to_string()]) {
                assert_eq!(get(&map, &key), map.get(&key), "{key} among {size} keys");
            }
        }
    }

    #[test]
    fn reads_and_writes_metadata() {
        let mut obj = json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "1", "bad": 2}}});
        assert_eq!(name(&obj), Some("a"));
        assert_eq!(namespace(&obj), None);
        assert_eq!(labels(&obj).len(), 1);
        set_meta_str(&mut obj, "namespace", Some("ns"));
        set_annotation(&mut obj, "k", "v");
        set_finalizers(&mut obj, &["f".to_string()]);
        assert_eq!(namespace(&obj), Some("ns"));
        assert_eq!(annotations(&obj)["k"], "v");
        assert_eq!(finalizers(&obj), vec!["f"]);
        set_finalizers(&mut obj, &[]);
        assert!(obj["metadata"].get("finalizers").is_none());
    }

    #[test]
    fn metadata_mut_repairs_non_objects() {
        let mut obj = json!({"metadata": 3});
        metadata_mut(&mut obj).insert("name".into(), json!("x"));
        assert_eq!(name(&obj), Some("x"));
        let mut not_object = json!([1]);
        set_meta_str(&mut not_object, "name", Some("y"));
        assert_eq!(name(&not_object), Some("y"));
    }

    #[test]
    fn maps_are_repaired_in_place_and_made_when_missing() {
        // A non-object keeps its place among the keys, as serde_json's entry kept it.
        let mut obj = json!({"kind": "K", "metadata": "x", "data": {}});
        metadata_mut(&mut obj);
        assert_eq!(obj.to_string(), r#"{"kind":"K","metadata":{},"data":{}}"#);
        let mut obj = json!({"metadata": {"name": "a", "labels": 1}});
        set_map_entry(&mut obj, "labels", "app", Some("web"));
        set_map_entry(&mut obj, "annotations", "note", Some("n"));
        assert_eq!(obj.to_string(), r#"{"metadata":{"name":"a","labels":{"app":"web"},"annotations":{"note":"n"}}}"#);
        // Past the small-map size the hashed lookups answer the same.
        let mut big: Map<String, Value> = (0..12).map(|i| (format!("key{i}"), json!(i))).collect();
        *get_mut(&mut big, "key11").unwrap() = json!("eleven");
        assert_eq!(object_entry(&mut big, "key3"), &Map::new());
        assert_eq!((big["key11"].clone(), big["key3"].clone(), big.len()), (json!("eleven"), json!({}), 12));
    }
}
