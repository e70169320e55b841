//! Controllers that run inside the shard, each a loop over a store watch.
//!
//! They use [`crate::storage`] directly (no HTTP) and are level-triggered: every pass
//! recomputes what to do from the current objects, so a missed event or a restart only
//! delays work, never loses it.

pub mod gc;
pub mod logical_cluster;
pub mod namespace;
pub mod workspace;

use crate::objects;
use crate::registry::ResourceType;
use crate::state::Shard;
use parking_lot::Mutex;
use protocol::meta;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use store::ListOptions;

/// How long a controller waits before retrying work that is not done yet.
pub const REQUEUE_DELAY: Duration = Duration::from_millis(500);

/// Lists every object of `rt` across clusters, then calls `on_object` for each current
/// object and every later change, forever; relists after 410. `on_object` returns
/// quickly (it spawns longer work).
pub async fn for_each_object<F>(shard: Arc<Shard>, rt: Arc<ResourceType>, mut on_object: F)
where
    F: FnMut(Value),
{
    let prefix = objects::collection_prefix(&rt, None, None);
    loop {
        let options = ListOptions { prefix: prefix.clone().into_bytes(), ..ListOptions::default() };
        let page = match shard.store.list(&options, |_, _| true) {
            Ok(page) => page,
            Err(error) => {
                tracing::warn!(%error, resource = rt.resource, "controller list failed; retrying");
                tokio::time::sleep(REQUEUE_DELAY).await;
                continue;
            }
        };
        for (_, stored) in &page.items {
            if let Ok(object) = objects::decode(stored) {
                on_object(object);
            }
        }
        let mut watch = match shard.store.watch(prefix.clone().into_bytes(), page.rv) {
            Ok(watch) => watch,
            Err(_) => continue,
        };
        loop {
            match watch.next().await {
                Ok(event) => {
                    let stored =
                        event.value.as_ref().map(|value| store::Versioned { rv: event.rv, value: value.clone() });
                    if let Some(object) = stored.and_then(|s| objects::decode(&s).ok()) {
                        on_object(object);
                    }
                }
                Err(store::StoreError::Closed) => return,
                Err(error) => {
                    tracing::info!(%error, resource = rt.resource, "controller watch ended; relisting");
                    break;
                }
            }
        }
    }
}

/// Watches `rt` and, for each object `wants` picks, runs `pass(shard, cluster, name)`
/// every [`REQUEUE_DELAY`] until it returns true (done or gone); at most one such loop
/// runs per object at a time.
pub async fn finish_each<W, P, Fut>(shard: Arc<Shard>, rt: Arc<ResourceType>, wants: W, pass: P)
where
    W: Fn(&Value) -> bool,
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

/// Starts every controller.
pub fn start(shard: Arc<Shard>) {
    tokio::spawn(namespace::run(shard.clone()));
    tokio::spawn(crate::crd::cleanup::run(shard.clone()));
    tokio::spawn(logical_cluster::run(shard.clone()));
    tokio::spawn(gc::run(shard.clone()));
    tokio::spawn(workspace::run(shard.clone()));
    tokio::spawn(crate::binding::run(shard.clone()));
    tokio::spawn(crate::membership::run(shard));
}
