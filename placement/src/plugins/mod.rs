//! The plugins, and the thin dispatcher from a profile's plugin names to them.
//!
//! Every plugin is prepared once per decision from the policy, the state and the
//! candidates (selectors are compiled, policies validated, extremes computed, topology
//! domains interned), and the prepared value then judges or scores candidates one at a
//! time. Plugins whose opinion depends on what the decision has picked so far (topology
//! spread) are told the picks at the start of every round. A filter says `Pass`,
//! `PassUntil(deadline)` (tolerated only until then, so the controller should look again)
//! or `Reject(reason)`. A scorer gives a raw value per candidate and normalises the raw
//! values of the candidates scored together into the integers that are weighted and
//! summed. Plugins read only the candidate fields of their dialect; none of them knows
//! about stages, ranking or other plugins.

mod addon_score;
mod balance;
mod fixed_names;
mod location_resource;
mod preferred_terms;
mod required_terms;
mod resource_allocatable;
mod schedulable;
mod steady;
mod supported_apis;
mod taint_toleration;
mod topology_spread;

use std::sync::Arc;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::candidate::Candidate;
use crate::error::Error;
use crate::policy::{AddOnCoordinate, Number, Policy, ScoreCoordinate, ScoreCoordinateType, State};

/// The filter plugins a profile can list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FilterPlugin {
    /// Fleet PickFixed: only the policy's fixed names pass.
    FixedNames,
    /// Ready, not unschedulable (for new picks), not evicting: kcp SyncTargets, Fleet
    /// member eligibility.
    Schedulable,
    /// The policy's required terms (OCM predicates, Fleet required affinity, kcp
    /// locationSelectors and a Location's instanceSelector).
    RequiredTerms,
    /// Taints against the policy's tolerations, with one dialect's semantics.
    TaintToleration(TaintSemantics),
    /// kcp: a SyncTarget must support every API the workspace binds.
    SupportedApis,
    /// kcp: a Location must be for the Placement's locationResource.
    LocationResource,
    /// DoNotSchedule topology spread constraints (re-evaluated after every pick).
    TopologySpread,
}

/// Whose taint rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaintSemantics {
    /// NoSelect, NoSelectIfNew, PreferNoSelect and tolerationSeconds from timeAdded.
    Ocm,
    /// NoSchedule: keeps new placements away, leaves current ones alone.
    Fleet,
}

/// The scorer plugins a profile can list (OCM calls them prioritizers).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScorerPlugin {
    /// The policy's weighted preferred terms (Fleet preferred affinity).
    PreferredTerms,
    /// OCM: fewer decisions of other placements score higher.
    Balance,
    /// OCM (and Fleet's tie preference): current decisions score higher.
    Steady,
    /// OCM: more allocatable CPU scores higher.
    #[serde(rename = "ResourceAllocatableCPU")]
    ResourceAllocatableCpu,
    /// OCM: more allocatable memory scores higher.
    ResourceAllocatableMemory,
    /// OCM: a score an add-on publishes in AddOnPlacementScores.
    AddOn(AddOnCoordinate),
    /// Candidates that reduce topology skew score higher.
    TopologySpread,
}

/// One filter's judgement of one candidate.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Verdict {
    /// It passes.
    Pass,
    /// It passes only until then (a toleration expires, an eviction begins).
    PassUntil(Timestamp),
    /// It is rejected, for this reason. Shared rather than owned, because a filter that
    /// runs every round (spread) turns thousands of candidates away with one reason.
    Reject(Arc<str>),
}

impl Verdict {
    pub(crate) fn reject(reason: impl Into<Arc<str>>) -> Verdict {
        Verdict::Reject(reason.into())
    }
}

/// What a plugin is shown of one candidate.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Subject<'a> {
    /// Its position among the decision's candidates.
    pub index: usize,
    /// The candidate.
    pub candidate: &'a Candidate,
    /// Whether it is among the placement's current decisions.
    pub current: bool,
}

