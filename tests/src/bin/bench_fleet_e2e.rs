//! `bench-fleet-e2e`: one ClusterResourcePlacement picking 100 of 1,000 clusters, end to
//! end, with real member agents.
//!
//! A standalone shard with one logical cluster acts as the Fleet hub; a second standalone
//! shard is the member installation, with one logical cluster per real agent. The hub
//! holds `--members` MemberClusters (`env=prod`, ten regions): the first `--agents` are
//! served by `atoll-agent --member-cluster` processes that heartbeat them and apply their
//! Works into their logical cluster of the member installation; the benchmark writes the
//! joining status of the rest and heartbeats them once per `--heartbeat-seconds` (all
//! members carry that `heartbeatPeriodSeconds`, KubeFleet's default 60), spread evenly, as
//! their agents would. Once every member is Joined, one placement is created: PickN
//! `--pick` of namespace `app`, which holds `--configmaps` ConfigMaps (kinds a member
//! reports Available as soon as they are applied, so the figure is the placement's and
//! the agents', not a workload's start-up).
//!
//! Which clusters it picks: a required term admits every member (`env=prod`), and two
//! preferred terms rank them: weight 100 for `served-by=atoll-agent`, the label of the
//! members with a real agent, and weight 50 for the most allocatable CPU. A label term
//! adds its whole weight and a property sorter at most its weight, so every real-agent
//! member outscores every other and all of them are picked, while the other 80 are chosen
//! by score among 980: the scheduler still ranks all 1,000 candidates, as it would for a
//! placement that prefers some clusters. (A required term admitting exactly the 100 would
//! make the decision a filter with nothing to rank.)
//!
//! It prints, from the placement's create:
//! - the time until the placement reports `ClusterResourcePlacementScheduled`;
//! - the time until every picked cluster has its Work in its `fleet-member-<name>` namespace;
//! - the time until the placement's per-cluster status (`kubectl get crp -o yaml`,
//!   `placementStatuses`) reports `Available` True for every real-agent cluster;
//! - the later of the two against the goal (< 10 s);
//! - the hub's CPU time and memory during that span, the member installation's and the
//!   agents' CPU, and the objects the placement wrote (snapshots, bindings, Works).
//!
//! Afterwards it checks that each real member holds the namespace's ConfigMaps, so an
//! Available that did not put them there would fail the run.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::tests::agent::AgentProcess;
use ::tests::fleet_hub::{self, member, member_name, run_clients, CLUSTER_PATH, HUB, PLACEMENT_PATH};
use ::tests::process::usage;
use ::tests::tls_http::list_items;
use ::tests::ShardProcess;
use anyhow::Context;
use clap::Parser;
use serde_json::{json, Value};

const GOAL_SECONDS: f64 = 10.0;

/// How long a wait may take before the run gives up.
const DEADLINE: Duration = Duration::from_secs(300);

/// The placement's name.
const CRP: &str = "bench";

/// The label value of members with a real agent (key `served-by`).
const SERVED_BY_AGENT: &str = "atoll-agent";

