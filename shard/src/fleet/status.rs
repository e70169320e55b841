//! What the Fleet hub reports, pure: a binding's conditions in KubeFleet's chain
//! (RolloutStarted, Overridden, WorkSynchronized, Applied, Available) from its Work, the
//! placement's status rolled up over its clusters, and each cluster's decision with the
//! framework's reason and scores.

use super::resources;
use super::rollout::State;
use super::PARENT_SNAPSHOT_NAME_ANNOTATION;
use placement::Outcome;
use protocol::meta;
use serde_json::{json, Value};

pub fn condition(kind: &str, status: bool, reason: &str, message: String, generation: i64) -> Value {
    json!({"type": kind, "status": if status { "True" } else { "False" }, "reason": reason,
        "message": message, "observedGeneration": generation})
}

pub fn unknown(kind: &str, reason: &str, message: &str, generation: i64) -> Value {
    json!({"type": kind, "status": "Unknown", "reason": reason, "message": message, "observedGeneration": generation})
}

/// `object`'s status with `condition` in place of the condition of its type (first), the
/// rest kept as it is: KubeFleet sets one condition this way when it stops short of the
/// full status (a placement whose selectors fail keeps where it placed things before).
pub fn with_condition(object: &Value, condition: Value) -> Value {
    let mut status = object.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    let kind = condition.get("type").cloned();
    let mut conditions: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
    conditions.retain(|c| c.get("type") != kind.as_ref());
    conditions.insert(0, condition);
    status["conditions"] = Value::Array(conditions);
    status
}

pub fn find_condition<'v>(object: &'v Value, kind: &str) -> Option<&'v Value> {
    let conditions = object.pointer("/status/conditions").and_then(Value::as_array);
    conditions.into_iter().flatten().find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

pub fn label<'v>(object: &'v Value, key: &str) -> Option<&'v str> {
    object.pointer("/metadata/labels").and_then(|l| l.get(key)).and_then(Value::as_str)
}

pub fn annotation<'v>(object: &'v Value, key: &str) -> Option<&'v str> {
    object.pointer("/metadata/annotations").and_then(|l| l.get(key)).and_then(Value::as_str)
}

/// What one placement's pass found out about one bound cluster's Work.
#[derive(Default, Clone)]
pub struct WorkState {
    /// The resource snapshot the Work carries.
    pub snapshot: String,
    pub synced: bool,
    pub applied: Option<bool>,
    pub available: Option<bool>,
    /// Available only because nothing could be tracked, and for how long.
    pub untrackable_since: Option<jiff::Timestamp>,
    /// Not available (reported False), and since when.
    pub unavailable_since: Option<jiff::Timestamp>,
    pub message: String,
}

/// A ClusterDecision: the cluster, whether it was selected, its scores and KubeFleet's
/// reason. The reason carries the scores but not the cluster's rank, so it changes only
/// when the cluster's own standing does.
pub fn cluster_decision(cluster: &str, decision: &placement::Decision, selected: bool) -> Value {
    let score = |plugin: &str| decision.score(cluster, plugin).and_then(|s| s.raw).unwrap_or(0.0).round() as i64;
    let (affinity, spread) = (score("PreferredTerms"), score("TopologySpread"));
    let report = decision.report(cluster);
    let reason = match report.map(|r| r.outcome) {
        _ if selected => format!(
            "Successfully scheduled resources for placement in \"{cluster}\" (affinity score: {affinity}, topology spread score: {spread}): picked by scheduling policy"
        ),
        Some(Outcome::Rejected) => {
            let report = report.expect("a rejected cluster has a report");
            format!("{}: {}", report.plugin.as_deref().unwrap_or("ClusterUnschedulable"), report.reason)
        }
        _ => format!(
            "Cluster \"{cluster}\" does not score high enough (affinity score: {affinity}, topology spread score: {spread})"
        ),
    };
    json!({
        "clusterName": cluster,
        "selected": selected,
        "clusterScore": {"affinityScore": affinity, "priorityScore": spread},
        "reason": reason,
    })
}

