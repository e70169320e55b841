//! The APIExport virtual workspace: how an API provider's controller sees, on one shard,
//! every instance of its API in the workspaces that bind it (kcp's `apiexport` virtual
//! workspace). Under `/services/apiexport/<workspace>/<export>` each shard serves:
//! - discovery of the export's resources, nothing else;
//! - list and watch of them across every logical cluster of the shard that binds the
//!   export (`/clusters/*/...`): the objects stored under the export's identity
//!   (`<resource>:<identityHash>`), so another export's `widgets` never shows, each with
//!   its `kcp.io/cluster` annotation;
//! - every verb on them in one consumer cluster (`/clusters/<name>/...`), status included,
//!   when that cluster's binding is to this export;
//! - the objects the export's permission claims grant: list and watch across clusters of
//!   exactly the objects labelled for an applied claim ([`crate::binding::claims`]), and
//!   every verb in one cluster whose binding applies the claim.
//!
//! Only callers the export's workspace allows the request's verb on the `content`
//! subresource of the APIExport (`apiexports/content`, by name, as kcp asks) may use it;
//! that RBAC is read from the store or, for an export on another shard, from the cache
//! (ClusterRoles and bindings annotated `internal.kcp.io/replicate`). `system:masters`
//! may too.
//!
//! [`endpoints`] publishes the view's URL on every shard that has a binding to the export
//! in the export's APIExportEndpointSlices.

pub mod endpoints;

use crate::authz::attributes::{Attributes, ResourceAttributes};
use crate::authz::workspace_rbac::{self, Answer};
use crate::binding::bound::BoundResources;
use crate::binding::claims::{self, ClaimIndex};
use crate::binding::BOUND_CRDS_CLUSTER;
use crate::cache::lister;
use crate::state::Shard;
use apiserver::registry::virtual_workspace::{Admitted, VirtualWorkspace};
use apiserver::registry::ResourceType;
use apiserver::rest::request_info::{Target, Verb};
use apiserver::rest::status::{ApiError, ApiResult};
use protocol::path::ClusterRef;
use protocol::types::APIS_KCP_GROUP;
use security::authn::Identity;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Weak};

/// The path prefix of every APIExport view.
pub const PREFIX: &str = "/services/apiexport/";

/// The path of the view of export `name` in logical cluster `cluster` on a shard.
pub fn view_path(cluster: &str, name: &str) -> String {
    format!("{PREFIX}{cluster}/{name}")
}

/// The APIExport views of one shard.
#[derive(Debug)]
pub struct ExportView {
    /// The shard it serves (the registry is built before the shard exists).
    pub shard: Weak<Shard>,
    /// What each cluster's bindings bind.
    pub bound: Arc<BoundResources>,
    /// The permission claims each cluster's bindings apply.
    pub claims: Arc<ClaimIndex>,
}

/// The verb a request asks of `apiexports/content`: the request's own, `get` for
/// discovery.
fn content_verb(target: &Target) -> &'static str {
    match target {
        Target::Resource(request) => request.verb.as_str(),
        _ => "get",
    }
}

/// The export's permission claims: `(group, resource, identityHash)` of each. Pure.
fn claimed(export: &Value) -> Vec<(String, String, String)> {
    let claims = export.pointer("/spec/permissionClaims").and_then(Value::as_array).into_iter().flatten();
    claims
        .map(|claim| {
            let field = |name: &str| claim.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
            (field("group"), field("resource"), field("identityHash"))
        })
        .collect()
}

impl ExportView {
    /// Every served row of the export with `identity` on this shard: one per version of
    /// each bound resource some workspace here binds, and the resources the export claims
    /// (built-ins, or other exports' bound here).
    fn rows(&self, shard: &Shard, identity: &str, export: &Value) -> Vec<Arc<ResourceType>> {
        let custom = shard.registry.custom();
        let crds = self.bound.crds_with_identity(identity);
        let mut rows: Vec<Arc<ResourceType>> =
            crds.iter().flat_map(|crd| custom.versions_of(BOUND_CRDS_CLUSTER, crd)).collect();
        let claimed = claimed(export).into_iter();
        rows.extend(claimed.filter_map(|(group, resource, identity)| claims::row(shard, &group, &resource, &identity)));
        rows
    }
}

