//! One OCM Placement's decision, pure: which clusters are eligible (the sets bound to the
//! placement's namespace, intersected with `spec.clusterSets`), the framework's `ocm`
//! profile over them, and the two conditions OCM reports with its reasons.
//!
//! The Placement's fields map onto the framework's policy almost name for name:
//! predicates become required terms (label and claim selectors, ORed), tolerations and
//! the prioritizer policy pass as they are, `spreadPolicy.spreadConstraints` becomes the
//! spread constraints that OCM's own scheduler accepts but never reads.
//!
//! [`groups`] splits the decided clusters into the placement's decision groups.

use super::CLUSTER_SET_LABEL;
use jiff::Timestamp;
use placement::pace::{Held, Moves};
use placement::{Candidate, Decision, Outcome, Policy, Profile, State};
use protocol::meta;
use protocol::selector::LabelSelector;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Type of the condition that says whether the placement's configuration is usable.
pub const MISCONFIGURED_CONDITION: &str = "PlacementMisconfigured";
/// Type of the condition that says whether every wanted decision was made.
pub const SATISFIED_CONDITION: &str = "PlacementSatisfied";
/// Type of the condition (Atoll's, shared with Fleet) that says voluntary changes wait
/// for damping or the disruption budget; absent when none wait.
pub const HELD_CONDITION: &str = placement::pace::HELD_CONDITION;

/// The reports an OCM decision keeps: every cluster that passed the filters (the
/// ScoreUpdate event lists their scores, and `NoManagedClusterMatched` is judged by
/// whether any did) besides the chosen ones (each PlacementDecision entry carries its
/// cluster's reason). No rejected cluster's report is read, so none is built.
const REPORTS: placement::Reports = placement::Reports { not_picked: usize::MAX, rejected: 0 };

/// What one decision starts from: the Placement and the hub's objects it reads.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The Placement.
    pub placement: &'a Value,
    /// Every ManagedCluster of the hub.
    pub clusters: &'a [Value],
    /// Every ManagedClusterSet of the hub.
    pub sets: &'a [Value],
    /// The ManagedClusterSetBindings of the placement's namespace.
    pub bindings: &'a [Value],
    /// Every AddOnPlacementScore of the hub (each in its cluster's namespace).
    pub scores: &'a [Value],
    /// The clusters the placement's decisions hold now.
    pub current: &'a [String],
    /// How many decisions of other placements each cluster has (Balance).
    pub other_decisions: &'a BTreeMap<String, u64>,
    /// How fast the decision may leave clusters that still qualify.
    pub pacing: &'a placement::pace::Pacing,
    /// The placement's recent voluntary moves.
    pub moves: &'a Moves,
    /// The clock.
    pub now: Timestamp,
}

/// A condition as OCM writes it (type, status, reason, message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// `PlacementSatisfied` or `PlacementMisconfigured`.
    pub kind: &'static str,
    /// `True` or `False`.
    pub status: bool,
    /// OCM's reason.
    pub reason: String,
    /// A sentence for people.
    pub message: String,
}

/// The outcome of one placement's decision.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// The clusters decided, in decision order (empty when the decision could not run).
    pub chosen: Vec<String>,
    /// `PlacementMisconfigured` then `PlacementSatisfied`.
    pub conditions: [Condition; 2],
    /// The framework's account, when it ran: per cluster that passed the filters why it
    /// was picked or not (`REPORTS`).
    pub decision: Option<Decision>,
    /// What pacing made of the decision, when it ran.
    pub pacing: Option<Pacing>,
}

/// What pacing ([`placement::pace`]) made of one decision.
#[derive(Debug, Clone)]
pub struct Pacing {
    /// The voluntary moves to remember on the placement, when this decision made some.
    pub moves: Option<Moves>,
    /// The rebalance request carried out by this decision.
    pub rebalanced: Option<String>,
    /// What the held voluntary changes are and why they wait, when some do.
    pub held: Option<Held>,
}

impl Pacing {
    /// The condition that says changes are held, when some are: a placement that waits
    /// says so, and names what waits and until when, rather than looking settled.
    pub fn held_condition(&self) -> Option<Condition> {
        let held = self.held.as_ref()?;
        Some(Condition {
            kind: HELD_CONDITION,
            status: true,
            reason: held.reason.into(),
            message: held.message.clone(),
        })
    }
}

