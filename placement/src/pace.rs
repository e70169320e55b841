//! Pacing: how fast a placement may leave clusters that still qualify.
//!
//! A decision changes a placement in two ways. Forced changes apply at once: a current
//! cluster that left or now fails a filter is replaced, and a changed count adds or
//! trims. Voluntary changes replace a current cluster that still qualifies with one that
//! ranks higher: a score moved (OCM's add-on scores and resource figures), a better
//! cluster joined or recovered, or, where the placement opted in to rescheduling, a kept
//! cluster was tainted. The *sticky* decision holds only the forced changes, the *ideal*
//! one both. Pacing moves from the sticky decision toward the ideal one as fast as the
//! placement allows:
//!
//! - **damping**: voluntary moves happen at most once per interval, so churning scores
//!   move decisions at most that often (ocm#1436 discusses one minute);
//! - **disruption budget**: at most N, or P% of the placement's clusters, change
//!   voluntarily within any window of that interval;
//! - **rebalance**: a one-shot request decides from scratch, as if nothing were placed
//!   yet, and applies the result whole.
//!
//! Swaps are made best-first: the highest-ranked newcomer replaces the lowest-ranked
//! cluster that leaves. The moves made are a short history ([`Moves`]) the controller
//! keeps on the placement (an annotation), so a restart does not refill the budget. A
//! held swap is named in the leaving cluster's reason, with the time it may happen, and
//! the decision's `requeue_at` wakes the controller then. Pure: the clock is an input.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;

use jiff::{SignedDuration, Timestamp};

use crate::candidate::Candidate;
use crate::decision::{ClusterReport, Decision, Outcome, Reports};
use crate::error::Error;
use crate::framework::{decide as decide_once, decide_reporting as decide_reporting_once, diff};
use crate::policy::{Number, Policy, SpreadConstraint, State, TopologyKeyType, WhenUnsatisfiable};
use crate::profile::Profile;

/// Opts a sticky placement (Fleet) in to voluntary moves: `Enabled`.
pub const RESCHEDULING_ANNOTATION: &str = "placement.atoll.io/rescheduling";
/// At most this many clusters (`3`) or this share of the placement's clusters (`25%`)
/// change voluntarily per interval.
pub const BUDGET_ANNOTATION: &str = "placement.atoll.io/disruption-budget";
/// The interval, in seconds, of the budget and of damping.
pub const INTERVAL_ANNOTATION: &str = "placement.atoll.io/disruption-interval-seconds";
/// A rebalance request: a new value asks for one decision from scratch.
pub const REBALANCE_ANNOTATION: &str = "placement.atoll.io/rebalance";
/// The rebalance request last carried out (written by the controller).
pub const REBALANCED_ANNOTATION: &str = "placement.atoll.io/rebalanced";
/// The voluntary moves of the last interval (written by the controller).
pub const MOVES_ANNOTATION: &str = "placement.atoll.io/moves";

/// The longest interval a placement may name: a week.
pub const MAX_INTERVAL_SECONDS: i64 = 7 * 24 * 3600;

/// How many clusters a budget allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// This many.
    Count(u32),
    /// This percentage of the placement's clusters, rounded up (as Kubernetes and
    /// Fleet round maxUnavailable); at least one when above zero.
    Percent(u32),
}

impl Limit {
    /// Reads `3` or `25%`.
    pub fn parse(text: &str) -> Result<Limit, String> {
        let text = text.trim();
        let number =
            |digits: &str| digits.parse::<u32>().map_err(|_| format!("{text:?} is not a count or a percentage"));
        match text.strip_suffix('%') {
            Some(percent) => {
                let percent = number(percent)?;
                if percent > 100 {
                    return Err(format!("{text:?} is above 100%"));
                }
                Ok(Limit::Percent(percent))
            }
            None => Ok(Limit::Count(number(text)?)),
        }
    }

    /// The number of clusters out of `size`.
    pub fn of(self, size: usize) -> usize {
        match self {
            Limit::Count(n) => n as usize,
            Limit::Percent(0) => 0,
            Limit::Percent(p) => (size * p as usize).div_ceil(100).max(1),
        }
    }
}

