//! SyncTarget (`workload.kcp.io/v1alpha1`), kcp's transparent multi-cluster (TMC) kind as
//! of kcp v0.11, its last release with TMC: a physical cluster that workloads of a
//! workspace are synced to by a syncer running in that cluster.
//!
//! Besides the kind, this module names the labels, annotations and finalizers through which
//! kcp's workload controllers and syncers coordinate on the objects they sync. Most of them
//! end in a SyncTarget key, the short hash of the SyncTarget's workspace path and name that
//! `placement::sync_target_key` computes.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{api_version, impl_cluster_scoped_kind, kind, list_kind, ApiExportReference, KcpCondition};

/// API group of [`SyncTarget`].
pub const WORKLOAD_KCP_GROUP: &str = "workload.kcp.io";
/// API version of [`SyncTarget`] within [`WORKLOAD_KCP_GROUP`].
pub const WORKLOAD_KCP_VERSION: &str = "v1alpha1";
/// `apiVersion` carried by [`SyncTarget`] objects.
pub const SYNC_TARGET_API_VERSION: &str = "workload.kcp.io/v1alpha1";
/// Kind of [`SyncTarget`].
pub const SYNC_TARGET_KIND: &str = "SyncTarget";
/// Kind of [`SyncTargetList`].
pub const SYNC_TARGET_LIST_KIND: &str = "SyncTargetList";
/// Plural resource name of [`SyncTarget`]; it is cluster-scoped.
pub const SYNC_TARGET_RESOURCE: &str = "synctargets";
/// Longest name a SyncTarget may have: kcp's schema caps it so that names derived from it
/// (a 10-character prefix and a 9-character hash added) stay within 253 characters.
pub const SYNC_TARGET_NAME_MAX_LENGTH: usize = 234;

/// Name of the APIExport a SyncTarget supports when `spec.supportedAPIExports` is left out:
/// kcp's schema defaults the list to this export, in the SyncTarget's own workspace.
pub const DEFAULT_SUPPORTED_API_EXPORT: &str = "kubernetes";

// ---------------------------------------------------------------------------------------
// Conditions
// ---------------------------------------------------------------------------------------

/// Condition type summarizing the other conditions of a SyncTarget.
pub const SYNC_TARGET_READY_CONDITION: &str = "Ready";
/// Condition type: the syncer is running and can move objects between kcp and the cluster.
pub const SYNCER_READY_CONDITION: &str = "SyncerReady";
/// Condition type: the syncer's API importer can read the cluster's APIs.
pub const API_IMPORTER_READY_CONDITION: &str = "APIImporterReady";
/// Condition type: a syncer heartbeat arrived within the expected interval.
pub const HEARTBEAT_HEALTHY_CONDITION: &str = "HeartbeatHealthy";
/// Condition type: the syncer has the permissions it needs in the downstream cluster.
pub const SYNCER_AUTHORIZED_CONDITION: &str = "SyncerAuthorized";
/// Reason of a false HeartbeatHealthy condition: no heartbeat arrived in time.
pub const ERROR_HEARTBEAT_MISSED_REASON: &str = "ErrorHeartbeat";

// ---------------------------------------------------------------------------------------
// Compatibility states of synced resources
// ---------------------------------------------------------------------------------------

/// `state` of a synced resource the syncer has not judged yet; kcp's schema defaults to it.
pub const RESOURCE_SCHEMA_PENDING_STATE: &str = "Pending";
/// `state` of a synced resource whose schema the downstream cluster can serve.
pub const RESOURCE_SCHEMA_ACCEPTED_STATE: &str = "Accepted";
/// `state` of a synced resource whose schema the downstream cluster cannot serve.
pub const RESOURCE_SCHEMA_INCOMPATIBLE_STATE: &str = "Incompatible";
/// Every value the `state` of a synced resource may hold.
pub const RESOURCE_SCHEMA_STATES: [&str; 3] =
    [RESOURCE_SCHEMA_PENDING_STATE, RESOURCE_SCHEMA_ACCEPTED_STATE, RESOURCE_SCHEMA_INCOMPATIBLE_STATE];

// ---------------------------------------------------------------------------------------
// Labels, annotations and finalizers on synced objects
// ---------------------------------------------------------------------------------------

