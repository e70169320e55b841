//! Logical-cluster deletion: when a cluster's LogicalCluster object is deleted, delete
//! every object in the cluster, then release the LogicalCluster so the cluster is gone.

use super::{for_each_object, REQUEUE_DELAY};
use crate::objects::{self, CLUSTER_ANNOTATION};
use crate::state::{Shard, LOGICAL_CLUSTER_OBJECT};
use crate::storage::{self, ObjectRef};
use parking_lot::Mutex;
use protocol::meta;
use std::collections::HashSet;
use std::sync::Arc;
use store::{Precondition, StoreError};

pub use crate::strategy::LOGICAL_CLUSTER_FINALIZER as FINALIZER;

/// Watches LogicalClusters and empties the deleting ones.
pub async fn run(shard: Arc<Shard>) {
    let rt = shard.registry.get("core.kcp.io", "v1alpha1", "logicalclusters").expect("built in");
    let busy: Arc<Mutex<HashSet<String>>> = Arc::default();
    for_each_object(shard.clone(), rt, move |lc| {
        if !meta::is_deleting(&lc) || !meta::finalizers(&lc).iter().any(|f| f == FINALIZER) {
            return;
        }
        let Some(cluster) = meta::annotations(&lc).get(CLUSTER_ANNOTATION).cloned() else { return };
        if !busy.lock().insert(cluster.clone()) {
            return;
        }
        let (shard, busy) = (shard.clone(), busy.clone());
        tokio::spawn(async move {
            while !empty_cluster(&shard, &cluster).await {
                tokio::time::sleep(REQUEUE_DELAY).await;
            }
            busy.lock().remove(&cluster);
        });
    })
    .await;
}

/// Removes every object of the cluster (finalizers of the content do not hold a cluster
/// deletion back: the whole cluster goes), then the LogicalCluster's finalizer.
///
/// A pass that found anything returns false, so the finalizer goes only after a pass
/// that found the cluster empty: a write that raced the first pass is caught by the next.
#[tracing::instrument(name = "logicalcluster.delete", skip(shard))]
async fn empty_cluster(shard: &Shard, cluster: &str) -> bool {
    let mut found = false;
    let lc_rt = shard.registry.get("core.kcp.io", "v1alpha1", "logicalclusters").expect("built in");
    for rt in shard.registry.all() {
        let prefix = objects::collection_prefix(rt, Some(cluster), None);
        let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
        let Ok(page) = shard.store.list(&options, |_, _| true) else { return false };
        for (key, stored) in page.items {
            if Arc::ptr_eq(rt, &lc_rt) {
                continue;
            }
            found = true;
            match shard.store.delete(key, Precondition::ResourceVersion(stored.rv)).await {
                Ok(_) | Err(StoreError::NotFound) => {}
                // Changed meanwhile: the next pass deletes the new version.
                Err(_) => return false,
            }
        }
    }
    if found {
        return false;
    }
    let at = ObjectRef { cluster, namespace: None, name: LOGICAL_CLUSTER_OBJECT };
    match storage::remove_finalizer(shard, &lc_rt, &at, FINALIZER).await {
        Ok(_) => true,
        Err(e) if e.code == 404 => true,
        Err(_) => false,
    }
}
