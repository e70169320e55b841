//! API binding: APIBindings in a consumer's logical cluster serve the resources of an
//! APIExport that may live in another workspace, on another shard.
//!
//! The controller resolves the export and its APIResourceSchemas through the fallback
//! lister (local store, then the cache), so bindings keep working while the exporting
//! shard is down. Each bound schema becomes a *bound CRD* in this shard's
//! [`BOUND_CRDS_CLUSTER`] (a system logical cluster nobody addresses), named after the
//! export identity and the schema's UID; the consumer cluster serves the resource from it
//! (`apiserver::registry::Registry::lookup`), with objects stored under
//! `<group>/<resource>:<identityHash>/…`, apart from every other export's. Bound CRDs are
//! local, so a bound resource keeps serving with the exporter and every cache gone.
//!
//! - [`schema`]: the pure conversions (schema → bound CRD, status entries).
//! - [`bound`]: which resources each cluster's bindings bind.
//! - [`admission`]: the `bind` permission check on the export, at create and update.
//! - [`claims`]: permission claims — which objects an export's claims grant, marked by
//!   label for the export's view.
//! - [`maximal`]: the export's maximal permission policy, bounding every consumer request
//!   to a bound resource.
//! - [`deletion`]: unbinding — a deleted binding's objects go before the binding does.
//! - [`source`]: bound resources as a source of the resource table.
//! - [`strategy`]: the APIBinding strategy, whose after-commit hook wakes the controller.
//! - [`system`]: root's system exports and their identities on every shard.

pub mod admission;
pub mod bound;
pub mod claims;
pub mod deletion;
pub mod maximal;
pub mod schema;
pub mod source;
pub mod strategy;
pub mod system;

use crate::cache::lister;
use crate::controllers::REQUEUE_DELAY;
use crate::state::Shard;
use apiserver::objects;
use apiserver::registry::ResourceType;
use apiserver::storage::{self, ObjectRef, WriteOptions};
use bound::BoundResources;
use parking_lot::Mutex;
use protocol::meta;
use protocol::types::APIS_KCP_GROUP;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use store::{ListOptions, Precondition, StoreError};

pub use crate::apis::APIS_GROUP;
pub use protocol::wellknown::BOUND_CRDS_CLUSTER;

/// The `apibindings.apis.kcp.io` registry row.
pub fn bindings_row(shard: &apiserver::registry::Core) -> Option<Arc<ResourceType>> {
    shard.registry.all().iter().find(|r| r.group == APIS_GROUP && r.resource == "apibindings").cloned()
}

/// Where a binding points: the export's workspace path (or cluster name) and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportRef {
    /// Canonical path or logical-cluster name of the export's workspace.
    pub path: String,
    /// The APIExport's name.
    pub name: String,
}

impl std::fmt::Display for ExportRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.path, self.name)
    }
}

/// The export `binding` (in logical cluster `cluster`) references; an empty path means the
/// binding's own workspace.
pub fn export_ref(binding: &Value, cluster: &str) -> Option<ExportRef> {
    let export = binding.pointer("/spec/reference/export")?;
    let name = export.get("name").and_then(Value::as_str).filter(|n| !n.is_empty())?;
    let path = export.get("path").and_then(Value::as_str).filter(|p| !p.is_empty()).unwrap_or(cluster);
    Some(ExportRef { path: path.to_string(), name: name.to_string() })
}

/// Binds every APIBinding of this shard: each stored one at start, then each one the
/// [`strategy::Binding`] after-commit hook queues, retrying while its export or schemas
/// cannot be read yet.
pub async fn run(shard: Arc<Shard>, state: Arc<strategy::BindingState>) {
    let Some(rt) = bindings_row(&shard) else { return };
    let busy: Busy = Arc::default();
    let prefix = objects::collection_prefix(&rt, None, None);
    let options = ListOptions { prefix: prefix.into_bytes(), ..ListOptions::default() };
    let page = loop {
        match shard.store.list(&options, |_, _| true) {
            Ok(page) => break page,
            Err(error) => {
                tracing::warn!(%error, "binding controller list failed; retrying");
                tokio::time::sleep(REQUEUE_DELAY).await;
            }
        }
    };
    for (key, _) in &page.items {
        if let Some((cluster, _, name)) = objects::split_key(key) {
            offer(&shard, &state, &busy, (cluster.to_string(), name.to_string()), None);
        }
    }
    loop {
        for (id, cause) in state.queue.next_batch().await {
            offer(&shard, &state, &busy, id, cause);
        }
    }
}

/// Bindings (cluster, name) with a reconcile loop running, each with whether it was
/// written again while its loop ran.
type Busy = Arc<Mutex<HashMap<(String, String), bool>>>;

