//! The OpenAPI schemas of custom resources, as kube publishes them: the CRD's schema with
//! `apiVersion`, `kind` and a `metadata` that refers to ObjectMeta, so that
//! `kubectl explain` and client-side tooling see the same document shape as for
//! built-in kinds.

use crate::registry::ResourceType;
use protocol::openapi::{schema_ref, GVK_EXTENSION, OBJECT_META_SCHEMA};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Components of the custom rows among `rows`, keyed by their schema names; empty when
/// there are none (the built-in components then suffice).
pub fn components(rows: &[Arc<ResourceType>]) -> Map<String, Value> {
    let mut components = Map::new();
    for rt in rows {
        let Some(custom) = &rt.custom else { continue };
        components.insert(rt.schema_name.clone(), kind_schema(rt, &custom.schema));
    }
    components
}

fn kind_schema(rt: &ResourceType, schema: &Value) -> Value {
    let mut schema = schema.clone();
    if !schema.is_object() {
        schema = json!({"type": "object"});
    }
    let properties = schema.as_object_mut().expect("object").entry("properties").or_insert_with(|| json!({}));
    if let Some(properties) = properties.as_object_mut() {
        properties.entry("apiVersion").or_insert_with(|| {
            json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."})
        });
        properties.entry("kind").or_insert_with(|| {
            json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."})
        });
        properties.insert(
            "metadata".into(),
            json!({"allOf": [schema_ref(OBJECT_META_SCHEMA)], "description": "Standard object's metadata."}),
        );
    }
    schema[GVK_EXTENSION] = json!([{"group": rt.group, "version": rt.version, "kind": rt.kind}]);
    schema
}
