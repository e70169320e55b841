//! The resource registry: one table describes every resource a logical cluster serves.
//!
//! Handlers are generic; whatever differs per resource — scope, kind names, discovery
//! data, printer columns, the storage strategy — is a row here, never a copy of a handler.
//! The rows' hooks are [`strategy::Strategy`]; [`Core`] (the store and this table) is
//! what storage and the hooks work on.

mod builtin;
pub mod custom;
pub mod definition;
pub mod strategy;
pub mod virtual_workspace;

pub use builtin::{age_column, builtin, builtin_resources, col, strings, wide};
pub use custom::CustomResources;

use protocol::gvr::{GroupResource, GroupVersion};
use std::sync::Arc;
use store::Store;
use strategy::Strategy;

/// The narrow core that storage and resource strategies work on: the object store and
/// the resource table. It knows nothing of the shard's features, so storage can be run
/// (and unit-tested) on a temporary store without the rest of a shard.
pub struct Core {
    /// The object store.
    pub store: Store,
    /// The served resources, each row with its strategy.
    pub registry: Registry,
    /// The core's own counters.
    pub metrics: crate::metrics::CoreMetrics,
}

impl Core {
    /// A core over `store` serving `registry`'s rows.
    pub fn new(store: Store, registry: Registry) -> Self {
        Core { store, registry, metrics: Default::default() }
    }
}

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
    /// A cell a function computes from the object and the time of the request (a
    /// Deployment's `READY` is `readyReplicas/replicas`, a Service's `PORT(S)` joins its
    /// ports): for built-in columns no pointer expresses.
    Computed(Computed),
    /// A custom resource's printer column: a simple JSONPath (`.spec.replicas`,
    /// `.status.conditions[0].type`) and the column's OpenAPI type.
    JsonPath(String),
}

/// A printer cell's function, compared by name (function addresses are not stable).
#[derive(Clone, Copy)]
pub struct Computed(pub &'static str, pub fn(&serde_json::Value, jiff::Timestamp) -> serde_json::Value);

impl std::fmt::Debug for Computed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Computed({})", self.0)
    }
}

