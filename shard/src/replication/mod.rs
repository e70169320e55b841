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
//! - [`replica`]: the pure part (stored object → replica, key parsing, the diff).

pub mod replica;

use crate::objects;
use crate::state::Shard;
use bytes::Bytes;
use futures::FutureExt;
use protocol::cache::cache_client::CacheClient;
use protocol::cache::{replicate_request, Batch, Change, Hello, ListRequest, Replica, ReplicateRequest};
use protocol::meta;
use protocol::replication::{LIST_BYTES_MAX, REPLICATED};
use protocol::wellknown::PATH_ANNOTATION;
use security::grpc::GrpcClient;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::{Event, ListOptions, StoreError};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// Changes per batch at most.
const BATCH_CHANGES_MAX: usize = 512;
/// Batches queued towards one cache before the tail waits (gRPC flow control bounds
/// what is in flight beyond that).
const OUTBOUND_BATCHES: usize = 64;
/// How often an idle stream still moves the position forward (other resources' writes).
const POSITION_INTERVAL: Duration = Duration::from_secs(1);
/// Reconnect back-off bounds.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

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

/// Replicates forever, failing over between the cache servers.
pub async fn run(shard: Arc<Shard>, replication: Replication) {
    if replication.urls.is_empty() {
        return;
    }
    let mut next = 0;
    let mut backoff = BACKOFF_MIN;
    loop {
        let url = replication.urls[next % replication.urls.len()].clone();
        let started = Instant::now();
        let span = tracing::info_span!("replicate", cache = %url);
        let result = tracing::Instrument::instrument(session(&shard, &replication, &url), span).await;
        if let Err(error) = result {
            tracing::warn!(cache = %url, error = %format!("{error:#}"), "replication stream ended; failing over");
        }
        if started.elapsed() > Duration::from_secs(10) {
            backoff = BACKOFF_MIN;
        }
        next += 1;
        // A full round of failures waits before the next; failing over to the next
        // cache in the list is immediate.
        if next % replication.urls.len() == 0 {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }
}

/// One stream to one cache server: hello, catch up, then tail until something fails.
async fn session(shard: &Arc<Shard>, replication: &Replication, url: &str) -> anyhow::Result<()> {
    let uri: http::Uri = url.parse().map_err(|e| anyhow::anyhow!("cache server URL {url}: {e}"))?;
    let mut cache = CacheClient::with_origin(replication.client.clone(), uri).max_decoding_message_size(LIST_BYTES_MAX);
    let (tx, rx) = mpsc::channel::<ReplicateRequest>(OUTBOUND_BATCHES);
    let hello =
        ReplicateRequest { request: Some(replicate_request::Request::Hello(Hello { sender: shard.name.clone() })) };
    tx.send(hello).await?;
    let mut responses = cache.replicate(ReceiverStream::new(rx)).await?.into_inner();
    let acked = responses.message().await?.ok_or_else(|| anyhow::anyhow!("cache closed the stream after hello"))?;
    tracing::info!(position = acked.position, "connected to cache server");
    let mut acks = tokio::spawn(async move {
        while let Some(ack) = responses.message().await? {
            tracing::trace!(position = ack.position, batches = ack.batches, "acknowledged");
        }
        anyhow::Ok(())
    });
    let mut paths = Paths::default();
    let mut from = acked.position;
    // No position, one the change log no longer reaches, or one beyond this store (its
    // data was replaced): compare everything instead.
    if from == 0 || from < shard.store.compacted_rv() || from > shard.store.current_rv() {
        from = full_sync(shard, &mut cache, &tx, &mut paths).await?;
    }
    let mut watch = match shard.store.watch(Bytes::new(), from) {
        Ok(watch) => watch,
        Err(StoreError::Gone { .. }) => {
            from = full_sync(shard, &mut cache, &tx, &mut paths).await?;
            shard.store.watch(Bytes::new(), from)?
        }
        Err(error) => return Err(error.into()),
    };
    let mut sent_position = from;
    let mut resync = tokio::time::interval_at(tokio::time::Instant::now() + replication.resync, replication.resync);
    let mut idle = tokio::time::interval(POSITION_INTERVAL);
    loop {
        tokio::select! {
            event = watch.next() => {
                let mut changes = Vec::new();
                push_event(shard, &mut paths, &*event?, &mut changes);
                while changes.len() < BATCH_CHANGES_MAX {
                    match watch.next().now_or_never() {
                        Some(event) => push_event(shard, &mut paths, &*event?, &mut changes),
                        None => break,
                    }
                }
                let position = watch.progress_rv();
                if !changes.is_empty() {
                    send(&tx, changes, position).await?;
                    sent_position = position;
                }
            }
            _ = idle.tick() => {
                let position = watch.progress_rv();
                if position > sent_position {
                    send(&tx, Vec::new(), position).await?;
                    sent_position = position;
                }
            }
            _ = resync.tick() => {
                let changes = repair(shard, &mut cache, &mut paths).await?;
                if !changes.is_empty() {
                    tracing::info!(changes = changes.len(), "repairing drift in the cache");
                    send(&tx, changes, 0).await?;
                }
            }
            ended = &mut acks => {
                return match ended {
                    Ok(Ok(())) => Err(anyhow::anyhow!("cache closed the stream")),
                    Ok(Err(error)) => Err(error),
                    Err(join) => Err(join.into()),
                };
            }
        }
    }
}

/// Sends one batch (split when large).
async fn send(tx: &mpsc::Sender<ReplicateRequest>, changes: Vec<Change>, position: u64) -> anyhow::Result<()> {
    let mut chunks: Vec<Vec<Change>> = Vec::new();
    let mut changes = changes.into_iter().peekable();
    while changes.peek().is_some() {
        chunks.push(changes.by_ref().take(BATCH_CHANGES_MAX).collect());
    }
    if chunks.is_empty() {
        chunks.push(Vec::new());
    }
    let last = chunks.len() - 1;
    for (i, changes) in chunks.into_iter().enumerate() {
        // Only the last part moves the position: the earlier ones alone are not all of it.
        let position = if i == last { position } else { 0 };
        let batch = Batch { changes, position };
        let request = ReplicateRequest { request: Some(replicate_request::Request::Batch(batch)) };
        tx.send(request).await.map_err(|_| anyhow::anyhow!("replication stream closed"))?;
    }
    Ok(())
}

/// The change a store event makes to the cache, if any.
fn push_event(shard: &Shard, paths: &mut Paths, event: &Event, out: &mut Vec<Change>) {
    let Some(parts) = replica::replicated_key(&event.key) else { return };
    let current = event.value.as_ref().and_then(|value| {
        let object = objects::decode(&store::Versioned { rv: event.rv, value: value.clone() }).ok()?;
        replica::replica_of(&shard.name, &parts, &object, paths.of(shard, parts.cluster))
    });
    match current {
        Some(replica) => out.push(replica::upsert(replica, false)),
        // Deleted, or no longer replicated (its annotation was removed): a tombstone
        // (a no-op in a cache that never had it).
        None => {
            let was_replicated = event.prev.as_ref().is_some_and(|prev| {
                objects::decode(prev).is_ok_and(|object| {
                    protocol::replication::is_replicated(parts.row.group, parts.row.resource, &object)
                })
            });
            if was_replicated {
                out.push(replica::tombstone(replica::key_of(&shard.name, &parts)));
            }
        }
    }
}

/// Brings a cache without a usable position up to date; returns the position it is at.
async fn full_sync(
    shard: &Shard,
    cache: &mut CacheClient<GrpcClient>,
    tx: &mpsc::Sender<ReplicateRequest>,
    paths: &mut Paths,
) -> anyhow::Result<u64> {
    let (local, position) = local_replicas(shard, paths)?;
    let cached = cached_replicas(shard, cache).await?;
    let changes = replica::diff(local, cached);
    tracing::info!(changes = changes.len(), position, "full sync");
    send(tx, changes, position).await?;
    Ok(position)
}

/// The drift between this shard and the cache, as changes that repair it.
async fn repair(shard: &Shard, cache: &mut CacheClient<GrpcClient>, paths: &mut Paths) -> anyhow::Result<Vec<Change>> {
    // The cache first: anything the shard lists afterwards is at least as new.
    let cached = cached_replicas(shard, cache).await?;
    let (local, _) = local_replicas(shard, paths)?;
    Ok(replica::diff(local, cached))
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
