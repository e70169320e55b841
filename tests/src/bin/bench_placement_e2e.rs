//! `bench-placement-e2e`: namespaces placed onto SyncTargets and synced into members,
//! end to end, with real processes.
//!
//! The hub is root plus one shard and a cache server. Root holds the inventory:
//! `--targets` SyncTargets, one Location per target (kcp's one-cluster Locations), each
//! served by an `atoll-agent` process whose member is one logical cluster of a second,
//! standalone shard. A user workspace on the other shard holds one Placement per Location,
//! each selecting the namespaces of one group. Then `--clients` concurrent clients create
//! `--namespaces` namespaces (groups round-robin), each with one ConfigMap.
//!
//! It prints how long the creates took, the time until every namespace carries its
//! SyncTarget's label, and the time until every ConfigMap is present in its member, from
//! the first create, against the goal (< 10 s).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::tests::agent::AgentProcess;
use ::tests::cache::CacheTopology;
use ::tests::installation::{wait_workspace_ready, workspace_url, Installation, InstallationOptions};
use ::tests::tls_http::list_items;
use ::tests::ShardProcess;
use anyhow::Context;
use clap::Parser;
use serde_json::{json, Value};
use tokio::task::JoinSet;

/// The goal this benchmark reports against.
const GOAL_SECONDS: f64 = 10.0;

/// How long the run may take before it gives up.
const DEADLINE: Duration = Duration::from_secs(300);

