//! CustomResourceDefinitions: their strategy, status, cleanup and published schemas. A
//! CRD is an ordinary object of its logical cluster; the rows it defines live in the
//! table ([`apiserver::registry::custom`], built by [`apiserver::registry::definition`]).
//!
//! - [`status`]: the CRD strategy (finalizer, conditions, accepted names, stored versions).
//! - [`strategy`]: how the generic storage treats CRDs and custom resources.
//! - [`cleanup`]: deleting a CRD deletes its objects, then lets the CRD go.
//! - [`in_code`]: kinds features define in code, written as CRDs.
//! - [`objects`]: what custom resources need on the write and read paths (schema
//!   defaulting and validation, version conversion).
//! - `apiserver::openapi`: their published schemas (`kubectl explain`).

pub mod cleanup;
pub mod in_code;
pub mod objects;
pub mod status;
pub mod strategy;

/// The finalizer that holds a deleted CRD until its objects are gone (kube's name).
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Rebuilds the table's index of custom resources from every CRD in the store.
pub fn load_index(core: &apiserver::registry::Core) -> anyhow::Result<()> {
    let rt = core.registry.custom_resource_definitions();
    apiserver::objects::scan(&core.store, &rt, |cluster, object| core.registry.custom().observe(cluster, object))?;
    Ok(())
}
