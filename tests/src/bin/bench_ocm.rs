//! `bench-ocm`: one OCM Placement over many ManagedClusters, on a real shard.
//!
//! A standalone shard with one logical cluster acts as the OCM hub. The benchmark
//! creates `--clusters` ManagedClusters (labelled into one ManagedClusterSet, spread over
//! ten zones) and writes each one's status as its agent would (Available, with
//! `status.allocatable` and `status.capacity`), binds the
//! set to a namespace, and then creates one Placement asking for `--pick` clusters with
//! three prioritizers (ResourceAllocatableCPU, ResourceAllocatableMemory and Steady, in
//! Exact mode) and a label predicate. It prints the time from the Placement's create
//! until its PlacementDecisions hold every decision, against the goal (< 1 s), then the
//! same again after one cluster's allocatable CPU changes enough to enter the picked set
//! (a re-decision), the objects the placement wrote, and the shard's CPU time and
//! resident memory.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::tests::tls_http::list_items;
use ::tests::{ShardProcess, TlsHttp};
use anyhow::Context;
use clap::Parser;
use serde_json::{json, Value};
use tokio::task::JoinSet;

/// The goal this benchmark reports against.
const GOAL_SECONDS: f64 = 1.0;

/// How long a wait may take before the run gives up.
const DEADLINE: Duration = Duration::from_secs(120);

const GROUP_PATH: &str = "/clusters/hub/apis/cluster.open-cluster-management.io";

#[derive(Parser, Debug)]
#[command(name = "bench-ocm", about = "One OCM Placement over many ManagedClusters")]
struct Args {
    /// ManagedClusters in the hub.
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    clusters: u32,
    /// numberOfClusters of the Placement.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    pick: u32,
    /// Concurrent clients creating the clusters.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=128))]
    clients: u32,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let shard = ShardProcess::with_clusters(&["hub"]).await;
    let http = shard.http();
    let pid = shard.pid().context("the shard's pid")?;

