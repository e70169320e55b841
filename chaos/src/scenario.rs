//! A scenario run: start an installation (root shard and one more), put a fault proxy in
//! front of each shard, run writers and watchers through the proxies, inject the seeded
//! schedule, heal, read the final state directly from each shard, and judge the history.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use tests::installation::Installation;
use tests::{ShardProcess, TlsHttp};

use crate::check::{check_all, Violation};
use crate::disk::{SmallDisk, STORE_DISK_MB};
use crate::history::{DiskFullSpell, FinalState, History};
use crate::netproxy::{FaultProxy, NetFault};
use crate::schedule::{self, Action, Mix, Step};
use crate::workload::{self, Recorder, Target, NAMESPACE};

/// The scenarios, by name.
pub const SCENARIOS: &[(&str, &str)] = &[
    ("shard-kill", "kill -9 and restart shards under write and watch load"),
    ("network", "cut, blackhole, drop and delay the clients' connections to the shards"),
    ("pause", "SIGSTOP / SIGCONT shards while clients hold connections to them"),
    ("mixed", "all of the above, drawn from the seed"),
    ("disk-full", "fill the disk under a shard's store while clients write, then free it"),
    ("workspace-storm", "create and delete Workspaces while the shard hosting half their clusters is killed"),
    ("front-proxy", "kill -9 the front-proxy mid-watch and SIGSTOP shards behind it; availability per shard, index convergence"),
    ("cache-hierarchy", "kill -9 and SIGSTOP the regional cache, its parent and a shard while replicated objects change; cache convergence"),
    ("root-down", "the root shard down for the whole fault phase while the other shards serve, schedule workspaces and bind APIs from the cache"),
    ("cache-partition", "partition shards from regional caches A and B, kill them, split them from the parent, delete after a failover; cache convergence"),
    ("agent-partition", "partition Fleet member agents from the hub and kill -9 them while placements roll out; no flapping, convergence, no leaks"),
    ("hosts", "partition, pause and degrade the installation's hosts: docker network disconnect, docker pause, packet loss/blackhole in a container's network namespace"),
];

fn mix(scenario: &str) -> anyhow::Result<Mix> {
    Ok(match scenario {
        "shard-kill" => Mix { network: false, kill: true, pause: false, disk_full: false },
        "network" => Mix { network: true, kill: false, pause: false, disk_full: false },
        "pause" => Mix { network: false, kill: false, pause: true, disk_full: false },
        "mixed" => Mix { network: true, kill: true, pause: true, disk_full: false },
        "disk-full" => Mix { network: false, kill: false, pause: false, disk_full: true },
        other => anyhow::bail!("unknown scenario {other:?}; `atoll-chaos list` names them"),
    })
}

/// How a run is shaped.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// A name from [`SCENARIOS`].
    pub scenario: String,
    /// The seed of the fault schedule and the writers' choices.
    pub seed: u64,
    /// How long faults are injected.
    pub fault_seconds: u64,
    /// Writers per shard.
    pub writers_per_shard: u32,
    /// Watchers per shard.
    pub watchers_per_shard: u32,
    /// Where to keep the history (JSON), for `atoll-chaos replay`.
    pub history_file: Option<PathBuf>,
}

/// What a run found.
#[derive(Debug)]
pub struct Report {
    /// The whole history.
    pub history: History,
    /// Every violation the checkers found.
    pub violations: Vec<Violation>,
    /// How long the run took, installation start to verdict.
    pub elapsed: Duration,
}

impl Report {
    /// A summary: seed, faults, operations per kind and outcome, watch figures, verdict.
    pub fn summary(&self) -> String {
        crate::summary::summarize(&self.history, &self.violations, Some(self.elapsed))
    }
}

