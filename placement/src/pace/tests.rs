use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};

use super::{
    decide, Cause, Hold, Limit, Moves, Pacing, Swap, BUDGET_ANNOTATION, HELD_CONDITION, REBALANCED_ANNOTATION,
    REBALANCE_ANNOTATION,
};
use crate::candidate::{AddOnScores, Candidate, Taint, TaintEffect};
use crate::decision::Outcome;
use crate::policy::{Number, Policy, State};
use crate::profile::Profile;

fn at(seconds: i64) -> Timestamp {
    "2026-11-27T12:00:00Z".parse::<Timestamp>().expect("timestamp") + SignedDuration::from_secs(seconds)
}

/// A swap wanted because `into` ranks higher than `out`, which still qualifies.
fn outranked(out: &str, into: &str) -> Swap {
    Swap { out: Some(out.into()), into: Some(into.into()), cause: Cause::Outranked }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|n| n.to_string()).collect()
}

/// OCM clusters scored by one add-on score.
fn scored(scores: &[(&str, i64)]) -> Vec<Candidate> {
    scores
        .iter()
        .map(|(name, score)| {
            let mut candidate = Candidate::new(*name);
            let values = BTreeMap::from([("cpu".to_string(), *score)]);
            candidate.addon_scores.insert("load".into(), AddOnScores { valid_until: None, scores: values });
            candidate
        })
        .collect()
}

/// OCM: numberOfClusters `n`, the add-on score weighted 3 against Steady's 1 (Exact).
fn ocm_policy(n: u32) -> Policy {
    let yaml = format!(
        "number: {n}
prioritizers:
  mode: Exact
  configurations:
  - scoreCoordinate: {{type: AddOn, addOn: {{resourceName: load, scoreName: cpu}}}}
    weight: 3
  - scoreCoordinate: {{type: BuiltIn, builtIn: Steady}}
    weight: 1
"
    );
    serde_yaml_ng::from_str(&yaml).expect("policy")
}

fn state(now: Timestamp, current: &[&str]) -> State {
    State { current: names(current), ..State::at(now) }
}

fn damping(seconds: i64) -> Pacing {
    Pacing { interval: SignedDuration::from_secs(seconds), budget: None, reschedule: false, rebalance: None }
}

#[test]
fn limits_read_counts_and_percentages_rounded_up() {
    assert_eq!(Limit::parse("3"), Ok(Limit::Count(3)));
    assert_eq!(Limit::parse("25%"), Ok(Limit::Percent(25)));
    assert!(Limit::parse("120%").is_err());
    assert!(Limit::parse("some").is_err());
    assert_eq!(Limit::Percent(25).of(10), 3);
    assert_eq!(Limit::Percent(1).of(10), 1);
    assert_eq!(Limit::Percent(0).of(10), 0);
    assert_eq!(Limit::Count(2).of(10), 2);
}

#[test]
fn moves_survive_their_annotation() {
    let moves = Moves(vec![(at(0), 2), (at(30), 1)]);
    assert_eq!(Moves::parse(&moves.render()), moves);
    assert_eq!(Moves::parse("garbage,2026-11-27T12:00:00Z=1").0.len(), 1);
}

#[test]
fn annotations_set_the_pacing_and_bad_ones_are_reported() {
    let annotations = BTreeMap::from([
        (BUDGET_ANNOTATION.to_string(), "20%".to_string()),
        (super::INTERVAL_ANNOTATION.to_string(), "soon".to_string()),
        (super::RESCHEDULING_ANNOTATION.to_string(), "Enabled".to_string()),
        (REBALANCE_ANNOTATION.to_string(), "2".to_string()),
        (REBALANCED_ANNOTATION.to_string(), "1".to_string()),
    ]);
    let (pacing, warnings) = Pacing::from_annotations(&annotations, SignedDuration::from_secs(60));
    assert_eq!(pacing.budget, Some(Limit::Percent(20)));
    assert_eq!(pacing.interval, SignedDuration::from_secs(60));
    assert!(pacing.reschedule);
    assert_eq!(pacing.rebalance.as_deref(), Some("2"));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("disruption-interval-seconds"), "{warnings:?}");
    let mut handled = annotations.clone();
    handled.insert(REBALANCED_ANNOTATION.to_string(), "2".to_string());
    assert_eq!(Pacing::from_annotations(&handled, SignedDuration::from_secs(60)).0.rebalance, None);
}

