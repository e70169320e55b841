//! Unbinding, kcp's `apibindingdeletion`: every APIBinding carries the finalizer
//! [`FINALIZER`] (added at create and update, see [`super::strategy`]); once a binding is
//! deleted, each pass deletes the objects of every resource it binds in its logical
//! cluster, through the generic delete so that their own finalizers hold them. While some
//! remain the binding says so in its `BindingResourceDeleteSuccess` condition (False,
//! reason [`RESOURCES_REMAIN`], [`FINALIZERS_REMAIN`] or [`DELETION_FAILED`]); when none
//! is left the finalizer goes, the binding with it, and the cluster stops serving (and
//! discovering) the resources.
//!
//! Without it a deleted binding would leave its objects stored under the export's
//! identity, unreachable but counted against the cluster, and a later binding of the same
//! export would bring them back.

use super::bound::BoundResources;
use super::BOUND_CRDS_CLUSTER;
use crate::state::Shard;
use apiserver::objects;
use apiserver::registry::ResourceType;
use apiserver::storage::{self, DeletePreconditions, ObjectRef, WriteOptions};
use protocol::meta;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The finalizer that holds a deleted APIBinding until its objects are gone (kcp's name).
pub const FINALIZER: &str = "apis.kcp.io/apibinding-finalizer";
/// The condition that reports the deletion of the bound objects.
pub const CONDITION: &str = "BindingResourceDeleteSuccess";
/// Reason: a delete of a bound object failed.
pub const DELETION_FAILED: &str = "ResourceDeletionFailed";
/// Reason: bound objects are still there.
pub const RESOURCES_REMAIN: &str = "SomeResourcesRemain";
/// Reason: bound objects are held by their finalizers.
pub const FINALIZERS_REMAIN: &str = "SomeFinalizersRemain";

/// What one pass left behind.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Remaining {
    /// Objects still stored, per `resource.group`.
    pub by_resource: BTreeMap<String, usize>,
    /// Remaining objects per finalizer they carry.
    pub by_finalizer: BTreeMap<String, usize>,
    /// The first delete that failed, if one did.
    pub failure: Option<String>,
}

impl Remaining {
    /// The reason and message of a False `BindingResourceDeleteSuccess`, or `None` when
    /// nothing is left (kcp's wording).
    pub fn condition(&self) -> Option<(&'static str, String)> {
        if let Some(failure) = &self.failure {
            return Some((DELETION_FAILED, failure.clone()));
        }
        if !self.by_finalizer.is_empty() {
            let held: Vec<String> =
                self.by_finalizer.iter().map(|(f, n)| format!("{f} in {n} resource instances")).collect();
            let message = format!("Some content in the workspace has finalizers remaining: {}", held.join(", "));
            return Some((FINALIZERS_REMAIN, message));
        }
        if !self.by_resource.is_empty() {
            let left: Vec<String> =
                self.by_resource.iter().map(|(r, n)| format!("{r} has {n} resource instances")).collect();
            return Some((RESOURCES_REMAIN, format!("Some resources are remaining: {}", left.join(", "))));
        }
        None
    }
}

/// One pass over the deleting binding `name` of `cluster`; true once it is gone (or no
/// longer ours to finish), false to be called again.
pub async fn reconcile(
    shard: &Shard,
    bound: &BoundResources,
    rt: &ResourceType,
    cluster: &str,
    binding: &Value,
) -> bool {
    let name = meta::name(binding).unwrap_or_default();
    let at = ObjectRef { cluster, namespace: None, name };
    if !meta::finalizers(binding).iter().any(|f| f == FINALIZER) {
        return true;
    }
    let remaining = delete_bound_objects(shard, bound, cluster, name, binding).await;
    let Some((reason, message)) = remaining.condition() else {
        tracing::info!("every bound object is gone; releasing the APIBinding");
        return match storage::remove_finalizer(shard, rt, &at, FINALIZER).await {
            Ok(_) => true,
            Err(e) if e.is_not_found() => true,
            Err(e) => {
                tracing::warn!(error = %e.message, "removing the APIBinding finalizer failed; retrying");
                false
            }
        };
    };
    tracing::debug!(reason, %message, "bound objects remain");
    if let Err(e) = write_condition(shard, rt, &at, binding, reason, &message).await {
        if !e.is_not_found() {
            tracing::warn!(error = %e.message, "writing the deletion condition failed; retrying");
        }
    }
    false
}