/// Runs one process scenario (every one but the workspace storm, see [`crate::run`]) to
/// its verdict.
pub async fn run(options: &RunOptions) -> anyhow::Result<Report> {
    let started = Instant::now();
    let mix = mix(&options.scenario)?;
    let steps = schedule::draw(options.seed, options.fault_seconds * 1000, 2, mix);
    println!("scenario {} seed {}: {} faults scheduled", options.scenario, options.seed, steps.len());
    for step in &steps {
        println!("  at {:>6} ms for {:>5} ms: shard #{} {:?}", step.at_ms, step.hold_ms, step.target, step.action);
    }
    let mut installation = Installation::start(1).await.context("start the installation")?;
    // Declared after the installation, so dropped before it: unmounted (lazily) even when
    // the run fails.
    let mut disks = Vec::new();
    if mix.disk_full {
        for target in 0..2 {
            disks.push(SmallDisk::under_store(shard_mut(&mut installation, target), STORE_DISK_MB).await?);
        }
    }
    let mut proxies = Vec::new();
    let mut targets = Vec::new();
    for (index, shard) in [&installation.root, &installation.shards[0]].into_iter().enumerate() {
        let cluster = format!("chaos-{index}");
        prepare(shard, &cluster).await?;
        let proxy = FaultProxy::start(shard.name(), upstream(shard)?).await?;
        let base_url = format!("https://{}", proxy.listen_addr());
        let admin = shard.admin();
        let http = TlsHttp::new(&base_url, &admin.ca_pem, Some(&admin.identity))?.with_timeout(Duration::from_secs(5));
        targets.push(Target { shard: shard.name().to_string(), cluster, http });
        proxies.push(proxy);
    }
    let recorder = Recorder::new(options.seed, &options.scenario);
    let workload = Workload::spawn(&recorder, &targets, options);
    let phase = inject(&mut installation, &proxies, &disks, &steps, &recorder).await;
    for proxy in &proxies {
        proxy.heal();
    }
    phase?;
    // Let the workload run a little on the healed installation, then stop it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    workload.finish(&recorder, &[&installation.root, &installation.shards[0]], &targets).await?;
    let history = recorder.snapshot();
    save(&history, options.history_file.as_deref())?;
    let violations = check_all(&history);
    Ok(Report { history, violations, elapsed: started.elapsed() })
}

/// The writers and watchers of a run.
pub(crate) struct Workload {
    writers: Vec<tokio::task::JoinHandle<()>>,
    watchers: Vec<tokio::task::JoinHandle<()>>,
}