/// OCM's score churn: the first score change moves the decision at once, the next one
/// within the damping interval waits for it, and then moves.
#[test]
fn score_changes_move_an_ocm_decision_at_most_once_per_interval() {
    let profile = Profile::ocm();
    let policy = ocm_policy(1);
    let pacing = damping(60);
    let first = decide(
        &profile,
        &policy,
        &scored(&[("a", 50), ("b", 10), ("c", 0)]),
        &state(at(0), &[]),
        &pacing,
        &Moves::default(),
    )
    .expect("decision");
    assert_eq!(first.decision.desired, names(&["a"]));
    assert!(first.moves.0.is_empty(), "placing the first cluster is no voluntary move");

    // b now scores far higher: a still qualifies, so leaving it is voluntary, and allowed.
    let second = decide(
        &profile,
        &policy,
        &scored(&[("a", 10), ("b", 90), ("c", 0)]),
        &state(at(10), &["a"]),
        &pacing,
        &first.moves,
    )
    .expect("decision");
    assert_eq!(second.decision.desired, names(&["b"]));
    assert_eq!(second.moved, vec![outranked("a", "b")]);
    assert_eq!(second.decision.bind.remove, names(&["a"]));
    assert_eq!(second.moves, Moves(vec![(at(10), 1)]));

    // c overtakes b 20 s later: held until the interval since the last move has passed.
    let churn = scored(&[("a", 10), ("b", 10), ("c", 100)]);
    let third = decide(&profile, &policy, &churn, &state(at(30), &["b"]), &pacing, &second.moves).expect("decision");
    assert_eq!(third.decision.desired, names(&["b"]));
    assert!(third.decision.bind.add.is_empty() && third.decision.bind.remove.is_empty());
    assert_eq!(third.held, vec![outranked("b", "c")]);
    let report = third.held_report().expect("the change is held");
    assert_eq!(report.reason, super::SCORE_DAMPED_REASON);
    assert!(report.message.starts_with("1 change(s) held by damping"), "{}", report.message);
    assert!(report.message.ends_with(": b -> c (c ranks higher)"), "{}", report.message);
    assert_eq!(third.decision.requeue_at, Some(at(70)));
    let b = third.decision.report("b").expect("b reported");
    assert!(b.reason.contains("to be replaced by c"), "{}", b.reason);

    let fourth = decide(&profile, &policy, &churn, &state(at(70), &["b"]), &pacing, &third.moves).expect("decision");
    assert_eq!(fourth.decision.desired, names(&["c"]));
    assert_eq!(fourth.moves, Moves(vec![(at(70), 1)]), "the move at 10 s aged out of the window");
    assert_eq!(fourth.decision.report("c").map(|r| r.outcome), Some(Outcome::Picked));
    assert_eq!(fourth.decision.report("b").map(|r| r.outcome), Some(Outcome::NotPicked));
}

/// A forced change is never paced: a current cluster that is gone is replaced at once,
/// even right after a voluntary move.
#[test]
fn forced_changes_are_not_paced() {
    let profile = Profile::ocm();
    let policy = ocm_policy(2);
    let moves = Moves(vec![(at(0), 1)]);
    let paced =
        decide(&profile, &policy, &scored(&[("b", 10), ("c", 5)]), &state(at(5), &["a", "b"]), &damping(60), &moves)
            .expect("decision");
    assert_eq!(paced.decision.desired, names(&["b", "c"]));
    assert!(paced.moved.is_empty() && paced.held.is_empty());
}

