//! The ledger: what the stages have found out about each candidate so far.
//!
//! Stages write here instead of passing filtered copies of the candidates along, so
//! that at the end every candidate, kept, picked, passed over or rejected, still has its
//! scores and the reason the report needs.

use std::sync::Arc;

use jiff::Timestamp;

use crate::decision::PluginScore;
use crate::profile::TIERS;

/// Where a candidate stands.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Status {
    /// Passed every filter so far; may still be picked.
    Feasible,
    /// Failed a filter. `retry` marks rejections by filters that depend on earlier picks,
    /// which are judged again in the next round.
    Rejected { plugin: &'static str, reason: Arc<str>, retry: bool },
    /// A current decision kept because it still passes (sticky profiles).
    Kept,
    /// Picked by this decision.
    Picked,
    /// A kept current decision cut because the policy now wants fewer.
    Dropped,
}

/// One candidate's line in the ledger.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub status: Status,
    /// Among the placement's current decisions.
    pub current: bool,
    /// Per active scorer, from the latest round that scored it; empty if never scored.
    pub scores: Vec<PluginScore>,
    /// Weighted sums per tier, from the same round.
    pub total: [i64; TIERS],
    /// The earliest moment a filter's pass runs out.
    pub until: Option<Timestamp>,
}

impl Entry {
    pub(super) fn new(current: bool) -> Entry {
        Entry { status: Status::Feasible, current, scores: Vec::new(), total: [0; TIERS], until: None }
    }

    /// Whether a later round may still pick it.
    pub(super) fn in_pool(&self) -> bool {
        matches!(self.status, Status::Feasible | Status::Rejected { retry: true, .. })
    }

    pub(super) fn tighten_until(&mut self, deadline: Timestamp) {
        self.until = Some(self.until.map_or(deadline, |u| u.min(deadline)));
    }
}