impl Workload {
    /// Starts the writers and watchers `options` ask for on every target.
    pub(crate) fn spawn(recorder: &Recorder, targets: &[Target], options: &RunOptions) -> Workload {
        let mut workload = Workload { writers: Vec::new(), watchers: Vec::new() };
        for (index, target) in targets.iter().enumerate() {
            for i in 0..options.writers_per_shard {
                let client = index as u32 * 100 + i;
                let seed = options.seed ^ (u64::from(client) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let writer = workload::writer(recorder.clone(), target.clone(), client, seed);
                workload.writers.push(tokio::spawn(writer));
            }
            for i in 0..options.watchers_per_shard {
                let watcher = workload::watcher(recorder.clone(), target.clone(), index as u32 * 100 + i);
                workload.watchers.push(tokio::spawn(watcher));
            }
        }
        workload
    }

    /// Stops the writers, reads each target's final state directly from its shard
    /// (`shards[i]` serves `targets[i]`), and waits until the watchers reached it.
    pub(crate) async fn finish(
        self,
        recorder: &Recorder,
        shards: &[&ShardProcess],
        targets: &[Target],
    ) -> anyhow::Result<()> {
        let readers: Vec<TlsHttp> = shards.iter().map(|shard| shard.http()).collect();
        self.finish_reading(recorder, &readers, targets).await
    }

    /// [`Workload::finish`] with the final states read through `readers` (`readers[i]`
    /// reaches the shard serving `targets[i]` directly).
    pub(crate) async fn finish_reading(
        self,
        recorder: &Recorder,
        readers: &[TlsHttp],
        targets: &[Target],
    ) -> anyhow::Result<()> {
        recorder.stop_writers();
        for writer in self.writers {
            writer.await.context("join a writer")?;
        }
        for (reader, target) in readers.iter().zip(targets) {
            recorder.finish(final_state(reader, target).await?);
        }
        for watcher in self.watchers {
            watcher.await.context("join a watcher")?;
        }
        Ok(())
    }
}

/// Keeps `history` as JSON at `path` (if given), for `atoll-chaos replay`.
pub(crate) fn save(history: &History, path: Option<&std::path::Path>) -> anyhow::Result<()> {
    let Some(path) = path else { return Ok(()) };
    let json = serde_json::to_vec_pretty(history).context("serialize the history")?;
    std::fs::write(path, json).with_context(|| format!("write the history to {}", path.display()))
}

/// Creates the logical cluster and namespace the workload uses on `shard`.
pub(crate) async fn prepare(shard: &ShardProcess, cluster: &str) -> anyhow::Result<()> {
    shard.create_logical_cluster(cluster).await?;
    let path = format!("/clusters/{cluster}/api/v1/namespaces");
    let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
    let response = shard.http().post_json(&path, &body).await?;
    anyhow::ensure!(
        response.status.is_success() || response.status == http::StatusCode::CONFLICT,
        "create namespace {NAMESPACE} in {cluster}: {} {}",
        response.status,
        response.text()
    );
    Ok(())
}

fn upstream(shard: &ShardProcess) -> anyhow::Result<SocketAddr> {
    let port = shard.admin().port()?;
    Ok(SocketAddr::from(([127, 0, 0, 1], port)))
}

fn shard_mut(installation: &mut Installation, target: usize) -> &mut ShardProcess {
    if target == 0 {
        &mut installation.root
    } else {
        &mut installation.shards[target - 1]
    }
}

/// Injects every step at its offset, holds it, and lifts it.
async fn inject(
    installation: &mut Installation,
    proxies: &[FaultProxy],
    disks: &[SmallDisk],
    steps: &[Step],
    recorder: &Recorder,
) -> anyhow::Result<()> {
    let phase_start = Instant::now();
    for step in steps {
        let at = phase_start + Duration::from_millis(step.at_ms);
        tokio::time::sleep_until(at.into()).await;
        let proxy = &proxies[step.target];
        let shard = shard_mut(installation, step.target);
        let name = shard.name().to_string();
        let hold = Duration::from_millis(step.hold_ms);
        match step.action {
            Action::Net(fault) => {
                recorder.fault(format!("proxy {name}: {fault:?} for {} ms", step.hold_ms));
                proxy.inject(fault);
                tokio::time::sleep(hold).await;
                proxy.inject(NetFault::Heal);
            }
            Action::Kill9 => {
                recorder.fault(format!("shard {name}: kill -9, restart after {} ms", step.hold_ms));
                shard.kill9();
                tokio::time::sleep(hold).await;
                shard.restart().await.with_context(|| format!("restart shard {name} after kill -9"))?;
                recorder.fault(format!("shard {name}: restarted"));
            }
            Action::Pause => {
                let pid = shard.pid().with_context(|| format!("shard {name} is not running"))?;
                recorder.fault(format!("shard {name}: SIGSTOP for {} ms", step.hold_ms));
                crate::injector::pause(pid)?;
                tokio::time::sleep(hold).await;
                crate::injector::resume(pid)?;
            }
            Action::ProxyKill9 => anyhow::bail!("a front-proxy step in a scenario without a front-proxy"),
            Action::Host(_) => anyhow::bail!("a container's fault in a scenario without containers"),
            Action::DiskFull => {
                let disk = disks.get(step.target).context("a disk-full step on a shard without a small disk")?;
                let bytes = disk.fill()?;
                let from_ms = recorder.now_ms();
                recorder.fault(format!("shard {name}: disk full (filler took {bytes} bytes) for {} ms", step.hold_ms));
                tokio::time::sleep(hold).await;
                let to_ms = recorder.now_ms();
                disk.free()?;
                // RocksDB keeps refusing writes after ENOSPC until the store is opened
                // again (no DB::Resume in the binding): what an operator must do too.
                shard.restart().await.with_context(|| format!("restart shard {name} after freeing its disk"))?;
                recorder.fault(format!("shard {name}: disk space freed, shard restarted"));
                recorder.disk_full(DiskFullSpell { shard: name.clone(), from_ms, to_ms });
            }
        }
    }
    Ok(())
}

/// Lists the collection through `http` (directly on the shard, no proxy), retrying
/// briefly.
async fn final_state(http: &TlsHttp, target: &Target) -> anyhow::Result<FinalState> {
    let mut last = None;
    for _ in 0..50 {
        match workload::list(http, &target.path()).await {
            Ok((rv, objects)) => return Ok(FinalState { collection: target.collection(), rv, objects }),
            Err(error) => last = Some(error),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("no attempt"))).context("read the final state")
}