/// Starts a reconcile loop for the binding `id` (cluster, name), or, when one runs, makes
/// it pass once more after it finishes: a write during a pass may change what to do.
fn offer(
    shard: &Arc<Shard>,
    state: &Arc<strategy::BindingState>,
    busy: &Busy,
    id: (String, String),
    cause: Option<telemetry::Cause>,
) {
    {
        let mut running = busy.lock();
        if let Some(written_again) = running.get_mut(&id) {
            *written_again = true;
            return;
        }
        running.insert(id.clone(), false);
    }
    let (shard, state, busy) = (shard.clone(), state.clone(), busy.clone());
    tokio::spawn(async move {
        // The binding's first pass continues the trace of the write that queued it.
        let span = crate::controllers::reconcile_span("apibinding.bind", &id.0, &id.1, cause);
        loop {
            let done =
                tracing::Instrument::instrument(reconcile(&shard, &state.bound, &id.0, &id.1), span.clone()).await;
            if done && !pass_again(&busy, &id) {
                break;
            }
            if !done {
                tokio::time::sleep(REQUEUE_DELAY).await;
            }
        }
    });
}

/// After a finished pass: true (and the mark cleared) when the binding was written while
/// it ran; otherwise the loop ends and leaves the busy set.
fn pass_again(busy: &Busy, id: &(String, String)) -> bool {
    let mut running = busy.lock();
    match running.get_mut(id) {
        Some(written_again) if *written_again => {
            *written_again = false;
            true
        }
        _ => {
            running.remove(id);
            false
        }
    }
}

/// What binding found: the status to write, and whether the work is finished.
struct Outcome {
    status: Value,
    done: bool,
}

/// One pass over one binding; true when nothing is left to do until it changes.
async fn reconcile(shard: &Shard, bound: &BoundResources, cluster: &str, name: &str) -> bool {
    let Some(rt) = bindings_row(shard) else { return true };
    let at = ObjectRef { cluster, namespace: None, name };
    let Ok((binding, _)) = storage::get(shard, &rt, &at) else { return true };
    if meta::is_deleting(&binding) {
        return deletion::reconcile(shard, bound, &rt, cluster, &binding).await;
    }
    let outcome = match bind(shard, bound, cluster, name, &binding).await {
        Ok(outcome) => outcome,
        Err(error) => {
            tracing::warn!(%error, "binding failed; retrying");
            return false;
        }
    };
    let unchanged =
        binding.get("status").is_some_and(|status| apiserver::conditions::same_status(status, &outcome.status));
    let written = if unchanged {
        binding
    } else {
        let status = outcome.status.clone();
        let update = storage::guaranteed_update(shard, &rt, &at, Some("status"), WriteOptions::default(), |old| {
            let mut new = old.clone();
            new["status"] = apiserver::conditions::with_transition_times(old.get("status"), &status);
            Ok(new)
        });
        match update.await {
            Ok(written) => written,
            Err(error) => {
                tracing::warn!(error = %error.message, "binding status update failed; retrying");
                return false;
            }
        }
    };
    bound.observe(cluster, &written);
    outcome.done
}

/// Resolves the export and schemas, makes the bound CRDs, and says what the status is.
async fn bind(
    shard: &Shard,
    bound: &BoundResources,
    cluster: &str,
    name: &str,
    binding: &Value,
) -> anyhow::Result<Outcome> {
    let Some(reference) = export_ref(binding, cluster) else {
        return Ok(waiting(
            "APIExportValid",
            "APIExportInvalid",
            "spec.reference.export.name is required".into(),
            true,
        ));
    };
    let Some(export) = lister::get(shard, APIS_KCP_GROUP, "apiexports", &reference.path, "", &reference.name) else {
        let message = format!("APIExport {reference} not found (or not replicated to this shard yet)");
        return Ok(waiting("APIExportValid", "APIExportNotFound", message, false));
    };
    let identity = export.object.pointer("/status/identityHash").and_then(Value::as_str).unwrap_or_default();
    if identity.is_empty() {
        let message = format!("APIExport {reference} has no identity yet");
        return Ok(waiting("APIExportValid", "APIExportNotReady", message, false));
    }
    let schema_names: Vec<&str> = export
        .object
        .pointer("/spec/latestResourceSchemas")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut bound_resources = Vec::new();
    for schema_name in schema_names {
        let Some(found) = lister::get(shard, APIS_KCP_GROUP, "apiresourceschemas", &export.cluster, "", schema_name)
        else {
            let message = format!("APIResourceSchema {schema_name} of APIExport {reference} not found");
            return Ok(waiting("APIExportValid", "APIResourceSchemaNotFound", message, false));
        };
        let schema = found.object;
        let (Some(crd), Some(entry)) =
            (schema::bound_crd(&schema, identity), schema::bound_resource(&schema, identity))
        else {
            let message = format!("APIResourceSchema {schema_name} of APIExport {reference} is invalid");
            return Ok(waiting("APIExportValid", "APIResourceSchemaInvalid", message, true));
        };
        if let Some(conflict) = conflict(shard, bound, cluster, name, &schema, identity) {
            return Ok(waiting("BindingUpToDate", "NamingConflicts", conflict, true));
        }
        ensure_bound_crd(shard, &crd).await?;
        bound_resources.push(entry);
    }
    let export_claims =
        export.object.pointer("/spec/permissionClaims").and_then(Value::as_array).cloned().unwrap_or_default();
    let applied_claims = claims::accepted(binding, &export_claims);
    let status = json!({
        "phase": "Bound",
        "apiExportClusterName": export.cluster,
        "boundResources": bound_resources,
        "conditions": [
            condition("APIExportValid", "True", "", ""),
            condition("BindingUpToDate", "True", "", ""),
            condition("InitialBindingCompleted", "True", "", ""),
            condition("Ready", "True", "", ""),
        ],
    });
    let mut status = status;
    if !export_claims.is_empty() {
        status["exportPermissionClaims"] = Value::Array(export_claims);
    }
    if !applied_claims.is_empty() {
        status["appliedPermissionClaims"] = Value::Array(applied_claims);
    }
    Ok(Outcome { status, done: true })
}

