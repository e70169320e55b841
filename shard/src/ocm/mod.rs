//! Open Cluster Management's placement API, served in every logical cluster with OCM's
//! groups, versions and names, so that a workspace can act as an OCM hub and OCM
//! manifests apply unchanged: `cluster.open-cluster-management.io` ManagedClusters,
//! ManagedClusterSets and their bindings, Placements, PlacementDecisions and
//! AddOnPlacementScores, and the ClusterClaims a managed cluster keeps about itself.
//!
//! - [`definitions`]: the kinds, in the shape of CRDs the registry builds rows from.
//! - [`decide`]: one Placement's decision, pure: the eligible clusters from the bound
//!   cluster sets, the framework's `ocm` profile (`placement::decide`), the status
//!   conditions with OCM's reasons.
//! - [`controller`]: reads a workspace's OCM objects, decides every Placement and writes
//!   its PlacementDecision pages per decision group in an order that never flaps
//!   (`placement::plan_groups`), its status and its Events (`DecisionCreate`,
//!   `DecisionUpdate`, `DecisionDelete`, `ScoreUpdate`).

pub mod controller;
pub mod decide;
pub mod definitions;
pub mod health;

use apiserver::registry::Registry;

/// OCM's cluster API group.
pub const CLUSTER_GROUP: &str = "cluster.open-cluster-management.io";
/// Kind of a registered cluster (cluster-scoped, v1).
pub const MANAGED_CLUSTER_KIND: &str = "ManagedCluster";
/// Kind of a set of clusters (cluster-scoped, v1beta2).
pub const MANAGED_CLUSTER_SET_KIND: &str = "ManagedClusterSet";
/// Kind that makes a set usable by the Placements of a namespace (v1beta2).
pub const MANAGED_CLUSTER_SET_BINDING_KIND: &str = "ManagedClusterSetBinding";
/// Kind of a placement (namespaced, v1beta1).
pub const PLACEMENT_KIND: &str = "Placement";
/// Kind of a page of a placement's decisions (namespaced, v1beta1).
pub const PLACEMENT_DECISION_KIND: &str = "PlacementDecision";
/// Kind of an add-on's scores of one cluster, in the cluster's namespace (v1alpha1).
pub const ADDON_PLACEMENT_SCORE_KIND: &str = "AddOnPlacementScore";
/// Kind of a fact about a managed cluster, kept on that cluster (cluster-scoped, v1alpha1).
pub const CLUSTER_CLAIM_KIND: &str = "ClusterClaim";

/// Label on a PlacementDecision naming its Placement.
pub const PLACEMENT_LABEL: &str = "cluster.open-cluster-management.io/placement";
/// Label on a PlacementDecision with the index of its decision group.
pub const DECISION_GROUP_INDEX_LABEL: &str = "cluster.open-cluster-management.io/decision-group-index";
/// Label on a PlacementDecision with the name of its decision group.
pub const DECISION_GROUP_NAME_LABEL: &str = "cluster.open-cluster-management.io/decision-group-name";
/// Label on a ManagedCluster naming the one set it belongs to (ExclusiveClusterSetLabel).
pub const CLUSTER_SET_LABEL: &str = "cluster.open-cluster-management.io/clusterset";

/// Adds the OCM rows.
pub fn register(registry: &mut Registry) {
    crate::crd::in_code::register(registry, &definitions::all());
}
