//! The cache-partition scenario (the scenarios 2 and 4): two regional caches,
//! `cache-a` and `cache-b`, under one parent `cache-p`; root and shard-1 replicate to
//! `cache-a` and fail over to `cache-b` (`--cache-server A,B`), and their informers watch
//! the parent. A seeded [`FaultProxy`] sits on every internal hop: each shard → each
//! regional cache, and each regional cache → the parent. One writer per shard creates,
//! patches and deletes replicated ClusterRoles while:
//!
//! 1. a scripted step forces the case known to break caches: root is partitioned from
//!    `cache-a` while `cache-a` is split from the parent, root fails over to `cache-b`
//!    (which then holds root's objects), root deletes an object `cache-a` still holds, and
//!    only then does `cache-a` reach the parent again: it must not bring the object back;
//!    then root's stream to `cache-b` is cut while `cache-a` accepts connections and never
//!    answers (a blackhole, as a frozen cache does): root must give up on `cache-a` and
//!    bring its next write to `cache-b`;
//! 2. the seed's schedule takes turns ([`TURNS`]) through partitions of a shard from a
//!    regional cache (connections refused, or a blackhole that holds them silent), kill -9
//!    of a regional cache (restarted on its data dir and port), and splits of a regional
//!    cache from the parent.
//!
//! After healing, each shard writes a marker object, and the regional cache that receives
//! it is the one the shard replicates to now: a regional cache is judged for exactly the
//! shards that replicate to it (what other shards left behind when they failed over is
//! counted, not judged), the parent for every shard.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use tests::cache::topology::{PARENT, REGION_A, REGION_B, TEST_RESYNC_INTERVAL_SECONDS};
use tests::cache::{CacheServerProcess, CacheSpec, CacheTopology, ReplicaId, ShardCaches};
use tests::installation::{CacheHops, Installation, InstallationOptions};

use crate::cache_faults::{self, role, role_id, CLUSTER_ROLES, REQUEST_TIMEOUT};
use crate::check::check_all;
use crate::history::{FailoverDelete, FaultTarget, FaultWindow, SilentFailover};
use crate::netproxy::{Direction, FaultProxy, NetFault};
use crate::scenario::{self, Report, RunOptions};
use crate::schedule::{self, Action, Step};
use crate::workload::Recorder;

/// The scenario's name.
pub const NAME: &str = "cache-partition";

/// What the schedule targets, by index: hops (`from->cache`, a fault proxy) and regional
/// caches (processes).
const TARGETS: [&str; 8] = [
    "root->cache-b",
    "cache-a",
    "cache-b->cache-p",
    "shard-1->cache-a",
    "cache-b",
    "cache-a->cache-p",
    "root->cache-a",
    "shard-1->cache-b",
];

/// A partition whose peers see refused connections (open ones are reset first).
const REFUSE: Action = Action::Net(NetFault::Drop(Direction::Upstream));
/// A partition that holds every connection silent, open ones included.
const BLACKHOLE: Action = Action::Net(NetFault::Blackhole);

/// The faults in turn: a partition of a shard from a regional cache, a kill -9 of a
/// regional cache, a split of a regional cache from the parent, and again with the other
/// cache, shard and partition kind. The scripted step leaves root on `cache-b` and shard-1
/// on `cache-a`, so the first partition sends root back to `cache-a`, and the kill that
/// follows sends both shards to `cache-b`.
const TURNS: [(usize, Action); 8] = [
    (0, REFUSE),
    (1, Action::Kill9),
    (2, BLACKHOLE),
    (3, BLACKHOLE),
    (4, Action::Kill9),
    (5, REFUSE),
    (6, BLACKHOLE),
    (7, REFUSE),
];

/// How long the caches may take to converge after healing: a shard held by a blackhole
/// notices only by its HTTP/2 keep-alive (20 s ping, 10 s timeout), so this is longer than
/// the cache-hierarchy scenario's.
const CONVERGE: Duration = Duration::from_secs(60);

/// How long one step of the script may wait for replication to show in a cache.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a write may take to reach the healthy cache while the other one is silent: a
/// bound on a bug (a shard that waits on the silent cache forever), not a speed.
const SILENT_BOUND: Duration = Duration::from_secs(45);

/// How often caches are polled during the script.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The logical cluster root's writer and the script use (see [`cache_faults::spawn_writers`]).
const ROOT_CLUSTER: &str = "chaos-0";

