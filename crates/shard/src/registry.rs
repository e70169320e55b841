//! The resource registry: one table describes every resource a logical cluster serves.
//!
//! Handlers are generic; whatever differs per resource — scope, kind names, discovery
//! data, printer columns, the storage strategy — is a row here, never a copy of a handler.

use crate::crd::CustomResources;
use protocol::gvr::{GroupResource, GroupVersion};
use std::sync::Arc;

/// How a cell of a `kubectl get` table is computed from an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// `metadata.name`.
    Name,
    /// Time since `metadata.creationTimestamp`, as kube prints it (`5m`, `3d4h`).
    Age,
    /// `metadata.creationTimestamp` as RFC 3339.
    CreatedAt,
    /// A string at a JSON pointer (`/status/phase`).
    Pointer(&'static str),
    /// The number of keys across these object-valued pointers (ConfigMap `DATA`).
    CountKeys(&'static [&'static str]),
    /// The length of the array at a pointer.
    CountItems(&'static str),
    /// `<kind>/<name>` of a reference object at a pointer (`ROLE`).
    KindSlashName(&'static str),
    /// `<kind in lower case>/<name>` of a reference (events' `OBJECT`, as kube prints it).
    LowerKindSlashName(&'static str),
    /// Time since the first present timestamp among these pointers (events' `LAST SEEN`).
    AgeOf(&'static [&'static str]),
    /// Names of subjects of one kind in a binding, comma separated.
    SubjectsOfKind(&'static str),
    /// A custom resource's printer column: a simple JSONPath (`.spec.replicas`,
    /// `.status.conditions[0].type`) and the column's OpenAPI type.
    JsonPath(String),
}

/// One printer column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Header, as kubectl shows it upper-cased.
    pub name: String,
    /// OpenAPI type of the cell: `string`, `integer`, `date`.
    pub kind: String,
    /// `name` for the name column, else empty.
    pub format: String,
    /// 0 = always shown; 1 = only with `-o wide`.
    pub priority: i32,
    /// What the column shows.
    pub description: String,
    /// How to compute it.
    pub cell: Cell,
}

/// Resource-specific storage behaviour, looked up by the generic handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Plain objects.
    Generic,
    /// Namespaces: phase, `kubernetes` finalizer, Terminating on delete.
    Namespace,
    /// Secrets: `stringData` folded into base64 `data`, default type.
    Secret,
    /// The logical cluster's own `LogicalCluster` object: creating it brings the cluster to life.
    LogicalCluster,
    /// CustomResourceDefinitions.
    CustomResourceDefinition,
    /// Workspaces: a child logical cluster, scheduled onto a shard by a controller.
    Workspace,
    /// Objects of a CustomResourceDefinition: schema defaulting and validation.
    CustomResource,
}

/// How object names of a resource are validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// RFC 1123 subdomain (most resources).
    Subdomain,
    /// RFC 1123 label (namespaces).
    Label,
    /// Any path segment: not `.`/`..`, no `/` or `%` (RBAC objects).
    PathSegment,
}

/// One served resource in one group-version.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceType {
    /// API group, empty for core.
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural name.
    pub resource: String,
    /// Singular name.
    pub singular: String,
    /// Kind.
    pub kind: String,
    /// Short names for kubectl.
    pub short_names: Vec<String>,
    /// Discovery categories (`all`).
    pub categories: Vec<String>,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Subresources served (`status`, `finalize`, `scale`).
    pub subresources: Vec<String>,
    /// How names are validated.
    pub names: NameRule,
    /// Storage behaviour.
    pub strategy: Strategy,
    /// Whether a completed delete answers with the object (true) or a success Status.
    pub return_deleted_object: bool,
    /// Printer columns after NAME (which always comes first).
    pub columns: Vec<Column>,
    /// OpenAPI components key of the kind's schema.
    pub schema_name: String,
    /// Storage group-resource shared by all versions of the resource (events live in two
    /// groups but are one resource in kube; we keep them separate and say so here).
    pub storage_group: String,
    /// What a CustomResourceDefinition says about this version; `None` for built-ins.
    pub custom: Option<Arc<crate::crd::CustomVersion>>,
}

/// The verbs every built-in resource supports, in discovery order.
pub const VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

