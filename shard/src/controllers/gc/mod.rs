//! The garbage collector: deletes objects whose owners are gone, and carries out the
//! `orphan` and `foregroundDeletion` finalizers that cascading deletes set — what
//! kube-controller-manager's garbagecollector does, for every logical cluster on this
//! shard and every resource, custom resources included.
//!
//! It is built on the store, not on the resource registry, so that resources defined
//! after the shard started need nothing special:
//! - the *feed* lists every key of the store, then follows the store's change stream from
//!   the list's resourceVersion into the [`graph`] (the objects that own or are owned:
//!   UID → key, identity, ownerReferences, deletion state, per logical cluster); a 410
//!   means relist. Owners that own nothing themselves are not indexed but read from the
//!   store when a decision needs them. The shared watcher ([`protocol::watcher`]) runs
//!   it, [`GraphFeed`] applies what it lists and sees;
//! - every change queues the objects whose decision it may change ([`super::queue`]); workers
//!   take them one at a time, ask [`decide`] what to do from the index alone, and act
//!   through [`apiserver::storage`] — the same delete path as the API, so the dependent's own
//!   finalizers and cascading policy apply. The registry is consulted only then, to turn
//!   a key back into its resource.
//!
//! Every write is pinned to the object the decision was about: deletes carry its UID and
//! indexed resourceVersion as preconditions (a namesake created since, or a dependent that
//! gained an owner since, is never deleted by mistake), edits check its UID. A write that
//! loses such a race changes nothing; the change that won is on its way through the feed
//! and queues the object again.

mod decide;
mod graph;

use super::queue::WorkQueue;
use super::REQUEUE_DELAY;
use crate::state::Shard;
use crate::store_watch::{StoreConsumer, StoreSource};
use apiserver::objects;
use apiserver::registry::ResourceType;
use apiserver::rest::status::{ApiError, ApiResult};
use apiserver::storage::propagation::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use apiserver::storage::{self, Cascade, DeletePreconditions, ObjectRef, Propagation, WriteOptions};
use bytes::Bytes;
use decide::Decision;
use graph::{Graph, Item, ItemView, OwnerFacts, OwnerRef, Uid};
use parking_lot::Mutex;
use protocol::meta;
use protocol::watcher::{drive, Backoff};
use serde_json::Value;
use std::sync::Arc;
use tracing::Instrument;

/// Workers acting on queued items at once. Each holds at most one store write in flight.
const WORKERS: usize = 4;
/// Objects per page of the (re)list, bounding what one page holds in memory.
const LIST_PAGE_ITEMS: usize = 1000;

/// The collector's shared state.
struct Collector {
    shard: Arc<Shard>,
    graph: Mutex<Graph>,
    queue: WorkQueue<Item>,
}

/// Runs the garbage collector until the store closes.
pub async fn run(shard: Arc<Shard>) {
    let collector = Arc::new(Collector { shard, graph: Mutex::default(), queue: WorkQueue::default() });
    for _ in 0..WORKERS {
        tokio::spawn(work(collector.clone()));
    }
    let feed = GraphFeed { collector, fresh: Graph::default() };
    let mut source = StoreSource::new(feed.collector.shard.store.clone(), Bytes::new(), feed).paged(LIST_PAGE_ITEMS);
    drive::run("garbage collector", &mut source, Backoff::new(REQUEUE_DELAY, REQUEUE_DELAY)).await;
}

/// The index feed: lists every key of the store into a fresh index, swaps it in and
/// queues every object with something to decide (the relist after a 410 catches up on
/// missed deletes this way: dependents of a vanished owner are dangling in the new
/// index); then applies the store's changes as they come.
struct GraphFeed {
    collector: Arc<Collector>,
    /// The index being listed.
    fresh: Graph,
}

impl StoreConsumer for GraphFeed {
    fn listing(&mut self) {
        self.fresh = Graph::default();
    }

    fn page(&mut self, items: &[(Bytes, store::Versioned)]) {
        for (key, stored) in items {
            if !self.fresh.wants(key, &stored.value) {
                continue;
            }
            if let Some((cluster, node)) = graph::decode(key, stored.rv, &stored.value) {
                self.fresh.upsert(&cluster, node);
            }
        }
    }