/// How fast one placement may move voluntarily.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pacing {
    /// Damping and budget window.
    pub interval: SignedDuration,
    /// At most this many voluntary changes per window; `None`: any number, but at most
    /// one round of moves per window (damping alone).
    pub budget: Option<Limit>,
    /// Sticky profiles move voluntarily only when this is set.
    pub reschedule: bool,
    /// A rebalance request not yet carried out.
    pub rebalance: Option<String>,
}

impl Pacing {
    /// The end of the window that a move at `at` opens; a move recorded in the future (a
    /// clock that stepped back) counts as made now.
    fn window_end(&self, at: Timestamp, now: Timestamp) -> Timestamp {
        at.min(now).checked_add(self.interval).unwrap_or(Timestamp::MAX)
    }

    /// No pacing: every voluntary move happens at once (a zero interval), nothing opted in.
    pub fn none() -> Pacing {
        Pacing { interval: SignedDuration::ZERO, budget: None, reschedule: false, rebalance: None }
    }

    /// The placement's pacing from its annotations, with `interval` (the installation's
    /// damping interval) where the placement names none. Unreadable annotations are
    /// ignored, and said so in the returned warnings.
    pub fn from_annotations(annotations: &BTreeMap<String, String>, interval: SignedDuration) -> (Pacing, Vec<String>) {
        let mut warnings = Vec::new();
        let mut pacing = Pacing { interval, budget: None, reschedule: false, rebalance: None };
        if let Some(text) = annotations.get(INTERVAL_ANNOTATION) {
            match text.trim().parse::<i64>() {
                Ok(seconds) if (0..=MAX_INTERVAL_SECONDS).contains(&seconds) => {
                    pacing.interval = SignedDuration::from_secs(seconds)
                }
                _ => warnings.push(format!(
                    "{INTERVAL_ANNOTATION}: {text:?} is not a number of seconds from 0 to {MAX_INTERVAL_SECONDS}; ignored"
                )),
            }
        }
        if let Some(text) = annotations.get(BUDGET_ANNOTATION) {
            match Limit::parse(text) {
                Ok(limit) => pacing.budget = Some(limit),
                Err(why) => warnings.push(format!("{BUDGET_ANNOTATION}: {why}; ignored")),
            }
        }
        match annotations.get(RESCHEDULING_ANNOTATION).map(String::as_str) {
            None | Some("Disabled") => {}
            Some("Enabled") => pacing.reschedule = true,
            Some(other) => {
                warnings.push(format!("{RESCHEDULING_ANNOTATION}: {other:?} is neither Enabled nor Disabled; ignored"))
            }
        }
        let request = annotations.get(REBALANCE_ANNOTATION).filter(|r| !r.is_empty());
        if request.is_some() && request != annotations.get(REBALANCED_ANNOTATION) {
            pacing.rebalance = request.cloned();
        }
        (pacing, warnings)
    }
}

/// The voluntary moves a placement made recently: when, and how many clusters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Moves(pub Vec<(Timestamp, u32)>);

impl Moves {
    /// Reads `2026-11-27T15:00:00Z=2,2026-11-27T15:05:00Z=1`; unreadable entries are
    /// dropped (the budget then errs on the side of moving).
    pub fn parse(text: &str) -> Moves {
        let entries = text.split(',').filter_map(|entry| {
            let (at, count) = entry.trim().split_once('=')?;
            Some((at.parse().ok()?, count.parse().ok()?))
        });
        Moves(entries.collect())
    }

    /// The annotation's text.
    pub fn render(&self) -> String {
        let mut text = String::new();
        for (at, count) in &self.0 {
            if !text.is_empty() {
                text.push(',');
            }
            let _ = write!(text, "{at}={count}");
        }
        text
    }

    /// The moves within the window that ends now.
    fn within<'m>(&'m self, pacing: &'m Pacing, now: Timestamp) -> impl Iterator<Item = &'m (Timestamp, u32)> {
        self.0.iter().filter(move |(at, _)| pacing.window_end(*at, now) > now)
    }
}

/// One voluntary change: `out` leaves, `into` comes in (either may be absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Swap {
    /// The current cluster that leaves.
    pub out: Option<String>,
    /// The cluster that replaces it.
    pub into: Option<String>,
    /// Why the change is wanted.
    pub cause: Cause,
}