#[derive(Parser, Debug)]
#[command(name = "bench-placement-e2e", about = "Namespaces placed on SyncTargets and synced into members by agents")]
struct Args {
    /// Namespaces to place (each with one ConfigMap).
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..=5_000))]
    namespaces: u32,
    /// SyncTargets (each with its Location, Placement, agent and member cluster).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=50))]
    targets: u32,
    /// Concurrent clients creating namespaces and ConfigMaps.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=128))]
    clients: u32,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let options = InstallationOptions {
        extra_shards: 1,
        caches: Some(CacheTopology::single()),
        ..InstallationOptions::default()
    };
    let hub = Installation::start_with(options).await.context("start the hub")?;
    let user_path = user_workspace(&hub).await?;
    let user_shard = hub.shard_for_url(&workspace_url_of(&hub, &user_path).await?)?;
    let root = hub.root.http();
    let user = user_shard.http();

    // The inventory: one SyncTarget and one Location per target, in root.
    let clusters: Vec<String> = (0..args.targets).map(|i| format!("m{i}")).collect();
    let names: Vec<&str> = clusters.iter().map(String::as_str).collect();
    let member = ShardProcess::with_clusters(&names).await;
    for i in 0..args.targets {
        let target = json!({"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget",
            "metadata": {"name": format!("t{i}"), "labels": {"index": i.to_string()}}, "spec": {}});
        root.create("/clusters/root/apis/workload.kcp.io/v1alpha1/synctargets", &target).await?;
        let location = json!({"apiVersion": "scheduling.kcp.io/v1alpha1", "kind": "Location",
            "metadata": {"name": format!("l{i}"), "labels": {"index": i.to_string()}},
            "spec": {"resource": {"group": "workload.kcp.io", "version": "v1alpha1", "resource": "synctargets"},
                "instanceSelector": {"matchLabels": {"index": i.to_string()}}}});
        root.create("/clusters/root/apis/scheduling.kcp.io/v1alpha1/locations", &location).await?;
    }
    // One agent per target; the hub kubeconfig is root's admin one.
    let logs = tempfile::tempdir()?;
    let hub_kubeconfig = hub.root.kubeconfig_path();
    let mut agents = Vec::new();
    for i in 0..args.targets {
        let member_kubeconfig: PathBuf =
            member.user_kubeconfig(&format!("admin-m{i}"), &["system:masters"], &format!("m{i}"))?;
        let extra = ["--resources", "configmaps", "--heartbeat-interval-seconds", "2", "--resync-seconds", "5"];
        let log = logs.path().join(format!("t{i}.log"));
        agents.push(AgentProcess::start(&hub_kubeconfig, &format!("t{i}"), &member_kubeconfig, &extra, &log)?);
    }
    // Every target Ready (heartbeats) before the clock starts.
    let deadline = Instant::now() + DEADLINE;
    loop {
        let locations = root.get_json("/clusters/root/apis/scheduling.kcp.io/v1alpha1/locations").await?;
        let available = list_items(&locations)
            .iter()
            .filter(|l| l.pointer("/status/availableInstances") == Some(&json!(1)))
            .count();
        if available == args.targets as usize {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "only {available} of {} targets became Ready", args.targets);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // One Placement per Location, each selecting one group of namespaces.
    for i in 0..args.targets {
        let placement = json!({"apiVersion": "scheduling.kcp.io/v1alpha1", "kind": "Placement",
            "metadata": {"name": format!("p{i}")},
            "spec": {"locationSelectors": [{"matchLabels": {"index": i.to_string()}}],
                "locationResource": {"group": "workload.kcp.io", "version": "v1alpha1", "resource": "synctargets"},
                "namespaceSelector": {"matchLabels": {"group": i.to_string()}}, "locationWorkspace": "root"}});
        user.create(&format!("/clusters/{user_path}/apis/scheduling.kcp.io/v1alpha1/placements"), &placement).await?;
    }
    loop {
        let placements =
            user.get_json(&format!("/clusters/{user_path}/apis/scheduling.kcp.io/v1alpha1/placements")).await?;
        let chosen = list_items(&placements)
            .iter()
            .filter(|p| p.pointer("/metadata/annotations/internal.workload.kcp.io~1synctarget").is_some())
            .count();
        if chosen == args.targets as usize {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "only {chosen} of {} placements chose a target", args.targets);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The load: namespaces and their ConfigMaps, concurrently.
    let started = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut clients = JoinSet::new();
    for _ in 0..args.clients {
        let (user, next, path, total, targets) =
            (user.clone(), next.clone(), user_path.clone(), args.namespaces, args.targets);
        clients.spawn(async move {
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n >= total {
                    return anyhow::Ok(());
                }
                let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": format!("ns-{n}"), "labels": {"group": (n % targets).to_string()}}});
                user.create(&format!("/clusters/{path}/api/v1/namespaces"), &namespace).await?;
                let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"n": n.to_string()}});
                user.create(&format!("/clusters/{path}/api/v1/namespaces/ns-{n}/configmaps"), &config).await?;
            }
        });
    }
    while let Some(done) = clients.join_next().await {
        done??;
    }
    let created = started.elapsed();
    let mut labelled_at = None;
    let synced_at;
    let member_http = member.http();
    loop {
        if labelled_at.is_none() {
            let namespaces = user.get_json(&format!("/clusters/{user_path}/api/v1/namespaces")).await?;
            let labelled = list_items(&namespaces)
                .iter()
                .filter(|ns| {
                    let labels = ns.pointer("/metadata/labels").and_then(Value::as_object);
                    labels.is_some_and(|l| l.keys().any(|k| k.starts_with("state.workload.kcp.io/")))
                })
                .count();
            if labelled == args.namespaces as usize {
                labelled_at = Some(started.elapsed());
            }
        }
        let mut present = 0;
        for cluster in &clusters {
            let list = member_http
                .get_json(&format!(
                    "/clusters/{cluster}/api/v1/configmaps?labelSelector=internal.workload.kcp.io%2Fcluster"
                ))
                .await?;
            present += list_items(&list).len();
        }
        if labelled_at.is_some() && present == args.namespaces as usize {
            synced_at = started.elapsed();
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "after {:?}: {present} of {} ConfigMaps in members; labelled: {labelled_at:?}",
            started.elapsed(),
            args.namespaces
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let labelled_at = labelled_at.expect("labelled before synced");
    let mut per_member = BTreeMap::new();
    for cluster in &clusters {
        let list = member_http
            .get_json(&format!(
                "/clusters/{cluster}/api/v1/configmaps?labelSelector=internal.workload.kcp.io%2Fcluster"
            ))
            .await?;
        per_member.insert(cluster.clone(), list_items(&list).len());
    }
    println!(
        "bench-placement-e2e: {} namespaces (one ConfigMap each) over {} SyncTargets, {} clients",
        args.namespaces, args.targets, args.clients
    );
    println!("  created (namespaces + ConfigMaps):   {:>8.2} s", created.as_secs_f64());
    println!("  every namespace labelled:            {:>8.2} s", labelled_at.as_secs_f64());
    println!(
        "  every ConfigMap in its member:       {:>8.2} s   goal < {GOAL_SECONDS} s: {}",
        synced_at.as_secs_f64(),
        if synced_at.as_secs_f64() < GOAL_SECONDS { "met" } else { "MISSED" }
    );
    let counts: Vec<usize> = per_member.values().copied().collect();
    println!(
        "  ConfigMaps per member: min {} max {}",
        counts.iter().min().unwrap_or(&0),
        counts.iter().max().unwrap_or(&0)
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

/// A workspace in root hosted by the non-root shard, Ready.
async fn user_workspace(hub: &Installation) -> anyhow::Result<String> {
    let placed = hub.place_workspaces("user", 40, |p| p.get("shard-1").is_some_and(|w| !w.is_empty())).await?;
    Ok(format!("root:{}", placed["shard-1"][0]))
}

async fn workspace_url_of(hub: &Installation, path: &str) -> anyhow::Result<String> {
    let name = path.trim_start_matches("root:");
    let ready = wait_workspace_ready(&hub.root, "root", name, Duration::from_secs(60)).await?;
    workspace_url(&ready).map(str::to_string).context("a Ready workspace has a URL")
}
