//! What the member agent reports, computed from what it reads. Pure.
//!
//! - The MemberCluster heartbeat: `status.agentStatus` with a `MemberAgent` entry whose
//!   `Joined` and `Healthy` conditions say the agent serves the cluster (Joined False
//!   `InternalMemberClusterLeft` once the cluster is being deleted).
//! - Whether an applied object is available, judged from its kind and its status as the
//!   member returns it; kinds the agent cannot judge are `NotTrackable`.
//! - A Work's status: `Applied` and `Available` conditions and one `manifestConditions`
//!   entry per manifest, with KubeFleet's reasons.
//!
//! Every condition keeps its lastTransitionTime while its status stays, so a pass (or a
//! heartbeat) that changes nothing else writes nothing new but the heartbeat time.

use serde_json::{json, Map, Value};

/// The `agentStatus` type of the agent.
const MEMBER_AGENT: &str = "MemberAgent";
const APPLIED: &str = "Applied";
const AVAILABLE: &str = "Available";
/// A reason of a Work's or a manifest's Available condition.
const NOT_AVAILABLE: &str = "SomeManifestsAreNotAvailable";

/// How available an applied object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    /// Ready for use.
    Available,
    /// Applied but not ready yet (a rollout in progress): looked at again soon.
    NotYet,
    /// Applied; the agent cannot judge the kind (KubeFleet counts it available).
    NotTrackable,
}

/// The manifest a condition is about (KubeFleet's `WorkResourceIdentifier`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identifier {
    /// The manifest's index in the Work.
    pub ordinal: usize,
    pub group: String,
    pub version: String,
    pub kind: String,
    /// The plural the member serves the kind as (empty when it does not).
    pub resource: String,
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
}

impl Identifier {
    /// As KubeFleet writes it: the ordinal, and the other fields when not empty.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("ordinal".into(), json!(self.ordinal));
        let fields = [
            ("group", &self.group),
            ("version", &self.version),
            ("kind", &self.kind),
            ("resource", &self.resource),
            ("namespace", &self.namespace),
            ("name", &self.name),
        ];
        for (field, text) in fields {
            if !text.is_empty() {
                map.insert(field.into(), json!(text));
            }
        }
        Value::Object(map)
    }
}

/// What became of one manifest: applied (and how available), or not (why, in the
/// member's words).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub identifier: Identifier,
    pub result: Result<Availability, String>,
}

impl Outcome {
    /// A manifest that was not applied.
    pub fn failed(identifier: Identifier, message: impl Into<String>) -> Self {
        Outcome { identifier, result: Err(message.into()) }
    }

    /// Whether nothing is left to wait for: applied, and available or not trackable.
    pub fn settled(&self) -> bool {
        matches!(self.result, Ok(Availability::Available | Availability::NotTrackable))
    }
}

