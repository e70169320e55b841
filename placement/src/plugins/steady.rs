//! Steady (OCM prioritizer): the placement's current decisions score 100, everything else
//! 0, so that with equal other scores a decision does not move. Fleet's profile uses it
//! as its last-resort preference for clusters it already picked.

use super::{Scorer, Subject};

pub(super) struct Steady;

impl Scorer for Steady {
    fn raw(&self, subject: Subject<'_>) -> Option<f64> {
        Some(if subject.current { 1.0 } else { 0.0 })
    }

    fn normalise(&self, raw: &[Option<f64>]) -> Vec<i64> {
        raw.iter().map(|r| if r.unwrap_or(0.0) > 0.0 { 100 } else { 0 }).collect()
    }
}
