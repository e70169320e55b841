//! The cache-hierarchy scenario: root and shard-1 replicate to a regional cache
//! (`cache-r`) that pushes everything it holds to a parent (`cache-p`); the shards'
//! informers watch the parent. One writer per shard creates, updates and deletes
//! replicated ClusterRoles (annotated `internal.kcp.io/replicate`) in a logical cluster of
//! its shard, straight to the shard, while the seed's schedule takes turns ([`TURNS`])
//! through `kill -9` (restarted on the same data dir after the hold) and SIGSTOP /
//! SIGCONT of the regional cache, the parent and shard-1, so that even a short run hits
//! each of them.
//!
//! After healing, every shard's replicated objects and every cache's replicas are read
//! until they agree or [`CONVERGE`] is over, and the cache convergence checker judges the
//! last reading.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tests::cache::{sources, CacheTopology, OriginEpoch, Replica, ReplicaId, SourceObject};
use tests::installation::{Installation, InstallationOptions};
use tests::TlsHttp;

use crate::check::{self, check_all};
use crate::history::{CacheRecord, FaultTarget, FaultWindow, History, RelayRecord, ReplicaRecord, ReplicationRecord};
use crate::scenario::{self, Report, RunOptions};
use crate::schedule::{self, Action, Step};
use crate::workload::Recorder;

/// The scenario's name.
pub const NAME: &str = "cache-hierarchy";

/// The processes the schedule targets, by index: the regional cache, the parent, shard-1.
const TARGETS: [&str; 3] = [tests::cache::topology::REGION, tests::cache::topology::PARENT, "shard-1"];

/// The faults in turn: every target meets both kinds within six steps, and three steps
/// (a 10 s run) kill the regional cache, freeze the parent and kill shard-1.
const TURNS: [(usize, Action); 6] = [
    (0, Action::Kill9),
    (1, Action::Pause),
    (2, Action::Kill9),
    (0, Action::Pause),
    (1, Action::Kill9),
    (2, Action::Pause),
];

/// How long the caches may take, after the faults stopped, to equal the sources; the
/// shards and caches resync every second in tests, so this bounds a bug.
pub(crate) const CONVERGE: Duration = Duration::from_secs(30);

/// The pause between two writes of one writer: bounds the load on two cores.
const WRITE_INTERVAL: Duration = Duration::from_millis(100);

/// A writer's patience with one request.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The resource the writers replicate.
pub(crate) const CLUSTER_ROLES: &str = "apis/rbac.authorization.k8s.io/v1/clusterroles";

/// Runs the scenario to its verdict.
pub async fn run(options: &RunOptions) -> anyhow::Result<Report> {
    let started = Instant::now();
    let steps = schedule::draw_turns(options.seed, options.fault_seconds * 1000, &TURNS);
    println!("scenario {} seed {}: {} faults scheduled", options.scenario, options.seed, steps.len());
    for step in &steps {
        println!("  at {:>6} ms for {:>5} ms: {} {:?}", step.at_ms, step.hold_ms, TARGETS[step.target], step.action);
    }
    let installation_options =
        InstallationOptions { extra_shards: 1, caches: Some(CacheTopology::chain()), ..Default::default() };
    let mut installation = Installation::start_with(installation_options).await.context("start the installation")?;
    let recorder = Recorder::new(options.seed, &options.scenario);
    let stop = Arc::new(AtomicBool::new(false));
    let writers = spawn_writers(&installation, options.seed, &stop).await?;
    inject(&mut installation, &steps, &recorder).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let tally = stop_writers(writers, &stop).await?;
    let mut history = recorder.snapshot();
    let record = converged(&installation, &tally.deleted, &BTreeMap::new(), CONVERGE).await?;
    history.replication = Some(ReplicationRecord { created: tally.created, updated: tally.updated, ..record });
    scenario::save(&history, options.history_file.as_deref())?;
    anyhow::ensure!(tally.created > 0 && !tally.deleted.is_empty(), "the writers created or deleted nothing");
    let violations = check_all(&history);
    Ok(Report { history, violations, elapsed: started.elapsed() })
}

