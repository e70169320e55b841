//! CustomResourceDefinitions: which custom resources each logical cluster serves.
//!
//! A CRD is an ordinary object of its logical cluster. [`CustomResources`] is the index
//! the request path consults after the built-in table: per cluster, the registry rows
//! ([`ResourceType`]) of every served version of every CRD. It is filled from the store at
//! start and kept current by the storage code that commits CRD writes, before the write
//! answers, so a client that saw a CRD created (and `Established`) can use it at once. A
//! CRD of one logical cluster is invisible in every other.
//!
//! - [`definition`]: a CRD object → its registry rows.
//! - [`status`]: the CRD strategy (finalizer, conditions, accepted names, stored versions).
//! - [`cleanup`]: deleting a CRD deletes its objects, then lets the CRD go.
//! - [`objects`]: what custom resources need on the write and read paths (schema
//!   defaulting and validation, version conversion).
//! - [`openapi`]: their published schemas (`kubectl explain`).

pub mod cleanup;
pub mod definition;
pub mod objects;
pub mod openapi;
pub mod status;

use crate::registry::ResourceType;
use crate::state::Shard;
use parking_lot::RwLock;
use protocol::meta;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// The finalizer that holds a deleted CRD until its objects are gone (kube's name).
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// What a CRD says about one served version of its resource.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomVersion {
    /// `metadata.name` of the CRD (`<plural>.<group>`).
    pub crd_name: String,
    /// The version's `openAPIV3Schema` (structural).
    pub schema: Value,
    /// The version objects are stored in.
    pub storage_version: String,
    /// `spec.replicas`-style paths of the scale subresource, when it is enabled.
    pub scale: Option<ScalePaths>,
    /// The CRD is being deleted: its objects can be read and deleted, not created.
    pub terminating: bool,
}

/// JSON paths of the scale subresource (`.spec.replicas`), as the CRD gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// Where the desired replica count lives.
    pub spec_replicas: String,
    /// Where the observed replica count lives.
    pub status_replicas: String,
    /// Where a label selector string lives, if anywhere.
    pub label_selector: Option<String>,
}

/// One CRD's rows, with the resourceVersion they were built from.
#[derive(Debug)]
struct Definition {
    rv: u64,
    versions: Vec<Arc<ResourceType>>,
}

/// Per logical cluster, the custom resources its CRDs define.
#[derive(Debug, Default)]
pub struct CustomResources {
    by_cluster: RwLock<HashMap<Box<str>, HashMap<String, Definition>>>,
}

impl CustomResources {
    /// Records a committed CRD object of `cluster`. Writes of one CRD may finish out of
    /// order; an older resourceVersion than the one recorded is ignored.
    pub fn observe(&self, cluster: &str, crd: &Value) {
        let Some(name) = meta::name(crd) else { return };
        let rv = meta::meta_str(crd, "resourceVersion").and_then(|rv| rv.parse().ok()).unwrap_or(0);
        let versions = definition::resource_types(crd).into_iter().map(Arc::new).collect();
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
        let Some(definitions) = by_cluster.get_mut(cluster) else { return };
        if definitions.get(name).is_some_and(|d| d.rv <= rv) {
            definitions.remove(name);
        }
        if definitions.is_empty() {
            by_cluster.remove(cluster);
        }
    }

    /// The custom resource `group/version/resource` of `cluster`.
    pub fn get(&self, cluster: &str, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceType>> {
        let by_cluster = self.by_cluster.read();
        by_cluster.get(cluster)?.values().flat_map(|d| &d.versions).find(|r| r.is(group, version, resource)).cloned()
    }

    /// The custom resource `group/version/resource` as some cluster of this shard defines
    /// it, for requests across all clusters (`/clusters/*`): the key layout is the same in
    /// every cluster, so any definition reads them.
    pub fn get_any(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceType>> {
        let by_cluster = self.by_cluster.read();
        by_cluster
            .values()
            .flat_map(|d| d.values())
            .flat_map(|d| &d.versions)
            .find(|r| r.is(group, version, resource))
            .cloned()
    }

    /// Every custom resource row of `cluster`, ordered by group, version and resource.
    pub fn of_cluster(&self, cluster: &str) -> Vec<Arc<ResourceType>> {
        let by_cluster = self.by_cluster.read();
        let mut rows: Vec<Arc<ResourceType>> =
            by_cluster.get(cluster).into_iter().flat_map(|d| d.values()).flat_map(|d| d.versions.clone()).collect();
        rows.sort_by(|a, b| (&a.group, &a.version, &a.resource).cmp(&(&b.group, &b.version, &b.resource)));
        rows
    }

    /// Rebuilds the index from every CRD in the store.
    pub fn load(&self, shard: &Shard) -> anyhow::Result<()> {
        let rt = shard.registry.custom_resource_definitions();
        let prefix = crate::objects::collection_prefix(&rt, None, None);
        let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
        let page = shard.store.list(&options, |_, _| true)?;
        for (key, stored) in &page.items {
            let Some((cluster, _, _)) = crate::objects::split_key(key) else { continue };
            if let Ok(crd) = crate::objects::decode(stored) {
                self.observe(cluster, &crd);
            }
        }
        Ok(())
    }
}
