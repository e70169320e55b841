//! Scenario 5, the front-proxy: every client goes through a real `atoll-front-proxy` in
//! front of root and shard-1. Writers and watchers work on one logical cluster per shard,
//! and a storm creates and deletes Workspaces in root, while the seed's schedule takes
//! turns between two faults:
//!
//! - the front-proxy is killed with `kill -9` in the middle of the clients' watches and
//!   restarted on the same port and data dir after the hold (its window lasts until it
//!   routes every workload cluster again);
//! - a shard is frozen with SIGSTOP while the proxy holds connections to it (the watch
//!   streams it relays), then thawed with SIGCONT.
//!
//! After healing, the collections are read directly from the shards, the Workspaces
//! settle, and every Workspace the storm touched is probed through the proxy. Judged:
//! the ledger and watch validator (over what the clients saw through the proxy),
//! availability per shard (the healthy shard during the other's freeze), the workspace
//! checker (with the storm's acknowledged creates and deletes), and the index convergence
//! checker.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;
use tests::front_proxy::FrontProxyProcess;
use tests::installation::{Installation, InstallationOptions, ROOT_CLUSTER};
use tests::TlsHttp;

use crate::check::{self, check_all};
use crate::history::{FaultTarget, FaultWindow, History, IndexRecord, PathProbe};
use crate::scenario::{self, Report, RunOptions, Workload};
use crate::schedule::{self, Action, Step};
use crate::storm::{self, Tally};
use crate::workload::{Recorder, Target};

/// The scenario's name.
pub const NAME: &str = "front-proxy";

/// A client's patience with one request through the proxy.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the proxy may take, after the Workspaces settled, to route exactly the live
/// ones: the index feed is a stream, so seconds mean a bug.
const INDEX_SETTLE: Duration = Duration::from_secs(20);

/// The gauge of logical clusters in the proxy's routing index.
const INDEXED_GAUGE: &str = "atoll_front_proxy_indexed_logical_clusters";

/// Runs the scenario to its verdict.
pub async fn run(options: &RunOptions) -> anyhow::Result<Report> {
    let started = Instant::now();
    let steps =
        schedule::draw_alternating(options.seed, options.fault_seconds * 1000, 2, &[Action::ProxyKill9, Action::Pause]);
    println!("scenario {} seed {}: {} faults scheduled", options.scenario, options.seed, steps.len());
    for step in &steps {
        println!("  at {:>6} ms for {:>5} ms: shard #{} {:?}", step.at_ms, step.hold_ms, step.target, step.action);
    }
    let installation_options = InstallationOptions { extra_shards: 1, front_proxy: true, ..Default::default() };
    let mut installation = Installation::start_with(installation_options).await.context("start the installation")?;
    let targets = proxied_targets(&installation).await?;
    let recorder = Recorder::new(options.seed, &options.scenario);
    let workload = Workload::spawn(&recorder, &targets, options);
    let stop = Arc::new(AtomicBool::new(false));
    let churn = tokio::spawn(storm::storm_since(
        client(installation.proxy())?,
        "root".to_string(),
        options.seed,
        stop.clone(),
        started,
    ));
    inject(&mut installation, &targets, &steps, &recorder).await?;
    // Let the workload run a little on the healed installation, then stop it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let tally = storm::stop_proxied(&stop, churn).await?;
    let shards: Vec<_> = installation.all().collect();
    workload.finish(&recorder, &shards, &targets).await?;
    let mut history = recorder.snapshot();
    storm::settle(&installation).await;
    history.workspaces = storm::workspaces(&installation).await?;
    history.workspace_operations = tally.operations.clone();
    for shard in installation.all() {
        history.logical_clusters.extend(storm::logical_clusters(shard).await?);
    }
    history.index = Some(converged_index(&installation, &tally, &history).await?);
    scenario::save(&history, options.history_file.as_deref())?;
    let violations = check_all(&history);
    Ok(Report { history, violations, elapsed: started.elapsed() })
}

/// One logical cluster `chaos-<n>` prepared on each shard, as the workload reaches it:
/// through the front-proxy, which must already resolve it.
pub(crate) async fn proxied_targets(installation: &Installation) -> anyhow::Result<Vec<Target>> {
    let mut targets = Vec::new();
    for (index, shard) in installation.all().enumerate() {
        let cluster = format!("chaos-{index}");
        scenario::prepare(shard, &cluster).await?;
        installation.proxy().wait_resolves(&cluster).await?;
        targets.push(Target { shard: shard.name().to_string(), cluster, http: client(installation.proxy())? });
    }
    Ok(targets)
}

/// A client of the proxy as admin, patient for [`REQUEST_TIMEOUT`]. It keeps working
/// across restarts: the proxy comes back on the same port with a certificate from the
/// same CA.
pub(crate) fn client(proxy: &FrontProxyProcess) -> anyhow::Result<TlsHttp> {
    let admin = proxy.admin();
    Ok(TlsHttp::new(proxy.base_url(), &admin.ca_pem, Some(&admin.identity))?.with_timeout(REQUEST_TIMEOUT))
}

