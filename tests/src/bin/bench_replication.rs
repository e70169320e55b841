//! `bench-replication`: replication lag at a steady write rate, through one cache server
//! and through a two-level hierarchy.
//!
//! For each topology it starts a root shard and its caches, then:
//!
//! 1. opens a gRPC Watch on the cache a shard's cache informers would read (the one
//!    cache, or the parent of the hierarchy), exactly as a cache informer does: List, then
//!    Watch from the list's version, relisting on OUT_OF_RANGE (410);
//! 2. creates `--objects` ClusterRoles annotated for replication (untimed warm-up);
//! 3. updates them round-robin at `--rate` writes/s for `--duration-seconds`, open loop:
//!    write `i` is due at `start + i / rate` whether or not earlier writes have answered,
//!    spread over `--connections` connections;
//! 4. matches every watch event to its write by object name and source resourceVersion.
//!
//! Lag runs from the moment the write request is sent to the moment the event is decoded
//! from the watch. It prints p50/p90/p99/max lag and the achieved write rate for each
//! topology, against the goals: p99 < 50 ms through one cache, < 100 ms through two levels.

use protocol::wellknown::REPLICATE_ANNOTATION;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ::tests::cache::topology::{PARENT, SINGLE};
use ::tests::cache::{CacheClient, CacheTopology};
use ::tests::installation::{Installation, InstallationOptions, ROOT_CLUSTER, ROOT_SHARD_NAME};
use ::tests::{TlsConnection, TlsHttp};
use anyhow::Context;
use clap::Parser;
use hdrhistogram::Histogram;
use http::{Method, StatusCode};
use protocol::cache::{watch_event, WatchEvent, WatchRequest};
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

const RBAC: &str = "rbac.authorization.k8s.io";
const CLUSTER_ROLES: &str = "clusterroles";
const CLUSTER_ROLES_PATH: &str = "/clusters/root/apis/rbac.authorization.k8s.io/v1/clusterroles";

/// Objects are named `bench-<n>`, so that a watch event maps to its object by name.
const OBJECT_PREFIX: &str = "bench-";

/// The goals, in milliseconds of p99 lag.
const GOAL_ONE_CACHE_P99_MS: f64 = 50.0;
const GOAL_TWO_LEVELS_P99_MS: f64 = 100.0;

/// The largest lag or latency the histograms hold; slower ones are recorded as this.
const LATENCY_US_MAX: u64 = 600_000_000;

/// How many failures are printed in full; the rest are only counted.
const ERROR_SAMPLES_MAX: usize = 5;

/// How long a worker waits before reconnecting after a failed exchange.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(100);

/// How long the watch may take to list and open before the load starts.
const WATCH_ESTABLISH_TIMEOUT: Duration = Duration::from_secs(30);

/// How often the watch may be reopened before it gives up (a run normally needs none).
const WATCH_RESTARTS_MAX: u32 = 20;

/// How often the drain phase checks whether every write was seen.
const DRAIN_POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The most arrivals recorded; a bound on memory whatever the flags (a run at the
/// highest rate and duration the flags allow stays under it).
const ARRIVALS_MAX: usize = 20_000_000;

/// Command-line flags; each is bounded so a typo cannot start a day-long run.
#[derive(Parser, Debug)]
#[command(name = "bench-replication", about = "Replication lag through one cache and through a two-level hierarchy")]
struct Args {
    /// Replicated writes per second (open loop).
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..=20_000))]
    rate: u64,
    /// Seconds of steady load per topology.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=600))]
    duration_seconds: u64,
    /// Connections the writes are spread over (each carries one request at a time).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=256))]
    connections: u64,
    /// Distinct ClusterRoles the updates cycle through.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    objects: u64,
    /// Seconds to wait, after the last write answered, for the last events.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=300))]
    drain_seconds: u64,
    /// Which topologies to run.
    #[arg(long, value_enum, default_value_t = Which::Both)]
    topology: Which,
    /// Drift-repair period of shards and caches. Each repair compares everything a sender
    /// holds with its cache, so the tests' 1 s would measure repair, not replication.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    resync_interval_seconds: u64,
}

