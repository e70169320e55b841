//! Controllers that run inside the shard, each a loop over a store watch.
//!
//! They use [`apiserver::storage`] directly (no HTTP) and are level-triggered: every pass
//! recomputes what to do from the current objects, so a missed event or a restart only
//! delays work, never loses it.

pub mod gc;
pub mod logical_cluster;
pub mod membership;
pub mod namespace;
pub mod pacing;
pub mod queue;
pub mod shard_health;
pub mod workspace;

use crate::state::Shard;
use crate::store_watch::{StoreConsumer, StoreSource};
use apiserver::objects;
use apiserver::registry::ResourceType;
use parking_lot::Mutex;
use protocol::meta;
use protocol::watcher::{drive, Backoff};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use telemetry::Cause;
use tracing::Instrument;

/// How long a controller waits before retrying work that is not done yet.
pub const REQUEUE_DELAY: Duration = Duration::from_millis(500);

/// The earlier of two optional deadlines (or delays).
pub fn earliest<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    a.into_iter().chain(b).min()
}

/// Lists every object of `rt` across clusters, then calls `on_object` for each current
/// object and every later change, forever; relists after 410 (the shared
/// [`protocol::watcher`]). `on_object` returns quickly (it spawns longer work). With each
/// written object comes the span that wrote it, when traces are exported, so the work it
/// starts can continue that trace ([`telemetry::Cause::adopt`]); listed objects have none.
pub async fn for_each_object<F>(shard: Arc<Shard>, rt: Arc<ResourceType>, on_object: F)
where
    F: FnMut(Value, Option<Cause>) + Send,
{
    let prefix = objects::collection_prefix(&rt, None, None);
    let mut source = StoreSource::new(shard.store.clone(), prefix.into_bytes(), EachObject(on_object));
    drive::run(&rt.resource, &mut source, Backoff::new(REQUEUE_DELAY, REQUEUE_DELAY)).await;
}

/// Hands every listed object and every written one (not deletions) to a closure.
struct EachObject<F>(F);

impl<F: FnMut(Value, Option<Cause>) + Send> StoreConsumer for EachObject<F> {
    fn page(&mut self, items: &[(bytes::Bytes, store::Versioned)]) {
        for (_, stored) in items {
            if let Ok(object) = objects::decode(stored) {
                (self.0)(object, None);
            }
        }
    }

    fn event(&mut self, event: &store::Event) {
        let stored = event.value.as_ref().map(|value| store::Versioned { rv: event.rv, value: value.clone() });
        if let Some(object) = stored.and_then(|s| objects::decode(&s).ok()) {
            (self.0)(object, event.cause);
        }
    }
}

/// The span of one object's reconcile: `name` (`workspace.reconcile`), for the object
/// `cluster`/`object`, a child of the write that queued it when there is one. (One write
/// caused this work, so the request's trace is where a reader looks for it.)
pub fn reconcile_span(name: &'static str, cluster: &str, object: &str, cause: Option<Cause>) -> tracing::Span {
    let span = tracing::info_span!(
        "reconcile",
        otel.name = name,
        otel.kind = "internal",
        atoll.logical_cluster = cluster,
        atoll.object = object,
    );
    if let Some(cause) = cause {
        cause.adopt(&span);
    }
    span
}

/// Watches `rt` and, for each object `wants` picks, runs `pass(shard, cluster, name)`
/// every [`REQUEUE_DELAY`] until it returns true (done or gone); at most one such loop
/// runs per object at a time, in a span named `name` that continues the trace of the
/// write that started it.
pub async fn finish_each<W, P, Fut>(shard: Arc<Shard>, rt: Arc<ResourceType>, name: &'static str, wants: W, pass: P)
where
    W: Fn(&Value) -> bool + Send,
    P: Fn(Arc<Shard>, String, String) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    let busy: Arc<Mutex<HashSet<(String, String)>>> = Arc::default();
    let span_name = name;
    for_each_object(shard.clone(), rt, move |object, cause| {
        if !wants(&object) {
            return;
        }
        let Some(cluster) = meta::annotations(&object).get(protocol::wellknown::CLUSTER_ANNOTATION).cloned() else {
            return;
        };
        let name = meta::name(&object).unwrap_or_default().to_string();
        if !busy.lock().insert((cluster.clone(), name.clone())) {
            return;
        }
        let (shard, busy, pass) = (shard.clone(), busy.clone(), pass.clone());
        let span = reconcile_span(span_name, &cluster, &name, cause);
        tokio::spawn(
            async move {
                while !pass(shard.clone(), cluster.clone(), name.clone()).await {
                    tokio::time::sleep(REQUEUE_DELAY).await;
                }
                busy.lock().remove(&(cluster, name));
            }
            .instrument(span),
        );
    })
    .await;
}

/// Logical clusters whose objects of interest were written since their last pass: what a
/// per-hub controller (OCM, Fleet) drains, woken by [`watch_clusters`].
#[derive(Default)]
pub struct DirtyClusters {
    clusters: Mutex<std::collections::BTreeSet<String>>,
    /// Notified whenever a cluster is marked.
    pub wake: tokio::sync::Notify,
}

impl DirtyClusters {
    /// Marks `cluster` for a pass and wakes the controller.
    pub fn mark(&self, cluster: &str) {
        self.clusters.lock().insert(cluster.to_string());
        self.wake.notify_one();
    }

    /// Marks several clusters.
    pub fn extend(&self, clusters: impl IntoIterator<Item = String>) {
        self.clusters.lock().extend(clusters);
        self.wake.notify_one();
    }

    /// The marked clusters, unmarking them.
    pub fn take(&self) -> std::collections::BTreeSet<String> {
        std::mem::take(&mut *self.clusters.lock())
    }
}

/// Marks the logical cluster of every listed or written object of the watched rows.
struct ClusterFeed(Arc<DirtyClusters>);

impl StoreConsumer for ClusterFeed {
    fn page(&mut self, items: &[(bytes::Bytes, store::Versioned)]) {
        let clusters = items.iter().filter_map(|(key, _)| objects::split_key(key).map(|(c, _, _)| c.to_string()));
        self.0.extend(clusters);
    }

    fn event(&mut self, event: &store::Event) {
        if let Some((cluster, _, _)) = objects::split_key(&event.key) {
            self.0.mark(cluster);
        }
    }
}

/// Watches each of `rows` in every logical cluster, marking the cluster of every object
/// listed or written in `dirty`.
pub fn watch_clusters(shard: &Shard, rows: &[&Arc<ResourceType>], dirty: &Arc<DirtyClusters>) {
    for rt in rows {
        let prefix = objects::collection_prefix(rt, None, None).into_bytes();
        let mut source = StoreSource::new(shard.store.clone(), prefix, ClusterFeed(dirty.clone()));
        let name = rt.resource.clone();
        tokio::spawn(async move { drive::run(&name, &mut source, Backoff::new(REQUEUE_DELAY, REQUEUE_DELAY)).await });
    }
}
