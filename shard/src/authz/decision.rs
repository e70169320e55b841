//! The authorization decision for one caller and one request in one logical cluster, and
//! the rules a caller has there (for rules reviews). Pure apart from the
//! [`PolicySource`] and the owner the caller hands in.
//!
//! The order is kcp's: `system:masters` may do anything; the workspace's owner is its
//! cluster-admin; anyone else needs access to the workspace (verb `access`, see
//! [`rules::grants_workspace_access`]) granted by a ClusterRoleBinding of the logical
//! cluster, and then a rule of its RBAC allowing the request.

use super::attributes::Attributes;
use super::bootstrap;
use super::policy::PolicyRule;
use super::resolver::{any_cluster_rule, visit_rules, PolicyError, PolicySource};
use super::rules;
use protocol::types::Owner;
use security::authn::Identity;
use std::ops::ControlFlow;

/// Why a request is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowance {
    /// The caller is in `system:masters`.
    Masters,
    /// The caller owns the workspace.
    Owner,
    /// A rule allows it; kube's reason names the binding.
    Rbac(String),
}

/// Why a request is denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denial {
    /// The caller may not access the logical cluster at all.
    NoWorkspaceAccess,
    /// The caller may access it, but no rule allows the request.
    NoRule,
}

/// An authorization decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed, and why.
    Allowed(Allowance),
    /// Denied, and why.
    Denied(Denial),
}

impl Decision {
    /// The reason a review reports (kube's `status.reason`).
    pub fn reason(&self) -> String {
        match self {
            Decision::Allowed(Allowance::Masters) => "allowed: member of system:masters".into(),
            Decision::Allowed(Allowance::Owner) => "allowed: owner of the workspace".into(),
            Decision::Allowed(Allowance::Rbac(reason)) => reason.clone(),
            Decision::Denied(Denial::NoWorkspaceAccess) => "workspace access not permitted".into(),
            Decision::Denied(Denial::NoRule) => String::new(),
        }
    }

    /// A short label for metrics and traces.
    pub fn label(&self) -> (&'static str, &'static str) {
        match self {
            Decision::Allowed(Allowance::Masters) => ("allowed", "masters"),
            Decision::Allowed(Allowance::Owner) => ("allowed", "owner"),
            Decision::Allowed(Allowance::Rbac(_)) => ("allowed", "rbac"),
            Decision::Denied(Denial::NoWorkspaceAccess) => ("denied", "workspace_access"),
            Decision::Denied(Denial::NoRule) => ("denied", "no_rule"),
        }
    }
}

/// Decides whether `identity` may do `attributes` in the logical cluster whose RBAC
/// objects `policy` reads and whose owner is `owner`.
pub fn decide(
    policy: &dyn PolicySource,
    owner: Option<&Owner>,
    identity: &Identity,
    attributes: &Attributes,
) -> Result<Decision, PolicyError> {
    if identity.is_master() {
        return Ok(Decision::Allowed(Allowance::Masters));
    }
    if owner.is_some_and(|owner| owner.is_user(&identity.user, &identity.uid)) {
        return Ok(Decision::Allowed(Allowance::Owner));
    }
    if !has_workspace_access(policy, identity)? {
        return Ok(Decision::Denied(Denial::NoWorkspaceAccess));
    }
    let mut allowed_by = None;
    visit_rules(policy, identity, attributes.namespace(), &mut |grant, rule| {
        if rules::allows(rule, attributes) {
            allowed_by = Some(format!("RBAC: allowed by {}", grant.describe()));
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    })?;
    Ok(match allowed_by {
        Some(reason) => Decision::Allowed(Allowance::Rbac(reason)),
        None => Decision::Denied(Denial::NoRule),
    })
}

/// Whether a cluster-wide grant gives `identity` access to the logical cluster (kcp reads
/// only ClusterRoleBindings for this: `access` is not namespaced).
fn has_workspace_access(policy: &dyn PolicySource, identity: &Identity) -> Result<bool, PolicyError> {
    any_cluster_rule(policy, identity, rules::grants_workspace_access)
}

/// The rules `identity` has in a namespace (kube's `RulesFor`), for rules reviews.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// Every rule granted, cluster-wide ones first, in binding order.
    pub rules: Vec<PolicyRule>,
    /// kube's evaluation errors (bindings of missing roles); any makes the list incomplete.
    pub errors: Vec<String>,
}

/// What `identity` may do in `namespace` (empty: cluster-wide grants only). Masters and
/// the owner have cluster-admin's rules.
pub fn rules_for(
    policy: &dyn PolicySource,
    owner: Option<&Owner>,
    identity: &Identity,
    namespace: &str,
) -> Result<Rules, PolicyError> {
    if identity.is_master() || owner.is_some_and(|owner| owner.is_user(&identity.user, &identity.uid)) {
        return Ok(Rules { rules: bootstrap::cluster_admin_rules().to_vec(), errors: Vec::new() });
    }
    let mut rules = Vec::new();
    let errors = visit_rules(policy, identity, namespace, &mut |_, rule| {
        rules.push(rule.clone());
        ControlFlow::Continue(())
    })?;
    Ok(Rules { rules, errors })
}

#[cfg(test)]
mod tests {
    use super::super::attributes::{NonResourceAttributes, ResourceAttributes};
    use super::super::resolver::fixture::Fixture;
    use super::*;
    use serde_json::{json, Value};

    fn user(name: &str, groups: &[&str]) -> Identity {
        Identity::new(name, "", groups.iter().map(|g| g.to_string()))
    }

