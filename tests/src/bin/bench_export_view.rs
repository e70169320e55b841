//! `bench-export-view`: what an API provider's controller sees through the APIExport
//! virtual workspace when its export is bound in many workspaces over three shards.
//!
//! It starts root plus two shards and one cache server (the export reaches the other
//! shards through the cache), then, as `system:masters` on each shard directly:
//!
//! 1. creates a provider logical cluster on root with an APIResourceSchema (`widgets`),
//!    an APIExport and its APIExportEndpointSlice, and waits for the export's identity;
//! 2. creates `--workspaces` consumer logical clusters, spread round-robin over the three
//!    shards, each with one APIBinding to the export (by the provider's cluster name),
//!    `--clients` at a time, and waits until every binding is Bound (a wildcard list of
//!    APIBindings per shard, counted);
//! 3. waits until the endpoint slice lists one view URL per shard, and seeds
//!    `--objects-per-workspace` Widgets in every consumer;
//! 4. as the controller: LISTs every Widget through each shard's view
//!    (`…/clusters/*/apis/example.io/v1/widgets`, paged like a reflector), each shard
//!    alone and then all three at once, and WATCHes each view from its list's
//!    resourceVersion;
//! 5. merge-patches `spec.seq` of a pseudo-random Widget at `--rate` writes/s for
//!    `--seconds` (open loop: write `i` is due at `start + i / rate`), shard-direct over
//!    `--connections` workers, and matches every watch event to its write by `spec.seq`.
//!
//! Delivery latency runs from the moment the PATCH is sent to the moment the event is
//! read from the view's watch. It prints setup time, the initial list times, latency
//! p50/p90/p99/max, lost events, the achieved write rate and each shard's CPU per
//! delivered event, against the goal: p99 < 100 ms at 1,000 writes/s. Unless
//! `--skip-baseline`, the same writes then run again with no watch open, and the
//! difference tells what delivering the events cost the shards beyond serving the writes.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ::tests::cache::CacheTopology;
use ::tests::installation::{Installation, InstallationOptions};
use ::tests::tls_http::list_items;
use ::tests::{TlsConnection, TlsHttp};
use anyhow::Context;
use bytes::Bytes;
use clap::Parser;
use hdrhistogram::Histogram;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio::task::JoinSet;

/// The goal: p99 delivery latency at the goal's write rate.
const GOAL_P99_MS: f64 = 100.0;
const GOAL_RATE: u64 = 1_000;

/// The share of the asked rate a run must achieve for its latency to count against the
/// goal: a writer that fell behind measured a lighter load.
const RATE_ACHIEVED_MIN: f64 = 0.95;

/// The shards of the installation, root included: the shape.
const SHARDS: usize = 3;

/// The provider's logical cluster (on root) and the export's names.
const PROVIDER_CLUSTER: &str = "provider";
const EXPORT: &str = "widgets";
const GROUP: &str = "example.io";
const VERSION: &str = "v1";
const RESOURCE: &str = "widgets";
const APIS: &str = "apis/apis.kcp.io/v1alpha1";

/// Consumers are `c-<n>`, Widgets `w-<m>` in namespace `default`.
const CONSUMER_PREFIX: &str = "c-";
const WIDGET_PREFIX: &str = "w-";
const NAMESPACE: &str = "default";

/// The largest latency the histograms hold; slower ones are recorded as this.
const LATENCY_US_MAX: u64 = 600_000_000;

/// The most writes one run may plan: a bound on the memory of the arrival board.
const WRITES_MAX: u64 = 2_000_000;

/// How many failures are printed in full; the rest are only counted.
const ERROR_SAMPLES_MAX: usize = 5;

/// How often one setup request is tried before the run gives up on it. Retries cover
/// the moments a new cluster or binding is not served yet.
const SETUP_ATTEMPTS_MAX: u32 = 50;
const SETUP_RETRY_BACKOFF: Duration = Duration::from_millis(200);

/// How often a writer reconnects after a failed exchange waits.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(100);

/// How often setup conditions (identity, Bound count, endpoints) are polled. Bindings
/// are counted with one wildcard list per shard, so this also bounds the polling load.
const SETUP_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// How long the export's identity and the endpoint slice's URLs may take.
const EXPORT_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Lists through a view may be large and slow under load.
const LIST_TIMEOUT: Duration = Duration::from_secs(120);

/// A watch that delivers nothing for this long is reopened. Shards send a bookmark every
/// 10 s to watches that allow them, so silence this long means a stuck stream.
const WATCH_IDLE_MAX: Duration = Duration::from_secs(30);

/// The longest watch line accepted; a longer one is a broken stream, and is reopened.
const WATCH_LINE_BYTES_MAX: usize = 4 * 1024 * 1024;

/// How often one watch may be reopened or relisted before it gives up.
const WATCH_RESTARTS_MAX: u32 = 20;

/// How often the drain phase checks whether every write was seen.
const DRAIN_POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Command-line flags; each is bounded so a typo cannot start a day-long run.
#[derive(Parser, Debug)]
#[command(
    name = "bench-export-view",
    about = "A provider's list and watch through the APIExport views of three shards"
)]
struct Args {
    /// Consumer workspaces binding the export, spread evenly over the three shards.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(3..=100_000))]
    workspaces: u64,
    /// Widgets seeded in every consumer workspace; the writes spread over all of them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    objects_per_workspace: u64,
    /// Writes per second during the measured phase (open loop).
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..=20_000))]
    rate: u64,
    /// Seconds of writes.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=600))]
    seconds: u64,
    /// Writer workers; each has one connection per shard and one request in flight.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=256))]
    connections: u64,
    /// Concurrent setup clients (cluster, binding and Widget creates).
    #[arg(long, default_value_t = 48, value_parser = clap::value_parser!(u64).range(1..=256))]
    clients: u64,
    /// Items per page of the controller's initial lists (0: one unpaged list). 500 is
    /// client-go's and kube-rs's reflector default.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    page_size: u64,
    /// Seconds to wait, after the last write answered, for the last events.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=300))]
    drain_seconds: u64,
    /// Seconds the setup (clusters, bindings Bound, Widgets) may take before the run gives up.
    #[arg(long, default_value_t = 1_800, value_parser = clap::value_parser!(u64).range(10..=7_200))]
    setup_timeout_seconds: u64,
    /// Where the controller reaches the views: each shard directly (the view's own cost)
    /// or through a front-proxy (`/shards/<name>/…` routed by it). Writes go shard-direct.
    #[arg(long, value_enum, default_value_t = Via::Direct)]
    via: Via,
    /// Skip the second write phase with no watch open, which tells the shards' CPU for
    /// delivering events apart from their CPU for serving the writes.
    #[arg(long)]
    skip_baseline: bool,
    /// Seed of the pseudo-random choice of the Widget each write updates.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Drift-repair period of shards and the cache. Each repair compares everything a
    /// shard replicates with its cache, so the tests' 1 s would measure repair.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    resync_interval_seconds: u64,
}