impl ResourceType {
    /// Group and resource.
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(self.group.as_str(), self.resource.as_str())
    }

    /// Group and version.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group.as_str(), self.version.as_str())
    }

    /// `apiVersion` of objects of this resource.
    pub fn api_version(&self) -> String {
        self.group_version().api_version()
    }

    /// The kind of a list of these objects.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// The storage key prefix of this resource in one logical cluster (or in every cluster
    /// when `cluster` is `None`); see [`crate::objects`] for the full layout.
    pub fn key_prefix(&self, cluster: Option<&str>) -> String {
        let group = if self.storage_group.is_empty() { "core" } else { self.storage_group.as_str() };
        match cluster {
            Some(cluster) => format!("{group}/{}/{cluster}/", self.resource),
            None => format!("{group}/{}/", self.resource),
        }
    }

    /// The verbs the resource serves, in discovery order: namespaces cannot be deleted as
    /// a collection (kube's namespace storage has no deletecollection either).
    pub fn verbs(&self) -> &'static [&'static str] {
        const NAMESPACE_VERBS: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];
        match self.strategy {
            Strategy::Namespace => NAMESPACE_VERBS,
            _ => VERBS,
        }
    }

    /// The OpenAPI schema objects of this resource are checked against: a custom
    /// resource's own (borrowed: CRD schemas can be large), else a reference into the
    /// built-in components.
    pub fn schema_root(&self) -> std::borrow::Cow<'_, serde_json::Value> {
        match &self.custom {
            Some(custom) => std::borrow::Cow::Borrowed(&custom.schema),
            None => std::borrow::Cow::Owned(protocol::openapi::schema_ref(&self.schema_name)),
        }
    }

    /// Whether this row is `group/version/resource`.
    pub fn is(&self, group: &str, version: &str, resource: &str) -> bool {
        self.resource == resource && self.group == group && self.version == version
    }

    /// Whether a subresource is served.
    pub fn has_subresource(&self, sub: &str) -> bool {
        self.subresources.iter().any(|s| s == sub)
    }
}

fn col(name: &str, kind: &str, description: &str, cell: Cell) -> Column {
    Column {
        name: name.into(),
        kind: kind.into(),
        format: String::new(),
        priority: 0,
        description: description.into(),
        cell,
    }
}

fn wide(name: &str, description: &str, cell: Cell) -> Column {
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
fn builtin(
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
        strategy: Strategy::Generic,
        return_deleted_object: false,
        columns: vec![age_column()],
        schema_name: schema_name.into(),
        storage_group: group.into(),
        custom: None,
    }
}

fn strings(items: &[&str]) -> Vec<String> {
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
            strategy: Strategy::Namespace,
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
            strategy: Strategy::Secret,
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
            columns: event_columns(),
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
            strategy: Strategy::CustomResourceDefinition,
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
        ResourceType {
            subresources: strings(&["status"]),
            strategy: Strategy::LogicalCluster,
            return_deleted_object: true,
            columns: vec![
                col("Phase", "string", "The current phase of the logical cluster.", Cell::Pointer("/status/phase")),
                col("URL", "string", "The URL of the logical cluster.", Cell::Pointer("/status/URL")),
                age_column(),
            ],
            ..builtin(
                "core.kcp.io",
                "v1alpha1",
                "logicalclusters",
                "logicalcluster",
                "LogicalCluster",
                false,
                "io.kcp.core.v1alpha1.LogicalCluster",
            )
        },
        ResourceType {
            short_names: strings(&["ws"]),
            categories: strings(&["kcp"]),
            subresources: strings(&["status"]),
            names: NameRule::Label,
            strategy: Strategy::Workspace,
            return_deleted_object: true,
            columns: vec![
                col("Type", "string", "Type of the workspace.", Cell::Pointer("/spec/type/name")),
                col("Phase", "string", "The current phase of the workspace.", Cell::Pointer("/status/phase")),
                col("URL", "string", "URL to access the workspace.", Cell::Pointer("/spec/URL")),
                age_column(),
            ],
            ..builtin(
                "tenancy.kcp.io",
                "v1alpha1",
                "workspaces",
                "workspace",
                "Workspace",
                false,
                "io.kcp.tenancy.v1alpha1.Workspace",
            )
        },
        ResourceType {
            categories: strings(&["kcp"]),
            subresources: strings(&["status"]),
            names: NameRule::Label,
            ..builtin(
                "tenancy.kcp.io",
                "v1alpha1",
                "workspacetypes",
                "workspacetype",
                "WorkspaceType",
                false,
                "io.kcp.tenancy.v1alpha1.WorkspaceType",
            )
        },
        ResourceType {
            categories: strings(&["kcp"]),
            subresources: strings(&["status"]),
            columns: vec![
                col("URL", "string", "Base URL of the shard.", Cell::Pointer("/spec/baseURL")),
                col(
                    "External URL",
                    "string",
                    "URL clients use to reach the shard.",
                    Cell::Pointer("/spec/externalURL"),
                ),
                age_column(),
            ],
            ..builtin("core.kcp.io", "v1alpha1", "shards", "shard", "Shard", false, "io.kcp.core.v1alpha1.Shard")
        },
    ]
}

/// Looks resources up by group-version and plural name: the built-in table, shared by
/// every logical cluster, and each cluster's custom resources.
#[derive(Debug)]
pub struct Registry {
    all: Vec<Arc<ResourceType>>,
    custom: CustomResources,
}

impl Registry {
    /// A registry of the built-in resources.
    pub fn builtin() -> Self {
        Self::from_resources(builtin_resources())
    }

    /// A registry of the given rows.
    pub fn from_resources(resources: Vec<ResourceType>) -> Self {
        Registry { all: resources.into_iter().map(Arc::new).collect(), custom: CustomResources::default() }
    }

