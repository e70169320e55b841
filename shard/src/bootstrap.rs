//! First-start work on the root shard: the root logical cluster and root's built-in
//! workspace types.

use crate::state::Shard;
use crate::tenancy::rows::TenancyRows;
use crate::tenancy::{types::DEFAULT_TYPE, ROOT_TYPE};
use anyhow::Context;
use apiserver::storage::{self, WriteOptions};
use protocol::path::ROOT;
use protocol::types::LOGICAL_CLUSTER_NAME;
use protocol::wellknown::{PATH_ANNOTATION, WORKSPACE_TYPE_ANNOTATION};
use serde_json::{json, Value};

/// Creates the root logical cluster and the WorkspaceTypes `root:root` and
/// `root:universal` if they do not exist yet. Existing ones are left as users edited them.
pub async fn ensure_root_cluster(shard: &Shard) -> anyhow::Result<()> {
    let logical_cluster = json!({
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "LogicalCluster",
        "metadata": {
            "name": LOGICAL_CLUSTER_NAME,
            "annotations": {PATH_ANNOTATION: ROOT, WORKSPACE_TYPE_ANNOTATION: ROOT_TYPE.qualified()},
        },
        "spec": {"directlyDeletable": false},
    });
    if !shard.cluster_exists(ROOT) {
        create_unless_exists(shard, &shard.registry.logical_clusters(), logical_cluster)
            .await
            .context("create the root logical cluster")?;
    }
    let types = [
        workspace_type(ROOT_TYPE.name, json!({"defaultChildWorkspaceType": DEFAULT_TYPE.to_json()})),
        workspace_type(DEFAULT_TYPE.name, json!({})),
    ];
    for object in types {
        create_unless_exists(shard, &shard.registry.workspace_types(), object)
            .await
            .context("create root's workspace types")?;
    }
    Ok(())
}

fn workspace_type(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "WorkspaceType",
        "metadata": {"name": name},
        "spec": spec,
    })
}

async fn create_unless_exists(
    shard: &Shard,
    rt: &apiserver::registry::ResourceType,
    object: Value,
) -> anyhow::Result<()> {
    match storage::create(shard, rt, ROOT, object, WriteOptions::default()).await {
        Ok(_) => Ok(()),
        Err(e) if e.is_already_exists() => Ok(()),
        Err(e) => Err(anyhow::anyhow!("{}", e.message)),
    }
}