/// How the controller reaches the views.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Via {
    /// Each shard's view on that shard.
    Direct,
    /// Every view through the front-proxy.
    FrontProxy,
}

/// The shape of one run.
#[derive(Clone, Copy, Debug)]
struct Plan {
    workspaces: usize,
    objects_per_workspace: usize,
    rate: u64,
    writes: u64,
    connections: usize,
    clients: usize,
    page_size: u64,
    drain: Duration,
    setup_timeout: Duration,
    via: Via,
    seed: u64,
    baseline: bool,
}

impl Plan {
    fn from_args(args: &Args) -> anyhow::Result<Plan> {
        let size = |value: u64, flag: &str| usize::try_from(value).with_context(|| format!("convert {flag}"));
        let writes = args.rate * args.seconds;
        anyhow::ensure!(writes <= WRITES_MAX, "--rate × --seconds is {writes}; at most {WRITES_MAX} writes per run");
        Ok(Plan {
            workspaces: size(args.workspaces, "--workspaces")?,
            objects_per_workspace: size(args.objects_per_workspace, "--objects-per-workspace")?,
            rate: args.rate,
            writes,
            connections: size(args.connections, "--connections")?,
            clients: size(args.clients, "--clients")?,
            page_size: args.page_size,
            drain: Duration::from_secs(args.drain_seconds),
            setup_timeout: Duration::from_secs(args.setup_timeout_seconds),
            via: args.via,
            seed: args.seed,
            baseline: !args.skip_baseline,
        })
    }

    /// When write `index` is due, after the start of the load.
    fn due(&self, index: u64) -> Duration {
        Duration::from_secs_f64(index as f64 / self.rate as f64)
    }

    /// The Widget write `index` updates: `(consumer, widget)`.
    fn target(&self, index: u64) -> (usize, usize) {
        let objects = (self.workspaces * self.objects_per_workspace) as u64;
        let object = (splitmix64(self.seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15)) % objects) as usize;
        (object / self.objects_per_workspace, object % self.objects_per_workspace)
    }
}

/// SplitMix64's output function: a cheap, well-spread hash for a reproducible "random"
/// choice without holding a table of choices. Pure.
fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn consumer_name(index: usize) -> String {
    format!("{CONSUMER_PREFIX}{index}")
}

fn widget_name(index: usize) -> String {
    format!("{WIDGET_PREFIX}{index}")
}

/// The shard (index into [`Installation::all`]) hosting consumer `index`.
fn shard_of_consumer(index: usize) -> usize {
    index % SHARDS
}

fn widget_path(consumer: usize, widget: usize) -> String {
    format!(
        "/clusters/{}/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/{RESOURCE}/{}",
        consumer_name(consumer),
        widget_name(widget)
    )
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let plan = Plan::from_args(&args)?;
    let runtime = ::tests::load_generator_runtime()?;
    // Dropping `run` on Ctrl-C drops the installation, which kills every process.
    runtime.block_on(async {
        tokio::select! {
            result = run(plan, args.resync_interval_seconds) => result,
            _ = tokio::signal::ctrl_c() => anyhow::bail!("interrupted; stopped what this run started"),
        }
    })
}

async fn run(plan: Plan, resync_interval_seconds: u64) -> anyhow::Result<()> {
    println!(
        "bench-export-view: {} workspaces over {SHARDS} shards, {} Widget(s) each, {} writes/s for {} s, \
         {} writer connections, views {}",
        plan.workspaces,
        plan.objects_per_workspace,
        plan.rate,
        plan.writes / plan.rate,
        plan.connections,
        match plan.via {
            Via::Direct => "shard-direct",
            Via::FrontProxy => "through the front-proxy",
        }
    );
    let options = InstallationOptions {
        extra_shards: SHARDS - 1,
        front_proxy: plan.via == Via::FrontProxy,
        caches: Some(CacheTopology { resync_interval_seconds, ..CacheTopology::single() }),
        ..InstallationOptions::default()
    };
    eprintln!("starting root + {} shards and a cache server", SHARDS - 1);
    let mut installation = Installation::start_with(options).await.context("start the installation")?;
    let outcome = measure(&installation, &plan).await;
    if let Err(error) = installation.stop().await {
        eprintln!("warning: {error:#}");
    }
    outcome
}

