//! Validation rules of individual built-in kinds that kube enforces beyond metadata:
//! RBAC rules and bindings, and leases. Pure: (field, message) causes for a 422.

use serde_json::Value;

/// The causes `object` of built-in `kind` (in API group `group`) violates.
pub fn validate(group: &str, kind: &str, object: &Value) -> Vec<(String, String)> {
    let mut causes = Vec::new();
    match (group, kind) {
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => validate_rules(object, &mut causes),
        ("rbac.authorization.k8s.io", "RoleBinding") => validate_binding(object, &["Role", "ClusterRole"], &mut causes),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => validate_binding(object, &["ClusterRole"], &mut causes),
        ("coordination.k8s.io", "Lease") => validate_lease(object, &mut causes),
        _ => {}
    }
    causes
}

fn texts(value: Option<&Value>) -> Vec<&str> {
    value.and_then(Value::as_array).map(|items| items.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

/// kube's `ValidatePolicyRule`: every rule names verbs, and either resources (with API
/// groups) or non-resource URLs.
fn validate_rules(object: &Value, causes: &mut Vec<(String, String)>) {
    let rules = object.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
    for (i, rule) in rules.iter().enumerate() {
        if texts(rule.get("verbs")).is_empty() {
            causes.push((format!("rules[{i}].verbs"), "Required value: verbs must contain at least one value".into()));
        }
        let urls = texts(rule.get("nonResourceURLs"));
        let resources = texts(rule.get("resources"));
        let groups = rule.get("apiGroups").and_then(Value::as_array);
        if !urls.is_empty() && object.get("kind").and_then(Value::as_str) == Some("Role") {
            causes.push((
                format!("rules[{i}].nonResourceURLs"),
                "Invalid value: namespaced rules cannot apply to non-resource URLs".into(),
            ));
        }
        if urls.is_empty() && !resources.is_empty() && groups.is_none_or(Vec::is_empty) {
            causes.push((
                format!("rules[{i}].apiGroups"),
                "Required value: resource rules must supply at least one api group".into(),
            ));
        }
        if urls.is_empty() && resources.is_empty() && rule.get("resourceNames").is_none() {
            causes.push((
                format!("rules[{i}].resources"),
                "Required value: resource rules must supply at least one resource".into(),
            ));
        }
    }
}

/// kube's binding validation: the roleRef names a role of an allowed kind in the RBAC
/// group, and subjects are users, groups or service accounts with names.
fn validate_binding(object: &Value, role_kinds: &[&str], causes: &mut Vec<(String, String)>) {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    let api_group = text("/roleRef/apiGroup");
    if api_group != "rbac.authorization.k8s.io" {
        causes.push((
            "roleRef.apiGroup".into(),
            format!("Unsupported value: {api_group:?}: supported values: \"rbac.authorization.k8s.io\""),
        ));
    }
    let kind = text("/roleRef/kind");
    if !role_kinds.contains(&kind) {
        let supported: Vec<String> = role_kinds.iter().map(|k| format!("{k:?}")).collect();
        causes.push((
            "roleRef.kind".into(),
            format!("Unsupported value: {kind:?}: supported values: {}", supported.join(", ")),
        ));
    }
    if text("/roleRef/name").is_empty() {
        causes.push(("roleRef.name".into(), "Required value".into()));
    }
    let subjects = object.get("subjects").and_then(Value::as_array).cloned().unwrap_or_default();
    for (i, subject) in subjects.iter().enumerate() {
        let kind = subject.get("kind").and_then(Value::as_str).unwrap_or_default();
        if !matches!(kind, "User" | "Group" | "ServiceAccount") {
            causes.push((
                format!("subjects[{i}].kind"),
                format!("Unsupported value: {kind:?}: supported values: \"ServiceAccount\", \"User\", \"Group\""),
            ));
        }
        if subject.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
            causes.push((format!("subjects[{i}].name"), "Required value".into()));
        }
    }
}

/// kube's lease validation: durations and transitions are positive or absent.
fn validate_lease(object: &Value, causes: &mut Vec<(String, String)>) {
    let number = |field: &str| object.pointer(&format!("/spec/{field}")).and_then(Value::as_i64);
    if let Some(duration) = number("leaseDurationSeconds").filter(|d| *d <= 0) {
        causes.push(("spec.leaseDurationSeconds".into(), format!("Invalid value: {duration}: must be greater than 0")));
    }
    if let Some(transitions) = number("leaseTransitions").filter(|t| *t < 0) {
        causes.push((
            "spec.leaseTransitions".into(),
            format!("Invalid value: {transitions}: must be greater than or equal to 0"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_bindings_and_leases_are_checked() {
        let rbac = "rbac.authorization.k8s.io";
        let cases: Vec<(&str, &str, Value, Vec<&str>)> = vec![
            (rbac, "Role", json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}), vec![]),
            (
                rbac,
                "Role",
                json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": []}]}),
                vec!["rules[0].verbs"],
            ),
            (
                rbac,
                "Role",
                json!({"kind": "Role", "rules": [{"nonResourceURLs": ["/x"], "verbs": ["get"]}]}),
                vec!["rules[0].nonResourceURLs"],
            ),
            (
                rbac,
                "ClusterRole",
                json!({"rules": [{"resources": ["pods"], "verbs": ["get"]}]}),
                vec!["rules[0].apiGroups"],
            ),
            (
                rbac,
                "RoleBinding",
                json!({"roleRef": {"apiGroup": rbac, "kind": "Role", "name": "r"}, "subjects": [{"kind": "User", "name": "u"}]}),
                vec![],
            ),
            (
                rbac,
                "RoleBinding",
                json!({"roleRef": {"apiGroup": rbac, "kind": "Foo", "name": "r"}, "subjects": [{"kind": "Robot", "name": ""}]}),
                vec!["roleRef.kind", "subjects[0].kind", "subjects[0].name"],
            ),
            (
                rbac,
                "ClusterRoleBinding",
                json!({"roleRef": {"apiGroup": rbac, "kind": "Role", "name": "r"}}),
                vec!["roleRef.kind"],
            ),
            (
                "coordination.k8s.io",
                "Lease",
                json!({"spec": {"leaseDurationSeconds": -1}}),
                vec!["spec.leaseDurationSeconds"],
            ),
            ("", "ConfigMap", json!({"data": {}}), vec![]),
        ];
        for (group, kind, object, fields) in cases {
            let got: Vec<String> = validate(group, kind, &object).into_iter().map(|(f, _)| f).collect();
            assert_eq!(got, fields, "{kind} {object}");
        }
    }
}