#[derive(Parser, Debug)]
#[command(name = "bench-fleet-e2e", about = "One Fleet placement picking 100 of 1,000 clusters, with real agents")]
struct Args {
    /// MemberClusters in the hub.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    members: u32,
    /// Of them, served by real `atoll-agent` processes (always picked).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100))]
    agents: u32,
    /// The placement's numberOfClusters.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    pick: u32,
    /// ConfigMaps in the placed namespace.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=500))]
    configmaps: u32,
    /// Every member's heartbeatPeriodSeconds (the benchmark's heartbeats and the agents').
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=600))]
    heartbeat_seconds: u32,
    /// Concurrent clients creating the members.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=128))]
    clients: u32,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.agents <= args.pick && args.pick <= args.members, "need agents ≤ pick ≤ members");
    let hub = ShardProcess::with_clusters(&[HUB]).await;
    let http = hub.http();
    let hub_pid = hub.pid().context("the hub's pid")?;
    let clusters: Vec<String> = (0..args.agents).map(|i| format!("m{i}")).collect();
    let names: Vec<&str> = clusters.iter().map(String::as_str).collect();
    let member_installation = ShardProcess::with_clusters(&names).await;
    let member_pid = member_installation.pid().context("the member installation's pid")?;

    http.create("/clusters/hub/api/v1/namespaces", &json!({"metadata": {"name": "app"}})).await?;
    for i in 0..args.configmaps {
        let config =
            json!({"metadata": {"name": format!("settings-{i}")}, "data": {"greeting": "hello", "n": i.to_string()}});
        http.create("/clusters/hub/api/v1/namespaces/app/configmaps", &config).await?;
    }

    let loaded = Instant::now();
    let (agents_total, heartbeat_seconds) = (args.agents, args.heartbeat_seconds);
    run_clients(&http, args.clients, args.members, move |http, n| async move {
        let served_by = if n < agents_total { SERVED_BY_AGENT } else { "benchmark" };
        let labels = json!({"env": "prod", "region": format!("region-{}", n % 10), "served-by": served_by});
        if n < agents_total {
            // Its agent writes its status.
            let member = member(n, labels, "fleet-agent", heartbeat_seconds);
            http.create(&format!("{CLUSTER_PATH}/memberclusters"), &member).await
        } else {
            fleet_hub::join(&http, &member(n, labels, &format!("agent-{n}"), heartbeat_seconds), n).await
        }
    })
    .await?;
    let heartbeats = fleet_hub::heartbeat(
        http.clone(),
        (args.agents..args.members).collect(),
        Duration::from_secs(args.heartbeat_seconds.into()),
    );
    let logs = tempfile::tempdir()?;
    let hub_kubeconfig = hub.user_kubeconfig("fleet-agent", &["system:masters"], HUB)?;
    let mut agents = Vec::new();
    for (n, cluster) in clusters.iter().enumerate() {
        let member_kubeconfig =
            member_installation.user_kubeconfig(&format!("admin-{cluster}"), &["system:masters"], cluster)?;
        let log = logs.path().join(format!("{cluster}.log"));
        let name = member_name(n as u32);
        agents.push(AgentProcess::start_member_cluster(&hub_kubeconfig, &name, &member_kubeconfig, &[], &log)?);
    }
    fleet_hub::wait_joined(&http, args.members as usize, Instant::now() + DEADLINE).await?;
    println!(
        "bench-fleet-e2e: {} MemberClusters ({} served by atoll-agent into a member installation, the rest \
         heartbeating from the benchmark every {} s), one placement PickN {} of a namespace with {} ConfigMaps",
        args.members, args.agents, args.heartbeat_seconds, args.pick, args.configmaps
    );
    println!("  members created and joined in {:.2} s", loaded.elapsed().as_secs_f64());

    let real: BTreeSet<String> = (0..args.agents).map(member_name).collect();
    let agent_pids: Vec<u32> = agents.iter().filter_map(AgentProcess::pid).collect();
    let cpu = |pids: &[u32]| pids.iter().map(|pid| usage(*pid).0).sum::<u64>();
    let (hub_cpu_before, member_cpu_before, agents_cpu_before) =
        (cpu(&[hub_pid]), cpu(&[member_pid]), cpu(&agent_pids));
    let peak_rss = Arc::new(AtomicU64::new(0));
    let sampler = sample_peak_rss(hub_pid, peak_rss.clone());
    let started = Instant::now();
    http.create(&format!("{PLACEMENT_PATH}/clusterresourceplacements"), &placement(args.pick)).await?;
    let deadline = started + DEADLINE;
    let crps = format!("{PLACEMENT_PATH}/clusterresourceplacements");
    let works = format!("{PLACEMENT_PATH}/works");
    let (scheduled_at, works_at, available_at) = tokio::try_join!(
        fleet_hub::watch_until(&http, &crps, 1, scheduled, deadline, "placements scheduled"),
        fleet_hub::watch_until(&http, &works, args.pick as usize, is_ours, deadline, "picked clusters with a Work"),
        fleet_hub::watch_until(
            &http,
            &crps,
            1,
            |crp| available(crp, &real) == real.len(),
            deadline,
            "placements available"
        ),
    )?;
    let done_at = works_at.max(available_at);
    let (hub_cpu, rss) = usage(hub_pid);
    sampler.abort();
    let (member_cpu, agents_cpu) = (cpu(&[member_pid]), cpu(&agent_pids));
    heartbeats.abort();

    check_members(&member_installation, &clusters, args.configmaps).await?;
    let written = fleet_hub::objects_written(&http).await?;
    let seconds = |at: Instant| at.duration_since(started).as_secs_f64();
    let verdict = if seconds(done_at) < GOAL_SECONDS { "met" } else { "MISSED" };
    println!("  create → placement Scheduled:                    {:>8.2} s", seconds(scheduled_at));
    println!("  create → every picked cluster has its Work:      {:>8.2} s", seconds(works_at));
    println!("  create → every real-agent cluster Available:     {:>8.2} s", seconds(available_at));
    println!(
        "  end to end (both):                               {:>8.2} s   goal < {GOAL_SECONDS} s: {verdict}",
        seconds(done_at)
    );
    println!("  objects the placement wrote: {}", fleet_hub::written_line(&written));
    let cpu_seconds = |after: u64, before: u64| after.saturating_sub(before) as f64 / 100.0;
    println!(
        "  hub during the run: {:.2} s CPU, {:.1} MiB resident at the end (peak {:.1} MiB); member installation \
         {:.2} s CPU, {} agents {:.2} s CPU",
        cpu_seconds(hub_cpu, hub_cpu_before),
        rss as f64 / 1024.0,
        peak_rss.load(Ordering::Relaxed).max(rss) as f64 / 1024.0,
        cpu_seconds(member_cpu, member_cpu_before),
        agent_pids.len(),
        cpu_seconds(agents_cpu, agents_cpu_before),
    );
    for agent in &agents {
        let tail = agent.log_tail(200);
        if tail.contains("WARN") || tail.contains("ERROR") {
            println!("  an agent warned (last lines):\n{}", agent.log_tail(5));
            break;
        }
    }
    Ok(())
}