    let loaded = Instant::now();
    let next = Arc::new(AtomicU32::new(0));
    let mut clients = JoinSet::new();
    for _ in 0..args.clients {
        let (http, next, total) = (http.clone(), next.clone(), args.clusters);
        clients.spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    return anyhow::Ok(());
                }
                let name = format!("cluster-{n:05}");
                let cluster = json!({
                    "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                    "metadata": {"name": name, "labels": {
                        "cluster.open-cluster-management.io/clusterset": "fleet",
                        "zone": format!("zone-{}", n % 10),
                        "env": if n % 4 == 0 { "dev" } else { "prod" },
                    }},
                    "spec": {"hubAcceptsClient": true},
                });
                http.create(&format!("{GROUP_PATH}/v1/managedclusters"), &cluster).await?;
                let status = json!({"status": resources(n)});
                http.merge_patch(&format!("{GROUP_PATH}/v1/managedclusters/{name}/status"), &status).await?;
            }
        });
    }
    while let Some(done) = clients.join_next().await {
        done??;
    }
    println!(
        "bench-ocm: {} ManagedClusters (with allocatable and capacity) loaded in {:.2} s",
        args.clusters,
        loaded.elapsed().as_secs_f64()
    );
    let set = json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
        "metadata": {"name": "fleet"}});
    http.create(&format!("{GROUP_PATH}/v1beta2/managedclustersets"), &set).await?;
    http.create("/clusters/hub/api/v1/namespaces", &json!({"metadata": {"name": "apps"}})).await?;
    let binding = json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
        "metadata": {"name": "fleet", "namespace": "apps"}, "spec": {"clusterSet": "fleet"}});
    http.create(&format!("{GROUP_PATH}/v1beta2/namespaces/apps/managedclustersetbindings"), &binding).await?;

    // The hub judges every accepted cluster (namespace, lease, taints); wait until no
    // cluster carries a taint, so the decision is made over the settled fleet.
    let settled = Instant::now();
    let deadline = settled + DEADLINE;
    loop {
        let clusters = http.get_json(&format!("{GROUP_PATH}/v1/managedclusters")).await?;
        let tainted = list_items(&clusters)
            .iter()
            .filter(|c| c.pointer("/spec/taints").and_then(Value::as_array).is_some_and(|t| !t.is_empty()))
            .count();
        if tainted == 0 && list_items(&clusters).len() == args.clusters as usize {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "{tainted} clusters still tainted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("  hub settled (namespaces, leases, no taints) {:.2} s later", settled.elapsed().as_secs_f64());
    let (cpu_before, _) = ::tests::process::usage(pid);
    let placement = json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": "biggest", "namespace": "apps"},
        "spec": {
            "numberOfClusters": args.pick,
            "predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}],
            "prioritizerPolicy": {"mode": "Exact", "configurations": [
                {"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": 2},
                {"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}, "weight": 1},
                {"scoreCoordinate": {"builtIn": "Steady"}, "weight": 1},
            ]},
        },
    });
    let started = Instant::now();
    http.create(&format!("{GROUP_PATH}/v1beta1/namespaces/apps/placements"), &placement).await?;
    let wanted = args.pick.min(args.clusters - args.clusters.div_ceil(4)) as usize;
    let first = wait_decisions(&http, |decided| decided.len() == wanted).await?;
    let decided_in = started.elapsed();
    let (cpu_after, rss) = ::tests::process::usage(pid);

    // One unpicked cluster grows enough to enter the picked set: a re-decision.
    let (n, grower) = (0..args.clusters)
        .filter(|n| n % 4 != 0)
        .map(|n| (n, format!("cluster-{n:05}")))
        .find(|(_, name)| !first.contains(name))
        .context("an unpicked prod cluster")?;
    let mut grown = resources(n);
    // Just above the largest allocatable CPU of the fleet (4..=63), so the normalised
    // scores of the others barely move.
    grown["allocatable"]["cpu"] = json!("80");
    grown["capacity"]["cpu"] = json!("84");
    grown["allocatable"]["memory"] = json!("127Gi");
    grown["capacity"]["memory"] = json!("135Gi");
    let moved = Instant::now();
    http.merge_patch(&format!("{GROUP_PATH}/v1/managedclusters/{grower}/status"), &json!({"status": grown})).await?;
    let second = wait_decisions(&http, |decided| decided.contains(&grower)).await?;
    let moved_in = moved.elapsed();
    let kept = first.iter().filter(|c| second.contains(c)).count();

    let pages = http
        .get_json("/clusters/hub/apis/cluster.open-cluster-management.io/v1beta1/namespaces/apps/placementdecisions")
        .await?;
    let page_count = list_items(&pages).len();
    let verdict = |seconds: f64| if seconds < GOAL_SECONDS { "met" } else { "MISSED" };
    println!(
        "  placement: numberOfClusters {}, 3 prioritizers (CPU ×2, memory, Steady), env=prod predicate",
        args.pick
    );
    println!(
        "  create → every decision written:     {:>8.3} s   goal < {GOAL_SECONDS} s: {}",
        decided_in.as_secs_f64(),
        verdict(decided_in.as_secs_f64())
    );
    println!(
        "  score change → decision moved:       {:>8.3} s   goal < {GOAL_SECONDS} s: {}  ({kept} of {} decisions kept)",
        moved_in.as_secs_f64(),
        verdict(moved_in.as_secs_f64()),
        first.len()
    );
    println!("  objects the placement wrote: {page_count} PlacementDecision page(s) + the Placement's status");
    println!(
        "  shard during the first decision: {:.2} s CPU, {:.1} MiB resident",
        (cpu_after - cpu_before) as f64 / 100.0,
        rss as f64 / 1024.0
    );
    Ok(())
}

/// A cluster's status as its agent reports it: available, with allocatable and capacity
/// CPU and memory that differ per cluster.
fn resources(n: u32) -> Value {
    let cpu = 4 + (n * 37) % 60;
    let memory = 8 + (n * 53) % 120;
    json!({
        "conditions": [{
            "type": "ManagedClusterConditionAvailable", "status": "True", "reason": "ManagedClusterAvailable",
            "message": "Managed cluster is available", "lastTransitionTime": "2026-01-01T00:00:00Z",
        }],
        "allocatable": {"cpu": cpu.to_string(), "memory": format!("{memory}Gi")},
        "capacity": {"cpu": (cpu + 4).to_string(), "memory": format!("{}Gi", memory + 8)},
    })
}

/// Waits until the placement's decisions satisfy `done`; returns them.
async fn wait_decisions(http: &TlsHttp, done: impl Fn(&Vec<String>) -> bool) -> anyhow::Result<Vec<String>> {
    let deadline = Instant::now() + DEADLINE;
    let path = "/clusters/hub/apis/cluster.open-cluster-management.io/v1beta1/namespaces/apps/placementdecisions?labelSelector=cluster.open-cluster-management.io%2Fplacement%3Dbiggest";
    loop {
        let list = http.get_json(path).await?;
        let decided: Vec<String> = list_items(&list)
            .iter()
            .flat_map(|d| d.pointer("/status/decisions").and_then(Value::as_array).cloned().unwrap_or_default())
            .filter_map(|d| d.get("clusterName").and_then(Value::as_str).map(str::to_string))
            .collect();
        if done(&decided) {
            return Ok(decided);
        }
        anyhow::ensure!(Instant::now() < deadline, "decisions not done within {DEADLINE:?}: {} so far", decided.len());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
