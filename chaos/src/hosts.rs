//! The `hosts` scenario: faults between the hosts of the multi-host installation
//! (`deploy/docker-compose.yaml`, every process its own container on one compose
//! network). The installation is brought up under a compose project named after the
//! scenario, the seed and this process ([`project_name`]), and taken down at the end,
//! also when the run fails.
//!
//! Clients work through the front-proxy's published port, as users do: writers and
//! watchers on a workspace of each shard (root, shard-1, shard-2), and a storm creating
//! and deleting Workspaces in root. Meanwhile the seed's schedule ([`draw`]) faults the
//! shard and cache containers one at a time ([`docker`] injects, [`fault`] says what):
//! `docker network disconnect` (reconnected under its alias), `docker pause`, packet loss,
//! a blackhole or a cut per direction with iptables in the container's network namespace,
//! and a `tbf` rate limit in place of netem's delay (the kernel here has no netem). The
//! first fault always disconnects a shard, so even a short run partitions one.
//!
//! After the heals, the final state is read from each shard directly (its container's
//! address on the project network), the Workspaces settle, and every Workspace the storm
//! touched is probed through the proxy. Judged: the ledger and the watch validator, the
//! workspace checker, availability per shard (a shard is healthy while another container
//! is faulted) and index convergence. The caches publish no port, so cache convergence is
//! not judged here (the cache scenarios judge it over local processes).

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
use ::tests::compose::{eventually, Compose};
use ::tests::installation::workspaces_path;
use ::tests::TlsHttp;

use self::docker::HostInjector;
use self::fault::{HostFault, Way};
use crate::check::check_all;
use crate::history::{FaultTarget, FaultWindow, HostFaultRecord};
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
    let targets = prepare_targets(&proxy).await?;
    let injector = tokio::task::block_in_place(|| HostInjector::new(compose, &SERVICES))?;
    let storm_started = Instant::now();
    let recorder = Recorder::new(options.seed, &options.scenario);
    let workload = Workload::spawn(&recorder, &targets, options);
    let stop = Arc::new(AtomicBool::new(false));
    let churn =
        tokio::spawn(storm::storm_since(proxy.clone(), "root".to_string(), options.seed, stop.clone(), storm_started));
    inject(&injector, steps, &recorder).await?;
    tokio::time::sleep(RECOVER).await;
    let tally = storm::stop_proxied(&stop, churn).await?;
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
    scenario::save(&history, options.history_file.as_deref())?;
    let violations = check_all(&history);
    Ok(Report { history, violations, elapsed: started.elapsed() })
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
/// per shard, all reached through the proxy.
async fn prepare_targets(proxy: &TlsHttp) -> anyhow::Result<Vec<Target>> {
    let mut on: BTreeMap<String, String> = BTreeMap::new();
    for index in 0..PLACEMENT_MAX {
        if SHARDS.iter().all(|shard| on.contains_key(*shard)) {
            break;
        }
        let name = format!("hosts-{index}");
        let shard = ready_workspace(proxy, &name).await?;
        on.entry(shard).or_insert(name);
    }
    anyhow::ensure!(
        SHARDS.iter().all(|s| on.contains_key(*s)),
        "{PLACEMENT_MAX} workspaces left a shard empty: {on:?}"
    );
    let mut targets = Vec::new();
    for shard in SHARDS {
        let cluster = format!("root:{}", on[shard]);
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
    }
    println!("workload workspaces: {on:?}");
    Ok(targets)
}

/// Creates Workspace `name` in root through the proxy, waits until it is Ready and the
/// proxy routes it, and returns its shard.
async fn ready_workspace(proxy: &TlsHttp, name: &str) -> anyhow::Result<String> {
    let body = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name}});
    proxy.create(&workspaces_path("root"), &body).await?;
    let path = format!("{}/{name}", workspaces_path("root"));
    let shard = eventually(&format!("workspace {name} Ready"), READY, || async {
        let response = proxy.get(&path).await.map_err(|e| format!("{e:#}"))?;
        let workspace = response.json().unwrap_or(Value::Null);
        let shard = workspace["metadata"]["annotations"][SHARD_ANNOTATION].as_str();
        match (response.status, workspace["status"]["phase"].as_str(), shard) {
            (StatusCode::OK, Some("Ready"), Some(shard)) => Ok(shard.to_string()),
            (status, _, _) => Err(format!("HTTP {status}: {workspace}")),
        }
    })
    .await?;
    let namespaces = format!("/clusters/root:{name}/api/v1/namespaces");
    eventually(&format!("root:{name} routed by the front-proxy"), READY, || async {
        let response = proxy.get(&namespaces).await.map_err(|e| format!("{e:#}"))?;
        (response.status == StatusCode::OK).then_some(()).ok_or_else(|| format!("HTTP {}", response.status))
    })
    .await?;
    Ok(shard)
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
        let injected = tokio::task::block_in_place(|| injector.inject(service, fault))?;
        let from_ms = recorder.now_ms();
        tokio::time::sleep(Duration::from_millis(step.hold_ms)).await;
        let mut commands = injected.commands.clone();
        commands.extend(tokio::task::block_in_place(|| injector.heal(injected))?);
        let to_ms = recorder.now_ms();
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