/// Injects every step at its offset, holds it and lifts it, recording each window.
async fn inject(
    installation: &mut Installation,
    targets: &[Target],
    steps: &[Step],
    recorder: &Recorder,
) -> anyhow::Result<()> {
    let phase_start = Instant::now();
    for step in steps {
        tokio::time::sleep_until((phase_start + Duration::from_millis(step.at_ms)).into()).await;
        let hold = Duration::from_millis(step.hold_ms);
        let from_ms = recorder.now_ms();
        let (target, what) = match step.action {
            Action::ProxyKill9 => {
                recorder.fault(format!("front-proxy: kill -9, restart after {} ms", step.hold_ms));
                installation.proxy_mut().kill9();
                tokio::time::sleep(hold).await;
                installation.proxy_mut().restart().await.context("restart the front-proxy after kill -9")?;
                for target in targets {
                    installation.proxy().wait_resolves(&target.cluster).await?;
                }
                recorder.fault("front-proxy: restarted, routes every workload cluster".to_string());
                (FaultTarget::FrontProxy, "kill -9")
            }
            Action::Pause => {
                let shard = installation.all().nth(step.target).context("a step for a shard that does not exist")?;
                let (name, pid) = (shard.name().to_string(), shard.pid().context("the shard is not running")?);
                recorder.fault(format!("shard {name}: SIGSTOP for {} ms", step.hold_ms));
                crate::injector::pause(pid)?;
                tokio::time::sleep(hold).await;
                crate::injector::resume(pid)?;
                recorder.fault(format!("shard {name}: SIGCONT"));
                (FaultTarget::Shard(name), "SIGSTOP")
            }
            other => anyhow::bail!("the front-proxy scenario does not inject {other:?}"),
        };
        recorder.window(FaultWindow { target, what: what.to_string(), from_ms, to_ms: recorder.now_ms() });
    }
    Ok(())
}

/// Probes, until they agree with the index checker or [`INDEX_SETTLE`] is over, every
/// Workspace the parent holds or the storm deleted, and returns the last probe: the
/// checker judges whatever the proxy converged to.
async fn converged_index(installation: &Installation, tally: &Tally, history: &History) -> anyhow::Result<IndexRecord> {
    let shards: Vec<TlsHttp> = installation.all().map(|shard| shard.http()).collect();
    converged_index_via(&client(installation.proxy())?, &shards, tally, history).await
}

/// [`converged_index`] through `proxy`, with the logical clusters counted on `shards`
/// (clients reaching every shard directly).
pub(crate) async fn converged_index_via(
    proxy: &TlsHttp,
    shards: &[TlsHttp],
    tally: &Tally,
    history: &History,
) -> anyhow::Result<IndexRecord> {
    let deadline = Instant::now() + INDEX_SETTLE;
    let mut names: Vec<&str> = history.workspaces.iter().map(|w| w.name.as_str()).collect();
    names.extend(tally.deleted.iter().map(String::as_str));
    names.sort_unstable();
    names.dedup();
    loop {
        let mut record = IndexRecord {
            parent: ROOT_CLUSTER.to_string(),
            deleted: tally.deleted.clone(),
            probes: Vec::with_capacity(names.len()),
            indexed_clusters: indexed_clusters(proxy).await,
            stored_clusters: 0,
        };
        for name in &names {
            record.probes.push(probe(proxy, name).await);
        }
        for shard in shards {
            record.stored_clusters += storm::items(shard, storm::LOGICAL_CLUSTERS).await?.len() as u64;
        }
        let judged = History { workspaces: history.workspaces.clone(), index: Some(record), ..History::default() };
        if check::index::check(&judged).is_empty() || Instant::now() >= deadline {
            return judged.index.context("the record just built");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Where `root:<workspace>` leads through the proxy.
async fn probe(proxy: &TlsHttp, workspace: &str) -> PathProbe {
    let path = format!("/clusters/{ROOT_CLUSTER}:{workspace}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster");
    let mut probe = PathProbe { workspace: workspace.to_string(), status: 0, cluster: None, owner_uid: None };
    let Ok(response) = proxy.get(&path).await else { return probe };
    probe.status = response.status.as_u16();
    if response.status.is_success() {
        let object = response.json().unwrap_or(Value::Null);
        let text = |pointer| Some(storm::text(&object, pointer)).filter(|t| !t.is_empty());
        probe.cluster = text("/metadata/annotations/kcp.io~1cluster");
        probe.owner_uid = text("/spec/owner/uid");
    }
    probe
}

/// The proxy's [`INDEXED_GAUGE`], if it answers.
async fn indexed_clusters(proxy: &TlsHttp) -> Option<u64> {
    let response = proxy.get("/metrics").await.ok().filter(|r| r.status.is_success())?;
    let text = response.text();
    text.lines().find_map(|line| line.strip_prefix(INDEXED_GAUGE)?.strip_prefix(' ')?.trim().parse().ok())
}
