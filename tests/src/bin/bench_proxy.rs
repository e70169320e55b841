//! `bench-proxy`: what the front-proxy adds to a request, against nginx doing the same job.
//!
//! It starts one root shard, creates a ConfigMap in logical cluster `root`, and puts two
//! proxies in front of the shard: `atoll-front-proxy`, and Debian's nginx configured as
//! a TLS reverse proxy (mutual TLS to the shard as admin, keep-alive upstream
//! connections; see `tests/src/nginx.rs`). Then, for each target in turn (the shard
//! directly, the front-proxy, nginx), `--connections` clients, each on its own
//! HTTP/1.1 keep-alive TLS connection, GET that one ConfigMap back to back for
//! `--seconds` after a `--warmup-seconds` warm-up.
//!
//! It prints, per target, requests/s and the p50/p99/p99.9 latency, the CPU the shard,
//! the proxy and the load generator used during the window, and then what each proxy
//! adds to the direct p50, against the goal: the front-proxy's added p50 ≤ nginx's, and
//! its throughput ≥ nginx's. Any non-2xx response or failed exchange is an error: the
//! errors are counted, samples printed, and the run exits non-zero, because a fast
//! stream of 403s says nothing about proxying.
//!
//! All processes share the machine with the load generator; on two cores the figures
//! are comparisons between targets measured the same way, not absolute capacities.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::tests::kubeconfig;
use ::tests::nginx::{NginxOptions, NginxProcess, UPSTREAM_KEEPALIVE_DEFAULT};
use ::tests::otlp::{Receiver, TracingRuns};
use ::tests::process::{log_tail, OwnedChild};
use ::tests::{ShardOptions, ShardProcess, TlsConnection, TlsHttp};
use anyhow::Context;
use bytes::Bytes;
use clap::{Parser, ValueEnum};
use hdrhistogram::Histogram;
use http::{Method, StatusCode};
use rcgen::{CertificateParams, ExtendedKeyUsagePurpose, Issuer, KeyPair};
use tempfile::TempDir;
use tokio::task::JoinSet;

/// The logical cluster, namespace and name of the ConfigMap every request reads.
const CLUSTER: &str = "root";
const NAMESPACE: &str = "default";
const CONFIGMAP_NAME: &str = "bench-proxy";

/// The front-proxy's binary; it sits next to `atoll-shard`.
const FRONT_PROXY_BINARY: &str = "atoll-front-proxy";

/// How long one request may take before it counts as failed; far above any sane
/// latency, far below a run's length.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a target may take, once started, to answer the first GET with 200: the
/// front-proxy learns where `root` lives from the shard's stream, asynchronously.
const FIRST_OK_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the front-proxy may take from spawn to writing its admin kubeconfig.
const FRONT_PROXY_START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the front-proxy may take to exit after SIGTERM.
const FRONT_PROXY_STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// The file, in the front-proxy's data dir, that receives its output.
const FRONT_PROXY_LOG_FILE: &str = "front-proxy.log";

/// How often readiness is polled.
const PROBE_INTERVAL: Duration = Duration::from_millis(100);

/// How long a client waits before reconnecting after a connection failed, so a dead
/// target is not hammered with handshakes.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(100);

/// How many failures are printed in full per target; the rest are only counted.
const ERROR_SAMPLES_MAX: usize = 5;

/// How much of a failed response's body an error sample quotes.
const ERROR_BODY_CHARS_MAX: usize = 300;

/// The largest latency the histograms hold; slower requests are recorded as this.
const LATENCY_US_MAX: u64 = 60_000_000;

/// How many lines of a process log error messages quote.
const LOG_TAIL_LINES: usize = 40;

/// The three ways to reach the shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
enum Target {
    /// Straight to the shard, as admin.
    Direct,
    /// Through `atoll-front-proxy`, as admin.
    Proxy,
    /// Through nginx, anonymously; nginx authenticates to the shard as admin.
    Nginx,
}

impl Target {
    fn label(self) -> &'static str {
        match self {
            Target::Direct => "direct",
            Target::Proxy => "front-proxy",
            Target::Nginx => "nginx",
        }
    }
}

