//! One decision, stage by stage.
//!
//! 1. **filter** (`filter`): every candidate through the profile's filters; the first
//!    rejection, with its reason, is recorded in the ledger (`ledger`).
//! 2. **keep**: sticky profiles keep the current decisions that passed (unless the state
//!    asks to reconsider them).
//! 3. rounds, until the policy's number is reached or nothing more can be picked:
//!    - **batch** (`batch`): how many this round may pick (one at a time under spread
//!      constraints, otherwise all that are wanted);
//!    - filters that depend on earlier picks run again over the pool;
//!    - **score** and **normalise** (`score`, with weights from `weights`);
//!    - **sort** (`rank`): by score tier by tier, then the profile's tie-break;
//!    - **select**: the best of the pool, up to the batch. In the first round, kept
//!      decisions beyond the wanted number are dropped, worst first.
//! 4. **bind** (`bind`): desired against current, as add / keep / remove.
//! 5. the report (`report`): a reason for every candidate, or for those the caller reads
//!    (`Reports`).
//!
//! Every stage is a pure function of the profile, policy, candidates and state, and the
//! sort order is total, so the same inputs give the same decision in any process.

mod batch;
mod bind;
mod filter;
mod ledger;
mod rank;
mod report;
mod score;
mod weights;

use std::collections::HashSet;

use crate::candidate::Candidate;
use crate::decision::{Decision, Reports};
use crate::error::Error;
use crate::plugins::{Context, FilterPlugin, Scorer};
use crate::policy::{Number, Policy, State};
use crate::profile::{Profile, TIERS};
use ledger::{Entry, Status};
use rank::Ranker;
use score::{Rescore, Scoring};
use weights::ActiveScorer;

pub(crate) use bind::diff;

/// Decides where a placement goes: which of `candidates` the `policy` picks under
/// `profile`, starting from `state`, with a report on every candidate.
pub fn decide(profile: &Profile, policy: &Policy, candidates: &[Candidate], state: &State) -> Result<Decision, Error> {
    decide_reporting(profile, policy, candidates, state, Reports::ALL)
}

/// [`decide`], reporting only on the clusters `reports` names: the same decision that
/// [`Decision::keep_reports`] would cut [`decide`]'s to, without building the reports it
/// would throw away (most of a decision's time after the framework's own stages, when a
/// fleet has a thousand members and the caller reads a few dozen of their reports).
pub fn decide_reporting(
    profile: &Profile,
    policy: &Policy,
    candidates: &[Candidate],
    state: &State,
    reports: Reports,
) -> Result<Decision, Error> {
    validate(profile, policy)?;
    let context = Context { policy, state, candidates };
    let scorers = weights::resolve(profile, &context)?;
    let filters = filter::active(profile, policy);
    let limit = batch::limit(&filters, &scorers, &context);
    let wanted = batch::wanted(policy);
    let mut decider = Decider::new(profile, context, &scorers)?;
    filter::run_static(&filters, &context, &mut decider.entries)?;
    decider.dynamic_filters = filter::prepare_dynamic(&filters, &context)?;
    if profile.keep_current && !state.reconsider {
        decider.keep_current();
    }
    let mut rescore = Rescore::All;
    loop {
        let taken = decider.round(rescore, wanted, limit)?;
        rescore = Rescore::DependingOnPicks;
        // Every round either picks at least one candidate or ends the loop, so there are
        // at most as many rounds as candidates.
        if taken == 0 || wanted.is_some_and(|w| decider.desired.len() >= w) {
            break;
        }
    }
    Ok(decider.finish(wanted, reports))
}

/// Refuses profiles that cannot run the policy.
fn validate(profile: &Profile, policy: &Policy) -> Result<(), Error> {
    let invalid = |message: String| Error::InvalidProfile { profile: profile.name.clone(), message };
    if let Some(entry) = profile.scorers.iter().find(|s| s.tier >= TIERS) {
        return Err(invalid(format!(
            "scorer {} has tier {}, tiers go up to {}",
            entry.plugin.name(),
            entry.tier,
            TIERS - 1
        )));
    }
    if profile.prioritizer_tier.is_some_and(|tier| tier >= TIERS) {
        return Err(invalid(format!("prioritizer tier must be below {TIERS}")));
    }
    let has_fixed_names = profile.filters.iter().any(|f| f.plugin == FilterPlugin::FixedNames);
    if matches!(policy.number, Number::Fixed(_)) && !has_fixed_names {
        return Err(invalid("the policy picks fixed names, and the profile has no FixedNames filter".to_string()));
    }
    Ok(())
}

/// The working state of one decision.
struct Decider<'a> {
    context: Context<'a>,
    scorers: &'a [ActiveScorer],
    /// Prepared in the first round, over the candidates it scores.
    prepared_scorers: Vec<Box<dyn Scorer + 'a>>,
    dynamic_filters: filter::Prepared<'a>,
    ranker: Ranker<'a>,
    /// Orders kept decisions when a downscale trims them (the profile's trim tie-break).
    trimmer: Ranker<'a>,
    entries: Vec<Entry>,
    /// Per candidate: in the desired set so far (what spread constraints count).
    placed: Vec<bool>,
    /// The desired set, best first.
    desired: Vec<usize>,
    /// Feasible candidates of the last round that were not picked.
    passed_over: Vec<usize>,
    warnings: Vec<String>,
}