/// Runs the scenario to its verdict.
pub async fn run(options: &RunOptions) -> anyhow::Result<Report> {
    let started = Instant::now();
    let steps = schedule::draw_turns(options.seed, options.fault_seconds * 1000, &TURNS);
    println!(
        "scenario {} seed {}: a scripted failover delete, then {} faults",
        options.scenario,
        options.seed,
        steps.len()
    );
    for step in &steps {
        println!("  at {:>6} ms for {:>5} ms: {} {:?}", step.at_ms, step.hold_ms, TARGETS[step.target], step.action);
    }
    let proxies = Hops::default();
    let installation_options = InstallationOptions {
        extra_shards: 1,
        caches: Some(topology()),
        cache_hops: Some(proxies.cache_hops()),
        ..Default::default()
    };
    let mut installation = Installation::start_with(installation_options).await.context("start the installation")?;
    let recorder = Recorder::new(options.seed, &options.scenario);
    let stop = Arc::new(AtomicBool::new(false));
    let writers = cache_faults::spawn_writers(&installation, options.seed, &stop).await?;
    let script = match failover_delete(&installation, &proxies, &recorder).await {
        Ok(delete) => silent_failover(&installation, &proxies, &recorder).await.map(|silent| (delete, silent)),
        Err(error) => Err(error),
    };
    let phase = match &script {
        Ok(_) => inject(&mut installation, &proxies, &steps, &recorder).await,
        Err(_) => Ok(()),
    };
    proxies.heal_all();
    let (failover, silent) = script?;
    phase?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut tally = cache_faults::stop_writers(writers, &stop).await?;
    tally.deleted.push(failover.id.clone());
    let scopes = current_writers(&installation).await?;
    println!("regional caches judged for the shards replicating to them now: {scopes:?}");
    let mut history = recorder.snapshot();
    let mut record = cache_faults::converged(&installation, &tally.deleted, &scopes, CONVERGE).await?;
    (record.created, record.updated) = (tally.created, tally.updated);
    record.failover_deletes.push(failover);
    record.silent_failovers.push(silent);
    history.replication = Some(record);
    scenario::save(&history, options.history_file.as_deref())?;
    anyhow::ensure!(tally.created > 0 && tally.deleted.len() > 1, "the writers created or deleted nothing");
    let violations = check_all(&history);
    Ok(Report { history, violations, elapsed: started.elapsed() })
}

/// Regional caches A and B under parent P; every shard writes to A, fails over to B, and
/// watches P.
fn topology() -> CacheTopology {
    CacheTopology {
        caches: vec![CacheSpec::top(PARENT), CacheSpec::under(REGION_A, PARENT), CacheSpec::under(REGION_B, PARENT)],
        default_shard: ShardCaches {
            write: vec![REGION_A.to_string(), REGION_B.to_string()],
            watch: vec![PARENT.to_string()],
        },
        per_shard: BTreeMap::new(),
        resync_interval_seconds: TEST_RESYNC_INTERVAL_SECONDS,
    }
}

/// The fault proxies on the internal hops, by hop name (`from->cache`), created as the
/// installation starts each process.
#[derive(Clone, Default)]
struct Hops(Arc<Mutex<BTreeMap<String, FaultProxy>>>);

