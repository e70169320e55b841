//! CustomResourceDefinitions in the table: per logical cluster, the rows ([`ResourceType`])
//! of every version of every CRD. It is filled from the store at start and kept current
//! by the CRD strategy's after-commit hook, before the write answers, so a client that saw
//! a CRD created (and `Established`) can use it at once. A CRD of one logical cluster is
//! invisible in every other. A feature may name one cluster whose CRDs are shared
//! definitions ([`SharedDefinitions`]; kcp's bound CRDs): their rows carry a storage
//! identity from an annotation, and wildcard requests never read them.

use super::definition;
pub use super::definition::{CustomVersion, ScalePaths};
use super::strategy::{generic, Strategy};
use super::ResourceType;
use parking_lot::RwLock;
use protocol::meta;
use serde_json::Value;
use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::Arc;

/// A cluster whose CRDs define resources served elsewhere under a storage identity
/// (kcp's bound CRDs, whose identity is their APIExport's).
#[derive(Debug, Clone)]
pub struct SharedDefinitions {
    /// The logical cluster that holds the shared CRDs (nobody addresses it).
    pub cluster: String,
    /// The CRD annotation that holds a definition's storage identity.
    pub identity_annotation: String,
}

/// kube's version priority as a sort key (smaller sorts first): GA versions by number
/// descending, then betas, then alphas (each by major, then minor, descending), then
/// anything else alphabetically.
pub fn version_priority(version: &str) -> (u8, Reverse<u64>, Reverse<u64>, String) {
    let parsed = version.strip_prefix('v').and_then(|rest| {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        let (class, number) = match tail {
            "" => (0, "0"),
            _ if tail.starts_with("beta") => (1, &tail[4..]),
            _ if tail.starts_with("alpha") => (2, &tail[5..]),
            _ => return None,
        };
        let minor: u64 = if number.is_empty() { 0 } else { number.parse().ok()? };
        Some((class, major, minor))
    });
    match parsed {
        Some((class, major, minor)) => (class, Reverse(major), Reverse(minor), String::new()),
        None => (3, Reverse(0), Reverse(0), version.to_string()),
    }
}

/// One CRD's rows, with the resourceVersion they were built from. A removed CRD leaves a
/// tombstone (no rows) with the resourceVersion of its removal, so that a write of it that
/// committed earlier but reports later cannot bring it back.
#[derive(Debug)]
struct Definition {
    rv: u64,
    versions: Vec<Arc<ResourceType>>,
}

impl Definition {
    fn served(&self) -> impl Iterator<Item = &Arc<ResourceType>> {
        self.versions.iter().filter(|r| r.custom.as_ref().is_some_and(|c| c.served))
    }
}

/// Per logical cluster, the custom resources its CRDs define.
#[derive(Debug)]
pub struct CustomResources {
    by_cluster: RwLock<HashMap<Box<str>, HashMap<String, Definition>>>,
    /// The strategy of custom resources' rows (the CRD feature registers it).
    strategy: RwLock<Arc<dyn Strategy>>,
    /// The cluster of shared definitions, if a feature set one.
    shared: RwLock<Option<SharedDefinitions>>,
}

impl Default for CustomResources {
    fn default() -> Self {
        CustomResources { by_cluster: RwLock::default(), strategy: RwLock::new(generic()), shared: RwLock::default() }
    }
}

impl CustomResources {
    /// Sets the strategy rows built from CRDs get; at start-up, before any is indexed.
    pub fn set_row_strategy(&self, strategy: Arc<dyn Strategy>) {
        *self.strategy.write() = strategy;
    }

    /// Names the cluster of shared definitions; at start-up, before any is indexed.
    pub fn set_shared_definitions(&self, shared: SharedDefinitions) {
        *self.shared.write() = Some(shared);
    }

    fn is_shared(&self, cluster: &str) -> bool {
        self.shared.read().as_ref().is_some_and(|shared| shared.cluster == cluster)
    }

