//! Controllers that run inside the shard, each a loop over a store watch.
//!
//! They use [`apiserver::storage`] directly (no HTTP) and are level-triggered: every pass
//! recomputes what to do from the current objects, so a missed event or a restart only
//! delays work, never loses it.

pub mod gc;
pub mod logical_cluster;
pub mod membership;
pub mod namespace;
pub mod queue;
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

/// How long a controller waits before retrying work that is not done yet.
pub const REQUEUE_DELAY: Duration = Duration::from_millis(500);

/// Lists every object of `rt` across clusters, then calls `on_object` for each current
/// object and every later change, forever; relists after 410 (the shared
/// [`protocol::watcher`]). `on_object` returns quickly (it spawns longer work).
pub async fn for_each_object<F>(shard: Arc<Shard>, rt: Arc<ResourceType>, on_object: F)
where
    F: FnMut(Value) + Send,
{
    let prefix = objects::collection_prefix(&rt, None, None);
    let mut source = StoreSource::new(shard.store.clone(), prefix.into_bytes(), EachObject(on_object));
    drive::run(&rt.resource, &mut source, Backoff::new(REQUEUE_DELAY, REQUEUE_DELAY)).await;
}

/// Hands every listed object and every written one (not deletions) to a closure.
struct EachObject<F>(F);

impl<F: FnMut(Value) + Send> StoreConsumer for EachObject<F> {
    fn page(&mut self, items: &[(bytes::Bytes, store::Versioned)]) {
        for (_, stored) in items {
            if let Ok(object) = objects::decode(stored) {
                (self.0)(object);
            }
        }
    }

    fn event(&mut self, event: &store::Event) {
        let stored = event.value.as_ref().map(|value| store::Versioned { rv: event.rv, value: value.clone() });
        if let Some(object) = stored.and_then(|s| objects::decode(&s).ok()) {
            (self.0)(object);
        }
    }
}

/// Watches `rt` and, for each object `wants` picks, runs `pass(shard, cluster, name)`
/// every [`REQUEUE_DELAY`] until it returns true (done or gone); at most one such loop
/// runs per object at a time.
pub async fn finish_each<W, P, Fut>(shard: Arc<Shard>, rt: Arc<ResourceType>, wants: W, pass: P)
where
    W: Fn(&Value) -> bool + Send,
    P: Fn(Arc<Shard>, String, String) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    let busy: Arc<Mutex<HashSet<(String, String)>>> = Arc::default();
    for_each_object(shard.clone(), rt, move |object| {
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
        tokio::spawn(async move {
            while !pass(shard.clone(), cluster.clone(), name.clone()).await {
                tokio::time::sleep(REQUEUE_DELAY).await;
            }
            busy.lock().remove(&(cluster, name));
        });
    })
    .await;
}
