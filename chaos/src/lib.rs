//! Chaos for Atoll: inject faults into a real installation while clients write and
//! watch, record everything the clients saw, and judge that history afterwards.
//!
//! The modules, in the order a run meets them:
//!
//! - [`schedule`] draws the faults of a run from its seed, before anything starts, so a
//!   seed replays the same faults at the same offsets.
//! - [`netproxy`] is the TCP fault proxy put between clients and each shard: delay,
//!   drop, blackhole, cut (RST) and heal, per direction.
//! - [`injector`] pauses and resumes processes (SIGSTOP / SIGCONT); kill -9 and restart on
//!   the same data dir come from the `tests` harness.
//! - [`disk`] puts a shard's store on a small tmpfs of the run's own and fills and frees it.
//! - [`workload`] runs bounded writers (ConfigMap create / update / delete with
//!   preconditions, get, list) and watchers (list, then watch with bookmarks, resuming
//!   from the last RV after every disconnect) and records each request in a
//!   [`history::History`].
//! - [`scenario`] wires it together: starts the installation, the proxies and the
//!   workload, injects the schedule, heals, reads the final state and runs the checkers.
//! - [`storm`] is the workspace storm: Workspaces created and deleted while a shard is
//!   killed, and the final Workspaces and LogicalClusters read from every shard.
//! - [`check`] holds the checkers, pure functions from a history to violations: the
//!   acknowledged-write ledger, the watch validator and the storage checker (what a
//!   full disk told clients).

pub mod check;
pub mod disk;
pub mod history;
pub mod injector;
pub mod netproxy;
pub mod scenario;
pub mod schedule;
pub mod storm;
pub mod workload;

/// Runs one scenario to its verdict: the workspace storm ([`storm`]) or a process
/// scenario ([`scenario`]).
pub async fn run(options: &scenario::RunOptions) -> anyhow::Result<scenario::Report> {
    if options.scenario == "workspace-storm" {
        storm::run(options).await
    } else {
        scenario::run(options).await
    }
}
