//! Keeps this shard registered in root (its Shard object) and its shard set
//! ([`crate::membership::Membership`]) current: registration, then a read of the Shard
//! objects and root's WorkspaceTypes every second.

use crate::membership::Persisted;
use crate::peer::PeerError;
use crate::state::Shard;
use crate::tenancy::rows::TenancyRows;
use apiserver::objects;
use apiserver::storage::{self, ObjectRef, WriteOptions};
use protocol::path::ROOT as ROOT_CLUSTER;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// How often the shard set is read again.
const SYNC_INTERVAL: Duration = Duration::from_secs(1);
/// How often registration is retried while root cannot be reached.
const REGISTER_RETRY: Duration = Duration::from_millis(250);

/// This shard's Shard object.
fn own_shard_object(shard: &Shard) -> Value {
    json!({
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "Shard",
        "metadata": {"name": shard.name},
        "spec": {"baseURL": shard.base_url, "externalURL": shard.external_url},
    })
}

const SHARDS_PATH: &str = "/clusters/root/apis/core.kcp.io/v1alpha1/shards";
const ROOT_TYPES_PATH: &str = "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspacetypes";

/// Registers this shard, then keeps the shard set current, forever.
pub async fn run(shard: Arc<Shard>) {
    let mut registered = false;
    loop {
        if !registered {
            match register(&shard).await {
                Ok(()) => registered = true,
                Err(error) => tracing::debug!(%error, "registering with root failed; retrying"),
            }
        }
        match read_set(&shard).await {
            Ok(set) => shard.membership.update(set),
            Err(error) => tracing::debug!(%error, "reading the shard set failed; keeping the last one"),
        }
        let known = !shard.membership.current().is_empty();
        tokio::time::sleep(if registered && known { SYNC_INTERVAL } else { REGISTER_RETRY }).await;
    }
}

#[tracing::instrument(name = "membership.register", skip(shard), fields(shard = %shard.name))]
async fn register(shard: &Shard) -> anyhow::Result<()> {
    let desired = own_shard_object(shard);
    let Some(root_url) = &shard.root_shard_url else {
        let rt = shard.registry.shards();
        let at = ObjectRef { cluster: ROOT_CLUSTER, namespace: None, name: &shard.name };
        match storage::create(shard, &rt, ROOT_CLUSTER, desired.clone(), WriteOptions::default()).await {
            Ok(_) => return Ok(()),
            Err(e) if e.is_already_exists() => {}
            Err(e) => anyhow::bail!("{}", e.message),
        }
        storage::guaranteed_update(shard, &rt, &at, None, WriteOptions::default(), |old| {
            let mut new = old.clone();
            new["spec"] = desired["spec"].clone();
            Ok(new)
        })
        .await
        .map_err(|e| anyhow::anyhow!("{}", e.message))?;
        return Ok(());
    };
    match shard.peers.create(root_url, SHARDS_PATH, &desired).await {
        Ok(_) => return Ok(()),
        Err(PeerError::Status { code: 409, .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let path = format!("{SHARDS_PATH}/{}", shard.name);
    let mut current = shard.peers.get(root_url, &path).await?;
    if current.get("spec") != desired.get("spec") {
        current["spec"] = desired["spec"].clone();
        shard.peers.replace(root_url, &path, &current).await?;
    }
    Ok(())
}

async fn read_set(shard: &Shard) -> anyhow::Result<Persisted> {
    let (shards, types) = match &shard.root_shard_url {
        None => (local_items(shard, &shard.registry.shards())?, local_items(shard, &shard.registry.workspace_types())?),
        Some(root_url) => {
            let items = |list: Value| list.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
            let shards = items(shard.peers.get(root_url, SHARDS_PATH).await?);
            let types = items(shard.peers.get(root_url, ROOT_TYPES_PATH).await?);
            (shards, types)
        }
    };
    Ok(Persisted::from_objects(&shards, types))
}

fn local_items(shard: &Shard, rt: &apiserver::registry::ResourceType) -> anyhow::Result<Vec<Value>> {
    let prefix = objects::collection_prefix(rt, Some(ROOT_CLUSTER), None);
    let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
    let page = shard.store.list(&options, |_, _| true)?;
    Ok(page.items.iter().filter_map(|(_, stored)| objects::decode(stored).ok()).collect())
}