/// Everything a plugin may look at when it is prepared.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Context<'a> {
    pub policy: &'a Policy,
    pub state: &'a State,
    /// Every candidate, in input order.
    pub candidates: &'a [Candidate],
}

impl Context<'_> {
    /// Whether the policy picks N, the only case spread constraints apply to (as in
    /// Fleet, where PickAll and PickFixed ignore them).
    pub(crate) fn spread_applies(&self) -> bool {
        matches!(self.policy.number, Number::N(_)) && !self.policy.spread.is_empty()
    }
}

/// A filter prepared for one decision.
pub(crate) trait Filter {
    /// Called before each round with what the decision has placed so far (per candidate
    /// index), for filters that depend on picks.
    fn begin_round(&mut self, _placed: &[bool]) {}

    fn check(&self, subject: Subject<'_>) -> Verdict;
}

/// A scorer prepared for one decision.
pub(crate) trait Scorer {
    /// Called before each round with what the decision has placed so far, for scorers
    /// that depend on picks.
    fn begin_round(&mut self, _placed: &[bool]) {}

    /// The raw value for one candidate; `None` when the candidate has no data for it.
    fn raw(&self, subject: Subject<'_>) -> Option<f64>;

    /// The normalised scores of candidates scored together, in the same order. The
    /// default rounds the raw value, for scorers whose raw value already is the score.
    fn normalise(&self, raw: &[Option<f64>]) -> Vec<i64> {
        raw.iter().map(|r| r.map_or(0, |v| v.round() as i64)).collect()
    }

    /// Anything the controller should surface about the candidates scored (stale add-on
    /// scores).
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

impl FilterPlugin {
    /// The name reasons and reports use.
    pub fn name(&self) -> &'static str {
        match self {
            FilterPlugin::FixedNames => "FixedNames",
            FilterPlugin::Schedulable => "Schedulable",
            FilterPlugin::RequiredTerms => "RequiredTerms",
            FilterPlugin::TaintToleration(_) => "TaintToleration",
            FilterPlugin::SupportedApis => "SupportedApis",
            FilterPlugin::LocationResource => "LocationResource",
            FilterPlugin::TopologySpread => "TopologySpread",
        }
    }

    /// Whether its verdict depends on what this decision picked before, so it must run
    /// again every round instead of once.
    pub(crate) fn depends_on_picks(&self) -> bool {
        matches!(self, FilterPlugin::TopologySpread)
    }

    /// How many candidates it allows to be picked per round, if it limits that.
    pub(crate) fn batch_limit(&self, context: &Context<'_>) -> Option<usize> {
        match self {
            FilterPlugin::TopologySpread => topology_spread::batch_limit(context),
            _ => None,
        }
    }

    pub(crate) fn prepare<'a>(&self, context: &Context<'a>) -> Result<Box<dyn Filter + 'a>, Error> {
        let name = self.name();
        Ok(match self {
            FilterPlugin::FixedNames => Box::new(fixed_names::prepare(context)),
            FilterPlugin::Schedulable => Box::new(schedulable::prepare(context)),
            FilterPlugin::RequiredTerms => {
                Box::new(required_terms::prepare(context).map_err(|m| Error::misconfigured(name, m))?)
            }
            FilterPlugin::TaintToleration(semantics) => {
                Box::new(taint_toleration::prepare(context, *semantics).map_err(|m| Error::misconfigured(name, m))?)
            }
            FilterPlugin::SupportedApis => Box::new(supported_apis::prepare(context)),
            FilterPlugin::LocationResource => Box::new(location_resource::prepare(context)),
            FilterPlugin::TopologySpread => {
                Box::new(topology_spread::prepare_filter(context).map_err(|m| Error::misconfigured(name, m))?)
            }
        })
    }
}

