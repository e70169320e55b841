//! Namespace deletion: once a namespace is Terminating, delete everything in it, then
//! drop its `kubernetes` finalizer so the namespace itself goes.

use super::{for_each_object, REQUEUE_DELAY};
use crate::objects::CLUSTER_ANNOTATION;
use crate::state::Shard;
use crate::storage::{self, DeletePreconditions, ObjectRef, WriteOptions};
use crate::strategy::NAMESPACE_FINALIZER;
use parking_lot::Mutex;
use protocol::meta;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

/// Watches namespaces and finalizes the terminating ones.
pub async fn run(shard: Arc<Shard>) {
    let rt = shard.registry.namespaces();
    // One cleanup task per namespace at a time.
    let busy: Arc<Mutex<HashSet<(String, String)>>> = Arc::default();
    for_each_object(shard.clone(), rt, move |namespace| {
        if !meta::is_deleting(&namespace) || !has_spec_finalizer(&namespace) {
            return;
        }
        let Some(cluster) = meta::annotations(&namespace).get(CLUSTER_ANNOTATION).cloned() else { return };
        let name = meta::name(&namespace).unwrap_or_default().to_string();
        if !busy.lock().insert((cluster.clone(), name.clone())) {
            return;
        }
        let (shard, busy) = (shard.clone(), busy.clone());
        tokio::spawn(async move {
            while !finalize(&shard, &cluster, &name).await {
                tokio::time::sleep(REQUEUE_DELAY).await;
            }
            busy.lock().remove(&(cluster, name));
        });
    })
    .await;
}

fn has_spec_finalizer(namespace: &Value) -> bool {
    namespace
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|v| v.as_str() == Some(NAMESPACE_FINALIZER)))
}

/// One pass: deletes the namespace's content; when none is left, finalizes it. Returns
/// whether the namespace is done (or gone).
#[tracing::instrument(name = "namespace.finalize", skip(shard))]
async fn finalize(shard: &Shard, cluster: &str, namespace: &str) -> bool {
    let mut remaining = 0usize;
    for rt in shard.registry.all().iter().filter(|rt| rt.namespaced) {
        let prefix = crate::objects::collection_prefix(rt, Some(cluster), Some(namespace));
        let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
        let Ok(page) = shard.store.list(&options, |_, _| true) else { return false };
        for (key, _) in page.items {
            remaining += 1;
            let Some((_, _, name)) = crate::objects::split_key(&key) else { continue };
            let at = ObjectRef { cluster, namespace: Some(namespace), name };
            let deleted =
                storage::delete(shard, rt, &at, &DeletePreconditions::default(), WriteOptions::default()).await;
            if let Ok(storage::Deleted::Gone(_)) = deleted {
                remaining -= 1;
            }
        }
    }
    if remaining > 0 {
        tracing::debug!(remaining, "namespace content still waits for finalizers");
        return false;
    }
    match storage::finalize_namespace(shard, cluster, namespace).await {
        Ok(_) => true,
        Err(e) if e.code == 404 => true,
        Err(e) => {
            tracing::warn!(error = %e.message, "finalizing namespace failed; retrying");
            false
        }
    }
}
