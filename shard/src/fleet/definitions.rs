//! The Fleet kinds as definitions in code ([`crate::crd::in_code`]), with the groups,
//! versions, names, short names, categories and printer columns KubeFleet's hub serves:
//! `cluster.kubernetes-fleet.io/v1` MemberCluster and `placement.kubernetes-fleet.io/v1`
//! ClusterResourcePlacement, its snapshots and bindings, Work, and the overrides, and
//! `placement.kubernetes-fleet.io/v1beta1` ClusterResourceEnvelope and ResourceEnvelope. The
//! schemas spell out the fields the hub reads and default what KubeFleet's defaulting
//! webhook defaults; the rest stays free-form.

use super::envelope::{CLUSTER_RESOURCE_ENVELOPE, RESOURCE_ENVELOPE};
use super::{CLUSTER_GROUP, PLACEMENT_GROUP};
use crate::crd::in_code::{self, age, column, condition_column, conditions, free, list_of, string, Names};
use serde_json::{json, Value};

fn names<'a>(
    group: &'a str,
    kind: &'a str,
    plural: &'a str,
    namespaced: bool,
    short_names: &'a [&'a str],
    categories: &'a [&'a str],
) -> Names<'a> {
    Names { group, version: "v1", kind, plural, namespaced, short_names, categories }
}

fn int_or_string(default: &str) -> Value {
    json!({"x-kubernetes-int-or-string": true, "default": default,
        "pattern": "^((100|[0-9]{1,2})%|[0-9]+)$"})
}

fn gen_column(name: &str, condition: &str) -> Value {
    column(name, "string", &format!(".status.conditions[?(@.type==\"{condition}\")].observedGeneration"))
}

const PLACEMENT_CATEGORIES: &[&str] = &["fleet", "fleet-placement"];