    /// The built-in resource at `group/version/resource`. Several lookups happen per
    /// request, so this compares borrowed strings over the (small) table instead of
    /// building owned map keys.
    pub fn get(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceType>> {
        self.all.iter().find(|r| r.is(group, version, resource)).cloned()
    }

    /// The resource at `group/version/resource` in `cluster` (`None`: across all
    /// clusters): a built-in one, else one a CRD of the cluster defines. Built-ins win, as
    /// in kube, and CRDs that would shadow one are refused.
    pub fn lookup(
        &self,
        cluster: Option<&str>,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<ResourceType>> {
        self.get(group, version, resource).or_else(|| match cluster {
            Some(cluster) => self.custom.get(cluster, group, version, resource),
            None => self.custom.get_any(group, version, resource),
        })
    }

    /// Whether a built-in resource of any version is `group/resource`.
    pub fn is_builtin(&self, group: &str, resource: &str) -> bool {
        self.all.iter().any(|r| r.group == group && r.resource == resource)
    }

    /// The custom resources of every cluster.
    pub fn custom(&self) -> &CustomResources {
        &self.custom
    }

    /// Everything `cluster` serves: the built-ins, then its custom resources.
    pub fn served(&self, cluster: &str) -> Vec<Arc<ResourceType>> {
        let mut rows = self.all.clone();
        rows.extend(self.custom.of_cluster(cluster));
        rows
    }

    /// Whether `cluster` serves a resource of this group and kind (kube's REST mapping of
    /// an ownerReference).
    pub fn serves_kind(&self, cluster: &str, group: &str, kind: &str) -> bool {
        self.resource_for_kind(cluster, group, kind).is_some()
    }

    /// The resource `cluster` serves objects of this group and kind through.
    pub fn resource_for_kind(&self, cluster: &str, group: &str, kind: &str) -> Option<Arc<ResourceType>> {
        let matches = |r: &&Arc<ResourceType>| r.group == group && r.kind == kind;
        match self.all.iter().find(matches) {
            Some(rt) => Some(rt.clone()),
            None => self.custom.of_cluster(cluster).iter().find(matches).cloned(),
        }
    }

    /// One row per stored resource of `cluster`: the built-ins, then one per CRD whether
    /// or not it serves any version; what deleting everything in a namespace or cluster
    /// walks.
    pub fn stored(&self, cluster: &str) -> Vec<Arc<ResourceType>> {
        let mut rows = self.all.clone();
        rows.extend(self.custom.storage_rows(cluster));
        rows
    }

    /// A resource the shard itself depends on; the built-in table always has it.
    fn required(&self, group: &str, resource: &str) -> Arc<ResourceType> {
        self.all
            .iter()
            .find(|r| r.resource == resource && r.group == group)
            .cloned()
            .unwrap_or_else(|| panic!("built-in resource {resource}.{group} missing from the registry"))
    }

    /// `namespaces`.
    pub fn namespaces(&self) -> Arc<ResourceType> {
        self.required("", "namespaces")
    }

    /// `customresourcedefinitions.apiextensions.k8s.io`.
    pub fn custom_resource_definitions(&self) -> Arc<ResourceType> {
        self.required("apiextensions.k8s.io", "customresourcedefinitions")
    }

    /// `logicalclusters.core.kcp.io`.
    pub fn logical_clusters(&self) -> Arc<ResourceType> {
        self.required("core.kcp.io", "logicalclusters")
    }

    /// `workspaces.tenancy.kcp.io`.
    pub fn workspaces(&self) -> Arc<ResourceType> {
        self.required("tenancy.kcp.io", "workspaces")
    }

    /// `workspacetypes.tenancy.kcp.io`.
    pub fn workspace_types(&self) -> Arc<ResourceType> {
        self.required("tenancy.kcp.io", "workspacetypes")
    }

    /// `shards.core.kcp.io`.
    pub fn shards(&self) -> Arc<ResourceType> {
        self.required("core.kcp.io", "shards")
    }

    /// Every built-in resource.
    pub fn all(&self) -> &[Arc<ResourceType>] {
        &self.all
    }
}

/// Served group-versions of `rows`, grouped by group in discovery order (core first,
/// then built-in groups, then custom ones).
pub fn groups(rows: &[Arc<ResourceType>]) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for r in rows {
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) if !versions.iter().any(|v| *v == r.version) => versions.push(r.version.clone()),
            Some(_) => {}
            None => groups.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    groups
}

/// The rows of one group-version.
pub fn resources_of(rows: &[Arc<ResourceType>], group: &str, version: &str) -> Vec<Arc<ResourceType>> {
    rows.iter().filter(|r| r.group == group && r.version == version).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        let registry = Registry::builtin();
        let mut seen = std::collections::HashSet::new();
        for r in registry.all() {
            assert!(seen.insert((&r.group, &r.version, &r.resource)), "duplicate row {}", r.resource);
            assert!(r.resource.ends_with('s'), "{}: plural names", r.resource);
            assert!(!r.schema_name.is_empty());
            assert!(r.key_prefix(Some("c")).ends_with("/c/"));
        }
        assert_eq!(groups(registry.all())[0].0, "", "core group first");
        assert!(registry.get("", "v1", "configmaps").is_some_and(|r| r.namespaced));
        assert!(registry.get("", "v1", "nope").is_none());
    }
}
