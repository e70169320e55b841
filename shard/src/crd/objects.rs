//! Custom resources on the write and read paths.
//!
//! Objects are stored in the CRD's storage version. The only conversion strategy served
//! is `None` (kube's default): versions differ in `apiVersion` alone, so a write in any
//! served version is stored by rewriting it, and a read in any served version rewrites it
//! back. Schema defaults are applied on write and, as kube does, again on read, so
//! defaults added to a schema later show on old objects too.

use apiserver::registry::ResourceType;
use apiserver::rest::status::{ApiError, ApiResult};
use serde_json::Value;

/// Defaults a custom resource by its version's schema and moves it to the storage version.
pub fn prepare_write(rt: &ResourceType, object: &mut Value) {
    let Some(custom) = &rt.custom else { return };
    protocol::crd::apply_defaults(object, &custom.schema);
    object["apiVersion"] = Value::from(format!("{}/{}", rt.group, custom.storage_version));
}

/// Validation causes of a custom resource against its version's schema, every bad field
/// listed, as (field, message) pairs.
pub fn validate(rt: &ResourceType, object: &Value) -> Vec<(String, String)> {
    let Some(custom) = &rt.custom else { return Vec::new() };
    protocol::crd::validate_object(object, &custom.schema).iter().map(|e| (e.field.clone(), e.message())).collect()
}

/// Rewrites a stored custom resource into the version the request addressed, with that
/// version's defaults. Objects of other kinds (Status answers) pass unchanged.
pub fn present(rt: &ResourceType, object: &mut Value) {
    let Some(custom) = &rt.custom else { return };
    if object.get("kind").and_then(Value::as_str) != Some(rt.kind.as_str()) {
        return;
    }
    protocol::crd::apply_defaults(object, &custom.schema);
    object["apiVersion"] = Value::from(rt.api_version());
}

/// Objects of a CRD that is being deleted may be read and deleted, but not created (kube
/// answers 405 as well).
pub fn check_creatable(rt: &ResourceType) -> ApiResult<()> {
    match &rt.custom {
        Some(custom) if custom.terminating => Err(ApiError::method_not_allowed(format!(
            "create not allowed while custom resource definition {} is terminating",
            custom.crd_name
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rows() -> Vec<ResourceType> {
        apiserver::registry::definition::resource_types(
            &json!({
                "metadata": {"name": "widgets.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced",
                         "names": {"plural": "widgets", "kind": "Widget"},
                         "versions": [
                            {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                                "type": "object",
                                "properties": {"spec": {"type": "object", "properties": {
                                    "size": {"type": "integer", "default": 3, "minimum": 1}}}}}}},
                            {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}}
                         ]}
            }),
            &apiserver::registry::strategy::generic(),
        )
    }

    #[test]
    fn writes_go_to_the_storage_version_and_reads_come_back_in_the_requested_one() {
        let rows = rows();
        let mut object = json!({"apiVersion": "example.com/v2", "kind": "Widget", "spec": {}});
        prepare_write(&rows[1], &mut object);
        assert_eq!(object["apiVersion"], "example.com/v1");
        present(&rows[1], &mut object);
        assert_eq!(object["apiVersion"], "example.com/v2");
        present(&rows[0], &mut object);
        assert_eq!(object["apiVersion"], "example.com/v1");
        assert_eq!(object.pointer("/spec/size"), Some(&json!(3)), "v1 defaults apply on read");
    }

    #[test]
    fn schema_violations_name_their_fields() {
        let rows = rows();
        let causes =
            validate(&rows[0], &json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"size": 0}}));
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].0, "spec.size");
    }
}
