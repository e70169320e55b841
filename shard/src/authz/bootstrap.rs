//! The bootstrap policy every logical cluster has without storing it, kcp style: kube's
//! default ClusterRoles (`cluster-admin`, `admin`, `edit`, `view` and the `system:` roles
//! behind discovery and self-reviews), kcp's `system:kcp:workspace:access`, and the
//! ClusterRoleBindings that give every authenticated user discovery and self-reviews.
//!
//! Held once per process rather than written into each logical cluster, so that a
//! workspace costs no policy objects (kube and kcp store theirs; a workspace here is
//! meant to cost at most a few KiB). A cluster's own ClusterRole or ClusterRoleBinding of
//! the same name replaces the bootstrap one there (see [`super::resolver`]).
//!
//! `admin`, `edit` and `view` aggregate as in kube: `admin` ⊇ `edit` ⊇ `view`, each also
//! picking up any ClusterRole of the cluster labelled
//! `rbac.authorization.k8s.io/aggregate-to-<role>: "true"`.

use super::policy::{AggregationRule, Binding, Meta, PolicyRule, Role, RoleRef, Subject};
use security::authn::AUTHENTICATED_GROUP;
use serde_json::json;
use std::sync::{Arc, OnceLock};

/// The group kube gives requests without credentials.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// kcp's ClusterRole granting access to a workspace (verb `access` on `/`).
pub const WORKSPACE_ACCESS_ROLE: &str = "system:kcp:workspace:access";

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
const AGGREGATE_PREFIX: &str = "rbac.authorization.k8s.io/aggregate-to-";

/// The bootstrap ClusterRoles and ClusterRoleBindings.
struct Bootstrap {
    cluster_roles: Vec<Arc<Role>>,
    cluster_role_bindings: Vec<Binding>,
}

fn bootstrap() -> &'static Bootstrap {
    static BOOTSTRAP: OnceLock<Bootstrap> = OnceLock::new();
    BOOTSTRAP
        .get_or_init(|| Bootstrap { cluster_roles: cluster_roles_table(), cluster_role_bindings: bindings_table() })
}

/// Every bootstrap ClusterRole.
pub fn cluster_roles() -> &'static [Arc<Role>] {
    &bootstrap().cluster_roles
}

/// The bootstrap ClusterRole `name`.
pub fn cluster_role(name: &str) -> Option<&'static Arc<Role>> {
    cluster_roles().iter().find(|role| role.metadata.name == name)
}

/// Every bootstrap ClusterRoleBinding.
pub fn cluster_role_bindings() -> &'static [Binding] {
    &bootstrap().cluster_role_bindings
}

/// `cluster-admin`'s rules: what system:masters and workspace owners may do.
pub fn cluster_admin_rules() -> &'static [PolicyRule] {
    &cluster_role("cluster-admin").expect("cluster-admin is a bootstrap role").rules
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// A resource rule.
fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: strings(verbs),
        api_groups: strings(groups),
        resources: strings(resources),
        ..PolicyRule::default()
    }
}

/// A non-resource rule.
fn urls(verbs: &[&str], urls: &[&str]) -> PolicyRule {
    PolicyRule { verbs: strings(verbs), non_resource_urls: strings(urls), ..PolicyRule::default() }
}

fn role(name: &str, labels: &[&str], rules: Vec<PolicyRule>, aggregates: Option<&str>) -> Arc<Role> {
    let mut metadata = Meta { name: name.into(), ..Meta::default() };
    metadata.labels.insert("kubernetes.io/bootstrapping".into(), "rbac-defaults".into());
    for target in labels {
        metadata.labels.insert(format!("{AGGREGATE_PREFIX}{target}"), "true".into());
    }
    let aggregation_rule = aggregates.map(|target| AggregationRule {
        cluster_role_selectors: vec![json!({"matchLabels": {format!("{AGGREGATE_PREFIX}{target}"): "true"}})],
    });
    Arc::new(Role { metadata, rules, aggregation_rule })
}

fn cluster_roles_table() -> Vec<Arc<Role>> {
    const HEALTH_AND_VERSION: &[&str] = &["/healthz", "/livez", "/readyz", "/version", "/version/"];
    let discovery: Vec<&str> = HEALTH_AND_VERSION
        .iter()
        .copied()
        .chain(["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*"])
        .collect();
    vec![
        role("cluster-admin", &[], vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])], None),
        role("admin", &[], Vec::new(), Some("admin")),
        role("edit", &["admin"], Vec::new(), Some("edit")),
        role("view", &["edit"], Vec::new(), Some("view")),
        role("system:aggregate-to-admin", &["admin"], admin_rules(), None),
        role("system:aggregate-to-edit", &["edit"], edit_rules(), None),
        role("system:aggregate-to-view", &["view"], view_rules(), None),
        role("system:discovery", &[], vec![urls(&["get"], &discovery)], None),
        role("system:public-info-viewer", &[], vec![urls(&["get"], HEALTH_AND_VERSION)], None),
        role(
            "system:basic-user",
            &[],
            vec![
                rule(&["create"], &["authorization.k8s.io"], &["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
                rule(&["create"], &["authentication.k8s.io"], &["selfsubjectreviews"]),
            ],
            None,
        ),
        role(WORKSPACE_ACCESS_ROLE, &[], vec![urls(&["access"], &["/"])], None),
    ]
}

