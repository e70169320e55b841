//! `bench-workspaces`: how fast an installation schedules workspaces, and what they cost.
//!
//! It starts an installation (root plus `--shards - 1` shards sharing one CA), creates
//! `--parents` parent workspaces `bench-<i>` in root and waits until they are Ready.
//! Then `--clients` concurrent clients create `--workspaces` children `w-<n>`
//! round-robin over the parents, each POST going to the shard that hosts its parent.
//! One watch per parent records the instant each child first reports
//! `status.phase: Ready`, so create→Ready runs from the client's POST to the moment a
//! watcher could see the child Ready, without polling delays.
//!
//! Afterwards it prints the rate, the latency distribution, where the children landed,
//! what they cost in shard RSS, and how long deleting the whole tree takes (until every
//! shard hosts no logical cluster but `root`), each against its goal:
//! ≥ 1,000 workspaces/s, p99 < 100 ms, ≤ 10 KiB per empty workspace, delete < 10 s.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ::tests::installation::{self, Installation, InstallationOptions, ROOT_CLUSTER};
use ::tests::{ShardProcess, TlsConnection, TlsHttp};
use anyhow::Context;
use bytes::Bytes;
use clap::Parser;
use hdrhistogram::Histogram;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

/// The goals this benchmark reports against.
const GOAL_WORKSPACES_PER_SECOND: f64 = 1_000.0;
const GOAL_P99_MS: f64 = 100.0;
const GOAL_KIB_PER_WORKSPACE: f64 = 10.0;
const GOAL_DELETE_SECONDS: f64 = 10.0;

/// How many failures are printed in full; the rest are only counted, so a broken
/// server cannot flood the terminal.
const ERROR_SAMPLES_MAX: usize = 5;

/// The largest latency the histograms hold; slower operations are recorded as this.
const LATENCY_US_MAX: u64 = 600_000_000;

/// How long a client waits before reconnecting after a connection failed, so a dead
/// shard is not hammered with handshakes.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(100);

/// How long each parent workspace may take to become Ready.
const PARENT_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a watch may take to list and open its stream before the load starts.
const WATCH_ESTABLISH_TIMEOUT: Duration = Duration::from_secs(30);

/// A watch that delivers nothing for this long is reopened. The shard sends a bookmark
/// every 10 s to watches that allow them, so silence this long means a stuck stream.
const WATCH_IDLE_MAX: Duration = Duration::from_secs(30);

/// The longest watch line accepted; a longer one is a broken stream, and is reopened.
const WATCH_LINE_BYTES_MAX: usize = 4 * 1024 * 1024;

/// How often one watch may be reopened or relisted before it gives up (a run normally
/// needs none: the shard keeps watches open for 30 minutes).
const WATCH_RESTARTS_MAX: u32 = 20;

/// How often the main task checks whether every child is Ready. The instants come
/// from the watches, so this only bounds how soon the run moves on.
const READY_POLL_INTERVAL: Duration = Duration::from_millis(20);

/// How often the shards' logical-cluster lists are checked while the tree is deleted.
const DELETE_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Children are named `w-<n>`, so that a watch event maps to its POST by index.
const CHILD_PREFIX: &str = "w-";

/// Command-line flags; every one is bounded so a typo cannot start a day-long run or
/// thousands of connections.
#[derive(Parser, Debug)]
#[command(name = "bench-workspaces", about = "Workspace scheduling rate, latency, memory and deletion time")]
struct Args {
    /// Shards in the installation, root included.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=16))]
    shards: u64,
    /// Child workspaces to create.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    workspaces: u64,
    /// Concurrent clients, each with one connection per shard that hosts a parent.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=1024))]
    clients: u64,
    /// Parent workspaces in root that the children are spread over.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u64).range(1..=1000))]
    parents: u64,
    /// Seconds the shards are left idle before each RSS reading. Right after the burst
    /// RSS still holds transient memory (request buffers the allocator has not returned
    /// yet); 20 s lets it settle, so the figure is what idle empty workspaces cost.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(0..=120))]
    settle_seconds: u64,
    /// Seconds the children may take, after the last POST, to become Ready.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=3600))]
    ready_timeout_seconds: u64,
    /// Seconds the deletion of the tree may take before the run gives up on it.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=3600))]
    delete_timeout_seconds: u64,
    /// Passed to every shard as `--workspace-name-seed`, for a reproducible placement.
    #[arg(long)]
    workspace_name_seed: Option<u64>,
}

/// The shape of one run.
#[derive(Clone, Copy, Debug)]
struct Plan {
    shards: usize,
    workspaces: usize,
    clients: usize,
    parents: usize,
    settle: Duration,
    ready_timeout: Duration,
    delete_timeout: Duration,
    workspace_name_seed: Option<u64>,
}

