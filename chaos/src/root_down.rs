//! Scenario 3, root down: the root shard is killed and stays down for the whole fault
//! phase (seconds in the short form, minutes in the long one), then comes back on the
//! same data dir. Root, shard-1 and shard-2 replicate to a regional cache under a parent
//! (the shards' informers watch the parent), behind a real front-proxy; every client
//! goes through the proxy. Before the outage a parent workspace is placed on shard-1 and
//! a provider workspace on shard-2, which exports `widgets.example.io`.
//!
//! While root is down:
//! - writers and watchers keep working on one logical cluster per shard (root's fail,
//!   shard-1's and shard-2's must not: availability per shard);
//! - a workspace storm creates and deletes Workspaces in the parent on shard-1, whose
//!   scheduler must place them on the live shards;
//! - a binder creates Workspaces of its own in the parent, waits until they are Ready,
//!   and in those on shard-1 (and in the parent itself) creates an APIBinding to the
//!   provider's export, which shard-1 can only know from the cache, and waits for Bound;
//! - halfway, the front-proxy is killed and restarted: with root's index unreachable it
//!   must still route the live shards' workspaces (paths only root could resolve get 503).
//!
//! Judged: the ledger, the watch validator, availability per shard (the root window),
//! the workspace checker over root's and the parent's Workspaces (each recorded with its
//! parent, the storm's acknowledged creates and deletes held to the parent's), and the
//! outage checker (every binding Bound after healing; the outage on record). What the
//! run must show (requests found root down, a workspace Ready and a binding Bound inside
//! the outage) is in the [`OutageRecord`] for the test to assert.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tests::apis::{binding_manifest, WIDGETS_SCHEMA_AND_EXPORT};
use tests::installation::{workspaces_path, Installation, InstallationOptions, ROOT_CLUSTER, ROOT_SHARD_NAME};
use tests::{CacheTopology, TlsHttp};

use crate::check::check_all;
use crate::history::{BindingRecord, FaultTarget, FaultWindow, OutageRecord, ScheduledWorkspace};
use crate::scenario::{self, Report, RunOptions, Workload};
use crate::storm;
use crate::workload::{Recorder, Target};

/// The scenario's name.
pub const NAME: &str = "root-down";

/// The export the provider workspace offers and the binder binds.
const EXPORT: &str = "widgets";

/// The longest calm before root is killed (drawn from the seed).
const CALM_MS_MAX: u64 = 2_000;

/// How long the export may take to get its identity, and a binding or a workspace to be
/// Ready after healing: bounds a bug, replication and binding take well under a second.
const SETTLE: Duration = Duration::from_secs(60);

/// How many workspaces the set-up may create in root to place the parent on shard-1 and
/// the provider on shard-2 (the ring spreads names evenly: a few suffice).
const PLACEMENT_MAX: usize = 40;

/// The binder's pause between two polls or attempts.
const POLL: Duration = Duration::from_millis(200);

/// Runs the scenario to its verdict.
pub async fn run(options: &RunOptions) -> anyhow::Result<Report> {
    let started = Instant::now();
    let calm_ms = StdRng::seed_from_u64(options.seed).gen_range(500..=CALM_MS_MAX);
    let outage_ms = options.fault_seconds * 1000;
    println!("scenario {} seed {}: root down at {calm_ms} ms for {outage_ms} ms", options.scenario, options.seed);
    let installation_options = InstallationOptions {
        extra_shards: 2,
        front_proxy: true,
        caches: Some(CacheTopology::chain()),
        ..Default::default()
    };
    let mut installation = Installation::start_with(installation_options).await.context("start the installation")?;
    let targets = crate::front_proxy::proxied_targets(&installation).await?;
    let layout = Layout::place(&installation).await?;
    let recorder = Recorder::new(options.seed, &options.scenario);
    let workload = Workload::spawn(&recorder, &targets, options);
    let stop = Arc::new(AtomicBool::new(false));
    let proxy = crate::front_proxy::client(installation.proxy())?;
    let churn =
        tokio::spawn(storm::storm_since(proxy.clone(), layout.parent.clone(), options.seed, stop.clone(), started));
    tokio::time::sleep(Duration::from_millis(calm_ms)).await;
    let mut outage = outage(&mut installation, &targets, &layout, &recorder, Duration::from_millis(outage_ms)).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::SeqCst);
    let tally = churn.await.context("join the workspace storm")?;
    println!("storm in {}: {} workspaces created, {} deleted", layout.parent, tally.created.len(), tally.deleted.len());
    let shards: Vec<_> = installation.all().collect();
    workload.finish(&recorder, &shards, &targets).await?;
    let mut history = recorder.snapshot();
    let shard_1 = installation.by_name("shard-1")?;
    storm::settle_in(&installation, &[(&installation.root, ROOT_CLUSTER), (shard_1, layout.parent.as_str())]).await;
    history.workspaces = storm::workspaces(&installation).await?;
    history.workspaces.extend(storm::workspaces_in(&installation, shard_1, &layout.parent).await?);
    history.workspace_operations = tally.operations;
    for shard in installation.all() {
        history.logical_clusters.extend(storm::logical_clusters(shard).await?);
    }
    final_phases(&proxy, &mut outage.bindings).await;
    history.outage = Some(outage);
    scenario::save(&history, options.history_file.as_deref())?;
    let violations = check_all(&history);
    Ok(Report { history, violations, elapsed: started.elapsed() })
}

