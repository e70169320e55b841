//! Writing one Placement's decisions: its PlacementDecision pages per decision group, in
//! the order `placement::plan_groups` gives (so a consumer watching them never sees a
//! cluster that stays decided vanish, also when it changes group), its status with
//! `decisionGroups`, and the Events OCM's scheduler records on the Placement
//! (`DecisionCreate`, `DecisionUpdate`, `DecisionDelete`, `ScoreUpdate`) when, and only
//! when, a page was written.

use super::super::decide::{groups, Condition, MISCONFIGURED_CONDITION};
use super::super::{CLUSTER_GROUP, DECISION_GROUP_INDEX_LABEL, DECISION_GROUP_NAME_LABEL, PLACEMENT_LABEL};
use super::Rows;
use crate::events::EventType;
use crate::state::Shard;
use apiserver::storage::{self, DeletePreconditions, ObjectRef, WriteOptions};
use placement::{DecisionGroup, GroupPage, GroupPageWrite, Outcome};
use protocol::meta;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// OCM keeps a ScoreUpdate message under this many bytes (an Event message may hold
/// 1024) and ends a cut list with `......`.
const SCORE_MESSAGE_BYTES_MAX: usize = 1000;

/// What the decision says about each cluster: the reason written on its decision, its
/// score for the ScoreUpdate event, and the hub's clusters (for group selectors).
pub(super) struct Account<'a> {
    reasons: BTreeMap<String, String>,
    scores: BTreeMap<String, i64>,
    clusters: &'a [Value],
}

