//! A short chaos run over real processes: a root shard and one more, each behind a fault
//! proxy, under write and watch load while a fixed seed kills, pauses and partitions
//! them. The checkers must find nothing, and the run must show that its key steps took
//! place: faults were injected, writes were acknowledged and watch events arrived.

use chaos::run;
use chaos::scenario::RunOptions;

fn options(scenario: &str, seed: u64, fault_seconds: u64) -> RunOptions {
    RunOptions {
        scenario: scenario.to_string(),
        seed,
        fault_seconds,
        writers_per_shard: 2,
        watchers_per_shard: 1,
        history_file: None,
    }
}

/// Runs `scenario` with `seed`, judges it as [`judge`] does, and returns the report.
async fn judge_report(scenario: &str, seed: u64, fault_seconds: u64, min_faults: usize) -> chaos::scenario::Report {
    let report = run(&options(scenario, seed, fault_seconds)).await.expect("the scenario runs to a verdict");
    assert_key_steps(&report, min_faults);
    report
}

/// Runs `scenario` with `seed` and asserts the run did what it is for (at least
/// `min_faults` faults, acknowledged writes, watch events, every watcher judged against the
/// final list) and that the checkers found nothing.
async fn judge(scenario: &str, seed: u64, fault_seconds: u64, min_faults: usize) {
    judge_report(scenario, seed, fault_seconds, min_faults).await;
}

fn assert_key_steps(report: &chaos::scenario::Report, min_faults: usize) {
    let summary = report.summary();
    println!("{summary}");
    let history = &report.history;
    assert!(history.faults.len() >= min_faults, "faults were injected:\n{summary}");
    let acknowledged = history
        .operations
        .iter()
        .filter(|op| op.kind.is_write() && matches!(op.outcome, chaos::history::Outcome::Ok { .. }))
        .count();
    assert!(acknowledged >= 20, "writes were acknowledged:\n{summary}");
    let events: usize = history.watches.iter().map(|w| w.items.len()).sum();
    assert!(events >= 20, "watch events arrived:\n{summary}");
    let (reached, sessions) = chaos::check::watch::converged_sessions(history);
    assert!(
        reached >= 2,
        "each watcher's last session ({sessions} in all) was judged against the final list:\n{summary}"
    );
    let written: std::collections::BTreeSet<&str> =
        history.operations.iter().map(|op| op.collection.as_str()).collect();
    let read: std::collections::BTreeSet<&str> = history.final_states.iter().map(|f| f.collection.as_str()).collect();
    assert!(written.len() >= 2 && read == written, "every shard's final state was read:\n{summary}");
    assert!(report.violations.is_empty(), "violations:\n{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_faults_lose_no_acknowledged_write_and_no_watch_lies() {
    judge("mixed", 11, 15, 3).await;
}

/// The other scenarios in short form, one after the other (each starts its own
/// installation; two cores do not run them side by side well).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_partitions_and_pauses_each_lose_nothing() {
    judge("shard-kill", 3, 8, 1).await;
    judge("network", 5, 8, 1).await;
    judge("pause", 7, 8, 1).await;
}

/// A full disk under a shard's store (a tmpfs of the run's own, filled by a filler file
/// and freed again) while clients write: writes are refused with 507 naming the disk,
/// reads keep working, nothing acknowledged is lost (the ledger), and writes are
/// acknowledged again once space is freed, without a restart (the storage checker).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_clearly_loses_nothing_and_recovers() {
    if let Err(why) = chaos::disk::can_mount() {
        eprintln!("SKIPPED: the disk-full scenario needs a tmpfs of its own: {why:#}");
        return;
    }
    let report = judge_report("disk-full", 13, 8, 1).await;
    let history = &report.history;
    assert!(!history.disk_full.is_empty(), "a disk filled up:\n{}", report.summary());
    let refused = history
        .operations
        .iter()
        .filter(|op| {
            op.kind.is_write()
                && matches!(&op.outcome, chaos::history::Outcome::Unknown { reason } if reason.starts_with("HTTP 507"))
        })
        .count();
    assert!(refused > 0, "writes met the full disk and were refused with 507:\n{}", report.summary());
}

