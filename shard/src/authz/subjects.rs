//! Whether a binding's subject is the caller — kube's `appliesToUser` — and how kube
//! names a subject in its reasons. Pure and table-tested.

use super::policy::Subject;
use security::authn::Identity;

/// The user-name prefix of service accounts: `system:serviceaccount:<namespace>:<name>`.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// Whether `subject`, in a binding in `binding_namespace` (empty for ClusterRoleBindings),
/// is `identity`. Users match by name, groups by membership, and service accounts by their
/// user name, their namespace defaulting to the binding's (as in kube, so a RoleBinding
/// may name a local service account without a namespace). The groups service accounts
/// carry (`system:serviceaccounts`, `system:serviceaccounts:<ns>`) are matched by Group
/// subjects like any group.
pub fn applies_to(subject: &Subject, identity: &Identity, binding_namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => identity.user == subject.name,
        "Group" => identity.groups.contains(&subject.name),
        "ServiceAccount" => {
            let namespace = if subject.namespace.is_empty() { binding_namespace } else { &subject.namespace };
            !namespace.is_empty() && is_service_account(&identity.user, namespace, &subject.name)
        }
        _ => false,
    }
}

fn is_service_account(user: &str, namespace: &str, name: &str) -> bool {
    user.strip_prefix(SERVICE_ACCOUNT_PREFIX)
        .and_then(|rest| rest.strip_prefix(namespace))
        .and_then(|rest| rest.strip_prefix(':'))
        .is_some_and(|rest| rest == name)
}

/// A subject as kube's reasons print it: `User "alice"`, `ServiceAccount "ns/name"`.
pub fn describe(subject: &Subject, binding_namespace: &str) -> String {
    match subject.kind.as_str() {
        "ServiceAccount" => {
            let namespace = if subject.namespace.is_empty() { binding_namespace } else { &subject.namespace };
            format!("ServiceAccount \"{}/{}\"", namespace, subject.name)
        }
        kind => format!("{kind} {:?}", subject.name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(kind: &str, name: &str, namespace: &str) -> Subject {
        Subject { kind: kind.into(), name: name.into(), namespace: namespace.into() }
    }

    fn identity(user: &str, groups: &[&str]) -> Identity {
        Identity::new(user, "", groups.iter().map(|g| g.to_string()))
    }

    #[test]
    fn subjects_match_like_kube() {
        let alice = identity("alice", &["dev"]);
        let robot =
            identity("system:serviceaccount:ci:robot", &["system:serviceaccounts", "system:serviceaccounts:ci"]);
        let cases = [
            (subject("User", "alice", ""), &alice, "", true),
            (subject("User", "bob", ""), &alice, "", false),
            (subject("Group", "dev", ""), &alice, "", true),
            (subject("Group", "system:authenticated", ""), &alice, "", true),
            (subject("Group", "system:unauthenticated", ""), &alice, "", false),
            (subject("Group", "alice", ""), &alice, "", false),
            (subject("Kind", "alice", ""), &alice, "", false),
            (subject("ServiceAccount", "robot", "ci"), &robot, "", true),
            (subject("ServiceAccount", "robot", ""), &robot, "ci", true),
            (subject("ServiceAccount", "robot", ""), &robot, "", false),
            (subject("ServiceAccount", "robot", ""), &robot, "other", false),
            (subject("ServiceAccount", "rob", "ci"), &robot, "", false),
            (subject("ServiceAccount", "ci:robot", ""), &identity("system:serviceaccount:ci:robot", &[]), "", false),
            (subject("Group", "system:serviceaccounts:ci", ""), &robot, "", true),
            (subject("User", "system:serviceaccount:ci:robot", ""), &robot, "", true),
        ];
        for (subject, identity, namespace, expected) in cases {
            assert_eq!(applies_to(&subject, identity, namespace), expected, "{subject:?} in {namespace:?}");
        }
    }

    #[test]
    fn subjects_are_described_like_kube() {
        assert_eq!(describe(&subject("User", "alice", ""), ""), r#"User "alice""#);
        assert_eq!(describe(&subject("Group", "g", ""), ""), r#"Group "g""#);
        assert_eq!(describe(&subject("ServiceAccount", "r", ""), "ci"), r#"ServiceAccount "ci/r""#);
    }
}
