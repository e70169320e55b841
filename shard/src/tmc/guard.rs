//! Who may write placement's metadata. The placement controllers write through storage
//! and are not asked; everyone else writes through the API:
//! - [`Reserved`] (every ordinary write, `system:masters` aside): the keys placement
//!   keeps on objects cannot be set or changed (403). A write that leaves one out keeps
//!   the stored value (a `kubectl replace` of a placed ConfigMap does not unplace it), so
//!   only the controllers and agents change them.
//! - [`ViewWrites`] (writes through a SyncTarget's sync view): an agent may write the
//!   status of objects placed on its SyncTarget, and on the object itself only its own
//!   finalizer, its own label and deletion mark (to let go) and its own state annotation.
//!   The check runs inside the write, against the stored object, so an object unplaced
//!   (or deleted and recreated) meanwhile is refused, and nothing is created.

use apiserver::registry::virtual_workspace::{keep_reserved, WriteAdmission};
use apiserver::rest::status::{ApiError, ApiResult};
use protocol::meta;
use protocol::types::{
    CLUSTER_RESOURCE_STATE_LABEL_PREFIX, INTERNAL_CLUSTER_DELETION_TIMESTAMP_ANNOTATION_PREFIX,
    INTERNAL_CLUSTER_STATUS_ANNOTATION_PREFIX, INTERNAL_SYNC_TARGET_PLACEMENT_ANNOTATION, PLACEMENT_ANNOTATION,
    SYNCER_FINALIZER_NAME_PREFIX,
};
use serde_json::{Map, Value};

/// Label prefixes only placement writes.
const RESERVED_LABELS: &[&str] = &[CLUSTER_RESOURCE_STATE_LABEL_PREFIX];
/// Annotations (prefixes, or whole keys) only placement writes.
const RESERVED_ANNOTATIONS: &[&str] = &[
    INTERNAL_CLUSTER_DELETION_TIMESTAMP_ANNOTATION_PREFIX,
    INTERNAL_CLUSTER_STATUS_ANNOTATION_PREFIX,
    INTERNAL_SYNC_TARGET_PLACEMENT_ANNOTATION,
    PLACEMENT_ANNOTATION,
];

/// The ordinary writes' guard of placement's metadata.
#[derive(Debug, Default)]
pub struct Reserved;

impl WriteAdmission for Reserved {
    fn admit(&self, old: Option<&Value>, new: &mut Value, _subresource: Option<&str>) -> ApiResult<()> {
        for (field, reserved) in [("labels", RESERVED_LABELS), ("annotations", RESERVED_ANNOTATIONS)] {
            let is_reserved = |key: &str| reserved.iter().any(|r| key.starts_with(r));
            keep_reserved(old, new, field, is_reserved).map_err(|field| refused(&field))?;
        }
        let before = old.map(meta::finalizers).unwrap_or_default();
        let mut after = meta::finalizers(new);
        let is_reserved = |f: &String| f.starts_with(SYNCER_FINALIZER_NAME_PREFIX);
        if let Some(added) = after.iter().find(|f| is_reserved(f) && !before.contains(f)) {
            return Err(refused(&format!("metadata.finalizers[{added}]")));
        }
        let kept: Vec<String> = before.iter().filter(|f| is_reserved(f) && !after.contains(f)).cloned().collect();
        if !kept.is_empty() {
            after.extend(kept);
            meta::set_finalizers(new, &after);
        }
        Ok(())
    }
}

fn refused(field: &str) -> ApiError {
    ApiError::forbidden(format!(
        "{field} is placement's: only the placement controllers and the SyncTarget's agent (through its sync view) \
         write it; choose where objects go with a Placement instead"
    ))
}

/// What an agent may change through the sync view of the SyncTarget keyed `key`.
#[derive(Debug)]
pub struct ViewWrites {
    /// The SyncTarget's key.
    pub key: String,
}

impl ViewWrites {
    fn own(&self) -> [String; 4] {
        let key = &self.key;
        [
            format!("{CLUSTER_RESOURCE_STATE_LABEL_PREFIX}{key}"),
            format!("{INTERNAL_CLUSTER_DELETION_TIMESTAMP_ANNOTATION_PREFIX}{key}"),
            format!("{INTERNAL_CLUSTER_STATUS_ANNOTATION_PREFIX}{key}"),
            format!("{SYNCER_FINALIZER_NAME_PREFIX}{key}"),
        ]
    }

    /// `object` without what the agent may change and what every write changes.
    fn comparable(&self, object: &Value) -> Value {
        let [label, mark, state, finalizer] = self.own();
        let mut object = object.clone();
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in ["resourceVersion", "managedFields", "generation"] {
                metadata.remove(field);
            }
            for (field, keys) in [("labels", vec![&label]), ("annotations", vec![&mark, &state])] {
                if let Some(map) = metadata.get_mut(field).and_then(Value::as_object_mut) {
                    keys.iter().for_each(|k| drop(map.remove(k.as_str())));
                    if map.is_empty() {
                        metadata.remove(field);
                    }
                }
            }
            if let Some(list) = metadata.get_mut("finalizers").and_then(Value::as_array_mut) {
                list.retain(|f| f.as_str() != Some(finalizer.as_str()));
                if list.is_empty() {
                    metadata.remove("finalizers");
                }
            }
            if metadata.is_empty() {
                object.as_object_mut().map(|o| o.insert("metadata".into(), Value::Object(Map::new())));
            }
        }
        object
    }
}