/// Where the set-up put the parent and the provider.
struct Layout {
    /// The parent workspace's path (on shard-1).
    parent: String,
    /// The provider workspace's path (on shard-2), which exports [`EXPORT`].
    provider: String,
    /// Every shard's name and base URL, to tell where a Workspace's `spec.URL` points.
    shards: Vec<(String, String)>,
}

impl Layout {
    /// Creates workspaces in root until one is on shard-1 (the parent) and one on shard-2
    /// (the provider), and puts the export in the provider.
    async fn place(installation: &Installation) -> anyhow::Result<Layout> {
        let placement = installation
            .place_workspaces("rd", PLACEMENT_MAX, |p| p.contains_key("shard-1") && p.contains_key("shard-2"))
            .await?;
        let path = |shard: &str| format!("{ROOT_CLUSTER}:{}", placement[shard][0]);
        let (parent, provider) = (path("shard-1"), path("shard-2"));
        let proxy = installation.proxy();
        for workspace in [&parent, &provider] {
            proxy.wait_resolves(workspace).await?;
        }
        let output = proxy.kubectl().cluster(&provider).args(["apply", "-f", "-"]).stdin(WIDGETS_SCHEMA_AND_EXPORT);
        let output = output.run_async().await;
        anyhow::ensure!(output.success(), "apply the export in {provider}: {}", output.stderr);
        let export = format!("/clusters/{provider}/apis/apis.kcp.io/v1alpha1/apiexports/{EXPORT}");
        let identity = |export: &Value| export.pointer("/status/identityHash").and_then(Value::as_str).is_some();
        wait_for(&proxy.http(), &export, SETTLE, identity).await.context("the export's identity")?;
        let shards = installation.all().map(|s| (s.name().to_string(), s.base_url().to_string())).collect();
        println!("parent {parent} on shard-1, provider {provider} on shard-2");
        Ok(Layout { parent, provider, shards })
    }
}

/// The shard of `shards` (name, base URL) that a Workspace's `spec.URL` points at.
fn shard_of(shards: &[(String, String)], url: &str) -> Option<String> {
    shards.iter().find(|(_, base)| url.starts_with(&format!("{base}/"))).map(|(name, _)| name.clone())
}

