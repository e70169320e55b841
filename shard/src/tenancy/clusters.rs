//! LogicalCluster operations on a target shard: through [`crate::peer`] for other
//! shards, straight through [`apiserver::storage`] when the target is this shard (the same
//! admission and strategy run either way; only the HTTP round trip is saved).

use crate::membership::ShardInfo;
use crate::peer::{logical_cluster_path, PeerError};
use crate::state::Shard;
use crate::tenancy::rows::TenancyRows;
use apiserver::rest::status::ApiError;
use apiserver::storage::{self, DeletePreconditions, ObjectRef, WriteOptions};
use protocol::types::LOGICAL_CLUSTER_NAME;
use serde_json::Value;

fn local(shard: &Shard, target: &ShardInfo) -> bool {
    target.name == shard.name
}

fn status(error: ApiError) -> PeerError {
    PeerError::Status { code: error.code, reason: error.reason.to_string(), message: error.message }
}

/// Creates the LogicalCluster of `cluster` on `target`.
pub async fn create(shard: &Shard, target: &ShardInfo, cluster: &str, body: &Value) -> Result<Value, PeerError> {
    if !local(shard, target) {
        return shard.peers.create(&target.base_url, &logical_cluster_path(cluster, false), body).await;
    }
    let rt = shard.registry.logical_clusters();
    storage::create(shard, &rt, cluster, body.clone(), WriteOptions::default()).await.map_err(status)
}

/// Reads the LogicalCluster of `cluster` on `target`.
pub async fn get(shard: &Shard, target: &ShardInfo, cluster: &str) -> Result<Value, PeerError> {
    if !local(shard, target) {
        return shard.peers.get(&target.base_url, &logical_cluster_path(cluster, true)).await;
    }
    let at = ObjectRef { cluster, namespace: None, name: LOGICAL_CLUSTER_NAME };
    storage::get(shard, &shard.registry.logical_clusters(), &at).map(|(object, _)| object).map_err(status)
}

/// Deletes the LogicalCluster of `cluster` on `target` (its finalizer then empties it).
pub async fn delete(shard: &Shard, target: &ShardInfo, cluster: &str) -> Result<(), PeerError> {
    if !local(shard, target) {
        return shard.peers.delete(&target.base_url, &logical_cluster_path(cluster, true)).await.map(drop);
    }
    let at = ObjectRef { cluster, namespace: None, name: LOGICAL_CLUSTER_NAME };
    let rt = shard.registry.logical_clusters();
    storage::delete(shard, &rt, &at, &DeletePreconditions::default(), WriteOptions::default())
        .await
        .map(drop)
        .map_err(status)
}
