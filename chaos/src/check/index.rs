//! The index convergence checker: after healing, the front-proxy resolves exactly the
//! live workspaces. It judges the [`IndexRecord`] against the final Workspaces of the
//! parent (read from its shard directly, not through the proxy).
//!
//! - **live-resolves**: every Ready Workspace not being deleted resolves through the
//!   proxy (2xx) to its own logical cluster (`kcp.io/cluster` is its `spec.cluster`, and
//!   the cluster's owner is its UID), so the proxy routes it to the shard that holds it;
//! - **deleted-stops-resolving**: every Workspace whose delete was acknowledged and that
//!   is gone from the parent answers 403 or 404 through the proxy (the wording shards and
//!   proxy share for "does not exist"): not a 2xx (a stale route), not a 5xx or no
//!   answer (a route to a cluster that is gone);
//! - **index-exact**: the proxy's index holds as many logical clusters as the shards
//!   store together: nothing deleted lingers, nothing live is missing.

use std::collections::BTreeMap;

use crate::history::{History, IndexRecord, PathProbe, WorkspaceRecord};

use super::Violation;

const CHECKER: &str = "index";

/// Judges `history.index`, if the run recorded one.
pub fn check(history: &History) -> Vec<Violation> {
    let Some(index) = &history.index else { return Vec::new() };
    let probes: BTreeMap<&str, &PathProbe> = index.probes.iter().map(|p| (p.workspace.as_str(), p)).collect();
    let mut violations = Vec::new();
    for workspace in history.workspaces.iter().filter(|w| w.phase == "Ready" && !w.deleting) {
        if let Some(problem) = live_problem(index, workspace, probes.get(workspace.name.as_str()).copied()) {
            violations.push(Violation::new(CHECKER, "live-resolves", problem));
        }
    }
    let parent_has = |name: &str| history.workspaces.iter().any(|w| w.name == name);
    for name in index.deleted.iter().filter(|name| !parent_has(name)) {
        let path = format!("{}:{name}", index.parent);
        let problem = match probes.get(name.as_str()) {
            None => Some(format!("deleted workspace {path} was not probed")),
            Some(probe) if matches!(probe.status, 403 | 404) => None,
            Some(probe) => Some(format!(
                "deleted workspace {path} still answers HTTP {} through the front-proxy (cluster {:?})",
                probe.status, probe.cluster
            )),
        };
        if let Some(problem) = problem {
            violations.push(Violation::new(CHECKER, "deleted-stops-resolving", problem));
        }
    }
    match index.indexed_clusters {
        Some(indexed) if indexed == index.stored_clusters => {}
        indexed => violations.push(Violation::new(
            CHECKER,
            "index-exact",
            format!(
                "the front-proxy indexes {} logical clusters, the shards store {}",
                indexed.map_or_else(|| "an unknown number of".to_string(), |n| n.to_string()),
                index.stored_clusters
            ),
        )),
    }
    violations
}

