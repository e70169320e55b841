//! The workspace storm: Workspaces created and deleted in root (hosted by the root shard)
//! while shard-1, where about half of their logical clusters land, is killed and
//! restarted from the seed's schedule. After healing and a bounded wait for scheduling
//! and deletions to settle, every Workspace of root and every LogicalCluster of every
//! shard is recorded with the storm's creates and deletes and their answers, and the
//! workspace checker judges them.

use std::time::{Duration, Instant};

use anyhow::Context;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use tests::installation::{workspaces_path, Installation};

use crate::check::check_all;
use crate::history::{
    FaultRecord, History, LogicalClusterRecord, OperationKind, Outcome, WorkspaceOperation, WorkspaceRecord,
};
use crate::scenario::{Report, RunOptions};
use crate::schedule::{self, Mix};

/// The pause between two storm operations: bounds the load on two cores.
const OPERATION_INTERVAL: Duration = Duration::from_millis(150);

/// How long scheduling and deletions may take to settle after the faults stop.
const SETTLE: Duration = Duration::from_secs(60);

/// Runs the storm to its verdict.
pub async fn run(options: &RunOptions) -> anyhow::Result<Report> {
    let started = Instant::now();
    let mix = Mix { network: false, kill: true, pause: false, disk_full: false };
    // One target: shard-1 (root hosts the parent and must answer the storm's requests).
    let steps = schedule::draw(options.seed, options.fault_seconds * 1000, 1, mix);
    println!("scenario {} seed {}: {} faults scheduled", options.scenario, options.seed, steps.len());
    let mut installation = Installation::start(1).await.context("start the installation")?;
    let mut history = History { seed: options.seed, scenario: options.scenario.clone(), ..History::default() };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let storm =
        tokio::spawn(storm_since(installation.root.http(), "root".to_string(), options.seed, stop.clone(), started));
    let phase_start = Instant::now();
    for step in &steps {
        tokio::time::sleep_until((phase_start + Duration::from_millis(step.at_ms)).into()).await;
        let shard = &mut installation.shards[0];
        let at_ms = started.elapsed().as_millis() as u64;
        history
            .faults
            .push(FaultRecord { at_ms, what: format!("shard-1: kill -9, restart after {} ms", step.hold_ms) });
        println!("[{at_ms:>6} ms] fault: shard-1: kill -9 for {} ms", step.hold_ms);
        shard.kill9();
        tokio::time::sleep(Duration::from_millis(step.hold_ms)).await;
        shard.restart().await.context("restart shard-1 after kill -9")?;
    }
    tokio::time::sleep_until((phase_start + Duration::from_secs(options.fault_seconds)).into()).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let tally = storm.await.context("join the storm")?;
    let (created, deleted) = (tally.created.len(), tally.deleted.len());
    println!("storm: {created} workspaces created, {deleted} deleted");
    history.workspace_operations = tally.operations;
    settle(&installation).await;
    history.workspaces = workspaces(&installation).await?;
    for shard in installation.all() {
        history.logical_clusters.extend(logical_clusters(shard).await?);
    }
    anyhow::ensure!(created > 0 && deleted > 0, "the storm created {created} and deleted {deleted} workspaces");
    let violations = check_all(&history);
    Ok(Report { history, violations, elapsed: started.elapsed() })
}

/// The Workspaces a storm was told it created and deleted, by name.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tally {
    /// Acknowledged creates.
    pub created: Vec<String>,
    /// Acknowledged deletes.
    pub deleted: Vec<String>,
    /// Every create and delete issued, with its outcome, in order.
    pub operations: Vec<WorkspaceOperation>,
}