impl Plan {
    fn from_args(args: &Args) -> anyhow::Result<Plan> {
        let size = |value: u64, flag: &str| usize::try_from(value).with_context(|| format!("convert {flag}"));
        Ok(Plan {
            shards: size(args.shards, "--shards")?,
            workspaces: size(args.workspaces, "--workspaces")?,
            clients: size(args.clients, "--clients")?,
            parents: size(args.parents, "--parents")?,
            settle: Duration::from_secs(args.settle_seconds),
            ready_timeout: Duration::from_secs(args.ready_timeout_seconds),
            delete_timeout: Duration::from_secs(args.delete_timeout_seconds),
            workspace_name_seed: args.workspace_name_seed,
        })
    }
}

/// A parent workspace in root and where its logical cluster lives.
#[derive(Clone, Debug)]
struct Parent {
    /// `bench-<i>`.
    name: String,
    /// `root:bench-<i>`.
    path: String,
    /// Index of the hosting shard in [`Installation::all`].
    shard: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let plan = Plan::from_args(&args)?;
    let runtime = ::tests::load_generator_runtime()?;
    // Dropping `run` on Ctrl-C drops the installation, which kills the shards.
    runtime.block_on(async {
        tokio::select! {
            result = run(plan) => result,
            _ = tokio::signal::ctrl_c() => anyhow::bail!("interrupted; stopped what this run started"),
        }
    })
}

async fn run(plan: Plan) -> anyhow::Result<()> {
    println!(
        "bench-workspaces: {} workspaces over {} shards, {} clients, {} parents",
        plan.workspaces, plan.shards, plan.clients, plan.parents
    );
    let mut installation = start_installation(&plan).await?;
    let figures = measure(&installation, &plan).await;
    if let Err(error) = installation.stop().await {
        eprintln!("warning: {error:#}");
    }
    print_summary(&figures?);
    Ok(())
}

async fn start_installation(plan: &Plan) -> anyhow::Result<Installation> {
    eprintln!("starting {} shards", plan.shards);
    let mut extra_args = Vec::new();
    if let Some(seed) = plan.workspace_name_seed {
        extra_args.extend(["--workspace-name-seed".to_string(), seed.to_string()]);
    }
    let options = InstallationOptions {
        extra_shards: plan.shards.saturating_sub(1),
        extra_args,
        ..InstallationOptions::default()
    };
    let installation = Installation::start_with(options).await.context("start the installation")?;
    for shard in installation.all() {
        eprintln!("  {} at {} (pid {})", shard.name(), shard.base_url(), shard.pid().unwrap_or_default());
    }
    Ok(installation)
}

/// Everything the summary compares with the goals.
struct Figures {
    creation: CreationFigures,
    memory: MemoryFigures,
    delete: Option<Duration>,
}

async fn measure(installation: &Installation, plan: &Plan) -> anyhow::Result<Figures> {
    let parents = create_parents(installation, plan.parents).await?;
    let rss_before = settle_and_read_rss(installation, plan.settle).await?;
    let board = Arc::new(ReadyBoard::new(plan.workspaces));
    let mut watches = start_watches(installation, &parents, &board).await?;
    let load = create_children(installation, &parents, plan).await?;
    let ready_at = wait_children_ready(&board, &load.posts, plan.ready_timeout).await;
    watches.abort_all();
    let creation = CreationFigures::compute(load, &ready_at)?;
    creation.print();
    print_distribution(installation, &parents).await?;
    let rss_after = settle_and_read_rss(installation, plan.settle).await?;
    let memory = MemoryFigures { before_kib: rss_before, after_kib: rss_after, workspaces: creation.created };
    memory.print(installation);
    let delete = delete_tree(installation, &parents, plan.delete_timeout).await?;
    match delete {
        Some(took) => println!("delete: every shard back to only `root` after {:.2} s", took.as_secs_f64()),
        None => println!("delete: not finished within {:?}", plan.delete_timeout),
    }
    Ok(Figures { creation, memory, delete })
}

/// Creates the parents in root, waits until all are Ready and finds their shards.
async fn create_parents(installation: &Installation, count: usize) -> anyhow::Result<Vec<Parent>> {
    eprintln!("creating {count} parent workspaces in root");
    let names: Vec<String> = (0..count).map(|index| format!("bench-{index}")).collect();
    for name in &names {
        installation::create_workspace(&installation.root, ROOT_CLUSTER, name).await?;
    }
    let waits = names
        .iter()
        .map(|name| installation::wait_workspace_ready(&installation.root, ROOT_CLUSTER, name, PARENT_READY_TIMEOUT));
    let ready = futures::future::try_join_all(waits).await?;
    let mut parents = Vec::with_capacity(count);
    for (name, workspace) in names.into_iter().zip(ready) {
        let url = installation::workspace_url(&workspace)
            .with_context(|| format!("Ready workspace {name} has no spec.URL: {workspace}"))?;
        let shard = shard_index(installation, url)?;
        let path = installation::child_path(ROOT_CLUSTER, &name);
        eprintln!("  {path} on {}", shard_name(installation, shard));
        parents.push(Parent { name, path, shard });
    }
    Ok(parents)
}

