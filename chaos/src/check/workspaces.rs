//! The workspace checker: the final Workspaces of a storm against the LogicalClusters
//! every shard holds, read after healing and a bounded wait for scheduling to settle.
//!
//! - **ready-has-one-cluster**: a Ready Workspace names a logical cluster and a shard,
//!   and exactly one LogicalCluster of that name exists in the whole installation, on
//!   that shard, owned by that Workspace (its UID);
//! - **no-orphan**: every LogicalCluster owned by a Workspace belongs to a Workspace that
//!   still exists (same UID): a completed deletion leaves no logical cluster behind, on
//!   any shard;
//! - **not-stuck**: no Workspace is still Scheduling (or without a phase) once the faults
//!   have stopped and the bounded wait is over;
//! - **deleted-stays-gone**: no Workspace whose delete the storm was acknowledged (2xx)
//!   exists at the end, not even one still being deleted: a deletion that does not
//!   finish within the bounded wait is as wrong as one that is undone;
//! - **created-survives**: a Workspace whose create was acknowledged, and which the storm
//!   never tried to delete, exists at the end with the UID the create answered with.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{History, LogicalClusterRecord, OperationKind, Outcome, WorkspaceOperation, WorkspaceRecord};

use super::Violation;

const CHECKER: &str = "workspaces";

/// Judges the final Workspaces and LogicalClusters of `history`.
pub fn check(history: &History) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut by_name: BTreeMap<&str, Vec<&LogicalClusterRecord>> = BTreeMap::new();
    for lc in &history.logical_clusters {
        by_name.entry(lc.name.as_str()).or_default().push(lc);
    }
    for workspace in &history.workspaces {
        if workspace.phase == "Ready" {
            if let Some(problem) = ready_problem(workspace, &by_name) {
                violations.push(Violation::new(CHECKER, "ready-has-one-cluster", problem));
            }
        }
        if !workspace.deleting && (workspace.phase.is_empty() || workspace.phase == "Scheduling") {
            let phase = if workspace.phase.is_empty() { "no phase" } else { "Scheduling" };
            violations.push(Violation::new(
                CHECKER,
                "not-stuck",
                format!("workspace {} is still {phase}", workspace.name),
            ));
        }
    }
    let owners: BTreeSet<&str> = history.workspaces.iter().map(|w| w.uid.as_str()).collect();
    for lc in &history.logical_clusters {
        if !owners.contains(lc.owner_uid.as_str()) {
            violations.push(Violation::new(
                CHECKER,
                "no-orphan",
                format!(
                    "logical cluster {} on {} outlived its workspace {} (uid {})",
                    lc.name, lc.shard, lc.owner_name, lc.owner_uid
                ),
            ));
        }
    }
    violations.extend(acknowledged(history));
    violations
}

/// The storm's acknowledged creates and deletes against the final Workspaces, matched by
/// parent and name (a run may record the Workspaces of more than one parent, and names
/// repeat across parents).
fn acknowledged(history: &History) -> Vec<Violation> {
    let finals: BTreeMap<(&str, &str), &WorkspaceRecord> =
        history.workspaces.iter().map(|w| ((w.parent.as_str(), w.name.as_str()), w)).collect();
    let ops = &history.workspace_operations;
    let acked = |op: &&WorkspaceOperation| matches!(op.outcome, Outcome::Ok { .. });
    let mut violations = Vec::new();
    for delete in ops.iter().filter(|op| op.kind == OperationKind::Delete).filter(acked) {
        if let Some(left) = finals.get(&(delete.parent.as_str(), delete.name.as_str())) {
            let state = if left.deleting { "still being deleted" } else { "still there" };
            violations.push(Violation::new(
                CHECKER,
                "deleted-stays-gone",
                format!(
                    "workspace {} in {} (uid {}) is {state} at the end; its delete was acknowledged at {} ms",
                    delete.name, delete.parent, left.uid, delete.complete_ms
                ),
            ));
        }
    }
    let delete_tried: BTreeSet<(&str, &str)> = ops
        .iter()
        .filter(|op| op.kind == OperationKind::Delete)
        .map(|op| (op.parent.as_str(), op.name.as_str()))
        .collect();
    for create in ops.iter().filter(|op| op.kind == OperationKind::Create).filter(acked) {
        let key = (create.parent.as_str(), create.name.as_str());
        if delete_tried.contains(&key) {
            continue;
        }
        let problem = match finals.get(&key) {
            None => "is gone at the end".to_string(),
            Some(found) if create.uid.as_ref().is_some_and(|uid| *uid != found.uid) => {
                format!("has uid {} at the end, not {}", found.uid, create.uid.as_deref().unwrap_or_default())
            }
            Some(_) => continue,
        };
        violations.push(Violation::new(
            CHECKER,
            "created-survives",
            format!(
                "workspace {} in {}, whose create was acknowledged at {} ms and never deleted, {problem}",
                create.name, create.parent, create.complete_ms
            ),
        ));
    }
    violations
}