/// Injects every step at its offset on its target, holds it and lifts it.
async fn inject(installation: &mut Installation, steps: &[Step], recorder: &Recorder) -> anyhow::Result<()> {
    let phase_start = Instant::now();
    for step in steps {
        tokio::time::sleep_until((phase_start + Duration::from_millis(step.at_ms)).into()).await;
        let name = TARGETS[step.target];
        let hold = Duration::from_millis(step.hold_ms);
        let from_ms = recorder.now_ms();
        let is_shard = installation.by_name(name).is_ok();
        let what = match step.action {
            Action::Kill9 => {
                recorder.fault(format!("{name}: kill -9, restart after {} ms", step.hold_ms));
                if is_shard {
                    installation.shard_mut(name)?.kill9();
                    tokio::time::sleep(hold).await;
                    installation.shard_mut(name)?.restart().await.with_context(|| format!("restart {name}"))?;
                } else {
                    installation.cache_mut(name)?.kill9();
                    tokio::time::sleep(hold).await;
                    installation.cache_mut(name)?.restart().await.with_context(|| format!("restart {name}"))?;
                }
                "kill -9"
            }
            Action::Pause => {
                let pid = if is_shard { installation.by_name(name)?.pid() } else { installation.cache(name)?.pid() };
                let pid = pid.with_context(|| format!("{name} is not running"))?;
                recorder.fault(format!("{name}: SIGSTOP for {} ms", step.hold_ms));
                crate::injector::pause(pid)?;
                tokio::time::sleep(hold).await;
                crate::injector::resume(pid)?;
                "SIGSTOP"
            }
            other => anyhow::bail!("the cache-hierarchy scenario does not inject {other:?}"),
        };
        recorder.fault(format!("{name}: serving again"));
        let target = if is_shard { FaultTarget::Shard(name.to_string()) } else { FaultTarget::Cache(name.to_string()) };
        recorder.window(FaultWindow { target, what: what.to_string(), from_ms, to_ms: recorder.now_ms() });
    }
    Ok(())
}