async fn measure(installation: &Installation, plan: &Plan) -> anyhow::Result<()> {
    let https: Vec<TlsHttp> = installation.all().map(|shard| shard.http().with_timeout(LIST_TIMEOUT)).collect();
    let names: Vec<String> = installation.all().map(|shard| shard.name().to_string()).collect();
    let pids: Vec<u32> = installation.all().map(|shard| shard.pid().unwrap_or_default()).collect();
    for (name, shard) in names.iter().zip(installation.all()) {
        eprintln!("  {name} at {} (pid {})", shard.base_url(), shard.pid().unwrap_or_default());
    }
    let views = set_up(&https, &names, plan).await?;
    let controller: Vec<TlsHttp> = match plan.via {
        Via::Direct => https.clone(),
        Via::FrontProxy => vec![installation.proxy().http().with_timeout(LIST_TIMEOUT); SHARDS],
    };
    let view_paths = views_by_shard(&views, &names)?;
    let rvs = initial_lists(&controller, &view_paths, &names, plan).await?;
    let arrivals = Arc::new(Arrivals::new(plan.writes, SHARDS));
    let mut watches = JoinSet::new();
    for shard in 0..SHARDS {
        let watch = ViewWatch {
            http: controller[shard].clone(),
            path: view_paths[shard].clone(),
            shard,
            label: names[shard].clone(),
            arrivals: arrivals.clone(),
            page_size: plan.page_size,
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        watches.spawn(watch.run(rvs[shard].clone(), tx));
        tokio::time::timeout(LIST_TIMEOUT, rx)
            .await
            .with_context(|| format!("open the watch on {}'s view", names[shard]))?
            .with_context(|| format!("the watch on {}'s view gave up before it opened", names[shard]))?;
    }
    eprintln!("watches open; writing {} updates at {} writes/s", plan.writes, plan.rate);

    let mut others: Vec<(String, u32)> = Vec::new();
    if let Some(proxy) = &installation.front_proxy {
        others.push(("front-proxy".into(), proxy.pid().unwrap_or_default()));
    }
    others.extend(installation.caches.iter().map(|cache| (cache.name().to_string(), cache.pid().unwrap_or_default())));
    others.push(("this benchmark (writers, watches)".into(), std::process::id()));
    let meter = CpuMeter::start(&pids, &others);
    let load = write_load(&https, plan).await?;
    let unseen = wait_drained(&arrivals, &load.writes, plan.drain).await;
    let (shard_ticks, other_ticks) = meter.stop();
    watches.abort_all();

    let figures = Figures::compute(&load, &arrivals);
    figures.print(&load, &arrivals, unseen);
    let baseline = match plan.baseline {
        true => Some(write_baseline(&https, &pids, plan).await?),
        false => None,
    };
    let cpu = CpuFigures {
        names,
        ticks: shard_ticks,
        delivered: (0..SHARDS).map(|shard| arrivals.delivered(shard)).collect(),
        served: served_by_shard(&load.writes),
        others: others.into_iter().map(|(name, _)| name).zip(other_ticks).collect(),
        baseline,
        ticks_per_second: ::tests::process::clock_ticks_per_second(),
    };
    cpu.print();
    print_summary(plan, &figures, unseen, load.errors);
    Ok(())
}

/// The same writes with no watch open, for what the shards spend without delivering:
/// each shard's CPU ticks and the writes it served.
async fn write_baseline(https: &[TlsHttp], pids: &[u32], plan: &Plan) -> anyhow::Result<Vec<(u64, u64)>> {
    eprintln!("baseline: the same {} writes with no watch open", plan.writes);
    // Lets the shards notice the closed watches before the meter starts.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let meter = CpuMeter::start(pids, &[]);
    let load = write_load(https, plan).await?;
    tokio::time::sleep(plan.drain.min(Duration::from_secs(1))).await;
    let (ticks, _) = meter.stop();
    Ok(ticks.into_iter().zip(served_by_shard(&load.writes)).collect())
}

/// How many of `writes` each shard served.
fn served_by_shard(writes: &[Write]) -> Vec<u64> {
    let mut served = vec![0u64; SHARDS];
    for write in writes {
        served[shard_of_consumer(write.consumer)] += 1;
    }
    served
}

/// CPU ticks of processes between `start` and `stop`.
struct CpuMeter {
    pids: Vec<u32>,
    other_pids: Vec<u32>,
    before: Vec<u64>,
    other_before: Vec<u64>,
}

impl CpuMeter {
    fn start(pids: &[u32], others: &[(String, u32)]) -> CpuMeter {
        let other_pids: Vec<u32> = others.iter().map(|(_, pid)| *pid).collect();
        let ticks = |pids: &[u32]| pids.iter().map(|&pid| ::tests::process::usage(pid).0).collect::<Vec<_>>();
        CpuMeter { before: ticks(pids), other_before: ticks(&other_pids), pids: pids.to_vec(), other_pids }
    }

    /// The ticks each process used since `start`: the shards', then the others'.
    fn stop(&self) -> (Vec<u64>, Vec<u64>) {
        let since = |pids: &[u32], before: &[u64]| {
            pids.iter().zip(before).map(|(&pid, b)| ::tests::process::usage(pid).0.saturating_sub(*b)).collect()
        };
        (since(&self.pids, &self.before), since(&self.other_pids, &self.other_before))
    }
}

/// The provider, the consumers with their Bound bindings and their Widgets; returns the
/// view URLs the endpoint slice lists.
async fn set_up(https: &[TlsHttp], names: &[String], plan: &Plan) -> anyhow::Result<Vec<String>> {
    let started = Instant::now();
    let export_cluster = create_provider(&https[0]).await?;
    let deadline = started + plan.setup_timeout;
    let created = Instant::now();
    run_setup(https, plan, SetupStep::ClusterAndBinding).await?;
    let clusters = created.elapsed();
    wait_bound(https, plan.workspaces, deadline).await?;
    let bound = created.elapsed();
    let views = wait_endpoints(&https[0], names, deadline).await?;
    let seeding = Instant::now();
    run_setup(https, plan, SetupStep::Widgets).await?;
    let seeded = seeding.elapsed();
    let per_second = |count: usize, took: Duration| count as f64 / took.as_secs_f64().max(1e-9);
    let widgets = plan.workspaces * plan.objects_per_workspace;
    println!();
    println!("setup ({} consumer workspaces, {} per shard):", plan.workspaces, plan.workspaces.div_ceil(SHARDS));
    println!(
        "  logical clusters + APIBindings created {:>9.2} s  ({:.0} workspaces/s)",
        clusters.as_secs_f64(),
        per_second(plan.workspaces, clusters)
    );
    println!(
        "  every APIBinding Bound                 {:>9.2} s  ({:.0} workspaces/s, from the first create)",
        bound.as_secs_f64(),
        per_second(plan.workspaces, bound)
    );
    println!(
        "  Widgets seeded                         {:>9.2} s  ({widgets} creates, {:.0}/s)",
        seeded.as_secs_f64(),
        per_second(widgets, seeded)
    );
    println!("  whole setup, provider included         {:>9.2} s", started.elapsed().as_secs_f64());
    println!("view URLs (from the APIExportEndpointSlice of {export_cluster}):");
    for view in &views {
        println!("  {view}");
    }
    Ok(views)
}

/// The export's side: the provider cluster on root, its schema, export and endpoint
/// slice. Returns the provider's logical-cluster name once the export has an identity.
async fn create_provider(root: &TlsHttp) -> anyhow::Result<String> {
    eprintln!("creating the provider cluster {PROVIDER_CLUSTER} with APIExport {EXPORT}");
    let cluster =
        json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster", "metadata": {"name": "cluster"}});
    let base = format!("/clusters/{PROVIDER_CLUSTER}");
    root.create(&format!("{base}/apis/core.kcp.io/v1alpha1/logicalclusters"), &cluster).await?;
    root.create(&format!("{base}/{APIS}/apiresourceschemas"), &schema()).await?;
    let export = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": EXPORT},
        "spec": {"latestResourceSchemas": [format!("v1.{RESOURCE}.{GROUP}")]}});
    root.create(&format!("{base}/{APIS}/apiexports"), &export).await?;
    let slice = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExportEndpointSlice",
        "metadata": {"name": EXPORT}, "spec": {"export": {"name": EXPORT}}});
    root.create(&format!("{base}/{APIS}/apiexportendpointslices"), &slice).await?;
    let path = format!("{base}/{APIS}/apiexports/{EXPORT}");
    let deadline = Instant::now() + EXPORT_READY_TIMEOUT;
    loop {
        let export = root.get_json(&path).await?;
        if export.pointer("/status/identityHash").and_then(Value::as_str).is_some_and(|id| !id.is_empty()) {
            let cluster = export.pointer("/metadata/annotations/kcp.io~1cluster").and_then(Value::as_str);
            return Ok(cluster.unwrap_or(PROVIDER_CLUSTER).to_string());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "APIExport {EXPORT} has no identity within {EXPORT_READY_TIMEOUT:?}"
        );
        tokio::time::sleep(SETUP_POLL_INTERVAL).await;
    }
}

