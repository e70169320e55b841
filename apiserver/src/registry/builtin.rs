//! The built-in resources every logical cluster serves: one row each, with kube's names,
//! short names, printer columns and schema keys.

use super::strategy;
use super::{Cell, Column, NameRule, ResourceType};

pub fn col(name: &str, kind: &str, description: &str, cell: Cell) -> Column {
    Column {
        name: name.into(),
        kind: kind.into(),
        format: String::new(),
        priority: 0,
        description: description.into(),
        cell,
    }
}

pub fn wide(name: &str, description: &str, cell: Cell) -> Column {
    Column { priority: 1, ..col(name, "string", description, cell) }
}

const CREATION_TIMESTAMP: &str =
    "CreationTimestamp is a timestamp representing the server time when this object was created.";

/// The AGE column every resource without other columns shows.
pub fn age_column() -> Column {
    col("Age", "string", CREATION_TIMESTAMP, Cell::Age)
}

fn created_at_column() -> Column {
    col("Created At", "date", CREATION_TIMESTAMP, Cell::CreatedAt)
}

fn event_columns() -> Vec<Column> {
    vec![
        col(
            "Last Seen",
            "string",
            "Time since the event was last observed.",
            Cell::AgeOf(&["/lastTimestamp", "/deprecatedLastTimestamp", "/eventTime", "/metadata/creationTimestamp"]),
        ),
        col("Type", "string", "Type of this event (Normal, Warning).", Cell::Pointer("/type")),
        col("Reason", "string", "Why the action was taken.", Cell::Pointer("/reason")),
        col("Object", "string", "The object this event is about.", Cell::LowerKindSlashName("/involvedObject")),
        col(
            "Message",
            "string",
            "A human-readable description of the status of this operation.",
            Cell::Pointer("/message"),
        ),
    ]
}

/// The columns of events.k8s.io/v1 Events, read from their field names.
fn events_v1_columns() -> Vec<Column> {
    vec![
        col(
            "Last Seen",
            "string",
            "Time since the event was last observed.",
            Cell::AgeOf(&[
                "/deprecatedLastTimestamp",
                "/series/lastObservedTime",
                "/eventTime",
                "/metadata/creationTimestamp",
            ]),
        ),
        col("Type", "string", "Type of this event (Normal, Warning).", Cell::Pointer("/type")),
        col("Reason", "string", "Why the action was taken.", Cell::Pointer("/reason")),
        col("Object", "string", "The object this event is about.", Cell::LowerKindSlashName("/regarding")),
        col("Note", "string", "A human-readable description of the status of this operation.", Cell::Pointer("/note")),
    ]
}

fn binding_columns() -> Vec<Column> {
    vec![
        col("Role", "string", "RoleRef references the role bound.", Cell::KindSlashName("/roleRef")),
        age_column(),
        wide("Users", "Users bound.", Cell::SubjectsOfKind("User")),
        wide("Groups", "Groups bound.", Cell::SubjectsOfKind("Group")),
        wide("ServiceAccounts", "Service accounts bound.", Cell::SubjectsOfKind("ServiceAccount")),
    ]
}

/// A built-in resource row with the common defaults filled in.
pub fn builtin(
    group: &str,
    version: &str,
    resource: &str,
    singular: &str,
    kind: &str,
    namespaced: bool,
    schema_name: &str,
) -> ResourceType {
    ResourceType {
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        singular: singular.into(),
        kind: kind.into(),
        short_names: Vec::new(),
        categories: Vec::new(),
        namespaced,
        subresources: Vec::new(),
        names: NameRule::Subdomain,
        strategy: strategy::generic(),
        return_deleted_object: false,
        columns: vec![age_column()],
        schema_name: schema_name.into(),
        storage_group: group.into(),
        custom: None,
        scale: None,
    }
}

/// An authorization.k8s.io/v1 review: a create-only question, answered and never stored
/// (authorization gives it its strategy).
fn review(resource: &str, kind: &str, namespaced: bool) -> ResourceType {
    let schema_name = format!("io.k8s.api.authorization.v1.{kind}");
    let singular = resource.trim_end_matches('s');
    builtin("authorization.k8s.io", "v1", resource, singular, kind, namespaced, &schema_name)
}

pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The built-in resources every logical cluster serves.
pub fn builtin_resources() -> Vec<ResourceType> {
    const RBAC: &str = "rbac.authorization.k8s.io";
    vec![
        ResourceType {
            short_names: strings(&["ns"]),
            subresources: strings(&["finalize", "status"]),
            names: NameRule::Label,
            return_deleted_object: true,
            columns: vec![
                col("Status", "string", "The status of the namespace", Cell::Pointer("/status/phase")),
                age_column(),
            ],
            ..builtin("", "v1", "namespaces", "namespace", "Namespace", false, "io.k8s.api.core.v1.Namespace")
        },
        ResourceType {
            short_names: strings(&["cm"]),
            columns: vec![
                col("Data", "integer", "Number of keys in the config map.", Cell::CountKeys(&["/data", "/binaryData"])),
                age_column(),
            ],
            ..builtin("", "v1", "configmaps", "configmap", "ConfigMap", true, "io.k8s.api.core.v1.ConfigMap")
        },
        ResourceType {
            columns: vec![
                col("Type", "string", "The type of the secret", Cell::Pointer("/type")),
                col("Data", "integer", "Number of keys in the secret.", Cell::CountKeys(&["/data"])),
                age_column(),
            ],
            ..builtin("", "v1", "secrets", "secret", "Secret", true, "io.k8s.api.core.v1.Secret")
        },
        ResourceType {
            short_names: strings(&["sa"]),
            columns: vec![
                col("Secrets", "integer", "Number of secrets referenced.", Cell::CountItems("/secrets")),
                age_column(),
            ],
            ..builtin(
                "",
                "v1",
                "serviceaccounts",
                "serviceaccount",
                "ServiceAccount",
                true,
                "io.k8s.api.core.v1.ServiceAccount",
            )
        },
        ResourceType {
            short_names: strings(&["ev"]),
            columns: event_columns(),
            ..builtin("", "v1", "events", "event", "Event", true, "io.k8s.api.core.v1.Event")
        },
        ResourceType {
            short_names: strings(&["ev"]),
            columns: events_v1_columns(),
            // One stored object with core/v1 Events, as in kube.
            storage_group: String::new(),
            ..builtin("events.k8s.io", "v1", "events", "event", "Event", true, "io.k8s.api.events.v1.Event")
        },
        ResourceType {
            columns: vec![
                col("Holder", "string", "The holder of the lease.", Cell::Pointer("/spec/holderIdentity")),
                age_column(),
            ],
            ..builtin("coordination.k8s.io", "v1", "leases", "lease", "Lease", true, "io.k8s.api.coordination.v1.Lease")
        },
        ResourceType {
            names: NameRule::PathSegment,
            columns: vec![created_at_column()],
            ..builtin(RBAC, "v1", "roles", "role", "Role", true, "io.k8s.api.rbac.v1.Role")
        },
        ResourceType {
            names: NameRule::PathSegment,
            columns: binding_columns(),
            ..builtin(RBAC, "v1", "rolebindings", "rolebinding", "RoleBinding", true, "io.k8s.api.rbac.v1.RoleBinding")
        },
        ResourceType {
            names: NameRule::PathSegment,
            columns: vec![created_at_column()],
            ..builtin(RBAC, "v1", "clusterroles", "clusterrole", "ClusterRole", false, "io.k8s.api.rbac.v1.ClusterRole")
        },
        ResourceType {
            names: NameRule::PathSegment,
            columns: binding_columns(),
            ..builtin(
                RBAC,
                "v1",
                "clusterrolebindings",
                "clusterrolebinding",
                "ClusterRoleBinding",
                false,
                "io.k8s.api.rbac.v1.ClusterRoleBinding",
            )
        },
        ResourceType {
            short_names: strings(&["crd", "crds"]),
            categories: strings(&["api-extensions"]),
            subresources: strings(&["status"]),
            return_deleted_object: true,
            columns: vec![created_at_column()],
            ..builtin(
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                "customresourcedefinition",
                "CustomResourceDefinition",
                false,
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
            )
        },
        review("localsubjectaccessreviews", "LocalSubjectAccessReview", true),
        review("selfsubjectaccessreviews", "SelfSubjectAccessReview", false),
        review("selfsubjectrulesreviews", "SelfSubjectRulesReview", false),
        review("subjectaccessreviews", "SubjectAccessReview", false),
        // `kubectl auth whoami`: also a create-only question, answered by authorization.
        builtin(
            "authentication.k8s.io",
            "v1",
            "selfsubjectreviews",
            "selfsubjectreview",
            "SelfSubjectReview",
            false,
            "io.k8s.api.authentication.v1.SelfSubjectReview",
        ),
    ]
}