    fn listed(&mut self, rv: u64) {
        let graph = std::mem::take(&mut self.fresh);
        let pending = graph.pending();
        tracing::info!(objects = graph.len(), rv, pending = pending.len(), "garbage collector indexed the store");
        *self.collector.graph.lock() = graph;
        for item in pending {
            self.collector.queue.add(item);
        }
    }

    fn event(&mut self, event: &store::Event) {
        self.collector.apply(event);
    }
}

impl Collector {
    fn apply(&self, event: &store::Event) {
        let work = {
            let mut graph = self.graph.lock();
            match &event.value {
                Some(value) if graph.wants(&event.key, value) => match graph::decode(&event.key, event.rv, value) {
                    Some((cluster, node)) => graph.upsert(&cluster, node),
                    None => Vec::new(),
                },
                Some(_) => Vec::new(),
                // A delete: the event carries the last value, and so the UID.
                None if graph.wants_removal(&event.key) => {
                    match event.prev.as_ref().and_then(|prev| graph::decode(&event.key, prev.rv, &prev.value)) {
                        Some((cluster, node)) => graph.remove(&cluster, &node.uid),
                        None => Vec::new(),
                    }
                }
                None => Vec::new(),
            }
        };
        for item in work {
            self.queue.add_caused(item, event.cause);
        }
    }

    /// One attempt at an item; false when it must be retried.
    async fn attempt(&self, item: &Item) -> bool {
        let cause = self.queue.take_cause(item);
        let Some(mut view) = self.graph.lock().view(item) else { return true };
        self.look_up_owners(&item.cluster, &mut view);
        let decision = decide::decide(&view);
        let span = match cause {
            // A write this collector acts on because of a traced request (an owner's
            // DELETE): part of that request's trace. (An unsampled request's would be
            // dropped by the sampler: not worth building.)
            Some(cause) if cause.is_sampled() && !matches!(decision, Decision::Nothing) => {
                let span = tracing::info_span!("gc.collect", otel.kind = "internal", atoll.logical_cluster = %item.cluster, decision = decision.name());
                cause.adopt(&span);
                span
            }
            _ => {
                tracing::debug_span!("gc.attempt", cluster = %item.cluster, key = %view.item.key, decision = decision.name())
            }
        };
        let outcome = self.carry_out(item, &view, decision).instrument(span.clone()).await;
        let _enter = span.enter();
        match outcome {
            Ok(()) => true,
            // Gone, or replaced by a namesake: nothing left to do about this UID.
            Err(e) if e.is_not_found() => true,
            // Changed since it was indexed: the change is queued behind us, the retry is a
            // safety net.
            Err(e) if e.is_conflict() => {
                tracing::debug!(error = %e.message, "object changed under the garbage collector");
                false
            }
            Err(e) => {
                tracing::warn!(code = e.code, error = %e.message, "garbage collection step failed; retrying");
                false
            }
        }
    }

    async fn carry_out(&self, work: &Item, view: &ItemView, decision: Decision) -> ApiResult<()> {
        let item = &view.item;
        match decision {
            Decision::Nothing => Ok(()),
            Decision::Unresolvable { owner } => {
                tracing::info!(%owner, "a cluster-scoped object names a namespaced owner; it is never collected");
                Ok(())
            }
            Decision::Orphan { dependents } => {
                for (uid, key) in &dependents {
                    self.edit(key, uid, "orphan", |object| {
                        remove_owner_references(object, std::slice::from_ref(&item.uid))
                    })
                    .await?;
                }
                self.edit(&item.key, &item.uid, "remove_finalizer", |object| remove_finalizer(object, ORPHAN_FINALIZER))
                    .await
            }
            Decision::Foreground { dependents, finish } => {
                for uid in dependents {
                    self.queue.add(Item { cluster: work.cluster.clone(), uid });
                }
                if !finish {
                    return Ok(());
                }
                let remove = |object: &mut Value| remove_finalizer(object, FOREGROUND_FINALIZER);
                self.edit(&item.key, &item.uid, "remove_finalizer", remove).await
            }
            Decision::RemoveOwnerReferences { owners } => {
                let remove = |object: &mut Value| remove_owner_references(object, &owners);
                self.edit(&item.key, &item.uid, "remove_owner_references", remove).await
            }
            Decision::Delete { propagation, unblock_first } => {
                // An owner of a kind this cluster does not serve cannot be looked up, so its
                // absence proves nothing: kube's collector cannot map it and leaves the
                // dependent alone, and so does this one.
                let unmapped = view.owners.iter().find(|(reference, owner)| {
                    owner.is_none()
                        && !self.shard.registry.serves_kind(&work.cluster, &reference.group, &reference.kind)
                });
                if let Some((reference, _)) = unmapped {
                    tracing::info!(group = %reference.group, kind = %reference.kind, "an owner's kind is not served here; the dependent is kept");
                    return Ok(());
                }
                if unblock_first {
                    let unblocked =
                        self.edit_returning(&item.key, &item.uid, "unblock", unblock_owner_references).await?;
                    if meta::meta_str(&unblocked, "resourceVersion") != Some(item.rv.to_string().as_str()) {
                        // Written: the changed references queue the item again, and the
                        // delete then pins the version that has them.
                        return Ok(());
                    }
                }
                self.delete(view, propagation).await
            }
        }
    }

