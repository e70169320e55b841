//! How the generic storage treats APIBindings: the `apis.kcp.io` rules of [`Api`], the
//! `bind` permission check on the referenced export, and the after-commit hook that hands
//! every written binding to the binding controller ([`Queue`]). The controller is thereby
//! woken by binding writes only, not by every committed event of the shard.

use super::bound::BoundResources;
use super::source::BoundSource;
use super::system::SystemIdentities;
use crate::apis::{Api, ApiKind, APIS_GROUP};
use crate::state::Shard;
use apiserver::registry::custom::SharedDefinitions;
use apiserver::registry::strategy::{done, Causes, Committed, Hook, Strategy};
use apiserver::registry::Core;
use apiserver::registry::{Registry, ResourceType};
use apiserver::rest::status::{ApiError, ApiResult};

use parking_lot::Mutex;
use protocol::meta;
use security::authn::Identity;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use telemetry::Cause;
use tokio::sync::Notify;

/// Gives the `apibindings` and `apiexportendpointslices` rows their strategies (each
/// checks `bind` on the export it names) and adds the bound resources to the table;
/// returns the indexes and queue the binding controller works with.
pub fn register(registry: &mut Registry, shard: Weak<Shard>) -> Arc<BindingState> {
    let state = Arc::new(BindingState::default());
    let slices = EndpointSlice { shard: shard.clone() };
    registry.set_strategy(APIS_GROUP, "apiexportendpointslices", Arc::new(slices));
    let strategy = Binding { shard, state: state.clone() };
    registry.set_strategy(APIS_GROUP, "apibindings", Arc::new(strategy));
    registry.add_source(Arc::new(BoundSource { bound: state.bound.clone(), system: state.system.clone() }));
    // Bound CRDs live in a system cluster and are stored under their export's identity.
    registry.custom().set_shared_definitions(SharedDefinitions {
        cluster: super::BOUND_CRDS_CLUSTER.into(),
        identity_annotation: protocol::wellknown::IDENTITY_ANNOTATION.into(),
    });
    state
}

/// What the binding feature keeps beside the table.
#[derive(Debug, Default)]
pub struct BindingState {
    /// What each cluster's bindings bind.
    pub bound: Arc<BoundResources>,
    /// The identities of root's system exports.
    pub system: Arc<SystemIdentities>,
    /// Bindings written since the controller last looked.
    pub queue: Queue,
}

/// Bindings (logical cluster, name) written since the controller last looked, each with
/// the span that first wrote it (when traces are exported). A map, so it is bounded by the
/// number of bindings however often they are written.
#[derive(Debug, Default)]
pub struct Queue {
    pending: Mutex<HashMap<(String, String), Option<Cause>>>,
    wake: Notify,
}

/// A queued binding (logical cluster, name) and the span that queued it.
pub type Queued = ((String, String), Option<Cause>);

impl Queue {
    /// Adds a binding and wakes the controller; the caller's span is its cause.
    pub fn push(&self, cluster: &str, name: &str) {
        let cause = Cause::current();
        let mut pending = self.pending.lock();
        let first = pending.entry((cluster.to_string(), name.to_string())).or_insert(None);
        *first = Cause::keep(*first, cause);
        drop(pending);
        // A stored permit wakes a controller that is not waiting yet.
        self.wake.notify_one();
    }

    /// Takes every pending binding, waiting until there is one.
    pub async fn next_batch(&self) -> Vec<Queued> {
        loop {
            let batch: Vec<_> = self.pending.lock().drain().collect();
            if !batch.is_empty() {
                return batch;
            }
            self.wake.notified().await;
        }
    }
}

/// APIBindings.
#[derive(Debug)]
pub struct Binding {
    /// The shard, for the `bind` check (local RBAC or the cache's); set once assembled.
    shard: Weak<Shard>,
    state: Arc<BindingState>,
}

impl Binding {
    fn check_bind(&self, caller: &Identity, cluster: &str, binding: &Value) -> ApiResult<()> {
        let shard = self.shard.upgrade().ok_or_else(|| ApiError::unavailable("the shard is shutting down"))?;
        super::admission::check_bind(&shard, caller, cluster, binding)
    }
}

impl Strategy for Binding {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn admit_caller(&self, caller: &Identity, cluster: &str, object: &mut Value) -> ApiResult<()> {
        self.check_bind(caller, cluster, object)
    }