impl<'a> Account<'a> {
    /// The account of `decision` (when the framework ran) over the hub's `clusters`.
    pub(super) fn of(decision: Option<&placement::Decision>, clusters: &'a [Value]) -> Account<'a> {
        let reports = decision.into_iter().flat_map(|d| d.clusters.iter());
        let mut reasons = BTreeMap::new();
        let mut scores = BTreeMap::new();
        for report in reports {
            reasons.insert(report.name.clone(), report.reason.clone());
            // OCM's scores are those of every feasible cluster, summed over prioritizers.
            if matches!(report.outcome, Outcome::Picked | Outcome::NotPicked) && !report.scores.is_empty() {
                scores.insert(report.name.clone(), report.total.iter().sum());
            }
        }
        Account { reasons, scores, clusters }
    }
}

/// What writing the pages gave: the groups for the status, and the misconfiguration
/// that replaced them, if the group strategy could not be read.
pub(super) struct Written {
    groups: Vec<Value>,
    misconfigured: Option<Condition>,
}

/// The page a PlacementDecision is: its index from `<placement>-decision-<index>`, its
/// group from its labels (group 0, unnamed, when unlabelled) and its clusters.
pub(super) fn page(placement: &str, decision: &Value) -> Option<GroupPage> {
    let index = meta::name(decision)?.strip_prefix(placement)?.strip_prefix("-decision-")?.parse().ok()?;
    let labels = meta::labels(decision);
    let group = labels.get(DECISION_GROUP_INDEX_LABEL).and_then(|i| i.parse().ok()).unwrap_or(0);
    let group_name = labels.get(DECISION_GROUP_NAME_LABEL).cloned().unwrap_or_default();
    let clusters = decision.pointer("/status/decisions").and_then(Value::as_array).into_iter().flatten();
    let clusters = clusters.filter_map(|d| d.get("clusterName")?.as_str().map(str::to_string)).collect();
    Some(GroupPage { index, group, group_name, clusters })
}

/// Writes the placement's pages for `chosen` in its decision groups, then its events.
pub(super) async fn write_pages(
    shard: &Shard,
    rows: &Rows,
    cluster: &str,
    placement: &Value,
    pages: &[GroupPage],
    chosen: &[String],
    account: &Account<'_>,
) -> anyhow::Result<Written> {
    let namespace = meta::namespace(placement).unwrap_or_default();
    let name = meta::name(placement).unwrap_or_default();
    // A strategy OCM cannot read leaves the placement without decision groups, and so
    // without pages, as OCM's scheduler does; the condition says why.
    let (groups, misconfigured) = match groups::groups(placement, account.clusters, chosen) {
        Ok(groups) => (groups, None),
        Err(message) => {
            let condition =
                Condition { kind: MISCONFIGURED_CONDITION, status: true, reason: "Misconfigured".into(), message };
            (Vec::new(), Some(condition))
        }
    };
    let plan = placement::plan_groups(pages, &groups, placement::CLUSTERS_PER_PAGE);
    let page_name = |index: u32| format!("{name}-decision-{index}");
    let existing: BTreeSet<u32> = pages.iter().map(|p| p.index).collect();
    // (reason, verb, page) of each event, once per page however often it was written.
    let mut events: BTreeSet<(&str, &str, String)> = BTreeSet::new();
    for write in &plan.writes {
        match write {
            GroupPageWrite::Put(page) => {
                let created = put_page(shard, rows, cluster, placement, page, &account.reasons).await?;
                let decision_name = page_name(page.index);
                if created || !existing.contains(&page.index) {
                    events.insert(("DecisionCreate", "created", decision_name));
                } else {
                    events.insert(("DecisionUpdate", "updated", decision_name));
                }
            }
            GroupPageWrite::Delete(index) => {
                let decision_name = page_name(*index);
                let at = ObjectRef { cluster, namespace: Some(namespace), name: &decision_name };
                let rt = &rows.decisions;
                match storage::delete(shard, rt, &at, &DeletePreconditions::default(), WriteOptions::default()).await {
                    Ok(_) => {}
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(anyhow::anyhow!("delete {decision_name}: {}", e.message)),
                }
                events.insert(("DecisionDelete", "deleted", decision_name));
            }
        }
    }
    for (reason, verb, decision_name) in &events {
        let message = format!("Decision {decision_name} is {verb} with placement {name} in namespace {namespace}");
        rows.events.record(shard, cluster, placement, EventType::Normal, reason, &message).await;
    }
    if !events.is_empty() {
        let message = score_message(&account.scores);
        rows.events.record(shard, cluster, placement, EventType::Normal, "ScoreUpdate", &message).await;
    }
    let groups = groups.iter().map(|group| group_status(group, plan.pages_of(group.index).map(page_name))).collect();
    Ok(Written { groups, misconfigured })
}

/// Creates the page if it is missing and writes its decisions; returns whether it was
/// created.
async fn put_page(
    shard: &Shard,
    rows: &Rows,
    cluster: &str,
    placement: &Value,
    page: &GroupPage,
    reasons: &BTreeMap<String, String>,
) -> anyhow::Result<bool> {
    let namespace = meta::namespace(placement).unwrap_or_default();
    let name = meta::name(placement).unwrap_or_default();
    let decision_name = format!("{name}-decision-{}", page.index);
    let rt = &rows.decisions;
    let at = ObjectRef { cluster, namespace: Some(namespace), name: &decision_name };
    let mut created = false;
    if storage::get(shard, rt, &at).is_err() {
        let object = json!({
            "apiVersion": format!("{CLUSTER_GROUP}/v1beta1"),
            "kind": super::super::PLACEMENT_DECISION_KIND,
            "metadata": {
                "name": decision_name,
                "namespace": namespace,
                "labels": {
                    PLACEMENT_LABEL: name,
                    DECISION_GROUP_INDEX_LABEL: page.group.to_string(),
                    DECISION_GROUP_NAME_LABEL: page.group_name,
                },
                "ownerReferences": [{
                    "apiVersion": format!("{CLUSTER_GROUP}/v1beta1"),
                    "kind": super::super::PLACEMENT_KIND,
                    "name": name,
                    "uid": meta::meta_str(placement, "uid").unwrap_or_default(),
                    "controller": true,
                    "blockOwnerDeletion": true,
                }],
            },
        });
        match storage::create(shard, rt, cluster, object, WriteOptions::default()).await {
            Ok(_) => created = true,
            Err(e) if e.is_already_exists() => {}
            Err(e) => return Err(anyhow::anyhow!("create {decision_name}: {}", e.message)),
        }
    }
    let decisions: Vec<Value> = page
        .clusters
        .iter()
        .map(|c| json!({"clusterName": c, "reason": reasons.get(c).cloned().unwrap_or_default()}))
        .collect();
    storage::guaranteed_update(shard, rt, &at, Some("status"), WriteOptions::default(), |old| {
        let mut new = old.clone();
        new["status"] = json!({"decisions": decisions});
        Ok(new)
    })
    .await
    .map_err(|e| anyhow::anyhow!("write {decision_name}: {}", e.message))?;
    Ok(created)
}

/// One `status.decisionGroups[]` entry.
fn group_status(group: &DecisionGroup, pages: impl Iterator<Item = String>) -> Value {
    json!({
        "decisionGroupIndex": group.index,
        "decisionGroupName": group.name,
        "decisions": pages.collect::<Vec<_>>(),
        "clustersCount": group.clusters.len(),
    })
}

/// OCM's ScoreUpdate message: `name:score ` per cluster (here by name), cut with `......`
/// before it would pass [`SCORE_MESSAGE_BYTES_MAX`].
fn score_message(scores: &BTreeMap<String, i64>) -> String {
    let mut message = String::new();
    for (cluster, score) in scores {
        let entry = format!("{cluster}:{score} ");
        if message.len() + entry.len() > SCORE_MESSAGE_BYTES_MAX {
            message.push_str("......");
            break;
        }
        message.push_str(&entry);
    }
    message
}

/// Writes the placement's status when it says something new.
pub(super) async fn write_status(
    shard: &Shard,
    rows: &Rows,
    cluster: &str,
    placement: &Value,
    conditions: &[Condition],
    selected: usize,
    written: &Written,
) -> anyhow::Result<()> {
    let conditions: Vec<Value> = conditions
        .iter()
        .map(|c| match &written.misconfigured {
            Some(misconfigured) if c.kind == MISCONFIGURED_CONDITION => misconfigured,
            _ => c,
        })
        .map(|c| {
            json!({
                "type": c.kind,
                "status": if c.status { "True" } else { "False" },
                "reason": c.reason,
                "message": c.message,
                "observedGeneration": placement.pointer("/metadata/generation").cloned().unwrap_or(json!(0)),
            })
        })
        .collect();
    let wanted = json!({
        "numberOfSelectedClusters": selected,
        "conditions": conditions,
        "decisionGroups": written.groups,
    });
    let current = placement.get("status").cloned().unwrap_or(Value::Null);
    if apiserver::conditions::same_status(&current, &wanted) {
        return Ok(());
    }
    let name = meta::name(placement).unwrap_or_default();
    let at = ObjectRef { cluster, namespace: meta::namespace(placement), name };
    storage::guaranteed_update(shard, &rows.placements, &at, Some("status"), WriteOptions::default(), |old| {
        let mut new = old.clone();
        new["status"] = apiserver::conditions::with_transition_times(old.get("status"), &wanted);
        Ok(new)
    })
    .await
    .map(|_| ())
    .map_err(|e| anyhow::anyhow!("write status of placement {name}: {}", e.message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_messages_list_name_and_score_and_are_cut_as_ocm_cuts_them() {
        let scores: BTreeMap<String, i64> = [("cluster1".to_string(), 200), ("cluster2".to_string(), 100)].into();
        assert_eq!(score_message(&scores), "cluster1:200 cluster2:100 ");
        let many: BTreeMap<String, i64> = (0..200).map(|i| (format!("cluster-{i:03}"), 100)).collect();
        let message = score_message(&many);
        assert!(message.ends_with("......"));
        assert!(message.len() <= SCORE_MESSAGE_BYTES_MAX + "......".len());
        assert!(message.len() > SCORE_MESSAGE_BYTES_MAX - "cluster-000:100 ".len());
    }

    #[test]
    fn pages_read_their_group_from_their_labels() {
        let decision = json!({
            "metadata": {"name": "p-decision-3", "labels": {DECISION_GROUP_INDEX_LABEL: "2", DECISION_GROUP_NAME_LABEL: "prod"}},
            "status": {"decisions": [{"clusterName": "c1", "reason": ""}]},
        });
        let page = page("p", &decision).unwrap();
        assert_eq!((page.index, page.group, page.group_name.as_str()), (3, 2, "prod"));
        assert_eq!(page.clusters, ["c1"]);
        let unlabelled = json!({"metadata": {"name": "p-decision-1"}});
        assert_eq!(super::page("p", &unlabelled).map(|p| (p.group, p.group_name)), Some((0, String::new())));
        assert!(super::page("p", &json!({"metadata": {"name": "q-decision-1"}})).is_none());
    }
}