/// Prefix of the label `state.workload.kcp.io/<sync-target-key>` on an object in kcp that
/// is assigned to a SyncTarget. Its value is one of [`RESOURCE_STATE_PENDING`],
/// [`RESOURCE_STATE_SYNC`] and [`RESOURCE_STATE_UPSYNC`]; the syncer removes the label once
/// the object is gone downstream, which is how controllers learn that it was removed.
pub const CLUSTER_RESOURCE_STATE_LABEL_PREFIX: &str = "state.workload.kcp.io/";
/// State-label value: the object is assigned, but the syncer leaves it alone until a
/// controller switches the value to [`RESOURCE_STATE_SYNC`].
pub const RESOURCE_STATE_PENDING: &str = "";
/// State-label value: the syncer copies the object down to the SyncTarget and its status
/// back up.
pub const RESOURCE_STATE_SYNC: &str = "Sync";
/// State-label value: the object originates downstream and the syncer copies it up, owning
/// both its spec and status; only one SyncTarget may upsync an object.
pub const RESOURCE_STATE_UPSYNC: &str = "Upsync";

/// Prefix of the annotation `deletion.internal.workload.kcp.io/<sync-target-key>`: the
/// RFC 3339 time at which the object started being removed from that SyncTarget. The
/// syncer treats it as the object's deletion timestamp.
pub const INTERNAL_CLUSTER_DELETION_TIMESTAMP_ANNOTATION_PREFIX: &str = "deletion.internal.workload.kcp.io/";
/// Prefix of the annotation `finalizers.workload.kcp.io/<sync-target-key>`: a
/// comma-separated list of finalizers that hold the object on that SyncTarget, as the
/// syncer sees them. Any controller may add to it to delay the object's removal there.
pub const CLUSTER_FINALIZER_ANNOTATION_PREFIX: &str = "finalizers.workload.kcp.io/";
/// Prefix of the finalizer `workload.kcp.io/syncer-<sync-target-key>` a syncer puts on an
/// object in kcp before creating it downstream, and removes once the downstream copy is
/// gone.
pub const SYNCER_FINALIZER_NAME_PREFIX: &str = "workload.kcp.io/syncer-";
/// Prefix of the annotation `diff.syncer.internal.kcp.io/<sync-target-key>`: a JSON object
/// of field values (keyed by paths such as `status` or `spec.clusterIP`) as that
/// SyncTarget's syncer reported them, overriding the object's own values in its view.
pub const INTERNAL_SYNCER_VIEW_ANNOTATION_PREFIX: &str = "diff.syncer.internal.kcp.io/";
/// Prefix of the experimental annotation `experimental.status.workload.kcp.io/<sync-target-key>`:
/// the JSON status of the downstream copy on that SyncTarget, for objects synced to several.
pub const INTERNAL_CLUSTER_STATUS_ANNOTATION_PREFIX: &str = "experimental.status.workload.kcp.io/";
/// Prefix of the experimental annotation `experimental.spec-diff.workload.kcp.io/<sync-target-key>`:
/// a JSON patch (RFC 6902) applied to the object's spec when it is synced to that
/// SyncTarget. Only honoured with advanced scheduling enabled.
pub const CLUSTER_SPEC_DIFF_ANNOTATION_PREFIX: &str = "experimental.spec-diff.workload.kcp.io/";
/// Experimental annotation holding a JSON list of summarizing rules (`fieldPath`,
/// `promoteToUpstream`): which fields are kept per SyncTarget in the syncer view, and
/// whether they are copied to the object itself when it is synced to one SyncTarget only.
pub const EXPERIMENTAL_SUMMARIZING_RULES_ANNOTATION: &str = "experimental.summarizing.workload.kcp.io";
/// Label on downstream copies naming the logical cluster they come from; downstream it
/// takes the place of the state label used in kcp.
pub const INTERNAL_DOWNSTREAM_CLUSTER_LABEL: &str = "internal.workload.kcp.io/cluster";

// ---------------------------------------------------------------------------------------
// Labels and annotations on SyncTargets, Placements, APIExports and APIBindings
// ---------------------------------------------------------------------------------------

