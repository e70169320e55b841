//! `bench-store`: Atoll's full REST create path against etcd's raw put.
//!
//! The store's goal is that creating a ConfigMap through Atoll's whole stack (TLS,
//! HTTP, authentication, admission, JSON, the store's write path) is at least twice as
//! fast as a bare etcd put of the same size on the same machine, because that is what
//! a Kubernetes API server on etcd would have as its ceiling. Both systems get the same
//! load, one after the other so they never compete for the CPUs:
//!
//! 1. Atoll: a fresh `atoll-shard`, one logical cluster, N workers each with its own
//!    HTTPS keep-alive connection, POSTing ConfigMaps with unique names and a random
//!    `--value-bytes` value. Only 201 counts as done.
//! 2. etcd: Debian's `/usr/bin/etcd` with default settings (fsync on every commit),
//!    N workers each with its own gRPC channel, putting unique keys with random values
//!    of the same size.
//!
//! Between the runs every file the last system wrote is synced to disk first, so that its
//! write-back (a shard writes about a gigabyte in 15 s) does not slow the next system's
//! fsyncs.
//!
//! Then it prints ops/s and p50/p99 latency per system and the ratio. Everything it
//! starts is owned by a guard that kills it on drop, so errors, panics and Ctrl-C all
//! leave nothing running.
//!
//! Run: `cargo build --bins && cargo run -p tests --bin bench-store -- --seconds 30`.
//! `--skip-etcd` measures Atoll alone; `--skip-atoll` gives this machine's etcd baseline.
//! `--rounds N` repeats the comparison, alternating which system goes first (and whether
//! the shard exports in its first or second run), and ends with every round's ratio and
//! the medians: on a machine whose speed drifts, one round is one sample.
//!
//! Besides creates/s, each shard run reports the shard's CPU time per create (from
//! `/proc`), and the tracing CPU cost compares the two: it leaves out the benchmark's own
//! CPU, and the OTLP receiver's, but still moves with the machine (shared caches, a busy
//! sibling core), so `scripts/store-instructions.sh` remains the stable figure.

use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use hdrhistogram::Histogram;
use http::{Method, StatusCode};
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};
use tests::etcd::etcd_version;
use tests::otlp::{Receiver, TracingRuns};
use tests::{EtcdProcess, ShardOptions, ShardProcess, TlsConnection, TlsHttp};
use tokio::task::JoinSet;

/// The logical cluster the ConfigMaps go into.
const LOGICAL_CLUSTER: &str = "bench";

/// How many failures are printed in full; the rest are only counted, so a broken
/// server cannot flood the terminal.
const ERROR_SAMPLES_MAX: usize = 5;

/// The largest latency the histograms hold; slower operations are recorded as this.
const LATENCY_US_MAX: u64 = 60_000_000;

/// How long a worker waits before reconnecting after a connection failed, so a dead
/// server is not hammered with handshakes.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(100);

/// The time limit on each etcd request; matches the HTTPS side's request limit.
const ETCD_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Command-line flags; every one is bounded so a typo cannot start a day-long run or
/// thousands of connections.
#[derive(Parser, Debug)]
#[command(name = "bench-store", about = "Atoll's REST create rate against etcd's raw put rate")]
struct Args {
    /// How long each system is loaded, in seconds.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=600))]
    seconds: u64,
    /// Concurrent workers, each with its own connection.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1024))]
    connections: u64,
    /// Bytes of random data per object.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    value_bytes: u64,
    /// Measure only Atoll (no etcd needed).
    #[arg(long)]
    skip_etcd: bool,
    /// Measure only etcd (a baseline for this machine, no atoll-shard needed).
    #[arg(long, conflicts_with = "skip_etcd")]
    skip_atoll: bool,
    /// Atoll runs with OpenTelemetry export off, on (to an OTLP receiver in this program,
    /// sampled as `--sample-ratio` says), or both in turn.
    #[arg(long, value_enum, default_value = "both")]
    tracing: TracingRuns,
    /// The share of traces sampled while export is on (`parentbased_traceidratio`); 1, the
    /// default, is `always_on`, the sampling the export-cost goal is stated for.
    #[arg(long, default_value_t = 1.0, value_parser = tests::otlp::parse_ratio)]
    sample_ratio: f64,
    /// The shard's `--worker-threads` (default: the shard's own, one per CPU). The load
    /// generator shares the machine's CPUs with the server, so fewer may serve more.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    shard_worker_threads: Option<u16>,
    /// Rounds of the whole comparison. This machine's speed drifts over minutes, so one
    /// ratio is one sample: with several rounds (etcd first in every second one, and the
    /// exporting shard first in rounds 2 and 3 of every four) each round prints its own
    /// table and the end a summary with every round's ratio and the medians.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=20))]
    rounds: u64,
}

