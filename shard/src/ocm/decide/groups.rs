//! A Placement's decision groups (`spec.decisionStrategy.groupStrategy`), pure: reads
//! `clustersPerDecisionGroup` and each `decisionGroups[]` entry's
//! `groupClusterSelector` (label and claim selectors, both of which must match, as in
//! OCM's cluster selector), matches them against the ManagedClusters and hands the rest
//! to the framework's [`placement::decision_groups`].

use placement::{decision_groups, group_length, ClustersPerGroup, DecisionGroup, GroupSelection};
use protocol::meta;
use protocol::selector::LabelSelector;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The decided clusters in the placement's decision groups; Err carries the message of
/// a misconfigured strategy, as OCM words it (its `PlacementMisconfigured` message is
/// `<plugin>:<message>`, with no plugin here).
pub fn groups(placement: &Value, clusters: &[Value], decided: &[String]) -> Result<Vec<DecisionGroup>, String> {
    let strategy = placement.pointer("/spec/decisionStrategy/groupStrategy");
    let per_group = match strategy.and_then(|s| s.get("clustersPerDecisionGroup")) {
        None | Some(Value::Null) => ClustersPerGroup::default(),
        Some(Value::String(text)) => ClustersPerGroup::Text(text.clone()),
        Some(Value::Number(n)) => ClustersPerGroup::Count(n.as_i64().unwrap_or(0)),
        Some(other) => ClustersPerGroup::Text(other.to_string()),
    };
    let length = group_length(&per_group, decided.len()).map_err(|why| format!(":{why}"))?;
    let entries = strategy.and_then(|s| s.get("decisionGroups")).and_then(Value::as_array).cloned().unwrap_or_default();
    let mut configured = Vec::with_capacity(entries.len());
    for entry in &entries {
        let selector = entry.get("groupClusterSelector").cloned().unwrap_or_else(|| json!({}));
        let matches = selector_of(&selector).map_err(|why| format!(":{why}"))?;
        let matching =
            clusters.iter().filter(|&c| matches(c)).filter_map(|c| meta::name(c).map(str::to_string)).collect();
        let name = entry.get("groupName").and_then(Value::as_str).unwrap_or_default().to_string();
        configured.push(GroupSelection { name, matching });
    }
    Ok(decision_groups(&configured, decided, length))
}

/// A group's cluster selector: its label selector over the cluster's labels and its
/// claim selector over the cluster's claims; an absent or empty one matches every cluster.
fn selector_of(selector: &Value) -> Result<impl Fn(&Value) -> bool, String> {
    let labels = parse(selector.get("labelSelector"))?;
    let claims = parse(selector.get("claimSelector"))?;
    Ok(move |cluster: &Value| labels.matches(&meta::labels(cluster)) && claims.matches(&claims_of(cluster)))
}

fn parse(selector: Option<&Value>) -> Result<LabelSelector, String> {
    let selector = selector.cloned().unwrap_or_else(|| json!({}));
    LabelSelector::from_label_selector_json(&selector).map_err(|e| e.to_string())
}

fn claims_of(cluster: &Value) -> BTreeMap<String, String> {
    let claims = cluster.pointer("/status/clusterClaims").and_then(Value::as_array).into_iter().flatten();
    claims.filter_map(|c| Some((c.get("name")?.as_str()?.to_string(), c.get("value")?.as_str()?.to_string()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(name: &str, labels: Value, claims: &[(&str, &str)]) -> Value {
        let claims: Vec<Value> = claims.iter().map(|(n, v)| json!({"name": n, "value": v})).collect();
        json!({"metadata": {"name": name, "labels": labels}, "status": {"clusterClaims": claims}})
    }

    fn placement(strategy: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "apps"}, "spec": {"decisionStrategy": {"groupStrategy": strategy}}})
    }

    fn summary(groups: &[DecisionGroup]) -> Vec<(u32, String, Vec<String>)> {
        groups.iter().map(|g| (g.index, g.name.clone(), g.clusters.clone())).collect()
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn world() -> Vec<Value> {
        vec![
            cluster("c1", json!({"env": "prod"}), &[("region.open-cluster-management.io", "eu")]),
            cluster("c2", json!({"env": "prod"}), &[("region.open-cluster-management.io", "us")]),
            cluster("c3", json!({"env": "dev"}), &[("region.open-cluster-management.io", "eu")]),
            cluster("c4", json!({}), &[]),
            cluster("c5", json!({}), &[]),
        ]
    }

    /// OCM's documented shape: a group by label, then the rest in groups of a number.
    #[test]
    fn a_labelled_group_then_the_rest_in_twos() {
        let strategy = json!({
            "clustersPerDecisionGroup": 2,
            "decisionGroups": [{"groupName": "prod", "groupClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}],
        });
        let decided = strings(&["c5", "c4", "c3", "c2", "c1"]);
        let groups = groups(&placement(strategy), &world(), &decided).unwrap();
        assert_eq!(
            summary(&groups),
            [
                (0, "prod".into(), strings(&["c1", "c2"])),
                (1, "".into(), strings(&["c3", "c4"])),
                (2, "".into(), strings(&["c5"])),
            ]
        );
    }

    #[test]
    fn label_and_claim_selectors_must_both_match() {
        let selector = json!({
            "labelSelector": {"matchLabels": {"env": "prod"}},
            "claimSelector": {"matchExpressions": [{"key": "region.open-cluster-management.io", "operator": "In", "values": ["eu"]}]},
        });
        let strategy = json!({"decisionGroups": [{"groupName": "eu-prod", "groupClusterSelector": selector}]});
        let decided = strings(&["c1", "c2", "c3"]);
        let groups = groups(&placement(strategy), &world(), &decided).unwrap();
        assert_eq!(summary(&groups), [(0, "eu-prod".into(), strings(&["c1"])), (1, "".into(), strings(&["c2", "c3"]))]);
    }

    /// Percentages of the decided clusters, rounded up; the default is all in one group.
    #[test]
    fn percentages_and_the_default() {
        let decided = strings(&["c1", "c2", "c3", "c4", "c5"]);
        let sizes = |strategy: Value| -> Vec<usize> {
            groups(&placement(strategy), &world(), &decided).unwrap().iter().map(|g| g.clusters.len()).collect()
        };
        assert_eq!(sizes(json!({})), [5]);
        assert_eq!(sizes(json!({"clustersPerDecisionGroup": "40%"})), [2, 2, 1]);
        assert_eq!(sizes(json!({"clustersPerDecisionGroup": "30%"})), [2, 2, 1]);
        assert_eq!(sizes(json!({"clustersPerDecisionGroup": "20%"})), [1, 1, 1, 1, 1]);
        assert_eq!(sizes(json!({"clustersPerDecisionGroup": 0})), [5]);
    }

    #[test]
    fn misconfigurations_carry_ocms_message() {
        let decided = strings(&["c1"]);
        let error = groups(&placement(json!({"clustersPerDecisionGroup": "half"})), &world(), &decided).unwrap_err();
        assert_eq!(error, ":half invalid type: string is not a percentage");
        let bad = json!({"decisionGroups": [{"groupName": "x", "groupClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "Bogus"}]}}}]});
        assert!(groups(&placement(bad), &world(), &decided).unwrap_err().starts_with(':'));
    }
}
