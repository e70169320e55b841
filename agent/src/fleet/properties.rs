//! The member's properties and resource usage on its MemberCluster, as KubeFleet's
//! member agent reports them when no property provider is configured (its default,
//! `--property-provider=none`): the property `kubernetes-fleet.io/node-count`, and
//! `status.resourceUsage` with the Nodes' summed `capacity` and `allocatable` CPU and
//! memory and what is `available` of the allocatable once the requests of the Pods that
//! hold resources are taken away, each block with its `observationTime`. Without a
//! provider KubeFleet sets no condition for this (PropertyProviderStarted and
//! ClusterPropertyCollectionSucceeded belong to a configured provider), and neither
//! does the agent.
//!
//! The hub's scheduler reads these as KubeFleet's does (`shard::fleet::policy::candidate`):
//! a property by its name, and `resources.kubernetes-fleet.io/<total|allocatable|available>-<cpu|memory>`
//! from resourceUsage's `capacity`, `allocatable` and `available`.
//!
//! A member that serves no Nodes (a logical cluster of an Atoll installation) reports
//! neither, which is no error; one whose Pods cannot be read reports its Nodes and keeps
//! its last `available`, as KubeFleet's agent does when that list fails.

use crate::node_resources::{self, NodeTotals, Resources};
use kube::Client;
use serde_json::{json, Map, Value};

/// KubeFleet's property with the member's node count.
pub(super) const NODE_COUNT_PROPERTY: &str = "kubernetes-fleet.io/node-count";

/// The `properties` and `resourceUsage` of the MemberCluster's status for Nodes summing to
/// `totals`, with `requested` held by Pods (`None`: the Pods could not be read, so no
/// `available` is reported), observed at `now`.
pub(super) fn status(totals: &NodeTotals, requested: Option<&Resources>, now: &str) -> Map<String, Value> {
    let properties = json!({NODE_COUNT_PROPERTY: {"value": totals.count.to_string(), "observationTime": now}});
    let mut usage = json!({
        "capacity": totals.capacity.to_list(false),
        "allocatable": totals.allocatable.to_list(false),
    });
    if let Some(requested) = requested {
        usage["available"] = Value::Object(totals.allocatable.less(requested).to_list(false));
        usage["observationTime"] = Value::from(now);
    }
    let mut status = Map::new();
    status.insert("properties".into(), properties);
    status.insert("resourceUsage".into(), usage);
    status
}

/// Reads the member's Nodes and Pods and returns [`status`]; `None` when the member
/// serves no Nodes.
pub(super) async fn collect(member: &Client, now: &str) -> anyhow::Result<Option<Map<String, Value>>> {
    let limit = node_resources::NODE_PAGES_MAX;
    let Some(nodes) = node_resources::list(member, "Node", "nodes", limit).await? else {
        return Ok(None);
    };
    if nodes.truncated {
        tracing::warn!(nodes = nodes.items.len(), "the member has more Nodes than are counted; its figures are low");
    }
    let totals = NodeTotals::of(&nodes.items);
    let requested = match node_resources::list(member, "Pod", "pods", node_resources::POD_PAGES_MAX).await {
        Ok(Some(pods)) => {
            if pods.truncated {
                tracing::warn!(
                    pods = pods.items.len(),
                    "the member has more Pods than are counted; the available capacity reported is too high"
                );
            }
            Some(node_resources::requested(&pods.items))
        }
        // A member with Nodes but no Pods API runs nothing on them.
        Ok(None) => Some(Resources::default()),
        Err(error) => {
            tracing::warn!(error = %format!("{error:#}"), "reading the member's Pods failed; available capacity not updated");
            None
        }
    };
    Ok(Some(status(&totals, requested.as_ref(), now)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three members' Nodes and Pods and the status the agent reports for each; the hub's
    /// scheduler test (`shard::fleet::policy`) places by these same statuses.
    const FIXTURE: &str = include_str!("../../testdata/fleet_member_status.json");

    fn list(value: &Value) -> Vec<Value> {
        value.as_array().cloned().unwrap_or_default()
    }

    #[test]
    fn the_fixture_statuses_are_what_the_agent_reports() {
        let fixture: Value = serde_json::from_str(FIXTURE).expect("the fixture is JSON");
        let now = fixture["now"].as_str().expect("now");
        let members = fixture["members"].as_object().expect("members");
        assert_eq!(members.len(), 3);
        for (name, member) in members {
            let totals = NodeTotals::of(&list(&member["nodes"]));
            let requested = node_resources::requested(&list(&member["pods"]));
            let got = Value::Object(status(&totals, Some(&requested), now));
            assert_eq!(got, member["status"], "{name}");
        }
    }

    #[test]
    fn without_pods_read_no_available_is_reported() {
        let nodes = [json!({"status": {"capacity": {"cpu": "4", "memory": "16Gi"},
            "allocatable": {"cpu": "3500m", "memory": "15Gi"}}})];
        let got = Value::Object(status(&NodeTotals::of(&nodes), None, "2026-01-01T00:00:00Z"));
        assert_eq!(
            got,
            json!({
                "properties": {NODE_COUNT_PROPERTY: {"value": "1", "observationTime": "2026-01-01T00:00:00Z"}},
                "resourceUsage": {"capacity": {"cpu": "4", "memory": "16Gi"},
                    "allocatable": {"cpu": "3500m", "memory": "15Gi"}},
            })
        );
    }

    #[test]
    fn a_member_without_nodes_reports_zeroes() {
        let got = Value::Object(status(&NodeTotals::of(&[]), Some(&Resources::default()), "t"));
        assert_eq!(got["properties"][NODE_COUNT_PROPERTY]["value"], "0");
        let zero = json!({"cpu": "0", "memory": "0"});
        assert_eq!(got["resourceUsage"]["capacity"], zero);
        assert_eq!(got["resourceUsage"]["available"], zero);
    }
}
