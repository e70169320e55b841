//! The report: the decision's lists, and a reason for every candidate (or for those the
//! caller reads: `Reports`).
//!
//! Reasons are sentences for `kubectl describe`: the filter and its reason for a
//! rejection; the rank and the score, broken down per scorer as `name normalised×weight`,
//! for everything ranked.

use std::collections::{BTreeSet, HashSet};
use std::fmt::Write;

use super::bind;
use super::ledger::{Entry, Status};
use super::weights::ActiveScorer;
use crate::candidate::Candidate;
use crate::decision::{ClusterReport, Decision, Outcome, Reports, ScorerSummary};
use crate::policy::{Number, Policy, State};

pub(super) struct Inputs<'a> {
    pub policy: &'a Policy,
    pub state: &'a State,
    pub candidates: &'a [Candidate],
    pub entries: &'a [Entry],
    pub scorers: &'a [ActiveScorer],
    /// The desired set, best first.
    pub desired: &'a [usize],
    /// The feasible candidates not picked, best first.
    pub others: &'a [usize],
    pub wanted: Option<usize>,
    pub warnings: Vec<String>,
    /// Which candidates get a report.
    pub reports: Reports,
}

pub(super) fn build(inputs: Inputs<'_>) -> Decision {
    let desired: Vec<String> = inputs.desired.iter().map(|&i| inputs.candidates[i].name.clone()).collect();
    let tiers: Vec<usize> = inputs.scorers.iter().map(|s| s.tier).collect::<BTreeSet<_>>().into_iter().collect();
    let mut ranks = vec![None; inputs.entries.len()];
    for (position, &index) in inputs.desired.iter().chain(inputs.others).enumerate() {
        ranks[index] = Some(position + 1);
    }
    let mut clusters: Vec<ClusterReport> = reported(&inputs)
        .into_iter()
        .map(|i| candidate_report(&inputs, &tiers, &inputs.candidates[i], &inputs.entries[i], ranks[i]))
        .collect();
    clusters.extend(gone(&inputs).into_iter().map(gone_report));
    clusters.sort_by(|a, b| a.name.cmp(&b.name));
    Decision {
        bind: bind::diff(&inputs.state.current, &desired),
        unsatisfied: inputs.wanted.map_or(0, |w| w.saturating_sub(desired.len())),
        missing: missing(inputs.policy, inputs.candidates),
        requeue_at: inputs.desired.iter().filter_map(|&i| inputs.entries[i].until).min(),
        scorers: inputs
            .scorers
            .iter()
            .map(|s| ScorerSummary { plugin: s.name.clone(), weight: s.weight, tier: s.tier })
            .collect(),
        desired,
        wanted: inputs.wanted,
        warnings: inputs.warnings,
        clusters,
    }
}

/// The candidates to report on, by index: all of them, or those `inputs.reports` names
/// (as [`Decision::keep_reports`] picks them from a full decision).
fn reported(inputs: &Inputs<'_>) -> Vec<usize> {
    if inputs.reports == Reports::ALL {
        return (0..inputs.entries.len()).collect();
    }
    let (mut always, mut not_picked, mut rejected) = (Vec::new(), Vec::new(), Vec::new());
    for (index, entry) in inputs.entries.iter().enumerate() {
        match entry.status {
            _ if entry.current => always.push(index),
            Status::Kept | Status::Picked => always.push(index),
            Status::Rejected { .. } => rejected.push(index),
            Status::Feasible | Status::Dropped => not_picked.push(index),
        }
    }
    always.extend(first_by_name(not_picked, inputs.reports.not_picked, inputs.candidates));
    always.extend(first_by_name(rejected, inputs.reports.rejected, inputs.candidates));
    always
}

/// The `count` of `indices` whose candidates' names come first, in no particular order
/// (the report is sorted by name at the end). Names are unique: the decider refuses
/// duplicates.
fn first_by_name(mut indices: Vec<usize>, count: usize, candidates: &[Candidate]) -> Vec<usize> {
    if indices.len() > count {
        if count > 0 {
            indices.select_nth_unstable_by(count - 1, |&a, &b| candidates[a].name.cmp(&candidates[b].name));
        }
        indices.truncate(count);
    }
    indices
}