impl WriteAdmission for ViewWrites {
    fn admit(&self, old: Option<&Value>, new: &mut Value, subresource: Option<&str>) -> ApiResult<()> {
        let [label, ..] = self.own();
        let Some(old) = old else {
            return Err(ApiError::forbidden("a sync view creates nothing: objects are created in their workspace"));
        };
        if !meta::labels(old).contains_key(&label) {
            return Err(ApiError::forbidden(format!(
                "the object is not placed on this SyncTarget (it has no {label} label)"
            )));
        }
        match subresource {
            Some("status") => Ok(()),
            Some(other) => Err(ApiError::forbidden(format!("a sync view writes status only, not {other}"))),
            None if self.comparable(old) == self.comparable(new) => Ok(()),
            None => Err(ApiError::forbidden(format!(
                "through a sync view an agent changes only its finalizer, its {label} label, its deletion mark and \
                 its state annotation; write the object's status through /status"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reserved_keys_cannot_be_set_and_survive_omission() {
        let placed = json!({"metadata": {"name": "c", "labels": {"app": "web", "state.workload.kcp.io/k": "Sync"},
            "finalizers": ["workload.kcp.io/syncer-k"]}, "data": {"a": "1"}});
        // A create may not carry them.
        let mut forged = json!({"metadata": {"labels": {"state.workload.kcp.io/k": "Sync"}}});
        assert_eq!(Reserved.admit(None, &mut forged, None).unwrap_err().code, 403);
        let mut forged = json!({"metadata": {"finalizers": ["workload.kcp.io/syncer-k"]}});
        assert_eq!(Reserved.admit(None, &mut forged, None).unwrap_err().code, 403);
        // A replace that leaves them out keeps them.
        let mut replaced = json!({"metadata": {"name": "c", "labels": {"app": "web"}}, "data": {"a": "2"}});
        Reserved.admit(Some(&placed), &mut replaced, None).unwrap();
        assert_eq!(replaced["metadata"]["labels"]["state.workload.kcp.io/k"], "Sync");
        assert_eq!(replaced["metadata"]["finalizers"], json!(["workload.kcp.io/syncer-k"]));
        // A change of one is refused.
        let mut changed = placed.clone();
        changed["metadata"]["labels"]["state.workload.kcp.io/k"] = json!("Upsync");
        assert_eq!(Reserved.admit(Some(&placed), &mut changed, None).unwrap_err().code, 403);
        let mut deletion = placed.clone();
        deletion["metadata"]["annotations"] = json!({"deletion.internal.workload.kcp.io/k": "2999-01-01T00:00:00Z"});
        assert_eq!(Reserved.admit(Some(&placed), &mut deletion, None).unwrap_err().code, 403);
        // Everything else is the user's.
        let mut ordinary = placed.clone();
        ordinary["metadata"]["labels"]["app"] = json!("api");
        Reserved.admit(Some(&placed), &mut ordinary, None).unwrap();
    }

    #[test]
    fn an_agent_writes_only_its_own_keys_and_status() {
        let writes = ViewWrites { key: "k".into() };
        let placed = json!({"metadata": {"name": "c", "resourceVersion": "5",
            "labels": {"state.workload.kcp.io/k": "Sync", "state.workload.kcp.io/other": "Sync"}},
            "spec": {"image": "a"}});
        let mut held = placed.clone();
        held["metadata"]["finalizers"] = json!(["workload.kcp.io/syncer-k"]);
        held["metadata"]["annotations"] = json!({"experimental.status.workload.kcp.io/k": "{}"});
        writes.admit(Some(&placed), &mut held, None).unwrap();
        let mut released = held.clone();
        released["metadata"]["labels"] = json!({"state.workload.kcp.io/other": "Sync"});
        released["metadata"]["finalizers"] = json!([]);
        writes.admit(Some(&held), &mut released, None).unwrap();
        let mut spec = placed.clone();
        spec["spec"]["image"] = json!("evil");
        assert_eq!(writes.admit(Some(&placed), &mut spec, None).unwrap_err().code, 403);
        let mut others = placed.clone();
        others["metadata"]["labels"]["state.workload.kcp.io/other"] = json!(null);
        assert_eq!(writes.admit(Some(&placed), &mut others, None).unwrap_err().code, 403);
        let mut status = placed.clone();
        writes.admit(Some(&placed), &mut status, Some("status")).unwrap();
        assert_eq!(writes.admit(Some(&placed), &mut status, Some("scale")).unwrap_err().code, 403);
        assert_eq!(writes.admit(None, &mut status, None).unwrap_err().code, 403);
        let unplaced = json!({"metadata": {"name": "c"}});
        assert_eq!(writes.admit(Some(&unplaced), &mut unplaced.clone(), Some("status")).unwrap_err().code, 403);
    }
}