/// Kinds that are ready once the member accepts them.
const AVAILABLE_ON_APPLY: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "ConfigMap"),
    ("", "Secret"),
    ("", "ServiceAccount"),
    ("", "LimitRange"),
    ("", "ResourceQuota"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("policy", "PodDisruptionBudget"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("networking.k8s.io", "IngressClass"),
];

/// How available `object` (as the member returned it) of `group` and `kind` is.
pub fn availability(group: &str, kind: &str, object: &Value) -> Availability {
    let number = |pointer: &str| object.pointer(pointer).and_then(Value::as_i64);
    let at_least = |pointer: &str, wanted: i64| number(pointer).unwrap_or(0) >= wanted;
    // The controller has seen the latest spec.
    let current = number("/status/observedGeneration").unwrap_or(0) >= number("/metadata/generation").unwrap_or(0);
    let replicas = number("/spec/replicas").unwrap_or(1);
    let judged = |ready: bool| if ready { Availability::Available } else { Availability::NotYet };
    match (group, kind) {
        ("apps", "Deployment") => judged(
            current && at_least("/status/availableReplicas", replicas) && at_least("/status/updatedReplicas", replicas),
        ),
        ("apps", "StatefulSet") => judged(
            current && at_least("/status/readyReplicas", replicas) && at_least("/status/updatedReplicas", replicas),
        ),
        ("apps", "DaemonSet") => {
            // Until the controller has counted the nodes there is nothing to compare with.
            let desired = number("/status/desiredNumberScheduled");
            judged(current && desired.is_some_and(|desired| at_least("/status/numberAvailable", desired)))
        }
        ("batch", "Job") => {
            let conditions = object.pointer("/status/conditions").and_then(Value::as_array);
            let complete = conditions.into_iter().flatten().any(|condition| {
                condition.get("type").and_then(Value::as_str) == Some("Complete")
                    && condition.get("status").and_then(Value::as_str) == Some("True")
            });
            judged(complete || at_least("/status/succeeded", 1))
        }
        ("", "Service") => match object.pointer("/spec/type").and_then(Value::as_str) {
            None | Some("ClusterIP") => Availability::Available,
            Some(_) => Availability::NotTrackable,
        },
        (group, kind) if AVAILABLE_ON_APPLY.contains(&(group, kind)) => Availability::Available,
        _ => Availability::NotTrackable,
    }
}

/// A condition without its lastTransitionTime (see [`carry_transitions`]).
fn condition(kind: &str, status: bool, reason: &str, message: &str, generation: i64) -> Value {
    let status = if status { "True" } else { "False" };
    json!({
        "type": kind, "status": status, "reason": reason, "message": message, "observedGeneration": generation,
    })
}

/// `conditions` with their lastTransitionTime: the one of the condition of the same type
/// in `previous` (a list of conditions) while its status and observed generation are the
/// same, else `now` (a condition about a new generation is a new fact: the hub measures
/// how long an untrackable Work has been available from it).
pub fn carry_transitions(previous: Option<&Value>, conditions: Vec<Value>, now: &str) -> Vec<Value> {
    let previous = previous.and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    conditions
        .into_iter()
        .map(|mut condition| {
            let before = previous.iter().find(|p| p.get("type") == condition.get("type"));
            let kept = before
                .filter(|p| p.get("status") == condition.get("status"))
                .filter(|p| p.get("observedGeneration") == condition.get("observedGeneration"))
                .and_then(|p| p.get("lastTransitionTime"))
                .filter(|time| time.is_string())
                .cloned();
            condition["lastTransitionTime"] = kept.unwrap_or_else(|| json!(now));
            condition
        })
        .collect()
}

/// The MemberCluster's `status.agentStatus` after a heartbeat at `now`: its `MemberAgent`
/// entry replaced (other agents' entries kept), Joined (False once the agent `left`: it
/// removed what it applied while the MemberCluster is being deleted) and Healthy.
pub fn agent_status(member_cluster: &Value, left: bool, now: &str) -> Value {
    let generation = member_cluster.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
    let mut agents =
        member_cluster.pointer("/status/agentStatus").and_then(Value::as_array).cloned().unwrap_or_default();
    let position = agents.iter().position(|a| a.get("type").and_then(Value::as_str) == Some(MEMBER_AGENT));
    let previous = position.and_then(|index| agents[index].get("conditions"));
    let joined = if left {
        condition("Joined", false, "InternalMemberClusterLeft", "The member agent left the fleet", generation)
    } else {
        condition("Joined", true, "InternalMemberClusterJoined", "The member agent joined the fleet", generation)
    };
    let healthy = condition("Healthy", true, "InternalMemberClusterHealthy", "The member agent is healthy", generation);
    let entry = json!({
        "type": MEMBER_AGENT,
        "lastReceivedHeartbeat": now,
        "conditions": carry_transitions(previous, vec![joined, healthy], now),
    });
    match position {
        Some(index) => agents[index] = entry,
        None => agents.push(entry),
    }
    Value::Array(agents)
}

/// A Work's status (`conditions` and `manifestConditions`) for the `outcomes` of its
/// manifests at generation `generation`, carrying transition times from `previous`
/// (its current status).
pub fn work_status(previous: &Value, generation: i64, outcomes: &[Outcome], now: &str) -> Value {
    let total = outcomes.len();
    let failed: Vec<(&Outcome, &String)> =
        outcomes.iter().filter_map(|outcome| Some((outcome, outcome.result.as_ref().err()?))).collect();
    let count = |wanted: Availability| outcomes.iter().filter(|o| o.result.as_ref().ok() == Some(&wanted)).count();
    let (waiting, untrackable) = (count(Availability::NotYet), count(Availability::NotTrackable));
    let applied = match failed.first() {
        None => {
            condition(APPLIED, true, "AllManifestsApplied", &format!("All {total} manifest(s) are applied"), generation)
        }
        Some((first, message)) => {
            let message = format!(
                "{} of {total} manifest(s) are not applied; manifest {} ({} {}): {message}",
                failed.len(),
                first.identifier.ordinal,
                first.identifier.kind,
                first.identifier.name,
            );
            condition(APPLIED, false, "SomeManifestsAreNotApplied", &message, generation)
        }
    };
    let available = if !failed.is_empty() {
        let message = format!("{} of {total} manifest(s) are not applied", failed.len());
        condition(AVAILABLE, false, NOT_AVAILABLE, &message, generation)
    } else if waiting > 0 {
        let message = format!("{waiting} of {total} manifest(s) are not available yet");
        condition(AVAILABLE, false, NOT_AVAILABLE, &message, generation)
    } else if untrackable > 0 {
        let message =
            format!("{untrackable} of {total} manifest(s) are applied but their availability is not trackable");
        condition(AVAILABLE, true, "WorkNotTrackable", &message, generation)
    } else {
        condition(
            AVAILABLE,
            true,
            "AllManifestsAvailable",
            &format!("All {total} manifest(s) are available"),
            generation,
        )
    };
    let manifest_conditions: Vec<Value> =
        outcomes.iter().map(|outcome| manifest_condition(previous, outcome, generation, now)).collect();
    json!({
        "conditions": carry_transitions(previous.get("conditions"), vec![applied, available], now),
        "manifestConditions": manifest_conditions,
    })
}

/// One `manifestConditions` entry, carrying transition times from the entry of `previous`
/// with the same identifier.
fn manifest_condition(previous: &Value, outcome: &Outcome, generation: i64, now: &str) -> Value {
    let identifier = outcome.identifier.to_value();
    let conditions = match &outcome.result {
        Ok(availability) => {
            let (status, reason, message) = match availability {
                Availability::Available => (true, "Available", "Manifest is available"),
                Availability::NotYet => (false, "ManifestNotAvailableYet", "Manifest is not available yet"),
                Availability::NotTrackable => (true, "NotTrackable", "Manifest's availability is not trackable"),
            };
            vec![
                condition(APPLIED, true, "Applied", "Manifest is applied", generation),
                condition(AVAILABLE, status, reason, message, generation),
            ]
        }
        Err(message) => vec![
            condition(APPLIED, false, "ManifestApplyFailed", message, generation),
            condition(AVAILABLE, false, "ManifestNotAvailableYet", "Manifest is not applied", generation),
        ],
    };
    let entries = previous.get("manifestConditions").and_then(Value::as_array);
    let before = entries.into_iter().flatten().find(|entry| entry.get("identifier") == Some(&identifier));
    json!({
        "identifier": identifier,
        "conditions": carry_transitions(before.and_then(|entry| entry.get("conditions")), conditions, now),
    })
}

/// Whether the status `previous` already says what `status` does, lastTransitionTimes
/// aside.
pub fn same_status(previous: &Value, status: &Value) -> bool {
    let comparable = |status: &Value| {
        without_transition_times(&json!({
            "conditions": status.get("conditions"),
            "manifestConditions": status.get("manifestConditions"),
        }))
    };
    comparable(previous) == comparable(status)
}

fn without_transition_times(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| key.as_str() != "lastTransitionTime")
                .map(|(key, value)| (key.clone(), without_transition_times(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_transition_times).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::Availability::{Available, NotTrackable, NotYet};
    use super::*;

    #[test]
    fn availability_follows_each_kinds_status() {
        let deployment = |generation: i64, observed: i64, replicas: Option<i64>, available: i64, updated: i64| {
            let mut object = json!({"metadata": {"generation": generation},
                "status": {"observedGeneration": observed, "availableReplicas": available, "updatedReplicas": updated}});
            if let Some(replicas) = replicas {
                object["spec"] = json!({"replicas": replicas});
            }
            object
        };
        let cases = [
            ("apps", "Deployment", deployment(2, 2, Some(3), 3, 3), Available),
            ("apps", "Deployment", deployment(2, 1, Some(3), 3, 3), NotYet),
            ("apps", "Deployment", deployment(2, 2, Some(3), 2, 3), NotYet),
            ("apps", "Deployment", deployment(2, 2, Some(3), 3, 2), NotYet),
            ("apps", "Deployment", deployment(1, 1, None, 1, 1), Available),
            ("apps", "Deployment", deployment(1, 1, None, 0, 1), NotYet),
            ("apps", "Deployment", json!({"metadata": {"generation": 1}}), NotYet),
            ("apps", "Deployment", deployment(1, 1, Some(0), 0, 0), Available),
            (
                "apps",
                "StatefulSet",
                json!({"metadata": {"generation": 1}, "spec": {"replicas": 2},
                    "status": {"observedGeneration": 1, "readyReplicas": 2, "updatedReplicas": 2}}),
                Available,
            ),
            (
                "apps",
                "StatefulSet",
                json!({"metadata": {"generation": 1}, "spec": {"replicas": 2},
                    "status": {"observedGeneration": 1, "readyReplicas": 1, "updatedReplicas": 2}}),
                NotYet,
            ),
            (
                "apps",
                "DaemonSet",
                json!({"metadata": {"generation": 1},
                    "status": {"observedGeneration": 1, "desiredNumberScheduled": 3, "numberAvailable": 3}}),
                Available,
            ),
            (
                "apps",
                "DaemonSet",
                json!({"metadata": {"generation": 1},
                    "status": {"observedGeneration": 1, "desiredNumberScheduled": 3, "numberAvailable": 2}}),
                NotYet,
            ),
            ("apps", "DaemonSet", json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1}}), NotYet),
            ("batch", "Job", json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}}), Available),
            ("batch", "Job", json!({"status": {"conditions": [{"type": "Complete", "status": "False"}]}}), NotYet),
            ("batch", "Job", json!({"status": {"succeeded": 1}}), Available),
            ("batch", "Job", json!({"status": {"active": 1}}), NotYet),
            ("", "Service", json!({"spec": {"clusterIP": "None"}}), Available),
            ("", "Service", json!({"spec": {"type": "ClusterIP"}}), Available),
            ("", "Service", json!({"spec": {"type": "LoadBalancer"}}), NotTrackable),
            ("", "ConfigMap", json!({}), Available),
            ("", "Namespace", json!({}), Available),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding", json!({}), Available),
            ("policy", "PodDisruptionBudget", json!({}), Available),
            ("", "Pod", json!({}), NotTrackable),
            ("example.com", "Deployment", json!({}), NotTrackable),
            ("example.com", "ConfigMap", json!({}), NotTrackable),
            ("apiextensions.k8s.io", "CustomResourceDefinition", json!({}), NotTrackable),
        ];
        for (group, kind, object, expected) in cases {
            assert_eq!(availability(group, kind, &object), expected, "{group} {kind} {object}");
        }
    }

    #[test]
    fn transition_times_are_kept_while_the_status_stays() {
        let previous = json!([
            {"type": "Joined", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Healthy", "status": "True", "lastTransitionTime": "2026-01-02T00:00:00Z"},
        ]);
        let now = "2026-03-01T00:00:00Z";
        let conditions = vec![
            json!({"type": "Joined", "status": "True"}),
            json!({"type": "Healthy", "status": "False"}),
            json!({"type": "New", "status": "True"}),
        ];
        let carried = carry_transitions(Some(&previous), conditions, now);
        let times: Vec<&str> = carried.iter().map(|c| c["lastTransitionTime"].as_str().unwrap()).collect();
        assert_eq!(times, vec!["2026-01-01T00:00:00Z", now, now]);
        let fresh = carry_transitions(None, vec![json!({"type": "Joined", "status": "True"})], now);
        assert_eq!(fresh[0]["lastTransitionTime"], now);
    }

    #[test]
    fn a_heartbeat_changes_only_the_heartbeat_time_until_the_cluster_leaves() {
        let cluster = json!({"metadata": {"name": "m1", "generation": 4}, "status": {"agentStatus": [
            {"type": "ServiceExportImportAgent", "conditions": []},
        ]}});
        let first = agent_status(&cluster, false, "2026-01-01T00:00:00Z");
        assert_eq!(first[0]["type"], "ServiceExportImportAgent", "other agents are kept");
        let entry = &first[1];
        assert_eq!(entry["type"], "MemberAgent");
        assert_eq!(entry["conditions"][0]["reason"], "InternalMemberClusterJoined");
        assert_eq!(entry["conditions"][0]["observedGeneration"], 4);
        assert_eq!(entry["conditions"][1]["reason"], "InternalMemberClusterHealthy");
        let mut reported = cluster.clone();
        reported["status"]["agentStatus"] = first.clone();
        let second = agent_status(&reported, false, "2026-01-01T00:01:00Z");
        assert_eq!(second.as_array().unwrap().len(), 2);
        assert_eq!(second[1]["lastReceivedHeartbeat"], "2026-01-01T00:01:00Z");
        assert_eq!(second[1]["conditions"], first[1]["conditions"]);
        let left = agent_status(&reported, true, "2026-01-01T00:02:00Z");
        assert_eq!(left[1]["conditions"][0]["status"], "False");
        assert_eq!(left[1]["conditions"][0]["reason"], "InternalMemberClusterLeft");
        assert_eq!(left[1]["conditions"][0]["lastTransitionTime"], "2026-01-01T00:02:00Z");
        assert_eq!(left[1]["conditions"][1]["lastTransitionTime"], "2026-01-01T00:00:00Z");
    }

    fn outcome(ordinal: usize, result: Result<Availability, &str>) -> Outcome {
        let identifier = Identifier {
            ordinal,
            version: "v1".into(),
            kind: "ConfigMap".into(),
            resource: "configmaps".into(),
            namespace: "app".into(),
            name: format!("c{ordinal}"),
            ..Identifier::default()
        };
        Outcome { identifier, result: result.map_err(str::to_string) }
    }

    #[test]
    fn the_work_status_sums_up_its_manifests() {
        type Case = (Vec<Outcome>, (&'static str, &'static str), (&'static str, &'static str));
        let cases: Vec<Case> = vec![
            (vec![], ("True", "AllManifestsApplied"), ("True", "AllManifestsAvailable")),
            (
                vec![outcome(0, Ok(Available)), outcome(1, Ok(Available))],
                ("True", "AllManifestsApplied"),
                ("True", "AllManifestsAvailable"),
            ),
            (
                vec![outcome(0, Ok(Available)), outcome(1, Ok(NotTrackable))],
                ("True", "AllManifestsApplied"),
                ("True", "WorkNotTrackable"),
            ),
            (
                vec![outcome(0, Ok(NotYet)), outcome(1, Ok(NotTrackable))],
                ("True", "AllManifestsApplied"),
                ("False", "SomeManifestsAreNotAvailable"),
            ),
            (
                vec![outcome(0, Ok(Available)), outcome(1, Err("denied"))],
                ("False", "SomeManifestsAreNotApplied"),
                ("False", "SomeManifestsAreNotAvailable"),
            ),
        ];
        for (outcomes, applied, available) in cases {
            let status = work_status(&Value::Null, 3, &outcomes, "2026-01-01T00:00:00Z");
            let summary = |index: usize| {
                let condition = &status["conditions"][index];
                (condition["status"].as_str().unwrap(), condition["reason"].as_str().unwrap())
            };
            assert_eq!((summary(0), summary(1)), (applied, available), "{outcomes:?}");
            assert_eq!(status["conditions"][0]["observedGeneration"], 3);
            assert_eq!(status["manifestConditions"].as_array().unwrap().len(), outcomes.len());
        }
    }

    #[test]
    fn manifest_conditions_name_the_manifest_and_the_members_refusal() {
        let outcomes = [outcome(0, Ok(NotTrackable)), outcome(1, Err("admission webhook denied"))];
        let status = work_status(&Value::Null, 1, &outcomes, "2026-01-01T00:00:00Z");
        let first = &status["manifestConditions"][0];
        assert_eq!(
            first["identifier"],
            json!({"ordinal": 0, "version": "v1", "kind": "ConfigMap", "resource": "configmaps",
                "namespace": "app", "name": "c0"})
        );
        assert_eq!(first["conditions"][1]["reason"], "NotTrackable");
        let second = &status["manifestConditions"][1];
        assert_eq!(second["conditions"][0]["status"], "False");
        assert_eq!(second["conditions"][0]["reason"], "ManifestApplyFailed");
        assert_eq!(second["conditions"][0]["message"], "admission webhook denied");
        let message = status["conditions"][0]["message"].as_str().unwrap();
        assert!(message.contains("1 of 2") && message.contains("admission webhook denied"), "{message}");
    }

    #[test]
    fn a_pass_that_changes_nothing_writes_nothing() {
        let outcomes = [outcome(0, Ok(Available)), outcome(1, Ok(NotYet))];
        let written = work_status(&Value::Null, 1, &outcomes, "2026-01-01T00:00:00Z");
        let again = work_status(&written, 1, &outcomes, "2026-01-01T00:00:10Z");
        assert_eq!(again, written, "transition times are carried");
        assert!(same_status(&written, &again));
        // The second manifest becomes available: only its conditions and the Work's move.
        let later = [outcome(0, Ok(Available)), outcome(1, Ok(Available))];
        let moved = work_status(&written, 1, &later, "2026-01-01T00:00:20Z");
        assert!(!same_status(&written, &moved));
        assert_eq!(moved["manifestConditions"][0], written["manifestConditions"][0]);
        assert_eq!(moved["manifestConditions"][1]["conditions"][1]["lastTransitionTime"], "2026-01-01T00:00:20Z");
        assert_eq!(moved["conditions"][0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
        assert_eq!(moved["conditions"][1]["lastTransitionTime"], "2026-01-01T00:00:20Z");
        // A new generation is news even when every status stays.
        assert!(!same_status(&written, &work_status(&written, 2, &outcomes, "2026-01-01T00:00:30Z")));
        let mut retimed = written.clone();
        retimed["conditions"][0]["lastTransitionTime"] = json!("2025-01-01T00:00:00Z");
        assert!(same_status(&retimed, &written));
        assert!(!same_status(&Value::Null, &written));
    }
}
