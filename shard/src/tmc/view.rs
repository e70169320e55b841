//! The sync view (a [`VirtualWorkspace`]): how an agent sees, on one shard, the work placed on its SyncTarget
//! (kcp's syncer virtual workspace). Under `/services/syncer/<workspace>/<synctarget>`
//! each shard serves the Kubernetes API narrowed to that SyncTarget:
//! - list and watch across every logical cluster of the shard (`/clusters/*/...`), only
//!   objects labelled `state.workload.kcp.io/<key>`, each with its `kcp.io/cluster`
//!   annotation;
//! - get, update and patch (status, and the agent's finalizer) of such objects in their
//!   own cluster (`/clusters/<name>/...`); creates and deletes are not the agent's.
//!
//! Only callers the SyncTarget's workspace allows the verb `sync` on that SyncTarget
//! (`synctargets`, by name, kcp's rule) may use it; its RBAC is read from the store or,
//! for an inventory on another shard, from the cache. `system:masters` may too.

use super::guard::ViewWrites;
use crate::authz::attributes::{Attributes, ResourceAttributes};
use crate::authz::workspace_rbac::{self, Answer};
use crate::cache::lister;
use crate::state::Shard;
use apiserver::registry::virtual_workspace::{Admitted, VirtualWorkspace, WriteAdmission};
use apiserver::rest::request_info::{Target, Verb};
use apiserver::rest::status::{ApiError, ApiResult};
use apiserver::storage::{self, ObjectRef};
use protocol::meta;
use protocol::path::ClusterRef;
use protocol::types::{
    CLUSTER_RESOURCE_STATE_LABEL_PREFIX, RESOURCE_STATE_SYNC, SYNC_TARGET_RESOURCE, WORKLOAD_KCP_GROUP,
};
use security::authn::Identity;
use std::collections::HashMap;
use std::sync::{Arc, Weak};

/// The path prefix of every sync view.
pub const PREFIX: &str = "/services/syncer/";

/// The sync views of one shard.
#[derive(Debug)]
pub struct SyncView {
    /// The shard it serves (the registry is built before the shard exists).
    pub shard: Weak<Shard>,
}

impl VirtualWorkspace for SyncView {
    fn prefix(&self) -> &'static str {
        PREFIX
    }

    /// Authorizes `identity` for the view and narrows the request to it: the SyncTarget's
    /// label required of every listed or watched object; single objects without the label
    /// are 404, as if absent.
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
                "a sync view is addressed as {PREFIX}<workspace>/<synctarget>/clusters/..., not {PREFIX}{view}/"
            )));
        };
        let found = lister::get(&shard, WORKLOAD_KCP_GROUP, SYNC_TARGET_RESOURCE, workspace, "", name);
        let attributes = Attributes::Resource(ResourceAttributes {
            verb: "sync".into(),
            group: WORKLOAD_KCP_GROUP.into(),
            version: "v1alpha1".into(),
            resource: SYNC_TARGET_RESOURCE.into(),
            name: name.to_string(),
            ..ResourceAttributes::default()
        });
        // The RBAC asked is that of the logical cluster the SyncTarget was found in, so a
        // path that indexes resolve differently cannot lend another workspace's grants.
        let asked = found.as_ref().map_or(workspace, |f| f.cluster.as_str());
        let known = found.as_ref().map(|f| f.cluster.clone());
        if workspace_rbac::ask(&shard, identity, asked, known, &attributes)? != Answer::Allowed {
            return Err(ApiError::forbidden(format!(
                "User {:?} cannot use the sync view of SyncTarget {name:?} in workspace {workspace}: it needs verb \
                 \"sync\" on synctargets.workload.kcp.io {name:?} there (in a ClusterRole annotated \
                 internal.kcp.io/replicate, so that every shard sees it)",
                identity.user
            )));
        }
        let Some(found) = found else {
            // Replication lags: the agent retries, and must not read this as "nothing here".
            return Err(ApiError::unavailable(format!(
                "SyncTarget {name:?} in workspace {workspace} is not known to this shard yet"
            )));
        };
        let key = placement::sync_target_key(&found.cluster, name);
        let label = format!("{CLUSTER_RESOURCE_STATE_LABEL_PREFIX}{key}");
        let writes: Arc<dyn WriteAdmission> = Arc::new(ViewWrites { key });
        let scope = crate::views::scope(&shard, cluster)?;
        let admitted = Admitted { cluster: scope, writes: Some(writes), served: None, clusters: None };
        let Target::Resource(request) = target else { return Ok(admitted) };
        match request.verb {
            Verb::List | Verb::Watch => {
                let selector = query.entry("labelSelector".into()).or_default();
                if !selector.trim().is_empty() {
                    selector.push(',');
                }
                selector.push_str(&format!("{label}={RESOURCE_STATE_SYNC}"));
            }
            // Writes are checked inside the write, against the stored object (ViewWrites).
            Verb::Update | Verb::Patch if admitted.cluster.is_some() && request.name.is_some() => {}
            Verb::Get => {
                let (Some(cluster), Some(name)) = (&admitted.cluster, request.name.as_deref()) else {
                    return Err(ApiError::not_found_message(
                        "address one object under /clusters/<name>/ in a sync view",
                    ));
                };
                let rt = shard
                    .registry
                    .lookup(Some(cluster), &request.group, &request.version, &request.resource)
                    .ok_or_else(|| ApiError::not_found_message(format!("no resource {:?} here", request.resource)))?;
                let at = ObjectRef { cluster, namespace: request.namespace.as_deref(), name };
                let (object, _) = storage::get(&shard, &rt, &at)?;
                if meta::labels(&object).get(&label).map(String::as_str) != Some(RESOURCE_STATE_SYNC) {
                    return Err(ApiError::not_found(&rt.group_resource(), name));
                }
            }
            _ => {
                return Err(ApiError::method_not_allowed(format!(
                    "a sync view serves get, list and watch, and update and patch of one object; {} is not the agent's",
                    request.verb.as_str()
                )))
            }
        }
        Ok(admitted)
    }
}
