//! Tenancy: workspaces (`tenancy.kcp.io/v1alpha1`), their types, and what ties a
//! Workspace in a parent logical cluster to the LogicalCluster it brings to life.
//!
//! Admission runs here (it reads the parent cluster and the type objects; [`owner`]
//! records the creator); the scheduler that places workspaces on shards is
//! [`crate::controllers::workspace`].

pub mod clusters;
pub mod owner;
pub mod rows;
pub mod strategy;
pub mod types;

use crate::state::Shard;
use crate::tenancy::rows::TenancyRows;
use apiserver::objects;
use apiserver::rest::status::{ApiError, ApiResult};
use apiserver::storage::{self, ObjectRef};
use protocol::meta;
use protocol::path::ROOT;
use protocol::types::LOGICAL_CLUSTER_NAME;
use protocol::wellknown::{
    OWNER_ANNOTATION, PATH_ANNOTATION, SCHEDULED_CLUSTER_ANNOTATION, SCHEDULED_SHARD_ANNOTATION,
    WORKSPACE_TYPE_ANNOTATION,
};
use serde_json::{json, Value};
use types::TypeRef;

/// The type of the root logical cluster.
pub const ROOT_TYPE: TypeRef<'static> = TypeRef { path: ROOT, name: "root" };

/// What a workspace needs to know about the logical cluster it is created in.
#[derive(Debug, Clone)]
pub struct Parent {
    /// The parent logical cluster's name.
    pub cluster: String,
    /// Its canonical path (its name when it has none).
    pub path: String,
    /// Its workspace type as `path:name`, when recorded.
    pub workspace_type: Option<String>,
}

/// Reads the parent logical cluster of a workspace.
pub fn parent(shard: &Shard, cluster: &str) -> ApiResult<Parent> {
    let record = shard
        .logical_cluster_record(cluster)
        .ok_or_else(|| ApiError::not_found_message(format!("logical cluster {cluster} does not exist")))?;
    let object = objects::decode(&record)?;
    let annotations = meta::annotations(&object);
    Ok(Parent {
        cluster: cluster.to_string(),
        path: annotations.get(PATH_ANNOTATION).cloned().unwrap_or_else(|| cluster.to_string()),
        workspace_type: annotations.get(WORKSPACE_TYPE_ANNOTATION).cloned(),
    })
}

/// Finds a WorkspaceType object: in a cluster of this shard (by canonical path), else in
/// the replicas of other shards' types from the cache (WorkspaceTypes are replicated), else
/// — for `root` — in the copy of root's types every shard keeps (see
/// [`crate::membership`]), which also works before the cache informer has synced.
pub fn find_type(shard: &Shard, reference: TypeRef<'_>) -> Option<Value> {
    let rt = shard.registry.workspace_types();
    if let Some(cluster) = shard.paths.resolve(reference.path).or_else(|| local_root(shard, reference.path)) {
        let at = ObjectRef { cluster: &cluster, namespace: None, name: reference.name };
        return storage::get(shard, &rt, &at).ok().map(|(object, _)| object);
    }
    let cached = crate::cache::lister::get(shard, &rt.group, &rt.resource, reference.path, "", reference.name);
    if let Some(found) = cached {
        return Some(found.object);
    }
    if reference.path == ROOT {
        return shard.membership.current().root_workspace_type(reference.name);
    }
    None
}

/// The root cluster when this shard hosts it (its path is its name).
fn local_root(shard: &Shard, path: &str) -> Option<String> {
    (path == ROOT && shard.cluster_exists(ROOT)).then(|| ROOT.to_string())
}

/// Admission of a new Workspace in `cluster`: defaults `spec.type` (from the parent's
/// type, else `root:universal`), checks that the type exists and may live under the
/// parent, and records the initializers the type brings in `status.initializers`.
pub fn admit_workspace(shard: &Shard, cluster: &str, object: &mut Value) -> ApiResult<()> {
    let name = meta::name(object).unwrap_or_default().to_string();
    let invalid = |field: &str, message: String| {
        ApiError::invalid("Workspace", "tenancy.kcp.io", &name, &[(field.to_string(), message)])
    };
    let parent = parent(shard, cluster)?;
    let parent_type_ref = parent.workspace_type.as_deref().and_then(types::parse_qualified);
    let parent_type = parent_type_ref.and_then(|r| find_type(shard, r).map(|object| (r, object)));
    let requested = object.pointer("/spec/type").cloned();
    let (child_ref, found) = match &requested {
        Some(value) => {
            let name = value.get("name").and_then(Value::as_str).unwrap_or_default();
            if name.is_empty() {
                return Err(invalid("spec.type.name", "Required value: name the WorkspaceType".into()));
            }
            match value.get("path").and_then(Value::as_str).filter(|p| !p.is_empty()) {
                Some(path) => (TypeRef { path, name }, None),
                // Without a path, the parent's own types come first, then root's.
                None => {
                    let in_parent = TypeRef { path: &parent.path, name };
                    match find_type(shard, in_parent) {
                        Some(object) => (in_parent, Some(object)),
                        None => (TypeRef { path: ROOT, name }, None),
                    }
                }
            }
        }
        None => (types::default_child(parent_type.as_ref().map(|(r, o)| (*r, o))), None),
    };
    let child_type = found.or_else(|| find_type(shard, child_ref)).ok_or_else(|| {
        invalid(
            "spec.type",
            format!(
                "Invalid value: {:?}: WorkspaceType {} not found (types are looked up in the parent workspace, in workspaces on the same shard, and in root)",
                child_ref.qualified(),
                child_ref.name
            ),
        )
    })?;
    let errors = types::placement_errors(child_ref, &child_type, parent_type.as_ref().map(|(r, o)| (*r, o)));
    if let Some(first) = errors.into_iter().next() {
        return Err(ApiError::forbidden(format!("workspaces.tenancy.kcp.io {name:?} is forbidden: {first}")));
    }
    let initializers = types::initializers(child_ref, &child_type, |r| find_type(shard, r))
        .map_err(|message| invalid("spec.type", message))?;
    let type_json = child_ref.to_json();
    let map = object.as_object_mut().expect("request bodies are objects");
    let spec = map.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        return Err(invalid("spec", "Invalid value: spec must be an object".into()));
    }
    spec["type"] = type_json;
    map.insert("status".into(), json!({"initializers": initializers}));
    // Drawing here saves the scheduler a write: the draw is stored with the Workspace,
    // before any LogicalCluster exists, so a restart finds it just the same.
    match draw(shard, |_| false) {
        Some((cluster, target)) => record_draw(object, &cluster, &target),
        None => {
            if let Some(annotations) = meta::metadata_mut(object).get_mut("annotations").and_then(Value::as_object_mut)
            {
                annotations.remove(SCHEDULED_CLUSTER_ANNOTATION);
                annotations.remove(SCHEDULED_SHARD_ANNOTATION);
            }
        }
    }
    Ok(())
}

