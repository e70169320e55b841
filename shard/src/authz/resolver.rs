//! kube's RBAC rule resolution (`VisitRulesFor`): every rule granted to a user through
//! the ClusterRoleBindings of a logical cluster, then through the RoleBindings of the
//! request's namespace, with bootstrap roles and bindings merged in and ClusterRole
//! aggregation followed.
//!
//! Pure apart from the [`PolicySource`] the caller hands in; tests use an in-memory one.

use super::bootstrap;
use super::policy::{Binding, PolicyRule, Role, Subject, RBAC_GROUP};
use super::subjects;
use security::authn::Identity;
use std::ops::ControlFlow;
use std::sync::Arc;

/// Why the RBAC objects of a logical cluster could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The store failed.
    #[error("read {what}: {source}")]
    Store {
        /// What was being read.
        what: String,
        /// The store's error.
        #[source]
        source: store::StoreError,
    },
    /// More objects than authorization reads per request.
    #[error("more than {max} {what} in the logical cluster; authorization reads at most that many per request")]
    TooMany {
        /// The resource.
        what: &'static str,
        /// The bound.
        max: usize,
    },
}

/// The RBAC objects of one logical cluster. Bootstrap objects are not included: the
/// resolver merges them in.
pub trait PolicySource {
    /// Every ClusterRoleBinding.
    fn cluster_role_bindings(&self) -> Result<Arc<[Binding]>, PolicyError>;
    /// Every RoleBinding in `namespace`.
    fn role_bindings(&self, namespace: &str) -> Result<Arc<[Binding]>, PolicyError>;
    /// The Role `name` in `namespace`.
    fn role(&self, namespace: &str, name: &str) -> Result<Option<Arc<Role>>, PolicyError>;
    /// The ClusterRole `name`.
    fn cluster_role(&self, name: &str) -> Result<Option<Arc<Role>>, PolicyError>;
    /// Every ClusterRole (what aggregation selects from).
    fn cluster_roles(&self) -> Result<Arc<[Arc<Role>]>, PolicyError>;
}

/// Where a visited rule comes from: a binding and the subject in it that is the caller.
#[derive(Debug, Clone, Copy)]
pub struct Grant<'a> {
    /// The binding.
    pub binding: &'a Binding,
    /// The subject that matched.
    pub subject: &'a Subject,
}

impl Grant<'_> {
    /// kube's description, as in `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole
    /// "y" to User "alice"`; a RoleBinding is named `name/namespace`, as kube does.
    pub fn describe(&self) -> String {
        let binding = self.binding;
        let namespace = binding.metadata.namespace.as_str();
        let name = match namespace {
            "" => binding.metadata.name.clone(),
            ns => format!("{}/{ns}", binding.metadata.name),
        };
        format!(
            "{} {name:?} of {} {:?} to {}",
            binding.kind(),
            binding.role_ref.kind,
            binding.role_ref.name,
            subjects::describe(self.subject, namespace)
        )
    }
}

/// What [`visit_rules`] calls for each granted rule; `Break` stops the walk.
pub type Visitor<'v> = dyn FnMut(&Grant<'_>, &PolicyRule) -> ControlFlow<()> + 'v;

