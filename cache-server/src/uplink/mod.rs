//! The uplink (`--parent`): this cache pushes everything it holds to a parent cache, and
//! follows the parent's Shard replicas to purge the replicas of deleted shards.
//!
//! Two tasks, each reconnecting on its own with [`failover`]: parents are tried in the
//! order given, moving to the next on any failure, after a backoff of 100 ms doubling up
//! to 5 s (back to 100 ms once a connection worked).
//!
//! - [`Uplink::session`] replicates. The parent answers the Hello with the position it
//!   holds for this cache (a resourceVersion of this cache's store); the uplink watches
//!   its own store from there and forwards every change, batching whatever is ready and
//!   keeping up to [`IN_FLIGHT_MAX`] batches unacknowledged, so that a write reaches the
//!   parent one hop later rather than one round trip per batch later. Without a usable
//!   position it first makes the parent equal to this cache ([`plan::repairs`]); the
//!   same comparison runs every `--resync-interval-seconds` to repair drift.
//! - [`Uplink::follow_shards`] (module [`shards`]) lists and watches the parent's Shard replicas and purges, locally,
//!   the replicas of a shard whose Shard replica the parent deletes.

pub mod plan;
pub mod shards;

use crate::replicas;
use crate::state::State;
use anyhow::Context;
use futures::FutureExt;
use http::Uri;
use plan::{Backoff, Batcher, Start};
use protocol::cache::cache_client::CacheClient;
use protocol::cache::{
    change, replicate_request, Batch, Change, Hello, ListRequest, Replica, ReplicateRequest, ReplicateResponse,
};
use protocol::replication::REPLICA_PREFIX;
use security::grpc::GrpcClient;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use store::StoreError;
use tokio::sync::{mpsc, Semaphore};
use tokio::time::{Instant, MissedTickBehavior};
use tonic::Streaming;
use tracing::Instrument;

/// Batches sent to the parent and not yet acknowledged, at most. When the parent is
/// slower, the uplink waits for acks and changes accumulate in the local change log
/// (bounded by retention; beyond it the next session starts with a full sync).
pub const IN_FLIGHT_MAX: usize = 64;
/// Requests queued towards the HTTP/2 stream; the in-flight bound does the real limiting.
const REQUESTS_BUFFER: usize = 8;
/// After this long without a change, the uplink still moves its position forward when
/// the store moved (a parent's resume point should not trail the change log forever).
const IDLE_PROGRESS: Duration = Duration::from_secs(1);

/// What the uplink tasks share.
pub struct Uplink {
    state: Arc<State>,
    parents: Vec<Uri>,
    client: GrpcClient,
    resync_interval: Duration,
}

/// How one connection to a parent ended.
#[derive(Debug)]
pub enum Ended {
    /// The server is shutting down.
    Stopped,
    /// The connection failed; `established` says whether it worked for a while first.
    Failed {
        /// The parent answered before the failure.
        established: bool,
        /// What went wrong.
        error: anyhow::Error,
    },
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

    /// Replicates to the parents until the server stops.
    pub async fn run(self: Arc<Self>) {
        let (parents, shutdown) = (self.parents.clone(), self.state.shutdown.clone());
        failover("replication", &parents, shutdown, |parent| {
            let this = self.clone();
            async move { this.session(parent).await }
        })
        .await;
    }

    /// One replication stream to `parent`.
    async fn session(&self, parent: Uri) -> Ended {
        let span = tracing::info_span!("uplink", %parent, sender = self.state.name);
        let mut shutdown = self.state.shutdown.clone();
        let mut established = false;
        let result = async {
            tokio::select! {
                result = self.replicate(&parent, &mut established) => result,
                _ = crate::state::stopped(&mut shutdown) => Ok(()),
            }
        }
        .instrument(span)
        .await;
        match result {
            Ok(()) => Ended::Stopped,
            Err(error) => Ended::Failed { established, error },
        }
    }

    async fn replicate(&self, parent: &Uri, established: &mut bool) -> anyhow::Result<()> {
        let mut cache = self.cache(parent);
        let (requests, requests_rx) = mpsc::channel(REQUESTS_BUFFER);
        let hello = Hello { sender: self.state.name.clone() };
        requests
            .send(ReplicateRequest { request: Some(replicate_request::Request::Hello(hello)) })
            .await
            .context("queue the Hello")?;
        let response = cache
            .replicate(tokio_stream::wrappers::ReceiverStream::new(requests_rx))
            .await
            .context("open a replication stream to the parent")?;
        let mut acks = response.into_inner();
        let answer = acks.message().await?.context("the parent ended the stream without answering the Hello")?;
        *established = true;
        tracing::info!(position = answer.position, "replicating to the parent");
        let link = Link { requests, in_flight: Arc::new(Semaphore::new(IN_FLIGHT_MAX)) };
        tokio::select! {
            result = self.forward(&mut cache, &link, answer.position) => result,
            error = read_acks(&mut acks, &link.in_flight) => Err(error),
        }
    }