impl<'a> Decider<'a> {
    fn new(profile: &Profile, context: Context<'a>, scorers: &'a [ActiveScorer]) -> Result<Self, Error> {
        let current: HashSet<&str> = context.state.current.iter().map(String::as_str).collect();
        let mut seen = HashSet::with_capacity(context.candidates.len());
        let mut entries = Vec::with_capacity(context.candidates.len());
        for candidate in context.candidates {
            if !seen.insert(candidate.name.as_str()) {
                return Err(Error::DuplicateCandidate(candidate.name.clone()));
            }
            entries.push(Entry::new(current.contains(candidate.name.as_str())));
        }
        Ok(Decider {
            context,
            scorers,
            prepared_scorers: Vec::new(),
            dynamic_filters: Vec::new(),
            ranker: Ranker::new(profile.tie_break, &context.policy.tie_break_key, context.candidates),
            trimmer: Ranker::new(
                profile.trim_tie_break.unwrap_or(profile.tie_break),
                &context.policy.tie_break_key,
                context.candidates,
            ),
            entries,
            placed: vec![false; context.candidates.len()],
            desired: Vec::new(),
            passed_over: Vec::new(),
            warnings: Vec::new(),
        })
    }

    /// Marks the current decisions that passed every filter as kept.
    fn keep_current(&mut self) {
        for (index, entry) in self.entries.iter_mut().enumerate() {
            if entry.current && entry.status == Status::Feasible {
                entry.status = Status::Kept;
                self.placed[index] = true;
                self.desired.push(index);
            }
        }
    }

    /// One round: re-filter the pool, score, sort, select. Returns how many it picked.
    fn round(&mut self, rescore: Rescore, wanted: Option<usize>, limit: usize) -> Result<usize, Error> {
        let mut pool: Vec<usize> =
            (0..self.entries.len()).filter(|&i| !self.placed[i] && self.entries[i].in_pool()).collect();
        if rescore == Rescore::All {
            // Scored before the pick-dependent filters run, so that a candidate they turn
            // away now but admit in a later round already has the scores that only the
            // first round computes.
            let mut scored = pool.clone();
            scored.extend(self.desired.iter().copied());
            self.prepared_scorers = score::prepare(self.scorers, &self.context, &scored)?;
            self.warnings = self.prepared_scorers.iter().flat_map(|s| s.warnings()).collect();
            self.score(rescore, &scored);
        }
        let candidates = self.context.candidates;
        let exempt = !self.context.state.reconsider;
        filter::run_dynamic(&mut self.dynamic_filters, exempt, &self.placed, candidates, &mut self.entries, &pool);
        pool.retain(|&i| self.entries[i].status == Status::Feasible);
        if rescore == Rescore::DependingOnPicks {
            self.score(rescore, &pool);
        }
        if rescore == Rescore::All {
            self.trim_kept(wanted);
        }
        let room = wanted.map_or(usize::MAX, |w| w.saturating_sub(self.desired.len()));
        let taken = room.min(limit).min(pool.len());
        self.ranker.select_best(&mut pool, taken, &self.entries);
        for &index in &pool[..taken] {
            self.entries[index].status = Status::Picked;
            self.placed[index] = true;
        }
        self.desired.extend_from_slice(&pool[..taken]);
        if rescore == Rescore::All {
            // Kept and newly picked were scored together: order them as one set.
            self.ranker.sort(&mut self.desired, &self.entries);
        }
        self.passed_over = pool.split_off(taken);
        Ok(taken)
    }

    fn score(&mut self, rescore: Rescore, indices: &[usize]) {
        let scoring = Scoring {
            scorers: self.scorers,
            prepared: &mut self.prepared_scorers,
            rescore,
            placed: &self.placed,
            candidates: self.context.candidates,
        };
        score::run(scoring, indices, &mut self.entries);
    }

    /// Drops kept decisions when the policy now wants fewer (Fleet's downscale; kcp's
    /// N = 1 with two current targets): the unsettled ones first, worst first, then the
    /// settled ones (`State::settled`), worst first; equal ones in the reverse of the
    /// profile's trim tie-break.
    fn trim_kept(&mut self, wanted: Option<usize>) {
        self.ranker.sort(&mut self.desired, &self.entries);
        let Some(wanted) = wanted else {
            return;
        };
        if self.desired.len() <= wanted {
            return;
        }
        self.trimmer.sort(&mut self.desired, &self.entries);
        let settled: HashSet<&str> = self.context.state.settled.iter().map(String::as_str).collect();
        let candidates = self.context.candidates;
        // Settled first, each part still best first: the tail is what goes.
        let (mut kept, unsettled): (Vec<usize>, Vec<usize>) =
            self.desired.iter().partition(|&&i| settled.contains(candidates[i].name.as_str()));
        kept.extend(unsettled);
        for &index in &kept[wanted..] {
            self.entries[index].status = Status::Dropped;
            self.placed[index] = false;
        }
        kept.truncate(wanted);
        self.ranker.sort(&mut kept, &self.entries);
        self.desired = kept;
    }

    fn finish(mut self, wanted: Option<usize>, reports: Reports) -> Decision {
        let mut others: Vec<usize> = self.passed_over.clone();
        others.extend((0..self.entries.len()).filter(|&i| self.entries[i].status == Status::Dropped));
        self.ranker.sort(&mut others, &self.entries);
        self.warnings.sort();
        self.warnings.dedup();
        report::build(report::Inputs {
            policy: self.context.policy,
            state: self.context.state,
            candidates: self.context.candidates,
            entries: &self.entries,
            scorers: self.scorers,
            desired: &self.desired,
            others: &others,
            wanted,
            warnings: self.warnings,
            reports,
        })
    }
}