/// Why a voluntary change is wanted: what a held change waits to do, told apart so that
/// a placement holding a move off a tainted member does not say a score moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The leaving cluster still qualifies; the newcomer ranks higher (a score moved, or
    /// a better cluster joined or recovered).
    Outranked,
    /// The leaving cluster would not be picked again (a NoSchedule taint, a member that
    /// takes nothing new, a required term it now fails), kept so far only because current
    /// decisions are sticky; with the filter's reason.
    NoLongerQualifies(String),
}

impl Cause {
    /// The cause of `out` leaving, as `fresh` (the decision that reconsiders current
    /// clusters) sees it.
    fn of(out: &str, fresh: &Decision) -> Cause {
        match fresh.report(out) {
            Some(report) if report.outcome == Outcome::Rejected => Cause::NoLongerQualifies(report.reason.clone()),
            _ => Cause::Outranked,
        }
    }
}

/// What holds back a paced decision's voluntary changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Damping: one round of moves per interval, and this interval's round was made.
    Damping,
    /// The disruption budget: this round may change only so many clusters (or none).
    Budget,
}

/// The held condition's reason when the budget holds changes, whatever their cause.
pub const BUDGET_REASON: &str = "DisruptionBudgetExhausted";
/// The reason when damping holds changes that are all rankings (scores) moving.
pub const SCORE_DAMPED_REASON: &str = "ScoreChangeDamped";
/// The reason when damping holds a move off a cluster that no longer qualifies (tainted,
/// silent, failing a required term): this interval's round of moves was made already.
pub const RESCHEDULE_DAMPED_REASON: &str = "ReschedulingDamped";

/// The condition type (Atoll's) in which a placement of either dialect says that
/// voluntary changes wait: True while some do, absent when none do.
pub const HELD_CONDITION: &str = "PlacementChangesHeld";

/// The reason and message of a placement's [`HELD_CONDITION`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// [`BUDGET_REASON`], [`SCORE_DAMPED_REASON`] or [`RESCHEDULE_DAMPED_REASON`].
    pub reason: &'static str,
    /// How many changes wait, why, from when, and each as `leaving -> joining`.
    pub message: String,
}

/// A paced decision.
#[derive(Clone, Debug, PartialEq)]
pub struct Paced {
    /// The decision to apply: the sticky one with the swaps made.
    pub decision: Decision,
    /// The history to keep, pruned to the window, with this decision's moves.
    pub moves: Moves,
    /// The swaps made now.
    pub moved: Vec<Swap>,
    /// The swaps the budget or damping holds back.
    pub held: Vec<Swap>,
    /// What holds them back, when some are held.
    pub hold: Option<Hold>,
    /// When the held swaps may start to happen (also in the decision's `requeue_at`).
    pub resume_at: Option<Timestamp>,
    /// The rebalance request carried out now.
    pub rebalanced: Option<String>,
}

/// Decides like [`crate::decide`], then paces the voluntary part of the change.
pub fn decide(
    profile: &Profile,
    policy: &Policy,
    candidates: &[Candidate],
    state: &State,
    pacing: &Pacing,
    moves: &Moves,
) -> Result<Paced, Error> {
    decide_reporting(profile, policy, candidates, state, pacing, moves, Reports::ALL)
}

/// [`decide`], with the decision cut to the reports `reports` names (as
/// [`Decision::keep_reports`] cuts it, with `state.current`). A decision returned as the
/// framework made it (a sticky placement not opted in to rescheduling, the common case)
/// never builds the others. Decisions that pacing reads are made with every report and
/// cut at the end: pacing learns only as it goes which clusters' reports it reads (why a
/// cluster the sticky decision picked leaves the ideal one, say, which is not current).
pub fn decide_reporting(
    profile: &Profile,
    policy: &Policy,
    candidates: &[Candidate],
    state: &State,
    pacing: &Pacing,
    moves: &Moves,
    reports: Reports,
) -> Result<Paced, Error> {
    let inputs = Inputs { policy, candidates, state, pacing, moves };
    let mut paced = pace_decision(profile, &inputs, reports)?;
    paced.decision.keep_reports(reports, &state.current);
    Ok(paced)
}

