//! An APIExport's maximal permission policy (kcp's `maximalPermissionPolicy.local`): the
//! RBAC of the export's workspace bounds what any consumer may do to the export's
//! resources in any workspace that binds it, whatever the consumer's own RBAC grants.
//!
//! The question is asked of the export's workspace (its store, or the cache's replicated
//! RBAC when it is on another shard) for the caller with every name prefixed
//! [`BINDING_SUBJECT_PREFIX`], as kcp does: the provider grants
//! `apis.kcp.io:binding:system:authenticated` (or named users and groups) what consumers
//! may do, without granting them anything in its own workspace. `system:masters` are not
//! bounded; requests that reach no bound resource are not affected.

use super::{bindings_row, export_ref};
use crate::authz::attributes::Attributes;
use crate::authz::impersonation::SCOPES_EXTRA_KEY;
use crate::authz::workspace_rbac::{self, Answer};
use crate::cache::lister;
use crate::state::Shard;
use apiserver::objects;
use apiserver::rest::status::{ApiError, ApiResult};
use protocol::gvr::GroupResource;
use protocol::types::APIS_KCP_GROUP;
use security::authn::Identity;
use serde_json::Value;

/// What the policy's RBAC subjects are prefixed with.
pub const BINDING_SUBJECT_PREFIX: &str = "apis.kcp.io:binding:";

/// `identity` as the export's policy names it. Pure.
pub fn policy_subject(identity: &Identity) -> Identity {
    let prefixed = |name: &str| format!("{BINDING_SUBJECT_PREFIX}{name}");
    Identity {
        user: prefixed(&identity.user),
        uid: identity.uid.clone(),
        groups: identity.groups.iter().map(|g| prefixed(g)).collect(),
        // Without the impersonation scope: the question is asked of the export's workspace,
        // and the policy only narrows what the consumer's own RBAC already allowed.
        extra: identity
            .extra
            .iter()
            .filter(|(key, _)| key.as_str() != SCOPES_EXTRA_KEY)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

/// The binding in `cluster` whose bound resources include `group/resource`, read from the
/// store.
fn binding_of(shard: &Shard, cluster: &str, group: &str, resource: &str) -> Option<Value> {
    let rt = bindings_row(shard)?;
    let prefix = objects::collection_prefix(&rt, Some(cluster), None);
    let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
    let page = shard.store.list(&options, |_, _| true).ok()?;
    page.items.iter().filter_map(|(_, stored)| objects::decode(stored).ok()).find(|binding| {
        let entries = binding.pointer("/status/boundResources").and_then(Value::as_array).into_iter().flatten();
        entries.into_iter().any(|e| e["group"] == group && e["resource"] == resource)
    })
}

/// Refuses a request `attributes` describe on a bound resource of `cluster` when the
/// export's maximal permission policy does not allow it (403); anything else passes.
/// Attributes without a version (an access review's, as `kubectl auth can-i` sends them)
/// name the resource in any version.
pub fn check(shard: &Shard, identity: &Identity, cluster: &str, attributes: &Attributes) -> ApiResult<()> {
    let Attributes::Resource(request) = attributes else { return Ok(()) };
    if identity.is_master() {
        return Ok(());
    }
    let (group, resource) = (&request.group, &request.resource);
    let bound = if request.version.is_empty() {
        if shard.registry.is_builtin(group, resource) {
            return Ok(());
        }
        shard.registry.source_rows(cluster).into_iter().find(|row| row.group == *group && row.resource == *resource)
    } else {
        if shard.registry.get(group, &request.version, resource).is_some() {
            return Ok(());
        }
        shard.registry.lookup(Some(cluster), group, &request.version, resource)
    };
    if bound.is_none_or(|row| row.identity().is_none()) {
        return Ok(());
    }
    let Some(binding) = binding_of(shard, cluster, &request.group, &request.resource) else { return Ok(()) };
    let Some(export) = export_ref(&binding, cluster) else { return Ok(()) };
    let Some(found) = lister::get(shard, APIS_KCP_GROUP, "apiexports", &export.path, "", &export.name) else {
        // The export cannot be read (replication lags, or it is gone): the policy cannot
        // be known, and a bound resource must not serve more than it may.
        return Err(ApiError::unavailable(format!(
            "the APIExport {export} that serves {} cannot be read here yet, so its permission policy cannot be checked; retry",
            request.resource
        )));
    };
    if found.object.pointer("/spec/maximalPermissionPolicy/local").is_none() {
        return Ok(());
    }
    let subject = policy_subject(identity);
    let answer = workspace_rbac::ask(shard, &subject, &found.cluster, Some(found.cluster.clone()), attributes)?;
    if answer == Answer::Allowed {
        return Ok(());
    }
    let why = format!(
        "{} (the maximal permission policy of APIExport {export} does not allow it: the export's workspace must grant \
         it to {}{} or to one of the user's groups prefixed {BINDING_SUBJECT_PREFIX})",
        attributes.forbidden_message(&identity.user),
        BINDING_SUBJECT_PREFIX,
        identity.user
    );
    Err(ApiError::forbidden_on(
        &GroupResource::new(request.group.as_str(), request.resource.as_str()),
        &request.name,
        &why,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_subjects_carry_the_binding_prefix() {
        let alice = Identity::new("alice", "u1", ["team".to_string()]);
        let subject = policy_subject(&alice);
        assert_eq!(subject.user, "apis.kcp.io:binding:alice");
        assert_eq!(subject.groups, ["apis.kcp.io:binding:team", "apis.kcp.io:binding:system:authenticated"]);
        assert!(!subject.is_master());
        let mut scoped = alice.clone();
        scoped.extra.insert(SCOPES_EXTRA_KEY.into(), vec!["cluster:c1".into()]);
        scoped.extra.insert("team".into(), vec!["a".into()]);
        let subject = policy_subject(&scoped);
        assert!(
            !subject.extra.contains_key(SCOPES_EXTRA_KEY),
            "an impersonation scope is the consumer's, not the export's"
        );
        assert!(subject.extra.contains_key("team"));
        let master = Identity::new("admin", "", ["system:masters".to_string()]);
        assert!(!policy_subject(&master).is_master(), "a prefixed group is no longer system:masters");
    }
}