/// A budget of 25% of 8 clusters lets two change per window, best newcomers first,
/// replacing the worst-ranked leavers.
#[test]
fn a_disruption_budget_limits_voluntary_changes_per_window() {
    let profile = Profile::ocm();
    let policy = ocm_policy(8);
    let old: Vec<(String, i64)> = (0..8).map(|i| (format!("old-{i}"), 10 + i)).collect();
    let new: Vec<(String, i64)> = (0..8).map(|i| (format!("new-{i}"), 90 + i)).collect();
    let pairs: Vec<(&str, i64)> = old.iter().chain(&new).map(|(n, s)| (n.as_str(), *s)).collect();
    let candidates = scored(&pairs);
    let current: Vec<&str> = old.iter().map(|(n, _)| n.as_str()).collect();
    let pacing = Pacing { budget: Some(Limit::Percent(25)), ..damping(300) };
    let paced =
        decide(&profile, &policy, &candidates, &state(at(0), &current), &pacing, &Moves::default()).expect("decision");
    assert_eq!(paced.moved.len(), 2);
    assert_eq!(paced.held.len(), 6);
    assert_eq!(paced.moved[0], outranked("old-0", "new-7"));
    assert_eq!(paced.moved[1], outranked("old-1", "new-6"));
    assert_eq!(paced.decision.desired.len(), 8);
    assert_eq!(paced.decision.bind.add, names(&["new-6", "new-7"]));
    assert_eq!(paced.decision.requeue_at, Some(at(300)));
    // The placement says the budget holds six, naming each as `leaving -> joining`.
    assert_eq!(paced.hold, Some(Hold::Budget));
    let held = paced.held_report().expect("changes are held");
    assert_eq!(held.reason, "DisruptionBudgetExhausted");
    assert!(held.message.starts_with("6 change(s) held by the disruption budget, from 2026-11-27T12:05:00Z: "));
    assert!(held.message.contains("old-2 -> new-5"), "{}", held.message);
    // Within the same window the budget is spent: now damping holds them.
    let current: Vec<&str> = paced.decision.desired.iter().map(String::as_str).collect();
    let again =
        decide(&profile, &policy, &candidates, &state(at(100), &current), &pacing, &paced.moves).expect("decision");
    assert!(again.moved.is_empty());
    assert_eq!(again.held.len(), 6);
    assert_eq!(again.hold, Some(Hold::Damping));
    assert_eq!(again.held_report().expect("changes are held").reason, "ScoreChangeDamped");
    // A budget of 0 holds every voluntary change.
    let frozen = Pacing { budget: Some(Limit::Count(0)), ..pacing.clone() };
    let none =
        decide(&profile, &policy, &candidates, &state(at(0), &current), &frozen, &Moves::default()).expect("decision");
    let sorted = |names: &[String]| names.iter().cloned().collect::<std::collections::BTreeSet<_>>();
    assert_eq!(sorted(&none.decision.desired), sorted(&paced.decision.desired));
    assert_eq!(none.held.len(), 6);
    assert_eq!(none.held_report().expect("changes are held").reason, "DisruptionBudgetExhausted");
    // Nothing held: no condition at all.
    let settled = decide(
        &profile,
        &policy,
        &candidates,
        &state(at(0), &["new-0", "new-1", "new-2", "new-3", "new-4", "new-5", "new-6", "new-7"]),
        &pacing,
        &Moves::default(),
    )
    .expect("decision");
    assert_eq!((settled.hold, settled.held_report()), (None, None), "{HELD_CONDITION} is absent when nothing waits");
}

fn fleet_members(names: &[&str]) -> Vec<Candidate> {
    names
        .iter()
        .map(|name| {
            let mut candidate = Candidate::new(*name);
            candidate.labels.insert("tier".into(), if name.starts_with("gold") { "gold" } else { "bronze" }.into());
            candidate
        })
        .collect()
}

fn fleet_policy(n: u32) -> Policy {
    let yaml = format!(
        "number: {n}
preferred:
- weight: 50
  preference: {{labelSelector: {{matchLabels: {{tier: gold}}}}}}
"
    );
    serde_yaml_ng::from_str(&yaml).expect("policy")
}