/// The shape of one run, shared by both systems.
#[derive(Clone, Copy, Debug)]
struct Load {
    duration: Duration,
    workers: usize,
    value_bytes: usize,
}

/// What one worker (or all of them, merged) achieved.
struct Tally {
    ops: u64,
    errors: u64,
    latency_us: Histogram<u64>,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            ops: 0,
            errors: 0,
            latency_us: Histogram::new_with_bounds(1, LATENCY_US_MAX, 3).expect("histogram bounds are valid"),
        }
    }

    fn record_ok(&mut self, latency: Duration) {
        self.ops += 1;
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.latency_us.saturating_record(micros.clamp(1, LATENCY_US_MAX));
    }

    fn merge(&mut self, other: Tally) -> anyhow::Result<()> {
        self.ops += other.ops;
        self.errors += other.errors;
        self.latency_us.add(other.latency_us).context("merge latency histograms")
    }
}

/// One line of the final table.
struct Report {
    system: String,
    tally: Tally,
    elapsed: Duration,
    /// The CPU time the shard spent while loaded (its threads, the span exporter's
    /// included; not the benchmark's, nor the OTLP receiver's in it); none for etcd.
    server_cpu: Option<Duration>,
}

impl Report {
    fn ops_per_second(&self) -> f64 {
        self.tally.ops as f64 / self.elapsed.as_secs_f64()
    }

    /// The shard's CPU time per create, in microseconds. It leaves out the load generator's
    /// and the receiver's CPU, but still moves with contention (shared caches, a busy
    /// sibling core) and with load (fixed background work over fewer creates).
    fn cpu_us_per_op(&self) -> Option<f64> {
        let cpu = self.server_cpu?;
        (self.tally.ops > 0).then(|| cpu.as_secs_f64() * 1e6 / self.tally.ops as f64)
    }

    fn percentile_ms(&self, quantile: f64) -> f64 {
        self.tally.latency_us.value_at_quantile(quantile) as f64 / 1000.0
    }
}

/// The first few failures, printed as they happen.
struct ErrorSamples {
    system: &'static str,
    printed: Mutex<usize>,
}

impl ErrorSamples {
    fn new(system: &'static str) -> Arc<ErrorSamples> {
        Arc::new(ErrorSamples { system, printed: Mutex::new(0) })
    }