/// Condition `kind` saying whether the decision found every cluster the policy asks for,
/// with KubeFleet's reasons and messages (the policy snapshot's `Scheduled` and the
/// placement's `ClusterResourcePlacementScheduled` say the same).
pub fn scheduled(kind: &str, decision: &placement::Decision, generation: i64) -> Value {
    let found = decision.desired.len();
    if decision.unsatisfied == 0 && decision.missing.is_empty() {
        let message =
            format!("found all cluster needed as specified by the scheduling policy, found {found} cluster(s)");
        condition(kind, true, "SchedulingPolicyFulfilled", message, generation)
    } else {
        let message = format!(
            "could not find all the clusters needed as specified by the scheduling policy, found {found} cluster(s) instead{}",
            blocking(decision)
        );
        condition(kind, false, "SchedulingPolicyUnfulfilled", message, generation)
    }
}

/// How many rejected clusters [`blocking`] names.
const BLOCKING_SHOWN: usize = 5;

/// Why a policy is short of clusters: the first few rejected clusters and the plugin that
/// rejected each, so a placement that cannot progress says what blocks it.
pub fn blocking(decision: &placement::Decision) -> String {
    let mut parts: Vec<String> = decision.missing.iter().map(|n| format!("cluster {n:?} is not found")).collect();
    let rejected = decision.clusters.iter().filter(|r| r.outcome == Outcome::Rejected).take(BLOCKING_SHOWN);
    parts.extend(rejected.map(|r| format!("{}: {}", r.name, r.reason)));
    if parts.is_empty() {
        String::new()
    } else {
        format!("; blocked by {}", parts.join("; "))
    }
}

/// How many of the clusters a placement does not use its policy snapshot names, as
/// KubeFleet keeps its snapshots small.
pub const SNAPSHOT_OTHERS_SHOWN: usize = 20;

/// The reports the hub reads of a decision under `policy`: besides the picked and current
/// clusters' (which every decision has), the first [`SNAPSHOT_OTHERS_SHOWN`] not picked or
/// rejected that [`snapshot_targets`] names, the first `BLOCKING_SHOWN` rejected that
/// [`blocking`] names, and as many unused as the policy can be short of (no more than it
/// wants), which [`placement_status`] counts and [`keep_for_status`] keeps. A decision
/// with a report per member builds a thousand reports to have these thirty read.
pub fn reports_read(policy: &placement::Policy) -> placement::Reports {
    let wanted = match &policy.number {
        placement::Number::All => 0,
        placement::Number::N(n) => usize::try_from(*n).unwrap_or(usize::MAX),
        placement::Number::Fixed(names) => names.len(),
    };
    let first = SNAPSHOT_OTHERS_SHOWN.max(BLOCKING_SHOWN).max(wanted);
    placement::Reports { not_picked: first, rejected: first }
}

/// The policy snapshot's `targetClusters`: every picked cluster, then at most
/// [`SNAPSHOT_OTHERS_SHOWN`] of the others, those not picked before the rejected, each in
/// name order.
pub fn snapshot_targets(decision: &placement::Decision) -> Vec<Value> {
    let mut targets: Vec<Value> = decision.desired.iter().map(|c| cluster_decision(c, decision, true)).collect();
    let not_picked = decision.clusters.iter().filter(|r| r.outcome == Outcome::NotPicked);
    let rejected = decision.clusters.iter().filter(|r| r.outcome == Outcome::Rejected);
    let others = not_picked.chain(rejected).take(SNAPSHOT_OTHERS_SHOWN);
    targets.extend(others.map(|r| cluster_decision(&r.name, decision, false)));
    targets
}

/// Cuts `decision` down to what [`placement_status`] reads of it: the reports of the
/// picked clusters (their scores), the first rejected ones [`blocking`] names, and as many
/// unused ones as the policy can be short of. A pass holds every placement's decision from
/// the scheduling half to the status half, and a report per member for each of them is a
/// million reports for 1,000 placements over 1,000 members.
pub fn keep_for_status(decision: &mut placement::Decision) {
    let short = decision.wanted.map_or(0, |wanted| wanted.saturating_sub(decision.desired.len()));
    let picked: std::collections::BTreeSet<&str> = decision.desired.iter().map(String::as_str).collect();
    let (mut rejected, mut unused) = (0, 0);
    let kept: Vec<placement::ClusterReport> = std::mem::take(&mut decision.clusters)
        .into_iter()
        .filter(|report| {
            if picked.contains(report.name.as_str()) {
                return true;
            }
            let is_unused = matches!(report.outcome, Outcome::NotPicked | Outcome::Rejected);
            let named = report.outcome == Outcome::Rejected && rejected < BLOCKING_SHOWN;
            let keep = named || (is_unused && unused < short);
            rejected += usize::from(report.outcome == Outcome::Rejected && keep);
            unused += usize::from(is_unused && keep);
            keep
        })
        .collect();
    // Collected anew, not retained: a retained vector keeps the room of every report.
    decision.clusters = kept;
}