    fn get(resource: &str, name: &str, namespace: &str) -> Attributes {
        verb("get", resource, name, namespace)
    }

    fn verb(verb: &str, resource: &str, name: &str, namespace: &str) -> Attributes {
        Attributes::Resource(ResourceAttributes {
            verb: verb.into(),
            resource: resource.into(),
            name: name.into(),
            namespace: namespace.into(),
            ..ResourceAttributes::default()
        })
    }

    fn path(path: &str) -> Attributes {
        Attributes::NonResource(NonResourceAttributes { verb: "get".into(), path: path.into() })
    }

    fn cluster_role_binding(name: &str, user: &str, role: &str) -> Value {
        json!({"kind": "ClusterRoleBinding", "metadata": {"name": name},
               "subjects": [{"kind": "User", "name": user}], "roleRef": {"kind": "ClusterRole", "name": role}})
    }

    fn role_binding(name: &str, namespace: &str, user: &str, kind: &str, role: &str) -> Value {
        json!({"kind": "RoleBinding", "metadata": {"name": name, "namespace": namespace},
               "subjects": [{"kind": "User", "name": user}], "roleRef": {"kind": kind, "name": role}})
    }

    #[test]
    fn decisions_follow_masters_owner_access_then_rbac() {
        let fixture = Fixture::new(&[
            cluster_role_binding("bob-access", "bob", "system:kcp:workspace:access"),
            role_binding("bob-view", "default", "bob", "ClusterRole", "view"),
            cluster_role_binding("carol-access", "carol", "system:kcp:workspace:access"),
            json!({"kind": "Role", "metadata": {"name": "only-a", "namespace": "default"},
                   "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}]}),
            role_binding("carol-a", "default", "carol", "Role", "only-a"),
            // Namespaced bindings cannot grant workspace access.
            role_binding("dave-admin", "default", "dave", "ClusterRole", "cluster-admin"),
        ]);
        let owner = Owner { username: "olga".into(), ..Owner::default() };
        let allowed_rbac = |reason: &str| Decision::Allowed(Allowance::Rbac(reason.into()));
        let cases = [
            (user("root", &["system:masters"]), get("secrets", "s", "x"), Decision::Allowed(Allowance::Masters)),
            (user("olga", &[]), verb("delete", "namespaces", "x", "x"), Decision::Allowed(Allowance::Owner)),
            (user("alice", &[]), get("configmaps", "a", "default"), Decision::Denied(Denial::NoWorkspaceAccess)),
            (user("alice", &[]), path("/api"), Decision::Denied(Denial::NoWorkspaceAccess)),
            (user("dave", &[]), get("configmaps", "a", "default"), Decision::Denied(Denial::NoWorkspaceAccess)),
            (
                user("bob", &[]),
                get("configmaps", "a", "default"),
                allowed_rbac(r#"RBAC: allowed by RoleBinding "bob-view/default" of ClusterRole "view" to User "bob""#),
            ),
            (
                user("bob", &[]),
                verb("list", "configmaps", "", "default"),
                Decision::Allowed(Allowance::Rbac(String::new())),
            ),
            (user("bob", &[]), verb("create", "configmaps", "", "default"), Decision::Denied(Denial::NoRule)),
            (user("bob", &[]), get("configmaps", "a", "other"), Decision::Denied(Denial::NoRule)),
            (user("bob", &[]), get("secrets", "a", "default"), Decision::Denied(Denial::NoRule)),
            (
                user("bob", &[]),
                path("/apis/apps/v1"),
                allowed_rbac(
                    r#"RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated""#,
                ),
            ),
            (user("bob", &[]), path("/metrics"), Decision::Denied(Denial::NoRule)),
            (user("carol", &[]), get("configmaps", "a", "default"), Decision::Allowed(Allowance::Rbac(String::new()))),
            (user("carol", &[]), get("configmaps", "b", "default"), Decision::Denied(Denial::NoRule)),
            (user("carol", &[]), verb("list", "configmaps", "", "default"), Decision::Denied(Denial::NoRule)),
        ];
        for (identity, attributes, expected) in cases {
            let got = decide(&fixture, Some(&owner), &identity, &attributes).unwrap();
            match (&got, &expected) {
                // An empty expected reason means "allowed by RBAC, whichever binding".
                (Decision::Allowed(Allowance::Rbac(_)), Decision::Allowed(Allowance::Rbac(want)))
                    if want.is_empty() => {}
                _ => assert_eq!(got, expected, "{} {attributes:?}", identity.user),
            }
        }
    }

    #[test]
    fn rules_are_cluster_admin_for_owners_and_granted_ones_for_others() {
        let fixture = Fixture::new(&[
            role_binding("view", "default", "bob", "ClusterRole", "view"),
            role_binding("gone", "default", "bob", "Role", "missing"),
        ]);
        let owner = Owner { username: "olga".into(), ..Owner::default() };
        let olga = rules_for(&fixture, Some(&owner), &user("olga", &[]), "default").unwrap();
        assert_eq!(olga.rules, bootstrap::cluster_admin_rules());
        let bob = rules_for(&fixture, Some(&owner), &user("bob", &[]), "default").unwrap();
        assert!(bob.rules.iter().any(|r| r.resources.contains(&"configmaps".to_string())));
        assert!(bob.rules.iter().any(|r| r.non_resource_urls.contains(&"/api".to_string())));
        assert_eq!(bob.errors.len(), 1);
        let cluster_wide = rules_for(&fixture, None, &user("bob", &[]), "").unwrap();
        assert!(!cluster_wide.rules.iter().any(|r| r.resources.contains(&"configmaps".to_string())));
    }
}
