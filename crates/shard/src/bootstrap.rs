//! First-start work: the root logical cluster and the admin kubeconfig.

use crate::state::{Shard, LOGICAL_CLUSTER_OBJECT, ROOT_CLUSTER};
use crate::storage::{self, WriteOptions};
use anyhow::Context;
use serde_json::json;

/// Creates the root logical cluster if it does not exist yet.
pub async fn ensure_root_cluster(shard: &Shard) -> anyhow::Result<()> {
    if shard.cluster_exists(ROOT_CLUSTER) {
        return Ok(());
    }
    let rt = shard.registry.get("core.kcp.io", "v1alpha1", "logicalclusters").expect("built in");
    let object = json!({
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "LogicalCluster",
        "metadata": {"name": LOGICAL_CLUSTER_OBJECT, "annotations": {"kcp.io/path": ROOT_CLUSTER}},
        "spec": {"directlyDeletable": false},
    });
    match storage::create(shard, &rt, ROOT_CLUSTER, object, WriteOptions::default()).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(anyhow::anyhow!("{}", e.message)).context("create the root logical cluster"),
    }
}
