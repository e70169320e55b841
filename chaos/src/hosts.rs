//! The `hosts` scenario: faults between the hosts of the multi-host installation
//! (`deploy/docker-compose.yaml`, every process its own container on one compose
//! network). The installation is brought up under a compose project named after the
//! scenario, the seed and this process ([`project_name`]), and taken down at the end,
//! also when the run fails.
//!
//! Clients work through the front-proxy's published port, as users do: writers and
//! watchers on a workspace of each shard (root, shard-1, shard-2), a writer of replicated
//! ClusterRoles in each of those workspaces, and a storm creating and deleting Workspaces
//! in root. Meanwhile the seed's schedule ([`draw`]) faults the shard and cache containers
//! one at a time ([`docker`] injects, [`fault`] says what): `docker network disconnect`
//! (reconnected under its alias), `docker pause`, packet loss, a blackhole or a cut per
//! direction with iptables in the container's network namespace, and a `tbf` rate limit
//! in place of netem's delay (the kernel here has no netem). The first fault always
//! disconnects a shard, so even a short run partitions one. A fault's window runs from
//! its first command to its heal's first command: a `docker pause` freezes the container
//! before the CLI returns, and `docker unpause` thaws it before it returns.
//!
//! After the heals, the final state is read from each shard directly (its container's
//! address on the project network), the Workspaces settle, and every Workspace the storm
//! touched is probed through the proxy. Then every shard's replicated objects and every
//! cache's replicas (cache-a, cache-b, cache-global, read over gRPC at their container
//! addresses, the certificate checked for the service name) are read until they agree or
//! [`CONVERGE`] is over. Each regional cache is judged for the shards that replicate to it
//! in the compose file ([`REPLICATES_TO`]; no shard has a failover list there, so that
//! never changes), the global cache for every shard. Judged: the ledger and the watch
//! validator, the workspace checker, availability per shard (a shard is healthy while
//! another container is faulted), index convergence and cache convergence.

pub mod docker;
pub mod fault;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use http::StatusCode;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
// `::tests`: the harness crate, not this file's unit tests.
use ::tests::cache::{sources, CacheClient};
use ::tests::compose::{eventually, Compose};
use ::tests::installation::workspaces_path;
use ::tests::TlsHttp;

use self::docker::HostInjector;
use self::fault::{HostFault, Way};
use crate::cache_faults;
use crate::check::check_all;
use crate::history::{CacheRecord, FaultTarget, FaultWindow, HostFaultRecord, ReplicationRecord};
use crate::scenario::{self, Report, RunOptions, Workload};
use crate::schedule::{self, Action, Spells, Step};
use crate::storm;
use crate::workload::{Recorder, Target, NAMESPACE};

/// The scenario's name.
pub const NAME: &str = "hosts";

/// The shards of the compose installation.
pub const SHARDS: [&str; 3] = ["root", "shard-1", "shard-2"];

/// The services whose containers are faulted: the shards, then the caches. A step's
/// target indexes this list.
pub const SERVICES: [&str; 6] = ["root", "shard-1", "shard-2", "cache-a", "cache-b", "cache-global"];

/// Holds and calm spells: a container cut off takes seconds to show (connections hang
/// until their timeouts), and Docker takes tenths of a second to act.
const SPELLS: Spells = Spells { hold_ms: (3_000, 6_000), calm_ms: (2_000, 4_000) };

/// A client's patience with one request through the proxy.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a new workspace may take to be Ready and routed.
const READY: Duration = Duration::from_secs(120);

/// How many workspaces may be created before every shard hosts one.
const PLACEMENT_MAX: usize = 40;

/// How long the workload goes on after the last heal: reconnections and resumed watches.
const RECOVER: Duration = Duration::from_secs(5);

