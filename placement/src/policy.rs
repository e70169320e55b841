//! The dialect-neutral policy one decision follows, and the state it starts from.
//!
//! Each dialect's controller translates its own object into a `Policy`: OCM predicates and
//! Fleet required affinity both become `required` terms, kcp locationSelectors do too;
//! Fleet preferred affinity becomes `preferred`; OCM prioritizerPolicy stays as it is
//! because only OCM re-weights scorers per placement. Field names follow the upstream
//! APIs (camelCase) so fixtures read like the manifests they come from.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::candidate::{ApiIdentity, TaintEffect};
use crate::selector::{LabelSelector, PropertySelector};

/// What one decision is asked to do.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// How many to pick.
    #[serde(default)]
    pub number: Number,
    /// Required terms, ORed. `None`: no requirement. `Some(empty)`: an OR of nothing,
    /// which matches nothing (a kcp Placement without locationSelectors selects no
    /// Location).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<SelectorTerm>>,
    /// Preferred terms with weights (Fleet's preferred affinity), summed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preferred: Vec<PreferredTerm>,
    /// Tolerations of candidate taints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Topology spread constraints; they apply when picking N.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spread: Vec<SpreadConstraint>,
    /// OCM's prioritizerPolicy: which scorers run, with which weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prioritizers: Option<PrioritizerPolicy>,
    /// kcp: the APIs the workspace binds; a SyncTarget must support every one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bound_apis: Vec<ApiIdentity>,
    /// kcp: the Placement's locationResource as `group/version/resource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location_resource: Option<String>,
    /// What equal scores are broken by when the profile breaks ties by a stable hash:
    /// the placement's key (kcp Location choice) or the namespace's key (SyncTarget
    /// choice), so that every controller computing the same decision agrees.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tie_break_key: String,
}

/// How many candidates to pick. Written `all`, a count, or a list of names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "NumberText", into = "NumberText")]
pub enum Number {
    /// Every candidate that passes the filters (Fleet PickAll, OCM without
    /// numberOfClusters).
    #[default]
    All,
    /// At most this many (Fleet PickN, OCM numberOfClusters, kcp: 1).
    N(u32),
    /// Exactly these names, those that pass the filters (Fleet PickFixed).
    Fixed(Vec<String>),
}

/// `Number`'s written forms: `all`, `3`, `[a, b]`.
#[derive(Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum NumberText {
    Keyword(String),
    Count(u32),
    Names(Vec<String>),
}

impl TryFrom<NumberText> for Number {
    type Error = String;

    fn try_from(text: NumberText) -> Result<Number, String> {
        match text {
            NumberText::Keyword(keyword) if keyword == "all" => Ok(Number::All),
            NumberText::Keyword(other) => Err(format!("number must be all, a count or a list of names, not {other:?}")),
            NumberText::Count(n) => Ok(Number::N(n)),
            NumberText::Names(names) => Ok(Number::Fixed(names)),
        }
    }
}

impl From<Number> for NumberText {
    fn from(number: Number) -> NumberText {
        match number {
            Number::All => NumberText::Keyword("all".to_string()),
            Number::N(n) => NumberText::Count(n),
            Number::Fixed(names) => NumberText::Names(names),
        }
    }
}

/// One required or preferred term: its selectors are ANDed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectorTerm {
    /// Over the candidate's labels; absent means no constraint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Over the candidate's claims (OCM); absent means no constraint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_selector: Option<LabelSelector>,
    /// Over the candidate's properties (Fleet); absent means no constraint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property_selector: Option<PropertySelector>,
}

/// A weighted preference (Fleet `PreferredClusterSelector`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreferredTerm {
    /// −100..100; added to a matching candidate's score (scaled when sorting).
    pub weight: i32,
    /// What a candidate must match to earn the weight.
    #[serde(default)]
    pub preference: Preference,
}

/// The matching half of a preferred term.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Preference {
    /// Candidates that fail it earn nothing; absent matches all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Scales the weight by where the candidate's property value lies between the
    /// smallest and largest value among all candidates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property_sorter: Option<PropertySorter>,
}

/// Fleet's property sorter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PropertySorter {
    /// The property name.
    pub name: String,
    /// Which end earns the full weight.
    pub sort_order: SortOrder,
}

/// Which end of a property's range is preferred.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SortOrder {
    /// Larger values earn more.
    Descending,
    /// Smaller values earn more.
    Ascending,
}