    /// Deletes the item through the API's delete path, pinned to its UID and indexed
    /// resourceVersion.
    async fn delete(&self, view: &ItemView, propagation: Propagation) -> ApiResult<()> {
        let item = &view.item;
        let (rt, cluster, namespace, name) = self.address(&item.key)?;
        let at = ObjectRef { cluster, namespace, name };
        let preconditions =
            DeletePreconditions { uid: Some(item.uid.to_string()), resource_version: Some(item.rv.to_string()) };
        let cascade = Cascade::with(propagation);
        storage::delete_cascading(&self.shard, &rt, &at, &preconditions, cascade, WriteOptions::default()).await?;
        tracing::info!(key = %item.key, propagation = propagation.as_str(), "garbage collector deleted an object");
        self.count("delete");
        Ok(())
    }

    /// Edits the object at `key` if it still has `uid`.
    async fn edit(&self, key: &str, uid: &Uid, action: &'static str, change: impl FnMut(&mut Value)) -> ApiResult<()> {
        self.edit_returning(key, uid, action, change).await.map(drop)
    }

    async fn edit_returning(
        &self,
        key: &str,
        uid: &Uid,
        action: &'static str,
        change: impl FnMut(&mut Value),
    ) -> ApiResult<Value> {
        let (rt, cluster, namespace, name) = self.address(key)?;
        let at = ObjectRef { cluster, namespace, name };
        let before = self.shard.store.current_rv();
        let written = storage::update_object_of_uid(&self.shard, &rt, &at, uid, change).await?;
        let rv = meta::meta_str(&written, "resourceVersion").and_then(|rv| rv.parse::<u64>().ok());
        if rv.is_some_and(|rv| rv > before) {
            tracing::debug!(%key, action, "garbage collector updated an object");
            self.count(action);
        }
        Ok(written)
    }

    /// The resource and the coordinates of a stored key. Built-in resources come from the
    /// table, custom ones from their logical cluster's CRDs; a key whose resource is not
    /// served (a CRD deleted meanwhile) is retried with back-off until its cleanup removes it.
    fn address<'k>(&self, key: &'k str) -> ApiResult<(Arc<ResourceType>, &'k str, Option<&'k str>, &'k str)> {
        let unknown = || ApiError::internal(format!("no served resource stores {key}"));
        let (cluster, namespace, name) = objects::split_key(key.as_bytes()).ok_or_else(unknown)?;
        let rt = resource_of(&self.shard, cluster, key).ok_or_else(unknown)?;
        let namespace = rt.namespaced.then_some(namespace);
        Ok((rt, cluster, namespace, name))
    }

    /// Fills in the owners the index does not hold (objects that own nothing themselves):
    /// each is read from the store by the kind and name its reference gives, and counts
    /// as present only with the referenced UID, as kube's collector resolves references.
    fn look_up_owners(&self, cluster: &str, view: &mut ItemView) {
        let namespace = view.item.namespace.as_deref();
        for (reference, facts) in view.owners.iter_mut().filter(|(_, facts)| facts.is_none()) {
            *facts = self.look_up_owner(cluster, namespace, reference);
        }
    }

    fn look_up_owner(&self, cluster: &str, namespace: Option<&str>, reference: &OwnerRef) -> Option<OwnerFacts> {
        let rt = self.shard.registry.resource_for_kind(cluster, &reference.group, &reference.kind)?;
        let identity = graph::identity_hash(&reference.group, &reference.kind, &reference.name);
        let owner_namespace = match (rt.namespaced, namespace) {
            (true, Some(namespace)) => Some(namespace),
            // A cluster-scoped dependent naming a namespaced owner: never resolvable.
            (true, None) => return Some(OwnerFacts { identity, namespace: Some(0), deleting_dependents: false }),
            (false, _) => None,
        };
        if reference.name.is_empty() || reference.name.contains('/') {
            return None;
        }
        let key = objects::key(&rt, cluster, owner_namespace, &reference.name);
        let stored = self.shard.store.get(key.as_bytes()).ok()??;
        let owner: Value = serde_json::from_slice(&stored.value).ok()?;
        if meta::meta_str(&owner, "uid") != Some(&*reference.uid) {
            return None;
        }
        let foreground = meta::finalizers(&owner).iter().any(|f| f == FOREGROUND_FINALIZER);
        Some(OwnerFacts {
            identity,
            namespace: owner_namespace.map(graph::namespace_hash),
            deleting_dependents: meta::is_deleting(&owner) && foreground,
        })
    }

    fn count(&self, action: &'static str) {
        self.shard.metrics.gc_actions.get_or_create(&crate::metrics::GcLabels { action: action.into() }).inc();
    }
}

