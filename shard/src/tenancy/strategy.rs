//! How the generic storage treats tenancy's kinds: LogicalClusters (their deletion
//! finalizer, phase, fixed canonical path and owner, the path index, and the `default`
//! namespace every new cluster gets) and Workspaces (admission against their type, the
//! placement only the scheduler writes, the creator recorded as owner).

use crate::paths::PathIndex;
use crate::state::Shard;
use apiserver::registry::strategy::{Causes, Committed, Hook, Strategy, WithGeneration};
use apiserver::registry::Core;
use apiserver::registry::{Registry, ResourceType};
use apiserver::rest::status::{ApiError, ApiResult};
use apiserver::storage::{self, WriteOptions};
use apiserver::strategy::{invalid, keep_annotation};
use protocol::wellknown::{
    OWNER_ANNOTATION, PATH_ANNOTATION, SCHEDULED_CLUSTER_ANNOTATION, SCHEDULED_SHARD_ANNOTATION,
};

use protocol::meta;
use security::authn::Identity;
use serde_json::{json, Value};
use std::sync::{Arc, Weak};

pub use protocol::wellknown::{LOGICAL_CLUSTER_FINALIZER, WORKSPACE_FINALIZER};
/// Workspace spec fields only the scheduler writes.
const WORKSPACE_SYSTEM_SPEC: [&str; 2] = ["cluster", "URL"];

/// Gives tenancy's rows their strategies. `shard` is the shard being assembled (workspace
/// admission reads parents and types through it once it serves).
pub fn register(registry: &mut Registry, shard: Weak<Shard>, paths: Arc<PathIndex>, base_url: String) {
    registry.add_rows(super::rows::rows());
    registry.set_strategy("core.kcp.io", "logicalclusters", Arc::new(LogicalCluster { paths, base_url }));
    registry.set_strategy("tenancy.kcp.io", "workspaces", Arc::new(Workspace { shard }));
    registry.set_strategy("tenancy.kcp.io", "workspacetypes", Arc::new(WithGeneration));
    registry.set_strategy("core.kcp.io", "shards", Arc::new(WithGeneration));
}

/// LogicalClusters.
#[derive(Debug)]
pub struct LogicalCluster {
    /// The canonical paths of the clusters hosted here, kept current on every write.
    pub paths: Arc<PathIndex>,
    /// This shard's base URL, for `status.URL`.
    pub base_url: String,
}

impl Strategy for LogicalCluster {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_create(&self, _rt: &ResourceType, object: &mut Value, _now: &str) -> ApiResult<()> {
        add_finalizer(object, LOGICAL_CLUSTER_FINALIZER);
        let initializers = object.pointer("/spec/initializers").cloned().unwrap_or_else(|| json!([]));
        let ready = initializers.as_array().is_none_or(Vec::is_empty);
        let cluster =
            meta::annotations(object).get(protocol::wellknown::CLUSTER_ANNOTATION).cloned().unwrap_or_default();
        object["status"] = json!({
            "phase": if ready { "Ready" } else { "Initializing" },
            "initializers": initializers,
            "URL": format!("{}/clusters/{cluster}", self.base_url),
        });
        Ok(())
    }

    fn prepare_update(&self, _rt: &ResourceType, old: &Value, new: &mut Value, sub: Option<&str>) -> ApiResult<()> {
        keep_annotation(old, new, PATH_ANNOTATION);
        // The owner is a grant (see `tenancy::owner`): nobody edits themselves into it.
        keep_annotation(old, new, OWNER_ANNOTATION);
        if sub == Some("status") {
            promote_initialized(new);
        }
        Ok(())
    }

    fn validate(&self, _rt: &ResourceType, _old: Option<&Value>, object: &Value) -> Causes {
        let name = meta::name(object).unwrap_or_default();
        if name == protocol::types::LOGICAL_CLUSTER_NAME {
            return Vec::new();
        }
        let message =
            "a LogicalCluster object must be named \"cluster\": it describes the logical cluster it is stored in";
        vec![("metadata.name".into(), invalid(name, message))]
    }

    fn admit_caller_delete(&self, caller: &Identity, _cluster: &str, object: &Value) -> ApiResult<()> {
        refuse_direct_delete(caller, object)
    }

    fn after_commit<'a>(&'a self, core: &'a Core, committed: Committed<'a>) -> Hook<'a> {
        self.paths.observe(committed.cluster, committed.object);
        Box::pin(async move {
            if committed.created {
                create_default_namespace(core, committed.cluster).await?;
            }
            Ok(())
        })
    }

    fn after_delete(&self, _core: &Core, cluster: &str, removed: &Value, _rv: u64) {
        if let Some(path) = meta::annotations(removed).get(PATH_ANNOTATION) {
            self.paths.forget(path, cluster);
        }
    }
}

