//! Properties every decision must have, checked over generated fleets.
//!
//! - The decision does not depend on the order candidates arrive in.
//! - It accounts for every candidate exactly once, picks only candidates that passed
//!   every filter, and never more than wanted.
//! - Its bind diff is exactly desired against current.
//! - Deciding again from its own result changes nothing (decisions do not flap).
//! - Deciding with fewer reports is the same decision, cut to those reports.
//!
//! Fleets come from a small deterministic generator. Each run prints its seeds; set
//! `PLACEMENT_SEED` to replay one.

use std::collections::BTreeSet;

use placement::pace::{self, Limit, Moves, Pacing};
use placement::{
    decide, decide_reporting, Candidate, ClusterReport, Decision, LabelSelector, Number, Outcome, Policy, Preference,
    PreferredTerm, Profile, Quantity, Reports, SelectorTerm, SpreadConstraint, State, Taint, TaintEffect, Toleration,
    TolerationOperator, WhenUnsatisfiable,
};

/// A 64-bit linear congruential generator (Knuth's MMIX constants): enough to vary
/// fleets, and reproducible from its seed on any platform.
struct Generator(u64);

impl Generator {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn now() -> jiff::Timestamp {
    "2024-05-01T00:00:00Z".parse().expect("valid timestamp")
}

fn fleet(generator: &mut Generator, size: usize) -> Vec<Candidate> {
    (0..size)
        .map(|i| {
            let mut candidate = Candidate::new(format!("member-{:03}", generator.below(1000) * 1000 + i as u64));
            candidate.labels.insert("zone".to_string(), format!("zone-{}", generator.below(4)));
            candidate.labels.insert("env".to_string(), if generator.chance(70) { "prod" } else { "dev" }.to_string());
            if generator.chance(30) {
                candidate.labels.insert("tier".to_string(), "gold".to_string());
            }
            candidate
                .properties
                .insert("kubernetes-fleet.io/node-count".to_string(), Quantity(generator.below(50) as f64));
            candidate.allocatable.insert("cpu".to_string(), Quantity(generator.below(64) as f64));
            candidate.capacity.insert("cpu".to_string(), Quantity(64.0));
            candidate.ready = !generator.chance(10);
            if generator.chance(15) {
                let effect = [TaintEffect::NoSelect, TaintEffect::NoSelectIfNew, TaintEffect::PreferNoSelect]
                    [generator.below(3) as usize];
                let added = now().checked_sub(jiff::SignedDuration::from_secs(generator.below(600) as i64));
                candidate.taints.push(Taint {
                    key: "maintenance".to_string(),
                    value: String::new(),
                    effect,
                    time_added: added.ok(),
                });
            }
            candidate
        })
        .collect()
}

fn policy(generator: &mut Generator, ocm: bool) -> Policy {
    let number = match generator.below(3) {
        0 => Number::All,
        _ => Number::N(generator.below(12) as u32),
    };
    let mut policy = Policy { number, ..Policy::default() };
    if generator.chance(60) {
        let selector = LabelSelector {
            match_labels: [("env".to_string(), "prod".to_string())].into_iter().collect(),
            ..LabelSelector::default()
        };
        policy.required = Some(vec![SelectorTerm { label_selector: Some(selector), ..SelectorTerm::default() }]);
    }
    if generator.chance(50) {
        let selector = LabelSelector {
            match_labels: [("tier".to_string(), "gold".to_string())].into_iter().collect(),
            ..LabelSelector::default()
        };
        policy.preferred = vec![PreferredTerm {
            weight: 30,
            preference: Preference { label_selector: Some(selector), property_sorter: None },
        }];
    }
    if generator.chance(50) {
        policy.tolerations = vec![Toleration {
            key: "maintenance".to_string(),
            operator: TolerationOperator::Exists,
            toleration_seconds: Some(generator.below(900) as i64),
            ..Toleration::default()
        }];
    }
    // OCM is not sticky, so with spread a repeated decision may legitimately differ;
    // idempotence is only claimed for it without spread.
    if !ocm && generator.chance(40) {
        let when_unsatisfiable =
            if generator.chance(50) { WhenUnsatisfiable::DoNotSchedule } else { WhenUnsatisfiable::ScheduleAnyway };
        policy.spread = vec![SpreadConstraint {
            max_skew: Some(1 + generator.below(2) as u32),
            topology_key: "zone".to_string(),
            topology_key_type: Default::default(),
            when_unsatisfiable,
        }];
    }
    policy
}

fn shuffled(generator: &mut Generator, candidates: &[Candidate]) -> Vec<Candidate> {
    let mut copy = candidates.to_vec();
    for i in (1..copy.len()).rev() {
        let j = generator.below(i as u64 + 1) as usize;
        copy.swap(i, j);
    }
    copy
}

fn check_accounting(decision: &Decision, candidates: &[Candidate], state: &State) {
    let names: BTreeSet<&str> = candidates.iter().map(|c| c.name.as_str()).collect();
    let reported: BTreeSet<&str> =
        decision.clusters.iter().filter(|r| r.outcome != Outcome::Gone).map(|r| r.name.as_str()).collect();
    assert_eq!(names, reported, "every candidate is reported once");
    for name in &decision.desired {
        let report = decision.report(name).expect("a desired cluster has a report");
        assert_eq!(report.outcome, Outcome::Picked, "{name}: {}", report.reason);
    }
    let desired: BTreeSet<&str> = decision.desired.iter().map(String::as_str).collect();
    assert_eq!(desired.len(), decision.desired.len(), "no cluster is picked twice");
    if let Some(wanted) = decision.wanted {
        assert!(decision.desired.len() <= wanted);
        assert_eq!(decision.unsatisfied, wanted - decision.desired.len());
    }
    let current: BTreeSet<&str> = state.current.iter().map(String::as_str).collect();
    let add: BTreeSet<&str> = desired.difference(&current).copied().collect();
    let keep: BTreeSet<&str> = desired.intersection(&current).copied().collect();
    let remove: BTreeSet<&str> = current.difference(&desired).copied().collect();
    let strings = |set: BTreeSet<&str>| set.into_iter().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(decision.bind.add, strings(add));
    assert_eq!(decision.bind.keep, strings(keep));
    assert_eq!(decision.bind.remove, strings(remove));
}

fn seeds() -> Vec<u64> {
    match std::env::var("PLACEMENT_SEED") {
        Ok(seed) => vec![seed.parse().expect("PLACEMENT_SEED is a number")],
        Err(_) => (1..=60).collect(),
    }
}

/// The profiles the properties are checked for.
const PROFILES: [&str; 3] = ["fleet", "ocm", "kcp-sync-target"];

/// One generated decision's inputs, and the generator to go on drawing from.
struct Generated {
    generator: Generator,
    profile: Profile,
    policy: Policy,
    candidates: Vec<Candidate>,
    state: State,
}

/// The inputs of `seed` for the named profile: up to 40 candidates, a fifth of them
/// current, and a current decision that is no longer a candidate.
fn generated(seed: u64, profile_name: &str) -> Generated {
    let mut generator = Generator(seed.wrapping_mul(31).wrapping_add(profile_name.len() as u64));
    let profile = Profile::named(profile_name).expect("built-in profile");
    let size = 1 + generator.below(40) as usize;
    let candidates = fleet(&mut generator, size);
    let mut policy = policy(&mut generator, profile_name == "ocm");
    if profile_name == "kcp-sync-target" {
        policy.number = Number::N(1);
        policy.tie_break_key = format!("root:org:ws|namespace-{seed}");
    }
    let mut state = State::at(now());
    state.current = candidates.iter().filter(|_| generator.chance(20)).map(|c| c.name.clone()).collect();
    state.current.push("departed".to_string());
    Generated { generator, profile, policy, candidates, state }
}

#[test]
fn decisions_are_order_independent_complete_and_stable() {
    // How many decisions picked something and rejected something, so the test cannot
    // pass vacuously on a generator that only makes empty or trivial fleets.
    let (mut decided, mut picked, mut rejected) = (0, 0, 0);
    for seed in seeds() {
        eprintln!("seed {seed}");
        for profile_name in PROFILES {
            let Generated { mut generator, profile, policy, candidates, state } = generated(seed, profile_name);
            let context = format!("seed {seed}, profile {profile_name}");

            let decision = decide(&profile, &policy, &candidates, &state).unwrap_or_else(|e| panic!("{context}: {e}"));
            check_accounting(&decision, &candidates, &state);
            decided += 1;
            picked += usize::from(!decision.desired.is_empty());
            rejected += usize::from(decision.clusters.iter().any(|r| r.outcome == Outcome::Rejected));
            for _ in 0..3 {
                let again = decide(&profile, &policy, &shuffled(&mut generator, &candidates), &state)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
                assert_eq!(again, decision, "{context}: the order of candidates changed the decision");
            }

            let next_state = State { current: decision.desired.clone(), ..state.clone() };
            let next = decide(&profile, &policy, &candidates, &next_state).unwrap_or_else(|e| panic!("{context}: {e}"));
            let before: BTreeSet<&String> = decision.desired.iter().collect();
            let after: BTreeSet<&String> = next.desired.iter().collect();
            assert_eq!(before, after, "{context}: deciding again from the result moved it");
            assert!(next.bind.add.is_empty() && next.bind.remove.is_empty(), "{context}: {:?}", next.bind);
        }
    }
    eprintln!("{decided} decisions, {picked} picked something, {rejected} rejected something");
    if seeds().len() > 1 {
        assert!(picked * 2 > decided && rejected * 2 > decided, "the generated fleets are too trivial");
    }
}

/// The pacings a decision with fewer reports is checked under, with the moves made: none;
/// a budget of one move (sticky profiles opted in to rescheduling); damping that holds
/// every move, one made ten seconds ago; a rebalance request.
fn pacings() -> Vec<(Pacing, Moves)> {
    let interval = jiff::SignedDuration::from_secs(60);
    let rescheduling = Pacing { interval, budget: None, reschedule: true, rebalance: None };
    let recently = now().checked_sub(jiff::SignedDuration::from_secs(10)).expect("valid timestamp");
    vec![
        (Pacing::none(), Moves::default()),
        (Pacing { budget: Some(Limit::Count(1)), ..rescheduling.clone() }, Moves::default()),
        (rescheduling, Moves(vec![(recently, 1)])),
        (Pacing { rebalance: Some("again".to_string()), ..Pacing::none() }, Moves::default()),
    ]
}

/// Said without `Decision::keep_reports`: `bounded` has the reports of `full` on every
/// picked and current cluster, and on the first `reports` of the others of each outcome
/// by name, and no other.
fn check_reports(full: &Decision, bounded: &Decision, reports: Reports, state: &State, context: &str) {
    let always: BTreeSet<&str> = full.desired.iter().chain(&state.current).map(String::as_str).collect();
    let mut expected: Vec<&ClusterReport> = full.clusters.iter().filter(|r| always.contains(r.name.as_str())).collect();
    for (outcome, count) in [(Outcome::NotPicked, reports.not_picked), (Outcome::Rejected, reports.rejected)] {
        let others = full.clusters.iter().filter(|r| r.outcome == outcome && !always.contains(r.name.as_str()));
        expected.extend(others.take(count));
    }
    expected.sort_by(|a, b| a.name.cmp(&b.name));
    let got: Vec<&ClusterReport> = bounded.clusters.iter().collect();
    assert_eq!(got, expected, "{context}: the reports kept");
}

/// A decision that reports on fewer clusters (`decide_reporting`) is the decision with a
/// report on every candidate, cut to them: the same picks, bind and reasons. Paced as
/// well, where pacing rewrites the reports of the clusters that move.
#[test]
fn fewer_reports_cut_the_same_decision() {
    // How many decisions left reports out, so the test cannot pass on bounds that
    // never bite.
    let (mut decided, mut cut) = (0, 0);
    for seed in seeds() {
        for profile_name in PROFILES {
            let Generated { mut generator, profile, policy, candidates, state } = generated(seed, profile_name);
            let reports = Reports { not_picked: generator.below(4) as usize, rejected: generator.below(4) as usize };
            let context = format!("seed {seed}, profile {profile_name}, {reports:?}");
            let full = decide(&profile, &policy, &candidates, &state).unwrap_or_else(|e| panic!("{context}: {e}"));
            let bounded = decide_reporting(&profile, &policy, &candidates, &state, reports)
                .unwrap_or_else(|e| panic!("{context}: {e}"));
            let mut expected = full.clone();
            expected.keep_reports(reports, &state.current);
            assert_eq!(bounded, expected, "{context}");
            check_reports(&full, &bounded, reports, &state, &context);
            decided += 1;
            cut += usize::from(bounded.clusters.len() < full.clusters.len());
            // Also from nothing placed: a decision that cannot move anything voluntarily.
            let unplaced = State { current: Vec::new(), ..state.clone() };
            for ((pacing, moves), state) in pacings().into_iter().flat_map(|p| [(p.clone(), &state), (p, &unplaced)]) {
                let context = format!("{context}, {pacing:?}, current {:?}", state.current);
                let full = pace::decide(&profile, &policy, &candidates, state, &pacing, &moves)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
                let bounded = pace::decide_reporting(&profile, &policy, &candidates, state, &pacing, &moves, reports)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
                let mut expected = full.clone();
                expected.decision.keep_reports(reports, &state.current);
                assert_eq!(bounded, expected, "{context}");
                check_reports(&full.decision, &bounded.decision, reports, state, &context);
            }
        }
    }
    eprintln!("{decided} decisions, {cut} left reports out");
    if seeds().len() > 1 {
        assert!(cut * 2 > decided, "the bounds never bite");
    }
}
