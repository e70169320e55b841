use super::*;
use crate::history::{AgentFault, MemberObject, PlacedObject};

const MEMBERS: [&str; 3] = ["m1", "m2", "m3"];

fn binding(at_ms: u64, binding: &str, crp: &str, cluster: &str, scheduled: bool) -> BindingEvent {
    BindingEvent { at_ms, binding: binding.into(), crp: crp.into(), cluster: cluster.into(), scheduled }
}

fn object(namespace: &str, name: &str, data: &str) -> PlacedObject {
    PlacedObject { namespace: namespace.into(), name: name.into(), data: data.into() }
}

fn held(member: &str, namespace: &str, name: &str, data: &str) -> MemberObject {
    MemberObject { member: member.into(), object: object(namespace, name, data) }
}

fn beat(at_ms: u64, member: &str, second: u32) -> HeartbeatSample {
    HeartbeatSample { at_ms, member: member.into(), last_received: format!("2026-11-27T23:00:{second:02}Z") }
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// A run with nothing wrong: `all` (PickAll) on every member, `pair` (PickN 2) on m1 and
/// m2, m1 partitioned 1000..4000 ms (heartbeat held at :01, renewed at :05 after the
/// heal), m2's agent killed 5000..6000 ms.
fn good() -> PlacementRecord {
    let mut bindings = Vec::new();
    for member in MEMBERS {
        bindings.push(binding(10, &format!("all-{member}"), "all", member, true));
    }
    bindings.push(binding(10, "pair-m1", "pair", "m1", true));
    bindings.push(binding(10, "pair-m2", "pair", "m2", true));
    // A rollout rewrites bindings in place: still placed.
    bindings.push(binding(2000, "pair-m1", "pair", "m1", true));
    let mut hub_objects = vec![object("all-ns", "settings-0", r#"{"v":"7"}"#)];
    hub_objects.push(object("pair-ns", "settings-0", r#"{"v":"9"}"#));
    let mut member_objects: Vec<MemberObject> =
        MEMBERS.iter().map(|m| held(m, "all-ns", "settings-0", r#"{"v":"7"}"#)).collect();
    member_objects.push(held("m1", "pair-ns", "settings-0", r#"{"v":"9"}"#));
    member_objects.push(held("m2", "pair-ns", "settings-0", r#"{"v":"9"}"#));
    let heartbeats = vec![
        beat(900, "m1", 0),
        beat(2600, "m1", 1),
        beat(3200, "m1", 1),
        beat(3900, "m1", 1),
        beat(4500, "m1", 5),
        beat(3000, "m2", 3),
    ];
    let placement = |crp: &str, namespace: &str, pick: Option<u32>, picked: &[&str]| PlacementOutcome {
        crp: crp.into(),
        namespace: namespace.into(),
        sticky: true,
        pick,
        picked: strings(picked),
        applied: strings(picked),
        available: strings(picked),
    };
    PlacementRecord {
        heartbeat_timeout_ms: 10_000,
        members: strings(&MEMBERS),
        faults: vec![
            AgentFault { member: "m1".into(), what: "Blackhole".into(), partition: true, from_ms: 1000, to_ms: 4000 },
            AgentFault { member: "m2".into(), what: "kill -9".into(), partition: false, from_ms: 5000, to_ms: 6000 },
        ],
        bindings,
        heartbeats,
        placements: vec![
            placement("all", "all-ns", None, &MEMBERS),
            placement("pair", "pair-ns", Some(2), &["m1", "m2"]),
        ],
        hub_objects,
        member_objects,
        writes: 12,
    }
}

fn guarantees(record: &PlacementRecord) -> Vec<String> {
    judge(record).into_iter().map(|v| v.guarantee).collect()
}

#[test]
fn a_run_that_kept_its_promises_passes() {
    let record = good();
    assert_eq!(judge(&record), Vec::new());
    let proofs = partition_proofs(&record);
    assert_eq!(proofs.len(), 1);
    assert!(proofs[0].stalled && proofs[0].resumed && proofs[0].samples == 3, "{proofs:?}");
    assert!(check(&History::default()).is_empty(), "no record, nothing to judge");
}

#[test]
fn catches_a_cluster_that_vanishes_and_reappears() {
    let mut record = good();
    // pair leaves m1 (its binding Unscheduled) and is back on it: a flap, and a move off a
    // member never cut off for the timeout.
    record.bindings.push(binding(3000, "pair-m1", "pair", "m1", false));
    record.bindings.push(binding(3500, "pair-m1b", "pair", "m1", true));
    assert_eq!(guarantees(&record), ["moved-off", "flap"]);
    let found = judge(&record);
    assert!(found[1].detail.contains("pair left m1 at 3000 ms and came back at 3500 ms"), "{found:?}");
}

#[test]
fn a_move_after_a_fault_longer_than_the_timeout_is_no_violation_but_a_flap_still_is() {
    let mut record = good();
    record.faults[0].to_ms = 12_000;
    record.heartbeats.retain(|s| s.member != "m1");
    record.heartbeats.extend([beat(2600, "m1", 1), beat(3000, "m1", 1), beat(12_500, "m1", 13)]);
    record.bindings.push(binding(11_500, "all-m1", "all", "m1", false));
    assert_eq!(guarantees(&record), Vec::<String>::new(), "a lost member may lose its placement");
    record.bindings.push(binding(13_000, "all-m1", "all", "m1", true));
    assert_eq!(guarantees(&record), ["flap"]);
}

#[test]
fn a_placement_that_may_reschedule_is_not_judged_for_flaps() {
    let mut record = good();
    record.placements[1].sticky = false;
    record.bindings.push(binding(3000, "pair-m1", "pair", "m1", false));
    record.bindings.push(binding(3500, "pair-m1", "pair", "m1", true));
    assert!(judge(&record).is_empty());
}

#[test]
fn catches_a_stale_or_missing_object_on_a_picked_member() {
    let mut record = good();
    record.member_objects[2].object.data = r#"{"v":"6"}"#.into();
    let found = judge(&record);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].guarantee, "converged");
    assert!(found[0].detail.contains(r#"m3, picked by all: all-ns/settings-0 holds {"v":"6"}"#), "{found:?}");
    let mut record = good();
    record.member_objects.retain(|o| !(o.member == "m2" && o.object.namespace == "pair-ns"));
    let found = judge(&record);
    assert_eq!(guarantees(&record), ["converged"]);
    assert!(found[0].detail.contains("m2, picked by pair: pair-ns/settings-0 missing"), "{found:?}");
}

#[test]
fn catches_a_placement_that_does_not_report_applied_or_available() {
    let mut record = good();
    record.placements[0].available.retain(|c| c != "m2");
    record.placements[1].applied.clear();
    let found = judge(&record);
    assert_eq!(guarantees(&record), ["status", "status", "status"], "{found:?}");
    assert!(found[0].detail.contains("all does not report Available for picked cluster m2"), "{found:?}");
}

#[test]
fn catches_a_wrong_pick() {
    let mut record = good();
    record.placements[1].picked = strings(&["m1"]);
    assert_eq!(guarantees(&record), ["picked", "leak"], "m2 holds pair-ns and is no longer picked");
    let mut record = good();
    record.placements[0].picked = strings(&["m1", "m2"]);
    assert_eq!(guarantees(&record), ["picked", "leak"]);
}

#[test]
fn catches_an_object_left_on_a_member_not_picked() {
    let mut record = good();
    record.member_objects.push(held("m3", "pair-ns", "settings-0", r#"{"v":"9"}"#));
    let found = judge(&record);
    assert_eq!(guarantees(&record), ["leak"]);
    assert!(found[0].detail.contains("m3, not picked by pair, holds pair-ns/settings-0"), "{found:?}");
}

#[test]
fn catches_a_partition_that_did_not_hold_or_never_healed() {
    let mut record = good();
    // The heartbeat was renewed during the partition: the agent was never cut off.
    record.heartbeats.push(beat(3500, "m1", 3));
    assert_eq!(guarantees(&record), ["partition-held"]);
    let mut record = good();
    record.heartbeats.retain(|s| !(s.member == "m1" && s.at_ms >= 4000));
    assert_eq!(guarantees(&record), ["heartbeat-resumed"]);
    let mut record = good();
    record.heartbeats.retain(|s| s.member != "m1");
    assert_eq!(guarantees(&record), ["partition-held"], "no partition sampled: nothing proven");
}