fn schema() -> Value {
    json!({
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIResourceSchema",
        "metadata": {"name": format!("v1.{RESOURCE}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": RESOURCE, "singular": "widget"},
            "scope": "Namespaced",
            "versions": [{
                "name": VERSION, "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"},
                        "seq": {"type": "integer", "format": "int64"},
                    }},
                    "status": {"type": "object", "properties": {"observedSize": {"type": "integer"}}},
                }},
            }],
        },
    })
}

/// One setup phase: what each consumer gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SetupStep {
    /// Its logical cluster and its APIBinding.
    ClusterAndBinding,
    /// Its Widgets (its binding must be Bound).
    Widgets,
}

/// Runs `step` for every consumer with `--clients` tasks taking the next consumer index,
/// each on its consumer's shard; fails on the first consumer that cannot be set up.
async fn run_setup(https: &[TlsHttp], plan: &Plan, step: SetupStep) -> anyhow::Result<()> {
    eprintln!("setup: {step:?} for {} consumers with {} clients", plan.workspaces, plan.clients);
    let next = Arc::new(AtomicUsize::new(0));
    let https: Arc<[TlsHttp]> = https.into();
    let mut clients = JoinSet::new();
    for _ in 0..plan.clients {
        let (next, https, plan) = (next.clone(), https.clone(), *plan);
        clients.spawn(async move {
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= plan.workspaces {
                    return anyhow::Ok(());
                }
                let http = &https[shard_of_consumer(index)];
                match step {
                    SetupStep::ClusterAndBinding => create_consumer(http, index).await?,
                    SetupStep::Widgets => seed_widgets(http, index, plan.objects_per_workspace).await?,
                }
                if (index + 1) % 2_000 == 0 {
                    eprintln!("  {step:?}: {} consumers started", index + 1);
                }
            }
        });
    }
    while let Some(done) = clients.join_next().await {
        if let Err(error) = done.context("join a setup client")? {
            clients.abort_all();
            return Err(error);
        }
    }
    Ok(())
}

async fn create_consumer(http: &TlsHttp, index: usize) -> anyhow::Result<()> {
    let base = format!("/clusters/{}", consumer_name(index));
    let cluster =
        json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster", "metadata": {"name": "cluster"}});
    create_retrying(http, &format!("{base}/apis/core.kcp.io/v1alpha1/logicalclusters"), &cluster).await?;
    let binding = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": EXPORT},
        "spec": {"reference": {"export": {"path": PROVIDER_CLUSTER, "name": EXPORT}}}});
    create_retrying(http, &format!("{base}/{APIS}/apibindings"), &binding).await
}

async fn seed_widgets(http: &TlsHttp, index: usize, widgets: usize) -> anyhow::Result<()> {
    let path = format!("/clusters/{}/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/{RESOURCE}", consumer_name(index));
    for widget in 0..widgets {
        let body = json!({"apiVersion": format!("{GROUP}/{VERSION}"), "kind": "Widget",
            "metadata": {"name": widget_name(widget), "namespace": NAMESPACE}, "spec": {"size": 1, "seq": 0}});
        create_retrying(http, &path, &body).await?;
    }
    Ok(())
}

/// POSTs `body` until it is created (201) or exists (409, from an earlier attempt whose
/// answer was lost); other answers are retried at most [`SETUP_ATTEMPTS_MAX`] times.
async fn create_retrying(http: &TlsHttp, path: &str, body: &Value) -> anyhow::Result<()> {
    let mut last = String::new();
    for _ in 0..SETUP_ATTEMPTS_MAX {
        match http.post_json(path, body).await {
            Ok(response) if matches!(response.status, StatusCode::CREATED | StatusCode::CONFLICT) => return Ok(()),
            Ok(response) => last = format!("HTTP {}: {}", response.status, clip(&response.text())),
            Err(error) => last = format!("{error:#}"),
        }
        tokio::time::sleep(SETUP_RETRY_BACKOFF).await;
    }
    anyhow::bail!("POST {path} failed {SETUP_ATTEMPTS_MAX} times; last: {last}")
}

/// Waits until every consumer's APIBinding is Bound, counting the Bound ones in one
/// wildcard list per shard each poll.
async fn wait_bound(https: &[TlsHttp], consumers: usize, deadline: Instant) -> anyhow::Result<()> {
    let path = format!("/clusters/*/{APIS}/apibindings");
    let mut reported = Instant::now();
    loop {
        let mut bound = 0usize;
        for http in https {
            let list = http.get_json(&path).await?;
            bound += list_items(&list)
                .iter()
                .filter(|binding| binding.pointer("/status/phase").and_then(Value::as_str) == Some("Bound"))
                .filter(|binding| binding.pointer("/metadata/name").and_then(Value::as_str) == Some(EXPORT))
                .count();
        }
        if bound >= consumers {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "only {bound} of {consumers} APIBindings Bound before the setup deadline"
        );
        if reported.elapsed() >= Duration::from_secs(10) {
            eprintln!("  {bound} of {consumers} APIBindings Bound");
            reported = Instant::now();
        }
        tokio::time::sleep(SETUP_POLL_INTERVAL).await;
    }
}