/// Deletes every object of the resources `binding` binds in `cluster`, except those
/// another binding of the cluster still serves; says what is left.
async fn delete_bound_objects(
    shard: &Shard,
    bound: &BoundResources,
    cluster: &str,
    name: &str,
    binding: &Value,
) -> Remaining {
    let mut remaining = Remaining::default();
    for (group, resource, crd) in super::schema::bound_crds_of(binding) {
        // Two bindings of one export may bind the same resource: its objects stay while
        // the other one serves them.
        if bound.bound_by_other(cluster, name, &group, &resource).is_some_and(|(_, other)| other == crd) {
            continue;
        }
        // Bound CRDs are never removed, so an unindexed one is not loaded yet: its objects
        // may exist, and the binding must not go before they are found.
        let Some(rt) = shard.registry.custom().storage_row(BOUND_CRDS_CLUSTER, &crd) else {
            let message = format!("the bound CRD {crd} serving {resource}.{group} is not loaded on this shard yet");
            remaining.failure.get_or_insert(message);
            continue;
        };
        delete_all_of(shard, &rt, cluster, &mut remaining).await;
    }
    remaining
}

/// Deletes every object of `rt` in `cluster` (every namespace), tallying what stays.
async fn delete_all_of(shard: &Shard, rt: &Arc<ResourceType>, cluster: &str, remaining: &mut Remaining) {
    let prefix = objects::collection_prefix(rt, Some(cluster), None);
    let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
    let page = match shard.store.list(&options, |_, _| true) {
        Ok(page) => page,
        Err(error) => {
            remaining.failure.get_or_insert_with(|| format!("listing {}: {error}", rt.group_resource()));
            return;
        }
    };
    for (_, stored) in page.items {
        let Ok(object) = objects::decode(&stored) else { continue };
        let name = meta::name(&object).unwrap_or_default();
        let at = ObjectRef { cluster, namespace: meta::namespace(&object), name };
        let deleted = storage::delete(shard, rt, &at, &DeletePreconditions::default(), WriteOptions::default()).await;
        let left = match deleted {
            Ok(storage::Deleted::Gone(_)) => continue,
            Err(e) if e.is_not_found() => continue,
            Ok(storage::Deleted::Pending(left)) => left,
            Err(e) => {
                remaining
                    .failure
                    .get_or_insert_with(|| format!("deleting {} {name}: {}", rt.group_resource(), e.message));
                object
            }
        };
        *remaining.by_resource.entry(rt.group_resource().to_string()).or_default() += 1;
        for finalizer in meta::finalizers(&left) {
            *remaining.by_finalizer.entry(finalizer).or_default() += 1;
        }
    }
}

/// Sets the False `BindingResourceDeleteSuccess` condition, keeping the others; writes
/// nothing when it already says this.
async fn write_condition(
    shard: &Shard,
    rt: &ResourceType,
    at: &ObjectRef<'_>,
    binding: &Value,
    reason: &str,
    message: &str,
) -> apiserver::rest::status::ApiResult<()> {
    let wanted = json!({"type": CONDITION, "status": "False", "reason": reason, "message": message});
    let current = binding.pointer("/status/conditions").and_then(Value::as_array).into_iter().flatten();
    if current.clone().any(|c| with_time_of(&wanted, c) == *c) {
        return Ok(());
    }
    storage::guaranteed_update(shard, rt, at, Some("status"), WriteOptions::default(), |old| {
        let mut new = old.clone();
        let mut status = old.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
        let mut conditions: Vec<Value> =
            status.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some(CONDITION));
        conditions.push(wanted.clone());
        status["conditions"] = Value::from(conditions);
        new["status"] = apiserver::conditions::with_transition_times(old.get("status"), &status);
        Ok(new)
    })
    .await
    .map(|_| ())
}

/// `wanted` with `current`'s transition time, to compare conditions without it.
fn with_time_of(wanted: &Value, current: &Value) -> Value {
    let mut wanted = wanted.clone();
    if let Some(time) = current.get("lastTransitionTime") {
        wanted["lastTransitionTime"] = time.clone();
    }
    wanted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condition_names_failures_then_finalizers_then_objects() {
        let mut remaining = Remaining::default();
        assert_eq!(remaining.condition(), None, "nothing left: the finalizer may go");
        remaining.by_resource.insert("widgets.example.io".into(), 2);
        let (reason, message) = remaining.condition().unwrap();
        assert_eq!(reason, RESOURCES_REMAIN);
        assert_eq!(message, "Some resources are remaining: widgets.example.io has 2 resource instances");
        remaining.by_finalizer.insert("example.io/keep".into(), 1);
        let (reason, message) = remaining.condition().unwrap();
        assert_eq!(reason, FINALIZERS_REMAIN);
        assert!(message.ends_with("example.io/keep in 1 resource instances"), "{message}");
        remaining.failure = Some("deleting widgets.example.io a: boom".into());
        assert_eq!(remaining.condition().unwrap().0, DELETION_FAILED);
    }

    #[test]
    fn an_unchanged_condition_compares_equal_whatever_its_time() {
        let wanted = json!({"type": CONDITION, "status": "False", "reason": "r", "message": "m"});
        let mut current = wanted.clone();
        current["lastTransitionTime"] = json!("t0");
        assert_eq!(with_time_of(&wanted, &current), current);
    }
}