/// Where each shard replicates in `deploy/docker-compose.yaml` (its `--cache-server`, one
/// cache each, no failover list); every shard watches cache-global, which every regional
/// cache pushes to. A unit test holds this to the compose file.
pub const REPLICATES_TO: [(&str, &str); 3] = [("root", "cache-a"), ("shard-1", "cache-a"), ("shard-2", "cache-b")];

/// The global cache, judged for every shard.
pub const GLOBAL_CACHE: &str = "cache-global";

/// How long the caches may take, after the writers stopped, to equal the shards: the
/// compose installation resyncs every 30 s (shards to their cache, caches to their
/// parent), so three rounds of drift repair; a bound on a bug, not a speed.
const CONVERGE: Duration = Duration::from_secs(90);

/// The annotation the scheduler records a Workspace's shard in (its `spec.URL` names the
/// front-proxy here, not the shard).
const SHARD_ANNOTATION: &str = "internal.tenancy.kcp.io/shard";

/// The compose project of a run: the scenario, the seed and this process, so parallel
/// runs and a user's own `atoll` project never meet.
pub fn project_name(seed: u64) -> String {
    format!("atoll-chaos-{NAME}-s{seed}-{}", std::process::id())
}

/// The faults of a run in the order they are taken, each on a service (an index into
/// [`SERVICES`]): first a shard's disconnect, then rounds of every kind of fault in an
/// order, on targets, in directions and of strengths drawn from the seed.
pub fn turns(seed: u64) -> Vec<(usize, Action)> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x686f_7374);
    let mut turns = vec![(rng.gen_range(0..SHARDS.len()), Action::Host(HostFault::Disconnect))];
    let ways = [Way::Inbound, Way::Outbound, Way::Both];
    for _ in 0..8 {
        let mut round = vec![
            HostFault::Disconnect,
            HostFault::Pause,
            HostFault::Loss { way: ways[rng.gen_range(0..3)], per_mille: rng.gen_range(100..=600) },
            HostFault::Blackhole(ways[rng.gen_range(0..3)]),
            HostFault::Cut(ways[rng.gen_range(0..3)]),
            HostFault::Throttle { kbit: rng.gen_range(64..=512) },
        ];
        round.shuffle(&mut rng);
        turns.extend(round.into_iter().map(|fault| (rng.gen_range(0..SERVICES.len()), Action::Host(fault))));
    }
    turns
}

/// The schedule of a fault phase of `duration_ms`.
pub fn draw(seed: u64, duration_ms: u64) -> Vec<Step> {
    schedule::draw_turns_spelled(seed, duration_ms, &turns(seed), SPELLS)
}

/// Runs the scenario to its verdict: brings the installation up, drives it, and takes it
/// down again whatever happened.
pub async fn run(options: &RunOptions) -> anyhow::Result<Report> {
    if let Some(why) = docker::unavailable() {
        anyhow::bail!("the {NAME} scenario needs Docker, docker-compose and root here: {why}");
    }
    let started = Instant::now();
    let steps = draw(options.seed, options.fault_seconds * 1000);
    println!("scenario {} seed {}: {} faults scheduled", options.scenario, options.seed, steps.len());
    for step in &steps {
        println!("  at {:>6} ms for {:>5} ms: {} {:?}", step.at_ms, step.hold_ms, SERVICES[step.target], step.action);
    }
    let mut compose = Compose::new(&project_name(options.seed))?;
    println!("compose project {} (front-proxy on 127.0.0.1:{})", compose.project(), compose.proxy_port());
    let up = tokio::task::block_in_place(|| {
        compose.build_images().context("build the images")?;
        compose.start().context("start the installation")
    });
    let outcome = match up {
        Ok(()) => drive(&compose, options, &steps, started).await,
        Err(error) => Err(error),
    };
    if outcome.is_err() {
        if let Ok(logs) = tokio::task::block_in_place(|| compose.compose(&["logs", "--no-color", "--tail", "30"])) {
            eprintln!("--- logs of compose project {} ---\n{logs}", compose.project());
        }
    }
    let down = tokio::task::block_in_place(|| compose.teardown());
    let report = outcome?;
    down.context("take the compose project down")?;
    Ok(report)
}

