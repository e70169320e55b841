//! Balance (OCM prioritizer): clusters carrying fewer decisions of other placements
//! score higher.
//!
//! OCM's formula, kept exactly, truncation included: a cluster no other placement
//! picked scores 100; otherwise, with `usage = count / max count over all clusters`, it
//! scores `2 * trunc(100 * (0.5 - usage))`, so the busiest cluster scores −100. The
//! maximum is taken over every cluster with decisions, not only the candidates, because
//! OCM counts all PlacementDecisions.

use super::{Context, Scorer, Subject};
use std::collections::BTreeMap;

pub(super) struct Balance<'a> {
    counts: &'a BTreeMap<String, u64>,
    max_count: u64,
}

pub(super) fn prepare<'a>(context: &Context<'a>) -> Balance<'a> {
    let counts = &context.state.other_decisions;
    Balance { counts, max_count: counts.values().copied().max().unwrap_or(0) }
}

impl Scorer for Balance<'_> {
    fn raw(&self, subject: Subject<'_>) -> Option<f64> {
        Some(self.counts.get(&subject.candidate.name).copied().unwrap_or(0) as f64)
    }

    fn normalise(&self, raw: &[Option<f64>]) -> Vec<i64> {
        raw.iter()
            .map(|r| {
                let count = r.unwrap_or(0.0);
                if count <= 0.0 || self.max_count == 0 {
                    return 100;
                }
                let usage = count / self.max_count as f64;
                // `as i64` truncates toward zero, as Go's int64() conversion does.
                2 * (100.0 * (0.5 - usage)) as i64
            })
            .collect()
    }
}