/// Workspaces created and deleted in root while shard-1 (where about half of their
/// logical clusters land) is killed and restarted: after healing and a bounded wait, every
/// Ready Workspace has exactly its one LogicalCluster, no LogicalCluster outlives its
/// Workspace, and none is stuck in Scheduling (the workspace checker).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_storms_under_shard_kills_leave_consistent_workspaces() {
    let report = run(&options("workspace-storm", 17, 8)).await.expect("the storm runs to a verdict");
    let summary = report.summary();
    println!("{summary}");
    let history = &report.history;
    assert!(!history.faults.is_empty(), "shard-1 was killed:\n{summary}");
    assert!(!history.workspaces.is_empty(), "Workspaces were left to judge:\n{summary}");
    let on_shard_1 = history.logical_clusters.iter().filter(|lc| lc.shard == "shard-1").count();
    assert!(on_shard_1 > 0, "some logical clusters live on the killed shard:\n{summary}");
    let (creates, deletes) = acknowledged_storm(history, "root");
    assert!(
        creates > 0 && deletes > 0,
        "the history holds acknowledged creates and deletes for the workspace checker to judge:\n{summary}"
    );
    assert!(report.violations.is_empty(), "violations:\n{summary}");
}

/// Whether some shard's rate while it was healthy during a fault elsewhere was judged
/// (it saw enough requests then).
fn healthy_rate_judged(history: &chaos::history::History) -> bool {
    chaos::check::availability::rates(history)
        .into_iter()
        .any(|r| r.healthy_during_faults.total >= chaos::check::availability::SAMPLES_MIN)
}

/// How many creates and deletes the storm recorded as acknowledged; every operation it
/// recorded must be in `parent`.
fn acknowledged_storm(history: &chaos::history::History, parent: &str) -> (usize, usize) {
    use chaos::history::{OperationKind, Outcome};
    let ops = &history.workspace_operations;
    assert!(ops.iter().all(|op| op.parent == parent), "the storm worked in {parent}: {ops:?}");
    let acknowledged =
        |kind| ops.iter().filter(|op| op.kind == kind && matches!(op.outcome, Outcome::Ok { .. })).count();
    (acknowledged(OperationKind::Create), acknowledged(OperationKind::Delete))
}

/// Scenario 5: clients write, watch and churn Workspaces through a real front-proxy
/// that is killed with -9 mid-watch and restarted, while the shards behind it are frozen
/// and thawed in turn. Beyond the ledger and the watch validator, the run must show its
/// key steps (a watch cut by the kill, watch streams the proxy held to a frozen shard, a
/// healthy shard's rate judged during the other's freeze, live and deleted Workspaces
/// probed through the proxy) and the availability and index checkers must find nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_front_proxy_killed_mid_watch_and_shards_frozen_behind_it_lose_nothing() {
    use chaos::history::{FaultTarget, WatchEnd};
    let report = judge_report("front-proxy", 19, 10, 2).await;
    let summary = report.summary();
    let history = &report.history;
    let windows =
        |proxy: bool| history.fault_windows.iter().filter(move |w| (w.target == FaultTarget::FrontProxy) == proxy);
    assert!(
        windows(true).any(|w| history.watches_open_at(w).any(|r| matches!(r.end, WatchEnd::Broken { .. }))),
        "a watch through the proxy was cut by its kill:\n{summary}"
    );
    assert!(
        windows(false).any(|w| history.watches_open_at(w).next().is_some()),
        "the proxy held a watch stream to a frozen shard:\n{summary}"
    );
    assert!(healthy_rate_judged(history), "a healthy shard's rate during the other's freeze was judged:\n{summary}");
    let index = history.index.as_ref().expect("the proxy's index was probed");
    let resolving = index.probes.iter().filter(|p| p.status == 200).count();
    let refused = index.probes.iter().filter(|p| index.deleted.contains(&p.workspace) && p.status != 200).count();
    assert!(resolving > 0 && refused > 0, "live and deleted Workspaces were probed:\n{summary}");
    let (creates, deletes) = acknowledged_storm(history, "root");
    assert!(
        creates > 0 && deletes > 0,
        "the storm through the proxy recorded acknowledged creates and deletes for the workspace checker:\n{summary}"
    );
}