/// The topologies a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Which {
    /// One cache, then the two-level hierarchy.
    Both,
    /// Shard → cache C, watcher on C.
    One,
    /// Shard → regional R → parent P, watcher on P.
    Two,
}

/// The shape of one run.
#[derive(Clone, Copy, Debug)]
struct Plan {
    rate: u64,
    writes: u64,
    connections: usize,
    objects: u64,
    drain: Duration,
    resync_interval_seconds: u64,
}

impl Plan {
    fn from_args(args: &Args) -> anyhow::Result<Plan> {
        Ok(Plan {
            rate: args.rate,
            writes: args.rate * args.duration_seconds,
            connections: usize::try_from(args.connections).context("convert --connections")?,
            objects: args.objects,
            drain: Duration::from_secs(args.drain_seconds),
            resync_interval_seconds: args.resync_interval_seconds,
        })
    }

    /// When write `index` is due, after the start of the load.
    fn due(&self, index: u64) -> Duration {
        Duration::from_secs_f64(index as f64 / self.rate as f64)
    }

    /// The object write `index` updates.
    fn object(&self, index: u64) -> String {
        object_name(index % self.objects)
    }
}

fn object_name(index: u64) -> String {
    format!("{OBJECT_PREFIX}{index}")
}

/// One measured topology.
struct Topology {
    label: &'static str,
    caches: CacheTopology,
    /// The cache the watcher reads, as a shard's cache informer would.
    watched: &'static str,
    goal_p99_ms: f64,
}

fn topologies(which: Which) -> Vec<Topology> {
    let one = Topology {
        label: "one cache (shard → C, watch C)",
        caches: CacheTopology::single(),
        watched: SINGLE,
        goal_p99_ms: GOAL_ONE_CACHE_P99_MS,
    };
    let two = Topology {
        label: "two levels (shard → R → P, watch P)",
        caches: CacheTopology::chain(),
        watched: PARENT,
        goal_p99_ms: GOAL_TWO_LEVELS_P99_MS,
    };
    match which {
        Which::Both => vec![one, two],
        Which::One => vec![one],
        Which::Two => vec![two],
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let plan = Plan::from_args(&args)?;
    let runtime = ::tests::load_generator_runtime()?;
    // Dropping `run` on Ctrl-C drops the installation, which kills every process.
    runtime.block_on(async {
        tokio::select! {
            result = run(plan, args.topology) => result,
            _ = tokio::signal::ctrl_c() => anyhow::bail!("interrupted; stopped what this run started"),
        }
    })
}

async fn run(plan: Plan, which: Which) -> anyhow::Result<()> {
    println!(
        "bench-replication: {} writes/s for {:.0} s over {} connections, {} objects, resync every {} s",
        plan.rate,
        plan.due(plan.writes).as_secs_f64(),
        plan.connections,
        plan.objects,
        plan.resync_interval_seconds
    );
    let mut results = Vec::new();
    for topology in topologies(which) {
        let figures = measure_topology(&topology, &plan).await?;
        figures.print(topology.label);
        results.push((topology, figures));
    }
    print_summary(&plan, &results);
    Ok(())
}

/// Starts the topology's installation, measures, and stops it.
async fn measure_topology(topology: &Topology, plan: &Plan) -> anyhow::Result<Figures> {
    eprintln!();
    eprintln!("starting {}", topology.label);
    let caches = CacheTopology { resync_interval_seconds: plan.resync_interval_seconds, ..topology.caches.clone() };
    let options = InstallationOptions { caches: Some(caches), ..InstallationOptions::default() };
    let mut installation = Installation::start_with(options).await.context("start the installation")?;
    for cache in &installation.caches {
        eprintln!("  cache {} at {} (pid {})", cache.name(), cache.url(), cache.pid().unwrap_or_default());
    }
    eprintln!("  shard {} at {}", installation.root.name(), installation.root.base_url());
    let figures = measure(&installation, topology, plan).await;
    if let Err(error) = installation.stop().await {
        eprintln!("warning: {error:#}");
    }
    figures
}

async fn measure(installation: &Installation, topology: &Topology, plan: &Plan) -> anyhow::Result<Figures> {
    let arrivals = Arc::new(Arrivals::default());
    let watched = installation.cache(topology.watched)?.client();
    let (established_tx, established_rx) = oneshot::channel();
    let watch = tokio::spawn(CacheWatch::new(watched, arrivals.clone(), established_tx).run());
    tokio::time::timeout(WATCH_ESTABLISH_TIMEOUT, established_rx)
        .await
        .with_context(|| format!("open the watch on {} within {WATCH_ESTABLISH_TIMEOUT:?}", topology.watched))?
        .context("the watch gave up before it was open")?;
    let http = installation.root.http();
    create_objects(&http, plan).await?;
    eprintln!("{} objects created; {} updates at {} writes/s", plan.objects, plan.writes, plan.rate);
    let load = update_objects(&http, plan).await?;
    let unseen = wait_drained(&arrivals, &load.writes, plan.drain).await;
    watch.abort();
    Figures::compute(load, &arrivals, unseen)
}

/// When each `(object name, source resourceVersion)` was first seen on the watch.
#[derive(Default)]
struct Arrivals {
    seen: Mutex<HashMap<(String, u64), Instant>>,
    /// Events that were not recorded because [`ARRIVALS_MAX`] was reached.
    dropped: Mutex<u64>,
    /// Times the watch had to relist (410) or reconnect.
    restarts: Mutex<u32>,
}

impl Arrivals {
    fn note(&self, event: &WatchEvent, at: Instant) {
        if event.kind == watch_event::Kind::Bookmark as i32 {
            return;
        }
        let Some(replica) = &event.replica else { return };
        let Some(key) = &replica.key else { return };
        if key.origin != ROOT_SHARD_NAME || key.cluster != ROOT_CLUSTER || !key.name.starts_with(OBJECT_PREFIX) {
            return;
        }
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() >= ARRIVALS_MAX {
            *self.dropped.lock().unwrap_or_else(|e| e.into_inner()) += 1;
            return;
        }
        seen.entry((key.name.clone(), replica.source_rv)).or_insert(at);
    }

    fn get(&self, name: &str, rv: u64) -> Option<Instant> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).get(&(name.to_string(), rv)).copied()
    }

    fn count_restart(&self) {
        *self.restarts.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    }
}