    fn admit_caller_update(
        &self,
        caller: &Identity,
        cluster: &str,
        old: &Value,
        new: &Value,
        sub: Option<&str>,
    ) -> ApiResult<()> {
        // An update needs the permission only when it points the binding elsewhere.
        let reference = |object: &Value| object.pointer("/spec/reference").cloned();
        if sub.is_some() || reference(old) == reference(new) {
            return Ok(());
        }
        self.check_bind(caller, cluster, new)
    }

    fn prepare_create(&self, rt: &ResourceType, object: &mut Value, now: &str) -> ApiResult<()> {
        Api(ApiKind::Binding).prepare_create(rt, object, now)?;
        add_deletion_finalizer(object);
        Ok(())
    }

    fn prepare_update(&self, rt: &ResourceType, old: &Value, new: &mut Value, sub: Option<&str>) -> ApiResult<()> {
        Api(ApiKind::Binding).prepare_update(rt, old, new, sub)?;
        // As kcp's admission does: a binding stored before the finalizer existed gets it
        // with its next update; once deleting, the controller's removal of it must stick.
        if sub.is_none() && !meta::is_deleting(old) {
            add_deletion_finalizer(new);
        }
        Ok(())
    }

    fn validate(&self, rt: &ResourceType, old: Option<&Value>, object: &Value) -> Causes {
        Api(ApiKind::Binding).validate(rt, old, object)
    }

    fn after_commit<'a>(&'a self, _core: &'a Core, committed: Committed<'a>) -> Hook<'a> {
        self.state.queue.push(committed.cluster, meta::name(committed.object).unwrap_or_default());
        done()
    }

    fn after_delete(&self, _core: &Core, cluster: &str, removed: &Value, _rv: u64) {
        self.state.bound.forget(cluster, meta::name(removed).unwrap_or_default());
    }
}

/// APIExportEndpointSlices: the `apis.kcp.io` rules of [`Api`], and the `bind` check on
/// the export a slice names, at create (its reference never changes).
#[derive(Debug)]
pub struct EndpointSlice {
    shard: Weak<Shard>,
}

impl Strategy for EndpointSlice {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn admit_caller(&self, caller: &Identity, cluster: &str, object: &mut Value) -> ApiResult<()> {
        let shard = self.shard.upgrade().ok_or_else(|| ApiError::unavailable("the shard is shutting down"))?;
        super::admission::check_slice(&shard, caller, cluster, object)
    }

    fn prepare_create(&self, rt: &ResourceType, object: &mut Value, now: &str) -> ApiResult<()> {
        Api(ApiKind::EndpointSlice).prepare_create(rt, object, now)
    }

    fn prepare_update(&self, rt: &ResourceType, old: &Value, new: &mut Value, sub: Option<&str>) -> ApiResult<()> {
        Api(ApiKind::EndpointSlice).prepare_update(rt, old, new, sub)
    }

    fn validate(&self, rt: &ResourceType, old: Option<&Value>, object: &Value) -> Causes {
        Api(ApiKind::EndpointSlice).validate(rt, old, object)
    }
}

/// Adds [`super::deletion::FINALIZER`], so that deleting the binding first deletes the
/// objects of the resources it binds.
fn add_deletion_finalizer(binding: &mut Value) {
    let mut finalizers = meta::finalizers(binding);
    if !finalizers.iter().any(|f| f == super::deletion::FINALIZER) {
        finalizers.push(super::deletion::FINALIZER.to_string());
        meta::set_finalizers(binding, &finalizers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn queue_keeps_each_binding_once_and_wakes_a_later_waiter() {
        let queue = Queue::default();
        queue.push("c1", "b");
        queue.push("c1", "b");
        queue.push("c2", "b");
        let ids = |batch: Vec<Queued>| {
            let mut ids: Vec<(String, String)> = batch.into_iter().map(|(id, _)| id).collect();
            ids.sort();
            ids
        };
        let batch = ids(queue.next_batch().await);
        assert_eq!(batch, vec![("c1".to_string(), "b".to_string()), ("c2".to_string(), "b".to_string())]);
        let queue = Arc::new(queue);
        let waiter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.next_batch().await }
        });
        tokio::task::yield_now().await;
        queue.push("c3", "x");
        assert_eq!(ids(waiter.await.unwrap()), vec![("c3".to_string(), "x".to_string())]);
    }
}
