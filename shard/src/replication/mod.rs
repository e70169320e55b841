//! Replication: this shard pushes the objects every shard must see to its cache servers.
//!
//! The shard tails its own change log and streams batches of upserts and tombstones to one
//! cache server at a time (`--cache-server URL[,URL…]`, failing over in order). Each batch
//! carries the shard's store resourceVersion up to which everything has been sent; the
//! cache acknowledges it once durable, and a new stream resumes from the position the
//! cache recorded. A cache without a position for this shard, or one whose position the
//! change log no longer reaches, gets a full sync: the diff between what the shard has and
//! what the cache holds of it. The same diff runs every `--cache-resync-interval-seconds`,
//! so a replica deleted or altered in the cache is repaired.
//!
//! The stream itself (failover, Hello, resume or full sync, batching, pipelined acks,
//! drift repair) is the shared sender of crate `sender`, which the cache server's uplink
//! runs too; [`ShardOutbox`] says what is replicated.
//!
//! Each stream begins a new replication session whose epoch the Hello announces: the
//! larger of the last one (recorded under [`EPOCH_KEY`]) plus one and the wall clock in
//! microseconds, so it grows across restarts, and a shard whose data directory was lost
//! still starts above every session the caches remember of it ([`next_epoch`]). Caches
//! fence by it: a regional cache this shard left can no longer change this shard's
//! replicas in the parent (see the cache server's `fence` module).
//!
//! - [`replica`]: the pure part (stored object → replica, key parsing, the diff).

pub mod replica;

use crate::state::Shard;
use anyhow::Context;
use apiserver::objects;
use bytes::Bytes;
use parking_lot::Mutex;
use protocol::cache::cache_client::CacheClient;
use protocol::cache::{Change, ListRequest, Replica};
use protocol::meta;
use protocol::replication::REPLICATED;
use protocol::wellknown::PATH_ANNOTATION;
use security::grpc::GrpcClient;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use store::{Event, ListOptions};

/// The store key that records the last replication session's epoch (8 bytes, big
/// endian); internal, never served or replicated.
const EPOCH_KEY: &str = "internal/replication-session";

/// Where and how this shard replicates.
#[derive(Clone)]
pub struct Replication {
    /// Cache servers, in failover order.
    pub urls: Vec<String>,
    /// The mutual-TLS gRPC client (this shard's peer certificate).
    pub client: GrpcClient,
    /// How often the full diff runs.
    pub resync: Duration,
}

/// The epoch of a new replication session, given the last one recorded here (none on a
/// new or wiped data directory, or one written before epochs were recorded) and the
/// wall clock in microseconds: above the last one however the clock moved, and above
/// every session of this shard a cache remembers unless the clock went back.
pub fn next_epoch(last: Option<u64>, now_micros: u64) -> u64 {
    last.map_or(0, |last| last.saturating_add(1)).max(now_micros).max(1)
}

/// Replicates forever through the shared sender ([`sender::run`]), failing over between
/// the cache servers.
pub async fn run(shard: Arc<Shard>, replication: Replication) {
    let targets = crate::cache::clients(&replication.urls, &replication.client);
    let lag = shard.metrics.replication_lag.clone();
    let outbox = ShardOutbox { shard, paths: Mutex::default() };
    sender::run(Arc::new(outbox), sender::Target { targets, resync: replication.resync, lag }).await;
}

/// What this shard replicates: the replicated objects of its store.
struct ShardOutbox {
    shard: Arc<Shard>,
    paths: Mutex<Paths>,
}

impl sender::Outbox for ShardOutbox {
    fn sender(&self) -> &str {
        &self.shard.name
    }

    fn store(&self) -> &store::Store {
        &self.shard.store
    }

    fn prefix(&self) -> Bytes {
        Bytes::new()
    }

    /// Larger than every earlier session's ([`next_epoch`]), and durable before the Hello
    /// announces it, so a restarted shard never reuses one.
    async fn epoch(&self) -> anyhow::Result<u64> {
        let store = &self.shard.store;
        let stored = store.get(EPOCH_KEY.as_bytes()).context("read the last replication session")?;
        let last = stored.and_then(|stored| Some(u64::from_be_bytes(stored.value.as_ref().try_into().ok()?)));
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let epoch = next_epoch(last, u64::try_from(now.as_micros()).unwrap_or(u64::MAX));
        store
            .put(EPOCH_KEY, Bytes::copy_from_slice(&epoch.to_be_bytes()), store::Precondition::None)
            .await
            .context("record a new replication session")?;
        Ok(epoch)
    }

    fn change_of(&self, event: &Event) -> Option<Change> {
        change_of(&self.shard, &mut self.paths.lock(), event)
    }

