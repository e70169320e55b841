//! One question asked of another workspace's RBAC: may this caller do this (cluster-wide)
//! in the workspace at this path? Binding an APIExport (`bind` on `apiexports`) and
//! reading a SyncTarget's sync view (`sync` on `synctargets`) are such questions: the
//! workspace may live on another shard.
//!
//! When the workspace is on this shard its RBAC is read from the store (its owner counts
//! as admin); otherwise from the replicated ClusterRoles and ClusterRoleBindings in the
//! cache (only those annotated `internal.kcp.io/replicate` leave their shard), so the
//! answer stands while the owning shard is down. A user impersonated in one workspace by
//! a non-master is denied in every other ([`impersonation::in_scope`]): rights to act as
//! someone there lend nothing here.

use super::attributes::Attributes;
use super::policy::{Binding, Role};
use super::resolver::{any_cluster_rule, PolicyError, PolicySource};
use super::{impersonation, rules, store_policy::StorePolicy};
use crate::cache::lister;
use crate::state::Shard;
use apiserver::rest::status::ApiResult;
use security::authn::Identity;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// The answer, or why there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The workspace's RBAC (or ownership) allows it.
    Allowed,
    /// It does not.
    Denied,
    /// This shard knows no workspace of that path or name.
    UnknownWorkspace,
}

/// Asks the RBAC of the workspace `cluster_or_path` (a path, or a logical-cluster name;
/// `known_cluster` names the cluster when the caller found it otherwise) whether
/// `identity` may do what `attributes` say. `system:masters` may.
pub fn ask(
    shard: &Shard,
    identity: &Identity,
    cluster_or_path: &str,
    known_cluster: Option<String>,
    attributes: &Attributes,
) -> ApiResult<Answer> {
    if identity.is_master() {
        return Ok(Answer::Allowed);
    }
    let verdict = |allowed: bool| if allowed { Answer::Allowed } else { Answer::Denied };
    if let Some(cluster) = lister::local_cluster(shard, cluster_or_path) {
        if !impersonation::in_scope(identity, &cluster) {
            return Ok(Answer::Denied);
        }
        let policy = StorePolicy::new(shard, &cluster);
        if policy.owner().is_some_and(|owner| owner.is_user(&identity.user, &identity.uid)) {
            return Ok(Answer::Allowed);
        }
        return Ok(verdict(allows(&policy, identity, attributes)?));
    }
    let Some(cluster) = shard.cache.cluster_of_path(cluster_or_path).or(known_cluster) else {
        return Ok(Answer::UnknownWorkspace);
    };
    if !impersonation::in_scope(identity, &cluster) {
        return Ok(Answer::Denied);
    }
    Ok(verdict(allows(&CachedPolicy { shard, cluster: &cluster }, identity, attributes)?))
}

fn allows(policy: &dyn PolicySource, identity: &Identity, attributes: &Attributes) -> ApiResult<bool> {
    Ok(any_cluster_rule(policy, identity, |rule| rules::allows(rule, attributes))?)
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
