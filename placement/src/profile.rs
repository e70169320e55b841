//! Profiles: which plugins a dialect runs, in which order, with which weights, and how it
//! breaks ties.
//!
//! A profile is data, so every dialect is an assembly of the same plugins and a fixture
//! can name one (`Profile::named("ocm")`) or spell out its own. Scores are compared tier
//! by tier, most significant tier first (tier 0); inside a tier the weighted scores are
//! summed. OCM sums its weighted prioritizers in one tier; Fleet compares topology spread,
//! then affinity, then its preference for clusters it already picked, each in a tier of
//! its own, exactly as Fleet's `ClusterScore.Less` orders them.

use serde::{Deserialize, Serialize};

use crate::plugins::{FilterPlugin, ScorerPlugin, TaintSemantics};

/// How many score tiers a profile may use.
pub const TIERS: usize = 3;

/// A dialect's assembly of plugins.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Profile {
    /// For reports and errors.
    pub name: String,
    /// Filters, run in this order; the first to reject gives the reason.
    pub filters: Vec<FilterEntry>,
    /// Scorers with their default weights and tiers.
    #[serde(default)]
    pub scorers: Vec<ScorerEntry>,
    /// What orders candidates with equal scores.
    pub tie_break: TieBreak,
    /// What orders kept decisions with equal scores when the policy wants fewer of them
    /// (a downscale): the last in this order go first. `None`: the `tie_break`. Fleet's
    /// is `NameDescending`, so that of two equal clusters the smaller name is trimmed,
    /// as KubeFleet's downscale trims (`sortByClusterScoreAndName`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim_tie_break: Option<TieBreak>,
    /// Whether current decisions that still pass every filter are kept before anything
    /// new is picked (kcp and Fleet are sticky; OCM re-ranks everything and relies on its
    /// Steady prioritizer).
    #[serde(default)]
    pub keep_current: bool,
    /// When set, a policy's OCM prioritizerPolicy re-weights the scorers OCM names
    /// (Additive: over these defaults; Exact: instead of them), and prioritizers the
    /// policy adds join this tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prioritizer_tier: Option<usize>,
}

/// A filter in a profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FilterEntry {
    /// The plugin.
    pub plugin: FilterPlugin,
    /// Skip it when the policy picks fixed names (Fleet's PickFixed only checks that the
    /// named clusters exist and are eligible).
    #[serde(default)]
    pub skip_for_fixed_names: bool,
}

/// A scorer in a profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScorerEntry {
    /// The plugin.
    pub plugin: ScorerPlugin,
    /// Its weight; 0 disables it.
    pub weight: i64,
    /// Its tier, 0 (most significant) to `TIERS - 1`.
    #[serde(default)]
    pub tier: usize,
}

/// What orders candidates whose scores are equal in every tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TieBreak {
    /// Smaller name first (OCM's rule; kcp's and Fleet's in Atoll).
    Name,
    /// Larger name first: upstream Fleet's effective order (it sorts ascending by score,
    /// then name, and reverses the list), for reproducing its decisions.
    NameDescending,
    /// Highest rendezvous hash of the policy's tie-break key and the name first, then
    /// smaller name: stable across restarts and controllers, and spreads keys.
    StableHash,
}

fn filter(plugin: FilterPlugin) -> FilterEntry {
    FilterEntry { plugin, skip_for_fixed_names: false }
}

fn placement_filter(plugin: FilterPlugin) -> FilterEntry {
    FilterEntry { plugin, skip_for_fixed_names: true }
}

fn scorer(plugin: ScorerPlugin, weight: i64, tier: usize) -> ScorerEntry {
    ScorerEntry { plugin, weight, tier }
}

impl Profile {
    /// A built-in profile by name: `kcp-location`, `kcp-sync-target`, `fleet`, `ocm`.
    pub fn named(name: &str) -> Option<Profile> {
        match name {
            "kcp-location" => Some(Profile::kcp_location()),
            "kcp-sync-target" => Some(Profile::kcp_sync_target()),
            "fleet" => Some(Profile::fleet()),
            "ocm" => Some(Profile::ocm()),
            _ => None,
        }
    }

