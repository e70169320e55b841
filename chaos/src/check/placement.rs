//! The placement checker: what a Fleet hub and its member agents promise when agents are
//! partitioned from the hub or killed. Judges the [`PlacementRecord`] of the
//! agent-partition scenario.
//!
//! - **flap**: a binding of a sticky placement (Fleet's default) never leaves a cluster
//!   and comes back: every binding's target cluster is recorded over time from a watch of
//!   the hub's ClusterResourceBindings, and a cluster that vanishes from a placement and
//!   reappears is a flap, whatever the faults were.
//! - **moved-off**: a sticky placement does not leave a cluster whose agent was never cut
//!   off for as long as the hub's heartbeat timeout: a partition or a dead agent shorter
//!   than that is weather, not a lost member.
//! - **picked**: after healing, a PickAll placement holds every member and a PickN one
//!   exactly N.
//! - **converged**: after healing, every picked member holds the hub's latest content of
//!   every selected object.
//! - **status**: after healing, the placement reports Applied and Available for each
//!   picked cluster.
//! - **leak**: a member a placement did not pick holds none of its selected objects.
//! - **partition-held** and **heartbeat-resumed**: the run proves its partitions: while
//!   an agent was partitioned its heartbeat on the hub stopped being renewed, and after
//!   healing it was renewed again. Without that, the checks above judged a run in which
//!   no agent was ever cut off.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{BindingEvent, HeartbeatSample, History, PlacementOutcome, PlacementRecord};

use super::Violation;

const CHECKER: &str = "placement";

/// How long after a partition starts its heartbeat may still be renewed: one heartbeat
/// period (1 s in the scenario) and a write in flight.
pub const STALL_GRACE_MS: u64 = 1_500;

/// What one partition showed on the hub.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionProof {
    /// The partitioned member.
    pub member: String,
    /// The partition.
    pub from_ms: u64,
    /// Its heal.
    pub to_ms: u64,
    /// Hub samples taken inside it, after [`STALL_GRACE_MS`].
    pub samples: usize,
    /// Those samples all show one heartbeat: it was not renewed.
    pub stalled: bool,
    /// A sample after the heal shows a later heartbeat.
    pub resumed: bool,
}

/// Judges `history.placement`, if the run recorded one.
pub fn check(history: &History) -> Vec<Violation> {
    history.placement.as_ref().map(judge).unwrap_or_default()
}

/// Every guarantee over `record`.
pub fn judge(record: &PlacementRecord) -> Vec<Violation> {
    let mut violations = flapping(record);
    violations.extend(final_state(record));
    violations.extend(partitions(record));
    violations
}

/// The guarantees about the state after healing (picked, converged, status, leak): what
/// the scenario waits on before it reads the final state for good.
pub fn final_state(record: &PlacementRecord) -> Vec<Violation> {
    let mut violations = Vec::new();
    let members: BTreeSet<&str> = record.members.iter().map(String::as_str).collect();
    for placement in &record.placements {
        let picked: BTreeSet<&str> = placement.picked.iter().map(String::as_str).collect();
        let wanted = placement.pick.map_or(members.len(), |n| n as usize);
        let all = placement.pick.is_none() && picked != members;
        if picked.len() != wanted || all {
            let detail = format!("{} picked {picked:?}, wanted {wanted} of {members:?}", placement.crp);
            violations.push(Violation::new(CHECKER, "picked", detail));
        }
        for cluster in &picked {
            violations.extend(stale_on(record, placement, cluster));
            for (kind, reported) in [("Applied", &placement.applied), ("Available", &placement.available)] {
                if !reported.iter().any(|c| c == cluster) {
                    let detail = format!("{} does not report {kind} for picked cluster {cluster}", placement.crp);
                    violations.push(Violation::new(CHECKER, "status", detail));
                }
            }
        }
        for member in members.difference(&picked) {
            let held = record.member_objects.iter().filter(|o| o.member == *member);
            for object in held.filter(|o| o.object.namespace == placement.namespace) {
                let detail = format!(
                    "{member}, not picked by {}, holds {}/{}",
                    placement.crp, object.object.namespace, object.object.name
                );
                violations.push(Violation::new(CHECKER, "leak", detail));
            }
        }
    }
    violations
}

/// Whether `cluster` holds the hub's latest content of every object `placement` selects.
fn stale_on(record: &PlacementRecord, placement: &PlacementOutcome, cluster: &str) -> Vec<Violation> {
    let mut violations = Vec::new();
    for wanted in record.hub_objects.iter().filter(|o| o.namespace == placement.namespace) {
        let held = record
            .member_objects
            .iter()
            .find(|o| o.member == cluster && o.object.namespace == wanted.namespace && o.object.name == wanted.name);
        let problem = match held {
            None => "missing".to_string(),
            Some(held) if held.object.data != wanted.data => format!("holds {}", held.object.data),
            Some(_) => continue,
        };
        let detail = format!(
            "{cluster}, picked by {}: {}/{} {problem}, the hub has {}",
            placement.crp, wanted.namespace, wanted.name, wanted.data
        );
        violations.push(Violation::new(CHECKER, "converged", detail));
    }
    violations
}