/// The position in [`Installation::all`] of the shard that `url` points at.
fn shard_index(installation: &Installation, url: &str) -> anyhow::Result<usize> {
    let name = installation.shard_for_url(url)?.name();
    installation.all().position(|shard| shard.name() == name).context("find a shard by its own name")
}

fn shard_name(installation: &Installation, index: usize) -> &str {
    installation.all().nth(index).map_or("?", ShardProcess::name)
}

/// Lets the shards go idle for `settle`, then reads each one's RSS in KiB.
async fn settle_and_read_rss(installation: &Installation, settle: Duration) -> anyhow::Result<Vec<u64>> {
    tokio::time::sleep(settle).await;
    installation.all().map(rss_kib).collect()
}

fn rss_kib(shard: &ShardProcess) -> anyhow::Result<u64> {
    let pid = shard.pid().with_context(|| format!("shard {} is not running", shard.name()))?;
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
    vm_rss_kib(&status).with_context(|| format!("find VmRSS in {path}"))
}

/// `VmRSS:   123456 kB` → 123456.
fn vm_rss_kib(status: &str) -> Option<u64> {
    status.lines().find_map(|line| line.strip_prefix("VmRSS:"))?.split_whitespace().next()?.parse().ok()
}

/// `w-<n>` → n, for names of this run's children only.
fn child_index(name: &str) -> Option<usize> {
    name.strip_prefix(CHILD_PREFIX)?.parse().ok()
}

fn child_name(index: usize) -> String {
    format!("{CHILD_PREFIX}{index}")
}

/// The first instant each child was seen Ready, by child index.
struct ReadyBoard {
    ready_at: Mutex<Vec<Option<Instant>>>,
}

impl ReadyBoard {
    fn new(children: usize) -> ReadyBoard {
        ReadyBoard { ready_at: Mutex::new(vec![None; children]) }
    }

    /// Records `at` unless the child was seen Ready before; names that are not this
    /// run's children are ignored.
    fn mark(&self, name: &str, at: Instant) {
        let Some(index) = child_index(name) else { return };
        let mut ready_at = self.ready_at.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = ready_at.get_mut(index) {
            slot.get_or_insert(at);
        }
    }

    fn snapshot(&self) -> Vec<Option<Instant>> {
        self.ready_at.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How many of `posts` have not been seen Ready yet.
    fn missing(&self, posts: &[Post]) -> usize {
        let ready_at = self.ready_at.lock().unwrap_or_else(|e| e.into_inner());
        posts.iter().filter(|post| ready_at.get(post.index).is_none_or(Option::is_none)).count()
    }
}

/// Opens one watch per parent and waits until each has listed and opened its stream,
/// so that no Ready transition of the load is missed or stamped late.
async fn start_watches(
    installation: &Installation,
    parents: &[Parent],
    board: &Arc<ReadyBoard>,
) -> anyhow::Result<JoinSet<()>> {
    let https: Vec<TlsHttp> = installation.all().map(ShardProcess::http).collect();
    let mut watches = JoinSet::new();
    let mut established = Vec::with_capacity(parents.len());
    for parent in parents {
        let (tx, rx) = oneshot::channel();
        let watch = ParentWatch {
            http: https[parent.shard].clone(),
            path: installation::workspaces_path(&parent.path),
            label: parent.path.clone(),
            board: board.clone(),
            established: Some(tx),
        };
        watches.spawn(watch.run());
        established.push((parent.path.as_str(), rx));
    }
    for (path, rx) in established {
        tokio::time::timeout(WATCH_ESTABLISH_TIMEOUT, rx)
            .await
            .with_context(|| format!("open the watch on {path} within {WATCH_ESTABLISH_TIMEOUT:?}"))?
            .with_context(|| format!("the watch on {path} gave up before it was open"))?;
    }
    eprintln!("{} watches open", parents.len());
    Ok(watches)
}

/// Where a parent's watch is: about to list, or streaming from a resourceVersion.
#[derive(Clone, Debug)]
enum WatchState {
    /// List the workspaces (stamping those already Ready now) and watch from the list's RV.
    Relist,
    /// Stream events after `rv`.
    Stream { rv: String },
}

/// What one watch line means for the stream.
enum Seen {
    /// An event or bookmark, with the resourceVersion to resume after (if it had one).
    Progress(Option<String>),
    /// 410 Gone: the RV left the shard's window; relist.
    Gone,
}

/// The watch on one parent's workspaces, feeding the [`ReadyBoard`].
struct ParentWatch {
    http: TlsHttp,
    path: String,
    label: String,
    board: Arc<ReadyBoard>,
    /// Fired once the first stream is open.
    established: Option<oneshot::Sender<()>>,
}

impl ParentWatch {
    /// Runs until aborted, or until it failed [`WATCH_RESTARTS_MAX`] times.
    async fn run(mut self) {
        let mut state = WatchState::Relist;
        let mut restarts = 0u32;
        loop {
            let outcome = match state.clone() {
                WatchState::Relist => self.relist().await,
                WatchState::Stream { rv } => self.stream(rv).await,
            };
            // Any transition back here is unexpected within one run, successful or not.
            restarts += u32::from(matches!(state, WatchState::Stream { .. }) || outcome.is_err());
            match outcome {
                Ok(next) => state = next,
                Err(error) => {
                    eprintln!("watch {}: {error:#}", self.label);
                    tokio::time::sleep(RECONNECT_BACKOFF).await;
                }
            }
            if restarts > WATCH_RESTARTS_MAX {
                eprintln!("watch {}: giving up after {WATCH_RESTARTS_MAX} restarts", self.label);
                return;
            }
        }
    }