/// Label on a SyncTarget holding its full SyncTarget key, to find the SyncTarget of a key.
/// (kcp's SyncTarget printer column reads `internal.workload.kcp.dev/key`, a stale
/// spelling that never matches.)
pub const INTERNAL_SYNC_TARGET_KEY_LABEL: &str = "internal.workload.kcp.io/key";
/// Annotation on a Placement holding the key of the SyncTarget its namespaces are
/// scheduled to.
pub const INTERNAL_SYNC_TARGET_PLACEMENT_ANNOTATION: &str = "internal.workload.kcp.io/synctarget";
/// Annotation on an APIExport or APIBinding recording that the default objects that come
/// with it have been created, so they are not created again after being deleted.
pub const SKIP_DEFAULT_OBJECT_CREATION_ANNOTATION: &str = "workload.kcp.io/skip-default-object-creation";
/// Annotation on an APIExport whose APIs are meant to be synced to SyncTargets; it is
/// copied to the APIBindings of the export, which the workload scheduler looks at.
pub const COMPUTE_API_EXPORT_ANNOTATION: &str = "extra.apis.kcp.io/compute.workload.kcp.io";
/// Annotation on a SyncTarget that, set to "true", turns on the syncer's experimental
/// advanced scheduling (per-SyncTarget spec diffs and status).
pub const ADVANCED_SCHEDULING_FEATURE_ANNOTATION: &str = "featuregates.experimental.workload.kcp.io/advancedscheduling";

// ---------------------------------------------------------------------------------------
// SyncTarget
// ---------------------------------------------------------------------------------------

/// SyncTarget is a physical cluster that workloads can be scheduled to. A syncer running
/// in that cluster copies the workspace objects assigned to it down into the cluster and
/// reports their status back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.workload.v1alpha1.SyncTarget")]
pub struct SyncTarget {
    /// APIVersion defines the versioned schema of this representation of an object. Servers
    /// should convert recognized schemas to the latest internal value, and may reject
    /// unrecognized values. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources
    #[serde(default = "api_version::<SyncTarget>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents. Servers
    /// may infer this from the endpoint the client submits requests to. Cannot be updated. In
    /// CamelCase. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds
    #[serde(default = "kind::<SyncTarget>")]
    pub kind: String,
    /// Standard object's metadata. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// spec holds the desired state: whether new workloads may be scheduled to the cluster,
    /// when existing ones are evicted, and the APIs it is expected to serve.
    #[serde(default)]
    pub spec: SyncTargetSpec,
    /// status holds the observed state: the cluster's resources, the resources its syncer
    /// syncs, its heartbeat and conditions.
    #[serde(default)]
    pub status: SyncTargetStatus,
}

/// SyncTargetSpec is the desired state of a SyncTarget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.workload.v1alpha1.SyncTargetSpec")]
pub struct SyncTargetSpec {
    /// unschedulable, when true, keeps new workloads from being scheduled to the cluster;
    /// workloads already there stay. Defaults to false.
    // Always on the wire, even when false: kcp's field has no omitempty.
    #[serde(default)]
    pub unschedulable: bool,
    /// evictAfter is the time after which every workload scheduled to the cluster is
    /// unassigned from it, and no new one is scheduled. When unset, workloads are never
    /// evicted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Time")]
    pub evict_after: Option<Time>,
    /// supportedAPIExports are the APIExports whose APIs the cluster is expected to serve.
    /// Workloads of an API are only scheduled to the cluster when its resource schemas there
    /// are compatible with the export's. Defaults to the export named "kubernetes" in the
    /// SyncTarget's workspace.
    #[serde(rename = "supportedAPIExports", default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("default" = [{"export": DEFAULT_SUPPORTED_API_EXPORT}]))]
    pub supported_api_exports: Vec<ApiExportReference>,
    /// cells are labels naming the cells the cluster belongs to: SyncTargets sharing cells
    /// are treated as one physical cluster. Each provider (network, storage, ...) maintains
    /// its own keys.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cells: BTreeMap<String, String>,
}

/// SyncTargetStatus is the observed state of a SyncTarget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.workload.v1alpha1.SyncTargetStatus")]
pub struct SyncTargetStatus {
    /// allocatable is the amount of each resource of the cluster still free for workloads.
    // An Option, as kcp's pointer: an empty map and no map at all are different statements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "BTreeMap<String, Quantity>")]
    pub allocatable: Option<BTreeMap<String, Quantity>>,
    /// capacity is the total amount of each resource of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "BTreeMap<String, Quantity>")]
    pub capacity: Option<BTreeMap<String, Quantity>>,
    /// conditions describe the current processing state of the SyncTarget.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<KcpCondition>,
    /// syncedResources are the resources the SyncTarget's syncer can sync, as maintained by
    /// the server, each with whether the cluster is compatible with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub synced_resources: Vec<ResourceToSync>,
    /// lastSyncerHeartbeatTime is when the syncer last reported that it is alive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Time")]
    pub last_syncer_heartbeat_time: Option<Time>,
    /// virtualWorkspaces are the addresses of the virtual workspaces the syncer talks to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub virtual_workspaces: Vec<SyncTargetVirtualWorkspace>,
}

