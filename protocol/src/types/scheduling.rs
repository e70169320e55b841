//! Location and Placement (`scheduling.kcp.io/v1alpha1`), kcp's transparent multi-cluster
//! (TMC) scheduling kinds as of kcp v0.11, its last release with TMC.
//!
//! A [`Location`] groups SyncTargets, chosen by label, into one place workloads can go. A
//! [`Placement`] in a workload workspace picks one Location by label for the namespaces it
//! selects; those namespaces are marked with [`PLACEMENT_ANNOTATION`] and scheduled to one
//! SyncTarget of the Location.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ListMeta, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    api_version, impl_cluster_scoped_kind, kind, list_kind, KcpCondition, SYNC_TARGET_RESOURCE, WORKLOAD_KCP_GROUP,
    WORKLOAD_KCP_VERSION,
};

/// API group of [`Location`] and [`Placement`].
pub const SCHEDULING_KCP_GROUP: &str = "scheduling.kcp.io";
/// API version of [`Location`] and [`Placement`] within [`SCHEDULING_KCP_GROUP`].
pub const SCHEDULING_KCP_VERSION: &str = "v1alpha1";
/// `apiVersion` carried by [`Location`] and [`Placement`] objects.
pub const SCHEDULING_KCP_API_VERSION: &str = "scheduling.kcp.io/v1alpha1";
/// Kind of [`Location`].
pub const LOCATION_KIND: &str = "Location";
/// Kind of [`LocationList`].
pub const LOCATION_LIST_KIND: &str = "LocationList";
/// Plural resource name of [`Location`]; it is cluster-scoped.
pub const LOCATION_RESOURCE: &str = "locations";
/// Kind of [`Placement`].
pub const PLACEMENT_KIND: &str = "Placement";
/// Kind of [`PlacementList`].
pub const PLACEMENT_LIST_KIND: &str = "PlacementList";
/// Plural resource name of [`Placement`]; it is cluster-scoped.
pub const PLACEMENT_RESOURCE: &str = "placements";

// ---------------------------------------------------------------------------------------
// Annotations
// ---------------------------------------------------------------------------------------

/// Annotation on a Namespace marking it as placed. kcp's namespace controller sets it (to
/// the empty string; only its presence counts) while some Placement of the workspace that
/// has a Location, is not unready and selects the namespace exists, and removes it when
/// none does. A Placement selecting an annotated namespace is Bound.
pub const PLACEMENT_ANNOTATION: &str = "scheduling.kcp.io/placement";
/// Annotation on a Location holding its own labels as one string, `key=value` pairs sorted
/// by key and separated by spaces, kept up to date by the server so that tables can show
/// them.
pub const LOCATION_LABELS_STRING_ANNOTATION: &str = "scheduling.kcp.io/labels";

// ---------------------------------------------------------------------------------------
// Placement phases, conditions and reasons
// ---------------------------------------------------------------------------------------

/// Placement phase while no Location is selected; kcp's schema defaults to it.
pub const PLACEMENT_PHASE_PENDING: &str = "Pending";
/// Placement phase once a Location is selected and at least one namespace uses it.
pub const PLACEMENT_PHASE_BOUND: &str = "Bound";
/// Placement phase once a Location is selected but no namespace uses it (yet or anymore).
pub const PLACEMENT_PHASE_UNBOUND: &str = "Unbound";
/// Every value `status.phase` of a Placement may hold.
pub const PLACEMENT_PHASES: [&str; 3] = [PLACEMENT_PHASE_PENDING, PLACEMENT_PHASE_BOUND, PLACEMENT_PHASE_UNBOUND];

/// Placement condition type: a Location is selected and still matches the spec.
pub const PLACEMENT_READY_CONDITION: &str = "Ready";
/// Reason of a false Ready condition: no Location could be found for the Placement.
pub const LOCATION_NOT_FOUND_REASON: &str = "LocationNotFound";
/// Reason of a false Ready condition: the selected Location is no longer valid for the
/// Placement.
pub const LOCATION_INVALID_REASON: &str = "LocationInvalid";
/// Reason of a false Ready condition: no Location matches the Placement's selectors.
// kcp's Go name is LocationNotMatchReason; the value is spelled differently.
pub const LOCATION_NOT_MATCH_REASON: &str = "LocationNoMatch";
/// Placement condition type: a scheduling decision (a SyncTarget) has been made.
pub const PLACEMENT_SCHEDULED_CONDITION: &str = "Scheduled";
/// Reason of a false Scheduled condition: the selected Location is not available for
/// scheduling.
pub const SCHEDULE_LOCATION_NOT_FOUND_REASON: &str = "ScheduleLocationNotFound";
/// Reason of a false Scheduled condition: no valid SyncTarget could be chosen.
pub const SCHEDULE_NO_VALID_TARGET_REASON: &str = "NoValidTarget";