/// Starts one [`Writer`] per shard, each in a logical cluster of its own on its shard.
pub(crate) async fn spawn_writers(
    installation: &Installation,
    seed: u64,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<Tally>>> {
    let mut writers = Vec::new();
    for (index, shard) in installation.all().enumerate() {
        let cluster = format!("chaos-{index}");
        scenario::prepare(shard, &cluster).await?;
        let http = shard.http().with_timeout(REQUEST_TIMEOUT);
        writers.push(spawn_writer(http, shard.name(), &cluster, &cluster, seed + index as u64, stop));
    }
    Ok(writers)
}

/// Starts one [`Writer`] of replicated ClusterRoles into the logical cluster at `path`
/// (named `cluster`, as replica ids name it) on `shard`, through `http`, which may reach
/// the shard directly or through a front-proxy.
pub(crate) fn spawn_writer(
    http: TlsHttp,
    shard: &str,
    path: &str,
    cluster: &str,
    seed: u64,
    stop: &Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Tally> {
    let writer = Writer { http, shard: shard.to_string(), path: path.to_string(), cluster: cluster.to_string(), seed };
    tokio::spawn(writer.run(stop.clone()))
}

/// Stops the writers and adds up what they were told.
pub(crate) async fn stop_writers(
    writers: Vec<tokio::task::JoinHandle<Tally>>,
    stop: &AtomicBool,
) -> anyhow::Result<Tally> {
    stop.store(true, Ordering::SeqCst);
    let mut tally = Tally::default();
    for writer in writers {
        tally.add(writer.await.context("join a writer")?);
    }
    println!(
        "replicated writes: {} created, {} updated, {} deleted",
        tally.created,
        tally.updated,
        tally.deleted.len()
    );
    Ok(tally)
}

/// Reads the sources and every cache until the cache checker finds nothing or `converge`
/// is over; returns the last reading. `scopes` names, by cache, the origins a cache is
/// judged for (a cache it does not name: every live shard).
pub(crate) async fn converged(
    installation: &Installation,
    deleted: &[String],
    scopes: &BTreeMap<String, Vec<String>>,
    converge: Duration,
) -> anyhow::Result<ReplicationRecord> {
    let deadline = Instant::now() + converge;
    loop {
        let record = read_replication(installation, deleted, scopes).await?;
        let judged = History { replication: Some(record), ..History::default() };
        if check::cache::check(&judged).is_empty() || Instant::now() >= deadline {
            return judged.replication.context("the record just read");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// One reading: every live shard's replicated objects, then every cache's replicas.
async fn read_replication(
    installation: &Installation,
    deleted: &[String],
    scopes: &BTreeMap<String, Vec<String>>,
) -> anyhow::Result<ReplicationRecord> {
    let mut record = ReplicationRecord { deleted: deleted.to_vec(), ..ReplicationRecord::default() };
    for shard in installation.all() {
        record.live_shards.push(shard.name().to_string());
        record.sources.extend(source_records(&sources::replicated_sources(shard).await?));
    }
    for cache in &installation.caches {
        let listed = cache.client().list_everything().await.with_context(|| format!("list {}", cache.name()))?;
        let origins = scopes.get(cache.name()).cloned();
        record.caches.push(CacheRecord {
            cache: cache.name().to_string(),
            replicas: replica_records(&listed.items),
            origins,
            relays: relay_records(&listed.epochs),
        });
    }
    Ok(record)
}

/// The records of the replicated objects a shard listed.
pub(crate) fn source_records(sources: &[SourceObject]) -> Vec<ReplicaRecord> {
    sources
        .iter()
        .map(|source| {
            let text = |pointer| source.object.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
            let source_rv = text("/metadata/resourceVersion").parse().unwrap_or(0);
            ReplicaRecord { id: source.id.to_string(), uid: text("/metadata/uid").into(), source_rv }
        })
        .collect()
}

/// A cache's session records as its List answered them.
pub(crate) fn relay_records(epochs: &[OriginEpoch]) -> Vec<RelayRecord> {
    epochs
        .iter()
        .map(|e| RelayRecord { origin: e.origin.clone(), epoch: e.epoch, via: e.via.clone(), settled: e.settled })
        .collect()
}

/// The records of the replicas a cache listed (a replica without a key is left out).
pub(crate) fn replica_records(replicas: &[Replica]) -> Vec<ReplicaRecord> {
    replicas
        .iter()
        .filter_map(|r| {
            let id = ReplicaId::from(r.key.as_ref()?).to_string();
            Some(ReplicaRecord { id, uid: r.uid.clone(), source_rv: r.source_rv })
        })
        .collect()
}

/// What the writers were told.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) created: usize,
    pub(crate) updated: usize,
    /// Ids (as in [`ReplicaRecord::id`]) of the objects whose delete was acknowledged.
    pub(crate) deleted: Vec<String>,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.created += other.created;
        self.updated += other.updated;
        self.deleted.extend(other.deleted);
    }
}

/// One shard's writer of replicated ClusterRoles.
struct Writer {
    http: TlsHttp,
    shard: String,
    /// The logical cluster's path in request URLs.
    path: String,
    /// Its name, as replica ids carry it.
    cluster: String,
    seed: u64,
}

impl Writer {
    /// Creates (half of the time), updates and deletes ClusterRoles until told to stop.
    /// Unanswered requests are left out: the checker judges the end state, and an object
    /// deleted without an answer is judged as one nobody saw deleted.
    async fn run(self, stop: Arc<AtomicBool>) -> Tally {
        let mut rng = StdRng::seed_from_u64(self.seed);
        let mut tally = Tally::default();
        let mut live: Vec<String> = Vec::new();
        let collection = format!("/clusters/{}/{CLUSTER_ROLES}", self.path);
        let mut sequence = 0u64;
        while !stop.load(Ordering::SeqCst) {
            sequence += 1;
            let choice = rng.gen_range(0..10);
            if live.is_empty() || choice < 5 {
                let name = format!("chaos-{}-{sequence}", self.shard);
                if self.send(http::Method::POST, &collection, &role(&name, sequence)).await == Some(true) {
                    tally.created += 1;
                    live.push(name);
                }
            } else if choice < 8 {
                let name = &live[rng.gen_range(0..live.len())];
                let patch = json!({"metadata": {"labels": {"chaos-sequence": sequence.to_string()}}});
                let path = format!("{collection}/{name}");
                if self.patch(&path, &patch).await {
                    tally.updated += 1;
                }
            } else {
                let name = live.swap_remove(rng.gen_range(0..live.len()));
                let path = format!("{collection}/{name}");
                match self.send(http::Method::DELETE, &path, &Value::Null).await {
                    Some(true) => tally.deleted.push(self.id(&name)),
                    _ => live.push(name),
                }
            }
            tokio::time::sleep(WRITE_INTERVAL).await;
        }
        tally
    }

    /// Whether the shard acknowledged the request (`None`: no answer).
    async fn send(&self, method: http::Method, path: &str, body: &Value) -> Option<bool> {
        let body = if body.is_null() { Vec::new() } else { serde_json::to_vec(body).unwrap_or_default() };
        let answer = self.http.send(method, path, &[("content-type", "application/json")], body).await.ok()?;
        Some(answer.status.is_success())
    }

    async fn patch(&self, path: &str, patch: &Value) -> bool {
        let body = serde_json::to_vec(patch).unwrap_or_default();
        let headers = [("content-type", "application/merge-patch+json")];
        self.http.send(http::Method::PATCH, path, &headers, body).await.is_ok_and(|r| r.status.is_success())
    }

    fn id(&self, name: &str) -> String {
        role_id(&self.shard, &self.cluster, name)
    }
}

/// The id (as in [`ReplicaRecord::id`]) of ClusterRole `name` in `cluster` on `shard`.
pub(crate) fn role_id(shard: &str, cluster: &str, name: &str) -> String {
    format!("{shard}/{cluster}/rbac.authorization.k8s.io/clusterroles/{name}")
}

/// A replicated ClusterRole.
pub(crate) fn role(name: &str, sequence: u64) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "annotations": {"internal.kcp.io/replicate": "true"},
                     "labels": {"chaos-sequence": sequence.to_string()}},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    })
}