/// The resource whose key prefix `key` starts with.
fn resource_of(shard: &Shard, cluster: &str, key: &str) -> Option<Arc<ResourceType>> {
    let stores = |rt: &Arc<ResourceType>| key.starts_with(&rt.key_prefix(None));
    if let Some(rt) = shard.registry.all().iter().find(|rt| stores(rt)) {
        return Some(rt.clone());
    }
    let custom = shard.registry.custom().of_cluster(cluster).into_iter();
    custom.chain(shard.registry.source_rows(cluster)).find(stores)
}

/// Takes the worker's items until the runtime stops.
async fn work(collector: Arc<Collector>) {
    loop {
        let item = collector.queue.next().await;
        if collector.attempt(&item).await {
            collector.queue.forget(&item);
        } else if let Some(delay) = collector.queue.schedule_retry(&item) {
            let collector = collector.clone();
            let item = item.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                collector.queue.retry(item);
            });
        }
        collector.queue.done(&item);
    }
}

/// Removes the ownerReferences with these UIDs; an empty list goes away.
fn remove_owner_references(object: &mut Value, owners: &[Uid]) {
    let metadata = meta::metadata_mut(object);
    let Some(references) = metadata.get_mut("ownerReferences").and_then(Value::as_array_mut) else { return };
    references.retain(|r| !owners.iter().any(|uid| r.get("uid").and_then(Value::as_str) == Some(uid)));
    if references.is_empty() {
        metadata.remove("ownerReferences");
    }
}

/// Sets `blockOwnerDeletion: false` on every ownerReference that blocks.
fn unblock_owner_references(object: &mut Value) {
    let metadata = meta::metadata_mut(object);
    let Some(references) = metadata.get_mut("ownerReferences").and_then(Value::as_array_mut) else { return };
    for reference in references.iter_mut().filter(|r| r.get("blockOwnerDeletion") == Some(&Value::Bool(true))) {
        reference["blockOwnerDeletion"] = Value::Bool(false);
    }
}

fn remove_finalizer(object: &mut Value, finalizer: &str) {
    let kept: Vec<String> = meta::finalizers(object).into_iter().filter(|f| f != finalizer).collect();
    meta::set_finalizers(object, &kept);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reference_edits_touch_only_what_they_name() {
        let mut object = json!({"metadata": {"ownerReferences": [
            {"uid": "a", "blockOwnerDeletion": true}, {"uid": "b", "blockOwnerDeletion": false}, {"uid": "c"},
        ]}});
        unblock_owner_references(&mut object);
        assert_eq!(object["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], false);
        assert!(object["metadata"]["ownerReferences"][2].get("blockOwnerDeletion").is_none());
        remove_owner_references(&mut object, &["a".into(), "c".into()]);
        assert_eq!(object["metadata"]["ownerReferences"], json!([{"uid": "b", "blockOwnerDeletion": false}]));
        remove_owner_references(&mut object, &["b".into()]);
        assert!(object["metadata"].get("ownerReferences").is_none(), "an empty list goes away");
        let mut held = json!({"metadata": {"finalizers": ["x/y", "orphan"]}});
        remove_finalizer(&mut held, ORPHAN_FINALIZER);
        assert_eq!(held["metadata"]["finalizers"], json!(["x/y"]));
    }
}