    async fn relist(&mut self) -> anyhow::Result<WatchState> {
        let response = self.http.get(&self.path).await?;
        anyhow::ensure!(response.status == StatusCode::OK, "list: HTTP {}: {}", response.status, response.text());
        let list = response.json()?;
        let now = Instant::now();
        for item in list.get("items").and_then(Value::as_array).into_iter().flatten() {
            self.note(item, now);
        }
        let rv = list.pointer("/metadata/resourceVersion").and_then(Value::as_str).context("list without an RV")?;
        Ok(WatchState::Stream { rv: rv.to_string() })
    }

    async fn stream(&mut self, mut rv: String) -> anyhow::Result<WatchState> {
        let path = format!("{}?watch=true&allowWatchBookmarks=true&resourceVersion={rv}", self.path);
        let response = self.http.send_streaming(Method::GET, &path, &[], Bytes::new()).await?;
        anyhow::ensure!(response.status() == StatusCode::OK, "watch: HTTP {}", response.status());
        if let Some(established) = self.established.take() {
            // The receiver is gone only if the run already failed.
            let _ = established.send(());
        }
        let mut body = response.into_body();
        let mut lines = LineBuffer::new(WATCH_LINE_BYTES_MAX);
        loop {
            let frame = match tokio::time::timeout(WATCH_IDLE_MAX, body.frame()).await {
                Err(_) => anyhow::bail!("nothing for {WATCH_IDLE_MAX:?}, not even a bookmark"),
                Ok(None) => return Ok(WatchState::Stream { rv }),
                Ok(Some(frame)) => frame.context("read the watch stream")?,
            };
            let arrived = Instant::now();
            let Ok(data) = frame.into_data() else { continue };
            for line in lines.push(&data)? {
                match self.on_line(&line, arrived)? {
                    Seen::Progress(Some(next)) => rv = next,
                    Seen::Progress(None) => {}
                    Seen::Gone => return Ok(WatchState::Relist),
                }
            }
        }
    }

    fn on_line(&self, line: &[u8], arrived: Instant) -> anyhow::Result<Seen> {
        let event: Value = serde_json::from_slice(line)
            .with_context(|| format!("parse watch line {}", clip(&String::from_utf8_lossy(line))))?;
        let object = event.get("object").unwrap_or(&Value::Null);
        let rv = object.pointer("/metadata/resourceVersion").and_then(Value::as_str).map(str::to_string);
        match event.get("type").and_then(Value::as_str) {
            Some("ADDED" | "MODIFIED") => {
                self.note(object, arrived);
                Ok(Seen::Progress(rv))
            }
            Some("DELETED" | "BOOKMARK") => Ok(Seen::Progress(rv)),
            Some("ERROR") if object.get("code").and_then(Value::as_u64) == Some(410) => Ok(Seen::Gone),
            _ => anyhow::bail!("unexpected watch event {}", clip(&event.to_string())),
        }
    }

    fn note(&self, workspace: &Value, at: Instant) {
        if installation::phase(workspace) == Some("Ready") {
            if let Some(name) = workspace.pointer("/metadata/name").and_then(Value::as_str) {
                self.board.mark(name, at);
            }
        }
    }
}

/// Splits a byte stream into newline-terminated lines, holding at most `bytes_max`
/// bytes of an unfinished line.
struct LineBuffer {
    pending: Vec<u8>,
    bytes_max: usize,
}

impl LineBuffer {
    fn new(bytes_max: usize) -> LineBuffer {
        LineBuffer { pending: Vec::new(), bytes_max }
    }