/// Command-line flags; every one is bounded so a typo cannot start a day-long run or
/// thousands of connections.
#[derive(Parser, Debug)]
#[command(name = "bench-proxy", about = "GET latency and throughput: shard direct, front-proxy, nginx")]
struct Args {
    /// Concurrent clients, each with its own keep-alive connection.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1024))]
    connections: u64,
    /// Seconds measured per target and round.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    seconds: u64,
    /// Seconds of load before each measurement, not counted: connections open, and
    /// caches, allocators and the proxies' upstream connection pools fill.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(0..=600))]
    warmup_seconds: u64,
    /// Targets to measure, in this order: direct, proxy, nginx.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Target::Direct, Target::Proxy, Target::Nginx])]
    targets: Vec<Target>,
    /// How often the whole sequence of targets is repeated; the rounds of a target are
    /// merged. More rounds interleave the targets, so slow drift (page cache, compaction,
    /// a noisy neighbour) spreads over all of them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=20))]
    rounds: u64,
    /// Bytes of the ConfigMap's one data value.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    configmap_bytes: u64,
    /// Runs with OpenTelemetry export off, on (the shard and the front-proxy export their
    /// spans, sampled as `--sample-ratio` says, to an OTLP receiver in this program), or
    /// both in turn.
    #[arg(long, value_enum, default_value = "both")]
    tracing: TracingRuns,
    /// With `--tracing both`, how often the pair of runs (export off, export on) is
    /// repeated, exporting first in every second pass; each target's traced and untraced
    /// rates are then averaged over the passes. (Export is set when the processes start,
    /// so it cannot alternate within one run's rounds, and the later run of a pair tends
    /// to be the slower on this machine.)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10))]
    passes: u64,
    /// The share of traces sampled while export is on (`parentbased_traceidratio`); 1, the
    /// default, is `always_on`, the sampling the export-cost goal is stated for.
    #[arg(long, default_value_t = 1.0, value_parser = ::tests::otlp::parse_ratio)]
    sample_ratio: f64,
}

/// The shape of one run.
#[derive(Clone, Debug)]
struct Plan {
    connections: usize,
    window: Duration,
    warmup: Duration,
    targets: Vec<Target>,
    rounds: usize,
    configmap_bytes: usize,
    tracing: TracingRuns,
    passes: u64,
    sample_ratio: f64,
}

impl Plan {
    fn from_args(args: Args) -> anyhow::Result<Plan> {
        let size = |value: u64, flag: &str| usize::try_from(value).with_context(|| format!("convert {flag}"));
        let mut targets = args.targets;
        targets.sort();
        targets.dedup();
        Ok(Plan {
            connections: size(args.connections, "--connections")?,
            window: Duration::from_secs(args.seconds),
            warmup: Duration::from_secs(args.warmup_seconds),
            targets,
            rounds: size(args.rounds, "--rounds")?,
            configmap_bytes: size(args.configmap_bytes, "--configmap-bytes")?,
            tracing: args.tracing,
            passes: args.passes,
            sample_ratio: args.sample_ratio,
        })
    }
}

fn main() -> anyhow::Result<()> {
    let plan = Plan::from_args(Args::parse())?;
    let runtime = ::tests::load_generator_runtime()?;
    // Dropping `run` on a signal drops every process handle, which kills the shard,
    // the front-proxy and nginx's whole process group.
    runtime.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("install the SIGTERM handler")?;
        tokio::select! {
            result = run(plan) => result,
            _ = tokio::signal::ctrl_c() => anyhow::bail!("interrupted; stopped what this run started"),
            _ = term.recv() => anyhow::bail!("terminated; stopped what this run started"),
        }
    })
}

async fn run(plan: Plan) -> anyhow::Result<()> {
    let receiver = Receiver::start(false).await.context("start the OTLP receiver")?.sampling(plan.sample_ratio);
    // Each name's rates (`front-proxy`, `front-proxy+otel`, ...), each in run order.
    let mut rates: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let passes = if plan.tracing == TracingRuns::Both { plan.passes } else { 1 };
    if passes < plan.passes {
        eprintln!("--passes {} ignored: only --tracing both has a pair of runs to repeat", plan.passes);
    } else if passes % 2 == 1 && plan.tracing == TracingRuns::Both {
        eprintln!(
            "note: with an odd --passes, export runs second more often than first (the later run tends to be slower)"
        );
    }
    for pass in 0..passes {
        for traced in plan.tracing.runs_in_round(pass) {
            let export = format!("on ({}, to an OTLP receiver)", receiver.sampler());
            let of = if passes > 1 { format!(", pass {} of {passes}", pass + 1) } else { String::new() };
            println!("\n== span export {}{of} ==", if traced { export.as_str() } else { "off" });
            let _export = traced.then(|| receiver.export_env());
            for result in run_once(&plan).await? {
                let name = format!("{}{}", result.target.label(), if traced { "+otel" } else { "" });
                rates.entry(name).or_default().push(result.requests_per_second());
            }
        }
    }
    if plan.tracing != TracingRuns::Off {
        println!("\nspans received by the OTLP receiver ({}): {}", receiver.sampler(), receiver.count());
        let mean = |runs: &[f64]| runs.iter().sum::<f64>() / runs.len() as f64;
        if passes > 1 {
            for (name, runs) in &rates {
                let each: Vec<String> = runs.iter().map(|rate| format!("{rate:.0}")).collect();
                println!("{name}: {:.0} req/s on average ({})", mean(runs), each.join(", "));
            }
        }
        // Each target's traced rate against its own untraced rate.
        ::tests::otlp::print_overhead(rates.iter().map(|(name, runs)| (name.as_str(), mean(runs))));
    }
    Ok(())
}

