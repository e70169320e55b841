//! A ManagedCluster's health as OCM's hub judges it, pure: the registration agent renews
//! the lease `managed-cluster-lease` in the cluster's namespace; when the lease has not
//! been renewed for five lease durations (`spec.leaseDurationSeconds`, 60 by default) the
//! cluster's `ManagedClusterConditionAvailable` becomes Unknown
//! (ManagedClusterLeaseUpdateStopped). The taints follow the condition, as OCM's taint
//! controller sets them: Unknown or no condition yet (no agent has reported) gives
//! `cluster.open-cluster-management.io/unreachable`, False gives `…/unavailable`, both
//! NoSelect, each with the time it was added; True removes them. Placements then drop
//! the cluster unless they tolerate the taint. Only accepted clusters
//! (`spec.hubAcceptsClient`) are judged.

use jiff::{SignedDuration, Timestamp};
use protocol::meta;
use serde_json::{json, Value};

/// The lease the registration agent renews, in the cluster's namespace on the hub.
pub const LEASE_NAME: &str = "managed-cluster-lease";
/// The label on the lease naming its cluster.
pub const CLUSTER_NAME_LABEL: &str = "open-cluster-management.io/cluster-name";
/// The condition the lease decides.
pub const AVAILABLE_CONDITION: &str = "ManagedClusterConditionAvailable";
/// Taint of a cluster whose Available condition is Unknown.
pub const UNREACHABLE_TAINT: &str = "cluster.open-cluster-management.io/unreachable";
/// Taint of a cluster whose Available condition is False.
pub const UNAVAILABLE_TAINT: &str = "cluster.open-cluster-management.io/unavailable";
/// How many lease durations pass without a renewal before the cluster is Unknown.
const LEASE_DURATION_TIMES: i64 = 5;
/// `spec.leaseDurationSeconds` when unset.
const DEFAULT_LEASE_SECONDS: i64 = 60;

/// Whether the hub has accepted the cluster (only accepted clusters are judged).
pub fn accepted(cluster: &Value) -> bool {
    cluster.pointer("/spec/hubAcceptsClient").and_then(Value::as_bool) == Some(true)
}

/// How long the lease may go unrenewed.
pub fn grace(cluster: &Value) -> SignedDuration {
    let seconds = cluster.pointer("/spec/leaseDurationSeconds").and_then(Value::as_i64).filter(|s| *s > 0);
    SignedDuration::from_secs(seconds.unwrap_or(DEFAULT_LEASE_SECONDS) * LEASE_DURATION_TIMES)
}

/// A new lease for `cluster`, renewed `now`.
pub fn new_lease(cluster: &str, now: Timestamp) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": LEASE_NAME, "namespace": cluster, "labels": {CLUSTER_NAME_LABEL: cluster}},
        "spec": {"renewTime": micro_time(now)},
    })
}

/// `now` as a Lease's MicroTime.
pub fn micro_time(now: Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// The Available condition to write when the lease says the agent stopped, or `None`
/// when the cluster's conditions stand (the agent reports True itself).
pub fn stopped_condition(cluster: &Value, lease: &Value, now: Timestamp) -> Option<Value> {
    let renewed: Timestamp = lease.pointer("/spec/renewTime").and_then(Value::as_str)?.parse().ok()?;
    if now.duration_since(renewed) < grace(cluster) && !meta::is_deleting(cluster) {
        return None;
    }
    if condition_status(cluster, AVAILABLE_CONDITION) == Some("Unknown") {
        return None;
    }
    Some(json!({
        "type": AVAILABLE_CONDITION,
        "status": "Unknown",
        "reason": "ManagedClusterLeaseUpdateStopped",
        "message": "Registration agent stopped updating its lease.",
    }))
}

/// When the lease runs out, if nothing renews it.
pub fn expires_at(cluster: &Value, lease: &Value) -> Option<Timestamp> {
    let renewed: Timestamp = lease.pointer("/spec/renewTime").and_then(Value::as_str)?.parse().ok()?;
    renewed.checked_add(grace(cluster)).ok()
}

/// The status of one condition of the cluster.
pub fn condition_status<'a>(cluster: &'a Value, kind: &str) -> Option<&'a str> {
    let conditions = cluster.pointer("/status/conditions").and_then(Value::as_array)?;
    conditions.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(kind))?.get("status")?.as_str()
}

