//! TopologySpread: spread picks evenly over the values (domains) of a topology key.
//!
//! Fleet's algorithm, shared by Fleet's topologySpreadConstraints and OCM's spreadPolicy
//! (which OCM declares but never enforces). Domains are the values of the key among all
//! candidates; each domain counts the candidates this decision has placed in it so far
//! (current decisions kept, and earlier picks of this decision). Adding a pick to a
//! domain changes the skew (largest count − smallest) by +1 when every domain is level
//! or the domain is a largest one, by −1 when it is the only smallest one, otherwise not
//! at all. A DoNotSchedule constraint filters out a candidate whose pick would leave the
//! skew above maxSkew; every constraint scores −(skew change), and a violated
//! ScheduleAnyway constraint scores −1000 instead. A candidate without the key is outside
//! the spread: it passes and scores 0. Because every pick changes the counts, the
//! framework picks one candidate per round while spread constraints apply (only when
//! picking N, as in Fleet).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Context, Filter, Scorer, Subject, Verdict};
use crate::candidate::Candidate;
use crate::policy::{SpreadConstraint, TopologyKeyType, WhenUnsatisfiable};

/// The score of a pick that violates a ScheduleAnyway constraint (Fleet's penalty).
const SCHEDULE_ANYWAY_VIOLATION_SCORE: f64 = -1000.0;

pub(super) fn batch_limit(context: &Context<'_>) -> Option<usize> {
    context.spread_applies().then_some(1)
}

/// One constraint: every candidate's domain, interned once per decision, and the counts
/// of the current round.
struct Domains<'a> {
    constraint: &'a SpreadConstraint,
    max_skew: usize,
    /// Domain values, indexed by domain number.
    values: Vec<&'a str>,
    /// Per candidate index, its domain number, if it has the key.
    domain_of: Vec<Option<usize>>,
    /// Per domain number, how many placed candidates it holds this round.
    counts: Vec<usize>,
    /// Per domain number, this round: the reason a DoNotSchedule constraint turns away a
    /// pick there, if it does. Computed once per domain, not per candidate.
    violations: Vec<Option<Arc<str>>>,
    smallest: usize,
    second_smallest: usize,
    largest: usize,
}

pub(super) struct TopologySpread<'a> {
    /// Empty when spread does not apply to this policy.
    domains: Vec<Domains<'a>>,
}

pub(super) fn prepare_filter<'a>(context: &Context<'a>) -> Result<TopologySpread<'a>, String> {
    prepare(context)
}

pub(super) fn prepare_scorer<'a>(context: &Context<'a>) -> Result<TopologySpread<'a>, String> {
    prepare(context)
}

fn prepare<'a>(context: &Context<'a>) -> Result<TopologySpread<'a>, String> {
    if !context.spread_applies() {
        return Ok(TopologySpread { domains: Vec::new() });
    }
    let domains = context
        .policy
        .spread
        .iter()
        .map(|constraint| intern(context.candidates, constraint))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TopologySpread { domains })
}

fn key_value<'a>(candidate: &'a Candidate, constraint: &SpreadConstraint) -> Option<&'a str> {
    let values = match constraint.topology_key_type {
        TopologyKeyType::Label => &candidate.labels,
        TopologyKeyType::Claim => &candidate.claims,
    };
    values.get(&constraint.topology_key).map(String::as_str)
}