/// The cache hierarchy: replicated ClusterRoles created, changed and deleted on both
/// shards while the regional cache, its parent and shard-1 are killed and frozen in turn.
/// After healing every cache must hold exactly the live shards' replicated objects at
/// their source versions and nothing deleted (the cache convergence checker), and the
/// run must show that faults hit caches and that deletions happened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caches_converge_to_the_shards_after_kills_and_freezes() {
    use chaos::history::FaultTarget;
    let report = run(&options("cache-hierarchy", 23, 10)).await.expect("the scenario runs to a verdict");
    let summary = report.summary();
    println!("{summary}");
    let history = &report.history;
    let cache_faults = history.fault_windows.iter().filter(|w| matches!(w.target, FaultTarget::Cache(_))).count();
    assert!(cache_faults >= 2, "caches were killed or frozen:\n{summary}");
    for target in [
        FaultTarget::Cache("cache-r".to_string()),
        FaultTarget::Cache("cache-p".to_string()),
        FaultTarget::Shard("shard-1".to_string()),
    ] {
        assert!(history.fault_windows.iter().any(|w| w.target == target), "{target:?} was faulted:\n{summary}");
    }
    let replication = history.replication.as_ref().expect("the caches were read");
    assert!(!replication.deleted.is_empty(), "replicated objects were deleted:\n{summary}");
    let written = replication.sources.iter().filter(|s| s.id.contains("/clusterroles/chaos-")).count();
    assert!(written > 0, "the writers' objects are among the sources:\n{summary}");
    assert_eq!(replication.caches.len(), 2, "both caches were read:\n{summary}");
    assert!(report.violations.is_empty(), "violations:\n{summary}");
}

/// Scenarios 2 and 4: two regional caches under a parent, a fault proxy on every internal
/// hop. A scripted step makes root delete an object after failing over from cache-a, which
/// still held it and was split from the parent, to cache-b; a second one cuts root's
/// stream to cache-b while cache-a holds connections silent, and root's next write must
/// still reach cache-b; then the seed partitions shards from regional caches, kills a
/// regional cache and splits one from the parent. The run must show the script happened
/// as intended (cache-b held the object, so root replicated there, and cache-a held it at
/// the delete; the silent step ran) and that the schedule's three kinds of fault were
/// injected; the cache convergence checker must find nothing: the parent holds exactly
/// every shard's objects (the deleted one not resurrected), each regional cache exactly
/// those of the shards replicating to it, and the write behind the silent cache arrived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_after_failing_over_is_not_resurrected_and_caches_converge_after_partitions() {
    let report = run(&options("cache-partition", 34, 6)).await.expect("the scenario runs to a verdict");
    let summary = report.summary();
    println!("{summary}");
    let history = &report.history;
    let replication = history.replication.as_ref().expect("the caches were read");
    let delete = replication.failover_deletes.first().expect("the scripted failover delete ran");
    assert!(delete.sibling_held_it, "root failed over to cache-b and replicated there:\n{summary}");
    assert!(delete.old_cache_held_it, "cache-a held the object when root deleted it:\n{summary}");
    assert!(replication.deleted.contains(&delete.id), "the scripted delete is judged:\n{summary}");
    assert_eq!(replication.silent_failovers.len(), 1, "the silent-cache step ran:\n{summary}");
    let injected = |what: &dyn Fn(&str) -> bool| history.faults.iter().any(|f| what(&f.what));
    assert!(injected(&|f| f.starts_with("hop root->") || f.starts_with("hop shard-1->")), "a partition:\n{summary}");
    assert!(injected(&|f| f.contains(": kill -9")), "a regional cache was killed:\n{summary}");
    assert!(injected(&|f| f.starts_with("hop cache-")), "a regional cache was split from the parent:\n{summary}");
    assert_eq!(replication.caches.len(), 3, "every cache was read:\n{summary}");
    let judged_regional = replication.caches.iter().filter(|c| c.origins.as_ref().is_some_and(|o| !o.is_empty()));
    assert!(judged_regional.count() >= 1, "a regional cache was judged for the shards on it:\n{summary}");
    assert!(
        replication.caches.iter().any(|c| c.cache == "cache-p" && c.origins.is_none()),
        "the parent was judged for every shard:\n{summary}"
    );
    assert!(report.violations.is_empty(), "violations:\n{summary}");
}

