//! ResourceAllocatableCPU / ResourceAllocatableMemory (OCM prioritizers): clusters with
//! more allocatable of the resource score higher, scaled linearly onto −100..100 between
//! the smallest and largest allocatable among the clusters scored together.
//!
//! OCM's rules, kept exactly: a cluster scores only if it reports both allocatable and
//! capacity for the resource (others score 0 and do not count toward the extremes); the
//! score is `trunc(((v − min) / (max − min) − 0.5) × 2 × 100)`; when all reporting
//! clusters are equal, each scores 100.

use super::{Scorer, Subject};

pub(super) struct ResourceAllocatable {
    resource: &'static str,
}

pub(super) fn prepare(resource: &'static str) -> ResourceAllocatable {
    ResourceAllocatable { resource }
}

impl Scorer for ResourceAllocatable {
    fn raw(&self, subject: Subject<'_>) -> Option<f64> {
        let candidate = subject.candidate;
        let allocatable = candidate.allocatable.get(self.resource)?;
        candidate.capacity.get(self.resource)?;
        Some(allocatable.0)
    }

    fn normalise(&self, raw: &[Option<f64>]) -> Vec<i64> {
        let present = raw.iter().flatten().copied();
        let min = present.clone().fold(f64::INFINITY, f64::min);
        let max = present.fold(f64::NEG_INFINITY, f64::max);
        raw.iter()
            .map(|r| match r {
                None => 0,
                Some(_) if max - min == 0.0 => 100,
                Some(v) => (((v - min) / (max - min) - 0.5) * 2.0 * 100.0) as i64,
            })
            .collect()
    }
}