    /// Appends `data` and returns the lines it completed, without their newlines;
    /// blank lines are skipped.
    fn push(&mut self, data: &[u8]) -> anyhow::Result<Vec<Vec<u8>>> {
        self.pending.extend_from_slice(data);
        let mut lines = Vec::new();
        while let Some(end) = self.pending.iter().position(|&byte| byte == b'\n') {
            let mut line: Vec<u8> = self.pending.drain(..=end).collect();
            line.pop();
            if line.iter().any(|byte| !byte.is_ascii_whitespace()) {
                lines.push(line);
            }
        }
        anyhow::ensure!(self.pending.len() <= self.bytes_max, "a watch line exceeds {} bytes", self.bytes_max);
        Ok(lines)
    }
}

/// One accepted create: which child, and when its POST started.
#[derive(Clone, Copy, Debug)]
struct Post {
    index: usize,
    started: Instant,
}

/// What one client (or all of them, merged) did.
struct Load {
    posts: Vec<Post>,
    errors: u64,
    post_latency_us: Histogram<u64>,
}

impl Load {
    fn new() -> Load {
        Load { posts: Vec::new(), errors: 0, post_latency_us: latency_histogram() }
    }

    fn merge(&mut self, other: Load) -> anyhow::Result<()> {
        self.posts.extend(other.posts);
        self.errors += other.errors;
        self.post_latency_us.add(other.post_latency_us).context("merge latency histograms")
    }
}

fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_US_MAX, 3).expect("histogram bounds are valid")
}

fn record(histogram: &mut Histogram<u64>, latency: Duration) {
    let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
    histogram.saturating_record(micros.clamp(1, LATENCY_US_MAX));
}

/// Runs the clients until every child index was tried once; each index is either
/// posted successfully or counted as an error, never retried.
async fn create_children(installation: &Installation, parents: &[Parent], plan: &Plan) -> anyhow::Result<Load> {
    let https: Arc<[TlsHttp]> = installation.all().map(ShardProcess::http).collect();
    let parents: Arc<[Parent]> = parents.into();
    let hosting: BTreeSet<usize> = parents.iter().map(|parent| parent.shard).collect();
    let next = Arc::new(AtomicUsize::new(0));
    let samples = ErrorSamples::new("create");
    // Connect before the clock starts: the benchmark measures scheduling, not handshakes.
    let mut clients = Vec::with_capacity(plan.clients);
    for _ in 0..plan.clients {
        let mut connections: Vec<Option<TlsConnection>> = (0..https.len()).map(|_| None).collect();
        for &shard in &hosting {
            connections[shard] = Some(https[shard].connect().await.context("open a client connection")?);
        }
        clients.push(ChildCreator {
            https: https.clone(),
            connections,
            parents: parents.clone(),
            next: next.clone(),
            total: plan.workspaces,
            samples: samples.clone(),
        });
    }
    eprintln!("{} clients connected; creating {} workspaces", plan.clients, plan.workspaces);
    let started = Instant::now();
    let mut running = JoinSet::new();
    for client in clients {
        running.spawn(client.run());
    }
    let mut load = Load::new();
    while let Some(done) = running.join_next().await {
        load.merge(done.context("join a client")?)?;
    }
    eprintln!("all POSTs answered after {:.2} s", started.elapsed().as_secs_f64());
    Ok(load)
}

/// One load client: takes the next child index, POSTs it to its parent's shard on this
/// client's connection to that shard, and records when the POST started.
struct ChildCreator {
    https: Arc<[TlsHttp]>,
    connections: Vec<Option<TlsConnection>>,
    parents: Arc<[Parent]>,
    next: Arc<AtomicUsize>,
    total: usize,
    samples: Arc<ErrorSamples>,
}

impl ChildCreator {
    async fn run(mut self) -> Load {
        let mut load = Load::new();
        loop {
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            if index >= self.total {
                return load;
            }
            self.create(index, &mut load).await;
        }
    }