/// One full sequence: a shard, the targets, every round; returns each target's figures
/// after printing them.
async fn run_once(plan: &Plan) -> anyhow::Result<Vec<TargetResult>> {
    let path = configmap_path();
    println!(
        "bench-proxy: GET {path}, {} connections, {} s per target after {} s warm-up, {} round(s)",
        plan.connections,
        plan.window.as_secs(),
        plan.warmup.as_secs(),
        plan.rounds
    );
    eprintln!("starting the root shard");
    let mut shard = ShardProcess::start(ShardOptions::default()).await.context("start the root shard")?;
    eprintln!("  shard at {} (pid {})", shard.base_url(), shard.pid().unwrap_or_default());
    let body_bytes = create_configmap(&shard, plan.configmap_bytes).await?;
    println!("  response body: {body_bytes} bytes");
    let mut endpoints = Vec::new();
    for &target in &plan.targets {
        if let Some(endpoint) = start_endpoint(target, &shard).await? {
            endpoints.push(endpoint);
        }
    }
    for endpoint in &endpoints {
        endpoint.wait_first_ok(&path, &shard).await?;
    }
    let results = measure_all(&endpoints, &shard, plan).await?;
    for endpoint in &mut endpoints {
        if let Err(error) = endpoint.stop().await {
            eprintln!("warning: {error:#}");
        }
    }
    if let Err(error) = shard.stop().await {
        eprintln!("warning: {error:#}");
    }
    print_summary(&results, plan);
    let failed: u64 = results.iter().map(|result| result.tally.failed()).sum();
    anyhow::ensure!(failed == 0, "{failed} measured requests failed; the figures above do not describe proxying");
    Ok(results)
}

fn configmap_path() -> String {
    format!("/clusters/{CLUSTER}/api/v1/namespaces/{NAMESPACE}/configmaps/{CONFIGMAP_NAME}")
}

/// Creates the ConfigMap (and its namespace if the shard has none) and returns the size
/// of the body a GET answers with.
async fn create_configmap(shard: &ShardProcess, value_bytes: usize) -> anyhow::Result<usize> {
    let http = shard.http();
    let namespace_path = format!("/clusters/{CLUSTER}/api/v1/namespaces/{NAMESPACE}");
    let response = http.get(&namespace_path).await.context("read the namespace")?;
    if response.status == StatusCode::NOT_FOUND {
        let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
        let created = http.post_json(&format!("/clusters/{CLUSTER}/api/v1/namespaces"), &body).await?;
        anyhow::ensure!(
            created.status.is_success(),
            "create namespace {NAMESPACE}: HTTP {}: {}",
            created.status,
            created.text()
        );
    }
    let body = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP_NAME, "labels": {"app": "bench-proxy"}},
        "data": {"value": "x".repeat(value_bytes)},
    });
    let list_path = format!("/clusters/{CLUSTER}/api/v1/namespaces/{NAMESPACE}/configmaps");
    let created = http.post_json(&list_path, &body).await.context("create the ConfigMap")?;
    anyhow::ensure!(created.status.is_success(), "create the ConfigMap: HTTP {}: {}", created.status, created.text());
    let read = http.get(&configmap_path()).await.context("read the ConfigMap back")?;
    anyhow::ensure!(read.status == StatusCode::OK, "read the ConfigMap back: HTTP {}: {}", read.status, read.text());
    Ok(read.body.len())
}

/// One way to reach the shard, and the process (if any) that stands in between.
struct Endpoint {
    target: Target,
    http: TlsHttp,
    server: Server,
}

enum Server {
    Shard,
    FrontProxy(FrontProxy),
    Nginx(NginxProcess),
}

impl Endpoint {
    /// The processes that stand between client and shard, for CPU accounting.
    fn proxy_pids(&self) -> Vec<u32> {
        match &self.server {
            Server::Shard => Vec::new(),
            Server::FrontProxy(proxy) => proxy.pid().into_iter().collect(),
            Server::Nginx(nginx) => nginx.pids(),
        }
    }

    fn log_path(&self, shard: &ShardProcess) -> PathBuf {
        match &self.server {
            Server::Shard => shard.log_path(),
            Server::FrontProxy(proxy) => proxy.log_path(),
            Server::Nginx(nginx) => nginx.log_path(),
        }
    }

    /// Waits (bounded) until a GET of `path` answers 200 with the ConfigMap, so the
    /// measurement never starts against a target that only answers errors.
    async fn wait_first_ok(&self, path: &str, shard: &ShardProcess) -> anyhow::Result<()> {
        let deadline = Instant::now() + FIRST_OK_TIMEOUT;
        loop {
            let last = match self.http.get(path).await {
                Ok(response) if response.status == StatusCode::OK => {
                    let name = response.json()?.pointer("/metadata/name").and_then(|v| v.as_str()).map(str::to_owned);
                    anyhow::ensure!(
                        name.as_deref() == Some(CONFIGMAP_NAME),
                        "{}: GET {path} answered 200 with something else: {}",
                        self.target.label(),
                        response.text()
                    );
                    return Ok(());
                }
                Ok(response) => format!("HTTP {}: {}", response.status, truncate(&response.text())),
                Err(error) => format!("{error:#}"),
            };
            if Instant::now() >= deadline {
                let log = self.log_path(shard);
                anyhow::bail!(
                    "{}: GET {path} did not answer 200 within {FIRST_OK_TIMEOUT:?}; last: {last}\n\
                     --- tail of {} ---\n{}",
                    self.target.label(),
                    log.display(),
                    log_tail(&log, LOG_TAIL_LINES)
                );
            }
            tokio::time::sleep(PROBE_INTERVAL).await;
        }
    }