/// kcp's LogicalCluster admission: a user's DELETE of a LogicalCluster is refused (403)
/// unless its `spec.directlyDeletable` is true, because the cluster belongs to the
/// Workspace that created it: deleting it behind the Workspace's back would leave a
/// Workspace pointing at nothing. `system:masters` (shards' peer calls, which is how the
/// workspace controller deletes a workspace's cluster) may always.
fn refuse_direct_delete(caller: &Identity, object: &Value) -> ApiResult<()> {
    let deletable = object.pointer("/spec/directlyDeletable").and_then(Value::as_bool) == Some(true);
    if deletable || caller.is_master() {
        return Ok(());
    }
    let resource = protocol::gvr::GroupResource::new("core.kcp.io", "logicalclusters");
    let why = "LogicalCluster cannot be deleted: its spec.directlyDeletable is false, so it goes only with the Workspace that owns it; delete that Workspace in the parent workspace instead (or have an administrator set spec.directlyDeletable to true)";
    Err(ApiError::forbidden_on(&resource, meta::name(object).unwrap_or_default(), why))
}

/// Every new logical cluster starts with a `default` namespace, as a kube cluster does.
async fn create_default_namespace(core: &Core, cluster: &str) -> ApiResult<()> {
    let namespaces = core.registry.namespaces();
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
    match Box::pin(storage::create(core, &namespaces, cluster, namespace, WriteOptions::default())).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Workspaces.
#[derive(Debug)]
pub struct Workspace {
    /// The shard, for admission (parents and types); set once the shard is assembled.
    pub shard: Weak<Shard>,
}

impl Strategy for Workspace {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn admit(&self, _core: &Core, _rt: &ResourceType, cluster: &str, object: &mut Value) -> ApiResult<()> {
        let shard = self.shard.upgrade().ok_or_else(|| ApiError::unavailable("the shard is shutting down"))?;
        super::admit_workspace(&shard, cluster, object)
    }

    fn admit_caller(&self, caller: &Identity, _cluster: &str, object: &mut Value) -> ApiResult<()> {
        super::owner::record_creator(caller, object);
        Ok(())
    }

    fn prepare_create(&self, _rt: &ResourceType, object: &mut Value, _now: &str) -> ApiResult<()> {
        add_finalizer(object, WORKSPACE_FINALIZER);
        if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
            for field in WORKSPACE_SYSTEM_SPEC {
                spec.remove(field);
            }
        }
        // Admission filled status.initializers from the workspace type.
        let initializers = object.pointer("/status/initializers").cloned().unwrap_or_else(|| json!([]));
        object["status"] = json!({"phase": "Scheduling", "initializers": initializers});
        Ok(())
    }

    fn prepare_update(&self, _rt: &ResourceType, old: &Value, new: &mut Value, sub: Option<&str>) -> ApiResult<()> {
        if sub.is_none() {
            keep_workspace_placement(old, new)?;
            keep_annotation(old, new, SCHEDULED_CLUSTER_ANNOTATION);
            keep_annotation(old, new, SCHEDULED_SHARD_ANNOTATION);
            keep_annotation(old, new, OWNER_ANNOTATION);
        }
        Ok(())
    }
}

fn add_finalizer(object: &mut Value, finalizer: &str) {
    let mut finalizers = meta::finalizers(object);
    if !finalizers.iter().any(|f| f == finalizer) {
        finalizers.push(finalizer.to_string());
        meta::set_finalizers(object, &finalizers);
    }
}

/// A workspace's type cannot change, and where it was scheduled is the scheduler's to say.
fn keep_workspace_placement(old: &Value, new: &mut Value) -> ApiResult<()> {
    let old_type = old.pointer("/spec/type");
    if new.pointer("/spec/type").is_some_and(|t| Some(t) != old_type) {
        let name = meta::name(old).unwrap_or_default();
        let cause = ("spec.type".to_string(), "Invalid value: field is immutable".to_string());
        return Err(ApiError::invalid("Workspace", "tenancy.kcp.io", name, &[cause]));
    }
    let spec = new.as_object_mut().map(|m| m.entry("spec").or_insert_with(|| json!({})));
    if let Some(spec) = spec.and_then(Value::as_object_mut) {
        for field in std::iter::once("type").chain(WORKSPACE_SYSTEM_SPEC) {
            match old.pointer(&format!("/spec/{field}")) {
                Some(value) => spec.insert(field.into(), value.clone()),
                None => spec.remove(field),
            };
        }
    }
    Ok(())
}