/// Scenario 3: the root shard is down for the whole fault phase (10 s here) while
/// clients write and watch on every shard through a front-proxy, a storm churns
/// Workspaces in a parent on shard-1, and a binder binds an export of shard-2 in
/// workspaces on shard-1; the proxy is killed and restarted halfway. The run must show
/// that root really was down (requests found it so inside the outage), that a workspace
/// was scheduled and became Ready, and a binding Bound, while it was down, and that the
/// healthy shards' rates were judged; the checkers must find nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_root_down_the_other_shards_serve_schedule_and_bind_from_the_cache() {
    let report = judge_report("root-down", 31, 10, 1).await;
    let summary = report.summary();
    let history = &report.history;
    let outage = history.outage.as_ref().expect("the outage was recorded");
    let inside = |at: u64| outage.from_ms < at && at < outage.to_ms;
    assert!(outage.down_probes_ms.iter().filter(|at| inside(**at)).count() >= 2, "root was found down:\n{summary}");
    assert!(
        outage.scheduled.iter().any(|w| inside(w.ready_ms) && w.shard != "root" && !w.shard.is_empty()),
        "a workspace became Ready on a live shard while root was down:\n{summary}"
    );
    assert!(
        outage.bindings.iter().any(|b| b.shard == "shard-1" && b.bound_ms.is_some_and(inside)),
        "an APIBinding on shard-1 was Bound while root was down:\n{summary}"
    );
    let healthy = chaos::check::availability::rates(history)
        .into_iter()
        .filter(|r| r.shard != "root" && r.healthy_during_faults.total >= chaos::check::availability::SAMPLES_MIN)
        .count();
    assert_eq!(healthy, 2, "shard-1's and shard-2's rates while root was down were judged:\n{summary}");
    let root_failed = history.operations.iter().any(|op| op.shard == "root" && inside(op.invoke_ms));
    assert!(root_failed, "clients tried root during its outage:\n{summary}");
    let parent = history.workspace_operations.first().map(|op| op.parent.clone()).unwrap_or_default();
    assert!(parent.starts_with("root:"), "the storm worked in a workspace below root ({parent:?}):\n{summary}");
    let (creates, deletes) = acknowledged_storm(history, &parent);
    assert!(
        creates > 0 && deletes > 0,
        "the storm in {parent} recorded acknowledged creates and deletes for the workspace checker:\n{summary}"
    );
    assert!(
        history.workspaces.iter().any(|w| w.parent == parent) && history.workspaces.iter().any(|w| w.parent == "root"),
        "the final Workspaces of root and of {parent} were recorded, each with its parent:\n{summary}"
    );
}

/// Scenario 8, Fleet member agents cut off from their hub (each through a fault proxy of
/// its own) and killed while sticky placements roll out ConfigMap changes: the run must
/// show that an agent really was partitioned (its heartbeat on the hub stopped being
/// renewed, and was renewed again after the heal), that an agent was killed and
/// restarted, that the hub acknowledged writes and the bindings were watched, and the
/// placement checker must find no flap, no stale member, no leak.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitioned_and_killed_fleet_agents_keep_their_placements_and_converge() {
    let report = run(&options("agent-partition", 41, 10)).await.expect("the scenario runs to a verdict");
    let summary = report.summary();
    println!("{summary}");
    let record = report.history.placement.as_ref().expect("the placement record");
    let proofs = chaos::check::placement::partition_proofs(record);
    println!("partitions: {proofs:?}");
    assert!(
        proofs.iter().any(|p| p.samples >= 2 && p.stalled && p.resumed),
        "an agent's heartbeat stopped on the hub while it was partitioned and resumed after:\n{summary}"
    );
    assert!(record.faults.iter().any(|f| f.what == "kill -9"), "an agent was killed:\n{summary}");
    assert!(record.writes >= 10, "the hub acknowledged ConfigMap writes ({}):\n{summary}", record.writes);
    let clusters: std::collections::BTreeSet<&str> = record.bindings.iter().map(|b| b.cluster.as_str()).collect();
    assert_eq!(clusters.len(), 3, "the bindings of every member were watched:\n{summary}");
    assert!(
        record.placements.iter().all(|p| !p.picked.is_empty()) && !record.hub_objects.is_empty(),
        "the final state was read:\n{summary}"
    );
    assert!(report.violations.is_empty(), "violations:\n{summary}");
}