    async fn stop(&mut self) -> anyhow::Result<()> {
        match &mut self.server {
            Server::Shard => Ok(()),
            Server::FrontProxy(proxy) => proxy.stop().await,
            Server::Nginx(nginx) => nginx.stop().await,
        }
    }
}

/// Starts what `target` needs; `None` when the target cannot run here (the front-proxy
/// binary has not been built), after saying so.
async fn start_endpoint(target: Target, shard: &ShardProcess) -> anyhow::Result<Option<Endpoint>> {
    let endpoint = match target {
        Target::Direct => Endpoint { target, http: shard.http().with_timeout(REQUEST_TIMEOUT), server: Server::Shard },
        Target::Proxy => {
            let binary = front_proxy_binary();
            if !binary.is_file() {
                println!(
                    "  front-proxy: SKIPPED, {} not built (run `cargo build --workspace --all-targets`)",
                    binary.display()
                );
                return Ok(None);
            }
            eprintln!("starting the front-proxy");
            let proxy = FrontProxy::start(&binary, shard).await?;
            let http = TlsHttp::new(&proxy.admin.base_url, &proxy.admin.ca_pem, Some(&proxy.admin.identity))?
                .with_timeout(REQUEST_TIMEOUT);
            eprintln!("  front-proxy at {} (pid {})", proxy.admin.base_url, proxy.pid().unwrap_or_default());
            Endpoint { target, http, server: Server::FrontProxy(proxy) }
        }
        Target::Nginx => {
            eprintln!("starting nginx");
            let nginx = NginxProcess::start(&nginx_options(shard)?).await?;
            // nginx's own serving certificate comes from the shard's serving CA, so the
            // same trust anchor works; the client side is anonymous.
            let http = TlsHttp::new(&nginx.base_url(), &shard.admin().ca_pem, None)?.with_timeout(REQUEST_TIMEOUT);
            eprintln!("  nginx at {} (pids {:?})", nginx.base_url(), nginx.pids());
            Endpoint { target, http, server: Server::Nginx(nginx) }
        }
    };
    Ok(Some(endpoint))
}

/// The shard's PKI dir, where the installation's CAs live (the shard was given no
/// `--pki-dir`, so it is `DATA_DIR/pki`).
fn pki_dir(shard: &ShardProcess) -> PathBuf {
    shard.data_dir().join("pki")
}

fn nginx_options(shard: &ShardProcess) -> anyhow::Result<NginxOptions> {
    let upstream = shard.base_url().trim_start_matches("https://").to_string();
    let ca_pem = String::from_utf8(shard.admin().ca_pem.clone()).context("read the CA PEM as text")?;
    let serving = mint_serving_certificate(&pki_dir(shard))?;
    Ok(NginxOptions {
        upstream,
        upstream_server_name: "localhost".to_string(),
        upstream_ca_pem: ca_pem,
        upstream_client: shard.admin().identity.clone(),
        serving_cert_pem: serving.cert_pem,
        serving_key_pem: serving.key_pem,
        upstream_keepalive: UPSTREAM_KEEPALIVE_DEFAULT,
    })
}

/// A serving certificate and its key, PEM.
struct ServingCertificate {
    cert_pem: String,
    key_pem: String,
}

