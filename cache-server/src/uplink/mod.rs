//! The uplink (`--parent`): this cache pushes everything it holds to a parent cache, and
//! follows the parent's Shard replicas to purge the replicas of deleted shards.
//!
//! Two tasks, each failing over on its own with the shared policy of
//! [`protocol::watcher::Failover`]: parents are tried in the order given, moving to the
//! next on any failure, and after a round of failures waiting 100 ms doubling up to 5 s
//! (back to 100 ms once a connection worked).
//!
//! - [`Uplink::run`] replicates with the shared sender (crate `sender`, which the shards
//!   run too): the parent answers the Hello with the position it holds for this cache (a
//!   resourceVersion of this cache's store); the sender watches the store from there and
//!   forwards every change, keeping up to [`sender::IN_FLIGHT_MAX`] batches
//!   unacknowledged. Without a usable position it first makes the parent equal to this
//!   cache ([`plan::repairs`]); the same comparison runs every `--resync-interval-seconds`
//!   to repair drift. [`CacheOutbox`] says what is sent.
//!   Session records travel too: each origin's newest session this cache relays is
//!   announced to the parent, and a comparison that finds the parent naming another relay
//!   of a newer session drops the origin's replicas here ([`crate::fence`]).
//! - [`Uplink::follow_shards`] (module [`shards`]) follows the parent's Shard replicas with
//!   the shared watcher and purges, locally, the replicas of a shard whose Shard replica
//!   the parent deletes.

pub mod plan;
pub mod shards;

use crate::fence;
use crate::replicas;
use crate::state::State;
use anyhow::Context;
use bytes::Bytes;
use http::Uri;
use prost::Message;
use protocol::cache::cache_client::CacheClient;
use protocol::cache::{change, Change, ListRequest, OriginEpoch, Replica};
use protocol::replication::REPLICA_PREFIX;
use security::grpc::GrpcClient;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use store::StoreError;

/// What the uplink tasks share.
pub struct Uplink {
    state: Arc<State>,
    parents: Vec<Uri>,
    client: GrpcClient,
    resync_interval: Duration,
}

impl Uplink {
    /// An uplink to `parents` (in failover order) over `client`.
    pub(crate) fn new(state: Arc<State>, parents: Vec<Uri>, client: GrpcClient, resync_interval: Duration) -> Self {
        Uplink { state, parents, client, resync_interval }
    }

    /// A client of `parent`'s Cache service.
    fn cache(&self, parent: &Uri) -> CacheClient<GrpcClient> {
        CacheClient::with_origin(self.client.clone(), parent.clone())
            .max_decoding_message_size(protocol::replication::LIST_BYTES_MAX)
    }

    /// Each parent's name (for logs) and client, in failover order.
    fn caches(&self) -> Vec<(String, CacheClient<GrpcClient>)> {
        self.parents
            .iter()
            .map(|parent| (parent.to_string().trim_end_matches('/').to_string(), self.cache(parent)))
            .collect()
    }

    /// Replicates to the parents until the server stops.
    pub async fn run(self: Arc<Self>) {
        let lag = self.state.metrics.replication_lag.clone();
        let target = sender::Target { targets: self.caches(), resync: self.resync_interval, lag };
        let outbox = Arc::new(CacheOutbox { state: self.state.clone() });
        let mut shutdown = self.state.shutdown.clone();
        tokio::select! {
            _ = sender::run(outbox, target) => {}
            _ = crate::state::stopped(&mut shutdown) => {}
        }
    }
}

/// What this cache relays to its parent: every replica it holds.
struct CacheOutbox {
    state: Arc<State>,
}

impl CacheOutbox {
    /// Everything the parent holds (from every sender: whether a sibling relayed a later
    /// version decides what this cache may repair), and its origins' sessions.
    async fn list_parent(&self, cache: &mut CacheClient<GrpcClient>) -> anyhow::Result<Listed> {
        let listed = cache.list(ListRequest::default()).await.context("list what the parent holds")?.into_inner();
        Ok(Listed { replicas: listed.items, epochs: listed.epochs, rv: listed.rv })
    }

