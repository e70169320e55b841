//! The resources APIBindings bind, as a source of the resource table: a consumer cluster
//! serves each bound resource from the bound CRD in [`BOUND_CRDS_CLUSTER`], and the
//! wildcard endpoint names it `<resource>:<identityHash>` (root's system exports name
//! built-ins that way too).

use super::bound::BoundResources;
use super::system::SystemIdentities;
use super::BOUND_CRDS_CLUSTER;
use apiserver::registry::CustomResources;
use apiserver::registry::{Registry, ResourceSource, ResourceType};
use std::sync::Arc;

/// APIBindings' rows, from the bindings index and the bound CRDs.
#[derive(Debug)]
pub struct BoundSource {
    /// What each cluster's bindings bind.
    pub bound: Arc<BoundResources>,
    /// The identities of root's system exports.
    pub system: Arc<SystemIdentities>,
}

impl ResourceSource for BoundSource {
    fn lookup(
        &self,
        custom: &CustomResources,
        cluster: &str,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<ResourceType>> {
        let crd_name = self.bound.crd_of(cluster, group, resource)?;
        custom.version_of(BOUND_CRDS_CLUSTER, &crd_name, version)
    }

    fn lookup_identity(
        &self,
        registry: &Registry,
        group: &str,
        version: &str,
        resource: &str,
        identity: &str,
    ) -> Option<Arc<ResourceType>> {
        match self.system.of_group(group) {
            Some(system) if system == identity => registry.get(group, version, resource),
            _ => registry.custom().with_identity(BOUND_CRDS_CLUSTER, group, version, resource, identity),
        }
    }

    fn served(&self, custom: &CustomResources, cluster: &str) -> Vec<Arc<ResourceType>> {
        let crds = self.bound.crds_of(cluster);
        crds.iter().flat_map(|crd| custom.versions_of(BOUND_CRDS_CLUSTER, crd)).collect()
    }

    fn stored(&self, custom: &CustomResources, cluster: &str) -> Vec<Arc<ResourceType>> {
        let crds = self.bound.crds_of(cluster).into_iter();
        crds.filter_map(|crd| custom.storage_row(BOUND_CRDS_CLUSTER, &crd)).collect()
    }

    fn forget_cluster(&self, cluster: &str) {
        self.bound.forget_cluster(cluster);
    }
}
