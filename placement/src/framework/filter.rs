//! The filter stage: every active filter judges every candidate, in the profile's order,
//! and the first rejection is the one recorded.
//!
//! Filters whose verdict cannot change within a decision run once, over all candidates.
//! Filters that depend on earlier picks (topology spread) are prepared once too, but run
//! every round over the candidates still in the pool, after being told the picks so far;
//! their rejections are provisional, and the next round judges those candidates again.
//!
//! Filters see a current decision as current (some exempt it: Fleet's NoSchedule taints,
//! unschedulable marks, OCM's NoSelectIfNew) unless the state asks to reconsider.

use super::ledger::{Entry, Status};
use crate::candidate::Candidate;
use crate::error::Error;
use crate::plugins::{Context, Filter, FilterPlugin, Subject, Verdict};
use crate::policy::{Number, Policy};
use crate::profile::Profile;

/// Prepared filters with the names their rejections carry.
pub(super) type Prepared<'a> = Vec<(&'static str, Box<dyn Filter + 'a>)>;

/// The profile's filters that apply to this policy.
pub(super) fn active<'p>(profile: &'p Profile, policy: &Policy) -> Vec<&'p FilterPlugin> {
    let fixed = matches!(policy.number, Number::Fixed(_));
    profile.filters.iter().filter(|entry| !(fixed && entry.skip_for_fixed_names)).map(|entry| &entry.plugin).collect()
}

/// Runs the filters that do not depend on picks over every candidate.
pub(super) fn run_static(filters: &[&FilterPlugin], context: &Context<'_>, entries: &mut [Entry]) -> Result<(), Error> {
    let prepared = prepare(filters.iter().filter(|f| !f.depends_on_picks()), context)?;
    let exempt = !context.state.reconsider;
    for (index, (entry, candidate)) in entries.iter_mut().zip(context.candidates).enumerate() {
        judge(&prepared, entry, Subject { index, candidate, current: exempt && entry.current }, false);
    }
    Ok(())
}

/// Prepares the filters that depend on picks, once for all rounds.
pub(super) fn prepare_dynamic<'a>(filters: &[&FilterPlugin], context: &Context<'a>) -> Result<Prepared<'a>, Error> {
    prepare(filters.iter().filter(|f| f.depends_on_picks()), context)
}

/// Runs the filters that depend on picks over the pool, after clearing the provisional
/// rejections of the previous round.
pub(super) fn run_dynamic(
    prepared: &mut Prepared<'_>,
    exempt: bool,
    placed: &[bool],
    candidates: &[Candidate],
    entries: &mut [Entry],
    pool: &[usize],
) {
    for (_, filter) in prepared.iter_mut() {
        filter.begin_round(placed);
    }
    for &index in pool {
        let entry = &mut entries[index];
        if matches!(entry.status, Status::Rejected { retry: true, .. }) {
            entry.status = Status::Feasible;
        }
        let current = exempt && entry.current;
        judge(prepared, entry, Subject { index, candidate: &candidates[index], current }, true);
    }
}

fn prepare<'f, 'a>(
    filters: impl Iterator<Item = &'f &'f FilterPlugin>,
    context: &Context<'a>,
) -> Result<Prepared<'a>, Error> {
    filters.map(|f| Ok((f.name(), f.prepare(context)?))).collect()
}

fn judge(prepared: &Prepared<'_>, entry: &mut Entry, subject: Subject<'_>, retry: bool) {
    if entry.status != Status::Feasible {
        return;
    }
    for (plugin, filter) in prepared {
        match filter.check(subject) {
            Verdict::Pass => {}
            Verdict::PassUntil(deadline) => entry.tighten_until(deadline),
            Verdict::Reject(reason) => {
                entry.status = Status::Rejected { plugin, reason, retry };
                return;
            }
        }
    }
}