/// Everything between bring-up and teardown.
async fn drive(compose: &Compose, options: &RunOptions, steps: &[Step], started: Instant) -> anyhow::Result<Report> {
    let proxy = compose.http()?.with_timeout(REQUEST_TIMEOUT);
    let (targets, clusters) = prepare_targets(&proxy).await?;
    let injector = tokio::task::block_in_place(|| HostInjector::new(compose, &SERVICES))?;
    let storm_started = Instant::now();
    let recorder = Recorder::new(options.seed, &options.scenario);
    let workload = Workload::spawn(&recorder, &targets, options);
    let stop = Arc::new(AtomicBool::new(false));
    let churn =
        tokio::spawn(storm::storm_since(proxy.clone(), "root".to_string(), options.seed, stop.clone(), storm_started));
    let roles: Vec<_> = targets
        .iter()
        .zip(&clusters)
        .enumerate()
        .map(|(index, (target, cluster))| {
            let seed = options.seed + index as u64;
            cache_faults::spawn_writer(proxy.clone(), &target.shard, &target.cluster, cluster, seed, &stop)
        })
        .collect();
    inject(&injector, steps, &recorder).await?;
    tokio::time::sleep(RECOVER).await;
    let tally = storm::stop_proxied(&stop, churn).await?;
    let roles = cache_faults::stop_writers(roles, &stop).await?;
    let direct = tokio::task::block_in_place(|| {
        SHARDS
            .iter()
            .map(|shard| Ok((shard.to_string(), direct_client(compose, shard)?)))
            .collect::<anyhow::Result<BTreeMap<_, _>>>()
    })?;
    let readers: Vec<TlsHttp> = targets.iter().map(|target| direct[&target.shard].clone()).collect();
    workload.finish_reading(&recorder, &readers, &targets).await?;
    let mut history = recorder.snapshot();
    let root = &direct["root"];
    storm::settle_until(|| async { workspaces(root).await.is_ok_and(|all| storm::settled_all(&all)) }).await;
    history.workspaces = workspaces(root).await?;
    history.workspace_operations = tally.operations.clone();
    for (shard, http) in &direct {
        history.logical_clusters.extend(storm::logical_clusters_from(http, shard).await?);
    }
    let shards: Vec<TlsHttp> = direct.values().cloned().collect();
    history.index = Some(crate::front_proxy::converged_index_via(&proxy, &shards, &tally, &history).await?);
    let caches = tokio::task::block_in_place(|| {
        scopes()
            .into_iter()
            .map(|(cache, origins)| Ok((compose.cache_client(&cache)?, cache, origins)))
            .collect::<anyhow::Result<Vec<JudgedCache>>>()
    })
    .context("reach the caches")?;
    let mut record = converged_caches(&direct, &caches, &roles.deleted).await?;
    (record.created, record.updated) = (roles.created, roles.updated);
    history.replication = Some(record);
    scenario::save(&history, options.history_file.as_deref())?;
    let violations = check_all(&history);
    Ok(Report { history, violations, elapsed: started.elapsed() })
}

/// Every cache of the installation with the origins it is judged for: a regional cache
/// the shards replicating to it, the global cache every shard (`None`).
pub fn scopes() -> Vec<(String, Option<Vec<String>>)> {
    let mut regional: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (shard, cache) in REPLICATES_TO {
        regional.entry(cache).or_default().push(shard.to_string());
    }
    let mut scopes: Vec<_> = regional.into_iter().map(|(cache, shards)| (cache.to_string(), Some(shards))).collect();
    scopes.push((GLOBAL_CACHE.to_string(), None));
    scopes
}

/// A cache to judge: its client, its name and the origins it is judged for.
type JudgedCache = (CacheClient, String, Option<Vec<String>>);

