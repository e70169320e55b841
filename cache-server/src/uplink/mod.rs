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
//! - [`Uplink::follow_shards`] (module [`shards`]) follows the parent's Shard replicas with
//!   the shared watcher and purges, locally, the replicas of a shard whose Shard replica
//!   the parent deletes.

pub mod plan;
pub mod shards;

use crate::replicas;
use crate::state::State;
use anyhow::Context;
use bytes::Bytes;
use http::Uri;
use protocol::cache::cache_client::CacheClient;
use protocol::cache::{change, Change, ListRequest, Replica};
use protocol::replication::REPLICA_PREFIX;
use security::grpc::GrpcClient;
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
    /// version decides what this cache may repair).
    async fn list_parent(&self, cache: &mut CacheClient<GrpcClient>) -> anyhow::Result<Vec<Replica>> {
        let listed = cache.list(ListRequest::default()).await.context("list what the parent holds")?;
        Ok(listed.into_inner().items)
    }

    /// Every local replica, as of `at` (the newest when `None`), and that resourceVersion.
    async fn list_local(&self, at: Option<u64>) -> anyhow::Result<Result<(Vec<Replica>, u64), StoreError>> {
        let store = self.state.store.clone();
        tokio::task::spawn_blocking(move || replicas::list(&store, REPLICA_PREFIX, at, |_| true))
            .await
            .context("list the local store")
    }
}

impl sender::Outbox for CacheOutbox {
    fn sender(&self) -> &str {
        &self.state.name
    }

    fn store(&self) -> &store::Store {
        &self.state.store
    }

    fn prefix(&self) -> Bytes {
        Bytes::from_static(REPLICA_PREFIX.as_bytes())
    }

    fn change_of(&self, event: &store::Event) -> Option<Change> {
        to_change(event)
    }

    /// Makes the parent equal to this cache as of a local list.
    async fn full_sync(&self, cache: &mut CacheClient<GrpcClient>) -> anyhow::Result<(Vec<Change>, u64)> {
        let parent = self.list_parent(cache).await?;
        let (local, rv) = self.list_local(None).await??;
        let repairs = plan::repairs(&parent, &local, &self.state.name);
        tracing::info!(
            parent = parent.len(),
            local = local.len(),
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
            Ok((local, _)) => Ok(plan::repairs(&parent, &local, &self.state.name)),
            Err(error @ StoreError::Gone { .. }) => {
                tracing::warn!(%error, "skipping this drift check: the change log no longer reaches the position");
                Ok(Vec::new())
            }
            Err(error) => Err(error).context("list the local store"),
        }
    }
}

/// The change to forward for a local store event: the replica as it is, or a tombstone
/// of the deleted one's key.
pub fn to_change(event: &store::Event) -> Option<Change> {
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
    }
}