/// Where the cache watch is: about to list, or streaming from a cache resourceVersion.
#[derive(Clone, Copy, Debug)]
enum WatchState {
    /// List, and watch from the list's version (items listed are not arrivals).
    List,
    /// Stream changes after `from_rv`.
    Stream { from_rv: u64 },
}

/// A cache informer's list/watch loop, recording arrivals instead of filling a store.
struct CacheWatch {
    client: CacheClient,
    arrivals: Arc<Arrivals>,
    established: Option<oneshot::Sender<()>>,
}

impl CacheWatch {
    fn new(client: CacheClient, arrivals: Arc<Arrivals>, established: oneshot::Sender<()>) -> CacheWatch {
        CacheWatch { client, arrivals, established: Some(established) }
    }

    /// Runs until aborted, or until it restarted [`WATCH_RESTARTS_MAX`] times.
    async fn run(mut self) {
        let mut state = WatchState::List;
        let mut restarts = 0u32;
        loop {
            let outcome = match state {
                WatchState::List => self.list().await,
                WatchState::Stream { from_rv } => self.stream(from_rv).await,
            };
            // A stream is meant to last the whole run: every return from one, and every
            // failure, is a restart.
            restarts += u32::from(matches!(state, WatchState::Stream { .. }) || outcome.is_err());
            match outcome {
                Ok(next) => state = next,
                Err(error) => {
                    eprintln!("cache watch: {error:#}");
                    tokio::time::sleep(RECONNECT_BACKOFF).await;
                }
            }
            if restarts > WATCH_RESTARTS_MAX {
                eprintln!("cache watch: giving up after {WATCH_RESTARTS_MAX} restarts");
                return;
            }
        }
    }

    async fn list(&mut self) -> anyhow::Result<WatchState> {
        let list = self.client.list_resource(RBAC, CLUSTER_ROLES).await?;
        Ok(WatchState::Stream { from_rv: list.rv })
    }