/// Creates and deletes Workspaces in the workspace at path `parent` (through `root`: the
/// root shard, or a front-proxy, which reaches it) until told to stop; returns the creates
/// and deletes acknowledged and every operation with its outcome, its times counted from
/// `started` (the run's start). Failures (a shard or the proxy down) are expected: the
/// workspace checker holds the end state only to the acknowledged answers.
pub(crate) async fn storm_since(
    root: tests::TlsHttp,
    parent: String,
    seed: u64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    started: Instant,
) -> Tally {
    let now_ms = || started.elapsed().as_millis() as u64;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut tally = Tally::default();
    let mut live: Vec<String> = Vec::new();
    let mut next = 0;
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        if live.is_empty() || rng.gen_bool(0.75) {
            let name = format!("storm-{next}");
            next += 1;
            let body = serde_json::json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": name}});
            let invoke_ms = now_ms();
            let answer = root.post_json(&workspaces_path(&parent), &body).await;
            let (outcome, uid) = outcome(answer);
            let created = matches!(outcome, Outcome::Ok { .. });
            tally.operations.push(WorkspaceOperation {
                parent: parent.clone(),
                name: name.clone(),
                kind: OperationKind::Create,
                uid,
                invoke_ms,
                complete_ms: now_ms(),
                outcome,
            });
            if created {
                tally.created.push(name.clone());
                live.push(name);
            }
        } else {
            let name = live.swap_remove(rng.gen_range(0..live.len()));
            let path = format!("{}/{name}", workspaces_path(&parent));
            let invoke_ms = now_ms();
            let answer = root.send(http::Method::DELETE, &path, &[], bytes::Bytes::new()).await;
            let (outcome, _) = outcome(answer);
            let deleted = matches!(outcome, Outcome::Ok { .. });
            tally.operations.push(WorkspaceOperation {
                parent: parent.clone(),
                name: name.clone(),
                kind: OperationKind::Delete,
                uid: None,
                invoke_ms,
                complete_ms: now_ms(),
                outcome,
            });
            if deleted {
                tally.deleted.push(name);
            } else {
                live.push(name);
            }
        }
        tokio::time::sleep(OPERATION_INTERVAL).await;
    }
    tally
}

/// Tells the storm behind `churn` to stop, waits for it, and prints what it did through
/// the front-proxy.
pub(crate) async fn stop_proxied(
    stop: &std::sync::atomic::AtomicBool,
    churn: tokio::task::JoinHandle<Tally>,
) -> anyhow::Result<Tally> {
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let tally = churn.await.context("join the workspace storm")?;
    println!(
        "storm through the front-proxy: {} workspaces created, {} deleted",
        tally.created.len(),
        tally.deleted.len()
    );
    Ok(tally)
}

/// What a storm's request was told, and the UID a 2xx answer names: 2xx is
/// acknowledged, another 4xx a definite refusal, anything else unknown.
fn outcome(answer: anyhow::Result<tests::HttpResponse>) -> (Outcome, Option<String>) {
    let response = match answer {
        Ok(response) => response,
        Err(e) => return (Outcome::Unknown { reason: format!("{e:#}") }, None),
    };
    let status = response.status;
    if status.is_success() {
        let object = response.json().unwrap_or_default();
        let rv = text(&object, "/metadata/resourceVersion").parse().unwrap_or_default();
        let uid = Some(text(&object, "/metadata/uid")).filter(|uid| !uid.is_empty());
        (Outcome::Ok { rv, value: None }, uid)
    } else if status.is_client_error() {
        (Outcome::Fail { status: status.as_u16() }, None)
    } else {
        (Outcome::Unknown { reason: format!("HTTP {}", status.as_u16()) }, None)
    }
}

/// Waits (at most [`SETTLE`]) until no Workspace of root is scheduling, initializing or
/// being deleted; the checker then judges whatever state it reached.
pub(crate) async fn settle(installation: &Installation) {
    settle_in(installation, &[(&installation.root, "root")]).await;
}

/// [`settle`] for the Workspaces of every `(shard, parent path)` in `parents`: each
/// parent is read from the shard that hosts it.
pub(crate) async fn settle_in(installation: &Installation, parents: &[(&tests::ShardProcess, &str)]) {
    settle_until(|| async {
        let mut settled = true;
        for (shard, parent) in parents {
            let all = workspaces_in(installation, shard, parent).await;
            settled &= all.is_ok_and(|all| settled_all(&all));
        }
        settled
    })
    .await;
}