impl VirtualWorkspace for ExportView {
    fn prefix(&self) -> &'static str {
        PREFIX
    }

    fn admit(
        &self,
        identity: &Identity,
        view: &str,
        cluster: &ClusterRef,
        target: &mut Target,
        query: &mut HashMap<String, String>,
    ) -> ApiResult<Admitted> {
        let shard = self.shard.upgrade().ok_or_else(|| ApiError::unavailable("the shard is shutting down"))?;
        let Some((workspace, name)) = crate::views::workspace_and_name(view) else {
            return Err(ApiError::not_found_message(format!(
                "an APIExport view is addressed as {PREFIX}<workspace>/<export>/clusters/..., not {PREFIX}{view}/"
            )));
        };
        let found = lister::get(&shard, APIS_KCP_GROUP, "apiexports", workspace, "", name);
        let attributes = Attributes::Resource(ResourceAttributes {
            verb: content_verb(target).into(),
            group: APIS_KCP_GROUP.into(),
            version: "v1alpha1".into(),
            resource: "apiexports".into(),
            subresource: "content".into(),
            name: name.to_string(),
            ..ResourceAttributes::default()
        });
        // The RBAC asked is that of the logical cluster the export was found in, so a path
        // that indexes resolve differently cannot lend another workspace's grants.
        let asked = found.as_ref().map_or(workspace, |f| f.cluster.as_str());
        let known = found.as_ref().map(|f| f.cluster.clone());
        if workspace_rbac::ask(&shard, identity, asked, known, &attributes)? != Answer::Allowed {
            return Err(ApiError::forbidden(format!(
                "User {:?} cannot use the view of APIExport {name:?} in workspace {workspace}: it needs verb {:?} on \
                 apiexports/content {name:?} there (granted by a ClusterRole; annotate it and its binding \
                 internal.kcp.io/replicate when the export's workspace is on another shard than the consumers)",
                identity.user,
                content_verb(target),
            )));
        }
        let Some(found) = found else {
            // Replication lags: the controller retries, and must not read this as "nothing here".
            return Err(ApiError::unavailable(format!(
                "APIExport {name:?} in workspace {workspace} is not known to this shard yet"
            )));
        };
        let export_identity = found.object.pointer("/status/identityHash").and_then(Value::as_str).unwrap_or_default();
        if export_identity.is_empty() {
            return Err(ApiError::unavailable(format!("APIExport {name:?} has no identity yet; retry")));
        }
        let scope = crate::views::scope(&shard, cluster)?;
        let served = Some(self.rows(&shard, export_identity, &found.object));
        let mut admitted = Admitted { cluster: scope, writes: None, served, clusters: None };
        let Target::Resource(request) = target else { return Ok(admitted) };
        // A claimed resource: what the claim's label marks. A claim names another export's
        // resource by that export's identity: across clusters the objects stored under it,
        // in one cluster only if that cluster's resource is that export's.
        let here = |identity: &str| match &admitted.cluster {
            None => claims::row(&shard, &request.group, &request.resource, identity).is_some(),
            Some(cluster) => shard
                .registry
                .lookup(Some(cluster), &request.group, &request.version, &request.resource)
                .is_some_and(|row| row.identity().unwrap_or_default() == identity),
        };
        let claim = claimed(&found.object).into_iter().find(|(group, resource, identity)| {
            *group == request.group && *resource == request.resource && here(identity)
        });
        if let Some((group, resource, identity)) = claim {
            let (key, value) = claims::label(&found.cluster, name, &group, &resource, &identity);
            match &admitted.cluster {
                None if matches!(request.verb, Verb::List | Verb::Watch) => {
                    if !identity.is_empty() {
                        request.resource = format!("{resource}:{identity}");
                    }
                    let selector = query.entry("labelSelector".into()).or_default();
                    if !selector.trim().is_empty() {
                        selector.push(',');
                    }
                    selector.push_str(&format!("{key}={value}"));
                    // And only from clusters whose binding applies the claim now: a label
                    // is marked by the shard, but a stale or forged one must not count.
                    admitted.clusters = Some(self.claims.clusters_applying(&key, &value));
                }
                None => {
                    return Err(ApiError::method_not_allowed(format!(
                        "across workspaces (/clusters/*) a view serves list and watch; {} one object under \
                         /clusters/<name>/",
                        request.verb.as_str()
                    )))
                }
                Some(cluster) => {
                    let applies = self.claims.of(cluster, &group, &resource, &identity).iter().any(|c| c.key == key);
                    if !applies {
                        return Err(ApiError::forbidden(format!(
                            "APIExport {name:?} claims {resource:?}, but the APIBinding in logical cluster {cluster} \
                             does not accept that claim (spec.permissionClaims[].state: Accepted)"
                        )));
                    }
                }
            }
            return Ok(admitted);
        }
        let not_exported = || {
            ApiError::not_found_message(format!(
                "the view of APIExport {name:?} serves only its own resources, bound in a workspace on this shard: \
                 {:?} in group {:?} is not one of them",
                request.resource, request.group
            ))
        };
        match &admitted.cluster {
            None => {
                if !matches!(request.verb, Verb::List | Verb::Watch) {
                    return Err(ApiError::method_not_allowed(format!(
                        "across workspaces (/clusters/*) a view serves list and watch; {} one object under \
                         /clusters/<name>/ (its kcp.io/cluster annotation)",
                        request.verb.as_str()
                    )));
                }
                let qualified = format!("{}:{export_identity}", request.resource);
                let row = shard.registry.lookup(None, &request.group, &request.version, &qualified);
                if row.is_none_or(|row| row.identity() != Some(export_identity)) {
                    return Err(not_exported());
                }
                request.resource = qualified;
            }
            Some(cluster) => {
                let row = shard.registry.lookup(Some(cluster), &request.group, &request.version, &request.resource);
                if row.is_none_or(|row| row.identity() != Some(export_identity)) {
                    return Err(not_exported());
                }
            }
        }
        Ok(admitted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_paths_name_the_export() {
        assert_eq!(view_path("c1", "widgets"), "/services/apiexport/c1/widgets");
    }
}
