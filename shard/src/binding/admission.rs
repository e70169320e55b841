//! Admission of APIBindings: the caller must be allowed to `bind` the referenced APIExport
//! in the export's own workspace (kcp's rule), judged by that workspace's RBAC, from the
//! store or the cache ([`crate::authz::workspace_rbac`]), so a binding can be authorized
//! while the exporting shard is down.

use super::export_ref;
use crate::authz::attributes::{Attributes, ResourceAttributes};
use crate::authz::workspace_rbac::{self, Answer};
use crate::cache::lister;
use crate::state::Shard;
use apiserver::rest::status::{ApiError, ApiResult};
use protocol::types::APIS_KCP_GROUP;
use security::authn::Identity;
use serde_json::Value;

/// Refuses (403) an APIBinding of `cluster` whose caller may not bind its export.
pub fn check_bind(shard: &Shard, identity: &Identity, cluster: &str, binding: &Value) -> ApiResult<()> {
    match export_ref(binding, cluster) {
        Some(reference) => check_bind_export(shard, identity, &reference, "APIBinding"),
        None => Ok(()), // validation answers 422 for a missing export name
    }
}

/// Refuses (403) an APIExportEndpointSlice of `cluster` whose caller may not bind the
/// export it names (kcp's rule: its URLs tell where the export's consumers are).
pub fn check_slice(shard: &Shard, identity: &Identity, cluster: &str, slice: &Value) -> ApiResult<()> {
    let text = |pointer: &str| slice.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty());
    let Some(name) = text("/spec/export/name") else { return Ok(()) }; // validation's 422
    let reference = super::ExportRef { path: text("/spec/export/path").unwrap_or(cluster).into(), name: name.into() };
    check_bind_export(shard, identity, &reference, "APIExportEndpointSlice")
}

/// Refuses (403) a `kind` object naming the export `reference` when its caller may not
/// `bind` it in the export's workspace.
fn check_bind_export(shard: &Shard, identity: &Identity, reference: &super::ExportRef, kind: &str) -> ApiResult<()> {
    if identity.is_master() {
        return Ok(());
    }
    let denied = |why: String| {
        ApiError::forbidden(format!(
            "unable to create {kind}: no permission to bind to export {reference}: {why}; ask an admin of that \
             workspace for a ClusterRole with verb \"bind\" on apiexports.apis.kcp.io {:?}, bound to {:?} and \
             annotated internal.kcp.io/replicate so that other shards see it",
            reference.name, identity.user
        ))
    };
    let attributes = Attributes::Resource(ResourceAttributes {
        verb: "bind".into(),
        group: APIS_KCP_GROUP.into(),
        version: "v1alpha1".into(),
        resource: "apiexports".into(),
        name: reference.name.clone(),
        ..ResourceAttributes::default()
    });
    let export_cluster =
        || lister::get(shard, APIS_KCP_GROUP, "apiexports", &reference.path, "", &reference.name).map(|f| f.cluster);
    match workspace_rbac::ask(shard, identity, &reference.path, export_cluster(), &attributes)? {
        Answer::Allowed => Ok(()),
        Answer::Denied => Err(denied(format!("user {:?} is not allowed to bind it", identity.user))),
        Answer::UnknownWorkspace => Err(denied(format!("workspace {} is not known to this shard", reference.path))),
    }
}
