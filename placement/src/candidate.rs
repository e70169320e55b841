//! What the framework knows about one place a workload could go.
//!
//! One dialect-neutral shape serves every dialect: an OCM ManagedCluster, a Fleet
//! MemberCluster, a kcp Location and a kcp SyncTarget all become a `Candidate`. Each
//! plugin reads only the fields its dialect fills; the others stay at their defaults,
//! which are chosen so that an unset field never rejects a candidate (`ready` defaults
//! to true, no taints, no evictAfter).

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::quantity::Quantity;

/// One candidate cluster (or Location, or SyncTarget).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Candidate {
    /// The name decisions refer to; unique among the candidates of one decision.
    pub name: String,
    /// Object labels (all dialects).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// OCM ClusterClaims (name → value); matched by claim selectors.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub claims: BTreeMap<String, String>,
    /// Fleet properties by their full names, resource properties included
    /// (`resources.kubernetes-fleet.io/allocatable-cpu`); matched by property selectors
    /// and sorters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, Quantity>,
    /// OCM `status.allocatable` by resource name (`cpu`, `memory`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: BTreeMap<String, Quantity>,
    /// OCM `status.capacity` by resource name; OCM only scores a resource that has both.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capacity: BTreeMap<String, Quantity>,
    /// Taints (OCM and Fleet).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// Whether the candidate can run workloads at all: a kcp SyncTarget's Ready condition,
    /// a Fleet member that is joined and heartbeating. A candidate that is not ready loses
    /// its current decisions too.
    #[serde(default = "default_ready")]
    pub ready: bool,
    /// kcp `spec.unschedulable`: no new workloads, existing ones stay.
    #[serde(default)]
    pub unschedulable: bool,
    /// kcp `spec.evictAfter`: from this time on, new and existing workloads go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evict_after: Option<Timestamp>,
    /// The APIs a kcp SyncTarget accepts (from its supportedAPIExports). `None` means the
    /// target names no exports and so takes only built-in resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported_apis: Option<Vec<ApiIdentity>>,
    /// A kcp Location's `spec.resource` as `group/version/resource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location_resource: Option<String>,
    /// OCM AddOnPlacementScores in the cluster's namespace, by resource name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub addon_scores: BTreeMap<String, AddOnScores>,
}

fn default_ready() -> bool {
    true
}

impl Candidate {
    /// A ready candidate with nothing else set.
    pub fn new(name: impl Into<String>) -> Candidate {
        Candidate {
            name: name.into(),
            labels: BTreeMap::new(),
            claims: BTreeMap::new(),
            properties: BTreeMap::new(),
            allocatable: BTreeMap::new(),
            capacity: BTreeMap::new(),
            taints: Vec::new(),
            ready: true,
            unschedulable: false,
            evict_after: None,
            supported_apis: None,
            location_resource: None,
            addon_scores: BTreeMap::new(),
        }
    }
}

/// A taint on a candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Taint {
    /// The taint key.
    pub key: String,
    /// The taint value (may be empty).
    #[serde(default)]
    pub value: String,
    /// What the taint does to placements that do not tolerate it.
    pub effect: TaintEffect,
    /// When the taint was added; OCM's tolerationSeconds count from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_added: Option<Timestamp>,
}

/// Taint effects of both dialects, spelled as their APIs spell them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaintEffect {
    /// OCM: not selected, and current decisions are removed.
    NoSelect,
    /// OCM: not filtered at all (a preference, not a rule).
    PreferNoSelect,
    /// OCM: not selected unless already in the placement's decisions.
    NoSelectIfNew,
    /// Fleet: no new placements; existing ones stay.
    NoSchedule,
}

impl std::fmt::Display for TaintEffect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

/// A bound or supported API, identified as kcp identifies it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiIdentity {
    /// The API group.
    #[serde(default)]
    pub group: String,
    /// The resource (plural).
    pub resource: String,
    /// The identity hash of the APIExport that defines it.
    pub identity_hash: String,
}

/// One AddOnPlacementScore object: named scores and how long they are valid.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddOnScores {
    /// After this time the scores are stale and count as 0 (OCM warns about them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<Timestamp>,
    /// Score name → value (OCM expects −100..100).
    #[serde(default)]
    pub scores: BTreeMap<String, i64>,
}
