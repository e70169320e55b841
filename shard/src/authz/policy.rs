//! Typed views of the RBAC objects (Role, ClusterRole, RoleBinding, ClusterRoleBinding)
//! holding only the fields that decide anything, decoded straight from stored bytes.

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::collections::BTreeMap;

/// RBAC's API group.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// kube writes absent lists as `null` as often as it leaves them out; both mean empty.
pub(super) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// One rule of a Role or ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// Verbs (`get`, `list`, …, or `*`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub verbs: Vec<String>,
    /// API groups (`""` for core, or `*`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub api_groups: Vec<String>,
    /// Resources (`pods`, `pods/log`, `*/scale`, or `*`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub resources: Vec<String>,
    /// Object names the rule is limited to; empty means any.
    #[serde(default, deserialize_with = "null_as_default")]
    pub resource_names: Vec<String>,
    /// Non-resource paths (`/healthz`, `/apis/*`, or `*`).
    #[serde(default, rename = "nonResourceURLs", deserialize_with = "null_as_default")]
    pub non_resource_urls: Vec<String>,
}

/// The part of ObjectMeta authorization reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Meta {
    /// Object name.
    #[serde(default)]
    pub name: String,
    /// Namespace; empty for cluster-scoped objects.
    #[serde(default)]
    pub namespace: String,
    /// Labels (aggregation selects ClusterRoles by them).
    #[serde(default, deserialize_with = "null_as_default")]
    pub labels: BTreeMap<String, String>,
}

/// A ClusterRole's `aggregationRule`: its rules are the union of the rules of the
/// ClusterRoles these selectors match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AggregationRule {
    /// `metav1.LabelSelector`s, kept as JSON and compiled when used.
    #[serde(default, deserialize_with = "null_as_default")]
    pub cluster_role_selectors: Vec<Value>,
}

impl AggregationRule {
    /// Whether any selector matches `labels`; a malformed selector matches nothing.
    pub fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        self.cluster_role_selectors.iter().any(|selector| {
            protocol::selector::LabelSelector::from_label_selector_json(selector).is_ok_and(|s| s.matches(labels))
        })
    }
}

/// A Role or ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Role {
    /// Name, namespace and labels.
    #[serde(default)]
    pub metadata: Meta,
    /// The rules (for an aggregated ClusterRole, kube's controller overwrites these; the
    /// resolver ignores them and reads the aggregated roles instead).
    #[serde(default, deserialize_with = "null_as_default")]
    pub rules: Vec<PolicyRule>,
    /// ClusterRoles only.
    #[serde(default)]
    pub aggregation_rule: Option<AggregationRule>,
}

/// A subject of a binding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    #[serde(default)]
    pub kind: String,
    /// The user, group or service account name.
    #[serde(default)]
    pub name: String,
    /// A service account's namespace (defaults to a RoleBinding's own).
    #[serde(default)]
    pub namespace: String,
}

/// What a binding grants: a Role (RoleBindings only) or a ClusterRole, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct RoleRef {
    /// `Role` or `ClusterRole`.
    #[serde(default)]
    pub kind: String,
    /// The role's name.
    #[serde(default)]
    pub name: String,
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    /// Name and namespace (empty for ClusterRoleBindings).
    #[serde(default)]
    pub metadata: Meta,
    /// Who is granted.
    #[serde(default, deserialize_with = "null_as_default")]
    pub subjects: Vec<Subject>,
    /// What is granted.
    #[serde(default)]
    pub role_ref: RoleRef,
}

impl Binding {
    /// `ClusterRoleBinding` or `RoleBinding`.
    pub fn kind(&self) -> &'static str {
        if self.metadata.namespace.is_empty() {
            "ClusterRoleBinding"
        } else {
            "RoleBinding"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_decode_with_nulls_and_missing_fields() {
        let role: Role = serde_json::from_value(json!({
            "kind": "ClusterRole",
            "metadata": {"name": "r", "labels": {"a": "b"}, "uid": "ignored"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": null,
                       "nonResourceURLs": null}],
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]},
        }))
        .unwrap();
        assert_eq!(role.rules[0].resources, vec!["pods"]);
        assert!(role.rules[0].resource_names.is_empty());
        assert!(role.aggregation_rule.as_ref().unwrap().selects(&role.metadata.labels));
        assert!(!role.aggregation_rule.unwrap().selects(&BTreeMap::new()));

        let binding: Binding = serde_json::from_value(json!({
            "metadata": {"name": "b", "namespace": "default"},
            "subjects": null,
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"},
        }))
        .unwrap();
        assert!(binding.subjects.is_empty());
        assert_eq!(binding.kind(), "RoleBinding");
        assert_eq!(binding.role_ref.name, "view");
        let empty: Role = serde_json::from_value(json!({"rules": null})).unwrap();
        assert_eq!(empty, Role::default());
    }
}