    async fn full_sync(&self, cache: &mut CacheClient<GrpcClient>) -> anyhow::Result<(Vec<Change>, u64)> {
        let (local, position) = local_replicas(&self.shard, &mut self.paths.lock())?;
        let cached = cached_replicas(&self.shard, cache).await?;
        Ok((replica::diff(local, cached), position))
    }

    async fn repairs(&self, cache: &mut CacheClient<GrpcClient>, _at: u64) -> anyhow::Result<Vec<Change>> {
        // The cache first: anything the shard lists afterwards is at least as new.
        let cached = cached_replicas(&self.shard, cache).await?;
        let (local, _) = local_replicas(&self.shard, &mut self.paths.lock())?;
        Ok(replica::diff(local, cached))
    }
}

/// The change a store event makes to the cache, if any.
fn change_of(shard: &Shard, paths: &mut Paths, event: &Event) -> Option<Change> {
    let parts = replica::replicated_key(&event.key)?;
    let current = event.value.as_ref().and_then(|value| {
        let object = objects::decode(&store::Versioned { rv: event.rv, value: value.clone() }).ok()?;
        replica::replica_of(&shard.name, &parts, &object, paths.of(shard, parts.cluster))
    });
    if let Some(replica) = current {
        return Some(replica::upsert(replica, false));
    }
    // Deleted, or no longer replicated (its annotation was removed): a tombstone (a no-op
    // in a cache that never had it).
    let was_replicated = event.prev.as_ref().is_some_and(|prev| {
        objects::decode(prev)
            .is_ok_and(|object| protocol::replication::is_replicated(parts.row.group, parts.row.resource, &object))
    });
    was_replicated.then(|| replica::tombstone(replica::key_of(&shard.name, &parts)))
}

/// Every replica of this shard the cache holds.
async fn cached_replicas(shard: &Shard, cache: &mut CacheClient<GrpcClient>) -> anyhow::Result<Vec<Replica>> {
    let request = ListRequest { origin: shard.name.clone(), ..ListRequest::default() };
    Ok(cache.list(request).await?.into_inner().items)
}

/// Every replica this shard would send now, and a store resourceVersion at or below every
/// list's (a watch from there repeats some changes, which the cache ignores).
fn local_replicas(shard: &Shard, paths: &mut Paths) -> anyhow::Result<(Vec<Replica>, u64)> {
    let mut replicas = Vec::new();
    let mut position = u64::MAX;
    for row in REPLICATED {
        let group = if row.group.is_empty() { "core" } else { row.group };
        let prefix = format!("{group}/{}/", row.resource);
        let page =
            shard.store.list(&ListOptions { prefix: prefix.into_bytes(), ..ListOptions::default() }, |_, _| true)?;
        position = position.min(page.rv);
        for (key, stored) in &page.items {
            let Some(parts) = replica::replicated_key(key) else { continue };
            let Ok(object) = objects::decode(stored) else { continue };
            if let Some(replica) = replica::replica_of(&shard.name, &parts, &object, paths.of(shard, parts.cluster)) {
                replicas.push(replica);
            }
        }
    }
    Ok((replicas, if position == u64::MAX { shard.store.current_rv() } else { position }))
}

/// Canonical paths of this shard's logical clusters, read once per stream (a path never
/// changes; a cluster without one yet is read again next time).
#[derive(Default)]
struct Paths {
    by_cluster: HashMap<String, String>,
}

impl Paths {
    fn of(&mut self, shard: &Shard, cluster: &str) -> Option<&str> {
        if !self.by_cluster.contains_key(cluster) {
            let path = shard.logical_cluster_record(cluster).and_then(|record| {
                let object: serde_json::Value = serde_json::from_slice(&record.value).ok()?;
                meta::annotations(&object).get(PATH_ANNOTATION).cloned()
            })?;
            self.by_cluster.insert(cluster.to_string(), path);
        }
        self.by_cluster.get(cluster).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::next_epoch;

    #[test]
    fn sessions_grow_across_restarts_clock_steps_and_lost_data() {
        let now = 1_780_000_000_000_000;
        assert_eq!(next_epoch(None, now), now, "a new data directory starts at the clock");
        assert_eq!(next_epoch(Some(now - 5), now), now, "the clock moved on");
        assert_eq!(next_epoch(Some(now), now), now + 1, "two sessions in one microsecond");
        assert_eq!(next_epoch(Some(now + 500), now), now + 501, "the clock went back: still above the last");
        // Before epochs were recorded they were store resourceVersions, far below the clock.
        assert_eq!(next_epoch(None, now), now);
        assert!(next_epoch(None, now) > 10_000_000);
        assert_eq!(next_epoch(None, 0), 1, "0 announces no session");
        assert_eq!(next_epoch(Some(u64::MAX), now), u64::MAX);
    }
}
