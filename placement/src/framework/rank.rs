//! The sort stage: higher totals first, tier by tier, then the profile's tie-break, so
//! the order is total and a decision never depends on the order candidates arrive in.

use std::cmp::Ordering;

use super::ledger::Entry;
use crate::candidate::Candidate;
use crate::profile::TieBreak;
use crate::stable_hash::rendezvous_weight;

pub(super) struct Ranker<'a> {
    tie_break: TieBreak,
    candidates: &'a [Candidate],
    /// Rendezvous weights per candidate, computed once, for `TieBreak::StableHash`.
    hashes: Vec<u64>,
}

impl<'a> Ranker<'a> {
    pub(super) fn new(tie_break: TieBreak, key: &str, candidates: &'a [Candidate]) -> Ranker<'a> {
        let hashes = match tie_break {
            TieBreak::StableHash => candidates.iter().map(|c| rendezvous_weight(key, &c.name)).collect(),
            TieBreak::Name | TieBreak::NameDescending => Vec::new(),
        };
        Ranker { tie_break, candidates, hashes }
    }

    /// Sorts candidate indices best first.
    pub(super) fn sort(&self, indices: &mut [usize], entries: &[Entry]) {
        indices.sort_unstable_by(|&a, &b| self.compare(a, b, entries));
    }

    /// Moves the best `count` indices to the front, in order; the rest stay unordered.
    /// Linear rather than a full sort, because under spread constraints every round
    /// selects one candidate from thousands.
    pub(super) fn select_best(&self, indices: &mut [usize], count: usize, entries: &[Entry]) {
        if count == 0 {
            return;
        }
        if count < indices.len() {
            indices.select_nth_unstable_by(count - 1, |&a, &b| self.compare(a, b, entries));
        }
        let best = count.min(indices.len());
        indices[..best].sort_unstable_by(|&a, &b| self.compare(a, b, entries));
    }

    /// `Less` when `a` ranks before `b`.
    fn compare(&self, a: usize, b: usize, entries: &[Entry]) -> Ordering {
        let by_score = entries[b].total.cmp(&entries[a].total);
        let name_a = &self.candidates[a].name;
        let name_b = &self.candidates[b].name;
        by_score.then_with(|| match self.tie_break {
            TieBreak::Name => name_a.cmp(name_b),
            TieBreak::NameDescending => name_b.cmp(name_a),
            TieBreak::StableHash => self.hashes[b].cmp(&self.hashes[a]).then_with(|| name_a.cmp(name_b)),
        })
    }
}