/// Faults between hosts: the docker-compose installation (every process its own
/// container) under a project of this run's own, clients through the front-proxy's
/// published port on a workspace of every shard, while the seed disconnects, pauses and
/// degrades (iptables loss, blackhole, cut; a tbf rate limit) the shard and cache
/// containers. Beyond the ledger, the watch validator, the workspace, availability and
/// index and cache checkers finding nothing, the run must show its key steps: a shard
/// was disconnected, requests to it failed while it was and were answered again after the
/// heal, a healthy shard's rate was judged during another container's fault, live and
/// deleted Workspaces were probed through the proxy, replicated objects were created and
/// deleted, every cache was compared with its shards' replicated objects, and nothing of
/// the project is left.
/// Without Docker (or root, for nsenter) it says so and passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnected_paused_and_degraded_hosts_lose_nothing() {
    use chaos::hosts::fault::HostFault;
    if let Some(why) = chaos::hosts::docker::unavailable() {
        eprintln!("SKIPPED the hosts scenario: {why}; it needs Docker, docker-compose and root to run");
        return;
    }
    const SEED: u64 = 43;
    let report = judge_report("hosts", SEED, 15, 2).await;
    let summary = report.summary();
    let history = &report.history;
    let disconnects: Vec<_> = chaos::check::availability::window_effects(history)
        .into_iter()
        .filter(|e| e.window.what == HostFault::Disconnect.describe())
        .collect();
    assert!(
        disconnects.iter().any(|e| e.took_hold() && e.answered_after > 0),
        "requests to a disconnected shard failed or were held while it was, and were answered after the heal: \
         {disconnects:?}\n{summary}"
    );
    assert!(
        history.hosts.iter().all(|h| h.commands.len() >= 2),
        "every fault was injected and healed by commands:\n{summary}"
    );
    assert!(
        healthy_rate_judged(history),
        "a healthy shard's rate during another container's fault was judged:\n{summary}"
    );
    let index = history.index.as_ref().expect("the proxy's index was probed");
    assert!(index.probes.iter().any(|p| p.status == 200), "live Workspaces were probed:\n{summary}");
    let (creates, _) = acknowledged_storm(history, "root");
    assert!(creates > 0, "the storm through the proxy created Workspaces:\n{summary}");
    let replication = history.replication.as_ref().expect("the caches were read");
    assert!(
        replication.created > 0 && !replication.deleted.is_empty(),
        "replicated ClusterRoles were created and deleted through the proxy:\n{summary}"
    );
    let compared: Vec<(&str, usize)> = replication
        .caches
        .iter()
        .map(|cache| (cache.cache.as_str(), chaos::check::cache::compared(cache, replication)))
        .collect();
    let judged: Vec<&str> = compared.iter().filter(|(_, n)| *n > 0).map(|(cache, _)| *cache).collect();
    assert_eq!(
        judged,
        ["cache-a", "cache-b", "cache-global"],
        "every cache was compared with the replicated objects of its shards ({compared:?}):\n{summary}"
    );
    let left = tests::compose::leftovers(&chaos::hosts::project_name(SEED)).expect("list the project's leftovers");
    assert!(left.is_empty(), "the run left parts of its compose project behind: {left}");
}