/// How far a member got with a Work, read from its status.
pub fn work_state(work: &Value, just_written: bool) -> WorkState {
    let generation = meta::generation(work);
    let current = |c: &&Value| c.get("observedGeneration").and_then(Value::as_i64) == Some(generation);
    let status = |kind: &str| -> Option<(bool, Value)> {
        let c = find_condition(work, kind).filter(current)?;
        Some((c.get("status").and_then(Value::as_str) == Some("True"), c.clone()))
    };
    let snapshot = annotation(work, PARENT_SNAPSHOT_NAME_ANNOTATION).unwrap_or_default().to_string();
    if just_written {
        return WorkState { snapshot, synced: true, ..WorkState::default() };
    }
    let applied = status("Applied");
    let available = status("Available");
    let untrackable_since = available
        .as_ref()
        .filter(|(ok, c)| *ok && c.get("reason").and_then(Value::as_str) == Some("WorkNotTrackable"))
        .and_then(|(_, c)| c.get("lastTransitionTime").and_then(Value::as_str)?.parse().ok());
    let unavailable_since = available
        .as_ref()
        .filter(|(ok, _)| !*ok)
        .and_then(|(_, c)| c.get("lastTransitionTime").and_then(Value::as_str)?.parse().ok());
    let message = [&applied, &available]
        .iter()
        .filter_map(|s| s.as_ref().filter(|(ok, _)| !ok))
        .filter_map(|(_, c)| c.get("message").and_then(Value::as_str).map(str::to_string))
        .next()
        .unwrap_or_default();
    WorkState {
        snapshot,
        synced: true,
        applied: applied.map(|(ok, _)| ok),
        available: available.map(|(ok, _)| ok),
        untrackable_since,
        unavailable_since,
        message,
    }
}

/// Why a placed cluster will not become ready by waiting, naming it (see
/// [`super::rollout::blockers`]): its resources failed to override or apply, or they have
/// been unavailable for longer than `unavailable_period`.
pub fn stuck(
    cluster: &str,
    work: Option<&WorkState>,
    override_failure: Option<&String>,
    now: jiff::Timestamp,
    unavailable_period: jiff::SignedDuration,
) -> Option<String> {
    if let Some(message) = override_failure {
        return Some(format!("cluster {cluster:?} failed to override: {message}"));
    }
    let work = work?;
    if work.applied == Some(false) {
        return Some(format!("cluster {cluster:?} failed to apply: {}", work.message));
    }
    let since = work.unavailable_since.filter(|_| work.available == Some(false))?;
    let for_long = now.duration_since(since) > unavailable_period;
    for_long.then(|| {
        format!(
            "cluster {cluster:?} is unavailable beyond unavailablePeriodSeconds ({}s): {}",
            unavailable_period.as_secs(),
            work.message
        )
    })
}

/// The placement's RolloutStarted when the rollout cannot advance: False with
/// `RolloutBlocked` and the blocking clusters.
///
/// Why RolloutStarted and not a condition of its own: it is the first link of the chain
/// a Fleet user reads (and `kubectl wait`s on), and it is already False while bindings
/// wait on the strategy; what tells stuck from converging is the reason: KubeFleet's
/// `RolloutNotStartedYet` while waiting can help, `RolloutBlocked` with the clusters and
/// what failed when only a change can. An extra condition would sit after a chain that
/// already stopped, where nobody looks.
pub fn rollout_blocked(blockers: &[String], generation: i64) -> Value {
    let message = format!(
        "The rollout cannot advance: maxUnavailable is used up by {} cluster(s) that will not become available by waiting: {}",
        blockers.len(),
        blockers.join("; ")
    );
    condition("ClusterResourcePlacementRolloutStarted", false, "RolloutBlocked", message, generation)
}