/// A LogicalCluster whose last initializer was removed is Ready.
fn promote_initialized(object: &mut Value) {
    let pending = object.pointer("/status/initializers").and_then(Value::as_array).is_some_and(|i| !i.is_empty());
    let initializing = object.pointer("/status/phase").and_then(Value::as_str) == Some("Initializing");
    if initializing && !pending {
        object["status"]["phase"] = Value::from("Ready");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenancy::rows::TenancyRows;

    fn logical_cluster() -> LogicalCluster {
        LogicalCluster { paths: Arc::default(), base_url: "https://shard".into() }
    }

    #[test]
    fn logical_cluster_object_must_be_named_cluster() {
        let rt = Registry::from_resources(crate::tenancy::rows::rows()).logical_clusters();
        let strategy = logical_cluster();
        assert!(strategy.validate(&rt, None, &json!({"metadata": {"name": "cluster"}})).is_empty());
        let causes = strategy.validate(&rt, None, &json!({"metadata": {"name": "other"}}));
        assert_eq!(causes.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(), vec!["metadata.name"]);
    }

    #[test]
    fn logical_cluster_create_sets_finalizer_phase_and_url() {
        let rt = Registry::from_resources(crate::tenancy::rows::rows()).logical_clusters();
        let mut object = json!({"metadata": {"name": "cluster", "annotations": {"kcp.io/cluster": "abc"}},
                                "spec": {"initializers": ["x"]}});
        logical_cluster().prepare_create(&rt, &mut object, "t").unwrap();
        assert_eq!(object["status"]["phase"], "Initializing");
        assert_eq!(object["status"]["URL"], "https://shard/clusters/abc");
        assert_eq!(meta::finalizers(&object), vec![LOGICAL_CLUSTER_FINALIZER.to_string()]);
        let old = json!({"metadata": {"name": "cluster", "annotations": {PATH_ANNOTATION: "root:a"}},
                         "status": {"phase": "Initializing", "initializers": ["x"]}});
        let mut new = json!({"metadata": {"name": "cluster", "annotations": {PATH_ANNOTATION: "root:evil"}},
                             "status": {"phase": "Initializing", "initializers": []}});
        logical_cluster().prepare_update(&rt, &old, &mut new, Some("status")).unwrap();
        assert_eq!(meta::annotations(&new)[PATH_ANNOTATION], "root:a", "the canonical path is fixed at birth");
        assert_eq!(new["status"]["phase"], "Ready", "the last initializer gone makes it Ready");
    }

    #[test]
    fn only_directly_deletable_logical_clusters_go_by_a_users_delete() {
        let user = Identity::new("alice", "", Vec::new());
        let master = Identity::new("admin", "", vec!["system:masters".to_string()]);
        let held = json!({"metadata": {"name": "cluster"}, "spec": {"directlyDeletable": false}});
        let error = refuse_direct_delete(&user, &held).unwrap_err();
        assert_eq!(error.code, 403);
        assert!(error.message.contains("spec.directlyDeletable is false"), "{}", error.message);
        assert!(refuse_direct_delete(&user, &json!({"metadata": {"name": "cluster"}})).is_err(), "false by default");
        assert!(refuse_direct_delete(&master, &held).is_ok(), "system:masters (the workspace controller) may");
        let deletable = json!({"metadata": {"name": "cluster"}, "spec": {"directlyDeletable": true}});
        assert!(refuse_direct_delete(&user, &deletable).is_ok());
    }

    #[test]
    fn workspace_type_is_immutable_and_placement_is_the_schedulers() {
        let rt = Registry::from_resources(crate::tenancy::rows::rows()).workspaces();
        let strategy = Workspace { shard: Weak::new() };
        let old = json!({"metadata": {"name": "w"}, "spec": {"type": {"name": "universal"}, "cluster": "abc"}});
        let mut retyped = json!({"metadata": {"name": "w"}, "spec": {"type": {"name": "other"}}});
        assert_eq!(strategy.prepare_update(&rt, &old, &mut retyped, None).unwrap_err().code, 422);
        let mut moved = json!({"metadata": {"name": "w"}, "spec": {"cluster": "elsewhere"}});
        strategy.prepare_update(&rt, &old, &mut moved, None).unwrap();
        assert_eq!(moved["spec"]["cluster"], "abc");
        assert_eq!(moved["spec"]["type"]["name"], "universal");
    }
}
