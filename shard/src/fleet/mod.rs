//! KubeFleet's placement API, served in every logical cluster with Fleet's groups,
//! versions and names, so that a workspace can act as a Fleet hub and Fleet manifests
//! apply unchanged: `cluster.kubernetes-fleet.io` MemberClusters and
//! `placement.kubernetes-fleet.io` ClusterResourcePlacements with their policy and
//! resource snapshots, ClusterResourceBindings, Works and overrides.
//!
//! - [`definitions`]: the kinds, as definitions in code.
//! - [`policy`]: a placement's policy and a member as the framework sees them (pure).
//! - [`policy_hash`]: a policy snapshot's `spec.policyHash`, as KubeFleet writes it (pure).
//! - [`resources`]: what a placement selects, as members receive it; snapshots' hash and
//!   split; overrides and envelopes (pure).
//! - [`rollout`]: the rolling update's choices within maxUnavailable and maxSurge (pure).
//! - [`leave`]: KubeFleet's leave flow of a MemberCluster being deleted (pure).
//! - [`member_events`]: the events about a MemberCluster joining and leaving (pure).
//! - [`controller`]: what wakes the hub controller and what each pass covers.
//! - `scope`: what a pass covers (triggers, rows, what members and placements last showed).
//! - `hub`: one pass over a hub: snapshots, bindings, Works and statuses.
//! - [`status`]: the conditions and statuses the hub writes (pure).
//! - [`validate`]: what the hub refuses on a placement's create or update, as KubeFleet's
//!   webhook refuses it (pure, behind the placements' strategy).

pub mod controller;
pub mod definitions;
pub mod envelope;
mod hub;
pub mod leave;
pub mod member_events;
pub mod placement_events;
pub mod policy;
pub mod policy_hash;
pub mod resources;
pub mod rollout;
mod scope;
pub mod status;
pub mod validate;
mod wake;

use apiserver::registry::Registry;
use std::sync::Arc;

/// Fleet's cluster API group (MemberCluster).
pub const CLUSTER_GROUP: &str = "cluster.kubernetes-fleet.io";
/// Fleet's placement API group.
pub const PLACEMENT_GROUP: &str = "placement.kubernetes-fleet.io";

/// Label naming the placement a snapshot, binding or Work belongs to.
pub const PARENT_CRP_LABEL: &str = "kubernetes-fleet.io/parent-CRP";
/// Label marking the latest snapshot of a placement.
pub const IS_LATEST_LABEL: &str = "kubernetes-fleet.io/is-latest-snapshot";
/// Label with a policy snapshot's index.
pub const POLICY_INDEX_LABEL: &str = "kubernetes-fleet.io/policy-index";
/// Label with a resource snapshot group's index.
pub const RESOURCE_INDEX_LABEL: &str = "kubernetes-fleet.io/resource-index";
/// Annotation with the placement generation a snapshot was made for.
pub const CRP_GENERATION_ANNOTATION: &str = "kubernetes-fleet.io/CRP-generation";
/// Annotation with PickN's number of clusters on a policy snapshot.
pub const NUMBER_OF_CLUSTERS_ANNOTATION: &str = "kubernetes-fleet.io/number-of-clusters";
/// Annotation with the hash of a resource snapshot group's selection.
pub const RESOURCE_HASH_ANNOTATION: &str = "kubernetes-fleet.io/resource-hash";
/// Annotation with the number of snapshots in a resource snapshot group.
pub const SNAPSHOT_COUNT_ANNOTATION: &str = "kubernetes-fleet.io/number-of-resource-snapshots";
/// Annotation with a sub-snapshot's index within its group.
pub const SUBINDEX_ANNOTATION: &str = "kubernetes-fleet.io/subindex-of-resource-snapshot";
/// Annotation with the state an Unscheduled binding had.
pub const PREVIOUS_STATE_ANNOTATION: &str = "kubernetes-fleet.io/previous-binding-state";
/// Label on a Work naming its binding.
pub const PARENT_BINDING_LABEL: &str = "kubernetes-fleet.io/parent-resource-binding";
/// Label on a Work with its resource snapshot group's index.
pub const PARENT_SNAPSHOT_INDEX_LABEL: &str = "kubernetes-fleet.io/parent-resource-snapshot-index";
/// Annotation on a Work naming its resource snapshot.
pub const PARENT_SNAPSHOT_NAME_ANNOTATION: &str = "kubernetes-fleet.io/parent-resource-snapshot-name";
/// Annotation on a Work with the hash of its manifests after overrides.
pub const WORK_HASH_ANNOTATION: &str = "kubernetes-fleet.io/work-hash";
/// Label on a member's reserved namespace.
pub const FLEET_RESOURCE_LABEL: &str = "kubernetes-fleet.io/is-fleet-resource";
/// Label on a member's reserved namespace naming the member.
pub const MEMBER_NAME_LABEL: &str = "kubernetes-fleet.io/member-name";

/// Adds the Fleet rows; placements are checked as KubeFleet's webhook checks them.
pub fn register(registry: &mut Registry) {
    crate::crd::in_code::register(registry, &definitions::all());
    let custom = crate::crd::strategy::CustomResource { defined_in_code: true };
    let placements = Arc::new(validate::PlacementStrategy(custom));
    registry.set_strategy(PLACEMENT_GROUP, "clusterresourceplacements", placements);
}
