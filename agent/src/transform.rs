//! What the agent writes, computed from what it reads. Pure.
//!
//! - The downstream object: the upstream one without its identity, status, scheduling
//!   metadata and kcp's bookkeeping, in the downstream namespace, labelled with the
//!   SyncTarget's key and annotated with its upstream logical cluster.
//! - The upstream patches: the agent's finalizer (`workload.kcp.io/syncer-<key>`) while it
//!   holds a downstream copy; its release, with the SyncTarget's label and deletion mark,
//!   once the copy is gone; and the sync state annotation
//!   (`experimental.status.workload.kcp.io/<key>`), which says why a member refused it.

use crate::names::{OWNER_LABEL, UPSTREAM_CLUSTER_ANNOTATION};
use serde_json::{json, Map, Value};

/// kcp's label prefix of the SyncTargets an object is scheduled to.
pub const STATE_LABEL_PREFIX: &str = "state.workload.kcp.io/";
/// kcp's annotation prefix marking a SyncTarget's copy for deletion.
pub const DELETION_ANNOTATION_PREFIX: &str = "deletion.internal.workload.kcp.io/";
/// kcp's finalizer prefix of the agent of a SyncTarget.
pub const FINALIZER_PREFIX: &str = "workload.kcp.io/syncer-";
/// kcp's annotation prefix of the state a SyncTarget reports for an object.
pub const STATUS_ANNOTATION_PREFIX: &str = "experimental.status.workload.kcp.io/";

/// Annotations that belong to the upstream installation, never copied down.
const UPSTREAM_ONLY: &[&str] = &[
    "kcp.io/",
    "scheduling.kcp.io/",
    "internal.workload.kcp.io/",
    DELETION_ANNOTATION_PREFIX,
    STATUS_ANNOTATION_PREFIX,
    "kubectl.kubernetes.io/last-applied-configuration",
];

/// The upstream logical cluster an object of a sync view lives in.
pub fn upstream_cluster(object: &Value) -> Option<&str> {
    object.pointer("/metadata/annotations/kcp.io~1cluster").and_then(Value::as_str)
}

/// Whether the SyncTarget keyed `key` is to let go of `upstream`: it is being deleted, or
/// its scheduling to the SyncTarget ends.
pub fn release_requested(upstream: &Value, key: &str) -> bool {
    upstream.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
        || annotations(upstream).contains_key(&format!("{DELETION_ANNOTATION_PREFIX}{key}"))
}

/// The downstream copy of `upstream` in namespace `namespace` of the member, for the
/// SyncTarget keyed `key`.
pub fn downstream(upstream: &Value, namespace: &str, key: &str) -> Value {
    let mut object = upstream.as_object().cloned().unwrap_or_default();
    object.remove("status");
    let metadata = upstream.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut labels: Map<String, Value> = metadata
        .get("labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| !k.starts_with(STATE_LABEL_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    labels.insert(OWNER_LABEL.into(), json!(key));
    let mut annotations: Map<String, Value> = metadata
        .get("annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| !UPSTREAM_ONLY.iter().any(|prefix| k.starts_with(prefix)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(cluster) = upstream_cluster(upstream) {
        annotations.insert(UPSTREAM_CLUSTER_ANNOTATION.into(), json!(cluster));
    }
    object.insert(
        "metadata".into(),
        json!({"name": metadata.get("name"), "namespace": namespace, "labels": labels, "annotations": annotations}),
    );
    // A Service's cluster IPs are the member's to assign; a headless one stays headless.
    if upstream.get("kind").and_then(Value::as_str) == Some("Service") {
        if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
            if spec.get("clusterIP").and_then(Value::as_str) != Some("None") {
                spec.remove("clusterIP");
                spec.remove("clusterIPs");
            }
        }
    }
    Value::Object(object)
}

/// The merge patch that puts the agent's finalizer on `upstream`, if it lacks it. The
/// resourceVersion makes it fail rather than overwrite a concurrent change.
pub fn hold(upstream: &Value, key: &str) -> Option<Value> {
    let finalizer = format!("{FINALIZER_PREFIX}{key}");
    let mut finalizers = finalizers(upstream);
    if finalizers.contains(&finalizer) {
        return None;
    }
    finalizers.push(finalizer);
    Some(json!({"metadata": {"resourceVersion": resource_version(upstream), "finalizers": finalizers}}))
}

/// The merge patch that lets go of `upstream` once its downstream copy is gone: the
/// finalizer, and with it the SyncTarget's label, deletion mark and state.
pub fn release(upstream: &Value, key: &str) -> Option<Value> {
    let finalizer = format!("{FINALIZER_PREFIX}{key}");
    let mut finalizers = finalizers(upstream);
    let held = finalizers.contains(&finalizer);
    finalizers.retain(|f| *f != finalizer);
    let label = format!("{STATE_LABEL_PREFIX}{key}");
    let mark = format!("{DELETION_ANNOTATION_PREFIX}{key}");
    let state = format!("{STATUS_ANNOTATION_PREFIX}{key}");
    let deleting = upstream.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    let labelled =
        upstream.pointer("/metadata/labels").and_then(Value::as_object).is_some_and(|l| l.contains_key(&label));
    if !held && (deleting || !labelled) {
        return None;
    }
    let mut metadata = json!({"resourceVersion": resource_version(upstream), "finalizers": finalizers});
    if !deleting {
        metadata["labels"] = json!({ label: null });
        metadata["annotations"] = json!({ mark: null, state: null });
    }
    Some(json!({ "metadata": metadata }))
}

