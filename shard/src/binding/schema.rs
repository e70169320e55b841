//! Pure conversions of the binding controller: an APIResourceSchema bound under an export
//! identity → the bound CRD the shard serves it from, and the binding's status entries.

use protocol::meta;
use protocol::wellknown::{IDENTITY_ANNOTATION, SCHEMA_ANNOTATION};
use serde_json::{json, Map, Value};

/// The name of the bound CRD of a schema under an identity: a schema may be exported by
/// several exports, each storing its objects apart.
pub fn bound_crd_name(identity: &str, schema_uid: &str) -> String {
    let short = identity.get(..16).unwrap_or(identity);
    format!("{short}-{schema_uid}")
}

/// The group and plural resource an APIResourceSchema defines.
pub fn group_resource(schema: &Value) -> Option<(String, String)> {
    let group = schema.pointer("/spec/group").and_then(Value::as_str)?;
    let plural = schema.pointer("/spec/names/plural").and_then(Value::as_str).filter(|p| !p.is_empty())?;
    Some((group.to_string(), plural.to_string()))
}

/// The CustomResourceDefinition that serves `schema` for bindings to an export with
/// `identity`. kcp keeps such "bound CRDs" in a system logical cluster too.
pub fn bound_crd(schema: &Value, identity: &str) -> Option<Value> {
    let spec = schema.get("spec")?;
    let uid = meta::meta_str(schema, "uid")?;
    group_resource(schema)?;
    let versions: Vec<Value> = spec
        .get("versions")
        .and_then(Value::as_array)?
        .iter()
        .map(|v| {
            let mut version = Map::new();
            for field in ["name", "served", "storage", "deprecated", "deprecationWarning", "subresources"] {
                if let Some(value) = v.get(field) {
                    version.insert(field.to_string(), value.clone());
                }
            }
            if let Some(columns) = v.get("additionalPrinterColumns") {
                version.insert("additionalPrinterColumns".into(), columns.clone());
            }
            let schema = v.get("schema").cloned().unwrap_or_else(|| json!({"type": "object"}));
            version.insert("schema".into(), json!({"openAPIV3Schema": schema}));
            Value::Object(version)
        })
        .collect();
    let name = bound_crd_name(identity, uid);
    Some(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": name,
            "annotations": {
                IDENTITY_ANNOTATION: identity,
                SCHEMA_ANNOTATION: meta::name(schema).unwrap_or_default(),
            },
        },
        "spec": {
            "group": spec.get("group").cloned().unwrap_or(Value::Null),
            "names": spec.get("names").cloned().unwrap_or(Value::Null),
            "scope": spec.get("scope").cloned().unwrap_or_else(|| json!("Namespaced")),
            "versions": versions,
        },
    }))
}

/// The `status.boundResources` entry of a bound schema (kcp's shape).
pub fn bound_resource(schema: &Value, identity: &str) -> Option<Value> {
    let (group, resource) = group_resource(schema)?;
    let storage: Vec<Value> = schema
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| v.get("name").cloned())
        .collect();
    Some(json!({
        "group": group,
        "resource": resource,
        "schema": {
            "name": meta::name(schema)?,
            "UID": meta::meta_str(schema, "uid")?,
            "identityHash": identity,
        },
        "storageVersions": storage,
    }))
}

/// The bound CRD names a binding's `status.boundResources` stand for, with their group and
/// resource.
pub fn bound_crds_of(binding: &Value) -> Vec<(String, String, String)> {
    let entries = binding.pointer("/status/boundResources").and_then(Value::as_array).into_iter().flatten();
    entries
        .filter_map(|entry| {
            let text = |pointer: &str| entry.pointer(pointer).and_then(Value::as_str).map(str::to_string);
            let crd = bound_crd_name(&text("/schema/identityHash")?, &text("/schema/UID")?);
            Some((text("/group").unwrap_or_default(), text("/resource")?, crd))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "metadata": {"name": "v1.widgets.example.io", "uid": "1234-abcd"},
            "spec": {
                "group": "example.io",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true,
                              "schema": {"type": "object", "properties": {"spec": {"type": "object"}}},
                              "subresources": {"status": {}}}]
            }
        })
    }

    #[test]
    fn a_bound_crd_is_the_schema_as_a_crd_under_the_identity() {
        let identity = "a".repeat(64);
        let crd = bound_crd(&schema(), &identity).unwrap();
        assert_eq!(meta::name(&crd), Some("aaaaaaaaaaaaaaaa-1234-abcd"));
        assert_eq!(meta::annotations(&crd)[IDENTITY_ANNOTATION], identity);
        assert_eq!(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["type"], "object");
        assert_eq!(crd["spec"]["versions"][0]["subresources"], json!({"status": {}}));
        let rows = apiserver::registry::definition::resource_types(&crd, &apiserver::registry::strategy::generic());
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].group.as_str(), rows[0].resource.as_str()), ("example.io", "widgets"));
    }

    #[test]
    fn status_entries_name_their_bound_crds() {
        let identity = "b".repeat(64);
        let entry = bound_resource(&schema(), &identity).unwrap();
        assert_eq!(entry["schema"]["identityHash"], identity);
        assert_eq!(entry["storageVersions"], json!(["v1"]));
        let binding = json!({"status": {"boundResources": [entry]}});
        let crds = bound_crds_of(&binding);
        assert_eq!(crds, [("example.io".into(), "widgets".into(), bound_crd_name(&identity, "1234-abcd"))]);
        assert!(bound_crd(&json!({"metadata": {"name": "x"}}), &identity).is_none());
    }
}