/// Kills root, keeps it down for `hold` while the binder works and the front-proxy is
/// restarted once, then restarts root; returns the record of it all.
async fn outage(
    installation: &mut Installation,
    targets: &[Target],
    layout: &Layout,
    recorder: &Recorder,
    hold: Duration,
) -> anyhow::Result<OutageRecord> {
    let from_ms = recorder.now_ms();
    let start = Instant::now();
    recorder.fault(format!("shard {ROOT_SHARD_NAME}: kill -9, down for {} ms", hold.as_millis()));
    installation.root.kill9();
    let mut record = OutageRecord { shard: ROOT_SHARD_NAME.to_string(), from_ms, ..OutageRecord::default() };
    probe_down(installation, recorder, &mut record).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let binder = Binder {
        http: crate::front_proxy::client(installation.proxy())?,
        recorder: recorder.clone(),
        stop: stop.clone(),
        parent: layout.parent.clone(),
        provider: layout.provider.clone(),
        shards: layout.shards.clone(),
    };
    let binder = tokio::spawn(binder.run());
    tokio::time::sleep_until((start + hold / 2).into()).await;
    restart_proxy(installation, targets, layout, recorder).await?;
    tokio::time::sleep_until((start + hold).into()).await;
    probe_down(installation, recorder, &mut record).await?;
    stop.store(true, Ordering::SeqCst);
    (record.scheduled, record.bindings) = binder.await.context("join the binder")?;
    installation.root.restart().await.context("restart root after its outage")?;
    // Clients reach root through the proxy: its outage ends when the proxy routes there
    // again (root's index feed reconnects with a back-off of up to 2 s).
    for target in targets.iter().filter(|t| t.shard == ROOT_SHARD_NAME) {
        installation.proxy().wait_resolves(&target.cluster).await?;
    }
    record.to_ms = recorder.now_ms();
    recorder.fault(format!("shard {ROOT_SHARD_NAME}: restarted"));
    let target = FaultTarget::Shard(ROOT_SHARD_NAME.to_string());
    recorder.window(FaultWindow { target, what: "kill -9".to_string(), from_ms, to_ms: record.to_ms });
    Ok(record)
}

/// Asks root directly for `/healthz`; records the time if nothing answered (it must not).
async fn probe_down(installation: &Installation, recorder: &Recorder, record: &mut OutageRecord) -> anyhow::Result<()> {
    let answer = installation.root.http().with_timeout(Duration::from_secs(2)).get("/healthz").await;
    if let Ok(response) = answer {
        anyhow::bail!("root answered {} while it should be down", response.status);
    }
    record.down_probes_ms.push(recorder.now_ms());
    Ok(())
}

/// `kill -9` of the front-proxy and a restart on the same port while root is down: it
/// cannot read root's shard list nor root's index, and must route the live shards'
/// workspaces from its remembered shard set.
async fn restart_proxy(
    installation: &mut Installation,
    targets: &[Target],
    layout: &Layout,
    recorder: &Recorder,
) -> anyhow::Result<()> {
    let from_ms = recorder.now_ms();
    recorder.fault("front-proxy: kill -9 while root is down, restarted at once".to_string());
    installation.proxy_mut().kill9();
    installation.proxy_mut().restart_serving(&[]).await.context("restart the front-proxy while root is down")?;
    let live = targets.iter().filter(|t| t.shard != ROOT_SHARD_NAME).map(|t| t.cluster.as_str());
    for path in live.chain([layout.parent.as_str(), layout.provider.as_str()]) {
        installation.proxy().wait_resolves(path).await?;
    }
    recorder.fault("front-proxy: restarted, routes the live shards' workspaces".to_string());
    let to_ms = recorder.now_ms();
    recorder.window(FaultWindow { target: FaultTarget::FrontProxy, what: "kill -9".to_string(), from_ms, to_ms });
    Ok(())
}

/// Creates workspaces in the parent while root is down and binds the provider's export
/// in those that land on shard-1.
struct Binder {
    http: TlsHttp,
    recorder: Recorder,
    stop: Arc<AtomicBool>,
    parent: String,
    provider: String,
    shards: Vec<(String, String)>,
}