    /// Streams until the cache ends the stream (resume from the last version) or says the
    /// version is too old (relist).
    async fn stream(&mut self, mut from_rv: u64) -> anyhow::Result<WatchState> {
        let request = WatchRequest { group: RBAC.into(), resource: CLUSTER_ROLES.into(), from_rv };
        let mut events = match self.client.watch(request).await {
            Ok(events) => events,
            Err(status) if status.code() == tonic::Code::OutOfRange => return Ok(self.relist()),
            Err(status) => anyhow::bail!("open the watch: {:?}: {}", status.code(), status.message()),
        };
        if let Some(established) = self.established.take() {
            // The receiver is gone only if the run already failed.
            let _ = established.send(());
        }
        loop {
            match events.message().await {
                Ok(Some(event)) => {
                    self.arrivals.note(&event, Instant::now());
                    from_rv = from_rv.max(event.rv);
                }
                Ok(None) => {
                    self.arrivals.count_restart();
                    return Ok(WatchState::Stream { from_rv });
                }
                Err(status) if status.code() == tonic::Code::OutOfRange => return Ok(self.relist()),
                Err(status) => {
                    self.arrivals.count_restart();
                    eprintln!("cache watch interrupted: {:?}: {}", status.code(), status.message());
                    return Ok(WatchState::Stream { from_rv });
                }
            }
        }
    }

    fn relist(&self) -> WatchState {
        eprintln!("cache watch: 410, relisting (events in between count as unseen)");
        self.arrivals.count_restart();
        WatchState::List
    }
}