    fn note(&self, message: impl FnOnce() -> String) {
        let mut printed = self.printed.lock().unwrap_or_else(|e| e.into_inner());
        if *printed < ERROR_SAMPLES_MAX {
            *printed += 1;
            eprintln!("{} error: {}", self.system, message());
            if *printed == ERROR_SAMPLES_MAX {
                eprintln!("{}: further errors are only counted", self.system);
            }
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let load = Load {
        duration: Duration::from_secs(args.seconds),
        workers: usize::try_from(args.connections).context("convert --connections")?,
        value_bytes: usize::try_from(args.value_bytes).context("convert --value-bytes")?,
    };
    // Dropping `run` on Ctrl-C drops the process guards, which kill the shard and etcd.
    tokio::select! {
        result = run(load, &args) => result,
        _ = tokio::signal::ctrl_c() => anyhow::bail!("interrupted; stopped what this run started"),
    }
}

async fn run(load: Load, args: &Args) -> anyhow::Result<()> {
    let etcd_label = if args.skip_etcd {
        "etcd skipped".to_string()
    } else {
        etcd_version().unwrap_or_else(|e| format!("etcd version unknown: {e:#}"))
    };
    let threads = args.shard_worker_threads.map_or_else(|| "default".to_string(), |n| n.to_string());
    println!(
        "bench-store: {:?} per system, {} connections, {}-byte values, shard worker threads: {threads} ({etcd_label})",
        load.duration, load.workers, load.value_bytes
    );
    settle().await?;
    let receiver = match args.skip_atoll {
        true => None,
        false => Some(Receiver::start(false).await.context("start the OTLP receiver")?.sampling(args.sample_ratio)),
    };
    let mut rounds = Vec::new();
    for round in 0..args.rounds {
        if args.rounds > 1 {
            println!("\nround {} of {}", round + 1, args.rounds);
        }
        // Every second round measures etcd first, so a drift within a round favours neither.
        let etcd_first = round % 2 == 1;
        let mut etcd = None;
        if etcd_first && !args.skip_etcd {
            etcd = Some(bench_etcd(load).await.context("benchmark etcd")?);
            settle().await?;
        }
        let mut atoll = Vec::new();
        if let Some(receiver) = &receiver {
            // Export first in rounds 1 and 2 (from 0) of every four: with etcd first in every
            // odd round, each of the two shard runs then holds every position once, so a
            // drift or a slower later run favours neither, with or without etcd.
            for traced in args.tracing.runs_in_round(round + round / 2) {
                let report = bench_atoll(load, args.shard_worker_threads, traced.then_some(receiver))
                    .await
                    .context("benchmark atoll")?;
                atoll.push(report);
                settle().await?;
            }
        }
        if !etcd_first && !args.skip_etcd {
            etcd = Some(bench_etcd(load).await.context("benchmark etcd")?);
            settle().await?;
        }
        let round = Round { atoll, etcd };
        print_table(&round);
        rounds.push(round);
    }
    if let Some(receiver) = receiver.filter(|_| args.tracing != TracingRuns::Off) {
        println!("spans received by the OTLP receiver ({}): {}", receiver.sampler(), receiver.count());
    }
    if rounds.len() > 1 {
        print_summary(&rounds);
    }
    Ok(())
}

/// One round's reports: Atoll's runs (export off, on, or both) and etcd's.
struct Round {
    atoll: Vec<Report>,
    etcd: Option<Report>,
}

impl Round {
    /// Atoll's run with export off (with `--tracing on`, its one run) over etcd, when both
    /// ran.
    fn ratio(&self) -> Option<f64> {
        let atoll = self.run("atoll").or(self.atoll.first())?;
        let etcd = self.etcd.as_ref().filter(|etcd| etcd.tally.ops > 0)?;
        Some(atoll.ops_per_second() / etcd.ops_per_second())
    }

    /// Atoll's run named `system` (`atoll` or `atoll+otel`), if it ran.
    fn run(&self, system: &str) -> Option<&Report> {
        self.atoll.iter().find(|report| report.system == system)
    }

    /// The creates/s of Atoll's run named `system`, if it ran.
    fn rate(&self, system: &str) -> Option<f64> {
        self.run(system).map(Report::ops_per_second)
    }

    /// The export's throughput cost in percent, when the round ran Atoll with export off
    /// and on.
    fn export_cost(&self) -> Option<f64> {
        tests::otlp::overhead_percent(self.rate("atoll")?, self.rate("atoll+otel")?)
    }

    /// The shard's CPU time per create with export on, over export off, in percent.
    fn export_cpu_cost(&self) -> Option<f64> {
        let (off, on) = (self.run("atoll")?.cpu_us_per_op()?, self.run("atoll+otel")?.cpu_us_per_op()?);
        (off > 0.0).then(|| (on / off - 1.0) * 100.0)
    }
}

/// The median of some figures (the mean of the middle two for an even count).
fn median(mut figures: Vec<f64>) -> Option<f64> {
    figures.sort_by(f64::total_cmp);
    let n = figures.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(figures[n / 2]),
        _ => Some((figures[n / 2 - 1] + figures[n / 2]) / 2.0),
    }
}

/// Every round's figures on one line each, then their medians.
fn print_summary(rounds: &[Round]) {
    let show = |figure: Option<f64>, digits: usize| figure.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"));
    let percent = |figure: Option<f64>| figure.map_or_else(|| "-".to_string(), |v| format!("{v:.1}%"));
    println!(
        "\n{:<6} {:>10} {:>12} {:>10} {:>8} {:>12} {:>9}",
        "round", "atoll/s", "atoll+otel/s", "etcd/s", "ratio", "export cost", "CPU cost"
    );
    let rate = |report: Option<&Report>| report.map(Report::ops_per_second);
    let plain = |round: &Round| round.rate("atoll");
    let traced = |round: &Round| round.rate("atoll+otel");
    for (n, round) in rounds.iter().enumerate() {
        println!(
            "{:<6} {:>10} {:>12} {:>10} {:>8} {:>12} {:>9}",
            n + 1,
            show(plain(round), 1),
            show(traced(round), 1),
            show(rate(round.etcd.as_ref()), 1),
            show(round.ratio(), 2),
            percent(round.export_cost()),
            percent(round.export_cpu_cost()),
        );
    }
    let median_of = |figure: &dyn Fn(&Round) -> Option<f64>| median(rounds.iter().filter_map(figure).collect());
    println!(
        "{:<6} {:>10} {:>12} {:>10} {:>8} {:>12} {:>9}",
        "median",
        show(median_of(&plain), 1),
        show(median_of(&traced), 1),
        show(median_of(&|r: &Round| rate(r.etcd.as_ref())), 1),
        show(median_of(&Round::ratio), 2),
        percent(median_of(&Round::export_cost)),
        percent(median_of(&Round::export_cpu_cost)),
    );
    let ratios: Vec<f64> = rounds.iter().filter_map(Round::ratio).collect();
    if !ratios.is_empty() {
        let met = ratios.iter().filter(|&&ratio| ratio >= 2.0).count();
        println!("ratio atoll/etcd ≥ 2.00x in {met} of {} rounds", ratios.len());
    }
}

fn print_table(round: &Round) {
    println!();
    println!(
        "{:<11} {:>10} {:>10} {:>9} {:>9} {:>8} {:>10}",
        "system", "ops", "ops/s", "p50 ms", "p99 ms", "errors", "CPU µs/op"
    );
    for report in round.atoll.iter().chain(&round.etcd) {
        println!(
            "{:<11} {:>10} {:>10.1} {:>9.2} {:>9.2} {:>8} {:>10}",
            report.system,
            report.tally.ops,
            report.ops_per_second(),
            report.percentile_ms(0.50),
            report.percentile_ms(0.99),
            report.tally.errors,
            report.cpu_us_per_op().map_or_else(|| "-".to_string(), |us| format!("{us:.1}")),
        );
    }
    tests::otlp::print_overhead(round.atoll.iter().map(|r| (r.system.as_str(), r.ops_per_second())));
    if let Some(cost) = round.export_cpu_cost() {
        println!("tracing CPU cost (atoll+otel vs atoll): {cost:+.1}% shard CPU time per create");
    }
    match (round.ratio(), round.atoll.is_empty(), &round.etcd) {
        (Some(ratio), _, _) => println!("ratio atoll/etcd = {ratio:.2}x (goal ≥ 2.00x)"),
        (None, true, _) => println!("ratio atoll/etcd = skipped (--skip-atoll)"),
        (None, false, None) => println!("ratio atoll/etcd = skipped (--skip-etcd)"),
        (None, false, Some(_)) => println!("ratio atoll/etcd = n/a (etcd completed no puts)"),
    }
}

/// Writes every dirty page to disk (`sync`), so that the next run starts on an idle disk.
async fn settle() -> anyhow::Result<()> {
    let started = Instant::now();
    let status = tokio::process::Command::new("sync").status().await.context("run sync")?;
    anyhow::ensure!(status.success(), "sync exited with {status}");
    eprintln!("synced the last run's writes in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

async fn bench_atoll(load: Load, worker_threads: Option<u16>, export_to: Option<&Receiver>) -> anyhow::Result<Report> {
    let system = if export_to.is_some() { "atoll+otel" } else { "atoll" }.to_string();
    eprintln!("{system}: starting a shard");
    let extra_args = worker_threads.map(|n| vec!["--worker-threads".to_string(), n.to_string()]).unwrap_or_default();
    let options = ShardOptions { name: "bench".to_string(), extra_args, ..ShardOptions::default() };
    let export = export_to.map(Receiver::export_env);
    let mut shard = ShardProcess::start(options).await.context("start atoll-shard")?;
    drop(export);
    shard.create_logical_cluster(LOGICAL_CLUSTER).await.context("create the benchmark logical cluster")?;
    let http = shard.http();
    ensure_default_namespace(&http).await?;

    // Connect before the clock starts: the benchmark measures creates, not handshakes.
    let mut connections = Vec::with_capacity(load.workers);
    for _ in 0..load.workers {
        connections.push(http.connect().await.context("open a benchmark connection")?);
    }
    eprintln!("atoll: {} connections open, loading for {:?}", load.workers, load.duration);
    let path: Arc<str> = format!("/clusters/{LOGICAL_CLUSTER}/api/v1/namespaces/default/configmaps").into();
    let samples = ErrorSamples::new("atoll");
    let pid = shard.pid();
    // A zero reading means `/proc` could not be read: no figure rather than a wrong one.
    let cpu_ticks = || pid.map(|pid| tests::process::usage(pid).0).filter(|&ticks| ticks > 0);
    let cpu_before = cpu_ticks();
    let started = Instant::now();
    let deadline = started + load.duration;
    let mut workers = JoinSet::new();
    for (worker, connection) in connections.into_iter().enumerate() {
        let job = AtollWorker {
            http: http.clone(),
            path: path.clone(),
            worker,
            value_bytes: load.value_bytes,
            deadline,
            samples: samples.clone(),
        };
        workers.spawn(job.run(connection));
    }
    let tally = join_workers(workers).await?;
    let elapsed = started.elapsed();
    let server_cpu = cpu_before.zip(cpu_ticks()).filter(|(before, after)| after >= before).map(|(before, after)| {
        Duration::from_secs_f64((after - before) as f64 / tests::process::clock_ticks_per_second())
    });
    match shard.stop().await {
        Ok(status) if !status.success() => eprintln!("atoll: warning: the shard exited with {status} on SIGTERM"),
        Ok(_) => {}
        Err(error) => eprintln!("atoll: warning: {error:#}"),
    }
    Ok(Report { system, tally, elapsed, server_cpu })
}

/// Kubernetes refuses objects in a namespace that does not exist; create `default`
/// in case the shard does not create it with the logical cluster.
async fn ensure_default_namespace(http: &TlsHttp) -> anyhow::Result<()> {
    let base = format!("/clusters/{LOGICAL_CLUSTER}/api/v1/namespaces");
    let existing = http.get(&format!("{base}/default")).await.context("look up the default namespace")?;
    if existing.status == StatusCode::OK {
        return Ok(());
    }
    let namespace = serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"},
    });
    let created = http.post_json(&base, &namespace).await.context("create the default namespace")?;
    anyhow::ensure!(
        matches!(created.status, StatusCode::CREATED | StatusCode::CONFLICT),
        "create the default namespace: HTTP {}: {}",
        created.status,
        created.text()
    );
    Ok(())
}

/// One Atoll load worker: sequential creates on its own connection until the deadline.
struct AtollWorker {
    http: TlsHttp,
    path: Arc<str>,
    worker: usize,
    value_bytes: usize,
    deadline: Instant,
    samples: Arc<ErrorSamples>,
}

impl AtollWorker {
    async fn run(self, connection: TlsConnection) -> Tally {
        let mut tally = Tally::new();
        let mut rng = StdRng::from_entropy();
        let mut connection = Some(connection);
        let mut sequence = 0u64;
        while Instant::now() < self.deadline {
            let open = match connection.as_mut() {
                Some(open) => open,
                None => match self.http.connect().await {
                    Ok(open) => connection.insert(open),
                    Err(error) => {
                        tally.errors += 1;
                        self.samples.note(|| format!("reconnect: {error:#}"));
                        tokio::time::sleep(RECONNECT_BACKOFF).await;
                        continue;
                    }
                },
            };
            let body = configmap_body(self.worker, sequence, &random_value(&mut rng, self.value_bytes));
            sequence += 1;
            let headers = [("content-type", "application/json")];
            let sent = Instant::now();
            match open.send(Method::POST, &self.path, &headers, body).await {
                Ok(response) if response.status == StatusCode::CREATED => {
                    tally.record_ok(sent.elapsed());
                }
                Ok(response) => {
                    tally.errors += 1;
                    self.samples.note(|| format!("HTTP {}: {}", response.status, clip(&response.text())));
                }
                Err(error) => {
                    tally.errors += 1;
                    self.samples.note(|| format!("{error:#}"));
                    // The connection state is unknown after a failed exchange.
                    connection = None;
                }
            }
        }
        tally
    }
}

/// The ConfigMap JSON, written straight out: building a `serde_json::Value` (a map per
/// object, hashed keys) and serializing it (escape-scanning the whole value) cost the load
/// generator ~2 µs a create on the cores it shares with the server. Nothing here needs
/// escaping: the name is `bench-` and digits, the value letters and digits.
fn configmap_body(worker: usize, sequence: u64, value: &str) -> Vec<u8> {
    let mut body = Vec::with_capacity(value.len() + 128);
    write!(
        body,
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"bench-{worker}-{sequence}"}},"data":{{"value":"{value}"}}}}"#
    )
    .expect("writing to a Vec cannot fail");
    body
}

