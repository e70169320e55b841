//! Membership: this shard's Shard object in root, and the shard set every shard keeps.
//!
//! Each shard registers itself (`core.kcp.io/v1alpha1` Shard named after `--name`, in
//! the root logical cluster) and then reads the Shard objects and root's WorkspaceTypes
//! every second. What it read becomes the consistent-hash ring the workspace scheduler
//! uses, and is written to `DATA_DIR/membership.json`, so that a restarted shard can
//! schedule workspaces while root is unreachable. The file is replaced atomically
//! (write, fsync, rename) and only when the set changed. The loop that registers and
//! reads is [`crate::controllers::membership`].

use parking_lot::RwLock;
use prometheus_client::metrics::gauge::Gauge;
use protocol::meta;
use protocol::ring::ShardRing;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One shard of the installation, from its Shard object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardInfo {
    /// The Shard object's name (the process's `--name`).
    pub name: String,
    /// Where shards reach it.
    pub base_url: String,
    /// Where clients reach it (defaults to the base URL).
    pub external_url: String,
}

impl ShardInfo {
    fn from_object(object: &Value) -> Option<ShardInfo> {
        let name = meta::name(object)?.to_string();
        let base_url = object.pointer("/spec/baseURL").and_then(Value::as_str)?.trim_end_matches('/').to_string();
        let external_url = object
            .pointer("/spec/externalURL")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
            .map(|u| u.trim_end_matches('/').to_string())
            .unwrap_or_else(|| base_url.clone());
        Some(ShardInfo { name, base_url, external_url })
    }
}

/// What a shard knows of the installation, as persisted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Persisted {
    shards: Vec<ShardInfo>,
    root_workspace_types: Vec<Value>,
}

impl Persisted {
    /// The set that root's Shard objects and WorkspaceTypes describe; Shard objects
    /// without a name or base URL are left out.
    pub fn from_objects(shards: &[Value], root_workspace_types: Vec<Value>) -> Persisted {
        Persisted { shards: shards.iter().filter_map(ShardInfo::from_object).collect(), root_workspace_types }
    }
}

/// The shard set at one moment, with its ring.
#[derive(Debug, Clone)]
pub struct ShardSet {
    shards: BTreeMap<String, ShardInfo>,
    ring: ShardRing,
    root_types: BTreeMap<String, Value>,
}

impl ShardSet {
    fn new(persisted: &Persisted) -> ShardSet {
        let shards: BTreeMap<_, _> = persisted.shards.iter().map(|s| (s.name.clone(), s.clone())).collect();
        let ring = ShardRing::new(shards.keys().cloned());
        let root_types = persisted
            .root_workspace_types
            .iter()
            .filter_map(|t| Some((meta::name(t)?.to_string(), t.clone())))
            .collect();
        ShardSet { shards, ring, root_types }
    }

    /// The consistent-hash ring over the known shards.
    pub fn ring(&self) -> &ShardRing {
        &self.ring
    }

    /// A known shard.
    pub fn shard(&self, name: &str) -> Option<&ShardInfo> {
        self.shards.get(name)
    }

    /// A WorkspaceType of the root logical cluster, from the last copy read.
    pub fn root_workspace_type(&self, name: &str) -> Option<Value> {
        self.root_types.get(name).cloned()
    }

    /// Every known shard, by name.
    pub fn iter(&self) -> impl Iterator<Item = &ShardInfo> {
        self.shards.values()
    }

    /// How many shards are known.
    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// Whether no shard is known yet.
    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }
}

/// The current shard set, swapped whole when it changes.
#[derive(Debug)]
pub struct Membership {
    current: RwLock<Arc<ShardSet>>,
    persisted: RwLock<Persisted>,
    file: PathBuf,
    known_shards: Gauge,
}

impl Membership {
    /// Starts from the set persisted at `file`, if any (a missing or unreadable file is an
    /// empty set: the first sync fills it).
    pub fn load(file: PathBuf, known_shards: Gauge) -> Membership {
        let persisted: Persisted =
            std::fs::read(&file).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default();
        known_shards.set(persisted.shards.len() as i64);
        Membership {
            current: RwLock::new(Arc::new(ShardSet::new(&persisted))),
            persisted: RwLock::new(persisted),
            file,
            known_shards,
        }
    }

    /// The set now.
    pub fn current(&self) -> Arc<ShardSet> {
        self.current.read().clone()
    }

    /// Replaces the set when it changed, and persists it.
    pub fn update(&self, mut next: Persisted) {
        next.shards.sort_by(|a, b| a.name.cmp(&b.name));
        next.root_workspace_types.sort_by(|a, b| meta::name(a).cmp(&meta::name(b)));
        if *self.persisted.read() == next {
            return;
        }
        if let Err(error) = write_atomically(&self.file, &next) {
            tracing::warn!(%error, file = %self.file.display(), "could not persist the shard set");
        }
        tracing::info!(shards = ?next.shards.iter().map(|s| &s.name).collect::<Vec<_>>(), "shard set changed");
        self.known_shards.set(next.shards.len() as i64);
        *self.current.write() = Arc::new(ShardSet::new(&next));
        *self.persisted.write() = next;
    }
}

fn write_atomically(file: &Path, value: &Persisted) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = file.with_extension("tmp");
    let mut out = std::fs::File::create(&tmp)?;
    out.write_all(&serde_json::to_vec_pretty(value).expect("JSON values serialize"))?;
    out.sync_all()?;
    std::fs::rename(&tmp, file)?;
    if let Some(dir) = file.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_set_survives_a_restart_through_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("membership.json");
        let membership = Membership::load(file.clone(), Gauge::default());
        assert!(membership.current().is_empty());
        let shard = |name: &str| json!({"metadata": {"name": name}, "spec": {"baseURL": format!("https://{name}/")}});
        let set = Persisted {
            shards: [shard("root"), shard("shard-1"), json!({"metadata": {"name": "broken"}})]
                .iter()
                .filter_map(ShardInfo::from_object)
                .collect(),
            root_workspace_types: vec![json!({"metadata": {"name": "universal"}, "spec": {}})],
        };
        membership.update(set);
        let gauge = Gauge::default();
        let reloaded = Membership::load(file, gauge.clone());
        let current = reloaded.current();
        assert_eq!(current.len(), 2);
        assert_eq!(gauge.get(), 2);
        assert_eq!(current.shard("shard-1").unwrap().base_url, "https://shard-1");
        assert_eq!(current.shard("root").unwrap().external_url, "https://root");
        assert!(current.root_workspace_type("universal").is_some());
        assert!(current.ring().shard_for("abc").is_some());
    }
}
