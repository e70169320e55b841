//! Namespace deletion: once a namespace is Terminating, delete everything in it, then
//! drop its `kubernetes` finalizer so the namespace itself goes.

use super::finish_each;
use crate::state::Shard;
use apiserver::storage::{self, DeletePreconditions, ObjectRef, WriteOptions};
use apiserver::strategy::NAMESPACE_FINALIZER;
use protocol::meta;
use serde_json::Value;
use std::sync::Arc;

/// Watches namespaces and finalizes the terminating ones.
pub async fn run(shard: Arc<Shard>) {
    let rt = shard.registry.namespaces();
    let wants = |namespace: &Value| meta::is_deleting(namespace) && has_spec_finalizer(namespace);
    finish_each(shard, rt, "namespace.finalize", wants, |shard, cluster, name| async move {
        finalize(&shard, &cluster, &name).await
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
    for rt in shard.registry.stored(cluster).iter().filter(|rt| rt.namespaced) {
        let prefix = apiserver::objects::collection_prefix(rt, Some(cluster), Some(namespace));
        let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
        let Ok(page) = shard.store.list(&options, |_, _| true) else { return false };
        for (key, _) in page.items {
            remaining += 1;
            let Some((_, _, name)) = apiserver::objects::split_key(&key) else { continue };
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
        Err(e) if e.is_not_found() => true,
        Err(e) => {
            tracing::warn!(error = %e.message, "finalizing namespace failed; retrying");
            false
        }
    }
}
