//! What a decision returns: the desired set, the change against the current set, and a
//! report per cluster that says why it was picked or rejected, by which plugin, with
//! which scores. Controllers write these reasons into conditions and events, so a
//! placement that cannot progress explains itself.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// The outcome of one decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// The picked names, best first: the first round's picks and kept current decisions
    /// ordered by score, then one pick per later round (topology spread) in pick order.
    /// kcp's single Location or SyncTarget is `desired[0]`.
    pub desired: Vec<String>,
    /// The change from the current decisions to `desired`.
    pub bind: Bind,
    /// How many the policy asked for: `None` for all, the number of names for fixed names.
    pub wanted: Option<usize>,
    /// How many of `wanted` could not be picked.
    pub unsatisfied: usize,
    /// Fixed names that are not among the candidates at all.
    pub missing: Vec<String>,
    /// The earliest moment a picked candidate stops passing (a toleration runs out, an
    /// eviction starts): decide again then.
    pub requeue_at: Option<Timestamp>,
    /// Things to surface that did not stop the decision (stale add-on scores).
    pub warnings: Vec<String>,
    /// The scorers that ran, in the order of every report's `scores`.
    pub scorers: Vec<ScorerSummary>,
    /// One report per candidate (or per candidate that [`Reports`] names), and per
    /// current decision that is no longer a candidate, sorted by name.
    pub clusters: Vec<ClusterReport>,
}

/// The change from current to desired decisions, each list sorted by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bind {
    /// Picked, not currently decided.
    pub add: Vec<String>,
    /// Picked and currently decided.
    pub keep: Vec<String>,
    /// Currently decided, not picked.
    pub remove: Vec<String>,
}

/// A scorer that ran, with its effective weight and tier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScorerSummary {
    /// The plugin's name (OCM's prioritizer name where it has one).
    pub plugin: String,
    /// The weight the normalised score is multiplied by.
    pub weight: i64,
    /// The tier the weighted score is added to.
    pub tier: usize,
}

/// What happened to one cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// In the desired set.
    Picked,
    /// Passed every filter but ranked below the cut.
    NotPicked,
    /// Failed a filter.
    Rejected,
    /// A current decision that is no longer a candidate.
    Gone,
}

/// The account of one cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterReport {
    /// The cluster's name.
    pub name: String,
    /// What happened to it.
    pub outcome: Outcome,
    /// The filter that rejected it, for `Rejected`.
    pub plugin: Option<String>,
    /// A sentence for humans: why it was picked, not picked or rejected.
    pub reason: String,
    /// Its position among the feasible clusters (1 = best), if it was ranked.
    pub rank: Option<usize>,
    /// Its weighted score per tier in use, most significant first.
    pub total: Vec<i64>,
    /// Per scorer (in `Decision::scorers` order): raw and normalised scores; empty if
    /// it was never scored.
    pub scores: Vec<PluginScore>,
}

/// One scorer's opinion of one cluster.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginScore {
    /// The plugin's raw measure (a count, an allocatable amount, a summed weight);
    /// `None` when the cluster has no data for it.
    pub raw: Option<f64>,
    /// The normalised score, before weighting.
    pub normalised: i64,
}

/// Which clusters a decision writes a report for.
///
/// A report costs a sentence and a copy of the scores, and a controller that decides a
/// thousand placements over a thousand members reads a few reports of each: the picked
/// clusters' scores and the first few clusters it could not use. A decision always
/// reports on the clusters it picks and on every current decision, whatever became of it
/// (pacing reads why a current cluster leaves, and a gone one is only ever current); of
/// the others, on the first `not_picked` that passed every filter and the first
/// `rejected`, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reports {
    /// How many of the clusters that passed but were not picked.
    pub not_picked: usize,
    /// How many of the clusters that failed a filter.
    pub rejected: usize,
}

impl Reports {
    /// A report on every candidate: what [`crate::decide`] writes.
    pub const ALL: Reports = Reports { not_picked: usize::MAX, rejected: usize::MAX };
}

impl Decision {
    /// Cuts a decision down to the reports `reports` names, given the placement's
    /// `current` decisions: what [`crate::decide_reporting`] gives without building the
    /// reports it would cut. The order by name stays; the vector is collected anew, so
    /// the room of the cut reports goes too.
    pub fn keep_reports(&mut self, reports: Reports, current: &[String]) {
        if reports == Reports::ALL {
            return;
        }
        let always: std::collections::HashSet<&str> = self.desired.iter().chain(current).map(String::as_str).collect();
        let (mut not_picked, mut rejected) = (0, 0);
        let kept: Vec<ClusterReport> = std::mem::take(&mut self.clusters)
            .into_iter()
            .filter(|report| {
                if always.contains(report.name.as_str()) {
                    return true;
                }
                let (seen, limit) = match report.outcome {
                    Outcome::NotPicked => (&mut not_picked, reports.not_picked),
                    Outcome::Rejected => (&mut rejected, reports.rejected),
                    Outcome::Picked | Outcome::Gone => return true,
                };
                *seen += 1;
                *seen <= limit
            })
            .collect();
        self.clusters = kept;
    }

    /// The report of the named cluster.
    pub fn report(&self, name: &str) -> Option<&ClusterReport> {
        self.clusters.binary_search_by(|r| r.name.as_str().cmp(name)).ok().map(|i| &self.clusters[i])
    }

    /// The named cluster's score from the named scorer.
    pub fn score(&self, cluster: &str, scorer: &str) -> Option<PluginScore> {
        let position = self.scorers.iter().position(|s| s.plugin == scorer)?;
        self.report(cluster)?.scores.get(position).copied()
    }
}