/// Signs a serving certificate for `localhost` and `127.0.0.1` with the installation's
/// serving CA (`PKI/ca.{crt,key}`), so clients trust nginx exactly as they trust shards.
fn mint_serving_certificate(pki_dir: &Path) -> anyhow::Result<ServingCertificate> {
    let read = |name: &str| {
        let path = pki_dir.join(name);
        std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))
    };
    let ca_key = KeyPair::from_pem(&read("ca.key")?).context("parse the serving CA key")?;
    let issuer = Issuer::from_ca_cert_pem(&read("ca.crt")?, ca_key).context("parse the serving CA")?;
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let mut params = CertificateParams::new(names).context("start serving certificate params")?;
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().context("generate the serving key")?;
    let cert = params.signed_by(&key, &issuer).context("sign the serving certificate")?;
    Ok(ServingCertificate { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

/// `atoll-front-proxy` sits next to `atoll-shard`, wherever the harness finds that.
fn front_proxy_binary() -> PathBuf {
    ::tests::binary("atoll-shard").with_file_name(FRONT_PROXY_BINARY)
}

/// A running `atoll-front-proxy` routing `/clusters/root/…` to the shard, killed when
/// dropped. Not the harness's `FrontProxyProcess`: the CPU accounting needs the pid,
/// which that type keeps to itself.
struct FrontProxy {
    // Declared before `dir` so that the process dies before its data dir is removed.
    child: Option<OwnedChild>,
    dir: TempDir,
    admin: kubeconfig::AdminKubeconfig,
}

impl FrontProxy {
    /// Spawns the front-proxy on a port of its own choosing (`--listen 127.0.0.1:0`; its
    /// admin kubeconfig names the real one) and waits until it wrote that kubeconfig.
    async fn start(binary: &Path, shard: &ShardProcess) -> anyhow::Result<FrontProxy> {
        let dir = tempfile::Builder::new().prefix("atoll-front-proxy-").tempdir().context("create a data dir")?;
        let log_path = dir.path().join(FRONT_PROXY_LOG_FILE);
        let log = OpenOptions::new().create(true).append(true).open(&log_path).context("open front-proxy.log")?;
        let mut command = Command::new(binary);
        command
            .args(["--listen", "127.0.0.1:0", "--root-shard", shard.base_url()])
            .arg("--pki-dir")
            .arg(pki_dir(shard))
            .arg("--data-dir")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().context("duplicate the log handle")?)
            .stderr(log);
        // The same default as the shard's, so that both log alike.
        if std::env::var_os("RUST_LOG").is_none() {
            command.env("RUST_LOG", "info");
        }
        let mut child = OwnedChild::spawn(&mut command, FRONT_PROXY_BINARY)?;
        let admin = wait_kubeconfig(&mut child, dir.path(), &log_path).await?;
        Ok(FrontProxy { child: Some(child), dir, admin })
    }

    fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(OwnedChild::pid)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join(FRONT_PROXY_LOG_FILE)
    }

    async fn stop(&mut self) -> anyhow::Result<()> {
        let Some(mut child) = self.child.take() else { return Ok(()) };
        child.terminate(FRONT_PROXY_STOP_TIMEOUT).await.map(drop).context("stop the front-proxy")
    }
}

/// Waits until the front-proxy wrote a parseable `DIR/admin.kubeconfig`.
async fn wait_kubeconfig(
    child: &mut OwnedChild,
    dir: &Path,
    log_path: &Path,
) -> anyhow::Result<kubeconfig::AdminKubeconfig> {
    let path = dir.join("admin.kubeconfig");
    let deadline = Instant::now() + FRONT_PROXY_START_TIMEOUT;
    loop {
        // A parse error just means the file is still being written.
        let last = match kubeconfig::read(&path) {
            Ok(admin) => return Ok(admin),
            Err(error) => format!("{error:#}"),
        };
        let why = match child.try_exited()? {
            Some(status) => format!("it exited ({status})"),
            None if Instant::now() >= deadline => format!("not within {FRONT_PROXY_START_TIMEOUT:?}"),
            None => {
                tokio::time::sleep(PROBE_INTERVAL).await;
                continue;
            }
        };
        anyhow::bail!(
            "the front-proxy did not write {}: {why}; last: {last}\n--- tail of {} ---\n{}",
            path.display(),
            log_path.display(),
            log_tail(log_path, LOG_TAIL_LINES)
        );
    }
}

/// What one target did over all rounds.
struct TargetResult {
    target: Target,
    tally: Tally,
    measured: Duration,
    cpu: CpuFigures,
}

impl TargetResult {
    fn requests_per_second(&self) -> f64 {
        self.tally.ok as f64 / self.measured.as_secs_f64().max(f64::EPSILON)
    }

    fn quantile_ms(&self, quantile: f64) -> Option<f64> {
        (self.tally.ok > 0).then(|| self.tally.latency_us.value_at_quantile(quantile) as f64 / 1000.0)
    }

    fn max_ms(&self) -> Option<f64> {
        (self.tally.ok > 0).then(|| self.tally.latency_us.max() as f64 / 1000.0)
    }
}

/// Runs every round over every endpoint and merges each target's rounds.
async fn measure_all(endpoints: &[Endpoint], shard: &ShardProcess, plan: &Plan) -> anyhow::Result<Vec<TargetResult>> {
    let mut results: Vec<TargetResult> = endpoints
        .iter()
        .map(|endpoint| TargetResult {
            target: endpoint.target,
            tally: Tally::new(),
            measured: Duration::ZERO,
            cpu: CpuFigures::default(),
        })
        .collect();
    let shard_pid = shard.pid().context("the shard is not running")?;
    for round in 1..=plan.rounds {
        for (endpoint, result) in endpoints.iter().zip(&mut results) {
            eprintln!("round {round}/{}: {}", plan.rounds, endpoint.target.label());
            let (tally, cpu) = measure(endpoint, shard_pid, plan).await?;
            let window_seconds = plan.window.as_secs_f64();
            // Other processes' CPU, per round: it tells which round a neighbour disturbed.
            let other =
                cpu.other_seconds.map_or_else(|| "?".to_string(), |s| format!("{:.0}", 100.0 * s / window_seconds));
            eprintln!(
                "  {} ok, {} failed, {:.0} req/s, p50 {:.2} ms, other processes {other}% CPU",
                tally.ok,
                tally.failed(),
                tally.ok as f64 / window_seconds,
                tally.latency_us.value_at_quantile(0.5) as f64 / 1000.0,
            );
            if tally.failed() > 0 {
                eprintln!("  log: {}", endpoint.log_path(shard).display());
            }
            result.tally.merge(tally);
            result.measured += plan.window;
            result.cpu.add(&cpu);
        }
    }
    Ok(results)
}