/// Fleet is sticky: a NoSchedule taint on a picked member changes nothing, and a
/// recovered preferred member does not win its workloads back, unless the placement opts
/// in to rescheduling; then both move, within the budget.
#[test]
fn fleet_moves_only_when_rescheduling_is_enabled() {
    let profile = Profile::fleet();
    let policy = fleet_policy(1);
    let mut candidates = fleet_members(&["bronze-1", "gold-1"]);
    // bronze-1 was picked while gold-1 was away; gold-1 is back.
    let sticky = decide(&profile, &policy, &candidates, &state(at(0), &["bronze-1"]), &damping(60), &Moves::default())
        .expect("decision");
    assert_eq!(sticky.decision.desired, names(&["bronze-1"]));
    let opted = Pacing { reschedule: true, ..damping(60) };
    let moved = decide(&profile, &policy, &candidates, &state(at(0), &["bronze-1"]), &opted, &Moves::default())
        .expect("decision");
    assert_eq!(moved.decision.desired, names(&["gold-1"]), "the recovered preferred member wins");

    // gold-1 is tainted: sticky keeps it; rescheduling replaces it once the window allows.
    candidates[1].taints.push(Taint {
        key: "maintenance".into(),
        value: String::new(),
        effect: TaintEffect::NoSchedule,
        time_added: None,
    });
    let kept = decide(&profile, &policy, &candidates, &state(at(10), &["gold-1"]), &damping(60), &moved.moves)
        .expect("decision");
    assert_eq!(kept.decision.desired, names(&["gold-1"]));
    let held =
        decide(&profile, &policy, &candidates, &state(at(10), &["gold-1"]), &opted, &moved.moves).expect("decision");
    assert_eq!(held.decision.desired, names(&["gold-1"]), "damped: moved 10 s ago");
    // The placement says the move waits for the interval, and that it is wanted because
    // gold-1 no longer qualifies, not because a score moved.
    let report = held.held_report().expect("the move is held");
    assert_eq!(report.reason, super::RESCHEDULE_DAMPED_REASON);
    assert!(!report.message.contains("damping"), "{}", report.message);
    assert!(
        report
            .message
            .contains("gold-1 -> bronze-1 (gold-1 no longer qualifies: rejected by TaintToleration: taint maintenance"),
        "{}",
        report.message
    );
    let later =
        decide(&profile, &policy, &candidates, &state(at(61), &["gold-1"]), &opted, &held.moves).expect("decision");
    assert_eq!(later.decision.desired, names(&["bronze-1"]));
}

/// A member that keeps its current placements and takes no new ones (the Fleet hub's
/// silent member: its agent stopped heartbeating) stays with a sticky placement; one
/// that opted in to rescheduling leaves it for a healthy member, as a voluntary move
/// that the budget can hold.
#[test]
fn a_member_that_takes_nothing_new_is_left_only_when_rescheduling_and_within_budget() {
    let profile = Profile::fleet();
    let policy = fleet_policy(1);
    let mut candidates = fleet_members(&["bronze-1", "gold-1"]);
    candidates[1].unschedulable = true;
    let current = state(at(0), &["gold-1"]);
    let sticky = decide(&profile, &policy, &candidates, &current, &damping(60), &Moves::default()).expect("decision");
    assert_eq!(sticky.decision.desired, names(&["gold-1"]));
    let opted = Pacing { reschedule: true, ..damping(60) };
    let moved = decide(&profile, &policy, &candidates, &current, &opted, &Moves::default()).expect("decision");
    assert_eq!(moved.decision.desired, names(&["bronze-1"]));
    let silent = Cause::NoLongerQualifies("rejected by Schedulable: unschedulable: takes no new workloads".into());
    let wanted = Swap { out: Some("gold-1".into()), into: Some("bronze-1".into()), cause: silent };
    assert_eq!(moved.moved, vec![wanted]);
    let frozen = Pacing { budget: Some(Limit::Count(0)), ..opted.clone() };
    let held = decide(&profile, &policy, &candidates, &current, &frozen, &Moves::default()).expect("decision");
    assert_eq!(held.decision.desired, names(&["gold-1"]));
    let report = held.held_report().expect("the move is held");
    assert_eq!(report.reason, "DisruptionBudgetExhausted");
    let why = ": gold-1 -> bronze-1 (gold-1 no longer qualifies: rejected by Schedulable: unschedulable: takes no new workloads)";
    assert!(report.message.ends_with(why), "{}", report.message);
    // Nobody else takes it while it takes nothing new.
    let fresh =
        decide(&profile, &policy, &candidates, &state(at(0), &[]), &opted, &Moves::default()).expect("decision");
    assert_eq!(fresh.decision.desired, names(&["bronze-1"]));
}