/// The paced decision, with only `reports` when it is returned unpaced.
fn pace_decision(profile: &Profile, inputs: &Inputs<'_>, reports: Reports) -> Result<Paced, Error> {
    let Inputs { policy, candidates, state, pacing, moves } = *inputs;
    let now = state.now;
    let kept_moves = || Moves(moves.within(pacing, now).cloned().collect());
    let unpaced = |decision: Decision| Paced {
        decision,
        moves: kept_moves(),
        moved: vec![],
        held: vec![],
        hold: None,
        resume_at: None,
        rebalanced: None,
    };
    if let Some(request) = &pacing.rebalance {
        // Every report: the fresh decision has no current clusters, yet why each current
        // one leaves is read from it.
        let fresh = State { current: Vec::new(), reconsider: true, ..state.clone() };
        let mut decision = decide_once(profile, policy, candidates, &fresh)?;
        decision.bind = diff(&state.current, &decision.desired);
        let mut history = kept_moves();
        let changed = decision.bind.remove.len().max(decision.bind.add.len()) as u32;
        if changed > 0 {
            history.0.push((now, changed));
        }
        let moved = swaps(&decision.bind.remove, &decision.bind.add, &decision);
        let rebalanced = Some(request.clone());
        return Ok(Paced { decision, moves: history, moved, held: vec![], hold: None, resume_at: None, rebalanced });
    }
    let (sticky, ideal) = if profile.keep_current {
        if !pacing.reschedule {
            return Ok(unpaced(decide_reporting_once(profile, policy, candidates, state, reports)?));
        }
        let sticky = decide_once(profile, policy, candidates, state)?;
        let ideal = decide_once(profile, policy, candidates, &State { reconsider: true, ..state.clone() })?;
        (sticky, ideal)
    } else {
        // Without current decisions nothing moves voluntarily, and the decision is
        // returned as it is; with them, it may become the ideal one.
        let base_reports = if state.current.is_empty() { reports } else { Reports::ALL };
        let base = decide_reporting_once(profile, policy, candidates, state, base_reports)?;
        // Only a current cluster that still passes and was not picked is a voluntary move.
        let voluntary =
            base.clusters.iter().any(|r| r.outcome == Outcome::NotPicked && state.current.contains(&r.name));
        if !voluntary {
            return Ok(unpaced(base));
        }
        let sticky_profile = Profile { keep_current: true, ..profile.clone() };
        (decide_once(&sticky_profile, policy, candidates, state)?, base)
    };
    Ok(pace(sticky, &ideal, inputs))
}

fn swaps(outs: &[String], ins: &[String], fresh: &Decision) -> Vec<Swap> {
    let mut outs = outs.iter().cloned();
    let mut ins = ins.iter().cloned();
    std::iter::from_fn(|| match (outs.next(), ins.next()) {
        (None, None) => None,
        (out, into) => {
            let cause = out.as_deref().map_or(Cause::Outranked, |out| Cause::of(out, fresh));
            Some(Swap { out, into, cause })
        }
    })
    .collect()
}

/// What pacing reads besides the two decisions.
#[derive(Clone, Copy)]
struct Inputs<'a> {
    policy: &'a Policy,
    candidates: &'a [Candidate],
    state: &'a State,
    pacing: &'a Pacing,
    moves: &'a Moves,
}

impl Inputs<'_> {
    /// The policy's DoNotSchedule spread constraints, when they apply (only picking N
    /// spreads).
    fn hard_spread(&self) -> Vec<&SpreadConstraint> {
        if !matches!(self.policy.number, Number::N(_)) {
            return Vec::new();
        }
        self.policy.spread.iter().filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule).collect()
    }

    /// Each named candidate's values for the hard spread keys (its domain).
    fn domains<'n>(&self, names: impl Iterator<Item = &'n str>) -> HashMap<&'n str, Vec<Option<String>>> {
        let constraints = self.hard_spread();
        let by_name: HashMap<&str, &Candidate> = self.candidates.iter().map(|c| (c.name.as_str(), c)).collect();
        names
            .map(|name| {
                let candidate = by_name.get(name);
                let domain = constraints
                    .iter()
                    .map(|c| {
                        let values = match c.topology_key_type {
                            TopologyKeyType::Label => candidate.map(|c| &c.labels),
                            TopologyKeyType::Claim => candidate.map(|c| &c.claims),
                        };
                        values.and_then(|v| v.get(&c.topology_key)).cloned()
                    })
                    .collect();
                (name, domain)
            })
            .collect()
    }
}