    /// kcp, first step: one Location for a Placement. Locations for the Placement's
    /// locationResource that match one of its locationSelectors (as required terms); the
    /// current choice is kept while it stays valid; otherwise the best score wins, then
    /// the highest stable hash of the placement key (the policy's tie-break key), then the
    /// name. The policy picks N = 1.
    pub fn kcp_location() -> Profile {
        Profile {
            name: "kcp-location".to_string(),
            filters: vec![filter(FilterPlugin::LocationResource), filter(FilterPlugin::RequiredTerms)],
            scorers: vec![scorer(ScorerPlugin::PreferredTerms, 1, 0)],
            tie_break: TieBreak::StableHash,
            trim_tie_break: None,
            keep_current: true,
            prioritizer_tier: None,
        }
    }

    /// kcp, second step: one SyncTarget of the chosen Location for a namespace. Targets
    /// the Location's instanceSelector matches (as a required term) that are Ready, not
    /// unschedulable (for a new pick), not evicting and support every API the workspace
    /// binds; the current target is kept while valid; otherwise the stable hash of the
    /// namespace key decides. The policy picks N = 1.
    pub fn kcp_sync_target() -> Profile {
        Profile {
            name: "kcp-sync-target".to_string(),
            filters: vec![
                filter(FilterPlugin::RequiredTerms),
                filter(FilterPlugin::Schedulable),
                filter(FilterPlugin::SupportedApis),
            ],
            scorers: vec![scorer(ScorerPlugin::PreferredTerms, 1, 0)],
            tie_break: TieBreak::StableHash,
            trim_tie_break: None,
            keep_current: true,
            prioritizer_tier: None,
        }
    }

    /// Fleet's default profile: fixed names, eligibility, required affinity, NoSchedule
    /// taints and DoNotSchedule spread filter; spread, preferred affinity and the
    /// preference for already picked clusters score, in that order of significance.
    /// Current decisions are kept while eligible and matching (taints do not evict them).
    /// Ties go to the smaller name (upstream Fleet prefers the larger; use
    /// `TieBreak::NameDescending` to reproduce it). Scaling down trims the smaller name
    /// of two equal clusters first, as KubeFleet's downscale does.
    pub fn fleet() -> Profile {
        Profile {
            name: "fleet".to_string(),
            filters: vec![
                filter(FilterPlugin::FixedNames),
                filter(FilterPlugin::Schedulable),
                placement_filter(FilterPlugin::RequiredTerms),
                placement_filter(FilterPlugin::TaintToleration(TaintSemantics::Fleet)),
                placement_filter(FilterPlugin::TopologySpread),
            ],
            scorers: vec![
                scorer(ScorerPlugin::TopologySpread, 1, 0),
                scorer(ScorerPlugin::PreferredTerms, 1, 1),
                scorer(ScorerPlugin::Steady, 1, 2),
            ],
            tie_break: TieBreak::Name,
            trim_tie_break: Some(TieBreak::NameDescending),
            keep_current: true,
            prioritizer_tier: None,
        }
    }

    /// OCM's scheduler: predicates and taints filter (plus spread, which OCM declares and
    /// Atoll enforces); Balance and Steady score with weight 1 by default, re-weighted by
    /// the placement's prioritizerPolicy; the weighted sum ranks, ties go to the smaller
    /// name. Nothing is kept by rule: Steady is how OCM keeps decisions stable.
    pub fn ocm() -> Profile {
        Profile {
            name: "ocm".to_string(),
            filters: vec![
                filter(FilterPlugin::RequiredTerms),
                filter(FilterPlugin::TaintToleration(TaintSemantics::Ocm)),
                filter(FilterPlugin::TopologySpread),
            ],
            scorers: vec![
                scorer(ScorerPlugin::TopologySpread, 1, 0),
                scorer(ScorerPlugin::Balance, 1, 1),
                scorer(ScorerPlugin::Steady, 1, 1),
            ],
            tie_break: TieBreak::Name,
            trim_tie_break: None,
            keep_current: false,
            prioritizer_tier: Some(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Profile;

    #[test]
    fn built_in_profiles_are_found_by_name() {
        for name in ["kcp-location", "kcp-sync-target", "fleet", "ocm"] {
            let profile = Profile::named(name).expect("built-in profile");
            assert_eq!(profile.name, name);
        }
        assert!(Profile::named("karmada").is_none());
    }
}