/// The cluster's taints as the Available condition wants them, or `None` when they are
/// already so. Other taints stay; a taint that stays keeps its timeAdded.
pub fn wanted_taints(cluster: &Value, now: Timestamp) -> Option<Vec<Value>> {
    let current = cluster.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
    let wanted_key = match condition_status(cluster, AVAILABLE_CONDITION) {
        Some("True") => None,
        Some("False") => Some(UNAVAILABLE_TAINT),
        _ => Some(UNREACHABLE_TAINT),
    };
    let ours = |t: &Value| matches!(t.get("key").and_then(Value::as_str), Some(UNREACHABLE_TAINT | UNAVAILABLE_TAINT));
    let mut taints: Vec<Value> = current.iter().filter(|t| !ours(t)).cloned().collect();
    if let Some(key) = wanted_key {
        let kept = current.iter().find(|t| t.get("key").and_then(Value::as_str) == Some(key));
        taints.push(kept.cloned().unwrap_or_else(
            || json!({"key": key, "effect": "NoSelect", "timeAdded": now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()}),
        ));
    }
    (taints != current).then_some(taints)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn cluster(lease_seconds: Option<i64>, available: Option<&str>, taints: Value) -> Value {
        let mut cluster = json!({"metadata": {"name": "c1"}, "spec": {"hubAcceptsClient": true, "taints": taints}});
        if let Some(seconds) = lease_seconds {
            cluster["spec"]["leaseDurationSeconds"] = json!(seconds);
        }
        if let Some(status) = available {
            cluster["status"] = json!({"conditions": [{"type": AVAILABLE_CONDITION, "status": status}]});
        }
        cluster
    }

    #[test]
    fn a_lease_older_than_five_durations_makes_the_cluster_unknown() {
        let lease = new_lease("c1", at("2026-11-25T10:00:00Z"));
        let available = cluster(None, Some("True"), json!([]));
        assert_eq!(stopped_condition(&available, &lease, at("2026-11-25T10:04:59Z")), None, "within 5 × 60 s");
        let stopped = stopped_condition(&available, &lease, at("2026-11-25T10:05:01Z")).expect("stopped");
        assert_eq!(
            (stopped["status"].as_str(), stopped["reason"].as_str()),
            (Some("Unknown"), Some("ManagedClusterLeaseUpdateStopped"))
        );
        let short = cluster(Some(2), Some("True"), json!([]));
        assert!(stopped_condition(&short, &lease, at("2026-11-25T10:00:11Z")).is_some(), "5 × 2 s");
        assert_eq!(expires_at(&short, &lease), Some(at("2026-11-25T10:00:10Z")));
        let unknown = cluster(Some(2), Some("Unknown"), json!([]));
        assert_eq!(stopped_condition(&unknown, &lease, at("2026-11-25T11:00:00Z")), None, "already Unknown");
    }

    #[test]
    fn taints_follow_the_available_condition() {
        let now = at("2026-11-25T10:00:00Z");
        let other = json!({"key": "gpu", "effect": "PreferNoSelect"});
        let unknown = cluster(None, Some("Unknown"), json!([other]));
        let taints = wanted_taints(&unknown, now).expect("the unreachable taint is added");
        assert_eq!(taints[0], other);
        assert_eq!(taints[1]["key"], UNREACHABLE_TAINT);
        assert_eq!(taints[1]["effect"], "NoSelect");
        assert_eq!(taints[1]["timeAdded"], "2026-11-25T10:00:00Z");
        let tainted = cluster(None, Some("Unknown"), Value::Array(taints.clone()));
        assert_eq!(wanted_taints(&tainted, at("2026-11-25T10:09:00Z")), None, "kept with its timeAdded");
        let unavailable = cluster(None, Some("False"), Value::Array(taints));
        let swapped = wanted_taints(&unavailable, now).unwrap();
        assert_eq!(swapped.iter().map(|t| t["key"].as_str().unwrap()).collect::<Vec<_>>(), ["gpu", UNAVAILABLE_TAINT]);
        let recovered = cluster(None, Some("True"), Value::Array(swapped));
        assert_eq!(wanted_taints(&recovered, now), Some(vec![other]));
        let joining = wanted_taints(&cluster(None, None, json!([])), now).expect("no agent yet: unreachable");
        assert_eq!(joining[0]["key"], UNREACHABLE_TAINT);
    }
}