/// Waits until the endpoint slice lists a view on every shard, and returns the URLs.
async fn wait_endpoints(root: &TlsHttp, names: &[String], deadline: Instant) -> anyhow::Result<Vec<String>> {
    let path = format!("/clusters/{PROVIDER_CLUSTER}/{APIS}/apiexportendpointslices/{EXPORT}");
    let deadline = deadline.min(Instant::now() + EXPORT_READY_TIMEOUT);
    loop {
        let slice = root.get_json(&path).await?;
        let endpoints = slice.pointer("/status/endpoints").and_then(Value::as_array).cloned().unwrap_or_default();
        let urls: Vec<String> = endpoints.iter().filter_map(|e| e["url"].as_str().map(str::to_string)).collect();
        if views_by_shard(&urls, names).is_ok() {
            return Ok(urls);
        }
        anyhow::ensure!(Instant::now() < deadline, "the endpoint slice does not list every shard's view: {urls:?}");
        tokio::time::sleep(SETUP_POLL_INTERVAL).await;
    }
}

/// The list path of Widgets across every workspace of each shard's view, by shard index:
/// the part of the view's URL from `/shards/<name>/` on, so it reaches the shard directly
/// or through the front-proxy alike. Fails unless every shard has a view. Pure.
fn views_by_shard(urls: &[String], names: &[String]) -> anyhow::Result<Vec<String>> {
    names
        .iter()
        .map(|name| {
            let marker = format!("/shards/{name}/services/");
            let url = urls.iter().find(|url| url.contains(&marker)).with_context(|| format!("no view of {name}"))?;
            let path = &url[url.find(&marker).unwrap_or_default()..];
            Ok(format!("{}/clusters/*/apis/{GROUP}/{VERSION}/{RESOURCE}", path.trim_end_matches('/')))
        })
        .collect()
}

/// What one list through a view returned.
struct Listed {
    items: Vec<Value>,
    resource_version: String,
    pages: usize,
    bytes: usize,
    took: Duration,
}