/// Whether every Workspace of `all` is Ready and none is being deleted.
pub(crate) fn settled_all(all: &[WorkspaceRecord]) -> bool {
    all.iter().all(|w| w.phase == "Ready" && !w.deleting)
}

/// Polls `settled` until it says yes or [`SETTLE`] is over.
pub(crate) async fn settle_until<F, Fut>(mut settled: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + SETTLE;
    while Instant::now() < deadline {
        if settled().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Every Workspace of root, read from the root shard.
pub(crate) async fn workspaces(installation: &Installation) -> anyhow::Result<Vec<WorkspaceRecord>> {
    workspaces_in(installation, &installation.root, "root").await
}

/// Every Workspace of the workspace at path `parent`, read from `shard`, which hosts it.
pub(crate) async fn workspaces_in(
    installation: &Installation,
    shard: &tests::ShardProcess,
    parent: &str,
) -> anyhow::Result<Vec<WorkspaceRecord>> {
    workspace_records(&shard.http(), parent, |w| {
        let url = w.pointer("/spec/URL").and_then(Value::as_str)?;
        installation.shard_for_url(url).ok().map(|s| s.name().to_string())
    })
    .await
}

/// Every Workspace of the workspace at path `parent`, read through `http`; `shard_of`
/// names the shard a Workspace's logical cluster is on.
pub(crate) async fn workspace_records(
    http: &tests::TlsHttp,
    parent: &str,
    shard_of: impl Fn(&Value) -> Option<String>,
) -> anyhow::Result<Vec<WorkspaceRecord>> {
    let list = items(http, &workspaces_path(parent)).await?;
    Ok(list
        .iter()
        .map(|w| WorkspaceRecord {
            parent: parent.to_string(),
            name: text(w, "/metadata/name"),
            uid: text(w, "/metadata/uid"),
            phase: text(w, "/status/phase"),
            cluster: w.pointer("/spec/cluster").and_then(Value::as_str).map(str::to_string),
            shard: shard_of(w),
            deleting: w.pointer("/metadata/deletionTimestamp").is_some_and(Value::is_string),
        })
        .collect())
}

/// The path of every LogicalCluster of a shard (a wildcard list, served by the shard
/// itself only).
pub(crate) const LOGICAL_CLUSTERS: &str = "/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters";

/// The LogicalClusters `shard` holds that a Workspace owns.
pub(crate) async fn logical_clusters(shard: &tests::ShardProcess) -> anyhow::Result<Vec<LogicalClusterRecord>> {
    logical_clusters_from(&shard.http(), shard.name()).await
}

/// The LogicalClusters that a Workspace owns on the shard named `shard`, read through
/// `http`, which reaches it directly.
pub(crate) async fn logical_clusters_from(
    http: &tests::TlsHttp,
    shard: &str,
) -> anyhow::Result<Vec<LogicalClusterRecord>> {
    let list = items(http, LOGICAL_CLUSTERS).await?;
    Ok(list
        .iter()
        .filter(|lc| lc.pointer("/spec/owner/resource").and_then(Value::as_str) == Some("workspaces"))
        .map(|lc| LogicalClusterRecord {
            shard: shard.to_string(),
            name: text(lc, "/metadata/annotations/kcp.io~1cluster"),
            owner_name: text(lc, "/spec/owner/name"),
            owner_uid: text(lc, "/spec/owner/uid"),
        })
        .collect())
}

/// The items of the list at `path`, failing on anything but a 2xx.
pub(crate) async fn items(http: &tests::TlsHttp, path: &str) -> anyhow::Result<Vec<Value>> {
    let response = http.get(path).await.with_context(|| format!("list {path}"))?;
    anyhow::ensure!(response.status.is_success(), "list {path}: HTTP {}: {}", response.status, response.text());
    let list = response.json()?;
    Ok(list["items"].as_array().cloned().unwrap_or_default())
}

/// The string at `pointer` in `value`, or empty.
pub(crate) fn text(value: &Value, pointer: &str) -> String {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string()
}