/// A rebalance decides from scratch and applies it whole, once.
#[test]
fn a_rebalance_request_decides_from_scratch_once() {
    let profile = Profile::fleet();
    let policy = fleet_policy(2);
    let candidates = fleet_members(&["bronze-1", "bronze-2", "gold-1", "gold-2"]);
    let current = state(at(0), &["bronze-1", "bronze-2"]);
    let pacing = Pacing { rebalance: Some("r1".into()), budget: Some(Limit::Count(1)), ..damping(60) };
    let paced = decide(&profile, &policy, &candidates, &current, &pacing, &Moves::default()).expect("decision");
    assert_eq!(paced.decision.desired, names(&["gold-1", "gold-2"]));
    assert_eq!(paced.decision.bind.remove, names(&["bronze-1", "bronze-2"]));
    assert_eq!(paced.rebalanced.as_deref(), Some("r1"));
    assert_eq!(paced.moves, Moves(vec![(at(0), 2)]));
    let without = Pacing { rebalance: None, ..pacing };
    let sticky = decide(&profile, &policy, &candidates, &current, &without, &Moves::default()).expect("decision");
    assert_eq!(sticky.decision.desired, names(&["bronze-1", "bronze-2"]));
}

#[test]
fn picking_all_has_nothing_to_pace() {
    // A placement asking for all clusters has nothing voluntary to pace.
    let policy = Policy { number: Number::All, ..ocm_policy(1) };
    let paced = decide(
        &Profile::ocm(),
        &policy,
        &scored(&[("a", 1), ("b", 2)]),
        &state(at(0), &["a"]),
        &damping(60),
        &Moves::default(),
    )
    .expect("decision");
    assert_eq!(paced.decision.desired.len(), 2);
    assert!(paced.held.is_empty());
}

fn zoned(names: &[(&str, &str, &str)]) -> Vec<Candidate> {
    names
        .iter()
        .map(|(name, zone, tier)| {
            let mut candidate = Candidate::new(*name);
            candidate.labels.insert("zone".into(), zone.to_string());
            candidate.labels.insert("tier".into(), tier.to_string());
            candidate
        })
        .collect()
}

/// A partial round under DoNotSchedule spread swaps within a zone, so every zone keeps
/// its count; the rest waits.
#[test]
fn a_partial_round_keeps_topology_spread() {
    let yaml = "number: 4
preferred:
- weight: 50
  preference: {labelSelector: {matchLabels: {tier: gold}}}
spread:
- {topologyKey: zone, maxSkew: 1, whenUnsatisfiable: DoNotSchedule}
";
    let policy: Policy = serde_yaml_ng::from_str(yaml).expect("policy");
    let candidates = zoned(&[
        ("a1", "a", "bronze"),
        ("a2", "a", "bronze"),
        ("b1", "b", "bronze"),
        ("b2", "b", "bronze"),
        ("a3", "a", "gold"),
        ("b3", "b", "gold"),
    ]);
    let pacing = Pacing { reschedule: true, budget: Some(Limit::Count(1)), ..damping(60) };
    let paced = decide(
        &Profile::fleet(),
        &policy,
        &candidates,
        &state(at(0), &["a1", "a2", "b1", "b2"]),
        &pacing,
        &Moves::default(),
    )
    .expect("decision");
    assert_eq!(paced.moved.len(), 1);
    assert_eq!(paced.held.len(), 1);
    let zone_a = paced.decision.desired.iter().filter(|n| n.starts_with('a')).count();
    assert_eq!((zone_a, paced.decision.desired.len()), (2, 4), "{:?}", paced.decision.desired);
}

