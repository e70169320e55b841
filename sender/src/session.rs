//! One sender's sessions: failover between targets, and per session the Hello, resume or
//! full sync, forwarding, idle progress and drift repair.

use crate::link::{Link, Opened};
use crate::metrics::LagMetrics;
use crate::plan::Batcher;
use anyhow::Context;
use bytes::Bytes;
use futures::FutureExt;
use protocol::cache::cache_client::CacheClient;
use protocol::cache::Change;
use protocol::watcher::drive::{self, Session};
use protocol::watcher::{self, Backoff, Start};
use security::grpc::GrpcClient;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use store::{Event, Store, StoreError};
use tokio::time::{Instant, MissedTickBehavior};
use tracing::Instrument;

/// How often the position moves forward when the store moved without a change to send
/// (other keys' writes): a target's resume point should not trail the change log.
const IDLE_PROGRESS: Duration = Duration::from_secs(1);

/// What a sender replicates: the shard and the cache server each implement it.
pub trait Outbox: Send + Sync + 'static {
    /// This sender's name, sent in the Hello.
    fn sender(&self) -> &str;

    /// The local store whose changes are sent.
    fn store(&self) -> &Store;

    /// Which keys of the store are followed (empty: all).
    fn prefix(&self) -> Bytes;

    /// A new replication session of this sender, announced in the Hello: larger than every
    /// earlier one, across restarts (a shard persists it). The default, 0, announces none
    /// (a cache server relays its origins' sessions instead).
    fn epoch(&self) -> impl Future<Output = anyhow::Result<u64>> + Send {
        async { Ok(0) }
    }

    /// The change a store event makes at the target, if any.
    fn change_of(&self, event: &Event) -> Option<Change>;

    /// Everything that makes `target` equal to the local store, and the store
    /// resourceVersion at which that holds (the watch goes on from there).
    fn full_sync(
        &self,
        target: &mut CacheClient<GrpcClient>,
    ) -> impl Future<Output = anyhow::Result<(Vec<Change>, u64)>> + Send;

    /// What repairs `target`'s drift, given that every change up to `at` is applied there.
    fn repairs(
        &self,
        target: &mut CacheClient<GrpcClient>,
        at: u64,
    ) -> impl Future<Output = anyhow::Result<Vec<Change>>> + Send;
}

/// Where a sender sends: targets in failover order, and how often drift is repaired.
pub struct Target {
    /// Each target's name (for logs) and client.
    pub targets: Vec<(String, CacheClient<GrpcClient>)>,
    /// How often the local store and the target are compared.
    pub resync: Duration,
    /// Where the lag to each target is observed.
    pub lag: LagMetrics,
}

/// Replicates `outbox` to the targets forever, one session at a time, failing over with
/// the shared policy.
pub async fn run<O: Outbox>(outbox: Arc<O>, target: Target) {
    let Target { targets, resync, lag } = target;
    drive::sessions(targets.len(), Backoff::reconnect(), |index| {
        let (name, cache) = targets[index].clone();
        let outbox = outbox.clone();
        let lag = (lag.clone(), name.clone());
        async move {
            let span = tracing::info_span!("replicate", to = %name, sender = outbox.sender());
            let mut established = false;
            let result = session(&*outbox, cache, resync, lag, &mut established).instrument(span).await;
            if let Err(error) = result {
                tracing::warn!(to = %name, error = format_args!("{error:#}"), "replication stream ended; failing over");
            }
            Session::Failed { established }
        }
    })
    .await;
}

/// One stream to one target, until something fails.
async fn session<O: Outbox>(
    outbox: &O,
    mut cache: CacheClient<GrpcClient>,
    resync: Duration,
    lag: (LagMetrics, String),
    established: &mut bool,
) -> anyhow::Result<()> {
    let epoch = outbox.epoch().await.context("begin a replication session")?;
    // Read after the session began: the target holds this sender's whole state once its
    // position reaches it.
    let head = outbox.store().current_rv();
    let Opened { link, mut acks, position } = Link::open(&mut cache, outbox.sender(), (epoch, head), lag).await?;
    *established = true;
    tracing::info!(position, epoch, "replicating");
    tokio::select! {
        result = forward(outbox, &mut cache, &link, position, resync) => result,
        error = link.read_acks(&mut acks) => Err(error),
    }
}

/// Forwards local changes from where the target is, forever.
async fn forward<O: Outbox>(
    outbox: &O,
    cache: &mut CacheClient<GrpcClient>,
    link: &Link,
    position: u64,
    resync: Duration,
) -> anyhow::Result<()> {
    let mut watch = begin(outbox, cache, link, position).await?;
    let mut sent = watch.progress_rv();
    let mut resync = tokio::time::interval_at(Instant::now() + resync, resync);
    resync.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut idle = tokio::time::interval(IDLE_PROGRESS);
    idle.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            _ = resync.tick() => {
                sent = forward_ready(outbox, &mut watch, link, None).await?.unwrap_or(sent);
                repair(outbox, cache, link, &mut watch).await?;
            }
            // Before the events: a store busy with keys that are not sent would otherwise
            // keep the position from ever moving.
            _ = idle.tick() => {
                let progress = watch.progress_rv();
                if progress > sent {
                    link.send(Vec::new(), progress, String::new(), None).await?;
                    sent = progress;
                }
            }
            event = watch.next() => {
                sent = forward_ready(outbox, &mut watch, link, Some(event?)).await?.unwrap_or(sent);
            }
        }
    }
}

