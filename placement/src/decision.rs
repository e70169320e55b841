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
    /// One report per candidate, and per current decision that is no longer a candidate,
    /// sorted by name.
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

impl Decision {
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
