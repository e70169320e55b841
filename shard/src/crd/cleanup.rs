//! Deleting a CRD deletes its objects: while the CRD is terminating, every object of it
//! (in every namespace of its logical cluster) is deleted; once none is left, the cleanup
//! finalizer is removed and the CRD goes, taking its resource out of discovery.

use super::CLEANUP_FINALIZER;
use crate::controllers::finish_each;
use crate::state::Shard;
use apiserver::storage::{self, DeletePreconditions, ObjectRef, WriteOptions};
use protocol::meta;
use serde_json::Value;
use std::sync::Arc;

/// Watches CRDs and cleans up the terminating ones.
pub async fn run(shard: Arc<Shard>) {
    let rt = shard.registry.custom_resource_definitions();
    let wants = |crd: &Value| meta::is_deleting(crd) && meta::finalizers(crd).iter().any(|f| f == CLEANUP_FINALIZER);
    finish_each(shard, rt, "crd.cleanup", wants, |shard, cluster, name| async move {
        clean_up(&shard, &cluster, &name).await
    })
    .await;
}

/// One pass: deletes the CRD's objects; when none is left, removes the finalizer.
/// Returns whether the CRD is done (or gone).
#[tracing::instrument(name = "crd.cleanup", skip(shard))]
async fn clean_up(shard: &Shard, cluster: &str, crd_name: &str) -> bool {
    // All versions share one storage prefix; any row reads and deletes them.
    let Some(rt) = shard.registry.custom().storage_row(cluster, crd_name) else {
        // Not indexed: a CRD without group, plural or kind, through which nothing was stored.
        return remove_finalizer(shard, cluster, crd_name).await;
    };
    let prefix = apiserver::objects::collection_prefix(&rt, Some(cluster), None);
    let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
    let Ok(page) = shard.store.list(&options, |_, _| true) else { return false };
    let mut remaining = 0usize;
    for (key, _) in page.items {
        remaining += 1;
        let Some((_, namespace, name)) = apiserver::objects::split_key(&key) else { continue };
        let namespace = rt.namespaced.then_some(namespace);
        let at = ObjectRef { cluster, namespace, name };
        let deleted = storage::delete(shard, &rt, &at, &DeletePreconditions::default(), WriteOptions::default()).await;
        if matches!(deleted, Ok(storage::Deleted::Gone(_))) || deleted.is_err_and(|e| e.is_not_found()) {
            remaining -= 1;
        }
    }
    if remaining > 0 {
        tracing::debug!(remaining, "custom resources still wait for their finalizers");
        return false;
    }
    remove_finalizer(shard, cluster, crd_name).await
}

async fn remove_finalizer(shard: &Shard, cluster: &str, crd_name: &str) -> bool {
    let rt = shard.registry.custom_resource_definitions();
    let at = ObjectRef { cluster, namespace: None, name: crd_name };
    match storage::remove_finalizer(shard, &rt, &at, CLEANUP_FINALIZER).await {
        Ok(_) => true,
        Err(e) if e.is_not_found() => true,
        Err(e) => {
            tracing::warn!(error = %e.message, "removing the CRD cleanup finalizer failed; retrying");
            false
        }
    }
}