/// The placement: PickN `pick` of namespace `app`, every member admitted, the real-agent
/// members preferred above any allocatable CPU (see the module's doc).
fn placement(pick: u32) -> Value {
    json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": CRP},
        "spec": {
            "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
            "policy": {
                "placementType": "PickN",
                "numberOfClusters": pick,
                "affinity": {"clusterAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
                        {"labelSelector": {"matchLabels": {"env": "prod"}}}]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "preference": {"labelSelector": {"matchLabels": {"served-by": SERVED_BY_AGENT}}}},
                        {"weight": 50, "preference": {"propertySorter": {
                            "name": "resources.kubernetes-fleet.io/allocatable-cpu", "sortOrder": "Descending"}}},
                    ],
                }},
            },
        },
    })
}

/// Whether the placement reports `ClusterResourcePlacementScheduled` True for its generation.
fn scheduled(crp: &Value) -> bool {
    fleet_hub::condition_true(crp, "ClusterResourcePlacementScheduled", crp.pointer("/metadata/generation"))
}

/// Whether a Work is the placement's.
fn is_ours(work: &Value) -> bool {
    work.pointer("/metadata/labels/kubernetes-fleet.io~1parent-CRP").and_then(Value::as_str) == Some(CRP)
}

/// How many of the `real`-agent clusters the placement's per-cluster status reports
/// Available (the others have no agent to apply anything).
fn available(crp: &Value, real: &BTreeSet<String>) -> usize {
    let statuses = crp.pointer("/status/placementStatuses").and_then(Value::as_array);
    statuses
        .into_iter()
        .flatten()
        .filter(|s| s.get("clusterName").and_then(Value::as_str).is_some_and(|name| real.contains(name)))
        .filter(|s| {
            let conditions = s.get("conditions").and_then(Value::as_array);
            conditions.into_iter().flatten().any(|c| c["type"] == "Available" && c["status"] == "True")
        })
        .count()
}

/// Keeps the largest resident memory of `pid` in `peak`, sampled every 100 ms.
fn sample_peak_rss(pid: u32, peak: Arc<AtomicU64>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            peak.fetch_max(usage(pid).1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
}

/// Fails unless every real member holds the placed namespace's `configmaps` ConfigMaps.
async fn check_members(installation: &ShardProcess, clusters: &[String], configmaps: u32) -> anyhow::Result<()> {
    let http = installation.http();
    for cluster in clusters {
        let list = http.get_json(&format!("/clusters/{cluster}/api/v1/namespaces/app/configmaps")).await?;
        let placed = list_items(&list)
            .iter()
            .filter(|c| c.pointer("/metadata/name").and_then(Value::as_str).is_some_and(|n| n.starts_with("settings-")))
            .count();
        anyhow::ensure!(placed == configmaps as usize, "{cluster} holds {placed} of {configmaps} placed ConfigMaps");
    }
    Ok(())
}