/// Namespace condition type reporting how scheduling the namespace went.
pub const NAMESPACE_SCHEDULED_CONDITION: &str = "NamespaceScheduled";
/// Reason of a false NamespaceScheduled condition: the namespace cannot be scheduled now,
/// e.g. because no ready SyncTarget is available.
pub const NAMESPACE_UNSCHEDULABLE_REASON: &str = "Unschedulable";
/// Reason of a false NamespaceScheduled condition: scheduling is turned off for the
/// namespace.
pub const NAMESPACE_SCHEDULING_DISABLED_REASON: &str = "SchedulingDisabled";
/// Reason of a false NamespaceScheduled condition: the placement annotation's value is
/// invalid.
pub const NAMESPACE_PLACEMENT_INVALID_REASON: &str = "PlacementInvalid";

/// Pattern of a canonical workspace path such as root:org:team.
const WORKSPACE_PATH_PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/// Pattern of a label key: an optional DNS-subdomain prefix and a slash, then the name.
const LABEL_KEY_PATTERN: &str = concat!(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9](\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?/)?",
    r"([a-zA-Z0-9][-a-zA-Z0-9_.]{0,61})?[a-zA-Z0-9]$"
);
/// Pattern of a label value as kcp's Location schema spells it (empty allowed).
const LABEL_VALUE_PATTERN: &str = concat!(
    r"^(|([a-z0-9]([-a-z0-9]*[a-z0-9](\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?/)?",
    r"([a-zA-Z0-9][-a-zA-Z0-9_.]{0,61})?[a-zA-Z0-9])$"
);

// ---------------------------------------------------------------------------------------
// Shared parts
// ---------------------------------------------------------------------------------------

/// GroupVersionResource names the kind of instance a Location groups. The only kind kcp
/// v0.11 accepts is workload.kcp.io/v1alpha1 synctargets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "io.kcp.scheduling.v1alpha1.GroupVersionResource")]
pub struct GroupVersionResource {
    /// group of the resource; empty for the core group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend(
        "pattern" = r"^(|[a-z0-9]([-a-z0-9]*[a-z0-9](\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?)$",
        "enum" = [WORKLOAD_KCP_GROUP]
    ))]
    pub group: String,
    /// version of the resource's API.
    #[schemars(extend("pattern" = r"^[a-z][-a-z0-9]*[a-z0-9]$", "enum" = [WORKLOAD_KCP_VERSION]))]
    pub version: String,
    /// resource is the plural name of the resource.
    #[schemars(extend("pattern" = r"^[a-z][-a-z0-9]*[a-z0-9]$", "enum" = [SYNC_TARGET_RESOURCE]))]
    pub resource: String,
}

