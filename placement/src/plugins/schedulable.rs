//! Schedulable: whether a candidate can take workloads at all.
//!
//! kcp's SyncTarget rules, which Fleet's member eligibility shares the first of: a
//! candidate that is not Ready takes nothing and loses what it has; one past its
//! `evictAfter` loses everything (kcp keeps a target only while now is before
//! evictAfter); one marked `unschedulable` takes no new workloads but keeps its current
//! ones, as the SyncTarget API documents. A future evictAfter passes until that moment,
//! so the controller knows when to look again.

use jiff::Timestamp;

use super::{Context, Filter, Subject, Verdict};

pub(super) struct Schedulable {
    now: Timestamp,
}

pub(super) fn prepare(context: &Context<'_>) -> Schedulable {
    Schedulable { now: context.state.now }
}

impl Filter for Schedulable {
    fn check(&self, subject: Subject<'_>) -> Verdict {
        let candidate = subject.candidate;
        if !candidate.ready {
            return Verdict::reject("not Ready");
        }
        if let Some(evict_after) = candidate.evict_after {
            if evict_after <= self.now {
                return Verdict::reject(format!("evicting since {evict_after}"));
            }
        }
        if candidate.unschedulable && !subject.current {
            return Verdict::reject("unschedulable: takes no new workloads");
        }
        match candidate.evict_after {
            Some(evict_after) => Verdict::PassUntil(evict_after),
            None => Verdict::Pass,
        }
    }
}