/// One warm-up plus one measured window against one endpoint.
async fn measure(endpoint: &Endpoint, shard_pid: u32, plan: &Plan) -> anyhow::Result<(Tally, CpuFigures)> {
    let started = Instant::now();
    let window = Window { measure_from: started + plan.warmup, end: started + plan.warmup + plan.window };
    let path: Arc<str> = configmap_path().into();
    let mut clients = JoinSet::new();
    for _ in 0..plan.connections {
        clients.spawn(drive_connection(endpoint.http.clone(), path.clone(), window));
    }
    tokio::time::sleep_until(window.measure_from.into()).await;
    let proxy_pids = endpoint.proxy_pids();
    let before = CpuSample::take(shard_pid, &proxy_pids);
    tokio::time::sleep_until(window.end.into()).await;
    let after = CpuSample::take(shard_pid, &proxy_pids);
    let mut tally = Tally::new();
    while let Some(joined) = clients.join_next().await {
        tally.merge(joined.context("join a client task")?);
    }
    Ok((tally, CpuFigures::between(&before, &after)))
}

/// When a client's requests start to count, and when it stops sending.
#[derive(Clone, Copy, Debug)]
struct Window {
    measure_from: Instant,
    end: Instant,
}

/// One client: a keep-alive connection, reopened when it fails, sending GETs back to
/// back until the window ends. Requests that start before `measure_from` are warm-up.
async fn drive_connection(http: TlsHttp, path: Arc<str>, window: Window) -> Tally {
    let mut tally = Tally::new();
    let mut connection: Option<TlsConnection> = None;
    loop {
        let now = Instant::now();
        if now >= window.end {
            break;
        }
        let measured = now >= window.measure_from;
        let open = match connection.as_mut() {
            Some(open) => open,
            None => match http.connect().await {
                Ok(open) => {
                    tally.connections_opened += 1;
                    connection.insert(open)
                }
                Err(error) => {
                    tally.fail(measured, Failure::Transport, format!("connect: {error:#}"));
                    tokio::time::sleep(RECONNECT_BACKOFF.min(window.end.saturating_duration_since(now))).await;
                    continue;
                }
            },
        };
        let started = Instant::now();
        let result = open.send(Method::GET, &path, &[], Bytes::new()).await;
        let latency = started.elapsed();
        let measured = started >= window.measure_from;
        match result {
            Ok(response) => {
                // A server that announces the end of the connection is obeyed, and the
                // reconnect shows in `connections_opened`.
                let closing = response
                    .headers
                    .get(http::header::CONNECTION)
                    .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"close"));
                if closing {
                    connection = None;
                }
                if response.status.is_success() {
                    tally.succeed(measured, latency);
                } else {
                    let sample = format!("HTTP {}: {}", response.status, truncate(&response.text()));
                    tally.fail(measured, Failure::Status(response.status), sample);
                }
            }
            Err(error) => {
                connection = None;
                tally.fail(measured, Failure::Transport, format!("{error:#}"));
            }
        }
    }
    tally
}

/// Why a request failed.
enum Failure {
    /// The server answered, with a status outside 2xx.
    Status(StatusCode),
    /// No answer: connect, TLS, HTTP or timeout failure.
    Transport,
}

/// What clients counted: successes with their latency, failures by kind, and samples.
struct Tally {
    latency_us: Histogram<u64>,
    ok: u64,
    /// Measured non-2xx answers by status code.
    rejected: BTreeMap<u16, u64>,
    /// Measured exchanges that got no answer.
    transport_errors: u64,
    /// Failures during the warm-up, reported but not part of the figures.
    warmup_failures: u64,
    connections_opened: u64,
    samples: Vec<String>,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            latency_us: Histogram::new_with_bounds(1, LATENCY_US_MAX, 3).expect("histogram bounds are valid"),
            ok: 0,
            rejected: BTreeMap::new(),
            transport_errors: 0,
            warmup_failures: 0,
            connections_opened: 0,
            samples: Vec::new(),
        }
    }

    fn succeed(&mut self, measured: bool, latency: Duration) {
        if measured {
            let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
            self.latency_us.saturating_record(micros.clamp(1, LATENCY_US_MAX));
            self.ok += 1;
        }
    }

    fn fail(&mut self, measured: bool, failure: Failure, sample: String) {
        if !measured {
            self.warmup_failures += 1;
        } else {
            match failure {
                Failure::Status(status) => *self.rejected.entry(status.as_u16()).or_default() += 1,
                Failure::Transport => self.transport_errors += 1,
            }
        }
        if self.samples.len() < ERROR_SAMPLES_MAX {
            let phase = if measured { "" } else { " (warm-up)" };
            self.samples.push(format!("{sample}{phase}"));
        }
    }

    fn failed(&self) -> u64 {
        self.rejected.values().sum::<u64>() + self.transport_errors
    }

    fn merge(&mut self, other: Tally) {
        self.latency_us.add(&other.latency_us).expect("histograms share their bounds");
        self.ok += other.ok;
        for (status, count) in other.rejected {
            *self.rejected.entry(status).or_default() += count;
        }
        self.transport_errors += other.transport_errors;
        self.warmup_failures += other.warmup_failures;
        self.connections_opened += other.connections_opened;
        let room = ERROR_SAMPLES_MAX.saturating_sub(self.samples.len());
        self.samples.extend(other.samples.into_iter().take(room));
    }
}