    /// Every local replica and session record, as of `at` (the newest when `None`).
    async fn list_local(&self, at: Option<u64>) -> anyhow::Result<Result<Listed, StoreError>> {
        let store = self.state.store.clone();
        tokio::task::spawn_blocking(move || {
            let (replicas, rv) = replicas::list(&store, REPLICA_PREFIX, at, |_| true)?;
            let epochs = replicas::list_epochs(&store, "", Some(rv))?;
            Ok(Listed { replicas, epochs, rv })
        })
        .await
        .context("list the local store")
    }

    /// What makes the parent equal to this cache, after dropping the origins the parent
    /// says moved on to another relay ([`fence::moved_on`]): their replicas here are stale
    /// copies the parent refuses, and kept they would only be relayed again. Announcements
    /// go first; repairs of origins the parent fences for this cache are left out, and so
    /// are those of origins whose session this cache has not settled (what it holds of
    /// them may be an older session's leftovers). Of the origins it settled and relays,
    /// the parent's copies it lacks are deleted whoever relayed them. Settlements go last,
    /// once the repairs made the parent hold the whole state too.
    async fn compare(&self, parent: &Listed, local: Listed) -> anyhow::Result<Vec<Change>> {
        let held: BTreeSet<&str> =
            local.replicas.iter().filter_map(|replica| Some(replica.key.as_ref()?.origin.as_str())).collect();
        let moved = fence::moved_on(&parent.epochs, &local.epochs, &held, &self.state.name);
        for record in &moved {
            self.drop_origin(record).await?;
        }
        let gone: BTreeSet<&str> = moved.iter().map(|record| record.origin.as_str()).collect();
        let kept: Vec<Replica> = local
            .replicas
            .into_iter()
            .filter(|replica| replica.key.as_ref().is_none_or(|key| !gone.contains(key.origin.as_str())))
            .collect();
        let me = self.state.name.as_str();
        let fenced = fence::fenced_at_parent(&parent.epochs, &local.epochs, me);
        let unsettled = fence::unsettled(&local.epochs);
        let owned = fence::relayed_here(&parent.epochs, &local.epochs, me);
        let mut changes = fence::announcements(&parent.epochs, &local.epochs);
        let repairs = plan::repairs(&parent.replicas, &kept, me, &owned);
        changes.extend(
            repairs.into_iter().filter(|change| {
                fence::origin_of(change).is_none_or(|o| !fenced.contains(o) && !unsettled.contains(o))
            }),
        );
        changes.extend(fence::settlements(&parent.epochs, &local.epochs, me));
        Ok(changes)
    }

    /// Drops every replica of an origin the parent says `record.via` relays in a newer
    /// session, unless the origin came back here meanwhile (its session here is at least
    /// as new by now).
    async fn drop_origin(&self, record: &OriginEpoch) -> anyhow::Result<()> {
        let origin = &record.origin;
        let here = replicas::read_epoch(&self.state.store, origin)?;
        if here.as_ref().is_some_and(|here| here.epoch >= record.epoch) {
            return Ok(());
        }
        let purged = replicas::purge_origin(&self.state.store, origin)
            .await
            .with_context(|| format!("drop the replicas of origin {origin:?}, which moved on"))?;
        tracing::info!(
            origin,
            purged,
            epoch = record.epoch,
            via = record.via,
            "the origin replicates through another cache now: dropped its replicas here"
        );
        Ok(())
    }
}

/// One side's replicas and session records as of one resourceVersion.
struct Listed {
    replicas: Vec<Replica>,
    epochs: Vec<OriginEpoch>,
    rv: u64,
}

impl sender::Outbox for CacheOutbox {
    fn sender(&self) -> &str {
        &self.state.name
    }

    fn store(&self) -> &store::Store {
        &self.state.store
    }

    /// The whole store: replicas (`r/`) and session records (`o/`) are relayed, and the
    /// rest (positions, remembered deletions) is skipped by [`to_change`].
    fn prefix(&self) -> Bytes {
        Bytes::new()
    }

    fn change_of(&self, event: &store::Event) -> Option<Change> {
        to_change(event)
    }