impl GroupVersionResource {
    /// workload.kcp.io/v1alpha1 synctargets, the one resource Locations group.
    pub fn sync_targets() -> Self {
        Self {
            group: WORKLOAD_KCP_GROUP.to_owned(),
            version: WORKLOAD_KCP_VERSION.to_owned(),
            resource: SYNC_TARGET_RESOURCE.to_owned(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Location
// ---------------------------------------------------------------------------------------

/// Location is a set of instances (SyncTargets), chosen by label, that together form one
/// place workloads can be scheduled to. Placements choose a Location; a scheduler then
/// picks an instance within it, e.g. by load or available resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.scheduling.v1alpha1.Location")]
pub struct Location {
    /// APIVersion defines the versioned schema of this representation of an object. Servers
    /// should convert recognized schemas to the latest internal value, and may reject
    /// unrecognized values. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources
    #[serde(default = "api_version::<Location>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents. Servers
    /// may infer this from the endpoint the client submits requests to. Cannot be updated. In
    /// CamelCase. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds
    #[serde(default = "kind::<Location>")]
    pub kind: String,
    /// Standard object's metadata. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// spec says which instances belong to the Location and which labels Placements may
    /// select it by.
    // The schema's default is `{}`, not the derived one with an empty, invalid resource.
    #[serde(default)]
    #[schemars(extend("default" = {}))]
    pub spec: LocationSpec,
    /// status counts the Location's instances.
    #[serde(default)]
    pub status: LocationStatus,
}

/// LocationSpec is the desired state of a Location.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.scheduling.v1alpha1.LocationSpec")]
pub struct LocationSpec {
    /// resource is the kind of instance the Location groups: workload.kcp.io, v1alpha1,
    /// synctargets.
    pub resource: GroupVersionResource,
    /// description tells users what the Location is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// availableSelectorLabels are the labels, each with its possible values, that
    /// Placements may use to select an instance at this Location.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["key"]))]
    pub available_selector_labels: Vec<AvailableSelectorLabel>,
    /// instanceSelector chooses, by their labels, the instances that make up the
    /// Location. These are the instances' labels, not the Location's own. Defaults to the
    /// empty selector, which chooses every instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "LabelSelector", extend("default" = {}))]
    pub instance_selector: Option<LabelSelector>,
}

/// AvailableSelectorLabel is a label Placements may select an instance by, with the values
/// it may have.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.scheduling.v1alpha1.AvailableSelectorLabel")]
pub struct AvailableSelectorLabel {
    /// key of the label.
    #[schemars(extend("maxLength" = 255, "pattern" = LABEL_KEY_PATTERN))]
    pub key: String,
    /// values the label may have.
    #[schemars(extend(
        "minItems" = 1,
        "x-kubernetes-list-type" = "set",
        "items" = {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE_PATTERN}
    ))]
    pub values: Vec<String>,
    /// description tells users what the label means.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// LocationStatus is the observed state of a Location.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.scheduling.v1alpha1.LocationStatus")]
pub struct LocationStatus {
    /// instances is how many instances the Location holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "i32")]
    pub instances: Option<u32>,
    /// availableInstances is how many of the Location's instances are available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "i32")]
    pub available_instances: Option<u32>,
}

/// LocationList is a list of Locations, as returned by list requests.
// No JsonSchema derive: see LogicalClusterList.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LocationList {
    /// APIVersion defines the versioned schema of this representation of an object.
    #[serde(default = "api_version::<Location>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    #[serde(default = "list_kind::<Location>")]
    pub kind: String,
    /// Standard list metadata.
    #[serde(default)]
    pub metadata: ListMeta,
    /// items is the list of Locations.
    pub items: Vec<Location>,
}

impl_cluster_scoped_kind!(
    Location,
    LocationList {
        group: SCHEDULING_KCP_GROUP,
        version: SCHEDULING_KCP_VERSION,
        api_version: SCHEDULING_KCP_API_VERSION,
        kind: LOCATION_KIND,
        list_kind: LOCATION_LIST_KIND,
        resource: LOCATION_RESOURCE,
    }
);

// ---------------------------------------------------------------------------------------
// Placement
// ---------------------------------------------------------------------------------------

/// Placement chooses one Location for the namespaces of its workspace that it selects.
/// It starts Pending and becomes Unbound once a Location is selected; until then, and
/// while Unbound, changing its selectors may choose another Location. Once a namespace it
/// selects carries the scheduling.kcp.io/placement annotation, it is Bound: spec changes
/// are then not acted upon (the conditions say so). It returns to Unbound when no
/// namespace uses it anymore.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.scheduling.v1alpha1.Placement")]
pub struct Placement {
    /// APIVersion defines the versioned schema of this representation of an object. Servers
    /// should convert recognized schemas to the latest internal value, and may reject
    /// unrecognized values. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources
    #[serde(default = "api_version::<Placement>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents. Servers
    /// may infer this from the endpoint the client submits requests to. Cannot be updated. In
    /// CamelCase. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds
    #[serde(default = "kind::<Placement>")]
    pub kind: String,
    /// Standard object's metadata. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// spec says which Locations may be chosen and which namespaces the choice is for.
    // The schema's default is `{}`, not the derived one with an empty, invalid resource.
    #[serde(default)]
    #[schemars(extend("default" = {}))]
    pub spec: PlacementSpec,
    /// status holds the observed state: the phase, the chosen Location and conditions.
    #[serde(default)]
    pub status: PlacementStatus,
}

/// PlacementSpec is the desired state of a Placement.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.scheduling.v1alpha1.PlacementSpec")]
pub struct PlacementSpec {
    /// locationSelectors choose Locations by their labels; a Location matching any one of
    /// them may be chosen. Without selectors, no Location is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub location_selectors: Vec<LabelSelector>,
    /// locationResource is the kind of instance of the Locations to choose from:
    /// workload.kcp.io, v1alpha1, synctargets. Only Locations whose resource is exactly the
    /// same, group included, are considered.
    pub location_resource: GroupVersionResource,
    /// namespaceSelector chooses, by their labels, the namespaces the Placement is for. The
    /// empty selector chooses every namespace; when unset, no namespace is chosen.
    // kcp v0.11's own description claims "all namespaces by default", but its controllers
    // turn a nil selector into labels.Nothing(); this follows the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "LabelSelector")]
    pub namespace_selector: Option<LabelSelector>,
    /// locationWorkspace is the canonical path of the workspace holding the Locations, e.g.
    /// root:org:compute. When unset, Locations are looked up in the Placement's own
    /// workspace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("pattern" = WORKSPACE_PATH_PATTERN))]
    pub location_workspace: String,
}

/// PlacementStatus is the observed state of a Placement.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.scheduling.v1alpha1.PlacementStatus")]
pub struct PlacementStatus {
    /// phase of the Placement: Pending while no Location is chosen, Unbound once one is,
    /// Bound while namespaces use it. Defaults to Pending.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = PLACEMENT_PHASES, "default" = PLACEMENT_PHASE_PENDING))]
    pub phase: String,
    /// selectedLocation is the Location the Placement chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "LocationReference")]
    pub selected_location: Option<LocationReference>,
    /// conditions describe the current processing state of the Placement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<KcpCondition>,
}

/// LocationReference names a Location by the workspace holding it and its name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.scheduling.v1alpha1.LocationReference")]
pub struct LocationReference {
    /// path is the canonical path of the workspace holding the Location, e.g.
    /// root:org:compute.
    #[schemars(extend("pattern" = WORKSPACE_PATH_PATTERN))]
    pub path: String,
    /// locationName is the name of the Location.
    pub location_name: String,
}

/// PlacementList is a list of Placements, as returned by list requests.
// No JsonSchema derive: see LogicalClusterList.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementList {
    /// APIVersion defines the versioned schema of this representation of an object.
    #[serde(default = "api_version::<Placement>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    #[serde(default = "list_kind::<Placement>")]
    pub kind: String,
    /// Standard list metadata.
    #[serde(default)]
    pub metadata: ListMeta,
    /// items is the list of Placements.
    pub items: Vec<Placement>,
}