/// ResourceToSync is one resource a SyncTarget's syncer can sync.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.workload.v1alpha1.ResourceToSync")]
pub struct ResourceToSync {
    /// group of the resource; empty for the core group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("pattern" = r"^(|[a-z0-9]([-a-z0-9]*[a-z0-9](\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?)$"))]
    pub group: String,
    /// resource is the plural name of the resource, e.g. deployments.
    #[schemars(extend("pattern" = r"^[a-z][-a-z0-9]*[a-z0-9]$"))]
    pub resource: String,
    /// versions the syncer may sync the resource in, most preferred first; it uses the
    /// first one the downstream cluster serves. Objects are converted from and to the
    /// storage version on the server side.
    #[schemars(extend("minItems" = 1))]
    pub versions: Vec<String>,
    /// identityHash is the identity of the APIExport the resource comes from; empty for
    /// built-in resources.
    // Always on the wire, even when empty: kcp's field has no omitempty.
    #[serde(default)]
    pub identity_hash: String,
    /// state says whether the downstream cluster can serve the resource's schema: Pending
    /// until the syncer has checked, then Accepted or Incompatible. Defaults to Pending.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = RESOURCE_SCHEMA_STATES, "default" = RESOURCE_SCHEMA_PENDING_STATE))]
    pub state: String,
}

/// The addresses of the virtual workspaces a SyncTarget's syncer works through.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "io.kcp.workload.v1alpha1.VirtualWorkspace")]
pub struct SyncTargetVirtualWorkspace {
    /// syncerURL is the address of the virtual workspace through which the syncer reads
    /// the objects to sync down and writes their status.
    #[serde(rename = "syncerURL")]
    #[schemars(extend("minLength" = 1))]
    pub syncer_url: String,
    /// upsyncerURL is the address of the virtual workspace through which the syncer
    /// creates and updates objects synced up from the cluster.
    #[serde(rename = "upsyncerURL")]
    #[schemars(extend("minLength" = 1))]
    pub upsyncer_url: String,
}

/// SyncTargetList is a list of SyncTargets, as returned by list requests.
// No JsonSchema derive: see LogicalClusterList.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncTargetList {
    /// APIVersion defines the versioned schema of this representation of an object.
    #[serde(default = "api_version::<SyncTarget>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    #[serde(default = "list_kind::<SyncTarget>")]
    pub kind: String,
    /// Standard list metadata.
    #[serde(default)]
    pub metadata: ListMeta,
    /// items is the list of SyncTargets.
    pub items: Vec<SyncTarget>,
}