impl Binder {
    /// Works until told to stop; returns the workspaces it saw Ready and its bindings.
    async fn run(self) -> (Vec<ScheduledWorkspace>, Vec<BindingRecord>) {
        let mut scheduled = Vec::new();
        let mut bindings = Vec::new();
        // The parent itself lives on shard-1.
        if let Some(binding) = self.bind(&self.parent, "shard-1").await {
            bindings.push(binding);
        }
        for index in 0.. {
            if self.stopped() {
                break;
            }
            let name = format!("bind-{index}");
            let Some(ready) = self.workspace_ready(&name).await else { continue };
            let (path, shard) = (ready.path.clone(), ready.shard.clone());
            scheduled.push(ready);
            if shard == "shard-1" {
                if let Some(binding) = self.bind(&path, &shard).await {
                    bindings.push(binding);
                }
            }
        }
        (scheduled, bindings)
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Creates Workspace `name` in the parent and waits until it is Ready (or the stop).
    async fn workspace_ready(&self, name: &str) -> Option<ScheduledWorkspace> {
        let collection = workspaces_path(&self.parent);
        let body = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name}});
        self.until_ok(|| self.http.post_json(&collection, &body), |status| status == 409).await?;
        let path = format!("{collection}/{name}");
        loop {
            if let Ok(response) = self.http.get(&path).await {
                let object = response.json().unwrap_or(Value::Null);
                let url = object.pointer("/spec/URL").and_then(Value::as_str);
                if object.pointer("/status/phase").and_then(Value::as_str) == Some("Ready") {
                    let shard = url.and_then(|url| shard_of(&self.shards, url)).unwrap_or_default();
                    let ready_ms = self.recorder.now_ms();
                    let path = format!("{}:{name}", self.parent);
                    println!("[{ready_ms:>6} ms] {path} Ready on {shard} while root is down");
                    return Some(ScheduledWorkspace { path, shard, ready_ms });
                }
            }
            if self.stopped() {
                return None;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Creates the APIBinding in `workspace` and waits until it is Bound (or the stop).
    async fn bind(&self, workspace: &str, shard: &str) -> Option<BindingRecord> {
        let collection = format!("/clusters/{workspace}/apis/apis.kcp.io/v1alpha1/apibindings");
        let body: Value = serde_json::from_str(&binding_manifest(EXPORT, &self.provider, EXPORT)).ok()?;
        self.until_ok(|| self.http.post_json(&collection, &body), |status| status == 409).await?;
        let mut record = BindingRecord {
            workspace: workspace.to_string(),
            shard: shard.to_string(),
            export: format!("{}:{EXPORT}", self.provider),
            created_ms: self.recorder.now_ms(),
            bound_ms: None,
            final_phase: String::new(),
        };
        let path = format!("{collection}/{EXPORT}");
        while !self.stopped() {
            let phase = self.http.get(&path).await.ok().and_then(|r| r.json().ok()).map(|o| phase(&o));
            if phase.as_deref() == Some("Bound") {
                let bound_ms = self.recorder.now_ms();
                println!("[{bound_ms:>6} ms] APIBinding {EXPORT} in {workspace} Bound while root is down");
                record.bound_ms = Some(bound_ms);
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        Some(record)
    }

    /// Repeats `request` until it answers 2xx (or a status `also_fine` accepts), or the
    /// stop; `None` on the stop. Failures are expected while the proxy restarts.
    async fn until_ok<F, R>(&self, request: F, also_fine: impl Fn(u16) -> bool) -> Option<()>
    where
        F: Fn() -> R,
        R: std::future::Future<Output = anyhow::Result<tests::HttpResponse>>,
    {
        while !self.stopped() {
            match request().await {
                Ok(response) if response.status.is_success() || also_fine(response.status.as_u16()) => return Some(()),
                _ => tokio::time::sleep(POLL).await,
            }
        }
        None
    }
}

/// An object's `status.phase`, or empty.
fn phase(object: &Value) -> String {
    object.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Reads every binding's phase after healing, waiting (at most [`SETTLE`]) until all are
/// Bound; the checker judges whatever they reached.
async fn final_phases(proxy: &TlsHttp, bindings: &mut [BindingRecord]) {
    let deadline = Instant::now() + SETTLE;
    loop {
        let mut phases = BTreeMap::new();
        for binding in bindings.iter() {
            let path = format!("/clusters/{}/apis/apis.kcp.io/v1alpha1/apibindings/{EXPORT}", binding.workspace);
            let read = proxy.get(&path).await.ok().filter(|r| r.status.is_success()).and_then(|r| r.json().ok());
            phases.insert(binding.workspace.clone(), read.map(|o| phase(&o)).unwrap_or_default());
        }
        for binding in bindings.iter_mut() {
            binding.final_phase = phases.remove(&binding.workspace).unwrap_or_default();
        }
        if bindings.iter().all(|b| b.final_phase == "Bound") || Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Polls `GET path` until `accept` takes the object, at most `within`.
async fn wait_for(http: &TlsHttp, path: &str, within: Duration, accept: impl Fn(&Value) -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let last = match http.get(path).await {
            Ok(response) if response.status.is_success() => {
                let object = response.json()?;
                if accept(&object) {
                    return Ok(());
                }
                object.to_string()
            }
            Ok(response) => format!("HTTP {}: {}", response.status, response.text()),
            Err(error) => format!("{error:#}"),
        };
        anyhow::ensure!(Instant::now() < deadline, "{path} not as wanted within {within:?}; last: {last}");
        tokio::time::sleep(POLL).await;
    }
}