/// Every Fleet definition Atoll serves.
pub fn all() -> Vec<Value> {
    let taint = json!({
        "type": "object",
        "required": ["key", "effect"],
        "properties": {"key": string(), "value": string(), "effect": {"type": "string", "enum": ["NoSchedule"]}},
    });
    let member = in_code::definition(
        &names(CLUSTER_GROUP, "MemberCluster", "memberclusters", false, &["cluster"], &["fleet", "fleet-cluster"]),
        json!([
            condition_column("Joined", "Joined"),
            age(),
            column(
                "Member-Agent-Last-Seen",
                "date",
                ".status.agentStatus[?(@.type==\"MemberAgent\")].lastReceivedHeartbeat"
            ),
            column("Node-Count", "string", ".status.properties.kubernetes-fleet\\.io/node-count.value"),
            column("Available-CPU", "string", ".status.resourceUsage.available.cpu"),
            column("Available-Memory", "string", ".status.resourceUsage.available.memory"),
        ]),
        json!({
            "spec": {"type": "object", "required": ["identity"], "properties": {
                "identity": free(),
                "heartbeatPeriodSeconds": {"type": "integer", "format": "int32", "default": 60, "minimum": 1, "maximum": 600},
                "taints": {"type": "array", "maxItems": 100, "items": taint},
            }},
            "status": {"type": "object", "properties": {
                "conditions": conditions(),
                "properties": free(),
                "resourceUsage": free(),
                "agentStatus": list_of(free()),
            }},
        }),
    );
    let selector = json!({
        "type": "object",
        "required": ["group", "version", "kind"],
        "properties": {
            "group": string(), "version": string(), "kind": string(), "name": string(),
            "labelSelector": free(),
            "selectionScope": {"type": "string", "enum": ["NamespaceOnly", "NamespaceWithResources"]},
        },
    });
    // KubeFleet's Toleration: the operator defaults to Equal, NoSchedule is the one effect.
    let toleration = json!({"type": "object", "properties": {
        "key": string(),
        "operator": {"type": "string", "enum": ["Equal", "Exists"], "default": "Equal"},
        "value": string(),
        "effect": {"type": "string", "enum": ["NoSchedule"]},
    }});
    // KubeFleet's defaults; what else a constraint holds is checked with the placement.
    let spread = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
        "maxSkew": {"type": "integer", "format": "int32", "default": 1},
        "topologyKey": string(),
        "whenUnsatisfiable": {"type": "string", "default": "DoNotSchedule"},
    }});
    let rolling = json!({"type": "object", "default": {}, "properties": {
        "maxUnavailable": int_or_string("25%"),
        "maxSurge": int_or_string("25%"),
        "unavailablePeriodSeconds": {"type": "integer", "default": 60, "minimum": 0},
    }});
    let crp = in_code::definition(
        &names(
            PLACEMENT_GROUP,
            "ClusterResourcePlacement",
            "clusterresourceplacements",
            false,
            &["crp"],
            PLACEMENT_CATEGORIES,
        ),
        json!([
            column("Gen", "string", ".metadata.generation"),
            condition_column("Scheduled", "ClusterResourcePlacementScheduled"),
            gen_column("Scheduled-Gen", "ClusterResourcePlacementScheduled"),
            condition_column("Available", "ClusterResourcePlacementAvailable"),
            gen_column("Available-Gen", "ClusterResourcePlacementAvailable"),
            age(),
        ]),
        json!({
            "spec": {"type": "object", "required": ["resourceSelectors"], "properties": {
                "resourceSelectors": {"type": "array", "minItems": 1, "maxItems": 100, "items": selector},
                "policy": {"type": "object", "properties": {
                    "placementType": {"type": "string", "enum": ["PickAll", "PickN", "PickFixed"], "default": "PickAll"},
                    "clusterNames": {"type": "array", "maxItems": 100, "items": string()},
                    "numberOfClusters": {"type": "integer", "format": "int32", "minimum": 0},
                    "affinity": free(),
                    "topologySpreadConstraints": list_of(spread),
                    "tolerations": {"type": "array", "maxItems": 100, "items": toleration},
                }},
                "strategy": {"type": "object", "default": {}, "properties": {
                    "type": {"type": "string", "enum": ["RollingUpdate"], "default": "RollingUpdate"},
                    "rollingUpdate": rolling,
                    "applyStrategy": free(),
                }},
                "revisionHistoryLimit": {"type": "integer", "format": "int32", "default": 10, "minimum": 1, "maximum": 1000},
            }},
            "status": {"type": "object", "properties": {
                "selectedResources": list_of(free()),
                "observedResourceIndex": string(),
                "placementStatuses": list_of(free()),
                "conditions": conditions(),
            }},
        }),
    );
    let policy_snapshot = in_code::definition(
        &names(
            PLACEMENT_GROUP,
            "ClusterSchedulingPolicySnapshot",
            "clusterschedulingpolicysnapshots",
            false,
            &["csps"],
            PLACEMENT_CATEGORIES,
        ),
        json!([column("Gen", "string", ".metadata.generation"), age()]),
        json!({
            "spec": {"type": "object", "properties": {"policy": free(), "policyHash": {"type": "string", "format": "byte"}}},
            "status": {"type": "object", "properties": {
                "observedCRPGeneration": {"type": "integer", "format": "int64"},
                "conditions": conditions(),
                "targetClusters": list_of(free()),
            }},
        }),
    );
    let resource_snapshot = in_code::definition(
        &names(
            PLACEMENT_GROUP,
            "ClusterResourceSnapshot",
            "clusterresourcesnapshots",
            false,
            &["crs"],
            PLACEMENT_CATEGORIES,
        ),
        json!([column("Gen", "string", ".metadata.generation"), age()]),
        json!({"spec": {"type": "object", "properties": {"selectedResources": list_of(free())}}}),
    );
    let binding = in_code::definition(
        &names(
            PLACEMENT_GROUP,
            "ClusterResourceBinding",
            "clusterresourcebindings",
            false,
            &["crb"],
            PLACEMENT_CATEGORIES,
        ),
        json!([
            condition_column("WorkSynchronized", "WorkSynchronized"),
            condition_column("ResourcesApplied", "Applied"),
            condition_column("ResourceAvailable", "Available"),
            age(),
        ]),
        json!({
            "spec": {"type": "object", "required": ["state", "targetCluster"], "properties": {
                "state": {"type": "string", "enum": ["Scheduled", "Bound", "Unscheduled"]},
                "resourceSnapshotName": string(),
                "schedulingPolicySnapshotName": string(),
                "targetCluster": string(),
                "clusterDecision": free(),
                "resourceOverrideSnapshots": list_of(free()),
                "clusterResourceOverrideSnapshots": list_of(free()),
                "applyStrategy": free(),
            }},
            "status": {"type": "object", "properties": {"conditions": conditions(), "failedPlacements": list_of(free())}},
        }),
    );
    let work = in_code::definition(
        &names(PLACEMENT_GROUP, "Work", "works", true, &[], PLACEMENT_CATEGORIES),
        json!([condition_column("Applied", "Applied"), condition_column("Available", "Available"), age()]),
        json!({
            "spec": {"type": "object", "properties": {
                "workload": {"type": "object", "properties": {"manifests": list_of(free())}},
                "applyStrategy": free(),
            }},
            "status": {"type": "object", "properties": {"conditions": conditions(), "manifestConditions": list_of(free())}},
        }),
    );
    let rules = json!({"type": "object", "properties": {"overrideRules": {
        "type": "array", "minItems": 1, "maxItems": 20,
        "items": {"type": "object", "properties": {
            "clusterSelector": free(),
            "overrideType": {"type": "string", "enum": ["JSONPatch", "Delete"], "default": "JSONPatch"},
            "jsonPatchOverrides": {"type": "array", "maxItems": 20, "items": {
                "type": "object", "required": ["op", "path"],
                "properties": {
                    "op": {"type": "string", "enum": ["add", "remove", "replace"]},
                    "path": string(),
                    "value": {"x-kubernetes-preserve-unknown-fields": true},
                },
            }},
        }},
    }}});
    let cluster_override = in_code::definition(
        &names(
            PLACEMENT_GROUP,
            "ClusterResourceOverride",
            "clusterresourceoverrides",
            false,
            &[],
            PLACEMENT_CATEGORIES,
        ),
        json!([age()]),
        json!({"spec": {"type": "object", "required": ["clusterResourceSelectors", "policy"], "properties": {
            "placement": free(),
            "clusterResourceSelectors": {"type": "array", "minItems": 1, "maxItems": 20, "items": selector.clone()},
            "policy": rules.clone(),
        }}}),
    );
    let resource_override = in_code::definition(
        &names(PLACEMENT_GROUP, "ResourceOverride", "resourceoverrides", true, &[], PLACEMENT_CATEGORIES),
        json!([age()]),
        json!({"spec": {"type": "object", "required": ["resourceSelectors", "policy"], "properties": {
            "placement": free(),
            "resourceSelectors": {"type": "array", "minItems": 1, "maxItems": 20, "items": selector},
            "policy": rules,
        }}}),
    );
    vec![
        member,
        crp,
        policy_snapshot,
        resource_snapshot,
        binding,
        work,
        cluster_override,
        resource_override,
        envelope(RESOURCE_ENVELOPE, "resourceenvelopes", true),
        envelope(CLUSTER_RESOURCE_ENVELOPE, "clusterresourceenvelopes", false),
    ]
}

/// KubeFleet's envelope kinds, served as KubeFleet serves them (`v1beta1` only, no status):
/// a top-level `data` of 1 to 50 named objects.
fn envelope(kind: &str, plural: &str, namespaced: bool) -> Value {
    let names =
        Names { version: "v1beta1", ..names(PLACEMENT_GROUP, kind, plural, namespaced, &[], PLACEMENT_CATEGORIES) };
    let mut definition = in_code::definition(&names, json!([age()]), json!({}));
    let version = &mut definition["spec"]["versions"][0];
    if let Some(version) = version.as_object_mut() {
        version.remove("subresources");
    }
    let schema = &mut version["schema"]["openAPIV3Schema"];
    if let Some(properties) = schema["properties"].as_object_mut() {
        properties.remove("spec");
        properties.remove("status");
        properties.insert(
            "data".into(),
            json!({"type": "object", "minProperties": 1, "maxProperties": 50, "additionalProperties": free()}),
        );
    }
    schema["required"] = json!(["data"]);
    definition
}