/// The first [`ERROR_BODY_CHARS_MAX`] characters of `text`, on one line.
fn truncate(text: &str) -> String {
    let one_line: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    match one_line.char_indices().nth(ERROR_BODY_CHARS_MAX) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// CPU time (user + system) of the processes involved, and of the whole machine, at
/// one instant, in clock ticks.
struct CpuSample {
    shard: Option<u64>,
    proxy: Option<u64>,
    bench: Option<u64>,
    machine: Option<u64>,
}

impl CpuSample {
    fn take(shard_pid: u32, proxy_pids: &[u32]) -> CpuSample {
        let proxy = (!proxy_pids.is_empty())
            .then(|| proxy_pids.iter().map(|pid| cpu_ticks(*pid)).sum::<Option<u64>>())
            .flatten();
        CpuSample {
            shard: cpu_ticks(shard_pid),
            proxy,
            bench: cpu_ticks(std::process::id()),
            machine: machine_busy_ticks(),
        }
    }
}

/// CPU seconds spent during measured windows, summed over rounds.
#[derive(Clone, Copy, Debug, Default)]
struct CpuFigures {
    shard_seconds: Option<f64>,
    proxy_seconds: Option<f64>,
    bench_seconds: Option<f64>,
    /// Everything else the machine did meanwhile: other people's processes, the
    /// kernel's interrupt work. Much of it means the figures are disturbed.
    other_seconds: Option<f64>,
}

impl CpuFigures {
    fn between(before: &CpuSample, after: &CpuSample) -> CpuFigures {
        let ticks_per_second = ::tests::process::clock_ticks_per_second();
        let seconds = |a: Option<u64>, b: Option<u64>| Some(b?.checked_sub(a?)? as f64 / ticks_per_second);
        let shard_seconds = seconds(before.shard, after.shard);
        let proxy_seconds = seconds(before.proxy, after.proxy);
        let bench_seconds = seconds(before.bench, after.bench);
        let ours =
            shard_seconds.unwrap_or_default() + proxy_seconds.unwrap_or_default() + bench_seconds.unwrap_or_default();
        let other_seconds = seconds(before.machine, after.machine).map(|machine| (machine - ours).max(0.0));
        CpuFigures { shard_seconds, proxy_seconds, bench_seconds, other_seconds }
    }

    fn add(&mut self, other: &CpuFigures) {
        let sum = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.shard_seconds = sum(self.shard_seconds, other.shard_seconds);
        self.proxy_seconds = sum(self.proxy_seconds, other.proxy_seconds);
        self.bench_seconds = sum(self.bench_seconds, other.bench_seconds);
        self.other_seconds = sum(self.other_seconds, other.other_seconds);
    }
}

/// utime + stime (fields 14 and 15 of `/proc/PID/stat`), counted after the command
/// name's closing parenthesis because the name may hold spaces.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after_name) = stat.rsplit_once(')')?;
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// Busy time of all CPUs together (the first line of `/proc/stat` minus idle and
/// iowait), in the same clock ticks as `/proc/PID/stat`.
fn machine_busy_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let ticks: Vec<u64> = line.split_whitespace().take(8).map(str::parse).collect::<Result<_, _>>().ok()?;
    let total: u64 = ticks.iter().sum();
    Some(total - ticks.get(3)? - ticks.get(4)?)
}

fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