    /// Forwards local changes from where the parent is, forever.
    async fn forward(
        &self,
        cache: &mut CacheClient<GrpcClient>,
        link: &Link,
        parent_position: u64,
    ) -> anyhow::Result<()> {
        let store = &self.state.store;
        let start = plan::start(parent_position, store.current_rv(), store.compacted_rv());
        let mut watch = match start {
            Start::Resume(rv) => match store.watch(REPLICA_PREFIX, rv) {
                Ok(watch) => watch,
                Err(StoreError::Gone { .. }) => self.full_sync(cache, link).await?,
                Err(error) => return Err(error).context("watch the local store"),
            },
            Start::FullSync => self.full_sync(cache, link).await?,
        };
        let mut sent = watch.progress_rv();
        let mut resync = tokio::time::interval_at(Instant::now() + self.resync_interval, self.resync_interval);
        resync.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                _ = resync.tick() => {
                    sent = forward_ready(&mut watch, link, None).await?;
                    self.repair(cache, link, &mut watch).await?;
                }
                next = tokio::time::timeout(IDLE_PROGRESS, watch.next()) => match next {
                    Ok(event) => sent = forward_ready(&mut watch, link, Some(event?)).await?,
                    Err(_idle) => {
                        let progress = watch.progress_rv();
                        if progress > sent {
                            link.send(Vec::new(), progress).await?;
                            sent = progress;
                        }
                    }
                },
            }
        }
    }

    /// Makes the parent equal to this cache, then watches from the local list.
    async fn full_sync(&self, cache: &mut CacheClient<GrpcClient>, link: &Link) -> anyhow::Result<store::Watch> {
        let parent = self.list_parent(cache).await?;
        let store = self.state.store.clone();
        let (local, rv) = tokio::task::spawn_blocking(move || replicas::list(&store, REPLICA_PREFIX, None, |_| true))
            .await
            .context("list the local store")??;
        let repairs = plan::repairs(&parent, &local, &self.state.name);
        tracing::info!(parent = parent.len(), local = local.len(), repairs = repairs.len(), rv, "full sync");
        let batches = plan::into_batches(repairs);
        if batches.is_empty() {
            link.send(Vec::new(), rv).await?;
        }
        let last = batches.len().saturating_sub(1);
        for (index, batch) in batches.into_iter().enumerate() {
            // Only the last batch moves the position: the parent is equal to rv once all
            // of them are applied.
            link.send(batch, if index == last { rv } else { 0 }).await?;
        }
        Ok(self.state.store.watch(REPLICA_PREFIX, rv)?)
    }

    /// Compares the parent with this cache as of the last forwarded position and sends
    /// forced changes for whatever differs.
    async fn repair(
        &self,
        cache: &mut CacheClient<GrpcClient>,
        link: &Link,
        watch: &mut store::Watch,
    ) -> anyhow::Result<()> {
        // Once every forwarded batch is applied, the parent must hold exactly what this
        // cache held at the forwarded position.
        link.drained().await?;
        let at = watch.progress_rv();
        let parent = self.list_parent(cache).await?;
        let store = self.state.store.clone();
        let listed = tokio::task::spawn_blocking(move || replicas::list(&store, REPLICA_PREFIX, Some(at), |_| true))
            .await
            .context("list the local store")?;
        let local = match listed {
            Ok((local, _)) => local,
            Err(error @ StoreError::Gone { .. }) => {
                tracing::warn!(%error, "skipping this drift check: the change log no longer reaches the position");
                return Ok(());
            }
            Err(error) => return Err(error).context("list the local store"),
        };
        let repairs = plan::repairs(&parent, &local, &self.state.name);
        if repairs.is_empty() {
            tracing::debug!(at, replicas = local.len(), "the parent holds what this cache holds");
            return Ok(());
        }
        tracing::warn!(at, repairs = repairs.len(), "the parent drifted from this cache; repairing");
        for batch in plan::into_batches(repairs) {
            link.send(batch, 0).await?;
        }
        Ok(())
    }

    /// Everything the parent holds (from every sender: whether a sibling relayed a later
    /// version decides what this cache may repair).
    async fn list_parent(&self, cache: &mut CacheClient<GrpcClient>) -> anyhow::Result<Vec<Replica>> {
        let listed = cache.list(ListRequest::default()).await.context("list what the parent holds")?;
        Ok(listed.into_inner().items)
    }
}

/// The sending half of a replication stream, with its in-flight bound.
struct Link {
    requests: mpsc::Sender<ReplicateRequest>,
    in_flight: Arc<Semaphore>,
}

impl Link {
    /// Sends a batch once fewer than [`IN_FLIGHT_MAX`] are unacknowledged.
    async fn send(&self, changes: Vec<Change>, position: u64) -> anyhow::Result<()> {
        // The permit comes back with the batch's ack (`read_acks`).
        self.in_flight.acquire().await.context("in-flight bound closed")?.forget();
        let batch = Batch { changes, position };
        self.requests
            .send(ReplicateRequest { request: Some(replicate_request::Request::Batch(batch)) })
            .await
            .map_err(|_| anyhow::anyhow!("the replication stream to the parent closed"))
    }