/// The watch to forward from: resumed at `position`, or after a full sync when the
/// position is unusable or the change log no longer reaches it.
async fn begin<O: Outbox>(
    outbox: &O,
    cache: &mut CacheClient<GrpcClient>,
    link: &Link,
    position: u64,
) -> anyhow::Result<store::Watch> {
    let store = outbox.store();
    if let Start::Resume(rv) = watcher::start(position, store.current_rv(), store.compacted_rv()) {
        match store.watch(outbox.prefix(), rv) {
            Ok(watch) => return Ok(watch),
            Err(StoreError::Gone { .. }) => {}
            Err(error) => return Err(error).context("watch the local store"),
        }
    }
    let (changes, rv) = outbox.full_sync(cache).await?;
    tracing::info!(changes = changes.len(), rv, "full sync");
    link.send_all(changes, rv).await?;
    Ok(store.watch(outbox.prefix(), rv)?)
}

/// Sends the changes the watch has ready (after `first`, if given) in batches, each
/// carrying the watch's progress; returns the last position sent, if any batch was.
async fn forward_ready<O: Outbox>(
    outbox: &O,
    watch: &mut store::Watch,
    link: &Link,
    first: Option<Arc<Event>>,
) -> anyhow::Result<Option<u64>> {
    let mut batcher = Batcher::default();
    // The spans that wrote this batch's changes, when traces are exported, and when its
    // oldest change was seen.
    let mut causes = Vec::new();
    let mut since = None;
    let take = |event: &Event,
                batcher: &mut Batcher,
                causes: &mut Vec<telemetry::Cause>,
                since: &mut Option<std::time::Instant>| {
        if let Some(change) = outbox.change_of(event) {
            batcher.push(change);
            causes.extend(event.cause);
            since.get_or_insert_with(std::time::Instant::now);
        }
    };
    if let Some(event) = first.as_deref() {
        take(event, &mut batcher, &mut causes, &mut since);
    }
    let mut sent = None;
    loop {
        let full = batcher.is_full();
        if !full {
            // Watch::next is cancel-safe: polling it once takes a ready event or nothing.
            if let Some(event) = watch.next().now_or_never() {
                take(&*event?, &mut batcher, &mut causes, &mut since);
                continue;
            }
        }
        if batcher.is_empty() {
            return Ok(sent);
        }
        // Every change up to the progress is in this batch or an earlier one.
        let position = watch.progress_rv();
        send_traced(link, batcher.take(), position, std::mem::take(&mut causes), since.take()).await?;
        sent = Some(position);
        if !full {
            return Ok(sent);
        }
    }
}

/// Sends one batch; when sampled requests wrote its changes, under a span of its own (a
/// root, not a child of the long-lived session's span) linked to each of them, whose
/// context travels in the batch so that the target's apply continues it. (A batch only
/// unsampled requests wrote is not traced, as they were not.)
async fn send_traced(
    link: &Link,
    changes: Vec<Change>,
    position: u64,
    mut causes: Vec<telemetry::Cause>,
    since: Option<std::time::Instant>,
) -> anyhow::Result<()> {
    causes.retain(telemetry::Cause::is_sampled);
    if causes.is_empty() {
        return link.send(changes, position, String::new(), since).await;
    }
    let span = tracing::info_span!(
        "replication.send",
        otel.kind = "producer",
        messaging.operation.type = "send",
        messaging.batch.message_count = changes.len(),
        atoll.replication.position = position,
    );
    telemetry::Cause::follow_all(&span, causes);
    let traceparent = telemetry::propagation::traceparent(&span).unwrap_or_default();
    link.send(changes, position, traceparent, since).instrument(span).await
}

/// Once every sent batch is applied, compares the target with the local store and sends
/// forced changes for whatever differs (moving no position).
async fn repair<O: Outbox>(
    outbox: &O,
    cache: &mut CacheClient<GrpcClient>,
    link: &Link,
    watch: &mut store::Watch,
) -> anyhow::Result<()> {
    link.drained().await?;
    let at = watch.progress_rv();
    let repairs = outbox.repairs(cache, at).await?;
    if repairs.is_empty() {
        tracing::debug!(at, "the target holds what this store holds");
        return Ok(());
    }
    tracing::warn!(at, repairs = repairs.len(), "the target drifted; repairing");
    link.send_all(repairs, 0).await
}
