//! Atoll's scheduling framework: one pure decision procedure that kcp's TMC placement,
//! Fleet's ClusterResourcePlacement and OCM's Placement all use.
//!
//! A controller gathers candidates (`candidate`: clusters, Locations or SyncTargets with
//! their labels, claims, properties, taints and readiness), translates its placement
//! object into a dialect-neutral `policy`, picks its dialect's `profile`, and calls
//! [`decide`]. Nothing here does I/O, reads a clock or spawns anything: the same inputs
//! give the same [`Decision`] in any process, which is what lets a restarted or second
//! controller agree with the first.
//!
//! In the order a decision meets them:
//!
//! - `selector` and `quantity`: label, claim and property selectors and the Kubernetes
//!   quantities properties are written in, compiled once per decision.
//! - `plugins`: filters (fixed names, schedulability, required terms, taints, supported
//!   APIs, location resource, topology spread) and scorers (preferred terms, Balance,
//!   Steady, ResourceAllocatable CPU/memory, add-on scores, topology spread). Each is one
//!   file; `plugins/mod.rs` dispatches from a profile's plugin names to them.
//! - `framework`: the stages (filter, keep, batch, score, normalise, sort, select, bind)
//!   and the report with a reason for every candidate, or, through
//!   [`decide_reporting`], for those the caller reads ([`Reports`]).
//! - `decision`: what comes out.
//! - [`pace`]: how fast a placement may leave clusters that still qualify (damping of
//!   score churn, disruption budgets, opt-in rescheduling, rebalance requests).
//! - `pages`: OCM's decision pages laid out and written so that no cluster that stays
//!   chosen ever vanishes from them while they are rewritten (ocm#1346); `groups`:
//!   OCM's decision groups over those pages, so that a cluster moving from one group to
//!   another never vanishes either.
//! - `sync_target_key`: kcp's SyncTarget key (base62 SHA-224), which namespace labels
//!   carry; `stable_hash`: the rendezvous hash kcp profiles break ties with.
//!
//! Profiles: `kcp-location` (one Location per Placement), `kcp-sync-target` (one
//! SyncTarget per namespace within it), `fleet`, `ocm`; see [`Profile`].

#![forbid(unsafe_code)]

mod candidate;
mod decision;
mod error;
mod framework;
mod groups;
pub mod pace;
mod pages;
mod plugins;
mod policy;
mod profile;
mod quantity;
mod selector;
mod stable_hash;
mod sync_target_key;

pub use candidate::{AddOnScores, ApiIdentity, Candidate, Taint, TaintEffect};
pub use decision::{Bind, ClusterReport, Decision, Outcome, PluginScore, Reports, ScorerSummary};
pub use error::Error;
pub use framework::{decide, decide_reporting};
pub use groups::{
    apply_group_writes, decision_groups, group_length, plan_groups, ClustersPerGroup, DecisionGroup, GroupPage,
    GroupPageWrite, GroupPlan, GroupSelection,
};
pub use pages::{apply as apply_pages, plan as plan_pages, Page, PagePlan, PageWrite, CLUSTERS_PER_PAGE};
pub use plugins::{FilterPlugin, ScorerPlugin, TaintSemantics};
pub use policy::{
    AddOnCoordinate, Number, Policy, Preference, PreferredTerm, PrioritizerConfig, PrioritizerMode, PrioritizerPolicy,
    PropertySorter, ScoreCoordinate, ScoreCoordinateType, SelectorTerm, SortOrder, SpreadConstraint, State, Toleration,
    TolerationOperator, TopologyKeyType, WhenUnsatisfiable,
};
pub use profile::{FilterEntry, Profile, ScorerEntry, TieBreak, TIERS};
pub use quantity::Quantity;
pub use selector::{
    LabelOperator, LabelRequirement, LabelSelector, PropertyOperator, PropertyRequirement, PropertySelector,
};
pub use sync_target_key::sync_target_key;