    async fn create(&mut self, index: usize, load: &mut Load) {
        let parents = self.parents.clone();
        let parent = &parents[index % parents.len()];
        let name = child_name(index);
        let body = serde_json::to_vec(&installation::workspace_body(&name)).expect("a JSON value serializes");
        let path = installation::workspaces_path(&parent.path);
        let connection = match self.connection(parent.shard).await {
            Ok(connection) => connection,
            Err(error) => {
                load.errors += 1;
                self.samples.note(|| format!("{name}: {error:#}"));
                tokio::time::sleep(RECONNECT_BACKOFF).await;
                return;
            }
        };
        let headers = [("content-type", "application/json")];
        let started = Instant::now();
        match connection.send(Method::POST, &path, &headers, body).await {
            Ok(response) if response.status == StatusCode::CREATED => {
                record(&mut load.post_latency_us, started.elapsed());
                load.posts.push(Post { index, started });
            }
            Ok(response) => {
                load.errors += 1;
                self.samples
                    .note(|| format!("POST {path} {name}: HTTP {}: {}", response.status, clip(&response.text())));
            }
            Err(error) => {
                load.errors += 1;
                self.samples.note(|| format!("POST {path} {name}: {error:#}"));
                // The connection state is unknown after a failed exchange.
                self.connections[parent.shard] = None;
            }
        }
    }

    async fn connection(&mut self, shard: usize) -> anyhow::Result<&mut TlsConnection> {
        match &mut self.connections[shard] {
            Some(connection) => Ok(connection),
            slot @ None => Ok(slot.insert(self.https[shard].connect().await?)),
        }
    }
}

/// Waits (at most `timeout`) until every accepted child was seen Ready, and returns the
/// Ready instants by child index; on timeout says how many are missing.
async fn wait_children_ready(board: &ReadyBoard, posts: &[Post], timeout: Duration) -> Vec<Option<Instant>> {
    let deadline = Instant::now() + timeout;
    loop {
        let missing = board.missing(posts);
        if missing == 0 {
            break;
        }
        if Instant::now() >= deadline {
            let snapshot = board.snapshot();
            let examples: Vec<String> = posts
                .iter()
                .filter(|post| snapshot.get(post.index).is_none_or(Option::is_none))
                .take(ERROR_SAMPLES_MAX)
                .map(|post| child_name(post.index))
                .collect();
            eprintln!(
                "{missing} created workspaces not Ready within {timeout:?} after the last POST, e.g. {examples:?}"
            );
            break;
        }
        tokio::time::sleep(READY_POLL_INTERVAL).await;
    }
    board.snapshot()
}

/// Rate and latency of the creation phase.
struct CreationFigures {
    created: usize,
    errors: u64,
    ready: usize,
    /// Ready children / (last Ready − first POST); `None` if none became Ready.
    workspaces_per_second: Option<f64>,
    create_to_ready_us: Histogram<u64>,
    post_latency_us: Histogram<u64>,
}

impl CreationFigures {
    fn compute(load: Load, ready_at: &[Option<Instant>]) -> anyhow::Result<CreationFigures> {
        let mut create_to_ready_us = latency_histogram();
        let first_post = load.posts.iter().map(|post| post.started).min();
        let mut last_ready: Option<Instant> = None;
        for post in &load.posts {
            let Some(ready) = ready_at.get(post.index).copied().flatten() else { continue };
            record(&mut create_to_ready_us, ready.saturating_duration_since(post.started));
            last_ready = last_ready.max(Some(ready));
        }
        let ready = usize::try_from(create_to_ready_us.len()).context("count Ready children")?;
        let workspaces_per_second = match (first_post, last_ready) {
            (Some(first), Some(last)) if last > first => Some(ready as f64 / (last - first).as_secs_f64()),
            _ => None,
        };
        Ok(CreationFigures {
            created: load.posts.len(),
            errors: load.errors,
            ready,
            workspaces_per_second,
            create_to_ready_us,
            post_latency_us: load.post_latency_us,
        })
    }

    fn p99_ms(&self) -> Option<f64> {
        (self.ready > 0).then(|| ms(&self.create_to_ready_us, 0.99))
    }

    fn print(&self) {
        println!();
        println!("created: {} accepted, {} failed, {} seen Ready", self.created, self.errors, self.ready);
        match self.workspaces_per_second {
            Some(rate) => println!("rate: {rate:.1} workspaces/s (Ready workspaces / (last Ready − first POST))"),
            None => println!("rate: n/a (no workspace became Ready)"),
        }
        for (label, histogram) in [("create→Ready", &self.create_to_ready_us), ("POST", &self.post_latency_us)] {
            if histogram.is_empty() {
                println!("{label:<13} latency: n/a");
                continue;
            }
            println!(
                "{label:<13} latency ms: p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}",
                ms(histogram, 0.50),
                ms(histogram, 0.90),
                ms(histogram, 0.99),
                histogram.max() as f64 / 1000.0
            );
        }
    }
}

fn ms(histogram: &Histogram<u64>, quantile: f64) -> f64 {
    histogram.value_at_quantile(quantile) as f64 / 1000.0
}