/// What is wrong with a live workspace's route, if anything.
fn live_problem(index: &IndexRecord, workspace: &WorkspaceRecord, probe: Option<&PathProbe>) -> Option<String> {
    let path = format!("{}:{}", index.parent, workspace.name);
    let Some(probe) = probe else { return Some(format!("live workspace {path} was not probed")) };
    if !(200..300).contains(&probe.status) {
        return Some(format!("live workspace {path} answers HTTP {} through the front-proxy", probe.status));
    }
    if probe.cluster != workspace.cluster {
        return Some(format!(
            "live workspace {path} leads to logical cluster {:?}, not to its own {:?}",
            probe.cluster, workspace.cluster
        ));
    }
    if probe.owner_uid.as_deref() != Some(workspace.uid.as_str()) {
        return Some(format!(
            "live workspace {path} leads to a logical cluster owned by {:?}, not by it ({})",
            probe.owner_uid, workspace.uid
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(name: &str, phase: &str) -> WorkspaceRecord {
        WorkspaceRecord {
            parent: "root".to_string(),
            name: name.to_string(),
            uid: format!("uid-{name}"),
            phase: phase.to_string(),
            cluster: Some(format!("lc-{name}")),
            shard: Some("shard-1".to_string()),
            deleting: false,
        }
    }

    fn routed(name: &str) -> PathProbe {
        PathProbe {
            workspace: name.to_string(),
            status: 200,
            cluster: Some(format!("lc-{name}")),
            owner_uid: Some(format!("uid-{name}")),
        }
    }

    fn refused(name: &str, status: u16) -> PathProbe {
        PathProbe { workspace: name.to_string(), status, cluster: None, owner_uid: None }
    }

    /// Workspaces a (live) and b (deleted), probed as given; the index holds 3 clusters
    /// (root and a's, and one more of the workload) as do the shards.
    fn history(probes: Vec<PathProbe>) -> History {
        let index = IndexRecord {
            parent: "root".to_string(),
            deleted: vec!["b".to_string()],
            probes,
            indexed_clusters: Some(3),
            stored_clusters: 3,
        };
        History { workspaces: vec![workspace("a", "Ready")], index: Some(index), ..History::default() }
    }

    fn guarantees(history: &History) -> Vec<String> {
        check(history).into_iter().map(|v| v.guarantee).collect()
    }

    #[test]
    fn a_converged_index_passes() {
        assert_eq!(guarantees(&history(vec![routed("a"), refused("b", 403)])), Vec::<String>::new());
        assert_eq!(guarantees(&history(vec![routed("a"), refused("b", 404)])), Vec::<String>::new());
        assert_eq!(guarantees(&History::default()), Vec::<String>::new());
    }

    #[test]
    fn catches_a_live_workspace_that_does_not_resolve() {
        assert_eq!(guarantees(&history(vec![refused("a", 403), refused("b", 403)])), ["live-resolves"]);
        assert_eq!(guarantees(&history(vec![refused("b", 403)])), ["live-resolves"]);
    }

    #[test]
    fn catches_a_live_workspace_routed_to_another_cluster() {
        let mut stale = routed("a");
        stale.cluster = Some("lc-of-an-older-a".to_string());
        assert_eq!(guarantees(&history(vec![stale, refused("b", 403)])), ["live-resolves"]);
        let mut foreign = routed("a");
        foreign.owner_uid = Some("uid-of-an-older-a".to_string());
        assert_eq!(guarantees(&history(vec![foreign, refused("b", 403)])), ["live-resolves"]);
    }

    #[test]
    fn catches_a_deleted_workspace_that_still_resolves() {
        let mut still = routed("b");
        still.status = 200;
        assert_eq!(guarantees(&history(vec![routed("a"), still])), ["deleted-stops-resolving"]);
        // Routed to a cluster that is gone: the shard is asked and fails.
        assert_eq!(guarantees(&history(vec![routed("a"), refused("b", 503)])), ["deleted-stops-resolving"]);
        assert_eq!(guarantees(&history(vec![routed("a")])), ["deleted-stops-resolving"]);
    }

    #[test]
    fn a_deletion_still_under_way_is_not_judged_as_deleted() {
        let mut h = history(vec![routed("a"), routed("b")]);
        let mut deleting = workspace("b", "Ready");
        deleting.deleting = true;
        h.workspaces.push(deleting);
        assert_eq!(guarantees(&h), Vec::<String>::new());
    }

    #[test]
    fn catches_an_index_that_holds_more_or_less_than_the_shards() {
        let mut h = history(vec![routed("a"), refused("b", 403)]);
        h.index.as_mut().unwrap().indexed_clusters = Some(4);
        assert_eq!(guarantees(&h), ["index-exact"]);
        h.index.as_mut().unwrap().indexed_clusters = None;
        assert_eq!(guarantees(&h), ["index-exact"]);
    }
}