impl Hops {
    /// Puts a proxy on every shard → regional cache and regional cache → parent hop; other
    /// hops (the shards' watches of the parent) stay direct.
    fn cache_hops(&self) -> CacheHops {
        let hops = self.clone();
        CacheHops(Arc::new(move |from: &str, cache: &str, url: &str| {
            let regional = [REGION_A, REGION_B];
            let proxied = if regional.contains(&from) { cache == PARENT } else { regional.contains(&cache) };
            if !proxied {
                return Ok(url.to_string());
            }
            let name = format!("{from}->{cache}");
            let mut proxies = hops.lock();
            if let Some(proxy) = proxies.get(&name) {
                return Ok(format!("https://{}", proxy.listen_addr()));
            }
            let upstream: SocketAddr = url
                .strip_prefix("https://")
                .and_then(|address| address.parse().ok())
                .with_context(|| format!("cache URL {url:?} is not https://IP:PORT"))?;
            let proxy = FaultProxy::bind(&name, upstream)?;
            let proxied_url = format!("https://{}", proxy.listen_addr());
            proxies.insert(name, proxy);
            Ok(proxied_url)
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, FaultProxy>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies `fault` on hop `name`; a partition (refused connections) resets the open
    /// ones first, as a cable pulled mid-stream would.
    fn inject(&self, name: &str, fault: NetFault) -> anyhow::Result<()> {
        let proxies = self.lock();
        let proxy = proxies.get(name).with_context(|| format!("no fault proxy on hop {name}"))?;
        if fault == NetFault::Drop(Direction::Upstream) {
            proxy.inject(NetFault::Cut);
        }
        proxy.inject(fault);
        Ok(())
    }

    fn heal(&self, name: &str) -> anyhow::Result<()> {
        self.inject(name, NetFault::Heal)
    }

    fn heal_all(&self) {
        for proxy in self.lock().values() {
            proxy.heal();
        }
    }
}

/// The scripted step: root deletes an object after failing over from `cache-a` (which
/// still holds it and is cut off from the parent meanwhile) to `cache-b`; then `cache-a`
/// reaches the parent again. Returns what the step saw.
async fn failover_delete(
    installation: &Installation,
    hops: &Hops,
    recorder: &Recorder,
) -> anyhow::Result<FailoverDelete> {
    let root = &installation.root;
    let (a, b, parent) = (installation.cache(REGION_A)?, installation.cache(REGION_B)?, installation.cache(PARENT)?);
    let name = "chaos-failover-delete";
    let id = role_id(root.name(), ROOT_CLUSTER, name);
    let path = format!("/clusters/{ROOT_CLUSTER}/{CLUSTER_ROLES}");
    let http = root.http().with_timeout(REQUEST_TIMEOUT);
    let created = http.post_json(&path, &role(name, 0)).await.context("create the object to delete")?;
    anyhow::ensure!(created.status.is_success(), "create {id}: HTTP {}: {}", created.status, created.text());
    wait_holds(a, &id, true, "root's object reached cache-a").await?;
    wait_holds(parent, &id, true, "cache-a relayed it to the parent").await?;

    let split = format!("{REGION_A}->{PARENT}");
    let partition = format!("{}->{REGION_A}", root.name());
    recorder.fault(format!("script: split {split} (refused)"));
    hops.inject(&split, NetFault::Drop(Direction::Upstream))?;
    recorder.fault(format!("script: partition {partition} (refused)"));
    hops.inject(&partition, NetFault::Drop(Direction::Upstream))?;
    let sibling_held_it = wait_holds(b, &id, true, "root failed over to cache-b and replicated there").await.is_ok();
    let old_cache_held_it = holds(a, &id).await?;
    let deleted = http
        .send(http::Method::DELETE, &format!("{path}/{name}"), &[], Vec::new())
        .await
        .context("delete the object after the failover")?;
    anyhow::ensure!(deleted.status.is_success(), "delete {id}: HTTP {}: {}", deleted.status, deleted.text());
    recorder.fault(format!("script: root deleted {name} (held by cache-a: {old_cache_held_it})"));
    let parent_dropped_it = wait_holds(parent, &id, false, "cache-b relayed the delete to the parent").await.is_ok();
    recorder.fault(format!("script: heal {split}"));
    hops.heal(&split)?;
    recorder.fault(format!("script: heal {partition}"));
    hops.heal(&partition)?;
    Ok(FailoverDelete {
        id,
        from_cache: REGION_A.to_string(),
        to_cache: REGION_B.to_string(),
        old_cache_held_it,
        sibling_held_it,
        parent_dropped_it,
    })
}

/// The second scripted step: root (on `cache-b` after [`failover_delete`]) loses its
/// stream to `cache-b` while `cache-a` holds every connection silent, and writes an
/// object: it must reach `cache-b` within [`SILENT_BOUND`].
async fn silent_failover(
    installation: &Installation,
    hops: &Hops,
    recorder: &Recorder,
) -> anyhow::Result<SilentFailover> {
    let root = &installation.root;
    let b = installation.cache(REGION_B)?;
    let name = "chaos-silent-failover";
    let id = role_id(root.name(), ROOT_CLUSTER, name);
    let silent = format!("{}->{REGION_A}", root.name());
    let healthy = format!("{}->{REGION_B}", root.name());
    recorder.fault(format!("script: blackhole {silent}"));
    hops.inject(&silent, NetFault::Blackhole)?;
    recorder.fault(format!("script: cut {healthy}"));
    hops.inject(&healthy, NetFault::Cut)?;
    let path = format!("/clusters/{ROOT_CLUSTER}/{CLUSTER_ROLES}");
    let http = root.http().with_timeout(REQUEST_TIMEOUT);
    let created = http.post_json(&path, &role(name, 0)).await.context("create the object")?;
    anyhow::ensure!(created.status.is_success(), "create {id}: HTTP {}: {}", created.status, created.text());
    let deadline = Instant::now() + SILENT_BOUND;
    let delivered = loop {
        if holds(b, &id).await.unwrap_or(false) {
            break true;
        }
        if Instant::now() >= deadline {
            break false;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    };
    recorder.fault(format!("script: {name} reached {REGION_B}: {delivered}; heal {silent}"));
    hops.heal(&silent)?;
    Ok(SilentFailover { id, silent_cache: REGION_A.to_string(), healthy_cache: REGION_B.to_string(), delivered })
}

/// Whether `cache` holds the replica `id`.
async fn holds(cache: &CacheServerProcess, id: &str) -> anyhow::Result<bool> {
    let replicas = cache.replicas().await?;
    Ok(replicas.iter().filter_map(|r| r.key.as_ref()).any(|key| ReplicaId::from(key).to_string() == id))
}

/// Polls until `cache` holds (or, with `held` false, lacks) `id`, at most
/// [`STEP_TIMEOUT`]; the error says what was awaited.
async fn wait_holds(cache: &CacheServerProcess, id: &str, held: bool, what: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        if holds(cache, id).await.ok() == Some(held) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "{what}: cache {} still {} {id} after {STEP_TIMEOUT:?}",
                cache.name(),
                if held { "lacks" } else { "holds" }
            );
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Injects every step at its offset on its hop or cache, holds it and lifts it.
async fn inject(
    installation: &mut Installation,
    hops: &Hops,
    steps: &[Step],
    recorder: &Recorder,
) -> anyhow::Result<()> {
    let phase_start = Instant::now();
    for step in steps {
        tokio::time::sleep_until((phase_start + Duration::from_millis(step.at_ms)).into()).await;
        let name = TARGETS[step.target];
        let hold = Duration::from_millis(step.hold_ms);
        match step.action {
            Action::Net(fault) => {
                recorder.fault(format!("hop {name}: {fault:?} for {} ms", step.hold_ms));
                hops.inject(name, fault)?;
                tokio::time::sleep(hold).await;
                hops.heal(name)?;
                recorder.fault(format!("hop {name}: healed"));
            }
            Action::Kill9 => {
                let from_ms = recorder.now_ms();
                recorder.fault(format!("{name}: kill -9, restart after {} ms", step.hold_ms));
                installation.cache_mut(name)?.kill9();
                tokio::time::sleep(hold).await;
                installation.cache_mut(name)?.restart().await.with_context(|| format!("restart {name}"))?;
                recorder.fault(format!("{name}: serving again"));
                let target = FaultTarget::Cache(name.to_string());
                recorder.window(FaultWindow { target, what: "kill -9".to_string(), from_ms, to_ms: recorder.now_ms() });
            }
            other => anyhow::bail!("the {NAME} scenario does not inject {other:?}"),
        }
    }
    Ok(())
}

/// Which shards replicate to each regional cache now: every shard creates a marker
/// object, and the regional cache it shows up in is the shard's current target. Waits at
/// most [`CONVERGE`]; a shard whose marker reached neither is judged by no regional cache
/// (the parent judges it, and will miss its marker).
async fn current_writers(installation: &Installation) -> anyhow::Result<BTreeMap<String, Vec<String>>> {
    let mut markers = Vec::new();
    for (index, shard) in installation.all().enumerate() {
        let cluster = format!("chaos-{index}");
        let name = format!("chaos-marker-{}", shard.name());
        let path = format!("/clusters/{cluster}/{CLUSTER_ROLES}");
        let http = shard.http().with_timeout(REQUEST_TIMEOUT);
        let created = http.post_json(&path, &role(&name, 0)).await.with_context(|| format!("create marker {name}"))?;
        anyhow::ensure!(
            created.status.is_success(),
            "create marker {name}: HTTP {}: {}",
            created.status,
            created.text()
        );
        markers.push((shard.name().to_string(), role_id(shard.name(), &cluster, &name)));
    }
    let mut scopes: BTreeMap<String, Vec<String>> =
        [REGION_A, REGION_B].into_iter().map(|cache| (cache.to_string(), Vec::new())).collect();
    let deadline = Instant::now() + CONVERGE;
    let mut pending = markers;
    while !pending.is_empty() && Instant::now() < deadline {
        let mut still = Vec::new();
        for (shard, id) in pending {
            let mut found = false;
            for cache in [REGION_A, REGION_B] {
                if holds(installation.cache(cache)?, &id).await.unwrap_or(false) {
                    scopes.entry(cache.to_string()).or_default().push(shard.clone());
                    found = true;
                }
            }
            if !found {
                still.push((shard, id));
            }
        }
        pending = still;
        if !pending.is_empty() {
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }
    for (shard, _) in &pending {
        println!("the marker of {shard} reached no regional cache within {CONVERGE:?}");
    }
    Ok(scopes)
}