/// Prints how many children each shard got (from `spec.URL`) and how many logical
/// clusters each shard hosts.
async fn print_distribution(installation: &Installation, parents: &[Parent]) -> anyhow::Result<()> {
    let shards: Vec<&ShardProcess> = installation.all().collect();
    let mut children: BTreeMap<String, usize> = BTreeMap::new();
    let mut not_ready = 0usize;
    for parent in parents {
        let shard = shards[parent.shard];
        let path = installation::workspaces_path(&parent.path);
        let response = shard.http().get(&path).await.with_context(|| format!("list {path}"))?;
        anyhow::ensure!(
            response.status == StatusCode::OK,
            "list {path}: HTTP {}: {}",
            response.status,
            response.text()
        );
        let list = response.json()?;
        for item in list.get("items").and_then(Value::as_array).into_iter().flatten() {
            not_ready += usize::from(installation::phase(item) != Some("Ready"));
            let target = match installation::workspace_url(item) {
                Some(url) => {
                    installation.shard_for_url(url).map_or_else(|_| format!("unknown ({url})"), |s| s.name().into())
                }
                None => "unscheduled".to_string(),
            };
            *children.entry(target).or_default() += 1;
        }
    }
    let total: usize = children.values().sum();
    println!();
    println!("placement of {total} child workspaces ({not_ready} not Ready):");
    for (target, count) in &children {
        println!("  {target:<12} {count:>8}  {:>5.1}%", 100.0 * *count as f64 / total.max(1) as f64);
    }
    println!("logical clusters hosted:");
    for shard in &shards {
        let hosted = installation::logical_clusters(shard).await?;
        println!("  {:<12} {:>8}", shard.name(), hosted.len());
    }
    Ok(())
}

/// Shard RSS before and after the load.
struct MemoryFigures {
    before_kib: Vec<u64>,
    after_kib: Vec<u64>,
    workspaces: usize,
}

impl MemoryFigures {
    /// (Σ after − Σ before) / workspaces; `None` without workspaces.
    fn kib_per_workspace(&self) -> Option<f64> {
        let before: u64 = self.before_kib.iter().sum();
        let after: u64 = self.after_kib.iter().sum();
        (self.workspaces > 0).then(|| (after as f64 - before as f64) / self.workspaces as f64)
    }

    fn print(&self, installation: &Installation) {
        println!();
        println!("{:<12} {:>12} {:>12} {:>12}", "shard RSS", "before KiB", "after KiB", "delta KiB");
        let rows = installation.all().zip(self.before_kib.iter().zip(&self.after_kib));
        for (shard, (before, after)) in rows {
            println!("{:<12} {before:>12} {after:>12} {:>12}", shard.name(), *after as i64 - *before as i64);
        }
        match self.kib_per_workspace() {
            Some(kib) => println!("memory: {kib:.2} KiB per empty workspace (Σ delta / {})", self.workspaces),
            None => println!("memory: n/a (no workspace created)"),
        }
    }
}

/// Deletes the parents in root and waits until every shard hosts no logical cluster
/// but `root`; `None` if that did not happen within `timeout`.
async fn delete_tree(
    installation: &Installation,
    parents: &[Parent],
    timeout: Duration,
) -> anyhow::Result<Option<Duration>> {
    eprintln!("deleting the {} parents", parents.len());
    let started = Instant::now();
    let deletes =
        parents.iter().map(|parent| installation::delete_workspace(&installation.root, ROOT_CLUSTER, &parent.name));
    futures::future::try_join_all(deletes).await?;
    let deadline = started + timeout;
    loop {
        if only_root_left(installation).await? {
            return Ok(Some(started.elapsed()));
        }
        if Instant::now() >= deadline {
            for shard in installation.all() {
                let left = installation::logical_clusters(shard).await?;
                let examples: Vec<&String> = left.iter().take(ERROR_SAMPLES_MAX).collect();
                eprintln!("  {} still hosts {} logical clusters, e.g. {examples:?}", shard.name(), left.len());
            }
            return Ok(None);
        }
        tokio::time::sleep(DELETE_POLL_INTERVAL).await;
    }
}

