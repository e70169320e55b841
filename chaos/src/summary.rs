//! The text a run or a replay prints: seed, faults, operations per kind and outcome,
//! watch figures, what the scenario-specific records show, and the verdict.

use std::time::Duration;

use crate::check::availability::{self, HEALTHY_SUCCESS_MIN};
use crate::check::Violation;
use crate::history::{FaultTarget, History, OperationKind, Outcome, WatchEnd};

/// The summary of a judged history (shared by `run` and `replay`).
pub fn summarize(history: &History, violations: &[Violation], elapsed: Option<Duration>) -> String {
    let mut out = format!("scenario {} seed {}\n", history.scenario, history.seed);
    if let Some(elapsed) = elapsed {
        out += &format!("run time {:.1} s\n", elapsed.as_secs_f64());
    }
    out += &format!("faults injected: {}\n", history.faults.len());
    for kind in
        [OperationKind::Create, OperationKind::Update, OperationKind::Delete, OperationKind::Get, OperationKind::List]
    {
        let ops: Vec<_> = history.operations.iter().filter(|op| op.kind == kind).collect();
        let count = |f: fn(&Outcome) -> bool| ops.iter().filter(|op| f(&op.outcome)).count();
        out += &format!(
            "{kind:?}: {} ({} ok, {} refused, {} unknown)\n",
            ops.len(),
            count(|o| matches!(o, Outcome::Ok { .. } | Outcome::NotFound)),
            count(|o| matches!(o, Outcome::Fail { .. })),
            count(|o| matches!(o, Outcome::Unknown { .. })),
        );
    }
    let events: usize = history.watches.iter().map(|w| w.items.len()).sum();
    let gone = history.watches.iter().filter(|w| w.end == WatchEnd::Gone).count();
    out += &format!("watch requests: {} ({events} items, {gone} ended 410)\n", history.watches.len());
    let (reached, sessions) = crate::check::watch::converged_sessions(history);
    out += &format!("watch sessions that reached the final list's RV: {reached} of {sessions}\n");
    if !history.workspaces.is_empty() || !history.logical_clusters.is_empty() {
        let ready = history.workspaces.iter().filter(|w| w.phase == "Ready").count();
        out += &format!(
            "final workspaces: {} ({ready} Ready), logical clusters owned by workspaces: {}\n",
            history.workspaces.len(),
            history.logical_clusters.len()
        );
    }
    out += &storm(history);
    if !history.disk_full.is_empty() {
        let refused = history
            .operations
            .iter()
            .filter(|op| matches!(&op.outcome, Outcome::Unknown { reason } if reason.starts_with("HTTP 507")))
            .count();
        out += &format!("disk-full spells: {} ({refused} writes refused with 507)\n", history.disk_full.len());
    }
    out += &fault_windows(history);
    out += &index(history);
    out += &replication(history);
    out += &outage(history);
    out += &placement(history);
    out += &hosts(history);
    out += &format!("violations: {}\n", violations.len());
    for violation in violations {
        out += &format!("  {violation}\n");
    }
    out
}

/// The storm's creates and deletes of Workspaces by outcome.
fn storm(history: &History) -> String {
    let mut out = String::new();
    for kind in [OperationKind::Create, OperationKind::Delete] {
        let ops: Vec<_> = history.workspace_operations.iter().filter(|op| op.kind == kind).collect();
        if ops.is_empty() {
            continue;
        }
        let count = |f: fn(&Outcome) -> bool| ops.iter().filter(|op| f(&op.outcome)).count();
        out += &format!(
            "workspace {kind:?}: {} ({} acknowledged, {} refused, {} unknown)\n",
            ops.len(),
            count(|o| matches!(o, Outcome::Ok { .. })),
            count(|o| matches!(o, Outcome::Fail { .. } | Outcome::NotFound)),
            count(|o| matches!(o, Outcome::Unknown { .. })),
        );
    }
    out
}

/// The fault windows, the watches each cut across, and every shard's success rates.
fn fault_windows(history: &History) -> String {
    if history.fault_windows.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for window in &history.fault_windows {
        let target = match &window.target {
            FaultTarget::Shard(shard) => format!("shard {shard}"),
            FaultTarget::FrontProxy => "front-proxy".to_string(),
            FaultTarget::Cache(cache) => format!("cache {cache}"),
        };
        out += &format!(
            "fault window {target} {} {}..{} ms: {} watch requests open across it\n",
            window.what,
            window.from_ms,
            window.to_ms,
            history.watches_open_at(window).count()
        );
    }
    if history.operations.is_empty() {
        return out;
    }
    out += &format!(
        "availability per shard (healthy during faults on another shard, bound {:.0}%):\n",
        HEALTHY_SUCCESS_MIN * 100.0
    );
    for rates in availability::rates(history) {
        out += &format!(
            "  {}: healthy during faults {}, calm {}, own faults {}, front-proxy down {}\n",
            rates.shard, rates.healthy_during_faults, rates.calm, rates.own_faults, rates.proxy_down
        );
    }
    out
}

/// What the front-proxy resolved after healing.
fn index(history: &History) -> String {
    let Some(index) = &history.index else { return String::new() };
    let resolving = index.probes.iter().filter(|p| (200..300).contains(&p.status)).count();
    format!(
        "front-proxy index: {} paths probed ({resolving} resolve), {} workspaces deleted, {} logical clusters indexed, {} stored\n",
        index.probes.len(),
        index.deleted.len(),
        index.indexed_clusters.map_or_else(|| "?".to_string(), |n| n.to_string()),
        index.stored_clusters
    )
}