/// Fresh random data per object, so neither RocksDB's block compression nor anything
/// else can make the Atoll side cheaper than etcd's uncompressed values. Random bytes
/// mapped onto letters and digits in place: drawing each character through a uniform
/// distribution, or collecting them one `char` at a time, cost the load generator more
/// CPU than parts of the server it measures, on the two cores both share. The slight
/// bias towards the first letters changes nothing for either.
fn random_value(rng: &mut StdRng, bytes: usize) -> String {
    const ALPHANUMERIC: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut value = vec![0u8; bytes];
    rng.fill_bytes(&mut value);
    for byte in &mut value {
        *byte = ALPHANUMERIC[usize::from(*byte) % ALPHANUMERIC.len()];
    }
    String::from_utf8(value).expect("letters and digits are UTF-8")
}

/// Keeps error bodies short enough to read.
fn clip(text: &str) -> String {
    const CLIP_CHARS: usize = 300;
    match text.char_indices().nth(CLIP_CHARS) {
        Some((index, _)) => format!("{}…", &text[..index]),
        None => text.to_string(),
    }
}

async fn bench_etcd(load: Load) -> anyhow::Result<Report> {
    eprintln!("etcd: starting");
    let mut etcd = EtcdProcess::start().await.context("start etcd")?;
    let options = etcd_client::ConnectOptions::default()
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(ETCD_REQUEST_TIMEOUT);
    // One client, hence one gRPC channel, per worker: the same one-connection-per-worker
    // shape as the HTTPS side.
    let mut clients = Vec::with_capacity(load.workers);
    for _ in 0..load.workers {
        let client = etcd_client::Client::connect([etcd.client_url()], Some(options.clone()))
            .await
            .context("connect an etcd client")?;
        clients.push(client.kv_client());
    }
    eprintln!("etcd: {} clients connected, loading for {:?}", load.workers, load.duration);
    let samples = ErrorSamples::new("etcd");
    let started = Instant::now();
    let deadline = started + load.duration;
    let mut workers = JoinSet::new();
    for (worker, kv) in clients.into_iter().enumerate() {
        workers.spawn(etcd_worker(kv, worker, load.value_bytes, deadline, samples.clone()));
    }
    let tally = join_workers(workers).await?;
    let elapsed = started.elapsed();
    if let Err(error) = etcd.stop().await {
        eprintln!("etcd: warning: {error:#}");
    }
    Ok(Report { system: "etcd".to_string(), tally, elapsed, server_cpu: None })
}