/// Shrinking keeps settled clusters (KubeFleet's downscale), and rescheduling does not
/// bring back the unsettled one the count cut.
#[test]
fn rescheduling_does_not_undo_a_downscale_by_binding_state() {
    let candidates = fleet_members(&["gold-1", "bronze-1", "bronze-2"]);
    let mut current = state(at(0), &["gold-1", "bronze-1", "bronze-2"]);
    current.settled = names(&["bronze-1", "bronze-2"]);
    let pacing = Pacing { reschedule: true, ..damping(60) };
    let paced = decide(&Profile::fleet(), &fleet_policy(2), &candidates, &current, &pacing, &Moves::default())
        .expect("decision");
    let mut desired = paced.decision.desired.clone();
    desired.sort();
    assert_eq!(desired, names(&["bronze-1", "bronze-2"]));
    assert!(paced.moved.is_empty() && paced.held.is_empty(), "{paced:?}");
}

/// A picked cluster that is tainted with nowhere better to go stays: picking N never
/// leaves a cluster without a replacement.
#[test]
fn a_tainted_only_cluster_is_not_left_without_a_replacement() {
    let mut candidates = fleet_members(&["gold-1"]);
    candidates[0].taints.push(Taint {
        key: "k".into(),
        value: String::new(),
        effect: TaintEffect::NoSchedule,
        time_added: None,
    });
    let pacing = Pacing { reschedule: true, ..damping(0) };
    let paced = decide(
        &Profile::fleet(),
        &fleet_policy(1),
        &candidates,
        &state(at(0), &["gold-1"]),
        &pacing,
        &Moves::default(),
    )
    .expect("decision");
    assert_eq!(paced.decision.desired, names(&["gold-1"]));
}

/// With a budget too, one round per interval: a move back within the window waits.
#[test]
fn a_budget_does_not_lift_damping() {
    let profile = Profile::ocm();
    let pacing = Pacing { budget: Some(Limit::Count(2)), ..damping(60) };
    let first = decide(
        &profile,
        &ocm_policy(1),
        &scored(&[("a", 10), ("b", 90)]),
        &state(at(0), &["a"]),
        &pacing,
        &Moves::default(),
    )
    .expect("decision");
    assert_eq!(first.decision.desired, names(&["b"]));
    let back = decide(
        &profile,
        &ocm_policy(1),
        &scored(&[("a", 90), ("b", 10)]),
        &state(at(10), &["b"]),
        &pacing,
        &first.moves,
    )
    .expect("decision");
    assert_eq!(back.decision.desired, names(&["b"]));
    assert_eq!(back.decision.requeue_at, Some(at(60)));
}

/// A forced and a voluntary change in one decision: the forced one applies, the
/// voluntary one is paced.
#[test]
fn forced_and_voluntary_changes_together() {
    let profile = Profile::ocm();
    let moves = Moves(vec![(at(0), 1)]);
    // a is gone (forced); c now outranks b (voluntary, within the window: held).
    let candidates = scored(&[("b", 10), ("c", 90), ("d", 50)]);
    let paced = decide(&profile, &ocm_policy(2), &candidates, &state(at(5), &["a", "b"]), &damping(60), &moves)
        .expect("decision");
    let mut desired = paced.decision.desired.clone();
    desired.sort();
    assert_eq!(desired, names(&["b", "c"]), "a replaced at once by the best, b kept for now");
    assert_eq!(paced.held, vec![outranked("b", "d")]);
}

/// Absurd annotations neither panic nor stop decisions: an interval beyond a week is
/// refused, and a move recorded in the future counts as made now.
#[test]
fn absurd_annotations_do_not_panic() {
    let annotations = BTreeMap::from([(super::INTERVAL_ANNOTATION.to_string(), "999999999999".to_string())]);
    let (pacing, warnings) = Pacing::from_annotations(&annotations, SignedDuration::from_secs(60));
    assert_eq!(pacing.interval, SignedDuration::from_secs(60));
    assert_eq!(warnings.len(), 1);
    let far = Moves::parse("9999-01-01T00:00:00Z=1");
    assert_eq!(far.0.len(), 1);
    let week = Pacing { interval: SignedDuration::from_secs(super::MAX_INTERVAL_SECONDS), ..damping(0) };
    let paced =
        decide(&Profile::ocm(), &ocm_policy(1), &scored(&[("a", 10), ("b", 90)]), &state(at(0), &["a"]), &week, &far)
            .expect("decision");
    assert_eq!(paced.decision.desired, names(&["a"]), "held: the future move counts as now");
}