/// Lists every item of `path`, in pages of `page_size` (0: unpaged). The RV is the first
/// page's: every page of one list is a snapshot at it.
async fn list_view(http: &TlsHttp, path: &str, page_size: u64) -> anyhow::Result<Listed> {
    let started = Instant::now();
    let mut listed =
        Listed { items: Vec::new(), resource_version: String::new(), pages: 0, bytes: 0, took: Duration::ZERO };
    let mut token: Option<String> = None;
    loop {
        let mut query = Vec::new();
        if page_size > 0 {
            query.push(format!("limit={page_size}"));
        }
        if let Some(token) = &token {
            query.push(format!("continue={}", percent_encode(token)));
        }
        let url = if query.is_empty() { path.to_string() } else { format!("{path}?{}", query.join("&")) };
        let response = http.get(&url).await.with_context(|| format!("list {url}"))?;
        anyhow::ensure!(
            response.status == StatusCode::OK,
            "list {url}: HTTP {}: {}",
            response.status,
            clip(&response.text())
        );
        listed.bytes += response.body.len();
        let mut page = response.json()?;
        if listed.pages == 0 {
            let rv = page.pointer("/metadata/resourceVersion").and_then(Value::as_str).context("list without an RV")?;
            listed.resource_version = rv.to_string();
        }
        listed.pages += 1;
        if let Some(Value::Array(items)) = page.get_mut("items").map(Value::take) {
            listed.items.extend(items);
        }
        token =
            page.pointer("/metadata/continue").and_then(Value::as_str).filter(|t| !t.is_empty()).map(str::to_string);
        if token.is_none() {
            listed.took = started.elapsed();
            return Ok(listed);
        }
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters, for a continue
/// token in a query. Pure.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (byte as char).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// The controller's start: each shard's view listed alone (timed), then all three at
/// once, as an informer per view would; returns the concurrent lists' RVs by shard.
async fn initial_lists(
    https: &[TlsHttp],
    paths: &[String],
    names: &[String],
    plan: &Plan,
) -> anyhow::Result<Vec<String>> {
    let expected = plan.workspaces * plan.objects_per_workspace;
    println!();
    println!("initial list through the views (page size {}):", plan.page_size);
    println!("  {:<10} {:>8} {:>10} {:>6} {:>10} {:>10}", "shard", "items", "KiB", "pages", "alone ms", "together ms");
    let mut alone = Vec::with_capacity(SHARDS);
    for shard in 0..SHARDS {
        alone.push(list_view(&https[shard], &paths[shard], plan.page_size).await?);
    }
    let together_started = Instant::now();
    let lists = (0..SHARDS).map(|shard| list_view(&https[shard], &paths[shard], plan.page_size));
    let together = futures::future::try_join_all(lists).await?;
    let together_wall = together_started.elapsed();
    let mut items = 0usize;
    for shard in 0..SHARDS {
        let (a, t) = (&alone[shard], &together[shard]);
        items += t.items.len();
        let unannotated = t.items.iter().filter(|item| cluster_of(item).is_none()).count();
        anyhow::ensure!(
            unannotated == 0,
            "{unannotated} items of {}'s view have no kcp.io/cluster annotation",
            names[shard]
        );
        println!(
            "  {:<10} {:>8} {:>10} {:>6} {:>10.1} {:>10.1}",
            names[shard],
            t.items.len(),
            t.bytes / 1024,
            t.pages,
            a.took.as_secs_f64() * 1e3,
            t.took.as_secs_f64() * 1e3
        );
    }
    let alone_sum: Duration = alone.iter().map(|listed| listed.took).sum();
    println!(
        "  {:<10} {:>8} {:>10} {:>6} {:>10.1} {:>10.1}  (alone: sum; together: wall time of all three)",
        "total",
        items,
        together.iter().map(|l| l.bytes).sum::<usize>() / 1024,
        together.iter().map(|l| l.pages).sum::<usize>(),
        alone_sum.as_secs_f64() * 1e3,
        together_wall.as_secs_f64() * 1e3
    );
    anyhow::ensure!(items == expected, "the views list {items} Widgets; {expected} were created");
    Ok(together.into_iter().map(|listed| listed.resource_version).collect())
}

/// An object's `kcp.io/cluster` annotation.
fn cluster_of(object: &Value) -> Option<&str> {
    object.pointer("/metadata/annotations/kcp.io~1cluster").and_then(Value::as_str)
}

/// Where each write's event was first seen, by write index, and what else the watches saw.
struct Arrivals {
    slots: Mutex<Vec<Option<Arrival>>>,
    /// Events (ADDED/MODIFIED) each shard's view delivered, whatever they were.
    delivered: Vec<AtomicU64>,
    /// Events of a write seen before.
    duplicates: AtomicU64,
    /// Events naming a write this run did not send (a seed, or a relist's item).
    other: AtomicU64,
    /// Watches reopened or relisted.
    restarts: AtomicU64,
}

/// The first sighting of one write's event.
#[derive(Clone, Debug)]
struct Arrival {
    at: Instant,
    /// The event's `kcp.io/cluster`, to check it names the written cluster.
    cluster: String,
}

impl Arrivals {
    fn new(writes: u64, shards: usize) -> Arrivals {
        Arrivals {
            slots: Mutex::new(vec![None; writes as usize]),
            delivered: (0..shards).map(|_| AtomicU64::new(0)).collect(),
            duplicates: AtomicU64::new(0),
            other: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
        }
    }

    /// Records Widget `object`, delivered by `shard`'s view at `at`: `spec.seq` is its
    /// write's index + 1 (0 for a seeded Widget).
    fn note(&self, shard: usize, object: &Value, at: Instant) {
        self.delivered[shard].fetch_add(1, Ordering::Relaxed);
        let seq = object.pointer("/spec/seq").and_then(Value::as_u64).unwrap_or(0);
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let Some(slot) = seq.checked_sub(1).and_then(|index| slots.get_mut(index as usize)) else {
            self.other.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if slot.is_some() {
            self.duplicates.fetch_add(1, Ordering::Relaxed);
            return;
        }
        *slot = Some(Arrival { at, cluster: cluster_of(object).unwrap_or_default().to_string() });
    }

    fn get(&self, index: u64) -> Option<Arrival> {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.get(index as usize).cloned().flatten()
    }

    fn seen(&self, index: u64) -> bool {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.get(index as usize).is_some_and(Option::is_some)
    }

    fn delivered(&self, shard: usize) -> u64 {
        self.delivered[shard].load(Ordering::Relaxed)
    }
}

/// The controller's watch of one shard's view, as a state machine: stream from an RV,
/// resume from the last RV seen when the stream ends, relist on 410 Gone.
#[derive(Clone, Debug)]
enum WatchState {
    Relist,
    Stream { rv: String },
}

/// What one watch line means for the stream.
enum Seen {
    /// An event or bookmark, with the resourceVersion to resume after (if it had one).
    Progress(Option<String>),
    /// 410 Gone: the RV left the shard's window; relist.
    Gone,
}

struct ViewWatch {
    http: TlsHttp,
    path: String,
    shard: usize,
    label: String,
    arrivals: Arc<Arrivals>,
    page_size: u64,
}

impl ViewWatch {
    /// Runs until aborted or after [`WATCH_RESTARTS_MAX`] restarts; `established` fires
    /// once the first stream answered.
    async fn run(self, rv: String, established: tokio::sync::oneshot::Sender<()>) {
        let mut established = Some(established);
        let mut state = WatchState::Stream { rv };
        for restarts in 0..=WATCH_RESTARTS_MAX {
            if restarts > 0 {
                self.arrivals.restarts.fetch_add(1, Ordering::Relaxed);
            }
            let outcome = match state.clone() {
                WatchState::Relist => self.relist().await,
                WatchState::Stream { rv } => self.stream(rv, &mut established).await,
            };
            match outcome {
                Ok(next) => state = next,
                Err(error) => {
                    eprintln!("watch {}: {error:#}", self.label);
                    tokio::time::sleep(RECONNECT_BACKOFF).await;
                }
            }
        }
        eprintln!("watch {}: giving up after {WATCH_RESTARTS_MAX} restarts", self.label);
    }

    async fn relist(&self) -> anyhow::Result<WatchState> {
        let listed = list_view(&self.http, &self.path, self.page_size).await?;
        let now = Instant::now();
        for item in &listed.items {
            self.arrivals.note(self.shard, item, now);
        }
        Ok(WatchState::Stream { rv: listed.resource_version })
    }

    async fn stream(
        &self,
        mut rv: String,
        established: &mut Option<tokio::sync::oneshot::Sender<()>>,
    ) -> anyhow::Result<WatchState> {
        let path = format!("{}?watch=true&allowWatchBookmarks=true&resourceVersion={rv}", self.path);
        let response = self.http.send_streaming(Method::GET, &path, &[], Bytes::new()).await?;
        anyhow::ensure!(response.status() == StatusCode::OK, "watch: HTTP {}", response.status());
        if let Some(established) = established.take() {
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
                self.arrivals.note(self.shard, object, arrived);
                Ok(Seen::Progress(rv))
            }
            Some("DELETED" | "BOOKMARK") => Ok(Seen::Progress(rv)),
            Some("ERROR") if object.get("code").and_then(Value::as_u64) == Some(410) => Ok(Seen::Gone),
            _ => anyhow::bail!("unexpected watch event {}", clip(&event.to_string())),
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

/// One acknowledged write.
#[derive(Clone, Debug)]
struct Write {
    index: u64,
    consumer: usize,
    sent: Instant,
}

/// What the writers did, merged.
struct Load {
    writes: Vec<Write>,
    errors: u64,
    write_latency_us: Histogram<u64>,
    /// From the scheduled start to the last answer.
    elapsed: Duration,
    /// How far behind schedule the latest send was (open-loop health).
    behind_max: Duration,
}

/// Runs the open-loop writes: worker `k` of `K` sends writes `k, k+K, …`, each at its due
/// time (or at once if late), to the shard hosting its target.
async fn write_load(https: &[TlsHttp], plan: &Plan) -> anyhow::Result<Load> {
    let samples = Arc::new(ErrorSamples::default());
    let https: Arc<[TlsHttp]> = https.into();
    let mut writers = Vec::with_capacity(plan.connections);
    for _ in 0..plan.connections {
        let mut connections = Vec::with_capacity(SHARDS);
        for http in https.iter() {
            connections.push(Some(http.connect().await.context("open a writer connection")?));
        }
        writers.push(Writer { https: https.clone(), connections, plan: *plan, samples: samples.clone() });
    }
    let start = tokio::time::Instant::now() + Duration::from_millis(100);
    let mut workers = JoinSet::new();
    for (worker, writer) in writers.into_iter().enumerate() {
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

/// One worker's share of the open-loop schedule, with a connection to every shard.
struct Writer {
    https: Arc<[TlsHttp]>,
    connections: Vec<Option<TlsConnection>>,
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
        let (consumer, widget) = self.plan.target(index);
        let shard = shard_of_consumer(consumer);
        let path = widget_path(consumer, widget);
        let body = json!({"spec": {"seq": index + 1}}).to_string();
        let headers = [("content-type", "application/merge-patch+json")];
        let mut connection = match self.connections[shard].take() {
            Some(connection) => connection,
            None => match self.https[shard].connect().await {
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
        match outcome {
            Ok(response) if response.status == StatusCode::OK => {
                record(&mut load.latency_us, answered - sent);
                load.writes.push(Write { index, consumer, sent });
                self.connections[shard] = Some(connection);
            }
            Ok(response) => {
                load.errors += 1;
                self.samples.note(|| format!("PATCH {path}: HTTP {}: {}", response.status, clip(&response.text())));
                self.connections[shard] = Some(connection);
            }
            Err(error) => {
                load.errors += 1;
                // The connection's state is unknown after a failed exchange; drop it.
                self.samples.note(|| format!("PATCH {path}: {error:#}"));
            }
        }
    }
}

/// Waits (at most `drain`) until every acknowledged write was seen; returns how many
/// were not.
async fn wait_drained(arrivals: &Arrivals, writes: &[Write], drain: Duration) -> usize {
    let deadline = Instant::now() + drain;
    loop {
        let unseen = writes.iter().filter(|write| !arrivals.seen(write.index)).count();
        if unseen == 0 || Instant::now() >= deadline {
            return unseen;
        }
        tokio::time::sleep(DRAIN_POLL_INTERVAL).await;
    }
}

/// Delivery figures of the write phase.
struct Figures {
    delivery_us: Histogram<u64>,
    /// Events naming another cluster than the one written.
    misattributed: usize,
    achieved_rate: f64,
}

impl Figures {
    fn compute(load: &Load, arrivals: &Arrivals) -> Figures {
        let mut delivery_us = latency_histogram();
        let mut misattributed = 0usize;
        for write in &load.writes {
            let Some(arrival) = arrivals.get(write.index) else { continue };
            record(&mut delivery_us, arrival.at.saturating_duration_since(write.sent));
            misattributed += usize::from(arrival.cluster != consumer_name(write.consumer));
        }
        let achieved_rate = load.writes.len() as f64 / load.elapsed.as_secs_f64().max(1e-9);
        Figures { delivery_us, misattributed, achieved_rate }
    }

    fn p99_ms(&self) -> Option<f64> {
        (!self.delivery_us.is_empty()).then(|| ms(&self.delivery_us, 0.99))
    }

    fn print(&self, load: &Load, arrivals: &Arrivals, unseen: usize) {
        println!();
        println!(
            "writes: {} acknowledged, {} failed, achieved {:.1} writes/s (acknowledged / (last answer − start)), \
             latest send {:.1} ms behind schedule",
            load.writes.len(),
            load.errors,
            self.achieved_rate,
            load.behind_max.as_secs_f64() * 1e3
        );
        for (label, histogram) in
            [("write→watch event", &self.delivery_us), ("PATCH round trip", &load.write_latency_us)]
        {
            if histogram.is_empty() {
                println!("{label:<18} latency: n/a");
                continue;
            }
            println!(
                "{label:<18} latency ms: p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}  (n={})",
                ms(histogram, 0.50),
                ms(histogram, 0.90),
                ms(histogram, 0.99),
                histogram.max() as f64 / 1000.0,
                histogram.len()
            );
        }
        println!("  (delivery runs from the PATCH's send to the event read from the view's watch)");
        println!(
            "lost events: {unseen} acknowledged writes never seen through a view; {} misattributed (another \
             cluster's annotation), {} duplicates, {} other events, {} watch restarts",
            self.misattributed,
            arrivals.duplicates.load(Ordering::Relaxed),
            arrivals.other.load(Ordering::Relaxed),
            arrivals.restarts.load(Ordering::Relaxed)
        );
    }
}

/// CPU of the write phase (writes, deliveries and the drain), per shard.
struct CpuFigures {
    names: Vec<String>,
    ticks: Vec<u64>,
    delivered: Vec<u64>,
    /// Writes each shard served in the phase.
    served: Vec<u64>,
    /// Every other process's ticks in the same phase, by name.
    others: Vec<(String, u64)>,
    /// Per shard, the ticks and writes of the same load with no watch open.
    baseline: Option<Vec<(u64, u64)>>,
    ticks_per_second: f64,
}

impl CpuFigures {
    fn ms(&self, ticks: u64) -> f64 {
        ticks as f64 * 1e3 / self.ticks_per_second
    }

    fn print(&self) {
        let per_event = |ticks: u64, events: u64| (events > 0).then(|| self.ms(ticks) * 1e3 / events as f64);
        let show = |value: Option<f64>| value.map_or("n/a".to_string(), |v| format!("{v:.1}"));
        println!();
        println!("shard CPU during the write phase (it serves the PATCHes too):");
        println!("  {:<10} {:>10} {:>10} {:>14}", "shard", "CPU ms", "events", "CPU µs/event");
        for (shard, name) in self.names.iter().enumerate() {
            let (ticks, events) = (self.ticks[shard], self.delivered[shard]);
            println!("  {name:<10} {:>10.0} {events:>10} {:>14}", self.ms(ticks), show(per_event(ticks, events)));
        }
        let (ticks, events) = (self.ticks.iter().sum::<u64>(), self.delivered.iter().sum::<u64>());
        println!("  {:<10} {:>10.0} {events:>10} {:>14}", "total", self.ms(ticks), show(per_event(ticks, events)));
        for (name, ticks) in &self.others {
            println!("  ({name}: {:.0} ms CPU)", self.ms(*ticks));
        }
        if let Some(baseline) = &self.baseline {
            self.print_baseline(baseline);
        }
    }

    /// The same writes without watches, and what delivering cost on top: (CPU with
    /// watches − CPU without, scaled to the same number of writes) / events delivered.
    fn print_baseline(&self, baseline: &[(u64, u64)]) {
        println!("the same writes with no watch open, and the delivery's share:");
        println!(
            "  {:<10} {:>10} {:>10} {:>14} {:>20}",
            "shard", "CPU ms", "writes", "CPU µs/write", "delivery µs/event"
        );
        let mut extra_ms_total = 0.0;
        for (shard, name) in self.names.iter().enumerate() {
            let (ticks, writes) = baseline[shard];
            let per_write_us = self.ms(ticks) * 1e3 / writes.max(1) as f64;
            let events = self.delivered[shard];
            let extra_ms = self.ms(self.ticks[shard]) - per_write_us * self.served[shard] as f64 / 1e3;
            extra_ms_total += extra_ms;
            println!(
                "  {name:<10} {:>10.0} {writes:>10} {per_write_us:>14.1} {:>20.1}",
                self.ms(ticks),
                extra_ms * 1e3 / events.max(1) as f64
            );
        }
        let events = self.delivered.iter().sum::<u64>().max(1);
        println!("  {:<10} {:>10} {:>10} {:>14} {:>20.1}", "total", "", "", "", extra_ms_total * 1e3 / events as f64);
        println!("  (delivery = (CPU with watches − writes served × CPU per write without) / events delivered)");
    }
}

fn print_summary(plan: &Plan, figures: &Figures, unseen: usize, errors: u64) {
    let rate_ok = figures.achieved_rate >= RATE_ACHIEVED_MIN * plan.rate as f64;
    let at_goal_rate = plan.rate >= GOAL_RATE;
    println!();
    println!("summary");
    match figures.p99_ms() {
        Some(p99) => println!("  delivery p99 {p99:.2} ms (goal < {GOAL_P99_MS} ms)"),
        None => println!("  delivery p99 n/a (no event seen)"),
    }
    println!("  lost events {unseen}, failed writes {errors}, misattributed {}", figures.misattributed);
    let met = figures.p99_ms().is_some_and(|p99| p99 < GOAL_P99_MS) && unseen == 0 && errors == 0;
    let verdict = match (met, rate_ok, at_goal_rate) {
        (true, true, true) if plan.rate == GOAL_RATE => "met".to_string(),
        (true, true, true) => format!("met (at {} writes/s)", plan.rate),
        (false, _, _) => "MISSED".to_string(),
        (true, false, _) => format!(
            "not judged: achieved {:.0} of {} writes/s asked (< {:.0}%)",
            figures.achieved_rate,
            plan.rate,
            RATE_ACHIEVED_MIN * 100.0
        ),
        (true, true, false) => format!("not judged: {} writes/s asked, the goal is at {GOAL_RATE}", plan.rate),
    };
    println!("  goal p99 < {GOAL_P99_MS} ms at {GOAL_RATE} writes/s with no event lost: {verdict}");
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

/// The first few failures, printed as they happen; the rest are only counted.
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

    fn plan(workspaces: usize, objects_per_workspace: usize) -> Plan {
        Plan {
            workspaces,
            objects_per_workspace,
            rate: 1_000,
            writes: 20_000,
            connections: 8,
            clients: 8,
            page_size: 500,
            drain: Duration::from_secs(1),
            setup_timeout: Duration::from_secs(10),
            via: Via::Direct,
            seed: 1,
            baseline: true,
        }
    }

    #[test]
    fn writes_spread_over_every_workspace_and_shard() {
        let plan = plan(300, 2);
        let mut per_consumer = vec![0usize; 300];
        let mut per_shard = [0usize; SHARDS];
        for index in 0..plan.writes {
            let (consumer, widget) = plan.target(index);
            assert!(widget < 2, "widget {widget} of write {index}");
            per_consumer[consumer] += 1;
            per_shard[shard_of_consumer(consumer)] += 1;
        }
        assert!(per_consumer.iter().all(|&n| n > 0), "every consumer is written: {per_consumer:?}");
        for count in per_shard {
            assert!((6_000..7_400).contains(&count), "about a third per shard: {per_shard:?}");
        }
        assert_eq!(plan.target(17), plan.target(17), "the choice is reproducible");
    }

    #[test]
    fn view_paths_are_found_per_shard_from_the_slice() {
        let names: Vec<String> = ["root", "shard-1"].iter().map(|s| s.to_string()).collect();
        let urls = vec![
            "https://127.0.0.1:2/shards/shard-1/services/apiexport/provider/widgets".to_string(),
            "https://127.0.0.1:1/shards/root/services/apiexport/provider/widgets/".to_string(),
        ];
        let paths = views_by_shard(&urls, &names).unwrap();
        assert_eq!(paths[0], "/shards/root/services/apiexport/provider/widgets/clusters/*/apis/example.io/v1/widgets");
        assert!(paths[1].starts_with("/shards/shard-1/"), "{paths:?}");
        assert!(views_by_shard(&urls[..1], &names).is_err(), "a shard without a view is not ready");
    }

    #[test]
    fn arrivals_keep_the_first_sighting_of_this_runs_writes() {
        let arrivals = Arrivals::new(3, 2);
        let first = Instant::now();
        let widget = |seq: u64| json!({"metadata": {"annotations": {"kcp.io/cluster": "c-1"}}, "spec": {"seq": seq}});
        arrivals.note(0, &widget(2), first);
        arrivals.note(1, &widget(2), first + Duration::from_millis(5));
        arrivals.note(0, &widget(0), first);
        arrivals.note(0, &widget(9), first);
        assert_eq!(arrivals.get(1).map(|a| (a.at, a.cluster)), Some((first, "c-1".to_string())));
        assert!(!arrivals.seen(0) && !arrivals.seen(2));
        assert_eq!(arrivals.duplicates.load(Ordering::Relaxed), 1);
        assert_eq!(arrivals.other.load(Ordering::Relaxed), 2);
        assert_eq!((arrivals.delivered(0), arrivals.delivered(1)), (3, 1));
    }

    #[test]
    fn continue_tokens_are_percent_encoded() {
        assert_eq!(percent_encode("eyJydiI6MTJ9+/="), "eyJydiI6MTJ9%2B%2F%3D");
        assert_eq!(percent_encode("a-b_c.d~"), "a-b_c.d~");
    }

    #[test]
    fn line_buffer_splits_across_chunks() {
        let mut buffer = LineBuffer::new(16);
        assert!(buffer.push(b"{\"a\":").unwrap().is_empty());
        assert_eq!(buffer.push(b"1}\n\n{\"b\"").unwrap(), vec![b"{\"a\":1}".to_vec()]);
        assert!(buffer.push(&[b'z'; 17]).is_err(), "an unfinished line over the limit fails");
    }
}
