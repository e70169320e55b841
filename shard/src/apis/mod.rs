//! The `apis.kcp.io/v1alpha1` group as every logical cluster serves it: APIExports,
//! APIResourceSchemas, APIExportEndpointSlices and APIBindings — their defaults, what an
//! update may change, their validation and the identity of each export.
//!
//! The generic storage ([`apiserver::storage`]) calls in here through each row's [`Api`]
//! strategy; a request meets these functions in this order:
//! - [`prepare_create`] / [`prepare_update`] (from [`apiserver::strategy`]): server-owned
//!   status is dropped on create, an export's `status.identityHash` survives every
//!   update, APIResourceSchemas get their CRD-like defaults;
//! - [`validate`] (from [`apiserver::strategy::validate`]): pure checks that become a 422 with
//!   field paths — [`schema`] for APIResourceSchemas (each version's schema checked like
//!   a CRD's), [`references`] for APIBindings, APIExportEndpointSlices and APIExports;
//! - [`identity::admit_export`] (from [`apiserver::storage`], after validation, before the
//!   export is written): the export's identity key, generated once and kept in the store
//!   beside the export, and `status.identityHash` derived from it.
//!
//! Binding itself (resolving exports, serving bound resources) is the binding
//! controller's ([`crate::binding`]); nothing here reads other objects.

pub mod identity;
pub mod references;
pub mod rows;
pub mod schema;

use apiserver::registry::strategy::{done, Causes, Hook, Strategy};
use apiserver::registry::Core;
use apiserver::registry::{Registry, ResourceType};
use apiserver::rest::status::ApiResult;

use serde_json::{json, Value};
use std::sync::Arc;

/// The API group of exports and bindings.
pub use protocol::types::APIS_KCP_GROUP as APIS_GROUP;

/// Which kind of the group a row serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKind {
    /// APIExports: an identity generated on create, whose hash never changes.
    Export,
    /// APIResourceSchemas: CRD-like validation, immutable spec.
    ResourceSchema,
    /// APIBindings: an export reference, fixed once Bound.
    Binding,
    /// APIExportEndpointSlices: a fixed export reference.
    EndpointSlice,
}

/// Gives the group's rows their strategies, but APIBindings' and APIExportEndpointSlices',
/// which the binding feature registers around [`Api`] (it adds the `bind` check and, for
/// bindings, its controller's trigger).
pub fn register(registry: &mut Registry) {
    registry.add_rows(rows::rows());
    registry.set_strategy(APIS_GROUP, "apiexports", Arc::new(Api(ApiKind::Export)));
    registry.set_strategy(APIS_GROUP, "apiresourceschemas", Arc::new(Api(ApiKind::ResourceSchema)));
}

/// The strategy of one kind of the group.
#[derive(Debug, Clone, Copy)]
pub struct Api(pub ApiKind);

impl Strategy for Api {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_create(&self, _rt: &ResourceType, object: &mut Value, _now: &str) -> ApiResult<()> {
        prepare_create(self.0, object);
        Ok(())
    }

    fn prepare_update(&self, _rt: &ResourceType, old: &Value, new: &mut Value, _sub: Option<&str>) -> ApiResult<()> {
        prepare_update(self.0, old, new);
        Ok(())
    }

    fn validate(&self, _rt: &ResourceType, old: Option<&Value>, object: &Value) -> Causes {
        validate(self.0, old, object)
    }

    fn before_create<'a>(&'a self, core: &'a Core, cluster: &'a str, object: &'a mut Value, dry_run: bool) -> Hook<'a> {
        match self.0 {
            // The identity is stored before the export, so an export never exists without one.
            ApiKind::Export => Box::pin(identity::admit_export(core, cluster, object, dry_run)),
            _ => done(),
        }
    }
}