/// A fresh logical-cluster name and the shard the ring maps it to, skipping shards
/// `exclude` rejects unless every shard is rejected; `None` while no shard is known.
pub fn draw(shard: &Shard, exclude: impl Fn(&str) -> bool) -> Option<(String, String)> {
    let set = shard.membership.current();
    let cluster = shard.cluster_names.next_name();
    let ring = set.ring();
    let target = ring.shard_for_excluding(&cluster, exclude).or_else(|| ring.shard_for(&cluster))?;
    let target = target.to_string();
    Some((cluster, target))
}

/// Records a draw on a Workspace.
pub fn record_draw(workspace: &mut Value, cluster: &str, target: &str) {
    meta::set_annotation(workspace, SCHEDULED_CLUSTER_ANNOTATION, cluster);
    meta::set_annotation(workspace, SCHEDULED_SHARD_ANNOTATION, target);
}

/// The LogicalCluster a scheduled workspace brings to life, as posted to the target shard.
pub fn logical_cluster_for(workspace: &Value, parent: &Parent) -> Value {
    let name = meta::name(workspace).unwrap_or_default();
    let type_ref = workspace.pointer("/spec/type").and_then(|t| types::reference(t, ROOT));
    let type_annotation = type_ref.unwrap_or(types::DEFAULT_TYPE).qualified();
    let initializers = workspace.pointer("/status/initializers").cloned().unwrap_or_else(|| json!([]));
    let mut logical_cluster = json!({
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "LogicalCluster",
        "metadata": {
            "name": LOGICAL_CLUSTER_NAME,
            "annotations": {
                PATH_ANNOTATION: format!("{}:{name}", parent.path),
                WORKSPACE_TYPE_ANNOTATION: type_annotation,
            },
        },
        "spec": {
            "owner": {
                "apiVersion": "tenancy.kcp.io/v1alpha1",
                "resource": "workspaces",
                "name": name,
                "cluster": parent.cluster,
                "uid": meta::meta_str(workspace, "uid").unwrap_or_default(),
            },
            "initializers": initializers,
        },
    });
    // The workspace's owner is the logical cluster's owner (see [`owner`]).
    if let Some(owner) = meta::annotations(workspace).get(OWNER_ANNOTATION) {
        meta::set_annotation(&mut logical_cluster, OWNER_ANNOTATION, owner);
    }
    logical_cluster
}

/// Whether a LogicalCluster was created for this workspace (owner UID matches).
pub fn owned_by(logical_cluster: &Value, workspace: &Value) -> bool {
    let owner_uid = logical_cluster.pointer("/spec/owner/uid").and_then(Value::as_str);
    owner_uid.is_some() && owner_uid == meta::meta_str(workspace, "uid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logical_cluster_carries_path_type_owner_and_initializers() {
        let workspace = json!({
            "metadata": {"name": "team", "uid": "u-1"},
            "spec": {"type": {"name": "universal", "path": "root"}},
            "status": {"initializers": ["root:init"]},
        });
        let parent = Parent { cluster: "abc".into(), path: "root:org".into(), workspace_type: None };
        let lc = logical_cluster_for(&workspace, &parent);
        assert_eq!(lc["metadata"]["annotations"][PATH_ANNOTATION], "root:org:team");
        assert_eq!(lc["metadata"]["annotations"][WORKSPACE_TYPE_ANNOTATION], "root:universal");
        assert_eq!(lc["spec"]["owner"]["cluster"], "abc");
        assert_eq!(lc["spec"]["initializers"], json!(["root:init"]));
        assert!(owned_by(&lc, &workspace));
        assert!(!owned_by(&lc, &json!({"metadata": {"uid": "u-2"}})));
        assert!(lc["metadata"]["annotations"].get(OWNER_ANNOTATION).is_none());
    }

    #[test]
    fn logical_cluster_inherits_the_workspace_owner() {
        let owner = r#"{"username":"alice"}"#;
        let workspace = json!({"metadata": {"name": "team", "uid": "u-1", "annotations": {OWNER_ANNOTATION: owner}}});
        let parent = Parent { cluster: "root".into(), path: "root".into(), workspace_type: None };
        let lc = logical_cluster_for(&workspace, &parent);
        assert_eq!(lc["metadata"]["annotations"][OWNER_ANNOTATION], owner);
    }
}