impl_cluster_scoped_kind!(
    SyncTarget,
    SyncTargetList {
        group: WORKLOAD_KCP_GROUP,
        version: WORKLOAD_KCP_VERSION,
        api_version: SYNC_TARGET_API_VERSION,
        kind: SYNC_TARGET_KIND,
        list_kind: SYNC_TARGET_LIST_KIND,
        resource: SYNC_TARGET_RESOURCE,
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A SyncTarget as kcp v0.11 serves it once its syncer has reported in.
    fn kcp_sync_target() -> serde_json::Value {
        json!({
            "apiVersion": "workload.kcp.io/v1alpha1",
            "kind": "SyncTarget",
            "metadata": {
                "name": "east",
                "labels": {
                    "region": "us-east",
                    "internal.workload.kcp.io/key": "6ohB8yeXhwqTQVuBzJRgqcRJTpRjX7yTZu5g5g"
                }
            },
            "spec": {
                "unschedulable": false,
                "evictAfter": "2023-03-01T10:00:00Z",
                "supportedAPIExports": [{"export": "kubernetes"}, {"path": "root:compute", "export": "widgets"}],
                "cells": {"network": "cell-a"}
            },
            "status": {
                "allocatable": {"cpu": "4", "memory": "16Gi"},
                "capacity": {"cpu": "8", "memory": "32Gi"},
                "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": "2023-02-01T10:00:00Z"},
                    {
                        "type": "HeartbeatHealthy",
                        "status": "False",
                        "severity": "Error",
                        "lastTransitionTime": "2023-02-01T10:05:00Z",
                        "reason": "ErrorHeartbeat",
                        "message": "no heartbeat since 2023-02-01T10:00:00Z"
                    }
                ],
                "syncedResources": [
                    {"resource": "services", "versions": ["v1"], "identityHash": "", "state": "Accepted"},
                    {
                        "group": "apps",
                        "resource": "deployments",
                        "versions": ["v1"],
                        "identityHash": "ab".repeat(32),
                        "state": "Incompatible"
                    }
                ],
                "lastSyncerHeartbeatTime": "2023-02-01T10:00:00Z",
                "virtualWorkspaces": [{
                    "syncerURL": "https://shard-1/services/syncer/root:compute/east/uid-1",
                    "upsyncerURL": "https://shard-1/services/upsyncer/root:compute/east/uid-1"
                }]
            }
        })
    }

    #[test]
    fn kcp_manifest_round_trips() {
        let wire = kcp_sync_target();
        let target: SyncTarget = serde_json::from_value(wire.clone()).unwrap();
        assert!(!target.spec.unschedulable);
        assert_eq!(
            target.spec.supported_api_exports[1],
            ApiExportReference { path: "root:compute".into(), export: "widgets".into() }
        );
        assert_eq!(target.status.capacity.as_ref().unwrap()["memory"], Quantity("32Gi".into()));
        assert_eq!(target.status.conditions[1].type_, HEARTBEAT_HEALTHY_CONDITION);
        assert_eq!(target.status.conditions[1].reason, ERROR_HEARTBEAT_MISSED_REASON);
        assert_eq!(target.status.synced_resources[0].group, "");
        assert_eq!(target.status.synced_resources[1].state, RESOURCE_SCHEMA_INCOMPATIBLE_STATE);
        assert_eq!(serde_json::to_value(&target).unwrap(), wire);
    }

    #[test]
    fn unschedulable_and_identity_hash_are_always_written() {
        let mut target = SyncTarget::new(ObjectMeta { name: Some("east".into()), ..ObjectMeta::default() });
        target.status.synced_resources =
            vec![ResourceToSync { resource: "configmaps".into(), versions: vec!["v1".into()], ..Default::default() }];
        let wire = serde_json::to_value(&target).unwrap();
        assert_eq!(
            wire,
            json!({
                "apiVersion": "workload.kcp.io/v1alpha1",
                "kind": "SyncTarget",
                "metadata": {"name": "east"},
                "spec": {"unschedulable": false},
                "status": {"syncedResources": [{"resource": "configmaps", "versions": ["v1"], "identityHash": ""}]}
            })
        );
        assert_eq!(serde_json::from_value::<SyncTarget>(wire).unwrap(), target);
    }

    #[test]
    fn an_empty_resource_list_is_not_an_absent_one() {
        let wire = json!({"spec": {"unschedulable": true}, "status": {"allocatable": {}}});
        let target: SyncTarget = serde_json::from_value(wire).unwrap();
        assert_eq!(target.status.allocatable, Some(BTreeMap::new()));
        assert_eq!(target.status.capacity, None);
        let back = serde_json::to_value(&target).unwrap();
        assert_eq!(back["spec"], json!({"unschedulable": true}));
        assert_eq!(back["status"], json!({"allocatable": {}}));
    }

    #[test]
    fn decoding_fills_type_meta_and_requires_versions() {
        let target: SyncTarget = serde_json::from_value(json!({"metadata": {"name": "east"}})).unwrap();
        assert_eq!(target.api_version, SYNC_TARGET_API_VERSION);
        assert_eq!(target.kind, SYNC_TARGET_KIND);
        assert_eq!(target.spec, SyncTargetSpec::default());
        assert_eq!(target.status, SyncTargetStatus::default());
        let missing =
            serde_json::from_value::<SyncTarget>(json!({"status": {"syncedResources": [{"resource": "pods"}]}}));
        assert!(missing.unwrap_err().to_string().contains("versions"));
    }

    #[test]
    fn well_known_names_match_kcp() {
        assert_eq!(RESOURCE_SCHEMA_STATES, ["Pending", "Accepted", "Incompatible"]);
        assert_eq!(format!("{CLUSTER_RESOURCE_STATE_LABEL_PREFIX}abc"), "state.workload.kcp.io/abc");
        assert_eq!(format!("{SYNCER_FINALIZER_NAME_PREFIX}abc"), "workload.kcp.io/syncer-abc");
        assert_eq!(SYNC_TARGET_API_VERSION, format!("{WORKLOAD_KCP_GROUP}/{WORKLOAD_KCP_VERSION}"));
    }
}