/// Whether every shard's LogicalCluster list holds nothing but `root`. Asks for two
/// items only, so that polling a shard with thousands of clusters stays cheap and does
/// not slow down the deletion it measures.
async fn only_root_left(installation: &Installation) -> anyhow::Result<bool> {
    let path = "/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters?limit=2";
    for shard in installation.all() {
        let response = shard.http().get(path).await.with_context(|| format!("list {path} on {}", shard.name()))?;
        anyhow::ensure!(
            response.status == StatusCode::OK,
            "list {path} on {}: HTTP {}: {}",
            shard.name(),
            response.status,
            response.text()
        );
        let list = response.json()?;
        let more = list.pointer("/metadata/continue").and_then(Value::as_str).is_some_and(|token| !token.is_empty());
        let names = installation::cluster_names(&list)?;
        if more || names.iter().any(|name| name != ROOT_CLUSTER) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One summary line: a figure against its goal.
struct GoalLine {
    label: &'static str,
    figure: Option<f64>,
    goal: &'static str,
    met: fn(f64) -> bool,
}

fn print_summary(figures: &Figures) {
    let errors = figures.creation.errors as f64;
    let lines = [
        GoalLine {
            label: "workspaces/s",
            figure: figures.creation.workspaces_per_second,
            goal: "≥ 1000",
            met: |v| v >= GOAL_WORKSPACES_PER_SECOND,
        },
        GoalLine {
            label: "create→Ready p99 ms",
            figure: figures.creation.p99_ms(),
            goal: "< 100",
            met: |v| v < GOAL_P99_MS,
        },
        GoalLine {
            label: "KiB per empty workspace",
            figure: figures.memory.kib_per_workspace(),
            goal: "≤ 10",
            met: |v| v <= GOAL_KIB_PER_WORKSPACE,
        },
        GoalLine {
            label: "delete whole tree s",
            figure: figures.delete.map(|took| took.as_secs_f64()),
            goal: "< 10",
            met: |v| v < GOAL_DELETE_SECONDS,
        },
        GoalLine { label: "failed creates", figure: Some(errors), goal: "= 0", met: |v| v == 0.0 },
    ];
    println!();
    println!("summary");
    println!("{:<24} {:>10} {:>8}  result", "figure", "value", "goal");
    for line in lines {
        let (value, result) = match line.figure {
            Some(value) => (format!("{value:.2}"), if (line.met)(value) { "met" } else { "MISSED" }),
            None => ("n/a".to_string(), "MISSED"),
        };
        println!("{:<24} {value:>10} {:>8}  {result}", line.label, line.goal);
    }
}

/// The first few failures, printed as they happen.
struct ErrorSamples {
    what: &'static str,
    printed: Mutex<usize>,
}

impl ErrorSamples {
    fn new(what: &'static str) -> Arc<ErrorSamples> {
        Arc::new(ErrorSamples { what, printed: Mutex::new(0) })
    }

    fn note(&self, message: impl FnOnce() -> String) {
        let mut printed = self.printed.lock().unwrap_or_else(|e| e.into_inner());
        if *printed < ERROR_SAMPLES_MAX {
            *printed += 1;
            eprintln!("{} error: {}", self.what, message());
            if *printed == ERROR_SAMPLES_MAX {
                eprintln!("{}: further errors are only counted", self.what);
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

    #[test]
    fn line_buffer_splits_across_chunks() {
        let mut buffer = LineBuffer::new(16);
        let cases: [(&[u8], &[&[u8]]); 4] = [
            (b"{\"a\":", &[]),
            (b"1}\n{\"b\"", &[b"{\"a\":1}"]),
            (b":2}\n\n  \n", &[b"{\"b\":2}"]),
            (b"x\ny\n", &[b"x", b"y"]),
        ];
        for (chunk, expected) in cases {
            let lines = buffer.push(chunk).unwrap();
            assert_eq!(lines, expected.iter().map(|l| l.to_vec()).collect::<Vec<_>>(), "{chunk:?}");
        }
        assert!(buffer.push(&[b'z'; 17]).is_err(), "an unfinished line over the limit fails");
    }

    #[test]
    fn vm_rss_is_read_in_kib() {
        let cases = [
            ("Name:\tatoll-shard\nVmRSS:\t  123456 kB\nVmSwap:\t0 kB\n", Some(123_456)),
            ("Name:\tx\n", None),
            ("VmRSS:\n", None),
        ];
        for (status, expected) in cases {
            assert_eq!(vm_rss_kib(status), expected, "{status:?}");
        }
    }

    #[test]
    fn child_names_round_trip() {
        assert_eq!(child_index(&child_name(42)), Some(42));
        for name in ["bench-1", "w-", "w-x", "w--1"] {
            assert_eq!(child_index(name), None, "{name}");
        }
    }

    #[test]
    fn ready_board_keeps_the_first_instant() {
        let board = ReadyBoard::new(2);
        let first = Instant::now();
        let later = first + Duration::from_millis(5);
        board.mark("w-1", first);
        board.mark("w-1", later);
        board.mark("w-7", later);
        board.mark("bench-0", later);
        assert_eq!(board.snapshot(), vec![None, Some(first)]);
        let posts = [Post { index: 0, started: first }, Post { index: 1, started: first }];
        assert_eq!(board.missing(&posts), 1);
    }
}