/// A binding's conditions in KubeFleet's chain: RolloutStarted, Overridden,
/// WorkSynchronized, Applied, Available; the chain stops at the first that is not True.
pub fn binding_conditions(
    binding: &Value,
    latest_snapshot: &str,
    blocked: bool,
    work: Option<&WorkState>,
    override_failure: Option<&String>,
    overridden: Option<bool>,
) -> Vec<Value> {
    let generation = meta::generation(binding);
    let state = State::of(binding);
    let on_latest = binding.pointer("/spec/resourceSnapshotName").and_then(Value::as_str) == Some(latest_snapshot);
    let mut out = Vec::new();
    if state == State::Scheduled || (blocked && !on_latest) {
        out.push(condition(
            "RolloutStarted",
            false,
            "RolloutNotStartedYet",
            "The resources cannot be updated to the latest because of the rollout strategy".into(),
            generation,
        ));
        return out;
    }
    out.push(condition(
        "RolloutStarted",
        true,
        "RolloutStarted",
        "Detected the new changes on the resources and started the rollout process".into(),
        generation,
    ));
    if let Some(message) = override_failure {
        out.push(condition("Overridden", false, "OverriddenFailed", message.clone(), generation));
        return out;
    }
    let (reason, message) = match overridden {
        Some(true) => ("OverriddenSucceeded", "Successfully applied the override rules on the resources"),
        _ => ("NoOverrideSpecified", "No override rules are configured for the selected resources"),
    };
    out.push(condition("Overridden", true, reason, message.into(), generation));
    let binding_snapshot = binding.pointer("/spec/resourceSnapshotName").and_then(Value::as_str).unwrap_or_default();
    let Some(work) = work.filter(|w| w.synced && w.snapshot == binding_snapshot) else {
        out.push(unknown("WorkSynchronized", "WorkSynchronizedUnknown", "the Work is not written yet", generation));
        return out;
    };
    out.push(condition(
        "WorkSynchronized",
        true,
        "AllWorkSynced",
        "All of the works are synchronized to the latest".into(),
        generation,
    ));
    match work.applied {
        None => {
            out.push(unknown("Applied", "ApplyPending", "the member has not applied the Work yet", generation));
            return out;
        }
        Some(false) => {
            out.push(condition("Applied", false, "NotAllWorkHaveBeenApplied", work.message.clone(), generation));
            return out;
        }
        Some(true) => out.push(condition(
            "Applied",
            true,
            "AllWorkHaveBeenApplied",
            "All corresponding work objects are applied".into(),
            generation,
        )),
    }
    match work.available {
        None => out.push(unknown("Available", "ResourceAvailableUnknown", "availability not reported yet", generation)),
        Some(false) => {
            out.push(condition("Available", false, "NotAllWorkAreAvailable", work.message.clone(), generation))
        }
        Some(true) if work.untrackable_since.is_some() => out.push(condition(
            "Available",
            true,
            "NotAllWorkAreAvailabilityTrackable",
            "The availability of some resources cannot be tracked".into(),
            generation,
        )),
        Some(true) => out.push(condition(
            "Available",
            true,
            "AllWorkAreAvailable",
            "All corresponding work objects are available".into(),
            generation,
        )),
    }
    out
}

/// The per-cluster condition types and the placement-level names and reasons they roll up
/// into: (per-cluster type, placement type, True reason, False reason, Unknown reason).
const CHAIN: &[(&str, &str, &str, &str, &str)] = &[
    (
        "RolloutStarted",
        "ClusterResourcePlacementRolloutStarted",
        "RolloutStarted",
        "RolloutNotStartedYet",
        "RolloutStartedUnknown",
    ),
    (
        "Overridden",
        "ClusterResourcePlacementOverridden",
        "OverriddenSucceeded",
        "OverriddenFailed",
        "OverriddenPending",
    ),
    (
        "WorkSynchronized",
        "ClusterResourcePlacementWorkSynchronized",
        "WorkSynchronized",
        "WorkNotSynchronizedYet",
        "WorkSynchronizedUnknown",
    ),
    ("Applied", "ClusterResourcePlacementApplied", "ApplySucceeded", "ApplyFailed", "ApplyPending"),
    (
        "Available",
        "ClusterResourcePlacementAvailable",
        "ResourceAvailable",
        "ResourceNotAvailableYet",
        "ResourceAvailableUnknown",
    ),
];