/// The faults on containers and what the faulted shards' clients saw of each.
fn hosts(history: &History) -> String {
    let mut out = String::new();
    for record in &history.hosts {
        out += &format!(
            "host fault {} {} {}..{} ms (in place by {} ms, healed by {} ms; {} commands)\n",
            record.service,
            record.fault.describe(),
            record.from_ms,
            record.to_ms,
            record.injected_ms,
            record.healed_ms,
            record.commands.len()
        );
    }
    if history.hosts.is_empty() {
        return out;
    }
    for effect in availability::window_effects(history) {
        let window = &effect.window;
        out += &format!(
            "  requests to {:?} during {} {}..{} ms: {} failed, {} answered, {} held across it; {} answered after the heal\n",
            window.target,
            window.what,
            window.from_ms,
            window.to_ms,
            effect.failed_during,
            effect.answered_during,
            effect.held_across,
            effect.answered_after
        );
    }
    out
}

/// What the run did while a shard was down.
fn outage(history: &History) -> String {
    let Some(outage) = &history.outage else { return String::new() };
    let inside = |at: u64| (outage.from_ms..outage.to_ms).contains(&at);
    let bound = outage.bindings.iter().filter(|b| b.bound_ms.is_some_and(inside)).count();
    let mut out = format!(
        "outage of {} {}..{} ms ({:.1} s): {} requests found it down; {} workspaces Ready meanwhile, {} APIBindings created, {bound} Bound meanwhile\n",
        outage.shard,
        outage.from_ms,
        outage.to_ms,
        (outage.to_ms - outage.from_ms) as f64 / 1000.0,
        outage.down_probes_ms.len(),
        outage.scheduled.iter().filter(|w| inside(w.ready_ms)).count(),
        outage.bindings.len(),
    );
    let mut by_shard = std::collections::BTreeMap::<&str, usize>::new();
    for workspace in &outage.scheduled {
        *by_shard.entry(workspace.shard.as_str()).or_default() += 1;
    }
    out += &format!("  workspaces Ready during the outage by shard: {by_shard:?}\n");
    out
}

/// What the shards and caches held after healing.
fn replication(history: &History) -> String {
    let Some(replication) = &history.replication else { return String::new() };
    let mut out = format!(
        "replicated writes acknowledged: {} creates, {} patches, {} deletes\n",
        replication.created,
        replication.updated,
        replication.deleted.len()
    );
    out += &format!("replicated objects on the live shards: {}\n", replication.sources.len());
    for cache in &replication.caches {
        let compared = crate::check::cache::compared(cache, replication);
        out += &format!("  cache {}: {} replicas, compared with {compared} sources", cache.cache, cache.replicas.len());
        if let Some(origins) = &cache.origins {
            let left = crate::check::cache::left_behind(cache, &replication.live_shards);
            let deleted = left.iter().filter(|r| replication.deleted.contains(&r.id)).count();
            out += &format!(
                ", judged for {origins:?}; {} left behind by shards that failed over, {deleted} of them deleted since",
                left.len()
            );
        }
        out += "\n";
        if !cache.relays.is_empty() {
            let relays: Vec<String> = cache
                .relays
                .iter()
                .map(|r| {
                    format!(
                        "{} session {} via {}{}",
                        r.origin,
                        r.epoch,
                        r.via,
                        if r.settled { "" } else { " (unsettled)" }
                    )
                })
                .collect();
            out += &format!("    relays: {}\n", relays.join(", "));
        }
    }
    for delete in &replication.failover_deletes {
        out += &format!(
            "failover delete {}: {} -> {}; the sibling held it: {}, the old cache held it at the delete: {}, \
             the parent dropped it before the old cache returned: {}\n",
            delete.id,
            delete.from_cache,
            delete.to_cache,
            delete.sibling_held_it,
            delete.old_cache_held_it,
            delete.parent_dropped_it
        );
    }
    for silent in &replication.silent_failovers {
        out += &format!(
            "silent failover {}: stream to {} cut while {} held connections silent; the write reached {}: {}\n",
            silent.id, silent.healthy_cache, silent.silent_cache, silent.healthy_cache, silent.delivered
        );
    }
    out
}

/// The run's placement figures, for the summary: writes, bindings watched, heartbeat
/// samples, what each fault showed on the hub, and where each placement ended.
fn placement(history: &crate::history::History) -> String {
    let Some(record) = &history.placement else { return String::new() };
    let bindings: std::collections::BTreeSet<&str> = record.bindings.iter().map(|b| b.binding.as_str()).collect();
    let mut out = format!(
        "placement: {} members, heartbeat timeout {} ms; {} ConfigMap writes acknowledged; {} binding events over {} \
         bindings; {} heartbeat samples\n",
        record.members.len(),
        record.heartbeat_timeout_ms,
        record.writes,
        record.bindings.len(),
        bindings.len(),
        record.heartbeats.len()
    );
    for proof in crate::check::placement::partition_proofs(record) {
        out += &format!(
            "  {} partitioned {}..{} ms: {} hub samples inside, heartbeat {}, {} after the heal\n",
            proof.member,
            proof.from_ms,
            proof.to_ms,
            proof.samples,
            if proof.stalled { "stalled" } else { "RENEWED" },
            if proof.resumed { "renewed" } else { "NOT renewed" }
        );
    }
    for fault in record.faults.iter().filter(|f| !f.partition) {
        out += &format!("  {} agent {}: {}..{} ms\n", fault.member, fault.what, fault.from_ms, fault.to_ms);
    }
    for placement in &record.placements {
        out += &format!(
            "  {} ({}): picked {:?}, Available on {:?}\n",
            placement.crp,
            placement.pick.map_or("PickAll".to_string(), |n| format!("PickN {n}")),
            placement.picked,
            placement.available
        );
    }
    out
}