/// What is wrong with a Ready workspace's logical cluster, if anything.
fn ready_problem(workspace: &WorkspaceRecord, by_name: &BTreeMap<&str, Vec<&LogicalClusterRecord>>) -> Option<String> {
    let name = &workspace.name;
    let (Some(cluster), Some(shard)) = (&workspace.cluster, &workspace.shard) else {
        return Some(format!("Ready workspace {name} names no logical cluster or shard"));
    };
    let found = by_name.get(cluster.as_str()).map(Vec::as_slice).unwrap_or_default();
    match found {
        [] => Some(format!("Ready workspace {name}: logical cluster {cluster} exists on no shard")),
        [lc] if &lc.shard != shard => {
            Some(format!("Ready workspace {name}: logical cluster {cluster} is on {}, not on {shard}", lc.shard))
        }
        [lc] if lc.owner_uid != workspace.uid => Some(format!(
            "Ready workspace {name}: logical cluster {cluster} is owned by {} (uid {}), not by it (uid {})",
            lc.owner_name, lc.owner_uid, workspace.uid
        )),
        [_] => None,
        many => {
            let shards: Vec<&str> = many.iter().map(|lc| lc.shard.as_str()).collect();
            Some(format!("Ready workspace {name}: logical cluster {cluster} exists {} times: {shards:?}", many.len()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(name: &str, phase: &str, cluster: Option<&str>, shard: Option<&str>) -> WorkspaceRecord {
        WorkspaceRecord {
            parent: "root".to_string(),
            name: name.to_string(),
            uid: format!("uid-{name}"),
            phase: phase.to_string(),
            cluster: cluster.map(str::to_string),
            shard: shard.map(str::to_string),
            deleting: false,
        }
    }

    fn lc(shard: &str, name: &str, owner: &str) -> LogicalClusterRecord {
        LogicalClusterRecord {
            shard: shard.to_string(),
            name: name.to_string(),
            owner_name: owner.to_string(),
            owner_uid: format!("uid-{owner}"),
        }
    }

    fn guarantees(workspaces: Vec<WorkspaceRecord>, logical_clusters: Vec<LogicalClusterRecord>) -> Vec<String> {
        let history = History { workspaces, logical_clusters, ..History::default() };
        check(&history).into_iter().map(|v| v.guarantee).collect()
    }

    fn ready(name: &str, cluster: &str, shard: &str) -> WorkspaceRecord {
        workspace(name, "Ready", Some(cluster), Some(shard))
    }

    #[test]
    fn a_consistent_final_state_passes() {
        let found = guarantees(
            vec![ready("a", "c1", "root"), ready("b", "c2", "shard-1"), workspace("c", "Initializing", None, None)],
            vec![lc("root", "c1", "a"), lc("shard-1", "c2", "b")],
        );
        assert_eq!(found, Vec::<String>::new());
    }

    #[test]
    fn catches_a_ready_workspace_without_its_cluster() {
        assert_eq!(guarantees(vec![ready("a", "c1", "root")], vec![]), ["ready-has-one-cluster"]);
        let unnamed = workspace("a", "Ready", None, Some("root"));
        assert_eq!(guarantees(vec![unnamed], vec![]), ["ready-has-one-cluster"]);
    }

    #[test]
    fn catches_a_cluster_on_another_shard_than_the_workspace_names() {
        assert_eq!(
            guarantees(vec![ready("a", "c1", "root")], vec![lc("shard-1", "c1", "a")]),
            ["ready-has-one-cluster"]
        );
    }

    #[test]
    fn catches_a_cluster_owned_by_someone_else() {
        let mut squatter = lc("root", "c1", "a");
        squatter.owner_uid = "uid-of-an-older-a".to_string();
        // Also an orphan: no workspace has that UID.
        assert_eq!(guarantees(vec![ready("a", "c1", "root")], vec![squatter]), ["ready-has-one-cluster", "no-orphan"]);
    }

    #[test]
    fn catches_a_cluster_that_exists_twice() {
        let found = guarantees(vec![ready("a", "c1", "root")], vec![lc("root", "c1", "a"), lc("shard-1", "c1", "a")]);
        assert_eq!(found, ["ready-has-one-cluster"]);
    }

    #[test]
    fn catches_a_cluster_left_by_a_deleted_workspace() {
        let found =
            guarantees(vec![ready("a", "c1", "root")], vec![lc("root", "c1", "a"), lc("shard-1", "c9", "gone")]);
        assert_eq!(found, ["no-orphan"]);
    }

    fn op(name: &str, kind: OperationKind, outcome: Outcome) -> crate::history::WorkspaceOperation {
        let uid =
            (kind == OperationKind::Create && matches!(outcome, Outcome::Ok { .. })).then(|| format!("uid-{name}"));
        crate::history::WorkspaceOperation {
            parent: "root".to_string(),
            name: name.to_string(),
            kind,
            uid,
            invoke_ms: 10,
            complete_ms: 20,
            outcome,
        }
    }

    fn ok() -> Outcome {
        Outcome::Ok { rv: 7, value: None }
    }

    fn judged(
        workspaces: Vec<WorkspaceRecord>,
        workspace_operations: Vec<crate::history::WorkspaceOperation>,
    ) -> Vec<String> {
        let logical_clusters = workspaces
            .iter()
            .map(|w| LogicalClusterRecord {
                owner_uid: w.uid.clone(),
                ..lc("root", w.cluster.as_deref().unwrap_or_default(), &w.name)
            })
            .collect();
        let history = History { workspaces, logical_clusters, workspace_operations, ..History::default() };
        check(&history).into_iter().map(|v| v.guarantee).collect()
    }

    #[test]
    fn acknowledged_operations_that_the_end_state_honours_pass() {
        let ops = vec![
            op("kept", OperationKind::Create, ok()),
            op("gone", OperationKind::Create, ok()),
            op("gone", OperationKind::Delete, ok()),
            // A delete whose answer was lost, then a 404 for the retry: not judged.
            op("maybe", OperationKind::Create, ok()),
            op("maybe", OperationKind::Delete, Outcome::Unknown { reason: "connection reset".to_string() }),
            // A create whose answer was lost may or may not have happened.
            op("unknown", OperationKind::Create, Outcome::Unknown { reason: "HTTP 503".to_string() }),
        ];
        let found = judged(vec![ready("kept", "c1", "root"), ready("maybe", "c2", "root")], ops.clone());
        assert_eq!(found, Vec::<String>::new());
        assert_eq!(
            judged(vec![ready("kept", "c1", "root"), ready("unknown", "c3", "root")], ops),
            Vec::<String>::new()
        );
    }

    #[test]
    fn catches_an_acknowledged_delete_whose_workspace_is_still_there() {
        let ops = vec![op("w", OperationKind::Create, ok()), op("w", OperationKind::Delete, ok())];
        assert_eq!(judged(vec![ready("w", "c1", "root")], ops.clone()), ["deleted-stays-gone"]);
        let mut deleting = ready("w", "c1", "root");
        deleting.deleting = true;
        assert_eq!(judged(vec![deleting], ops.clone()), ["deleted-stays-gone"]);
        // Refused deletes promise nothing.
        let refused =
            vec![op("w", OperationKind::Create, ok()), op("w", OperationKind::Delete, Outcome::Fail { status: 409 })];
        assert_eq!(judged(vec![ready("w", "c1", "root")], refused), Vec::<String>::new());
    }

    #[test]
    fn catches_an_acknowledged_create_that_is_lost_or_replaced() {
        let ops = vec![op("w", OperationKind::Create, ok())];
        assert_eq!(judged(vec![], ops.clone()), ["created-survives"]);
        let mut replaced = ready("w", "c1", "root");
        replaced.uid = "uid-of-another-w".to_string();
        assert_eq!(judged(vec![replaced], ops), ["created-survives"]);
    }

    fn in_parent(parent: &str, mut workspace: WorkspaceRecord) -> WorkspaceRecord {
        workspace.parent = parent.to_string();
        workspace
    }

    fn op_in(parent: &str, name: &str, kind: OperationKind, outcome: Outcome) -> crate::history::WorkspaceOperation {
        crate::history::WorkspaceOperation { parent: parent.to_string(), ..op(name, kind, outcome) }
    }

    #[test]
    fn operations_are_matched_to_workspaces_of_their_own_parent() {
        let (parent, other) = ("root:rd-1", "root");
        // Kept in the parent, deleted in root: the same name in the other parent is neither.
        let ops = vec![
            op_in(parent, "w", OperationKind::Create, ok()),
            op_in(other, "w", OperationKind::Create, ok()),
            op_in(other, "w", OperationKind::Delete, ok()),
        ];
        assert_eq!(judged(vec![in_parent(parent, ready("w", "c1", "root"))], ops.clone()), Vec::<String>::new());
        // The parent's create is not honoured by root's namesake, which must be gone.
        let found = judged(vec![in_parent(other, ready("w", "c2", "root"))], ops);
        assert_eq!(found, ["deleted-stays-gone", "created-survives"]);
        // A delete in the parent is not undone by root's namesake being there.
        let ops =
            vec![op_in(parent, "w", OperationKind::Create, ok()), op_in(parent, "w", OperationKind::Delete, ok())];
        assert_eq!(judged(vec![in_parent(other, ready("w", "c1", "root"))], ops.clone()), Vec::<String>::new());
        assert_eq!(judged(vec![in_parent(parent, ready("w", "c1", "root"))], ops), ["deleted-stays-gone"]);
    }

    #[test]
    fn records_written_before_the_parent_was_are_root_s() {
        let mut record = serde_json::to_value(ready("w", "c1", "root")).unwrap();
        record.as_object_mut().unwrap().remove("parent");
        let record: WorkspaceRecord = serde_json::from_value(record).unwrap();
        assert_eq!(record.parent, "root");
        let mut operation = serde_json::to_value(op_in("root:rd-1", "w", OperationKind::Create, ok())).unwrap();
        operation.as_object_mut().unwrap().remove("parent");
        let operation: crate::history::WorkspaceOperation = serde_json::from_value(operation).unwrap();
        assert_eq!(operation.parent, "root");
    }

    #[test]
    fn catches_a_workspace_stuck_in_scheduling() {
        assert_eq!(guarantees(vec![workspace("s", "Scheduling", None, None)], vec![]), ["not-stuck"]);
        assert_eq!(guarantees(vec![workspace("s", "", None, None)], vec![]), ["not-stuck"]);
        // One being deleted may stay unscheduled: nothing to schedule.
        let mut deleting = workspace("s", "Scheduling", None, None);
        deleting.deleting = true;
        assert_eq!(guarantees(vec![deleting], vec![]), Vec::<String>::new());
    }
}