/// The merge patch that records the sync state of `upstream` on the SyncTarget keyed
/// `key` (`None`: synced, no state to record), if it differs from what is recorded.
pub fn record_state(upstream: &Value, key: &str, error: Option<&str>) -> Option<Value> {
    let name = format!("{STATUS_ANNOTATION_PREFIX}{key}");
    let wanted = error.map(|message| {
        json!({"conditions": [{"type": "Synced", "status": "False", "reason": "MemberRejected", "message": message}]})
            .to_string()
    });
    let current = annotations(upstream).get(&name).cloned();
    if current == wanted {
        return None;
    }
    Some(json!({"metadata": {"annotations": { name: wanted }}}))
}

/// The status merge patch that brings `downstream`'s status up to `upstream`, if it
/// differs.
pub fn status_up(upstream: &Value, downstream: &Value) -> Option<Value> {
    let status = downstream.get("status").filter(|s| !s.is_null())?;
    if upstream.get("status") == Some(status) {
        return None;
    }
    Some(json!({ "status": status }))
}

fn finalizers(object: &Value) -> Vec<String> {
    let list = object.pointer("/metadata/finalizers").and_then(Value::as_array);
    list.into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

fn annotations(object: &Value) -> std::collections::BTreeMap<String, String> {
    let map = object.pointer("/metadata/annotations").and_then(Value::as_object);
    map.into_iter().flatten().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect()
}

fn resource_version(object: &Value) -> Value {
    object.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upstream() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "app", "uid": "u", "resourceVersion": "7",
                "labels": {"app": "web", "state.workload.kcp.io/k1": "Sync"},
                "annotations": {"kcp.io/cluster": "ws", "team": "a", "scheduling.kcp.io/placement": ""},
                "finalizers": ["other"], "managedFields": []},
            "data": {"k": "v"}})
    }

    #[test]
    fn the_downstream_copy_carries_content_and_the_owner_only() {
        let down = downstream(&upstream(), "kcp-abc", "k1");
        assert_eq!(
            down,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "kcp-abc",
                "labels": {"app": "web", "internal.workload.kcp.io/cluster": "k1"},
                "annotations": {"team": "a", "workload.kcp.io/upstream-cluster": "ws"}},
            "data": {"k": "v"}})
        );
        let service = json!({"kind": "Service", "metadata": {"name": "s"}, "spec": {"clusterIP": "10.0.0.1", "ports": []}, "status": {}});
        assert_eq!(downstream(&service, "n", "k")["spec"], json!({"ports": []}));
        let headless = json!({"kind": "Service", "metadata": {"name": "s"}, "spec": {"clusterIP": "None", "clusterIPs": ["None"]}});
        assert_eq!(downstream(&headless, "n", "k")["spec"]["clusterIP"], "None");
    }

    #[test]
    fn the_finalizer_is_held_then_released_with_the_label_and_mark() {
        let object = upstream();
        assert_eq!(
            hold(&object, "k1").unwrap(),
            json!({"metadata": {"resourceVersion": "7", "finalizers": ["other", "workload.kcp.io/syncer-k1"]}})
        );
        let mut held = object.clone();
        held["metadata"]["finalizers"] = json!(["other", "workload.kcp.io/syncer-k1"]);
        assert_eq!(hold(&held, "k1"), None);
        assert!(!release_requested(&held, "k1"));
        held["metadata"]["annotations"]["deletion.internal.workload.kcp.io/k1"] = json!("2026-01-01T00:00:00Z");
        assert!(release_requested(&held, "k1"));
        let patch = release(&held, "k1").unwrap();
        assert_eq!(patch["metadata"]["finalizers"], json!(["other"]));
        assert_eq!(patch["metadata"]["labels"], json!({"state.workload.kcp.io/k1": null}));
        assert_eq!(patch["metadata"]["annotations"]["deletion.internal.workload.kcp.io/k1"], Value::Null);
        // A deleting object only loses the finalizer.
        held["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(
            release(&held, "k1").unwrap(),
            json!({"metadata": {"resourceVersion": "7", "finalizers": ["other"]}})
        );
        assert_eq!(release(&object, "k9"), None, "nothing held, nothing labelled");
    }

    #[test]
    fn states_and_statuses_are_written_only_when_they_change() {
        let object = upstream();
        let patch = record_state(&object, "k1", Some("forbidden")).unwrap();
        let text = patch["metadata"]["annotations"]["experimental.status.workload.kcp.io/k1"].as_str().unwrap();
        assert!(text.contains("MemberRejected") && text.contains("forbidden"), "{text}");
        assert_eq!(record_state(&object, "k1", None), None);
        let down = json!({"status": {"replicas": 2}});
        assert_eq!(status_up(&object, &down), Some(json!({"status": {"replicas": 2}})));
        assert_eq!(status_up(&json!({"status": {"replicas": 2}}), &down), None);
    }
}