impl ScorerPlugin {
    /// The name reasons and reports use (OCM's prioritizer names where OCM has one).
    pub fn name(&self) -> String {
        match self {
            ScorerPlugin::PreferredTerms => "PreferredTerms".to_string(),
            ScorerPlugin::Balance => "Balance".to_string(),
            ScorerPlugin::Steady => "Steady".to_string(),
            ScorerPlugin::ResourceAllocatableCpu => "ResourceAllocatableCPU".to_string(),
            ScorerPlugin::ResourceAllocatableMemory => "ResourceAllocatableMemory".to_string(),
            ScorerPlugin::AddOn(c) => format!("AddOn/{}/{}", c.resource_name, c.score_name),
            ScorerPlugin::TopologySpread => "TopologySpread".to_string(),
        }
    }

    /// Whether an OCM prioritizerPolicy may re-weight it (it is one of OCM's
    /// prioritizers).
    pub(crate) fn is_ocm_prioritizer(&self) -> bool {
        !matches!(self, ScorerPlugin::PreferredTerms | ScorerPlugin::TopologySpread)
    }

    /// The scorer an OCM score coordinate names.
    pub(crate) fn from_coordinate(coordinate: &ScoreCoordinate) -> Result<ScorerPlugin, String> {
        match coordinate.kind {
            ScoreCoordinateType::BuiltIn => match coordinate.built_in.as_deref() {
                Some("Balance") => Ok(ScorerPlugin::Balance),
                Some("Steady") => Ok(ScorerPlugin::Steady),
                Some("ResourceAllocatableCPU") => Ok(ScorerPlugin::ResourceAllocatableCpu),
                Some("ResourceAllocatableMemory") => Ok(ScorerPlugin::ResourceAllocatableMemory),
                Some(other) => Err(format!("incorrect builtin prioritizer: {other}")),
                None => Err("builtIn should not be empty".to_string()),
            },
            ScoreCoordinateType::AddOn => match &coordinate.add_on {
                Some(add_on) => Ok(ScorerPlugin::AddOn(add_on.clone())),
                None => Err("addOn should not be empty".to_string()),
            },
        }
    }

    /// Whether it has anything to say under this policy; an inactive scorer is left out
    /// of the decision and its report.
    pub(crate) fn active(&self, context: &Context<'_>) -> bool {
        match self {
            ScorerPlugin::PreferredTerms => !context.policy.preferred.is_empty(),
            ScorerPlugin::TopologySpread => context.spread_applies(),
            _ => true,
        }
    }

    /// How many candidates it allows to be picked per round, if it limits that.
    pub(crate) fn batch_limit(&self, context: &Context<'_>) -> Option<usize> {
        match self {
            ScorerPlugin::TopologySpread => topology_spread::batch_limit(context),
            _ => None,
        }
    }

    /// Whether its scores depend on what this decision picked before.
    pub(crate) fn depends_on_picks(&self) -> bool {
        matches!(self, ScorerPlugin::TopologySpread)
    }

    pub(crate) fn prepare<'a>(
        &'a self,
        context: &Context<'a>,
        scored: &[&'a Candidate],
    ) -> Result<Box<dyn Scorer + 'a>, Error> {
        let name = self.name();
        Ok(match self {
            ScorerPlugin::PreferredTerms => {
                Box::new(preferred_terms::prepare(context).map_err(|m| Error::misconfigured(&name, m))?)
            }
            ScorerPlugin::Balance => Box::new(balance::prepare(context)),
            ScorerPlugin::Steady => Box::new(steady::Steady),
            ScorerPlugin::ResourceAllocatableCpu => Box::new(resource_allocatable::prepare("cpu")),
            ScorerPlugin::ResourceAllocatableMemory => Box::new(resource_allocatable::prepare("memory")),
            ScorerPlugin::AddOn(coordinate) => Box::new(addon_score::prepare(context, coordinate, scored)),
            ScorerPlugin::TopologySpread => {
                Box::new(topology_spread::prepare_scorer(context).map_err(|m| Error::misconfigured(&name, m))?)
            }
        })
    }
}
