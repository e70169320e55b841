//! Admission of APIBindings: the caller must be allowed to `bind` the referenced APIExport
//! in the export's own workspace (kcp's rule), judged by that workspace's RBAC.
//!
//! When the export's workspace is on this shard its RBAC is read from the store (its owner
//! counts as admin); otherwise from the replicated ClusterRoles and ClusterRoleBindings in
//! the cache (only those annotated `internal.kcp.io/replicate` leave their shard), so a
//! binding can be authorized while the exporting shard is down.

use super::export_ref;
use crate::authz::attributes::{Attributes, ResourceAttributes};
use crate::authz::policy::{Binding, Role};
use crate::authz::resolver::{visit_rules, PolicyError, PolicySource};
use crate::authz::{rules, store_policy::StorePolicy};
use crate::cache::lister;
use crate::http::status::{ApiError, ApiResult};
use crate::state::Shard;
use protocol::types::APIS_KCP_GROUP;
use security::authn::Identity;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::ops::ControlFlow;
use std::sync::Arc;

/// Refuses (403) an APIBinding of `cluster` whose caller may not bind its export.
pub fn check_bind(shard: &Shard, identity: &Identity, cluster: &str, binding: &Value) -> ApiResult<()> {
    if identity.is_master() {
        return Ok(());
    }
    let Some(reference) = export_ref(binding, cluster) else {
        return Ok(()); // validation answers 422 for a missing export name
    };
    let denied = |why: String| {
        ApiError::forbidden(format!(
            "unable to create APIBinding: no permission to bind to export {reference}: {why}; ask an admin of that \
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
    let allowed = match lister::local_cluster(shard, &reference.path) {
        Some(export_cluster) => {
            let policy = StorePolicy::new(shard, &export_cluster);
            if policy.owner().is_some_and(|owner| owner.is_user(&identity.user, &identity.uid)) {
                return Ok(());
            }
            allows(&policy, identity, &attributes)?
        }
        None => {
            let Some(export_cluster) = shard.cache.cluster_of_path(&reference.path).or_else(|| {
                lister::get(shard, APIS_KCP_GROUP, "apiexports", &reference.path, "", &reference.name)
                    .map(|f| f.cluster)
            }) else {
                return Err(denied(format!("workspace {} is not known to this shard", reference.path)));
            };
            allows(&CachedPolicy { shard, cluster: &export_cluster }, identity, &attributes)?
        }
    };
    if allowed {
        Ok(())
    } else {
        Err(denied(format!("user {:?} is not allowed to bind it", identity.user)))
    }
}

fn allows(policy: &dyn PolicySource, identity: &Identity, attributes: &Attributes) -> ApiResult<bool> {
    let mut allowed = false;
    visit_rules(policy, identity, "", &mut |_, rule| {
        allowed = rules::allows(rule, attributes);
        if allowed {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    Ok(allowed)
}

/// The replicated cluster-wide RBAC of a logical cluster on another shard, from the cache.
/// Roles and RoleBindings are never replicated, so there are none.
struct CachedPolicy<'a> {
    shard: &'a Shard,
    cluster: &'a str,
}

impl CachedPolicy<'_> {
    fn decode<T: DeserializeOwned>(&self, resource: &str) -> Vec<T> {
        let replicas = self.shard.cache.list("rbac.authorization.k8s.io", resource, self.cluster);
        replicas.iter().filter_map(|object| serde_json::from_value((**object).clone()).ok()).collect()
    }
}

impl PolicySource for CachedPolicy<'_> {
    fn cluster_role_bindings(&self) -> Result<Arc<[Binding]>, PolicyError> {
        Ok(self.decode::<Binding>("clusterrolebindings").into())
    }

    fn role_bindings(&self, _namespace: &str) -> Result<Arc<[Binding]>, PolicyError> {
        Ok(Arc::from(Vec::new()))
    }

    fn role(&self, _namespace: &str, _name: &str) -> Result<Option<Arc<Role>>, PolicyError> {
        Ok(None)
    }

    fn cluster_role(&self, name: &str) -> Result<Option<Arc<Role>>, PolicyError> {
        let role = self.shard.cache.get("rbac.authorization.k8s.io", "clusterroles", self.cluster, "", name);
        Ok(role.and_then(|object| serde_json::from_value::<Role>((*object).clone()).ok()).map(Arc::new))
    }

    fn cluster_roles(&self) -> Result<Arc<[Arc<Role>]>, PolicyError> {
        Ok(self.decode::<Role>("clusterroles").into_iter().map(Arc::new).collect())
    }
}
