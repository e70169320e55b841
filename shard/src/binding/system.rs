//! The system APIExports: root exports its built-in kcp groups (as kcp does), each with an
//! identity like any export's. Every other shard fetches those identities from root once
//! and keeps them in its data directory, so that it restarts and serves with root down.
//!
//! A shard accepts a system resource on its wildcard endpoint under kcp's
//! `<resource>:<identityHash>` naming as well as under the plain name.

use crate::peer::PeerError;
use crate::state::Shard;
use anyhow::Context;
use apiserver::registry::ResourceType;
use apiserver::storage::{self, ObjectRef, WriteOptions};
use parking_lot::RwLock;
use protocol::path::ROOT;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The system exports root creates: export name → the API group it stands for.
pub const SYSTEM_EXPORTS: &[(&str, &str)] =
    &[("tenancy.kcp.io", "tenancy.kcp.io"), ("shards.core.kcp.io", "core.kcp.io")];

/// The identity hashes of the system exports, by API group.
#[derive(Debug, Default)]
pub struct SystemIdentities {
    by_group: RwLock<BTreeMap<String, String>>,
}

impl SystemIdentities {
    /// The identity hash of the system export of `group`.
    pub fn of_group(&self, group: &str) -> Option<String> {
        self.by_group.read().get(group).cloned()
    }

    /// Whether every system export's identity is known.
    pub fn complete(&self) -> bool {
        self.by_group.read().len() == SYSTEM_EXPORTS.len()
    }

    fn set(&self, identities: BTreeMap<String, String>) {
        *self.by_group.write() = identities;
    }

    fn snapshot(&self) -> BTreeMap<String, String> {
        self.by_group.read().clone()
    }
}

fn exports_row(shard: &Shard) -> Option<Arc<ResourceType>> {
    shard
        .registry
        .all()
        .iter()
        .find(|r| r.group == protocol::types::APIS_KCP_GROUP && r.resource == "apiexports")
        .cloned()
}

/// On the root shard: creates the system exports (once) and learns their identities.
pub async fn ensure_on_root(shard: &Shard, system: &SystemIdentities) -> anyhow::Result<()> {
    let Some(rt) = exports_row(shard) else { return Ok(()) };
    let mut identities = BTreeMap::new();
    for (name, group) in SYSTEM_EXPORTS {
        let export = json!({
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIExport",
            "metadata": {"name": name},
            "spec": {},
        });
        match storage::create(shard, &rt, ROOT, export, WriteOptions::default()).await {
            Ok(_) => {}
            Err(e) if e.is_already_exists() => {}
            Err(e) => anyhow::bail!("create the system APIExport {name}: {}", e.message),
        }
        let at = ObjectRef { cluster: ROOT, namespace: None, name };
        let (stored, _) = storage::get(shard, &rt, &at).map_err(|e| anyhow::anyhow!("{}", e.message))?;
        if let Some(identity) = identity_of(&stored) {
            identities.insert(group.to_string(), identity);
        }
    }
    system.set(identities);
    Ok(())
}

fn identity_of(export: &Value) -> Option<String> {
    export.pointer("/status/identityHash").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
}

/// The file a non-root shard keeps the identities in.
pub fn identities_file(data_dir: &Path) -> PathBuf {
    data_dir.join("system-identities.json")
}

/// On a non-root shard: loads the identities kept from an earlier start, or fetches them
/// from root (retrying until root answers) and keeps them.
pub async fn load_or_fetch(shard: Arc<Shard>, system: Arc<SystemIdentities>, root_url: String, file: PathBuf) {
    if let Ok(bytes) = std::fs::read(&file) {
        match serde_json::from_slice::<BTreeMap<String, String>>(&bytes) {
            Ok(identities) => {
                tracing::info!(file = %file.display(), "system APIExport identities loaded");
                system.set(identities);
                if system.complete() {
                    return;
                }
            }
            Err(error) => {
                tracing::warn!(file = %file.display(), %error, "system identities file unreadable; refetching")
            }
        }
    }
    let mut delay = Duration::from_millis(200);
    loop {
        match fetch(&shard, &root_url).await {
            Ok(identities) if identities.len() == SYSTEM_EXPORTS.len() => {
                system.set(identities);
                match persist(&file, &system.snapshot()) {
                    Ok(()) => tracing::info!(file = %file.display(), "system APIExport identities fetched from root"),
                    Err(error) => tracing::warn!(error = %format!("{error:#}"), "keeping the system identities failed"),
                }
                return;
            }
            Ok(_) => tracing::debug!("root has not published every system identity yet"),
            Err(error) => tracing::info!(%error, "fetching the system APIExport identities from root; retrying"),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

async fn fetch(shard: &Shard, root_url: &str) -> Result<BTreeMap<String, String>, PeerError> {
    let mut identities = BTreeMap::new();
    for (name, group) in SYSTEM_EXPORTS {
        let path = format!("/clusters/{ROOT}/apis/apis.kcp.io/v1alpha1/apiexports/{name}");
        let export = shard.peers.get(root_url, &path).await?;
        if let Some(identity) = identity_of(&export) {
            identities.insert(group.to_string(), identity);
        }
    }
    Ok(identities)
}

/// Writes the identities durably: a temporary file, synced, renamed over the old one.
fn persist(file: &Path, identities: &BTreeMap<String, String>) -> anyhow::Result<()> {
    let tmp = file.with_extension("json.tmp");
    let bytes = serde_json::to_vec_pretty(identities)?;
    {
        use std::io::Write;
        let mut out = std::fs::File::create(&tmp).with_context(|| format!("create {}", tmp.display()))?;
        out.write_all(&bytes)?;
        out.sync_all()?;
    }
    std::fs::rename(&tmp, file).with_context(|| format!("rename {} into place", tmp.display()))?;
    if let Some(dir) = file.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}