/// Moves from `sticky` toward `ideal` within the pacing.
///
/// Leavers go unsettled first (Fleet's Scheduled before Bound), worst-ranked first;
/// each is paired with the best newcomer of its own spread domain, so that a partial
/// round keeps every domain's count. Swaps across domains, and additions, change the
/// counts: under DoNotSchedule spread they happen only when the whole move fits in one
/// round (the ideal set satisfies the spread; a part of the way may not). Picking N
/// never leaves a cluster without a replacement: only the count does that.
fn pace(mut sticky: Decision, ideal: &Decision, inputs: &Inputs<'_>) -> Paced {
    let (state, pacing) = (inputs.state, inputs.pacing);
    let now = state.now;
    let in_ideal: BTreeSet<&str> = ideal.desired.iter().map(String::as_str).collect();
    let in_sticky: BTreeSet<&str> = sticky.desired.iter().map(String::as_str).collect();
    let current: BTreeSet<&str> = state.current.iter().map(String::as_str).collect();
    let settled: BTreeSet<&str> = state.settled.iter().map(String::as_str).collect();
    let mut outs: Vec<&str> =
        sticky.desired.iter().rev().map(String::as_str).filter(|n| !in_ideal.contains(n)).collect();
    outs.sort_by_key(|n| settled.contains(n));
    // A current cluster the sticky decision let go was cut by the count: not a newcomer.
    let mut ins: Vec<&str> =
        ideal.desired.iter().map(String::as_str).filter(|n| !in_sticky.contains(n) && !current.contains(n)).collect();
    let domains = inputs.domains(outs.iter().chain(&ins).copied());
    let swap = |out: &str, into: Option<&str>| Swap {
        out: Some(out.to_string()),
        into: into.map(str::to_string),
        cause: Cause::of(out, ideal),
    };
    let mut same = Vec::new();
    let mut unpaired = Vec::new();
    for out in outs {
        match ins.iter().position(|i| domains[i] == domains[out]) {
            Some(at) => same.push(swap(out, Some(ins.remove(at)))),
            None => unpaired.push(out),
        }
    }
    let mut cross = Vec::new();
    for out in unpaired {
        if !ins.is_empty() {
            cross.push(swap(out, Some(ins.remove(0))));
        } else if !matches!(inputs.policy.number, Number::N(_)) {
            cross.push(swap(out, None));
        }
    }
    let adds: Vec<String> = ins.iter().map(|n| n.to_string()).collect();
    let spread = !inputs.hard_spread().is_empty();
    let window: Vec<&(Timestamp, u32)> = inputs.moves.within(pacing, now).collect();
    // One round of moves per interval, of at most the budget.
    let spent = !window.is_empty();
    let allowance = match (window.is_empty(), pacing.budget) {
        (false, _) => 0,
        (true, None) => usize::MAX,
        (true, Some(limit)) => limit.of(sticky.desired.len().max(ideal.desired.len())),
    };
    let costly: Vec<Swap> = same.iter().chain(&cross).cloned().collect();
    let whole = allowance >= costly.len();
    let taken = if spread && !whole { allowance.min(same.len()) } else { allowance.min(costly.len()) };
    let adds_now = !spread || whole;
    let (moved, held) = (costly[..taken].to_vec(), costly[taken..].to_vec());
    let mut history = Moves(window.into_iter().cloned().collect());
    if taken > 0 {
        history.0.push((now, taken as u32));
    }
    let next_round = history.0.iter().map(|(at, _)| pacing.window_end(*at, now)).max();
    let replaced: BTreeMap<&str, Option<&str>> =
        moved.iter().filter_map(|s| Some((s.out.as_deref()?, s.into.as_deref()))).collect();
    let mut desired: Vec<String> = Vec::with_capacity(sticky.desired.len() + adds.len());
    for name in &sticky.desired {
        match replaced.get(name.as_str()) {
            Some(Some(into)) => desired.push(into.to_string()),
            Some(None) => {}
            None => desired.push(name.clone()),
        }
    }
    let added: &[String] = if adds_now { &adds } else { &[] };
    desired.extend(added.iter().cloned());
    let newcomers: BTreeSet<&str> =
        moved.iter().filter_map(|s| s.into.as_deref()).chain(added.iter().map(String::as_str)).collect();
    for report in &mut sticky.clusters {
        if newcomers.contains(report.name.as_str()) {
            if let Some(better) = ideal.report(&report.name) {
                *report = better.clone();
            }
        }
    }
    let report_of =
        |clusters: &[ClusterReport], name: &str| clusters.binary_search_by(|r| r.name.as_str().cmp(name)).ok();
    for swap in &moved {
        let Some(out) = &swap.out else { continue };
        let Some(i) = report_of(&sticky.clusters, out) else { continue };
        let report = &mut sticky.clusters[i];
        report.outcome = Outcome::NotPicked;
        report.reason = match (&swap.cause, &swap.into) {
            (Cause::NoLongerQualifies(why), _) => format!("rescheduled: {why}"),
            (Cause::Outranked, Some(into)) => format!("rescheduled: replaced by {into}, which ranks higher"),
            (Cause::Outranked, None) => "rescheduled: no longer among the picked".to_string(),
        };
    }
    let cause = match pacing.budget {
        Some(Limit::Count(n)) => format!("at most {n} change(s)"),
        Some(Limit::Percent(p)) => format!("at most {p}% of the clusters changed"),
        None => "one round of moves".to_string(),
    };
    let when = next_round.map_or_else(|| "later".to_string(), |at| format!("from {at}"));
    for swap in &held {
        let Some(out) = &swap.out else { continue };
        let Some(i) = report_of(&sticky.clusters, out) else { continue };
        let into = swap.into.as_deref().map_or(String::new(), |into| format!(" by {into}"));
        let _ = write!(
            sticky.clusters[i].reason,
            "; to be replaced{into} {when} ({cause} per {}s)",
            pacing.interval.as_secs()
        );
    }
    sticky.unsatisfied = sticky.wanted.map_or(0, |w| w.saturating_sub(desired.len()));
    sticky.bind = diff(&state.current, &desired);
    sticky.desired = desired;
    let resume_at = if held.is_empty() && (adds_now || adds.is_empty()) { None } else { next_round };
    sticky.requeue_at = [sticky.requeue_at, resume_at].into_iter().flatten().min();
    // This interval's round was made already (damping), or this round is the budget's.
    let hold = match (held.is_empty(), spent, pacing.budget) {
        (true, _, _) => None,
        (false, false, Some(_)) => Some(Hold::Budget),
        (false, _, _) => Some(Hold::Damping),
    };
    Paced { decision: sticky, moves: history, moved, held, hold, resume_at, rebalanced: None }
}

