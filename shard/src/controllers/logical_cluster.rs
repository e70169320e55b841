//! Logical-cluster deletion: when a cluster's LogicalCluster object is deleted, delete
//! every object in the cluster, then release the LogicalCluster so the cluster is gone.

use super::{for_each_object, REQUEUE_DELAY};
use crate::state::Shard;
use crate::tenancy::rows::TenancyRows;
use apiserver::objects;
use apiserver::storage::{self, ObjectRef};
use parking_lot::Mutex;
use protocol::meta;
use protocol::types::LOGICAL_CLUSTER_NAME;
use protocol::wellknown::CLUSTER_ANNOTATION;
pub use protocol::wellknown::LOGICAL_CLUSTER_FINALIZER as FINALIZER;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use store::{Precondition, StoreError};
use tracing::Instrument;

/// Watches LogicalClusters and empties the deleting ones.
pub async fn run(shard: Arc<Shard>) {
    let rt = shard.registry.logical_clusters();
    let busy: Arc<Mutex<HashSet<String>>> = Arc::default();
    for_each_object(shard.clone(), rt, move |lc, cause| {
        if !meta::is_deleting(&lc) || !meta::finalizers(&lc).iter().any(|f| f == FINALIZER) {
            return;
        }
        let Some(cluster) = meta::annotations(&lc).get(CLUSTER_ANNOTATION).cloned() else { return };
        if !busy.lock().insert(cluster.clone()) {
            return;
        }
        let (shard, busy) = (shard.clone(), busy.clone());
        let span = super::reconcile_span("logical_cluster.empty", &cluster, &cluster, cause);
        tokio::spawn(
            async move {
                let mut delay = WORKSPACES_RECHECK;
                loop {
                    match empty_cluster(&shard, &cluster).await {
                        Pass::Done => break,
                        // Content went: the confirming pass can run at once.
                        Pass::Progress => delay = WORKSPACES_RECHECK,
                        Pass::WaitingForWorkspaces => {
                            tokio::time::sleep(delay).await;
                            delay = (delay * 2).min(REQUEUE_DELAY);
                        }
                        Pass::Failed => tokio::time::sleep(REQUEUE_DELAY).await,
                    }
                }
                busy.lock().remove(&cluster);
            }
            .instrument(span),
        );
    })
    .await;
}

/// First wait for nested workspaces to go; doubles up to [`REQUEUE_DELAY`].
const WORKSPACES_RECHECK: Duration = Duration::from_millis(50);

/// The outcome of one pass over a deleting cluster.
enum Pass {
    /// The cluster is empty and its LogicalCluster released.
    Done,
    /// Content was deleted; another pass must confirm the cluster is empty.
    Progress,
    /// Nested workspaces are still going away.
    WaitingForWorkspaces,
    /// A read or write failed; retry later.
    Failed,
}

/// Removes every object of the cluster, then the LogicalCluster's finalizer.
///
/// Workspaces go first and through their finalizers, because each holds a logical
/// cluster on some shard that must go too; everything else is removed outright
/// (finalizers of ordinary content do not hold a cluster deletion back: the whole
/// cluster goes). A pass that found anything returns false, so the finalizer goes only
/// after a pass that found the cluster empty: a write that raced the first pass is
/// caught by the next.
#[tracing::instrument(name = "logicalcluster.delete", skip(shard))]
async fn empty_cluster(shard: &Shard, cluster: &str) -> Pass {
    if !delete_workspaces(shard, cluster).await {
        return Pass::WaitingForWorkspaces;
    }
    let mut found = false;
    let lc_rt = shard.registry.logical_clusters();
    // Custom resources too: their CRDs are removed in this same pass, but stay indexed
    // until the cluster is gone, so a later pass still finds objects that raced it.
    for rt in &shard.registry.stored(cluster) {
        let prefix = objects::collection_prefix(rt, Some(cluster), None);
        let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
        let Ok(page) = shard.store.list(&options, |_, _| true) else { return Pass::Failed };
        for (key, stored) in page.items {
            if Arc::ptr_eq(rt, &lc_rt) {
                continue;
            }
            found = true;
            match shard.store.delete(key, Precondition::ResourceVersion(stored.rv)).await {
                Ok(_) | Err(StoreError::NotFound) => {}
                // Changed meanwhile: the next pass deletes the new version.
                Err(StoreError::Conflict { .. }) => return Pass::Progress,
                Err(_) => return Pass::Failed,
            }
        }
    }
    if found {
        return Pass::Progress;
    }
    let at = ObjectRef { cluster, namespace: None, name: LOGICAL_CLUSTER_NAME };
    match storage::remove_finalizer(shard, &lc_rt, &at, FINALIZER).await {
        Err(e) if !e.is_not_found() => Pass::Failed,
        Ok(_) | Err(_) => {
            shard.registry.forget_cluster(cluster);
            Pass::Done
        }
    }
}

/// Asks every Workspace of the cluster to go (the workspace controller deletes their
/// logical clusters, then drops their finalizers); true once none is left.
async fn delete_workspaces(shard: &Shard, cluster: &str) -> bool {
    let rt = shard.registry.workspaces();
    let prefix = objects::collection_prefix(&rt, Some(cluster), None);
    let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
    let Ok(page) = shard.store.list(&options, |_, _| true) else { return false };
    for (key, stored) in &page.items {
        let Some((_, _, name)) = objects::split_key(key) else { continue };
        if objects::is_marked_for_deletion(&stored.value).unwrap_or(false) {
            continue;
        }
        let at = ObjectRef { cluster, namespace: None, name };
        let preconditions = storage::DeletePreconditions::default();
        if let Err(e) = storage::delete(shard, &rt, &at, &preconditions, storage::WriteOptions::default()).await {
            tracing::debug!(error = %e.message, workspace = name, "deleting a nested workspace failed");
        }
    }
    page.items.is_empty()
}
