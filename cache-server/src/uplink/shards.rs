//! Following the parent's Shard replicas: when the parent reports a Shard replica
//! DELETED, this cache purges that shard's replicas too, even if the root shard's
//! tombstone never came through this cache.
//!
//! Only DELETED events count. A Shard replica that is merely absent (from the first list,
//! or after relisting on 410) proves nothing: replication lags, and the parent may be
//! younger than this cache. Deletions the parent reported while this cache was
//! disconnected are seen only if the resumed watch still covers them; otherwise the
//! purge happens when the deletion reaches this cache another way (the root shard's own
//! tombstone, or this cache's parent relaying it as a tombstone).

use super::Uplink;
use crate::replicas;
use crate::state::State;
use protocol::cache::watch_event::Kind;
use protocol::cache::{Replica, WatchEvent};
use protocol::types::{CORE_KCP_GROUP as SHARD_GROUP, SHARD_RESOURCE};
use protocol::watcher::cache::{CacheConsumer, CacheSource};
use protocol::watcher::{drive, Backoff};
use std::sync::Arc;
use std::time::Duration;

/// Attempts at purging one deleted shard before giving up on it (and logging an error).
const PURGE_ATTEMPTS: usize = 5;

impl Uplink {
    /// Follows the parents' Shard replicas (the shared watcher of [`protocol::watcher`],
    /// failing over between parents) until the server stops.
    pub async fn follow_shards(self: Arc<Self>) {
        let caches = self.parents.iter().map(|parent| (parent.to_string(), self.cache(parent))).collect();
        let deletions = ShardDeletions { state: self.state.clone() };
        let mut source = CacheSource::new(caches, deletions).only(SHARD_GROUP, SHARD_RESOURCE);
        let mut shutdown = self.state.shutdown.clone();
        tokio::select! {
            _ = drive::run("shard deletions", &mut source, Backoff::reconnect()) => {}
            _ = crate::state::stopped(&mut shutdown) => {}
        }
    }
}

/// Purges the replicas of every shard whose Shard replica the parent deletes.
struct ShardDeletions {
    state: Arc<State>,
}

impl CacheConsumer for ShardDeletions {
    fn listed(&mut self, items: Vec<Replica>, rv: u64) {
        tracing::debug!(shards = items.len(), rv, "listed the parent's Shard replicas");
    }

    async fn event(&mut self, event: WatchEvent) {
        self.on_event(&event).await;
    }
}

impl ShardDeletions {
    async fn on_event(&self, event: &WatchEvent) {
        if event.kind != Kind::Deleted as i32 {
            return;
        }
        let Some(key) = event.replica.as_ref().and_then(|replica| replica.key.as_ref()) else { return };
        let shard = &key.name;
        let mut delay = Duration::from_millis(100);
        for attempt in 1..=PURGE_ATTEMPTS {
            match replicas::purge_origin(&self.state.store, shard).await {
                Ok(purged) => {
                    tracing::info!(shard, purged, "the parent deleted a Shard replica: purged its replicas here");
                    return;
                }
                Err(error) if attempt < PURGE_ATTEMPTS => {
                    tracing::warn!(shard, %error, attempt, "purge failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                Err(error) => {
                    tracing::error!(shard, %error, "purge failed; the shard's replicas stay until it is deleted again")
                }
            }
        }
    }
}
