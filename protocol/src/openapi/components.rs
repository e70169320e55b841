//! What the discovery root, the group-version documents and the built-in schemas share:
//! the components keys and extensions kube uses, `$ref`s into `components.schemas`, and
//! the GVK and list-schema shaping applied to custom and built-in kinds alike.

use serde_json::{json, Map, Value};

/// Where a document's component schemas live; every `$ref` points below it.
pub const SCHEMA_REF_PREFIX: &str = "#/components/schemas/";
/// Components key of ObjectMeta, the schema `metadata` of every object is checked against.
pub const OBJECT_META_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
/// Components key of ListMeta, the `metadata` of list responses.
pub const LIST_META_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
/// Components key of the body of DELETE requests.
pub const DELETE_OPTIONS_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
/// Components key of the Status returned by deletes and errors.
pub const STATUS_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
/// Components key of the (opaque) body of PATCH requests.
pub const PATCH_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
/// Extension naming the kinds a schema (array) or an operation (single object) is about.
pub const GVK_EXTENSION: &str = "x-kubernetes-group-version-kind";
/// Extension that keeps unknown fields below a schema node instead of pruning them.
pub const PRESERVE_UNKNOWN_FIELDS: &str = "x-kubernetes-preserve-unknown-fields";

/// The `{"$ref": "#/components/schemas/<name>"}` schema pointing at a component.
pub fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("{SCHEMA_REF_PREFIX}{name}") })
}

/// The components key a `$ref` points at, if it points into `components.schemas`.
///
/// Swagger 2.0 style `#/definitions/<name>` is accepted too, so schemas copied from older
/// documents still resolve.
pub fn ref_name(reference: &str) -> Option<&str> {
    reference.strip_prefix(SCHEMA_REF_PREFIX).or_else(|| reference.strip_prefix("#/definitions/"))
}

/// What a schema object composes itself from: its `$ref` and its `allOf` parts, found in
/// one pass over its keys. Schema walks resolve a node per object of every request body,
/// and a schema object has only a handful of keys, so scanning them beats hashing each
/// keyword for a lookup.
pub fn composition(schema: &Map<String, Value>) -> (Option<&str>, &[Value]) {
    let (mut reference, mut all_of): (Option<&str>, &[Value]) = (None, &[]);
    for (key, value) in schema {
        match key.as_str() {
            "$ref" => reference = value.as_str(),
            "allOf" => all_of = value.as_array().map_or(&[], Vec::as_slice),
            _ => {}
        }
    }
    (reference, all_of)
}

/// Pushes the component names of every `$ref` inside `schema`.
pub(super) fn collect_refs(schema: &Value, names: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(name) = map.get("$ref").and_then(Value::as_str).and_then(ref_name) {
                names.push(name.to_owned());
            }
            map.values().for_each(|value| collect_refs(value, names));
        }
        Value::Array(values) => values.iter().for_each(|value| collect_refs(value, names)),
        _ => {}
    }
}

/// The `{group, kind, version}` object GVK extensions hold.
pub(super) fn gvk_value(group: &str, version: &str, kind: &str) -> Value {
    json!({ "group": group, "kind": kind, "version": version })
}

/// `schema` with `gvk` in its `x-kubernetes-group-version-kind` list.
pub(super) fn with_gvk(mut schema: Value, gvk: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        let entry = map.entry(GVK_EXTENSION).or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(gvks) = entry {
            if !gvks.contains(&gvk) {
                gvks.push(gvk);
            }
        }
    }
    schema
}

/// A list schema shaped like kube's (`ConfigMapList`): apiVersion, kind, ListMeta metadata
/// and the required `items`.
pub(super) fn list_schema(item_schema: &str, item_kind: &str, list_gvk: Value) -> Value {
    json!({
        "description": format!("{item_kind}List is a list of {item_kind} objects."),
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
                "type": "string"
            },
            "items": {
                "description": format!("items is the list of {item_kind} objects."),
                "items": schema_ref(item_schema),
                "type": "array"
            },
            "kind": {
                "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "type": "string"
            },
            "metadata": {
                "allOf": [schema_ref(LIST_META_SCHEMA)],
                "default": {},
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
            }
        },
        "required": ["items"],
        "type": "object",
        GVK_EXTENSION: [list_gvk]
    })
}

/// Asserts that every `$ref` inside `document` names a schema in `schemas`.
#[cfg(test)]
pub(super) fn assert_refs_resolve(document: &Value, schemas: &Map<String, Value>) {
    let mut names = Vec::new();
    collect_refs(document, &mut names);
    assert!(!names.is_empty());
    for name in names {
        assert!(schemas.contains_key(&name), "dangling $ref to {name}");
    }
}