async fn etcd_worker(
    mut kv: etcd_client::KvClient,
    worker: usize,
    value_bytes: usize,
    deadline: Instant,
    samples: Arc<ErrorSamples>,
) -> Tally {
    let mut tally = Tally::new();
    let mut rng = StdRng::from_entropy();
    let mut sequence = 0u64;
    while Instant::now() < deadline {
        // The key a Kubernetes API server on etcd would use for the same ConfigMap.
        let key = format!("/registry/configmaps/{LOGICAL_CLUSTER}/default/bench-{worker}-{sequence}");
        let value = random_value(&mut rng, value_bytes);
        sequence += 1;
        let sent = Instant::now();
        match kv.put(key, value, None).await {
            Ok(_) => tally.record_ok(sent.elapsed()),
            Err(error) => {
                tally.errors += 1;
                samples.note(|| error.to_string());
            }
        }
    }
    tally
}

/// Sums up the workers. They live in a `JoinSet` so that dropping the benchmark (on
/// Ctrl-C or an error) aborts them instead of leaving them to hammer a stopped server.
async fn join_workers(mut workers: JoinSet<Tally>) -> anyhow::Result<Tally> {
    let mut total = Tally::new();
    while let Some(tally) = workers.join_next().await {
        total.merge(tally.context("join a load worker")?)?;
    }
    Ok(total)
}

#[cfg(test)]
// Not `tests`: that name is the library crate this benchmark imports.
mod unit {
    use super::*;

    #[test]
    fn the_median_takes_the_middle_figure_or_the_mean_of_the_middle_two() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn the_written_body_is_the_configmap_json() {
        let mut rng = StdRng::seed_from_u64(7);
        let value = random_value(&mut rng, 300);
        assert_eq!(value.len(), 300);
        assert!(value.bytes().all(|byte| byte.is_ascii_alphanumeric()), "{value}");
        let body: serde_json::Value = serde_json::from_slice(&configmap_body(3, 41, &value)).unwrap();
        let expected = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "bench-3-41"},
            "data": {"value": value},
        });
        assert_eq!(body, expected);
    }
}