impl PartialEq for Computed {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for Computed {}

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
#[derive(Debug, Clone)]
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
    /// Storage behaviour: what the generic storage asks of this resource.
    pub strategy: Arc<dyn Strategy>,
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
    pub custom: Option<Arc<definition::CustomVersion>>,
    /// Where the `scale` subresource reads and writes replica counts, when it is served.
    pub scale: Option<definition::ScalePaths>,
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
        let identity = self.identity();
        let cluster_len = cluster.map_or(0, |c| c.len() + 1);
        let identity_len = identity.map_or(0, |i| i.len() + 1);
        // Pushed piece by piece: every request builds one or more keys, and `format!`'s
        // machinery cost more than the copying.
        let mut prefix = String::with_capacity(group.len() + self.resource.len() + identity_len + cluster_len + 2);
        prefix.push_str(group);
        prefix.push('/');
        prefix.push_str(&self.resource);
        if let Some(identity) = identity {
            prefix.push(':');
            prefix.push_str(identity);
        }
        prefix.push('/');
        if let Some(cluster) = cluster {
            prefix.push_str(cluster);
            prefix.push('/');
        }
        prefix
    }

    /// The APIExport identity hash a bound resource is stored under.
    pub fn identity(&self) -> Option<&str> {
        self.custom.as_ref().and_then(|c| c.identity.as_deref())
    }

    /// The verbs the resource serves, in discovery order: namespaces cannot be deleted as
    /// a collection (kube's namespace storage has no deletecollection either).
    pub fn verbs(&self) -> &'static [&'static str] {
        self.strategy.verbs()
    }

    /// The OpenAPI schema objects of this resource are checked against: a custom
    /// resource's own (borrowed: CRD schemas can be large), else the built-in component
    /// itself (every write reads it twice), or a reference to it where there is none.
    pub fn schema_root(&self) -> std::borrow::Cow<'_, serde_json::Value> {
        use std::borrow::Cow;
        match &self.custom {
            Some(custom) => Cow::Borrowed(&custom.schema),
            None => match protocol::openapi::builtin_schema(&self.schema_name) {
                Some(component) => Cow::Borrowed(component),
                None => Cow::Owned(protocol::openapi::schema_ref(&self.schema_name)),
            },
        }
    }

    /// Whether objects of this row are stored in another shape than the request's (a CRD's
    /// storage version, events.k8s.io Events stored as core Events).
    pub fn converts(&self) -> bool {
        self.strategy.converts()
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

/// Looks resources up by group-version and plural name: the built-in table, shared by
/// every logical cluster, and each cluster's custom resources.
#[derive(Debug)]
pub struct Registry {
    all: Vec<Arc<ResourceType>>,
    custom: CustomResources,
    sources: Vec<Arc<dyn ResourceSource>>,
    virtual_workspaces: Vec<Arc<dyn virtual_workspace::VirtualWorkspace>>,
    write_admissions: Vec<Arc<dyn virtual_workspace::WriteAdmission>>,
}

/// Resources a feature serves beyond the built-ins and each cluster's CRDs (APIBindings'
/// bound resources): consulted after them, in the order the sources were added. Rows of a
/// source are usually CRD-defined rows the source picks from `custom`.
pub trait ResourceSource: Send + Sync + std::fmt::Debug {
    /// The row of `group/version/resource` this source serves in `cluster`.
    fn lookup(
        &self,
        custom: &CustomResources,
        cluster: &str,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<ResourceType>>;

    /// The row a wildcard request (`/clusters/*`) names `resource:identity` by, if this
    /// source knows the identity; `registry` resolves built-ins an identity may name.
    fn lookup_identity(
        &self,
        registry: &Registry,
        group: &str,
        version: &str,
        resource: &str,
        identity: &str,
    ) -> Option<Arc<ResourceType>>;

    /// Every served row this source gives `cluster`.
    fn served(&self, custom: &CustomResources, cluster: &str) -> Vec<Arc<ResourceType>>;

    /// One row per resource this source stores in `cluster`.
    fn stored(&self, custom: &CustomResources, cluster: &str) -> Vec<Arc<ResourceType>>;

    /// Forgets a logical cluster that is gone.
    fn forget_cluster(&self, cluster: &str);
}

impl Registry {
    /// A registry of the built-in resources.
    pub fn builtin() -> Self {
        Self::from_resources(builtin_resources())
    }

    /// A registry of the given rows.
    pub fn from_resources(resources: Vec<ResourceType>) -> Self {
        Registry {
            all: resources.into_iter().map(Arc::new).collect(),
            custom: CustomResources::default(),
            sources: Vec::new(),
            virtual_workspaces: Vec::new(),
            write_admissions: Vec::new(),
        }
    }

    /// The built-in resource at `group/version/resource`. Several lookups happen per
    /// request, so this compares borrowed strings over the (small) table instead of
    /// building owned map keys.
    pub fn get(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceType>> {
        self.all.iter().find(|r| r.is(group, version, resource)).cloned()
    }

    /// The resource at `group/version/resource` in `cluster` (`None`: across all
    /// clusters): a built-in one, else one a CRD of the cluster defines, else one an
    /// APIBinding of the cluster binds. Built-ins win, as in kube, and CRDs that would
    /// shadow one are refused. Across all clusters, a bound resource is addressed as
    /// `<resource>:<identityHash>` (kcp's wildcard naming), since bindings of different
    /// exports may serve the same group and resource.
    pub fn lookup(
        &self,
        cluster: Option<&str>,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<ResourceType>> {
        self.get(group, version, resource).or_else(|| match cluster {
            Some(cluster) => self.custom.get(cluster, group, version, resource).or_else(|| {
                self.sources.iter().find_map(|s| s.lookup(&self.custom, cluster, group, version, resource))
            }),
            None => match resource.split_once(':') {
                Some((resource, identity)) => {
                    self.sources.iter().find_map(|s| s.lookup_identity(self, group, version, resource, identity))
                }
                None => self.custom.get_any(group, version, resource),
            },
        })
    }

    /// Every served row the sources (APIBindings' bound resources) give `cluster`.
    pub fn source_rows(&self, cluster: &str) -> Vec<Arc<ResourceType>> {
        self.sources.iter().flat_map(|s| s.served(&self.custom, cluster)).collect()
    }

    /// Adds a virtual workspace (at start-up, before the registry is shared).
    pub fn add_virtual_workspace(&mut self, workspace: Arc<dyn virtual_workspace::VirtualWorkspace>) {
        self.virtual_workspaces.push(workspace);
    }

    /// Adds an admission of every ordinary API write (at start-up).
    pub fn add_write_admission(&mut self, admission: Arc<dyn virtual_workspace::WriteAdmission>) {
        self.write_admissions.push(admission);
    }

    /// The admissions of ordinary API writes.
    pub fn write_admissions(&self) -> &[Arc<dyn virtual_workspace::WriteAdmission>] {
        &self.write_admissions
    }

    /// The virtual workspace serving `path`, with the view and the API path it narrows.
    pub fn virtual_workspace<'p>(
        &self,
        path: &'p str,
    ) -> Option<(&Arc<dyn virtual_workspace::VirtualWorkspace>, &'p str, &'p str)> {
        self.virtual_workspaces.iter().find_map(|workspace| {
            let (view, api) = virtual_workspace::split(workspace.prefix(), path)?;
            Some((workspace, view, api))
        })
    }

    /// Adds a feature's own built-in rows (served in every logical cluster); at start-up,
    /// before the registry is shared. A row naming a group, version and resource already
    /// in the table is a programming error.
    pub fn add_rows(&mut self, rows: Vec<ResourceType>) {
        for row in rows {
            assert!(self.get(&row.group, &row.version, &row.resource).is_none(), "{} registered twice", row.resource);
            self.all.push(Arc::new(row));
        }
    }

    /// Adds a source of rows beyond the built-ins and CRDs; at start-up, before the
    /// registry is shared.
    pub fn add_source(&mut self, source: Arc<dyn ResourceSource>) {
        self.sources.push(source);
    }

    /// Forgets everything indexed about a logical cluster that is gone.
    pub fn forget_cluster(&self, cluster: &str) {
        self.custom.forget_cluster(cluster);
        self.sources.iter().for_each(|s| s.forget_cluster(cluster));
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
        rows.extend(self.source_rows(cluster));
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
            None => {
                let custom = self.custom.of_cluster(cluster).into_iter();
                custom.chain(self.source_rows(cluster)).find(|r| matches(&r))
            }
        }
    }

    /// One row per stored resource of `cluster`: the built-ins (but the never-stored
    /// reviews), then one per CRD whether or not it serves any version; what deleting
    /// everything in a namespace or cluster walks.
    pub fn stored(&self, cluster: &str) -> Vec<Arc<ResourceType>> {
        // Rows sharing a key prefix (both Event APIs) hold the same objects: keep the first.
        let mut prefixes = std::collections::HashSet::new();
        let builtin = self.all.iter().filter(|rt| rt.strategy.stored()).cloned();
        let sourced = self.sources.iter().flat_map(|s| s.stored(&self.custom, cluster));
        let rows = builtin.chain(self.custom.storage_rows(cluster)).chain(sourced);
        rows.filter(|rt| prefixes.insert(rt.key_prefix(None))).collect()
    }

    /// Gives the built-in rows of `group/resource` (every version) their strategy; the
    /// features call this once at start-up, before the registry is shared.
    pub fn set_strategy(&mut self, group: &str, resource: &str, strategy: Arc<dyn Strategy>) {
        let mut found = false;
        for row in self.all.iter_mut().filter(|r| r.group == group && r.resource == resource) {
            let mut changed = ResourceType::clone(row);
            changed.strategy = strategy.clone();
            *row = Arc::new(changed);
            found = true;
        }
        assert!(found, "no built-in resource {resource}.{group} to give a strategy");
    }

    /// A row the serving binary depends on; a missing one is a bug of its assembly (panics).
    pub fn required(&self, group: &str, resource: &str) -> Arc<ResourceType> {
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

    /// `<resource>.rbac.authorization.k8s.io` (roles, clusterroles, rolebindings,
    /// clusterrolebindings), which authorization reads.
    pub fn rbac(&self, resource: &str) -> Arc<ResourceType> {
        self.required("rbac.authorization.k8s.io", resource)
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