/// kube's `system:aggregate-to-view`: reading what is not secret.
fn view_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            READ,
            &[""],
            &[
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
            ],
        ),
        rule(
            READ,
            &[""],
            &[
                "bindings",
                "events",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status",
            ],
        ),
        // Reading namespaces in a namespace means reading that one namespace.
        rule(READ, &[""], &["namespaces"]),
        rule(READ, &["discovery.k8s.io"], &["endpointslices"]),
        rule(
            READ,
            &["apps"],
            &[
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
            ],
        ),
        rule(READ, &["autoscaling"], &["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
        rule(READ, &["batch"], &["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
        rule(READ, &["policy"], &["poddisruptionbudgets", "poddisruptionbudgets/status"]),
        rule(READ, &["networking.k8s.io"], &["ingresses", "ingresses/status", "networkpolicies"]),
    ]
}

/// kube's `system:aggregate-to-edit`: writing workloads and their configuration, secrets
/// included; no RBAC.
fn edit_rules() -> Vec<PolicyRule> {
    vec![
        rule(READ, &[""], &["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"]),
        rule(&["impersonate"], &[""], &["serviceaccounts"]),
        rule(WRITE, &[""], &["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
        rule(&["create"], &[""], &["pods/eviction", "serviceaccounts/token"]),
        rule(
            WRITE,
            &[""],
            &[
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy",
            ],
        ),
        rule(
            WRITE,
            &["apps"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
            ],
        ),
        rule(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
        rule(WRITE, &["batch"], &["cronjobs", "jobs"]),
        rule(WRITE, &["policy"], &["poddisruptionbudgets"]),
        rule(WRITE, &["networking.k8s.io"], &["ingresses", "networkpolicies"]),
        rule(READ_WRITE, &["coordination.k8s.io"], &["leases"]),
    ]
}

/// kube's `system:aggregate-to-admin`: a namespace's RBAC and local access reviews.
fn admin_rules() -> Vec<PolicyRule> {
    vec![
        rule(&["create"], &["authorization.k8s.io"], &["localsubjectaccessreviews"]),
        rule(READ_WRITE, &["rbac.authorization.k8s.io"], &["rolebindings", "roles"]),
    ]
}

fn bindings_table() -> Vec<Binding> {
    let to_groups = |role: &str, groups: &[&str]| Binding {
        metadata: Meta { name: role.into(), ..Meta::default() },
        subjects: groups
            .iter()
            .map(|g| Subject { kind: "Group".into(), name: g.to_string(), ..Subject::default() })
            .collect(),
        role_ref: RoleRef { kind: "ClusterRole".into(), name: role.into() },
    };
    vec![
        to_groups("system:basic-user", &[AUTHENTICATED_GROUP]),
        to_groups("system:discovery", &[AUTHENTICATED_GROUP]),
        to_groups("system:public-info-viewer", &[AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_roles_are_kube_and_kcp_defaults() {
        let names: Vec<&str> = cluster_roles().iter().map(|r| r.metadata.name.as_str()).collect();
        for name in ["cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user"] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        assert!(names.contains(&"system:public-info-viewer") && names.contains(&WORKSPACE_ACCESS_ROLE));
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "duplicate bootstrap role names");
        for binding in cluster_role_bindings() {
            assert!(cluster_role(&binding.role_ref.name).is_some(), "{binding:?} binds a missing role");
            assert_eq!(binding.metadata.name, binding.role_ref.name);
        }
        assert_eq!(cluster_admin_rules().len(), 2);
    }

    #[test]
    fn aggregation_labels_chain_admin_edit_view() {
        let selects = |aggregating: &str, member: &str| {
            let rule = cluster_role(aggregating).unwrap().aggregation_rule.clone().unwrap();
            rule.selects(&cluster_role(member).unwrap().metadata.labels)
        };
        assert!(selects("admin", "edit"));
        assert!(selects("admin", "system:aggregate-to-admin"));
        assert!(selects("edit", "view"));
        assert!(selects("edit", "system:aggregate-to-edit"));
        assert!(selects("view", "system:aggregate-to-view"));
        assert!(!selects("view", "edit"));
        assert!(!selects("edit", "admin"));
        assert!(!selects("view", "cluster-admin"));
    }
}
