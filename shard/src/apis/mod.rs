//! The `apis.kcp.io/v1alpha1` group as every logical cluster serves it: APIExports,
//! APIResourceSchemas, APIExportEndpointSlices and APIBindings — their defaults, what an
//! update may change, their validation and the identity of each export.
//!
//! The generic storage ([`crate::storage`]) calls in here through the resource's
//! [`Strategy`]; a request meets these functions in this order:
//! - [`prepare_create`] / [`prepare_update`] (from [`crate::strategy`]): server-owned
//!   status is dropped on create, an export's `status.identityHash` survives every
//!   update, APIResourceSchemas get their CRD-like defaults;
//! - [`validate`] (from [`crate::strategy::validate`]): pure checks that become a 422 with
//!   field paths — [`schema`] for APIResourceSchemas (each version's schema checked like
//!   a CRD's), [`references`] for APIBindings, APIExportEndpointSlices and APIExports;
//! - [`identity::admit_export`] (from [`crate::storage`], after validation, before the
//!   export is written): the export's identity key, generated once and kept in the store
//!   beside the export, and `status.identityHash` derived from it.
//!
//! Binding itself (resolving exports, serving bound resources) is the binding
//! controller's ([`crate::binding`]); nothing here reads other objects.

pub mod identity;
pub mod references;
pub mod schema;

use crate::registry::{ResourceType, Strategy};
use serde_json::{json, Value};

/// Fills defaults and drops what a create may not set. Pure.
pub fn prepare_create(rt: &ResourceType, object: &mut Value) {
    match rt.strategy {
        // Status is written by the server (the identity) and by controllers, as for any
        // kind with a status subresource: kube ignores a status sent with a create.
        Strategy::ApiExport | Strategy::ApiBinding | Strategy::ApiExportEndpointSlice => {
            if let Some(map) = object.as_object_mut() {
                map.insert("status".into(), json!({}));
            }
        }
        Strategy::ApiResourceSchema => schema::apply_defaults(object),
        _ => {}
    }
}

/// Keeps what an update may not change; `subresource` is `status` or `None`. Pure.
pub fn prepare_update(rt: &ResourceType, old: &Value, new: &mut Value, _subresource: Option<&str>) {
    match rt.strategy {
        Strategy::ApiExport => identity::keep_identity_hash(old, new),
        // Defaulting the new object as its create was keeps a re-sent manifest (without
        // the defaulted fields) from reading as a forbidden spec change.
        Strategy::ApiResourceSchema => schema::apply_defaults(new),
        _ => {}
    }
}

/// The (field path, message) causes `object` violates; `old` is the stored object of an
/// update. Pure.
pub fn validate(rt: &ResourceType, old: Option<&Value>, object: &Value) -> Vec<(String, String)> {
    let errors = match rt.strategy {
        Strategy::ApiResourceSchema => match old {
            None => schema::validate(object),
            Some(old) => schema::validate_update(old, object),
        },
        Strategy::ApiExport => references::validate_export(object),
        Strategy::ApiBinding => references::validate_binding(old, object),
        Strategy::ApiExportEndpointSlice => references::validate_endpoint_slice(old, object),
        _ => Vec::new(),
    };
    errors.iter().map(|e| (e.field.clone(), e.message())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use std::sync::Arc;

    fn rt(resource: &str) -> Arc<ResourceType> {
        let registry = Registry::builtin();
        let row = registry.all().iter().find(|r| r.group == "apis.kcp.io" && r.resource == resource).cloned();
        row.unwrap_or_else(|| panic!("{resource} row"))
    }

    #[test]
    fn rows_are_cluster_scoped_with_their_strategies() {
        let cases = [
            ("apiexports", Strategy::ApiExport, true),
            ("apiresourceschemas", Strategy::ApiResourceSchema, false),
            ("apiexportendpointslices", Strategy::ApiExportEndpointSlice, true),
            ("apibindings", Strategy::ApiBinding, true),
        ];
        for (resource, strategy, status) in cases {
            let row = rt(resource);
            assert_eq!(row.strategy, strategy, "{resource}");
            assert!(!row.namespaced, "{resource}");
            assert_eq!(row.has_subresource("status"), status, "{resource}");
            assert_eq!(row.version, "v1alpha1");
            assert!(protocol::openapi::builtin_components().contains_key(&row.schema_name), "{resource}");
        }
    }

    #[test]
    fn create_drops_status_and_update_keeps_the_identity_hash() {
        let mut export = json!({"metadata": {"name": "e"}, "status": {"identityHash": "forged"}});
        prepare_create(&rt("apiexports"), &mut export);
        assert_eq!(export["status"], json!({}));
        let old = json!({"metadata": {"name": "e"}, "status": {"identityHash": "a".repeat(64)}});
        for sub in [None, Some("status")] {
            let mut new = json!({"metadata": {"name": "e"}, "status": {"identityHash": "b", "conditions": []}});
            prepare_update(&rt("apiexports"), &old, &mut new, sub);
            assert_eq!(new["status"]["identityHash"], "a".repeat(64));
            assert_eq!(new["status"]["conditions"], json!([]), "the rest of the status is the writer's");
        }
    }

    #[test]
    fn validation_reports_field_paths() {
        let cases = [
            (
                "apibindings",
                json!({"metadata": {"name": "b"}, "spec": {"reference": {"export": {}}}}),
                vec!["spec.reference.export.name"],
            ),
            ("apiexportendpointslices", json!({"metadata": {"name": "s"}, "spec": {}}), vec!["spec.export.name"]),
            (
                "apiexports",
                json!({"metadata": {"name": "e"}, "spec": {"latestResourceSchemas": ["v1.a.b.c", "Bad"]}}),
                vec!["spec.latestResourceSchemas[1]"],
            ),
        ];
        for (resource, object, fields) in cases {
            let got: Vec<String> = validate(&rt(resource), None, &object).into_iter().map(|(f, _)| f).collect();
            assert_eq!(got, fields, "{resource} {object}");
        }
    }
}