/// Fills defaults and drops what a create may not set. Pure.
pub fn prepare_create(kind: ApiKind, object: &mut Value) {
    match kind {
        // Status is written by the server (the identity) and by controllers, as for any
        // kind with a status subresource: kube ignores a status sent with a create.
        ApiKind::Export | ApiKind::Binding | ApiKind::EndpointSlice => {
            if let Some(map) = object.as_object_mut() {
                map.insert("status".into(), json!({}));
            }
        }
        ApiKind::ResourceSchema => schema::apply_defaults(object),
    }
}

/// Keeps what an update may not change. Pure.
pub fn prepare_update(kind: ApiKind, old: &Value, new: &mut Value) {
    match kind {
        ApiKind::Export => identity::keep_identity_hash(old, new),
        // Defaulting the new object as its create was keeps a re-sent manifest (without
        // the defaulted fields) from reading as a forbidden spec change.
        ApiKind::ResourceSchema => schema::apply_defaults(new),
        ApiKind::Binding | ApiKind::EndpointSlice => {}
    }
}

/// The (field path, message) causes `object` violates; `old` is the stored object of an
/// update. Pure.
pub fn validate(kind: ApiKind, old: Option<&Value>, object: &Value) -> Causes {
    let errors = match kind {
        ApiKind::ResourceSchema => match old {
            None => schema::validate(object),
            Some(old) => schema::validate_update(old, object),
        },
        ApiKind::Export => references::validate_export(object),
        ApiKind::Binding => references::validate_binding(old, object),
        ApiKind::EndpointSlice => references::validate_endpoint_slice(old, object),
    };
    errors.iter().map(|e| (e.field.clone(), e.message())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use apiserver::registry::Registry;
    use std::sync::Arc;

    fn rt(resource: &str) -> Arc<ResourceType> {
        let registry = Registry::from_resources(rows::rows());
        let row = registry.all().iter().find(|r| r.group == "apis.kcp.io" && r.resource == resource).cloned();
        row.unwrap_or_else(|| panic!("{resource} row"))
    }

    #[test]
    fn rows_are_cluster_scoped() {
        let cases = [
            ("apiexports", true),
            ("apiresourceschemas", false),
            ("apiexportendpointslices", true),
            ("apibindings", true),
        ];
        for (resource, status) in cases {
            let row = rt(resource);
            assert!(!row.namespaced, "{resource}");
            assert_eq!(row.has_subresource("status"), status, "{resource}");
            assert_eq!(row.version, "v1alpha1");
            assert!(protocol::openapi::builtin_components().contains_key(&row.schema_name), "{resource}");
        }
    }

    #[test]
    fn create_drops_status_and_update_keeps_the_identity_hash() {
        let mut export = json!({"metadata": {"name": "e"}, "status": {"identityHash": "forged"}});
        prepare_create(ApiKind::Export, &mut export);
        assert_eq!(export["status"], json!({}));
        let old = json!({"metadata": {"name": "e"}, "status": {"identityHash": "a".repeat(64)}});
        let mut new = json!({"metadata": {"name": "e"}, "status": {"identityHash": "b", "conditions": []}});
        prepare_update(ApiKind::Export, &old, &mut new);
        assert_eq!(new["status"]["identityHash"], "a".repeat(64));
        assert_eq!(new["status"]["conditions"], json!([]), "the rest of the status is the writer's");
    }

    #[test]
    fn validation_reports_field_paths() {
        let cases = [
            (
                ApiKind::Binding,
                json!({"metadata": {"name": "b"}, "spec": {"reference": {"export": {}}}}),
                vec!["spec.reference.export.name"],
            ),
            (ApiKind::EndpointSlice, json!({"metadata": {"name": "s"}, "spec": {}}), vec!["spec.export.name"]),
            (
                ApiKind::Export,
                json!({"metadata": {"name": "e"}, "spec": {"latestResourceSchemas": ["v1.a.b.c", "Bad"]}}),
                vec!["spec.latestResourceSchemas[1]"],
            ),
        ];
        for (kind, object, fields) in cases {
            let got: Vec<String> = validate(kind, None, &object).into_iter().map(|(f, _)| f).collect();
            assert_eq!(got, fields, "{kind:?} {object}");
        }
    }
}