    /// Waits until every sent batch is acknowledged.
    async fn drained(&self) -> anyhow::Result<()> {
        let all = u32::try_from(IN_FLIGHT_MAX).context("in-flight bound")?;
        drop(self.in_flight.acquire_many(all).await.context("in-flight bound closed")?);
        Ok(())
    }
}

/// Returns one in-flight permit per ack, until the stream fails.
async fn read_acks(acks: &mut Streaming<ReplicateResponse>, in_flight: &Semaphore) -> anyhow::Error {
    loop {
        match acks.message().await {
            Ok(Some(ack)) => {
                tracing::trace!(position = ack.position, batches = ack.batches, "ack");
                in_flight.add_permits(1);
            }
            Ok(None) => return anyhow::anyhow!("the parent ended the replication stream"),
            Err(status) => return anyhow::Error::new(status).context("the parent ended the replication stream"),
        }
    }
}

/// Sends every change the watch has ready (after `first`, if given) in batches, the last
/// one carrying the watch's progress; returns that position. Without any change it sends
/// one empty batch, which moves the parent's position.
async fn forward_ready(watch: &mut store::Watch, link: &Link, first: Option<Arc<store::Event>>) -> anyhow::Result<u64> {
    let mut batcher = Batcher::default();
    if let Some(change) = first.as_deref().and_then(to_change) {
        batcher.push(change);
    }
    loop {
        let full = batcher.is_full();
        if !full {
            // Watch::next is cancel-safe: polling it once takes a ready event or nothing.
            if let Some(event) = watch.next().now_or_never() {
                let event = event?;
                if let Some(change) = to_change(&event) {
                    batcher.push(change);
                }
                continue;
            }
        }
        // Every change up to the progress is in this batch or an earlier one.
        let position = watch.progress_rv();
        link.send(batcher.take(), position).await?;
        if !full {
            return Ok(position);
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

/// Where a task that talks to a parent is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// Connect to the parent at this index.
    Connect(usize),
    /// Wait, then connect to the parent at this index.
    Wait(usize, Duration),
    /// The server is stopping.
    Stopped,
}

/// The phase after a connection to parent `index` of `count` ended.
fn after(ended: &Ended, index: usize, count: usize, backoff: &mut Backoff) -> Phase {
    match ended {
        Ended::Stopped => Phase::Stopped,
        Ended::Failed { established, .. } => {
            if *established {
                backoff.reset();
            }
            Phase::Wait((index + 1) % count.max(1), backoff.next_delay())
        }
    }
}

/// Runs `session` against the parents, failing over in order with backoff, until a
/// session reports [`Ended::Stopped`] or `shutdown` flips.
pub async fn failover<S, F>(
    task: &'static str,
    parents: &[Uri],
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    mut session: S,
) where
    S: FnMut(Uri) -> F,
    F: Future<Output = Ended>,
{
    if parents.is_empty() {
        return;
    }
    let mut backoff = Backoff::reconnect();
    let mut phase = Phase::Connect(0);
    loop {
        phase = match phase {
            Phase::Connect(index) => {
                let ended = session(parents[index].clone()).await;
                if let Ended::Failed { error, .. } = &ended {
                    tracing::warn!(task, parent = %parents[index], error = format_args!("{error:#}"), "parent connection failed");
                }
                after(&ended, index, parents.len(), &mut backoff)
            }
            Phase::Wait(index, delay) => tokio::select! {
                _ = tokio::time::sleep(delay) => Phase::Connect(index),
                _ = crate::state::stopped(&mut shutdown) => Phase::Stopped,
            },
            Phase::Stopped => return,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use prost::Message;
    use protocol::cache::ReplicaKey;
    use store::{EventKind, Versioned};

    #[test]
    fn failures_move_to_the_next_parent_with_growing_delays() {
        let mut backoff = Backoff::reconnect();
        let failed = |established| Ended::Failed { established, error: anyhow::anyhow!("down") };
        let ms = Duration::from_millis;
        assert_eq!(after(&failed(false), 0, 3, &mut backoff), Phase::Wait(1, ms(100)));
        assert_eq!(after(&failed(false), 1, 3, &mut backoff), Phase::Wait(2, ms(200)));
        assert_eq!(after(&failed(false), 2, 3, &mut backoff), Phase::Wait(0, ms(400)));
        // A connection that worked starts the delays over.
        assert_eq!(after(&failed(true), 0, 3, &mut backoff), Phase::Wait(1, ms(100)));
        assert_eq!(after(&failed(false), 0, 1, &mut backoff), Phase::Wait(0, ms(200)));
        assert_eq!(after(&Ended::Stopped, 0, 1, &mut backoff), Phase::Stopped);
    }

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
        };
        let upsert = to_change(&event(EventKind::Added, Some(value.clone()), None)).expect("upsert");
        assert_eq!(upsert, Change { change: Some(change::Change::Upsert(replica)), force: false });
        let tombstone = to_change(&event(EventKind::Deleted, None, Some(value))).expect("tombstone");
        assert_eq!(tombstone, Change { change: Some(change::Change::Tombstone(key)), force: false });
        assert_eq!(to_change(&event(EventKind::Modified, Some(Bytes::from_static(b"\xff")), None)), None);
    }
}