fn intern<'a>(candidates: &'a [Candidate], constraint: &'a SpreadConstraint) -> Result<Domains<'a>, String> {
    if constraint.topology_key.is_empty() {
        return Err("topologyKey must not be empty".to_string());
    }
    let max_skew = constraint.max_skew.unwrap_or(1);
    if max_skew == 0 {
        return Err(format!("topology key {:?}: maxSkew must be at least 1", constraint.topology_key));
    }
    let mut numbers: BTreeMap<&str, usize> = BTreeMap::new();
    let mut values = Vec::new();
    let domain_of = candidates
        .iter()
        .map(|candidate| {
            key_value(candidate, constraint).map(|value| {
                *numbers.entry(value).or_insert_with(|| {
                    values.push(value);
                    values.len() - 1
                })
            })
        })
        .collect();
    Ok(Domains {
        constraint,
        max_skew: usize::try_from(max_skew).unwrap_or(usize::MAX),
        counts: vec![0; values.len()],
        violations: vec![None; values.len()],
        values,
        domain_of,
        smallest: 0,
        second_smallest: 0,
        largest: 0,
    })
}

impl Domains<'_> {
    /// Recounts the placed candidates per domain.
    fn recount(&mut self, placed: &[bool]) {
        self.counts.iter_mut().for_each(|c| *c = 0);
        for (domain, &is_placed) in self.domain_of.iter().zip(placed) {
            if let (Some(domain), true) = (domain, is_placed) {
                self.counts[*domain] += 1;
            }
        }
        let mut sorted = self.counts.clone();
        sorted.sort_unstable();
        // Fleet keeps the smallest, second smallest and largest count; with two domains
        // of different counts the second smallest is the larger one.
        self.smallest = sorted.first().copied().unwrap_or(0);
        self.second_smallest = sorted.get(1).copied().unwrap_or(self.smallest);
        self.largest = sorted.last().copied().unwrap_or(0);
        let turns_away = self.constraint.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule;
        self.violations = (0..self.values.len())
            .map(|domain| (turns_away && self.evaluate(domain).0).then(|| self.violation(domain)))
            .collect();
    }

    fn violation(&self, domain: usize) -> Arc<str> {
        let key = &self.constraint.topology_key;
        format!(
            "violates DoNotSchedule topology spread constraint {key:?} (max skew {}): {key}={} already holds {} of the placed, the emptiest domain {}",
            self.max_skew, self.values[domain], self.counts[domain], self.smallest
        )
        .into()
    }

    /// Whether one more pick in `domain` leaves the skew above maxSkew, and by how much
    /// it changes the skew.
    fn evaluate(&self, domain: usize) -> (bool, i64) {
        let count = self.counts[domain];
        let skew = self.largest - self.smallest;
        if self.largest == self.smallest || count == self.largest {
            (skew + 1 > self.max_skew, 1)
        } else if count == self.smallest && self.smallest != self.second_smallest {
            (skew.saturating_sub(1) > self.max_skew, -1)
        } else {
            (skew > self.max_skew, 0)
        }
    }

    fn domain(&self, subject: &Subject<'_>) -> Option<usize> {
        self.domain_of.get(subject.index).copied().flatten()
    }
}

impl Filter for TopologySpread<'_> {
    fn begin_round(&mut self, placed: &[bool]) {
        self.domains.iter_mut().for_each(|d| d.recount(placed));
    }

    fn check(&self, subject: Subject<'_>) -> Verdict {
        for domains in &self.domains {
            let Some(domain) = domains.domain(&subject) else {
                continue;
            };
            if let Some(reason) = &domains.violations[domain] {
                return Verdict::Reject(Arc::clone(reason));
            }
        }
        Verdict::Pass
    }
}

impl Scorer for TopologySpread<'_> {
    fn begin_round(&mut self, placed: &[bool]) {
        self.domains.iter_mut().for_each(|d| d.recount(placed));
    }

    fn raw(&self, subject: Subject<'_>) -> Option<f64> {
        let mut score = 0.0;
        for domains in &self.domains {
            let Some(domain) = domains.domain(&subject) else {
                continue;
            };
            let (violated, skew_change) = domains.evaluate(domain);
            score += match domains.constraint.when_unsatisfiable {
                WhenUnsatisfiable::ScheduleAnyway if violated => SCHEDULE_ANYWAY_VIOLATION_SCORE,
                _ => -(skew_change as f64),
            };
        }
        Some(score)
    }
}