/// Reads every shard's replicated objects (`direct`) and every cache's replicas until the
/// cache checker finds nothing or [`CONVERGE`] is over, and returns the last reading. A
/// reading that fails (a list not answered) is retried until then too.
async fn converged_caches(
    direct: &BTreeMap<String, TlsHttp>,
    caches: &[JudgedCache],
    deleted: &[String],
) -> anyhow::Result<ReplicationRecord> {
    let deadline = Instant::now() + CONVERGE;
    loop {
        let reading = read_caches(direct, caches, deleted).await;
        let done = Instant::now() >= deadline;
        match reading {
            Ok(record) => {
                let judged = crate::history::History { replication: Some(record), ..Default::default() };
                if done || crate::check::cache::check(&judged).is_empty() {
                    return judged.replication.context("the record just read");
                }
            }
            Err(error) if done => return Err(error.context(format!("read the caches for {CONVERGE:?}"))),
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// One reading: the shards' replicated objects, then each cache's replicas.
async fn read_caches(
    direct: &BTreeMap<String, TlsHttp>,
    caches: &[JudgedCache],
    deleted: &[String],
) -> anyhow::Result<ReplicationRecord> {
    let mut record = ReplicationRecord { deleted: deleted.to_vec(), ..ReplicationRecord::default() };
    for (shard, http) in direct {
        record.live_shards.push(shard.clone());
        record.sources.extend(cache_faults::source_records(&sources::replicated_sources_via(shard, http).await?));
    }
    for (client, cache, origins) in caches {
        let listed = client.list_everything().await.with_context(|| format!("list {cache}"))?;
        let replicas = cache_faults::replica_records(&listed.items);
        let relays = cache_faults::relay_records(&listed.epochs);
        record.caches.push(CacheRecord { cache: cache.clone(), replicas, origins: origins.clone(), relays });
    }
    Ok(record)
}

/// A client straight to `shard`'s container, patient for [`REQUEST_TIMEOUT`].
fn direct_client(compose: &Compose, shard: &str) -> anyhow::Result<TlsHttp> {
    Ok(compose.service_http(shard)?.with_timeout(REQUEST_TIMEOUT))
}

/// Every Workspace of root, read from the root shard directly.
async fn workspaces(root: &TlsHttp) -> anyhow::Result<Vec<crate::history::WorkspaceRecord>> {
    storm::workspace_records(root, "root", |w| {
        w.pointer(&format!("/metadata/annotations/{}", SHARD_ANNOTATION.replace('/', "~1")))
            .and_then(Value::as_str)
            .map(str::to_string)
    })
    .await
}

/// Creates workspaces in root through the proxy until every shard hosts one, and
/// prepares namespace [`NAMESPACE`] in each shard's first: the workload's targets, one
/// per shard, all reached through the proxy, with the name of each target's logical
/// cluster (as replica ids carry it).
async fn prepare_targets(proxy: &TlsHttp) -> anyhow::Result<(Vec<Target>, Vec<String>)> {
    let mut on: BTreeMap<String, (String, String)> = BTreeMap::new();
    for index in 0..PLACEMENT_MAX {
        if SHARDS.iter().all(|shard| on.contains_key(*shard)) {
            break;
        }
        let name = format!("hosts-{index}");
        let (shard, cluster) = ready_workspace(proxy, &name).await?;
        on.entry(shard).or_insert((name, cluster));
    }
    anyhow::ensure!(
        SHARDS.iter().all(|s| on.contains_key(*s)),
        "{PLACEMENT_MAX} workspaces left a shard empty: {on:?}"
    );
    let mut targets = Vec::new();
    let mut clusters = Vec::new();
    for shard in SHARDS {
        let (name, logical) = &on[shard];
        let cluster = format!("root:{name}");
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
        let path = format!("/clusters/{cluster}/api/v1/namespaces");
        eventually(&format!("namespace {NAMESPACE} in {cluster}"), READY, || async {
            let response = proxy.post_json(&path, &body).await.map_err(|e| format!("{e:#}"))?;
            match response.status {
                StatusCode::CREATED | StatusCode::CONFLICT => Ok(()),
                status => Err(format!("HTTP {status}: {}", response.text())),
            }
        })
        .await?;
        targets.push(Target { shard: shard.to_string(), cluster, http: proxy.clone() });
        clusters.push(logical.clone());
    }
    println!("workload workspaces (name, logical cluster): {on:?}");
    Ok((targets, clusters))
}

/// Creates Workspace `name` in root through the proxy, waits until it is Ready and the
/// proxy routes it, and returns its shard and its logical cluster (`spec.cluster`).
async fn ready_workspace(proxy: &TlsHttp, name: &str) -> anyhow::Result<(String, String)> {
    let body = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name}});
    proxy.create(&workspaces_path("root"), &body).await?;
    let path = format!("{}/{name}", workspaces_path("root"));
    let (shard, cluster) = eventually(&format!("workspace {name} Ready"), READY, || async {
        let response = proxy.get(&path).await.map_err(|e| format!("{e:#}"))?;
        let workspace = response.json().unwrap_or(Value::Null);
        let shard = workspace["metadata"]["annotations"][SHARD_ANNOTATION].as_str();
        let cluster = workspace["spec"]["cluster"].as_str();
        match (response.status, workspace["status"]["phase"].as_str(), shard, cluster) {
            (StatusCode::OK, Some("Ready"), Some(shard), Some(cluster)) => Ok((shard.to_string(), cluster.to_string())),
            (status, ..) => Err(format!("HTTP {status}: {workspace}")),
        }
    })
    .await?;
    let namespaces = format!("/clusters/root:{name}/api/v1/namespaces");
    eventually(&format!("root:{name} routed by the front-proxy"), READY, || async {
        let response = proxy.get(&namespaces).await.map_err(|e| format!("{e:#}"))?;
        (response.status == StatusCode::OK).then_some(()).ok_or_else(|| format!("HTTP {}", response.status))
    })
    .await?;
    Ok((shard, cluster))
}

