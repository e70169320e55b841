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
//! - [`front_proxy`] is scenario 5: the same clients through a real front-proxy that is
//!   killed mid-watch and restarted while the shards behind it are frozen and thawed,
//!   with Workspaces created and deleted through it, judged also for availability per
//!   shard and for the proxy's index after healing.
//! - [`cache_faults`] is the cache-hierarchy scenario: replicated objects written while
//!   the regional cache, its parent and a shard are killed and frozen, then every cache
//!   judged against the shards.
//! - [`cache_partition`] is the cache-partition scenario: two regional caches under a
//!   parent with a fault proxy on every internal hop; shards fail over between the
//!   regional caches while hops are partitioned and split and caches killed, and a
//!   scripted delete after a failover must not come back through the cache left behind.
//! - [`root_down`] is scenario 3: the root shard down for a long spell while the other
//!   shards keep serving, scheduling workspaces and binding an export of another shard
//!   from the cache, and the front-proxy (restarted meanwhile) keeps routing to them.
//! - [`agent_partition`] is scenario 8: Fleet member agents partitioned from their hub
//!   (through a fault proxy each) and killed while sticky placements roll out ConfigMap
//!   changes; no placement may leave a member over a fault shorter than the heartbeat
//!   timeout, and every picked member converges while no other holds anything.
//! - [`hosts`] is the faults between hosts: the docker-compose installation, its shard and
//!   cache containers disconnected from their network, paused, and degraded with packet
//!   loss, blackholes, cuts and rate limits inside their network namespaces.
//! - [`storm`] is the workspace storm: Workspaces created and deleted while a shard is
//!   killed, and the final Workspaces and LogicalClusters read from every shard.
//! - [`check`] holds the checkers, pure functions from a history to violations: the
//!   acknowledged-write ledger, the watch validator, the storage checker (what a full
//!   disk told clients), the workspace checker, availability per shard, index
//!   convergence and cache convergence.
//! - [`summary`] is the text a run or a replay prints.

pub mod agent_partition;
pub mod cache_faults;
pub mod cache_partition;
pub mod check;
pub mod disk;
pub mod front_proxy;
pub mod history;
pub mod hosts;
pub mod injector;
pub mod netproxy;
pub mod root_down;
pub mod scenario;
pub mod schedule;
pub mod storm;
pub mod summary;
pub mod workload;

/// Runs one scenario to its verdict: the workspace storm ([`storm`]), the front-proxy
/// scenario ([`front_proxy`]), the cache hierarchy ([`cache_faults`]), the cache
/// partitions ([`cache_partition`]), the hosts of the compose installation ([`hosts`]) or
/// a process scenario ([`scenario`]).
pub async fn run(options: &scenario::RunOptions) -> anyhow::Result<scenario::Report> {
    match options.scenario.as_str() {
        "workspace-storm" => storm::run(options).await,
        front_proxy::NAME => front_proxy::run(options).await,
        cache_faults::NAME => cache_faults::run(options).await,
        root_down::NAME => root_down::run(options).await,
        cache_partition::NAME => cache_partition::run(options).await,
        agent_partition::NAME => agent_partition::run(options).await,
        hosts::NAME => hosts::run(options).await,
        _ => scenario::run(options).await,
    }
}
