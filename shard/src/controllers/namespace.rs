//! Namespace deletion: once a namespace is Terminating, delete everything in it, then
//! drop its `kubernetes` finalizer so the namespace itself goes.
//!
//! As kube's namespace controller does, the content is left alone for
//! [`DELETION_GRACE`] after the namespace's deletion started. `kubectl delete -f` of a
//! file holding a namespace and its content deletes the namespace first and then each
//! object; without the grace the controller would have removed them already, and each of
//! kubectl's later deletes would fail with NotFound (exit 1), unlike on kube.

use super::finish_each;
use crate::state::Shard;
use apiserver::storage::{self, DeletePreconditions, ObjectRef, WriteOptions};
use apiserver::strategy::NAMESPACE_FINALIZER;
use protocol::meta;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// How long after a namespace's deletion its content is first deleted: kube's
/// `namespaceDeletionGracePeriod`. Measured from `metadata.deletionTimestamp` (whole
/// seconds), so a restarted shard does not wait again.
pub const DELETION_GRACE: Duration = Duration::from_secs(5);

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
    if in_grace(shard, cluster, namespace) {
        return false;
    }
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

/// Whether the namespace's deletion started less than [`DELETION_GRACE`] ago.
fn in_grace(shard: &Shard, cluster: &str, namespace: &str) -> bool {
    let at = ObjectRef { cluster, namespace: None, name: namespace };
    let Ok((object, _)) = storage::get(shard, &shard.registry.namespaces(), &at) else { return false };
    let since = object.pointer("/metadata/deletionTimestamp").and_then(Value::as_str);
    since.is_some_and(|since| grace_pending(since, jiff::Timestamp::now()))
}

/// Whether `now` is less than [`DELETION_GRACE`] after the deletion timestamp `since`
/// (an unreadable timestamp holds nothing back). Pure.
fn grace_pending(since: &str, now: jiff::Timestamp) -> bool {
    let Ok(since) = since.parse::<jiff::Timestamp>() else { return false };
    let Ok(grace) = jiff::SignedDuration::try_from(DELETION_GRACE) else { return false };
    since.checked_add(grace).is_ok_and(|until| now < until)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_waits_out_the_grace_after_the_deletion_timestamp() {
        let since = "2024-05-01T10:00:00Z";
        let at = |s: &str| s.parse::<jiff::Timestamp>().unwrap();
        assert!(grace_pending(since, at("2024-05-01T10:00:00Z")));
        assert!(grace_pending(since, at("2024-05-01T10:00:04.9Z")));
        assert!(!grace_pending(since, at("2024-05-01T10:00:05Z")));
        assert!(!grace_pending("not a time", at("2024-05-01T10:00:00Z")));
    }
}