/// Creates the objects (or finds them already there), untimed.
async fn create_objects(http: &TlsHttp, plan: &Plan) -> anyhow::Result<()> {
    let mut workers = JoinSet::new();
    for worker in 0..plan.connections as u64 {
        let http = http.clone();
        let (objects, connections) = (plan.objects, plan.connections as u64);
        workers.spawn(async move {
            let mut connection = http.connect().await?;
            for index in (worker..objects).step_by(usize::try_from(connections)?) {
                let body = serde_json::to_vec(&cluster_role(&object_name(index)))?;
                let headers = [("content-type", "application/json")];
                let response = connection.send(Method::POST, CLUSTER_ROLES_PATH, &headers, body).await?;
                anyhow::ensure!(
                    matches!(response.status, StatusCode::CREATED | StatusCode::CONFLICT),
                    "create {}: HTTP {}: {}",
                    object_name(index),
                    response.status,
                    clip(&response.text())
                );
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = workers.join_next().await {
        done.context("join a creating worker")??;
    }
    Ok(())
}

fn cluster_role(name: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "annotations": {REPLICATE_ANNOTATION: "true"}},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    })
}

/// One answered update: which object, when it was sent, and the version it produced.
#[derive(Clone, Debug)]
struct Write {
    name: String,
    sent: Instant,
    rv: u64,
}

/// What the workers did.
struct Load {
    writes: Vec<Write>,
    errors: u64,
    write_latency_us: Histogram<u64>,
    /// From the first send to the last answer.
    elapsed: Duration,
    /// How far behind schedule the latest send was (open-loop health).
    behind_max: Duration,
}

/// Runs the open-loop updates: worker `k` of `K` sends writes `k, k+K, k+2K, …`, each at
/// its due time (or at once if it is already late).
async fn update_objects(http: &TlsHttp, plan: &Plan) -> anyhow::Result<Load> {
    let samples = Arc::new(ErrorSamples::default());
    let mut connections = Vec::with_capacity(plan.connections);
    for _ in 0..plan.connections {
        connections.push(http.connect().await.context("open a writer connection")?);
    }
    let start = tokio::time::Instant::now() + Duration::from_millis(100);
    let mut workers = JoinSet::new();
    for (worker, connection) in connections.into_iter().enumerate() {
        let writer = Writer { http: http.clone(), connection: Some(connection), plan: *plan, samples: samples.clone() };
        workers.spawn(writer.run(worker as u64, start));
    }
    let mut load = Load {
        writes: Vec::new(),
        errors: 0,
        write_latency_us: latency_histogram(),
        elapsed: Duration::ZERO,
        behind_max: Duration::ZERO,
    };
    let mut last_answer = start.into_std();
    while let Some(done) = workers.join_next().await {
        let part = done.context("join a writer")?;
        load.writes.extend(part.writes);
        load.errors += part.errors;
        load.write_latency_us.add(part.latency_us).context("merge latency histograms")?;
        load.behind_max = load.behind_max.max(part.behind_max);
        last_answer = last_answer.max(part.last_answer);
    }
    load.elapsed = last_answer.saturating_duration_since(start.into_std());
    Ok(load)
}

/// What one writer did.
struct WriterLoad {
    writes: Vec<Write>,
    errors: u64,
    latency_us: Histogram<u64>,
    behind_max: Duration,
    last_answer: Instant,
}

/// One connection's share of the open-loop schedule.
struct Writer {
    http: TlsHttp,
    connection: Option<TlsConnection>,
    plan: Plan,
    samples: Arc<ErrorSamples>,
}

impl Writer {
    async fn run(mut self, worker: u64, start: tokio::time::Instant) -> WriterLoad {
        let mut load = WriterLoad {
            writes: Vec::new(),
            errors: 0,
            latency_us: latency_histogram(),
            behind_max: Duration::ZERO,
            last_answer: start.into_std(),
        };
        let step = self.plan.connections as u64;
        let mut index = worker;
        while index < self.plan.writes {
            let due = start + self.plan.due(index);
            tokio::time::sleep_until(due).await;
            load.behind_max = load.behind_max.max(tokio::time::Instant::now().saturating_duration_since(due));
            self.update(index, &mut load).await;
            index += step;
        }
        load
    }

    async fn update(&mut self, index: u64, load: &mut WriterLoad) {
        let name = self.plan.object(index);
        let path = format!("{CLUSTER_ROLES_PATH}/{name}");
        let body = json!({"metadata": {"labels": {"seq": index.to_string()}}}).to_string();
        let headers = [("content-type", "application/merge-patch+json")];
        let mut connection = match self.connection.take() {
            Some(connection) => connection,
            None => match self.http.connect().await {
                Ok(connection) => connection,
                Err(error) => {
                    load.errors += 1;
                    self.samples.note(|| format!("connect: {error:#}"));
                    tokio::time::sleep(RECONNECT_BACKOFF).await;
                    return;
                }
            },
        };
        let sent = Instant::now();
        let outcome = connection.send(Method::PATCH, &path, &headers, body).await;
        let answered = Instant::now();
        load.last_answer = load.last_answer.max(answered);
        match outcome.and_then(|response| written_rv(&response)) {
            Ok(rv) => {
                record(&mut load.latency_us, answered - sent);
                load.writes.push(Write { name, sent, rv });
                self.connection = Some(connection);
            }
            Err(error) => {
                load.errors += 1;
                self.samples.note(|| format!("PATCH {path}: {error:#}"));
                // The connection's state is unknown after a failed exchange; drop it.
            }
        }
    }
}

/// The resourceVersion a successful write answered with.
fn written_rv(response: &::tests::HttpResponse) -> anyhow::Result<u64> {
    anyhow::ensure!(response.status == StatusCode::OK, "HTTP {}: {}", response.status, clip(&response.text()));
    let object = response.json()?;
    let rv = object.pointer("/metadata/resourceVersion").and_then(Value::as_str).context("no resourceVersion")?;
    rv.parse().with_context(|| format!("resourceVersion {rv:?} is not a number"))
}

/// Waits (at most `drain`) until every write was seen; returns how many were not.
async fn wait_drained(arrivals: &Arrivals, writes: &[Write], drain: Duration) -> usize {
    let deadline = Instant::now() + drain;
    loop {
        let unseen = writes.iter().filter(|write| arrivals.get(&write.name, write.rv).is_none()).count();
        if unseen == 0 || Instant::now() >= deadline {
            return unseen;
        }
        tokio::time::sleep(DRAIN_POLL_INTERVAL).await;
    }
}

/// The figures of one topology.
struct Figures {
    answered: usize,
    errors: u64,
    unseen: usize,
    writes_per_second: Option<f64>,
    behind_max: Duration,
    lag_us: Histogram<u64>,
    write_latency_us: Histogram<u64>,
    watch_restarts: u32,
    dropped: u64,
}

impl Figures {
    fn compute(load: Load, arrivals: &Arrivals, unseen: usize) -> anyhow::Result<Figures> {
        let mut lag_us = latency_histogram();
        for write in &load.writes {
            if let Some(arrived) = arrivals.get(&write.name, write.rv) {
                record(&mut lag_us, arrived.saturating_duration_since(write.sent));
            }
        }
        let seconds = load.elapsed.as_secs_f64();
        Ok(Figures {
            answered: load.writes.len(),
            errors: load.errors,
            unseen,
            writes_per_second: (seconds > 0.0).then(|| load.writes.len() as f64 / seconds),
            behind_max: load.behind_max,
            lag_us,
            write_latency_us: load.write_latency_us,
            watch_restarts: *arrivals.restarts.lock().unwrap_or_else(|e| e.into_inner()),
            dropped: *arrivals.dropped.lock().unwrap_or_else(|e| e.into_inner()),
        })
    }

    fn p99_ms(&self) -> Option<f64> {
        (!self.lag_us.is_empty()).then(|| ms(&self.lag_us, 0.99))
    }

    fn print(&self, label: &str) {
        println!();
        println!("{label}");
        println!(
            "  writes: {} answered, {} failed, {} never seen on the watch; watch restarts {}, arrivals dropped {}",
            self.answered, self.errors, self.unseen, self.watch_restarts, self.dropped
        );
        match self.writes_per_second {
            Some(rate) => println!(
                "  achieved: {rate:.1} writes/s (answered / (last answer − start)); latest send {:.1} ms behind schedule",
                self.behind_max.as_secs_f64() * 1000.0
            ),
            None => println!("  achieved: n/a"),
        }
        for (what, histogram) in
            [("lag (write sent → watch event)", &self.lag_us), ("write latency", &self.write_latency_us)]
        {
            if histogram.is_empty() {
                println!("  {what}: n/a");
                continue;
            }
            println!(
                "  {what} ms: p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}",
                ms(histogram, 0.50),
                ms(histogram, 0.90),
                ms(histogram, 0.99),
                histogram.max() as f64 / 1000.0
            );
        }
    }
}

fn print_summary(plan: &Plan, results: &[(Topology, Figures)]) {
    println!();
    println!("summary");
    println!("{:<40} {:>10} {:>8}  result", "figure", "value", "goal");
    let line = |label: String, value: Option<f64>, goal: String, met: bool| {
        let (value, result) = match value {
            Some(value) => (format!("{value:.2}"), if met { "met" } else { "MISSED" }),
            None => ("n/a".to_string(), "MISSED"),
        };
        println!("{label:<40} {value:>10} {goal:>8}  {result}");
    };
    for (topology, figures) in results {
        let p99 = figures.p99_ms();
        let goal = topology.goal_p99_ms;
        line(format!("{} p99 ms", short(topology)), p99, format!("< {goal:.0}"), p99.is_some_and(|v| v < goal));
        let rate = figures.writes_per_second;
        let wanted = plan.rate as f64;
        // 2% slack: the first and last writes of an open loop are not a full second apart.
        let rate_met = rate.is_some_and(|v| v >= wanted * 0.98);
        line(format!("{} writes/s", short(topology)), rate, format!("≥ {wanted:.0}"), rate_met);
        let unseen = figures.unseen as f64 + figures.errors as f64;
        line(format!("{} failed or unseen writes", short(topology)), Some(unseen), "= 0".into(), unseen == 0.0);
    }
}

fn short(topology: &Topology) -> &'static str {
    if topology.watched == PARENT {
        "two levels"
    } else {
        "one cache"
    }
}

fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_US_MAX, 3).expect("histogram bounds are valid")
}

fn record(histogram: &mut Histogram<u64>, latency: Duration) {
    let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
    histogram.saturating_record(micros.clamp(1, LATENCY_US_MAX));
}

fn ms(histogram: &Histogram<u64>, quantile: f64) -> f64 {
    histogram.value_at_quantile(quantile) as f64 / 1000.0
}

/// The first few failures, printed as they happen.
#[derive(Default)]
struct ErrorSamples {
    printed: Mutex<usize>,
}

impl ErrorSamples {
    fn note(&self, message: impl FnOnce() -> String) {
        let mut printed = self.printed.lock().unwrap_or_else(|e| e.into_inner());
        if *printed < ERROR_SAMPLES_MAX {
            *printed += 1;
            eprintln!("write error: {}", message());
            if *printed == ERROR_SAMPLES_MAX {
                eprintln!("further write errors are only counted");
            }
        }
    }
}

/// Keeps error bodies short enough to read.
fn clip(text: &str) -> String {
    const CLIP_CHARS: usize = 300;
    match text.char_indices().nth(CLIP_CHARS) {
        Some((index, _)) => format!("{}…", &text[..index]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::cache::{Replica, ReplicaKey};

    fn plan(rate: u64, objects: u64) -> Plan {
        Plan {
            rate,
            writes: rate * 2,
            connections: 4,
            objects,
            drain: Duration::from_secs(1),
            resync_interval_seconds: 30,
        }
    }

    #[test]
    fn writes_are_spread_evenly_over_time_and_objects() {
        let plan = plan(1_000, 3);
        assert_eq!(plan.due(0), Duration::ZERO);
        assert_eq!(plan.due(500), Duration::from_millis(500));
        assert_eq!(plan.due(2_000), Duration::from_secs(2));
        let objects: Vec<String> = (0..4).map(|i| plan.object(i)).collect();
        assert_eq!(objects, ["bench-0", "bench-1", "bench-2", "bench-0"]);
    }

    fn event(kind: watch_event::Kind, origin: &str, name: &str, source_rv: u64) -> WatchEvent {
        let key = ReplicaKey {
            origin: origin.into(),
            cluster: ROOT_CLUSTER.into(),
            group: RBAC.into(),
            resource: CLUSTER_ROLES.into(),
            namespace: String::new(),
            name: name.into(),
        };
        let replica = Replica { key: Some(key), source_rv, ..Replica::default() };
        WatchEvent { kind: kind as i32, rv: 1, replica: Some(replica) }
    }

    #[test]
    fn arrivals_keep_the_first_sighting_of_benchmark_objects_only() {
        let arrivals = Arrivals::default();
        let first = Instant::now();
        let later = first + Duration::from_millis(3);
        arrivals.note(&event(watch_event::Kind::Modified, "root", "bench-1", 7), first);
        arrivals.note(&event(watch_event::Kind::Modified, "root", "bench-1", 7), later);
        arrivals.note(&event(watch_event::Kind::Modified, "shard-9", "bench-2", 8), later);
        arrivals.note(&event(watch_event::Kind::Modified, "root", "admin", 9), later);
        arrivals.note(&event(watch_event::Kind::Bookmark, "root", "bench-3", 10), later);
        assert_eq!(arrivals.get("bench-1", 7), Some(first));
        assert_eq!(arrivals.get("bench-1", 8), None);
        for (name, rv) in [("bench-2", 8), ("admin", 9), ("bench-3", 10)] {
            assert_eq!(arrivals.get(name, rv), None, "{name}");
        }
    }

    #[test]
    fn lag_runs_from_send_to_arrival() {
        let arrivals = Arrivals::default();
        let sent = Instant::now();
        arrivals.note(&event(watch_event::Kind::Modified, "root", "bench-0", 5), sent + Duration::from_millis(12));
        let load = Load {
            writes: vec![Write { name: "bench-0".into(), sent, rv: 5 }, Write { name: "bench-1".into(), sent, rv: 6 }],
            errors: 0,
            write_latency_us: latency_histogram(),
            elapsed: Duration::from_secs(1),
            behind_max: Duration::ZERO,
        };
        let figures = Figures::compute(load, &arrivals, 1).unwrap();
        assert_eq!(figures.lag_us.len(), 1);
        assert!((ms(&figures.lag_us, 0.5) - 12.0).abs() < 0.1, "{}", ms(&figures.lag_us, 0.5));
        assert_eq!(figures.writes_per_second, Some(2.0));
    }
}