/// Decides one placement.
pub fn decide(inputs: Inputs<'_>) -> Verdict {
    let spec = inputs.placement.get("spec").cloned().unwrap_or_else(|| json!({}));
    let in_spec: Vec<String> = strings(spec.get("clusterSets"));
    let sets: BTreeMap<&str, &Value> = inputs.sets.iter().filter_map(|s| Some((meta::name(s)?, s))).collect();
    let bound: BTreeSet<&str> = inputs
        .bindings
        .iter()
        .filter_map(|b| b.pointer("/spec/clusterSet").and_then(Value::as_str))
        .filter(|set| sets.contains_key(set))
        .collect();
    let eligible: Vec<&str> =
        bound.iter().copied().filter(|s| in_spec.is_empty() || in_spec.iter().any(|n| n == s)).collect();
    let members: Vec<&Value> =
        inputs.clusters.iter().filter(|cluster| eligible.iter().any(|set| in_set(sets[set], cluster))).collect();
    let configured = Condition {
        kind: MISCONFIGURED_CONDITION,
        status: false,
        reason: "Succeedconfigured".into(),
        message: "Placement configurations check pass".into(),
    };
    let unsatisfied = |reason: &str, message: String| Condition {
        kind: SATISFIED_CONDITION,
        status: false,
        reason: reason.into(),
        message,
    };
    let without_decision = |misconfigured: Condition, satisfied: Condition| Verdict {
        chosen: Vec::new(),
        conditions: [misconfigured, satisfied],
        decision: None,
        pacing: None,
    };
    if bound.is_empty() {
        let message = "No valid ManagedClusterSetBindings found in placement namespace".to_string();
        return without_decision(configured, unsatisfied("NoManagedClusterSetBindings", message));
    }
    if eligible.is_empty() {
        let message = format!("None of ManagedClusterSets [{}] is bound to placement namespace", in_spec.join(","));
        return without_decision(configured, unsatisfied("NoIntersection", message));
    }
    if members.is_empty() {
        let message = format!("All ManagedClusterSets [{}] have no member ManagedCluster", eligible.join(","));
        return without_decision(configured, unsatisfied("AllManagedClusterSetsEmpty", message));
    }
    let misconfigured = |plugin: &str, why: String| Condition {
        kind: MISCONFIGURED_CONDITION,
        status: true,
        reason: "Misconfigured".into(),
        message: format!("{plugin}:{why}"),
    };
    let policy = match policy(&spec, inputs.placement) {
        Ok(policy) => policy,
        Err(why) => {
            let satisfied = unsatisfied("NotAllDecisionsScheduled", why.clone());
            return without_decision(misconfigured("Placement", why), satisfied);
        }
    };
    let candidates: Vec<Candidate> = match members.iter().map(|c| candidate(c, inputs.scores)).collect() {
        Ok(candidates) => candidates,
        Err(why) => {
            let satisfied = unsatisfied("NotAllDecisionsScheduled", why.clone());
            return without_decision(misconfigured("ManagedCluster", why), satisfied);
        }
    };
    let state = State {
        now: inputs.now,
        current: inputs.current.to_vec(),
        other_decisions: inputs.other_decisions.clone(),
        reconsider: false,
        settled: Vec::new(),
    };
    let (pacing, moves) = (inputs.pacing, inputs.moves);
    let paced =
        placement::pace::decide_reporting(&Profile::ocm(), &policy, &candidates, &state, pacing, moves, REPORTS);
    let (decision, pacing) = match paced {
        Ok(paced) => {
            let pacing = Pacing {
                held: paced.held_report(),
                moves: (!paced.moved.is_empty()).then_some(paced.moves),
                rebalanced: paced.rebalanced,
            };
            (paced.decision, Some(pacing))
        }
        Err(error) => {
            let why = error.to_string();
            let satisfied = unsatisfied("NotAllDecisionsScheduled", why.clone());
            return without_decision(misconfigured("Scheduler", why), satisfied);
        }
    };
    let feasible =
        decision.clusters.iter().filter(|r| matches!(r.outcome, Outcome::Picked | Outcome::NotPicked)).count();
    let satisfied = if feasible == 0 {
        unsatisfied("NoManagedClusterMatched", "No ManagedCluster matches any of the cluster predicate".into())
    } else if decision.unsatisfied == 0 {
        Condition {
            kind: SATISFIED_CONDITION,
            status: true,
            reason: "AllDecisionsScheduled".into(),
            message: "All cluster decisions scheduled".into(),
        }
    } else {
        unsatisfied("NotAllDecisionsScheduled", format!("{} cluster decisions unscheduled", decision.unsatisfied))
    };
    Verdict { chosen: decision.desired.clone(), conditions: [configured, satisfied], decision: Some(decision), pacing }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

/// Whether `cluster` belongs to `set`: by the set's label (ExclusiveClusterSetLabel, the
/// default) or by the set's label selector (LabelSelector; an empty one is OCM's
/// `global` set of every cluster).
fn in_set(set: &Value, cluster: &Value) -> bool {
    let name = meta::name(set).unwrap_or_default();
    let labels = meta::labels(cluster);
    let selector = set.pointer("/spec/clusterSelector");
    match selector.and_then(|s| s.get("selectorType")).and_then(Value::as_str).unwrap_or("ExclusiveClusterSetLabel") {
        "LabelSelector" => {
            let selector = selector.and_then(|s| s.get("labelSelector")).cloned().unwrap_or_else(|| json!({}));
            LabelSelector::from_label_selector_json(&selector).is_ok_and(|s| s.matches(&labels))
        }
        "ExclusiveClusterSetLabel" => labels.get(CLUSTER_SET_LABEL).is_some_and(|set| set == name),
        // PlacementSelector sets are made of another placement's decisions: not served.
        _ => false,
    }
}

/// The framework's policy from a Placement's spec.
fn policy(spec: &Value, placement: &Value) -> Result<Policy, String> {
    let mut policy = Map::new();
    if let Some(n) = spec.get("numberOfClusters").and_then(Value::as_u64) {
        policy.insert("number".into(), json!(n));
    }
    if let Some(predicates) = spec.get("predicates").and_then(Value::as_array) {
        let terms: Vec<Value> = predicates
            .iter()
            .map(|p| {
                let selector = p.get("requiredClusterSelector").cloned().unwrap_or_else(|| json!({}));
                let mut term = Map::new();
                for field in ["labelSelector", "claimSelector"] {
                    if let Some(s) = selector.get(field).filter(|s| s.as_object().is_some_and(|o| !o.is_empty())) {
                        term.insert(field.into(), s.clone());
                    }
                }
                Value::Object(term)
            })
            .collect();
        if !terms.is_empty() {
            policy.insert("required".into(), Value::Array(terms));
        }
    }
    if let Some(tolerations) = spec.get("tolerations").filter(|t| t.as_array().is_some_and(|t| !t.is_empty())) {
        policy.insert("tolerations".into(), tolerations.clone());
    }
    if let Some(prioritizers) = spec.get("prioritizerPolicy").filter(|p| p.as_object().is_some_and(|p| !p.is_empty())) {
        let mut prioritizers = prioritizers.clone();
        // OCM's defaults: weight 1, score type BuiltIn.
        for config in prioritizers.get_mut("configurations").and_then(Value::as_array_mut).into_iter().flatten() {
            if config.get("weight").is_none() {
                config["weight"] = json!(1);
            }
            if let Some(coordinate) = config.get_mut("scoreCoordinate") {
                if coordinate.get("type").is_none() {
                    coordinate["type"] = json!("BuiltIn");
                }
            }
        }
        policy.insert("prioritizers".into(), prioritizers);
    }
    if let Some(spread) =
        spec.pointer("/spreadPolicy/spreadConstraints").filter(|s| s.as_array().is_some_and(|s| !s.is_empty()))
    {
        policy.insert("spread".into(), spread.clone());
    }
    let key =
        format!("{}/{}", meta::namespace(placement).unwrap_or_default(), meta::name(placement).unwrap_or_default());
    policy.insert("tieBreakKey".into(), Value::String(key));
    serde_json::from_value(Value::Object(policy)).map_err(|e| format!("invalid placement spec: {e}"))
}

/// The framework's candidate from a ManagedCluster and the add-on scores in its namespace.
fn candidate(cluster: &Value, scores: &[Value]) -> Result<Candidate, String> {
    let name = meta::name(cluster).unwrap_or_default();
    let claims: BTreeMap<String, String> = cluster
        .pointer("/status/clusterClaims")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c.get("name")?.as_str()?.to_string(), c.get("value")?.as_str()?.to_string())))
        .collect();
    let quantities = |pointer: &str| -> Map<String, Value> {
        let map = cluster.pointer(pointer).and_then(Value::as_object).cloned().unwrap_or_default();
        map.into_iter()
            .map(|(k, v)| (k, Value::String(v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))))
            .collect()
    };
    let taints: Vec<Value> = cluster
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| {
            let mut taint = json!({"key": t.get("key"), "value": t.get("value").cloned().unwrap_or(json!("")), "effect": t.get("effect")});
            if let Some(added) = t.get("timeAdded").filter(|v| v.is_string()) {
                taint["timeAdded"] = added.clone();
            }
            taint
        })
        .collect();
    let mut addon_scores = Map::new();
    for score in scores.iter().filter(|s| meta::namespace(s) == Some(name)) {
        let values: Map<String, Value> = score
            .pointer("/status/scores")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| Some((s.get("name")?.as_str()?.to_string(), s.get("value")?.clone())))
            .collect();
        let mut entry = json!({"scores": values});
        if let Some(until) = score.pointer("/status/validUntil").filter(|v| v.is_string()) {
            entry["validUntil"] = until.clone();
        }
        addon_scores.insert(meta::name(score).unwrap_or_default().to_string(), entry);
    }
    let candidate = json!({
        "name": name,
        "labels": meta::labels(cluster),
        "claims": claims,
        "allocatable": quantities("/status/allocatable"),
        "capacity": quantities("/status/capacity"),
        "taints": taints,
        "addonScores": addon_scores,
    });
    serde_json::from_value(candidate).map_err(|e| format!("cluster {name}: {e}"))
}

pub mod groups;

#[cfg(test)]
mod tests;
