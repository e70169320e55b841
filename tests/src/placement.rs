//! What the placement tests (Fleet, OCM, pacing) read and write alike: manifests as one
//! YAML stream for `kubectl apply -f -`, conditions by type, a Fleet MemberCluster, and
//! who a placement's bindings or decisions hold.

use serde_json::{json, Value};
use std::collections::BTreeSet;

/// `objects` as one YAML stream.
pub fn yaml(objects: &[Value]) -> String {
    objects.iter().map(|o| serde_yaml_ng::to_string(o).expect("YAML")).collect::<Vec<_>>().join("---\n")
}

/// The object's status condition of type `kind`.
pub fn condition<'v>(object: &'v Value, kind: &str) -> Option<&'v Value> {
    object["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind)
}

/// Whether the object's condition of type `kind` is True.
pub fn is_true(object: &Value, kind: &str) -> bool {
    condition(object, kind).is_some_and(|c| c["status"] == "True")
}

/// A Fleet MemberCluster with `labels`, joined by the `fleet-agent` user, heartbeating
/// every second.
pub fn member_cluster(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "cluster.kubernetes-fleet.io/v1", "kind": "MemberCluster",
        "metadata": {"name": name, "labels": labels},
        "spec": {"identity": {"kind": "User", "name": "fleet-agent", "apiGroup": "rbac.authorization.k8s.io"},
            "heartbeatPeriodSeconds": 1},
    })
}

/// The target clusters of a Fleet placement's bindings (a ClusterResourceBinding list)
/// that are not Unscheduled.
pub fn placed(bindings: &Value, crp: &str) -> BTreeSet<String> {
    let items = bindings["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter(|b| b["metadata"]["labels"]["kubernetes-fleet.io/parent-CRP"] == crp)
        .filter(|b| b["spec"]["state"] != "Unscheduled")
        .filter_map(|b| b["spec"]["targetCluster"].as_str().map(str::to_string))
        .collect()
}

/// The clusters an OCM placement's decisions (a PlacementDecision list) hold.
pub fn decided(list: &Value) -> BTreeSet<String> {
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .flat_map(|d| d["status"]["decisions"].as_array().cloned().unwrap_or_default())
        .filter_map(|d| d["clusterName"].as_str().map(str::to_string))
        .collect()
}