/// Flaps and moves off a cluster of sticky placements, from the binding events.
fn flapping(record: &PlacementRecord) -> Vec<Violation> {
    let sticky: BTreeSet<&str> = record.placements.iter().filter(|p| p.sticky).map(|p| p.crp.as_str()).collect();
    let mut events: Vec<&BindingEvent> = record.bindings.iter().filter(|e| sticky.contains(e.crp.as_str())).collect();
    events.sort_by_key(|e| e.at_ms);
    // binding → (placement, cluster) while it places the cluster.
    let mut live: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    // (placement, cluster) → when it was last left.
    let mut left: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let mut violations = Vec::new();
    for event in events {
        let before = placed(&live);
        if event.scheduled {
            live.insert(&event.binding, (&event.crp, &event.cluster));
        } else {
            live.remove(event.binding.as_str());
        }
        let after = placed(&live);
        for gone in before.difference(&after) {
            left.insert(*gone, event.at_ms);
            let longest = longest_fault_ms(record, gone.1);
            if longest < record.heartbeat_timeout_ms {
                let detail = format!(
                    "{} left {} at {} ms, whose agent was never cut off longer than {longest} ms (timeout {} ms)",
                    gone.0, gone.1, event.at_ms, record.heartbeat_timeout_ms
                );
                violations.push(Violation::new(CHECKER, "moved-off", detail));
            }
        }
        for back in after.difference(&before) {
            if let Some(at) = left.get(back) {
                let detail = format!("{} left {} at {at} ms and came back at {} ms", back.0, back.1, event.at_ms);
                violations.push(Violation::new(CHECKER, "flap", detail));
            }
        }
    }
    violations
}

/// The (placement, cluster) pairs some live binding places.
fn placed<'a>(live: &BTreeMap<&'a str, (&'a str, &'a str)>) -> BTreeSet<(&'a str, &'a str)> {
    live.values().copied().collect()
}

/// The longest fault on `member`'s agent.
fn longest_fault_ms(record: &PlacementRecord, member: &str) -> u64 {
    let faults = record.faults.iter().filter(|f| f.member == member);
    faults.map(|f| f.to_ms.saturating_sub(f.from_ms)).max().unwrap_or(0)
}

/// What each partition showed on the hub's heartbeats.
pub fn partition_proofs(record: &PlacementRecord) -> Vec<PartitionProof> {
    let partitions = record.faults.iter().filter(|f| f.partition);
    partitions
        .map(|fault| {
            let of_member = record.heartbeats.iter().filter(|s| s.member == fault.member);
            let inside: Vec<&HeartbeatSample> = of_member
                .clone()
                .filter(|s| fault.from_ms + STALL_GRACE_MS <= s.at_ms && s.at_ms < fault.to_ms)
                .collect();
            let held: BTreeSet<&str> = inside.iter().map(|s| s.last_received.as_str()).collect();
            let stalled = !inside.is_empty() && held.len() == 1;
            let last_held = held.iter().next_back().copied().unwrap_or_default();
            let resumed = of_member.filter(|s| s.at_ms >= fault.to_ms).any(|s| s.last_received.as_str() > last_held);
            PartitionProof {
                member: fault.member.clone(),
                from_ms: fault.from_ms,
                to_ms: fault.to_ms,
                samples: inside.len(),
                stalled,
                resumed,
            }
        })
        .collect()
}

/// partition-held and heartbeat-resumed, for every partition the hub was sampled in.
fn partitions(record: &PlacementRecord) -> Vec<Violation> {
    let proofs = partition_proofs(record);
    let mut violations = Vec::new();
    for proof in proofs.iter().filter(|p| p.samples >= 2) {
        let window = format!("{} partitioned {}..{} ms", proof.member, proof.from_ms, proof.to_ms);
        if !proof.stalled {
            let detail =
                format!("{window}: its heartbeat was renewed on the hub meanwhile ({} samples)", proof.samples);
            violations.push(Violation::new(CHECKER, "partition-held", detail));
        }
        if !proof.resumed {
            violations.push(Violation::new(CHECKER, "heartbeat-resumed", format!("{window}: no later heartbeat")));
        }
    }
    if !proofs.iter().any(|p| p.samples >= 2) {
        let detail = format!("none of {} partitions was long enough to sample on the hub", proofs.len());
        violations.push(Violation::new(CHECKER, "partition-held", detail));
    }
    violations
}

#[cfg(test)]
mod tests;