/// Injects every step at its offset, holds it, heals it, and records it: the fault and
/// its heal with their times, the window the availability checker judges the other
/// shards in, and the commands that did it.
async fn inject(injector: &HostInjector, steps: &[Step], recorder: &Recorder) -> anyhow::Result<()> {
    let phase_start = Instant::now();
    for step in steps {
        tokio::time::sleep_until((phase_start + Duration::from_millis(step.at_ms)).into()).await;
        let Action::Host(fault) = step.action else {
            anyhow::bail!("the {NAME} scenario does not inject {:?}", step.action)
        };
        let service = *SERVICES.get(step.target).context("a step for a service that does not exist")?;
        recorder.fault(format!("{service}: {} for {} ms", fault.describe(), step.hold_ms));
        // The window runs from the injection's first command to the heal's: a fault takes
        // hold before its command returns, and ends before its heal's returns.
        let from_ms = recorder.now_ms();
        let injected = tokio::task::block_in_place(|| injector.inject(service, fault))?;
        let injected_ms = recorder.now_ms();
        tokio::time::sleep(Duration::from_millis(step.hold_ms)).await;
        let mut commands = injected.commands.clone();
        let to_ms = recorder.now_ms();
        commands.extend(tokio::task::block_in_place(|| injector.heal(injected))?);
        let healed_ms = recorder.now_ms();
        recorder.fault(format!("{service}: {} healed", fault.describe()));
        let target = if SHARDS.contains(&service) {
            FaultTarget::Shard(service.to_string())
        } else {
            FaultTarget::Cache(service.to_string())
        };
        recorder.window(FaultWindow { target, what: fault.describe(), from_ms, to_ms });
        recorder.host_fault(HostFaultRecord {
            service: service.to_string(),
            fault,
            scheduled_ms: step.at_ms,
            from_ms,
            to_ms,
            injected_ms,
            healed_ms,
            commands,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_fault_disconnects_a_shard_and_every_kind_follows() {
        for seed in 0..20 {
            let turns = turns(seed);
            assert!(turns[0].0 < SHARDS.len() && turns[0].1 == Action::Host(HostFault::Disconnect), "{turns:?}");
            let kinds = |f: fn(&HostFault) -> bool| {
                turns[1..7].iter().filter(|(_, a)| matches!(a, Action::Host(h) if f(h))).count()
            };
            assert_eq!(kinds(|h| matches!(h, HostFault::Loss { .. })), 1, "seed {seed}: {turns:?}");
            assert_eq!(kinds(|h| matches!(h, HostFault::Throttle { .. })), 1, "seed {seed}: {turns:?}");
            assert!(turns.iter().all(|(target, _)| *target < SERVICES.len()));
        }
        assert!((0..20).flat_map(turns).any(|(target, _)| SERVICES[target].starts_with("cache-")));
    }

    /// The lines of `service` in the compose file: its header and every line indented
    /// deeper, up to the next line at the services' indentation (another service, or a
    /// comment before one).
    fn service_block(compose: &str, service: &str) -> String {
        let mut lines = compose.lines().skip_while(|line| *line != format!("  {service}:"));
        let header = lines.next().unwrap_or_else(|| panic!("no service {service} in the compose file"));
        let body = lines.take_while(|line| line.is_empty() || line.starts_with("   "));
        std::iter::once(header).chain(body).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn the_caches_are_judged_for_the_shards_the_compose_file_replicates_to_them() {
        let compose = include_str!("../../deploy/docker-compose.yaml");
        for (shard, cache) in REPLICATES_TO {
            let block = service_block(compose, shard);
            // One cache, no failover list: the scopes cannot change during a run.
            let flag = format!("\"--cache-server\", \"https://{cache}:6450\"");
            assert!(block.contains(&flag), "{shard} replicates to {cache} alone:\n{block}");
            let watch = format!("\"--cache-watch-server\", \"https://{GLOBAL_CACHE}:6450\"");
            assert!(block.contains(&watch), "{shard} watches {GLOBAL_CACHE}:\n{block}");
        }
        for (_, cache) in REPLICATES_TO {
            let parent = format!("\"--parent\", \"https://{GLOBAL_CACHE}:6450\"");
            assert!(service_block(compose, cache).contains(&parent), "{cache} pushes to {GLOBAL_CACHE}");
        }
        assert!(!service_block(compose, GLOBAL_CACHE).contains("--parent"));
        let scopes = scopes();
        assert_eq!(
            scopes,
            vec![
                ("cache-a".to_string(), Some(vec!["root".to_string(), "shard-1".to_string()])),
                ("cache-b".to_string(), Some(vec!["shard-2".to_string()])),
                (GLOBAL_CACHE.to_string(), None),
            ]
        );
        let judged: Vec<&str> = scopes.iter().map(|(cache, _)| cache.as_str()).collect();
        assert_eq!(judged, SERVICES[SHARDS.len()..], "every faulted cache is judged");
    }

    #[test]
    fn a_seed_replays_its_schedule_and_holds_are_long_enough_to_show() {
        assert_eq!(draw(5, 60_000), draw(5, 60_000));
        assert_ne!(draw(5, 60_000), draw(6, 60_000));
        let steps = draw(5, 60_000);
        assert!(steps.len() >= 6, "{steps:?}");
        assert!(steps[..steps.len() - 1].iter().all(|s| s.hold_ms >= SPELLS.hold_ms.0), "{steps:?}");
        assert_eq!(project_name(5), format!("atoll-chaos-hosts-s5-{}", std::process::id()));
    }
}