    /// Records a committed CRD object of `cluster`. Writes of one CRD may finish out of
    /// order; an older resourceVersion than the one recorded is ignored.
    pub fn observe(&self, cluster: &str, crd: &Value) {
        let Some(name) = meta::name(crd) else { return };
        let rv = meta::meta_str(crd, "resourceVersion").and_then(|rv| rv.parse().ok()).unwrap_or(0);
        let mut versions = definition::resource_types(crd, &self.strategy.read());
        // Only shared definitions say which identity they store under.
        let shared = self.shared.read().clone().filter(|shared| shared.cluster == cluster);
        if let Some(shared) = shared {
            let identity = meta::annotations(crd).get(&shared.identity_annotation).cloned();
            for row in &mut versions {
                if let Some(custom) = row.custom.as_mut() {
                    Arc::make_mut(custom).identity = identity.clone();
                }
            }
        }
        let versions = versions.into_iter().map(Arc::new).collect();
        let mut by_cluster = self.by_cluster.write();
        let definitions = by_cluster.entry(cluster.into()).or_default();
        if definitions.get(name).is_some_and(|d| d.rv > rv) {
            return;
        }
        definitions.insert(name.to_string(), Definition { rv, versions });
    }

    /// Forgets a CRD that was removed from the store at resourceVersion `rv`.
    pub fn forget(&self, cluster: &str, name: &str, rv: u64) {
        let mut by_cluster = self.by_cluster.write();
        let definitions = by_cluster.entry(cluster.into()).or_default();
        if definitions.get(name).is_none_or(|d| d.rv <= rv) {
            definitions.insert(name.to_string(), Definition { rv, versions: Vec::new() });
        }
    }

    /// Forgets every CRD of a logical cluster that is gone, tombstones included.
    pub fn forget_cluster(&self, cluster: &str) {
        self.by_cluster.write().remove(cluster);
    }

