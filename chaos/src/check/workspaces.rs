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
//!   have stopped and the bounded wait is over.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{History, LogicalClusterRecord, WorkspaceRecord};

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