/// A toleration of taints.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toleration {
    /// The taint key; empty matches every key (only with `Exists`).
    #[serde(default)]
    pub key: String,
    /// How the value is matched.
    #[serde(default)]
    pub operator: TolerationOperator,
    /// The taint value for `Equal`.
    #[serde(default)]
    pub value: String,
    /// The effect tolerated; absent tolerates every effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<TaintEffect>,
    /// OCM: how long after the taint's timeAdded the toleration holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// Toleration operators.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TolerationOperator {
    /// Key and value must equal the taint's (the default, as in both APIs).
    #[default]
    Equal,
    /// The key must equal the taint's, or be empty; the value is ignored.
    Exists,
}

/// A topology spread constraint (Fleet's topologySpreadConstraints, OCM's
/// spreadPolicy.spreadConstraints).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpreadConstraint {
    /// The largest allowed difference between the fullest and emptiest domain; default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_skew: Option<u32>,
    /// The label (or claim) whose values are the domains.
    pub topology_key: String,
    /// Whether the key names a label or a claim.
    #[serde(default)]
    pub topology_key_type: TopologyKeyType,
    /// Whether a violation filters (DoNotSchedule) or only scores (ScheduleAnyway).
    #[serde(default)]
    pub when_unsatisfiable: WhenUnsatisfiable,
}

/// Where a spread constraint's topology key is looked up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TopologyKeyType {
    /// Candidate labels.
    #[default]
    Label,
    /// Candidate claims (OCM).
    Claim,
}

/// What a spread violation does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WhenUnsatisfiable {
    /// The candidate is filtered out.
    #[default]
    DoNotSchedule,
    /// The candidate is penalised but may still be picked.
    ScheduleAnyway,
}

/// OCM's prioritizerPolicy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrioritizerPolicy {
    /// Additive: the configurations override the profile's default weights. Exact: only
    /// the configurations run.
    #[serde(default)]
    pub mode: PrioritizerMode,
    /// Weights per prioritizer.
    #[serde(default)]
    pub configurations: Vec<PrioritizerConfig>,
}

/// OCM's prioritizer policy modes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PrioritizerMode {
    /// Defaults (Balance 1, Steady 1) plus the configurations.
    #[default]
    Additive,
    /// Only the configurations.
    Exact,
}

/// One prioritizer and its weight.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrioritizerConfig {
    /// Which prioritizer.
    pub score_coordinate: ScoreCoordinate,
    /// −10..10; 0 disables it.
    pub weight: i32,
}

/// Names a built-in prioritizer or an add-on score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScoreCoordinate {
    /// `BuiltIn` or `AddOn`.
    #[serde(rename = "type")]
    pub kind: ScoreCoordinateType,
    /// For `BuiltIn`: Balance, Steady, ResourceAllocatableCPU, ResourceAllocatableMemory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_in: Option<String>,
    /// For `AddOn`: which AddOnPlacementScore and score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on: Option<AddOnCoordinate>,
}

/// The kinds of score coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScoreCoordinateType {
    /// A prioritizer built into the scheduler.
    BuiltIn,
    /// A score published by an add-on.
    AddOn,
}

/// An add-on score's address.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddOnCoordinate {
    /// The AddOnPlacementScore's name.
    pub resource_name: String,
    /// The score's name within it.
    pub score_name: String,
}

/// What the decision starts from, besides the candidates and the policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct State {
    /// The clock, passed in so a decision is a pure function of its inputs.
    pub now: Timestamp,
    /// This placement's current decisions (names), which bind diffs against.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub current: Vec<String>,
    /// OCM Balance: how many decisions of other placements each cluster carries.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other_decisions: BTreeMap<String, u64>,
    /// Decide as if the current decisions were not yet placed, except that they still
    /// win ties (Steady): nothing is kept by rule, and filters grant them no exemption
    /// (a Fleet NoSchedule taint or an unschedulable mark then turns them away too).
    /// What rescheduling compares the sticky decision with ([`crate::pace`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reconsider: bool,
    /// The current decisions that are settled (Fleet's Bound bindings, where Scheduled
    /// ones are not rolled out yet). When the policy wants fewer than are kept, unsettled
    /// ones are dropped first, worst first, then settled ones, worst first (KubeFleet's
    /// downscale), so that shrinking disturbs as few running workloads as it can.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settled: Vec<String>,
}

impl State {
    /// A state at `now` with no current decisions.
    pub fn at(now: Timestamp) -> State {
        State { now, current: Vec::new(), other_decisions: BTreeMap::new(), reconsider: false, settled: Vec::new() }
    }
}