fn print_summary(results: &[TargetResult], plan: &Plan) {
    println!();
    println!(
        "{:<12} {:>9} {:>8} {:>8} {:>9} {:>8} {:>7} {:>6} {:>7} {:>7} {:>7} {:>7} {:>12}",
        "target",
        "req/s",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "max ms",
        "failed",
        "conns",
        "shard%",
        "proxy%",
        "bench%",
        "other%",
        "proxy µs/req"
    );
    let ms = |value: Option<f64>| value.map_or_else(|| "n/a".to_string(), |v| format!("{v:.2}"));
    for result in results {
        let seconds = result.measured.as_secs_f64().max(f64::EPSILON);
        let percent = |cpu: Option<f64>| cpu.map_or_else(|| "-".to_string(), |s| format!("{:.0}", 100.0 * s / seconds));
        let per_request = match (result.cpu.proxy_seconds, result.tally.ok) {
            (Some(cpu), ok) if ok > 0 => format!("{:.1}", cpu * 1e6 / ok as f64),
            _ => "-".to_string(),
        };
        println!(
            "{:<12} {:>9.0} {:>8} {:>8} {:>9} {:>8} {:>7} {:>6} {:>7} {:>7} {:>7} {:>7} {:>12}",
            result.target.label(),
            result.requests_per_second(),
            ms(result.quantile_ms(0.50)),
            ms(result.quantile_ms(0.99)),
            ms(result.quantile_ms(0.999)),
            ms(result.max_ms()),
            result.tally.failed(),
            result.tally.connections_opened,
            percent(result.cpu.shard_seconds),
            percent(result.cpu.proxy_seconds),
            percent(result.cpu.bench_seconds),
            percent(result.cpu.other_seconds),
            per_request,
        );
    }
    println!(
        "(CPU % of one core during the measured windows, of {} cores; other% = the rest of the machine; \
         conns = connections opened, {} expected)",
        available_cores(),
        plan.connections * plan.rounds
    );
    print_failures(results);
    print_goals(results);
}

fn print_failures(results: &[TargetResult]) {
    for result in results {
        let tally = &result.tally;
        if tally.failed() == 0 && tally.warmup_failures == 0 {
            continue;
        }
        let mut line = format!("{}: {} failed", result.target.label(), tally.failed());
        for (status, count) in &tally.rejected {
            let _ = write!(line, ", {count} × HTTP {status}");
        }
        if tally.transport_errors > 0 {
            let _ = write!(line, ", {} without an answer", tally.transport_errors);
        }
        if tally.warmup_failures > 0 {
            let _ = write!(line, " (and {} during warm-up)", tally.warmup_failures);
        }
        println!("{line}");
        for sample in &tally.samples {
            println!("    {sample}");
        }
    }
}

fn print_goals(results: &[TargetResult]) {
    let find = |target: Target| results.iter().find(|result| result.target == target && result.tally.ok > 0);
    let (Some(direct), Some(proxy), Some(nginx)) = (find(Target::Direct), find(Target::Proxy), find(Target::Nginx))
    else {
        if let Some(direct) = find(Target::Direct) {
            for other in [Target::Proxy, Target::Nginx].into_iter().filter_map(find) {
                println!("{} adds {:+.2} ms to p50", other.target.label(), added_p50_ms(other, direct));
            }
        }
        println!("goals: not judged (they need direct, front-proxy and nginx, each with successful requests)");
        return;
    };
    let proxy_added = added_p50_ms(proxy, direct);
    let nginx_added = added_p50_ms(nginx, direct);
    println!();
    println!("added p50 over direct: front-proxy {proxy_added:+.2} ms, nginx {nginx_added:+.2} ms");
    let verdict = |met: bool| if met { "met" } else { "MISSED" };
    println!(
        "goal: front-proxy added p50 ≤ nginx's ({proxy_added:.2} vs {nginx_added:.2} ms): {}",
        verdict(proxy_added <= nginx_added)
    );
    let (proxy_rate, nginx_rate) = (proxy.requests_per_second(), nginx.requests_per_second());
    println!(
        "goal: front-proxy throughput ≥ nginx's ({proxy_rate:.0} vs {nginx_rate:.0} req/s): {}",
        verdict(proxy_rate >= nginx_rate)
    );
}

fn added_p50_ms(through: &TargetResult, direct: &TargetResult) -> f64 {
    through.quantile_ms(0.5).unwrap_or_default() - direct.quantile_ms(0.5).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_read_this_process_and_the_machine() {
        assert!(cpu_ticks(std::process::id()).is_some());
        assert!(machine_busy_ticks().is_some());
    }

    #[test]
    fn truncate_keeps_short_text_and_cuts_long_text_on_one_line() {
        assert_eq!(truncate("a\nb"), "a b");
        let long = "é".repeat(ERROR_BODY_CHARS_MAX + 10);
        assert_eq!(truncate(&long).chars().count(), ERROR_BODY_CHARS_MAX + 1);
    }

    #[test]
    fn tally_counts_only_measured_requests_in_the_figures() {
        let mut tally = Tally::new();
        tally.succeed(false, Duration::from_millis(1));
        tally.succeed(true, Duration::from_millis(2));
        tally.fail(true, Failure::Status(StatusCode::FORBIDDEN), "HTTP 403".to_string());
        tally.fail(false, Failure::Transport, "reset".to_string());
        let mut total = Tally::new();
        total.merge(tally);
        assert_eq!(total.ok, 1);
        assert_eq!(total.failed(), 1);
        assert_eq!(total.rejected.get(&403), Some(&1));
        assert_eq!(total.warmup_failures, 1);
        assert_eq!(total.samples.len(), 2);
    }
}