impl Swap {
    /// `leaving -> joining (why)`, as a held condition names it.
    fn describe(&self) -> String {
        let change = match (&self.out, &self.into) {
            (Some(out), Some(into)) => format!("{out} -> {into}"),
            (Some(out), None) => format!("{out} leaves"),
            (None, Some(into)) => format!("{into} joins"),
            (None, None) => String::new(),
        };
        match (&self.cause, &self.out, &self.into) {
            (Cause::NoLongerQualifies(why), Some(out), _) => format!("{change} ({out} no longer qualifies: {why})"),
            (Cause::Outranked, Some(_), Some(into)) => format!("{change} ({into} ranks higher)"),
            _ => change,
        }
    }
}

impl Paced {
    /// What the placement's [`HELD_CONDITION`] says, when changes are held: a placement
    /// that waits says so, naming what waits, why it is wanted, what holds it and from
    /// when, rather than looking settled. The reason tells a budget from damping, and,
    /// under damping, moves off clusters that no longer qualify from score changes.
    pub fn held_report(&self) -> Option<Held> {
        let hold = self.hold.filter(|_| !self.held.is_empty())?;
        let swaps: Vec<String> = self.held.iter().map(Swap::describe).collect();
        let rescheduling = self.held.iter().any(|s| matches!(s.cause, Cause::NoLongerQualifies(_)));
        let (reason, why) = match (hold, rescheduling) {
            (Hold::Budget, _) => (BUDGET_REASON, "the disruption budget"),
            (Hold::Damping, false) => (SCORE_DAMPED_REASON, "damping (one round of moves per interval)"),
            (Hold::Damping, true) => {
                (RESCHEDULE_DAMPED_REASON, "the interval between rounds of moves (this interval's round was made)")
            }
        };
        let when = self.resume_at.map_or_else(|| "when the budget allows".to_string(), |at| format!("from {at}"));
        let message = format!("{} change(s) held by {why}, {when}: {}", self.held.len(), swaps.join(", "));
        Some(Held { reason, message })
    }
}

#[cfg(test)]
mod tests;