    /// The served custom resource `group/version/resource` of `cluster`.
    pub fn get(&self, cluster: &str, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceType>> {
        let by_cluster = self.by_cluster.read();
        let found =
            by_cluster.get(cluster)?.values().flat_map(Definition::served).find(|r| r.is(group, version, resource));
        found.cloned()
    }

    /// The custom resource `group/version/resource` for requests across all clusters
    /// (`/clusters/*`), which read every cluster's objects under one key prefix: only
    /// when every cluster that defines `group/resource` serves this version with the same
    /// kind and scope, so that every object listed is what the row says it is.
    pub fn get_any(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceType>> {
        let by_cluster = self.by_cluster.read();
        let mut found: Option<Arc<ResourceType>> = None;
        let definitions = by_cluster.iter().filter(|(cluster, _)| !self.is_shared(cluster));
        for definition in definitions.flat_map(|(_, d)| d.values()) {
            if !definition.versions.iter().any(|r| r.group == group && r.resource == resource) {
                continue;
            }
            let row = definition.served().find(|r| r.is(group, version, resource))?;
            match &found {
                Some(first) if first.kind != row.kind || first.namespaced != row.namespaced => return None,
                Some(_) => {}
                None => found = Some(row.clone()),
            }
        }
        found
    }

    /// Every served custom resource row of `cluster`, ordered by group, then by kube's
    /// version priority (`v2` before `v1` before `v1beta1`), then by resource.
    pub fn of_cluster(&self, cluster: &str) -> Vec<Arc<ResourceType>> {
        let by_cluster = self.by_cluster.read();
        let mut rows: Vec<Arc<ResourceType>> =
            by_cluster.get(cluster).into_iter().flat_map(|d| d.values()).flat_map(|d| d.served().cloned()).collect();
        rows.sort_by_cached_key(|r| (r.group.clone(), version_priority(&r.version), r.resource.clone()));
        rows
    }

    /// One row per CRD of `cluster`, served or not, for finding every stored object of
    /// the cluster's custom resources (each CRD's versions share one key prefix).
    pub fn storage_rows(&self, cluster: &str) -> Vec<Arc<ResourceType>> {
        let by_cluster = self.by_cluster.read();
        by_cluster
            .get(cluster)
            .into_iter()
            .flat_map(|d| d.values())
            .filter_map(|d| d.versions.first().cloned())
            .collect()
    }

    /// The served row of version `version` of CRD `crd_name` in `cluster`.
    pub fn version_of(&self, cluster: &str, crd_name: &str, version: &str) -> Option<Arc<ResourceType>> {
        let by_cluster = self.by_cluster.read();
        let found = by_cluster.get(cluster)?.get(crd_name)?.served().find(|r| r.version == version).cloned();
        found
    }

    /// Every served row of CRD `crd_name` in `cluster`.
    pub fn versions_of(&self, cluster: &str, crd_name: &str) -> Vec<Arc<ResourceType>> {
        let by_cluster = self.by_cluster.read();
        let definition = by_cluster.get(cluster).and_then(|d| d.get(crd_name));
        definition.into_iter().flat_map(Definition::served).cloned().collect()
    }

    /// The served row of `group/version/resource` stored under export identity `identity`,
    /// in any of `cluster`'s CRDs (the wildcard endpoint `<resource>:<identity>`).
    pub fn with_identity(
        &self,
        cluster: &str,
        group: &str,
        version: &str,
        resource: &str,
        identity: &str,
    ) -> Option<Arc<ResourceType>> {
        let by_cluster = self.by_cluster.read();
        let rows = by_cluster.get(cluster)?.values().flat_map(Definition::served);
        let mut rows = rows.filter(|r| r.is(group, version, resource));
        rows.find(|r| r.custom.as_ref().and_then(|c| c.identity.as_deref()) == Some(identity)).cloned()
    }

    /// The row of `crd_name` in `cluster` that reads its stored objects, if indexed.
    pub fn storage_row(&self, cluster: &str, crd_name: &str) -> Option<Arc<ResourceType>> {
        let by_cluster = self.by_cluster.read();
        by_cluster.get(cluster)?.get(crd_name)?.versions.first().cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(rv: u64, versions: &[(&str, bool)]) -> Value {
        let versions: Vec<Value> = versions
            .iter()
            .enumerate()
            .map(|(i, (name, served))| json!({"name": name, "served": served, "storage": i == 0}))
            .collect();
        json!({
            "metadata": {"name": "widgets.example.com", "resourceVersion": rv.to_string()},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"}, "versions": versions}
        })
    }

    #[test]
    fn versions_sort_by_kube_priority() {
        let mut versions = vec!["v1alpha1", "foo", "v1beta1", "v1", "v2beta2", "v2", "v11alpha2", "v1beta2"];
        versions.sort_by_key(|v| version_priority(v));
        assert_eq!(versions, ["v2", "v1", "v2beta2", "v1beta2", "v1beta1", "v11alpha2", "v1alpha1", "foo"]);
    }

    #[test]
    fn removal_tombstones_keep_late_writes_out() {
        let index = CustomResources::default();
        index.observe("c", &crd(5, &[("v1", true), ("v2", false)]));
        assert!(index.get("c", "example.com", "v1", "widgets").is_some());
        assert!(index.get("c", "example.com", "v2", "widgets").is_none(), "unserved versions are not looked up");
        assert_eq!(index.storage_rows("c").len(), 1);
        index.forget("c", "widgets.example.com", 7);
        index.observe("c", &crd(6, &[("v1", true)]));
        assert!(index.get("c", "example.com", "v1", "widgets").is_none(), "a write older than the removal");
        index.observe("c", &crd(9, &[("v1", true)]));
        assert!(index.get("c", "example.com", "v1", "widgets").is_some(), "created again");
        assert!(index.get("other", "example.com", "v1", "widgets").is_none());
        index.forget_cluster("c");
        assert!(index.storage_rows("c").is_empty());
    }

    #[test]
    fn wildcard_lookups_need_every_definition_to_agree() {
        let index = CustomResources::default();
        index.observe("a", &crd(1, &[("v1", true)]));
        index.observe("b", &crd(2, &[("v1", true)]));
        assert!(index.get_any("example.com", "v1", "widgets").is_some());
        index.observe("c", &crd(3, &[("v9", true)]));
        assert!(index.get_any("example.com", "v1", "widgets").is_none(), "c stores widgets it does not serve as v1");
    }
}