impl_cluster_scoped_kind!(
    Placement,
    PlacementList {
        group: SCHEDULING_KCP_GROUP,
        version: SCHEDULING_KCP_VERSION,
        api_version: SCHEDULING_KCP_API_VERSION,
        kind: PLACEMENT_KIND,
        list_kind: PLACEMENT_LIST_KIND,
        resource: PLACEMENT_RESOURCE,
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn location_manifest_round_trips() {
        let wire = json!({
            "apiVersion": "scheduling.kcp.io/v1alpha1",
            "kind": "Location",
            "metadata": {"name": "us-east", "annotations": {"scheduling.kcp.io/labels": "region=us-east"}},
            "spec": {
                "resource": {"group": "workload.kcp.io", "version": "v1alpha1", "resource": "synctargets"},
                "description": "clusters on the east coast",
                "availableSelectorLabels": [
                    {"key": "region", "values": ["us-east", "us-east-2"], "description": "where"}
                ],
                "instanceSelector": {"matchLabels": {"region": "us-east"}}
            },
            "status": {"instances": 3, "availableInstances": 0}
        });
        let location: Location = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(location.spec.resource, GroupVersionResource::sync_targets());
        assert_eq!(location.spec.available_selector_labels[0].values, ["us-east", "us-east-2"]);
        assert_eq!(location.status, LocationStatus { instances: Some(3), available_instances: Some(0) });
        assert_eq!(serde_json::to_value(&location).unwrap(), wire);
    }

    #[test]
    fn location_leaves_out_what_is_empty() {
        let mut location = Location::new(ObjectMeta { name: Some("any".into()), ..ObjectMeta::default() });
        location.spec.resource = GroupVersionResource::sync_targets();
        location.spec.instance_selector = Some(LabelSelector::default());
        let wire = serde_json::to_value(&location).unwrap();
        assert_eq!(
            wire,
            json!({
                "apiVersion": "scheduling.kcp.io/v1alpha1",
                "kind": "Location",
                "metadata": {"name": "any"},
                "spec": {
                    "resource": {"group": "workload.kcp.io", "version": "v1alpha1", "resource": "synctargets"},
                    "instanceSelector": {}
                },
                "status": {}
            })
        );
        assert_eq!(serde_json::from_value::<Location>(wire).unwrap(), location);
    }

    #[test]
    fn placement_manifest_round_trips() {
        let wire = json!({
            "apiVersion": "scheduling.kcp.io/v1alpha1",
            "kind": "Placement",
            "metadata": {"name": "default"},
            "spec": {
                "locationSelectors": [
                    {},
                    {"matchExpressions": [{"key": "region", "operator": "In", "values": ["us-east"]}]}
                ],
                "locationResource": {"group": "workload.kcp.io", "version": "v1alpha1", "resource": "synctargets"},
                "namespaceSelector": {"matchLabels": {"team": "a"}},
                "locationWorkspace": "root:compute"
            },
            "status": {
                "phase": "Bound",
                "selectedLocation": {"path": "root:compute", "locationName": "us-east"},
                "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": "2023-02-01T10:00:00Z"},
                    {
                        "type": "Scheduled",
                        "status": "False",
                        "severity": "Error",
                        "lastTransitionTime": "2023-02-01T10:00:00Z",
                        "reason": "NoValidTarget",
                        "message": "no ready SyncTarget in us-east"
                    }
                ]
            }
        });
        let placement: Placement = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(placement.status.phase, PLACEMENT_PHASE_BOUND);
        assert_eq!(placement.status.selected_location.as_ref().unwrap().location_name, "us-east");
        assert_eq!(placement.status.conditions[1].type_, PLACEMENT_SCHEDULED_CONDITION);
        assert_eq!(placement.status.conditions[1].reason, SCHEDULE_NO_VALID_TARGET_REASON);
        assert_eq!(placement.spec.location_selectors[0], LabelSelector::default());
        assert_eq!(serde_json::to_value(&placement).unwrap(), wire);
    }

    #[test]
    fn placement_needs_only_its_location_resource() {
        let wire = json!({
            "apiVersion": "scheduling.kcp.io/v1alpha1",
            "kind": "Placement",
            "metadata": {"name": "default"},
            "spec": {"locationResource": {"version": "v1alpha1", "resource": "synctargets"}},
            "status": {}
        });
        let placement: Placement = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(placement.spec.location_resource.group, "", "the group may be left out");
        assert_eq!(placement.spec.namespace_selector, None);
        assert_eq!(placement.status, PlacementStatus::default());
        assert_eq!(serde_json::to_value(&placement).unwrap(), wire);
        let missing = serde_json::from_value::<Placement>(json!({"spec": {"locationWorkspace": "root"}}));
        assert!(missing.unwrap_err().to_string().contains("locationResource"));
        let empty: Placement = serde_json::from_value(json!({"metadata": {"name": "p"}})).unwrap();
        assert_eq!(empty.spec, PlacementSpec::default(), "a missing spec is the empty spec");
    }

    #[test]
    fn well_known_names_match_kcp() {
        assert_eq!(PLACEMENT_PHASES, ["Pending", "Bound", "Unbound"]);
        assert_eq!(PLACEMENT_ANNOTATION, "scheduling.kcp.io/placement");
        assert_eq!(LOCATION_NOT_MATCH_REASON, "LocationNoMatch");
        assert_eq!(SCHEDULING_KCP_API_VERSION, format!("{SCHEDULING_KCP_GROUP}/{SCHEDULING_KCP_VERSION}"));
    }
}