/// Why binding `schema` into `cluster` would clash with what the cluster already serves.
fn conflict(
    shard: &Shard,
    bound: &BoundResources,
    cluster: &str,
    binding: &str,
    schema: &Value,
    identity: &str,
) -> Option<String> {
    let (group, resource) = schema::group_resource(schema)?;
    if shard.registry.is_builtin(&group, &resource) {
        return Some(format!("{resource}.{group} is a built-in resource"));
    }
    if shard.registry.custom().of_cluster(cluster).iter().any(|r| r.group == group && r.resource == resource) {
        return Some(format!("a CustomResourceDefinition of this workspace already serves {resource}.{group}"));
    }
    let uid = meta::meta_str(schema, "uid").unwrap_or_default();
    match bound.bound_by_other(cluster, binding, &group, &resource) {
        Some((other, crd)) if crd != schema::bound_crd_name(identity, uid) => {
            Some(format!("APIBinding {other:?} already binds {resource}.{group} from another APIExport"))
        }
        _ => None,
    }
}

/// Stores the bound CRD (once: its name fixes its content) and indexes it.
async fn ensure_bound_crd(shard: &Shard, crd: &Value) -> anyhow::Result<()> {
    let rt = shard.registry.custom_resource_definitions();
    let name = meta::name(crd).unwrap_or_default();
    let key = objects::key(&rt, BOUND_CRDS_CLUSTER, None, name);
    let stored = match shard.store.get(key.as_bytes())? {
        Some(stored) => stored,
        None => {
            let mut crd = crd.clone();
            meta::set_meta_str(&mut crd, "uid", Some(&uuid::Uuid::new_v4().to_string()));
            meta::set_meta_str(&mut crd, "creationTimestamp", Some(&storage::now()));
            let value = objects::encode(&crd).map_err(|e| anyhow::anyhow!("{}", e.message))?;
            match shard.store.put(key.clone(), value, Precondition::MustNotExist).await {
                Ok(_) | Err(StoreError::AlreadyExists) => {}
                Err(error) => return Err(error.into()),
            }
            shard.store.get(key.as_bytes())?.ok_or_else(|| anyhow::anyhow!("bound CRD {name} vanished"))?
        }
    };
    let crd = objects::decode(&stored).map_err(|e| anyhow::anyhow!("{}", e.message))?;
    shard.registry.custom().observe(BOUND_CRDS_CLUSTER, &crd);
    Ok(())
}

/// A status that is not Bound (yet): `done` when retrying cannot help until the binding
/// or its export changes.
fn waiting(condition_type: &str, reason: &str, message: String, done: bool) -> Outcome {
    let status = json!({
        "phase": "Binding",
        "conditions": [
            condition(condition_type, "False", reason, &message),
            condition("Ready", "False", reason, &message),
        ],
    });
    Outcome { status, done }
}

fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    let mut condition = json!({"type": kind, "status": status});
    if !reason.is_empty() {
        condition["reason"] = json!(reason);
    }
    if !message.is_empty() {
        condition["message"] = json!(message);
    }
    condition
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_written_during_a_pass_gets_one_more() {
        let busy: Busy = Arc::default();
        let id = ("c".to_string(), "b".to_string());
        busy.lock().insert(id.clone(), false);
        assert!(!pass_again(&busy, &id), "not written again: the loop ends");
        assert!(busy.lock().is_empty(), "and leaves the busy set");
        busy.lock().insert(id.clone(), true);
        assert!(pass_again(&busy, &id), "written again: one more pass");
        assert!(!pass_again(&busy, &id), "then it ends");
    }

    #[test]
    fn references_default_to_the_own_workspace() {
        let binding = json!({"spec": {"reference": {"export": {"name": "widgets"}}}});
        assert_eq!(export_ref(&binding, "abc"), Some(ExportRef { path: "abc".into(), name: "widgets".into() }));
        let binding = json!({"spec": {"reference": {"export": {"path": "root:org", "name": "widgets"}}}});
        assert_eq!(export_ref(&binding, "abc").unwrap().to_string(), "root:org:widgets");
        assert!(export_ref(&json!({"spec": {}}), "abc").is_none());
    }
}