fn candidate_report(
    inputs: &Inputs<'_>,
    tiers: &[usize],
    candidate: &Candidate,
    entry: &Entry,
    rank: Option<usize>,
) -> ClusterReport {
    let name = candidate.name.clone();
    if let Status::Rejected { plugin, reason, .. } = &entry.status {
        return ClusterReport {
            name,
            outcome: Outcome::Rejected,
            plugin: Some(plugin.to_string()),
            reason: format!("rejected by {plugin}: {reason}"),
            rank: None,
            total: Vec::new(),
            scores: Vec::new(),
        };
    }
    // One buffer per reason: this runs for every candidate of every decision, and
    // separate strings per part showed up as a third of a 10,000-cluster decision.
    let mut reason = String::with_capacity(128);
    let outcome = match entry.status {
        Status::Kept => {
            reason.push_str("kept: a current decision that still passes every filter; ");
            Outcome::Picked
        }
        Status::Picked => {
            reason.push_str("picked: ");
            Outcome::Picked
        }
        Status::Dropped => {
            reason.push_str("not picked: a current decision dropped because only ");
            push_wanted(&mut reason, inputs.wanted);
            reason.push_str(" wanted; ");
            Outcome::NotPicked
        }
        _ => {
            reason.push_str("not picked: ");
            push_wanted(&mut reason, inputs.wanted);
            reason.push_str(" wanted; ");
            Outcome::NotPicked
        }
    };
    match rank {
        Some(rank) => {
            let _ = write!(reason, "rank {rank}");
        }
        None => reason.push_str("unranked"),
    }
    push_score(&mut reason, inputs.scorers, tiers, entry);
    if let (Outcome::Picked, Some(until)) = (outcome, entry.until) {
        let _ = write!(reason, "; passes only until {until}");
    }
    ClusterReport {
        name,
        outcome,
        plugin: None,
        reason,
        rank,
        total: tiers.iter().map(|&t| entry.total[t]).collect(),
        scores: entry.scores.clone(),
    }
}

fn push_wanted(reason: &mut String, wanted: Option<usize>) {
    match wanted {
        Some(wanted) => {
            let _ = write!(reason, "{wanted}");
        }
        None => reason.push_str("all"),
    }
}

/// Appends `, score 200 (Balance 100×1, Steady 100×1)`, or nothing when no scorer ran.
fn push_score(reason: &mut String, scorers: &[ActiveScorer], tiers: &[usize], entry: &Entry) {
    if scorers.is_empty() || entry.scores.is_empty() {
        return;
    }
    reason.push_str(", score ");
    if let [tier] = tiers {
        let _ = write!(reason, "{}", entry.total[*tier]);
    } else {
        reason.push('[');
        for (i, &tier) in tiers.iter().enumerate() {
            let separator = if i == 0 { "" } else { ", " };
            let _ = write!(reason, "{separator}{}", entry.total[tier]);
        }
        reason.push(']');
    }
    reason.push_str(" (");
    for (i, (scorer, score)) in scorers.iter().zip(&entry.scores).enumerate() {
        let separator = if i == 0 { "" } else { ", " };
        let _ = write!(reason, "{separator}{} {}×{}", scorer.name, score.normalised, scorer.weight);
    }
    reason.push(')');
}

fn gone_report(name: &str) -> ClusterReport {
    ClusterReport {
        name: name.to_string(),
        outcome: Outcome::Gone,
        plugin: None,
        reason: "removed: a current decision that is no longer a candidate".to_string(),
        rank: None,
        total: Vec::new(),
        scores: Vec::new(),
    }
}

/// The current decisions that are no longer candidates, sorted. The ledger marks the
/// candidates that are current, so only those are looked up, not every candidate's name
/// (a set of a thousand names per decision, most of them never asked for).
fn gone<'a>(inputs: &Inputs<'a>) -> BTreeSet<&'a str> {
    let still: HashSet<&str> =
        inputs.candidates.iter().zip(inputs.entries).filter(|(_, e)| e.current).map(|(c, _)| c.name.as_str()).collect();
    inputs.state.current.iter().map(String::as_str).filter(|n| !still.contains(n)).collect()
}

/// Fixed names that are not among the candidates, sorted.
fn missing(policy: &Policy, candidates: &[Candidate]) -> Vec<String> {
    match &policy.number {
        Number::Fixed(fixed) => {
            let names: HashSet<&str> = candidates.iter().map(|c| c.name.as_str()).collect();
            let missing: BTreeSet<&String> = fixed.iter().filter(|n| !names.contains(n.as_str())).collect();
            missing.into_iter().cloned().collect()
        }
        Number::All | Number::N(_) => Vec::new(),
    }
}