/// The placement's status: Scheduled from the decision, one entry per placed cluster
/// (and per cluster it is short of), the chain of conditions rolled up over clusters,
/// and `PlacementChangesHeld` while pacing holds voluntary changes back (`held`).
pub fn placement_status(
    crp: &Value,
    decision: &placement::Decision,
    clusters: &[(String, Value, Vec<Value>)],
    objects: &[Value],
    resource_index: &str,
    blockers: &[String],
    held: Option<&placement::pace::Held>,
) -> Value {
    let generation = meta::generation(crp);
    let scheduled = scheduled("ClusterResourcePlacementScheduled", decision, generation);
    let mut statuses = Vec::new();
    for (cluster, binding, conditions) in clusters {
        let mut list = vec![condition(
            "Scheduled",
            true,
            "Scheduled",
            cluster_decision(cluster, decision, true)["reason"].as_str().unwrap_or_default().to_string(),
            generation,
        )];
        list.extend(conditions.iter().map(|c| {
            let mut c = c.clone();
            c["observedGeneration"] = json!(generation);
            c
        }));
        let snapshot = binding.pointer("/spec/resourceSnapshotName").and_then(Value::as_str).unwrap_or_default();
        let index = snapshot.strip_suffix("-snapshot").and_then(|s| s.rsplit('-').next()).unwrap_or(resource_index);
        statuses.push(json!({"clusterName": cluster, "observedResourceIndex": index, "conditions": list}));
    }
    if let Some(wanted) = decision.wanted {
        // One entry per cluster short of the policy, as many as there are clusters it
        // could not use.
        let unused = decision.clusters.iter().filter(|r| matches!(r.outcome, Outcome::NotPicked | Outcome::Rejected));
        let short = wanted.saturating_sub(decision.desired.len()).min(unused.count());
        for _ in 0..short {
            let message = format!("could not find all the clusters needed{}", blocking(decision));
            statuses
                .push(json!({"conditions": [condition("Scheduled", false, "ScheduleFailed", message, generation)]}));
        }
    }
    let mut conditions = vec![scheduled];
    if !clusters.is_empty() {
        for (kind, placement_kind, true_reason, false_reason, unknown_reason) in CHAIN {
            let states: Vec<Option<&str>> = clusters
                .iter()
                .map(|(_, _, cs)| {
                    cs.iter()
                        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
                        .and_then(|c| c.get("status").and_then(Value::as_str))
                })
                .collect();
            let count = |s: &str| states.iter().filter(|x| **x == Some(s)).count();
            let unknown_count = states.iter().filter(|x| !matches!(x, Some("True") | Some("False"))).count();
            let c = if *kind == "RolloutStarted" && !blockers.is_empty() {
                rollout_blocked(blockers, generation)
            } else if unknown_count > 0 {
                unknown(
                    placement_kind,
                    unknown_reason,
                    &format!("{unknown_count} cluster(s) have not reported {kind} yet"),
                    generation,
                )
            } else if count("False") > 0 {
                condition(
                    placement_kind,
                    false,
                    false_reason,
                    format!("{} cluster(s) are not {kind} yet", count("False")),
                    generation,
                )
            } else {
                let reason = if *kind == "Overridden"
                    && clusters.iter().all(|(_, _, cs)| {
                        cs.iter().any(|c| c.get("reason").and_then(Value::as_str) == Some("NoOverrideSpecified"))
                    }) {
                    "NoOverrideSpecified"
                } else {
                    true_reason
                };
                condition(
                    placement_kind,
                    true,
                    reason,
                    format!("all {} cluster(s) are {kind}", clusters.len()),
                    generation,
                )
            };
            let stop = c.get("status").and_then(Value::as_str) != Some("True");
            conditions.push(c);
            if stop {
                break;
            }
        }
    }
    // Atoll's, as on an OCM Placement: a placement whose moves wait says so (else it
    // would look settled while it is not where its policy would put it).
    if let Some(held) = held {
        let kind = placement::pace::HELD_CONDITION;
        conditions.push(condition(kind, true, held.reason, held.message.clone(), generation));
    }
    json!({
        "selectedResources": objects.iter().map(resources::identifier).collect::<Vec<_>>(),
        "observedResourceIndex": resource_index,
        "placementStatuses": statuses,
        "conditions": conditions,
    })
}

#[cfg(test)]
mod tests;
