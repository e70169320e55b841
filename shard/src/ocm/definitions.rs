//! The OCM kinds as definitions in code ([`crate::crd::in_code`]): the groups, versions,
//! names, scopes, subresources and printer columns OCM's hub serves. The schemas spell
//! out the fields placement reads and keep the rest (selectors, policies, strategies)
//! free-form.

use crate::crd::in_code::{self, age, column, condition_column, conditions, free, list_of, string, Names};
use serde_json::{json, Value};

use super::{
    ADDON_PLACEMENT_SCORE_KIND, CLUSTER_CLAIM_KIND, CLUSTER_GROUP, MANAGED_CLUSTER_KIND,
    MANAGED_CLUSTER_SET_BINDING_KIND, MANAGED_CLUSTER_SET_KIND, PLACEMENT_DECISION_KIND, PLACEMENT_KIND,
};

/// One OCM definition: `kind` in `version`, its plural, scope, columns and schema.
fn definition(
    kind: &str,
    plural: &str,
    version: &str,
    namespaced: bool,
    short_names: &[&str],
    columns: Value,
    schema: Value,
) -> Value {
    let names = Names { group: CLUSTER_GROUP, version, kind, plural, namespaced, short_names, categories: &["ocm"] };
    in_code::definition(&names, columns, schema)
}

/// Every OCM definition Atoll serves.
pub fn all() -> Vec<Value> {
    let taint = json!({
        "type": "object",
        "required": ["key", "effect"],
        "properties": {
            "key": string(),
            "value": string(),
            "effect": {"type": "string", "enum": ["NoSelect", "PreferNoSelect", "NoSelectIfNew"]},
            "timeAdded": {"type": "string", "format": "date-time", "nullable": true},
        },
    });
    let quantities = json!({"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}});
    let managed_cluster = definition(
        MANAGED_CLUSTER_KIND,
        "managedclusters",
        "v1",
        false,
        &["mcl", "mcls"],
        json!([
            column("Hub Accepted", "boolean", ".spec.hubAcceptsClient"),
            column("Managed Cluster URLs", "string", ".spec.managedClusterClientConfigs[*].url"),
            condition_column("Joined", "ManagedClusterJoined"),
            condition_column("Available", "ManagedClusterConditionAvailable"),
            age(),
        ]),
        json!({
            "spec": {"type": "object", "properties": {
                "hubAcceptsClient": {"type": "boolean"},
                "managedClusterClientConfigs": list_of(free()),
                "leaseDurationSeconds": {"type": "integer", "format": "int32", "default": 60},
                "taints": list_of(taint),
            }},
            "status": {"type": "object", "properties": {
                "conditions": conditions(),
                "capacity": quantities.clone(),
                "allocatable": quantities,
                "version": free(),
                "clusterClaims": list_of(json!({"type": "object", "properties": {"name": string(), "value": string()}})),
            }},
        }),
    );
    let cluster_set = definition(
        MANAGED_CLUSTER_SET_KIND,
        "managedclustersets",
        "v1beta2",
        false,
        &["mclset", "mclsets"],
        json!([condition_column("Empty", "ClusterSetEmpty"), age()]),
        json!({
            "spec": {"type": "object", "properties": {
                "clusterSelector": {"type": "object", "properties": {
                    "selectorType": {
                        "type": "string",
                        "enum": ["ExclusiveClusterSetLabel", "LabelSelector", "PlacementSelector"],
                        "default": "ExclusiveClusterSetLabel",
                    },
                    "labelSelector": free(),
                }},
            }},
            "status": {"type": "object", "properties": {"conditions": conditions()}},
        }),
    );
    let binding = definition(
        MANAGED_CLUSTER_SET_BINDING_KIND,
        "managedclustersetbindings",
        "v1beta2",
        true,
        &["mclsetbinding", "mclsetbindings"],
        json!([condition_column("Bound", "Bound"), age()]),
        json!({
            "spec": {"type": "object", "required": ["clusterSet"], "properties": {"clusterSet": string()}},
            "status": {"type": "object", "properties": {"conditions": conditions()}},
        }),
    );
    let placement = definition(
        PLACEMENT_KIND,
        "placements",
        "v1beta1",
        true,
        &[],
        json!([
            condition_column("Succeeded", "PlacementSatisfied"),
            column("Reason", "string", ".status.conditions[?(@.type==\"PlacementSatisfied\")].reason"),
            column("SelectedClusters", "integer", ".status.numberOfSelectedClusters"),
        ]),
        json!({
            "spec": {"type": "object", "properties": {
                "clusterSets": list_of(string()),
                "numberOfClusters": {"type": "integer", "format": "int32", "minimum": 0},
                "predicates": list_of(free()),
                "prioritizerPolicy": free(),
                "spreadPolicy": free(),
                "tolerations": list_of(free()),
                "decisionStrategy": {"type": "object", "properties": {
                    "groupStrategy": {"type": "object", "properties": {
                        "decisionGroups": list_of(json!({"type": "object", "properties": {
                            "groupName": string(),
                            "groupClusterSelector": free(),
                        }})),
                        // OCM's pattern: 1-100% or a positive count, default all in one group.
                        "clustersPerDecisionGroup": {
                            "x-kubernetes-int-or-string": true,
                            "pattern": "^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$",
                            "default": "100%",
                        },
                    }},
                }},
            }},
            "status": {"type": "object", "properties": {
                "numberOfSelectedClusters": {"type": "integer", "format": "int32"},
                "conditions": conditions(),
                "decisionGroups": list_of(free()),
            }},
        }),
    );
    let decision = definition(
        PLACEMENT_DECISION_KIND,
        "placementdecisions",
        "v1beta1",
        true,
        &[],
        json!([age()]),
        json!({
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "status": {"type": "object", "properties": {
                "decisions": list_of(json!({
                    "type": "object",
                    "required": ["clusterName", "reason"],
                    "properties": {"clusterName": string(), "reason": string()},
                })),
            }},
        }),
    );
    let score = definition(
        ADDON_PLACEMENT_SCORE_KIND,
        "addonplacementscores",
        "v1alpha1",
        true,
        &[],
        json!([age()]),
        json!({
            "status": {"type": "object", "properties": {
                "conditions": conditions(),
                "scores": list_of(json!({
                    "type": "object",
                    "required": ["name", "value"],
                    "properties": {"name": string(), "value": {"type": "integer", "format": "int32"}},
                })),
                "validUntil": {"type": "string", "format": "date-time", "nullable": true},
            }},
        }),
    );
    // On a managed cluster: facts about it its registration agent reports to the hub.
    let claim = definition(
        CLUSTER_CLAIM_KIND,
        "clusterclaims",
        "v1alpha1",
        false,
        &[],
        json!([age()]),
        json!({"spec": {"type": "object", "properties": {"value": string()}}}),
    );
    vec![managed_cluster, cluster_set, binding, placement, decision, score, claim]
}