/// Whether any cluster-wide rule granted to `identity` satisfies `wanted` (the walk stops
/// at the first).
pub fn any_cluster_rule(
    source: &dyn PolicySource,
    identity: &Identity,
    wanted: impl Fn(&PolicyRule) -> bool,
) -> Result<bool, PolicyError> {
    let mut found = false;
    visit_rules(source, identity, "", &mut |_, rule| {
        found = wanted(rule);
        if found {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    Ok(found)
}

/// Calls `visit` with every rule granted to `identity` in the logical cluster of `source`:
/// through ClusterRoleBindings (stored ones, then bootstrap ones no stored binding of the
/// same name replaces), then, when `namespace` is not empty, through that namespace's
/// RoleBindings. Returns kube's evaluation errors (bindings naming missing roles), which
/// make a rules review incomplete but deny nothing that would otherwise be allowed.
pub fn visit_rules(
    source: &dyn PolicySource,
    identity: &Identity,
    namespace: &str,
    visit: &mut Visitor<'_>,
) -> Result<Vec<String>, PolicyError> {
    let mut errors = Vec::new();
    let stored = source.cluster_role_bindings()?;
    let shadowed = |binding: &&Binding| stored.iter().any(|s| s.metadata.name == binding.metadata.name);
    let bootstrap = bootstrap::cluster_role_bindings().iter().filter(|b| !shadowed(b));
    for binding in stored.iter().chain(bootstrap) {
        if visit_binding(source, identity, binding, visit, &mut errors)?.is_break() {
            return Ok(errors);
        }
    }
    if namespace.is_empty() {
        return Ok(errors);
    }
    for binding in source.role_bindings(namespace)?.iter() {
        if visit_binding(source, identity, binding, visit, &mut errors)?.is_break() {
            break;
        }
    }
    Ok(errors)
}

fn visit_binding(
    source: &dyn PolicySource,
    identity: &Identity,
    binding: &Binding,
    visit: &mut Visitor<'_>,
    errors: &mut Vec<String>,
) -> Result<ControlFlow<()>, PolicyError> {
    let namespace = binding.metadata.namespace.as_str();
    let Some(subject) = binding.subjects.iter().find(|s| subjects::applies_to(s, identity, namespace)) else {
        return Ok(ControlFlow::Continue(()));
    };
    let role_ref = &binding.role_ref;
    let role = match (role_ref.kind.as_str(), namespace) {
        ("ClusterRole", _) => cluster_role(source, &role_ref.name)?,
        ("Role", ns) if !ns.is_empty() => source.role(ns, &role_ref.name)?,
        _ => None,
    };
    let Some(role) = role else {
        errors.push(format!("{}.{RBAC_GROUP} {:?} not found", role_ref.kind.to_ascii_lowercase(), role_ref.name));
        return Ok(ControlFlow::Continue(()));
    };
    let grant = Grant { binding, subject };
    let mut seen = vec![role.metadata.name.clone()];
    visit_role(source, &role, &mut seen, &mut |rule| visit(&grant, rule))
}

/// The rules of a role; an aggregated ClusterRole's are those of the ClusterRoles its
/// selectors match, transitively, each role once (`seen`), which also ends cycles.
fn visit_role(
    source: &dyn PolicySource,
    role: &Role,
    seen: &mut Vec<String>,
    visit: &mut dyn FnMut(&PolicyRule) -> ControlFlow<()>,
) -> Result<ControlFlow<()>, PolicyError> {
    let Some(aggregation) = &role.aggregation_rule else {
        for rule in &role.rules {
            if visit(rule).is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        return Ok(ControlFlow::Continue(()));
    };
    for member in all_cluster_roles(source)? {
        let name = &member.metadata.name;
        if seen.contains(name) || !aggregation.selects(&member.metadata.labels) {
            continue;
        }
        seen.push(name.clone());
        if visit_role(source, &member, seen, visit)?.is_break() {
            return Ok(ControlFlow::Break(()));
        }
    }
    Ok(ControlFlow::Continue(()))
}

/// The ClusterRole `name`: the cluster's own, else the bootstrap one.
fn cluster_role(source: &dyn PolicySource, name: &str) -> Result<Option<Arc<Role>>, PolicyError> {
    Ok(source.cluster_role(name)?.or_else(|| bootstrap::cluster_role(name).cloned()))
}

/// The cluster's ClusterRoles and the bootstrap ones they do not replace.
fn all_cluster_roles(source: &dyn PolicySource) -> Result<Vec<Arc<Role>>, PolicyError> {
    let local = source.cluster_roles()?;
    let shadowed = |role: &&Arc<Role>| local.iter().any(|l| l.metadata.name == role.metadata.name);
    let bootstrap = bootstrap::cluster_roles().iter().filter(|r| !shadowed(r)).cloned();
    Ok(local.iter().cloned().chain(bootstrap).collect())
}

/// An in-memory [`PolicySource`] for tests, built from JSON objects.
#[cfg(test)]
pub mod fixture {
    use super::*;
    use serde_json::Value;

    /// RBAC objects of one logical cluster, held in memory.
    #[derive(Default)]
    pub struct Fixture {
        bindings: Vec<Binding>,
        roles: Vec<Arc<Role>>,
    }

    impl Fixture {
        /// A cluster holding these objects (any of the four kinds, by `kind`).
        pub fn new(objects: &[Value]) -> Fixture {
            let mut fixture = Fixture::default();
            for object in objects {
                match object["kind"].as_str() {
                    Some("RoleBinding" | "ClusterRoleBinding") => {
                        fixture.bindings.push(serde_json::from_value(object.clone()).unwrap())
                    }
                    _ => fixture.roles.push(Arc::new(serde_json::from_value(object.clone()).unwrap())),
                }
            }
            fixture
        }
    }

    impl PolicySource for Fixture {
        fn cluster_role_bindings(&self) -> Result<Arc<[Binding]>, PolicyError> {
            Ok(self.bindings.iter().filter(|b| b.metadata.namespace.is_empty()).cloned().collect())
        }
        fn role_bindings(&self, namespace: &str) -> Result<Arc<[Binding]>, PolicyError> {
            Ok(self.bindings.iter().filter(|b| b.metadata.namespace == namespace).cloned().collect())
        }
        fn role(&self, namespace: &str, name: &str) -> Result<Option<Arc<Role>>, PolicyError> {
            let found = self.roles.iter().find(|r| r.metadata.namespace == namespace && r.metadata.name == name);
            Ok(found.cloned())
        }
        fn cluster_role(&self, name: &str) -> Result<Option<Arc<Role>>, PolicyError> {
            self.role("", name)
        }
        fn cluster_roles(&self) -> Result<Arc<[Arc<Role>]>, PolicyError> {
            Ok(self.roles.iter().filter(|r| r.metadata.namespace.is_empty()).cloned().collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::Fixture;
    use super::*;
    use serde_json::json;

    fn alice() -> Identity {
        Identity::new("alice", "", ["dev".to_string()])
    }

    /// Every (grant description, rule) visited, rules as `verbs resources urls`.
    fn visited(fixture: &Fixture, namespace: &str) -> (Vec<String>, Vec<String>) {
        let mut seen = Vec::new();
        let errors = visit_rules(fixture, &alice(), namespace, &mut |grant, rule| {
            seen.push(format!(
                "{} | {} {} {}",
                grant.describe(),
                rule.verbs.join(","),
                rule.resources.join(","),
                rule.non_resource_urls.join(",")
            ));
            ControlFlow::Continue(())
        })
        .unwrap();
        (seen, errors)
    }

    #[test]
    fn bootstrap_bindings_reach_every_authenticated_user() {
        let (seen, errors) = visited(&Fixture::default(), "default");
        assert!(errors.is_empty());
        assert!(seen.iter().any(|s| s.starts_with(
            r#"ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated""#
        )));
        assert!(seen.iter().any(|s| s.contains("create selfsubjectaccessreviews,selfsubjectrulesreviews")));
        assert!(!seen.iter().any(|s| s.contains("configmaps")), "{seen:#?}");
    }

    #[test]
    fn role_bindings_apply_only_in_their_namespace_and_find_their_roles() {
        let fixture = Fixture::new(&[
            json!({"kind": "RoleBinding", "metadata": {"name": "view", "namespace": "default"},
                   "subjects": [{"kind": "User", "name": "alice"}], "roleRef": {"kind": "ClusterRole", "name": "view"}}),
            json!({"kind": "RoleBinding", "metadata": {"name": "local", "namespace": "default"},
                   "subjects": [{"kind": "Group", "name": "dev"}], "roleRef": {"kind": "Role", "name": "cm-writer"}}),
            json!({"kind": "Role", "metadata": {"name": "cm-writer", "namespace": "default"},
                   "rules": [{"verbs": ["create"], "apiGroups": [""], "resources": ["configmaps"]}]}),
            json!({"kind": "RoleBinding", "metadata": {"name": "dangling", "namespace": "default"},
                   "subjects": [{"kind": "User", "name": "alice"}], "roleRef": {"kind": "Role", "name": "gone"}}),
            json!({"kind": "RoleBinding", "metadata": {"name": "other", "namespace": "default"},
                   "subjects": [{"kind": "User", "name": "bob"}], "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"}}),
        ]);
        let (seen, errors) = visited(&fixture, "default");
        assert!(seen.iter().any(|s| s == r#"RoleBinding "view/default" of ClusterRole "view" to User "alice" | get,list,watch configmaps,endpoints,persistentvolumeclaims,persistentvolumeclaims/status,pods,replicationcontrollers,replicationcontrollers/scale,serviceaccounts,services,services/status "#), "{seen:#?}");
        assert!(seen
            .iter()
            .any(|s| s == r#"RoleBinding "local/default" of Role "cm-writer" to Group "dev" | create configmaps "#));
        assert!(!seen.iter().any(|s| s.contains("secrets")), "view shows no secrets");
        assert!(!seen.iter().any(|s| s.contains(r#"ClusterRole "cluster-admin""#)), "bob's binding");
        assert_eq!(errors, vec![r#"role.rbac.authorization.k8s.io "gone" not found"#]);
        let (elsewhere, _) = visited(&fixture, "kube-system");
        assert!(!elsewhere.iter().any(|s| s.contains("configmaps")), "{elsewhere:#?}");
    }

    #[test]
    fn local_objects_replace_bootstrap_ones_and_aggregation_unions() {
        let fixture = Fixture::new(&[
            // A cluster-local `view` replaces the bootstrap one, and only it.
            json!({"kind": "ClusterRole", "metadata": {"name": "view",
                   "labels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
                   "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["only-this"]}]}),
            // Labelled into `edit`, which `admin` aggregates in turn.
            json!({"kind": "ClusterRole", "metadata": {"name": "crontab-editor",
                   "labels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
                   "rules": [{"verbs": ["update"], "apiGroups": ["stable.example.com"], "resources": ["crontabs"]}]}),
            json!({"kind": "ClusterRoleBinding", "metadata": {"name": "admins"},
                   "subjects": [{"kind": "User", "name": "alice"}], "roleRef": {"kind": "ClusterRole", "name": "admin"}}),
            // Replaces the bootstrap binding of the same name: no discovery any more.
            json!({"kind": "ClusterRoleBinding", "metadata": {"name": "system:discovery"},
                   "subjects": [{"kind": "Group", "name": "nobody"}], "roleRef": {"kind": "ClusterRole", "name": "system:discovery"}}),
        ]);
        let (seen, errors) = visited(&fixture, "");
        assert!(errors.is_empty(), "{errors:?}");
        let admin: Vec<&String> = seen.iter().filter(|s| s.contains(r#"ClusterRoleBinding "admins""#)).collect();
        assert!(admin.iter().any(|s| s.ends_with("update crontabs ")), "{admin:#?}");
        assert!(admin.iter().any(|s| s.ends_with("get only-this ")), "{admin:#?}");
        assert!(admin.iter().any(|s| s.contains("rolebindings,roles")), "{admin:#?}");
        assert!(admin.iter().any(|s| s.contains("secrets")), "edit's rules: {admin:#?}");
        assert!(!admin.iter().any(|s| s.contains("configmaps,endpoints")), "bootstrap view replaced: {admin:#?}");
        assert!(!seen.iter().any(|s| s.contains("/api/*")), "discovery binding replaced: {seen:#?}");
    }

    #[test]
    fn aggregation_cycles_end() {
        let fixture = Fixture::new(&[
            json!({"kind": "ClusterRole", "metadata": {"name": "a", "labels": {"x": "a"}},
                   "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "b"}}]}}),
            json!({"kind": "ClusterRole", "metadata": {"name": "b", "labels": {"x": "b"}},
                   "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "a"}}]}}),
            json!({"kind": "ClusterRoleBinding", "metadata": {"name": "ab"},
                   "subjects": [{"kind": "User", "name": "alice"}], "roleRef": {"kind": "ClusterRole", "name": "a"}}),
        ]);
        let (seen, _) = visited(&fixture, "");
        assert!(!seen.iter().any(|s| s.contains(r#""ab""#)));
    }
}