    /// Makes the parent equal to this cache as of a local list.
    async fn full_sync(&self, cache: &mut CacheClient<GrpcClient>) -> anyhow::Result<(Vec<Change>, u64)> {
        let parent = self.list_parent(cache).await?;
        let local = self.list_local(None).await??;
        let (local_count, rv) = (local.replicas.len(), local.rv);
        let repairs = self.compare(&parent, local).await?;
        tracing::info!(
            parent = parent.replicas.len(),
            parent_rv = parent.rv,
            local = local_count,
            repairs = repairs.len(),
            rv,
            "compared with the parent"
        );
        Ok((repairs, rv))
    }

    /// Once every forwarded batch is applied, the parent must hold exactly what this cache
    /// held at the forwarded position `at`: forced changes for whatever differs.
    async fn repairs(&self, cache: &mut CacheClient<GrpcClient>, at: u64) -> anyhow::Result<Vec<Change>> {
        let parent = self.list_parent(cache).await?;
        match self.list_local(Some(at)).await? {
            Ok(local) => self.compare(&parent, local).await,
            Err(error @ StoreError::Gone { .. }) => {
                tracing::warn!(%error, "skipping this drift check: the change log no longer reaches the position");
                Ok(Vec::new())
            }
            Err(error) => Err(error).context("list the local store"),
        }
    }
}

/// The change to forward for a local store event: the replica as it is, a tombstone of
/// the deleted one's key, or the announcement of a session this cache relays now. Nothing
/// else of the store leaves it.
pub fn to_change(event: &store::Event) -> Option<Change> {
    if event.key.starts_with(fence::EPOCH_PREFIX.as_bytes()) {
        let record = OriginEpoch::decode(&event.value.as_ref()?[..]).ok()?;
        return Some(fence::announcement(&record.origin, record.epoch, record.settled));
    }
    if !event.key.starts_with(REPLICA_PREFIX.as_bytes()) {
        return None;
    }
    let decoded = |bytes: &[u8]| match replicas::decode(bytes) {
        Ok(replica) => Some(replica),
        Err(error) => {
            tracing::warn!(rv = event.rv, %error, "not forwarding an undecodable replica");
            None
        }
    };
    let change = match (&event.value, &event.prev) {
        (Some(value), _) => change::Change::Upsert(decoded(value)?),
        (None, Some(prev)) => change::Change::Tombstone(decoded(&prev.value)?.key?),
        (None, None) => return None,
    };
    Some(Change { change: Some(change), force: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use prost::Message;
    use protocol::cache::ReplicaKey;
    use store::{EventKind, Versioned};

    #[test]
    fn store_events_become_changes() {
        let key = ReplicaKey { origin: "s".into(), name: "n".into(), ..ReplicaKey::default() };
        let replica = Replica { key: Some(key.clone()), source_rv: 7, ..Replica::default() };
        let value = Bytes::from(replica.encode_to_vec());
        let event = |kind, value: Option<Bytes>, prev: Option<Bytes>| store::Event {
            rv: 9,
            key: Bytes::from_static(b"r/x"),
            kind,
            value,
            prev: prev.map(|value| Versioned { rv: 3, value }),
            cause: None,
        };
        let upsert = to_change(&event(EventKind::Added, Some(value.clone()), None)).expect("upsert");
        assert_eq!(upsert, Change { change: Some(change::Change::Upsert(replica)), force: false });
        let tombstone = to_change(&event(EventKind::Deleted, None, Some(value))).expect("tombstone");
        assert_eq!(tombstone, Change { change: Some(change::Change::Tombstone(key)), force: false });
        assert_eq!(to_change(&event(EventKind::Modified, Some(Bytes::from_static(b"\xff")), None)), None);

        let record = OriginEpoch { origin: "s".into(), epoch: 12, via: "s".into(), settled: true };
        let announced = store::Event {
            key: Bytes::from_static(b"o/s"),
            ..event(EventKind::Added, Some(Bytes::from(record.encode_to_vec())), None)
        };
        assert_eq!(to_change(&announced), Some(fence::announcement("s", 12, true)), "a session record is announced");
        let position = store::Event {
            key: Bytes::from_static(b"p/s"),
            ..event(EventKind::Modified, Some(Bytes::copy_from_slice(&7u64.to_be_bytes())), None)
        };
        assert_eq!(to_change(&position), None, "positions stay here");
    }
}
