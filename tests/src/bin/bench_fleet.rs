//! `bench-fleet`: many ClusterResourcePlacements over many MemberClusters, on a real shard.
//!
//! A standalone shard with one logical cluster acts as the Fleet hub. The benchmark
//! creates `--members` MemberClusters (ten regions, labelled `env=prod`) and writes each
//! one's status as its member agent would (joined, healthy, a fresh heartbeat, a node
//! count and allocatable CPU and memory), waits until the hub has given each its reserved
//! namespace and Joined condition, then creates `--placements` placements at once, each
//! PickN `--pick` of a namespace with a required label term, a preferred term sorted by
//! allocatable CPU and a DoNotSchedule topology spread over the regions. It prints:
//! - the time from the first create until every placement reports
//!   `ClusterResourcePlacementScheduled` True for its generation (goal < 10 s);
//! - the time from a `kill -9` and restart of the hub's shard until the controller has
//!   passed every placement again (`atoll_fleet_placement_passes_total`; goal < 30 s);
//! - the objects the placements wrote, by kind, when every placement was Scheduled and
//!   after the restart's pass, and the hub's CPU time and memory.

use std::time::{Duration, Instant};

use ::tests::fleet_hub::{self, condition_true, member, run_clients, HUB, PLACEMENT_PATH};
use ::tests::{ShardProcess, TlsHttp};
use anyhow::Context;
use clap::Parser;
use serde_json::{json, Value};

const SCHEDULED_GOAL_SECONDS: f64 = 10.0;
const RESTART_GOAL_SECONDS: f64 = 30.0;

/// How long a wait may take before the run gives up.
const DEADLINE: Duration = Duration::from_secs(600);

#[derive(Parser, Debug)]
#[command(name = "bench-fleet", about = "Many Fleet ClusterResourcePlacements over many MemberClusters")]
struct Args {
    /// MemberClusters in the hub.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    members: u32,
    /// ClusterResourcePlacements.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    placements: u32,
    /// numberOfClusters of each placement.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pick: u32,
    /// Concurrent clients.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=128))]
    clients: u32,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut shard = ShardProcess::with_clusters(&[HUB]).await;
    let http = shard.http();
    let pid = shard.pid().context("the shard's pid")?;

    http.create("/clusters/hub/api/v1/namespaces", &json!({"metadata": {"name": "app"}})).await?;
    let config = json!({"metadata": {"name": "settings"}, "data": {"greeting": "hello"}});
    http.create("/clusters/hub/api/v1/namespaces/app/configmaps", &config).await?;

    let loaded = Instant::now();
    run_clients(&http, args.clients, args.members, |http, n| async move {
        let labels = json!({"env": "prod", "region": format!("region-{}", n % 10)});
        fleet_hub::join(&http, &member(n, labels, &format!("agent-{n}"), 60), n).await
    })
    .await?;
    // The hub gives every member its namespace and Joined condition: wait for all.
    fleet_hub::wait_joined(&http, args.members as usize, Instant::now() + DEADLINE).await?;
    println!(
        "bench-fleet: {} MemberClusters (10 regions), {} placements PickN {} with affinity and spread",
        args.members, args.placements, args.pick
    );
    println!("  members created and joined in {:.2} s", loaded.elapsed().as_secs_f64());

    let (cpu_before, _) = ::tests::process::usage(pid);
    let started = Instant::now();
    let pick = args.pick;
    run_clients(&http, args.clients, args.placements, move |http, n| async move {
        let placement = json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
            "metadata": {"name": format!("crp-{n:05}")},
            "spec": {
                "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
                "policy": {
                    "placementType": "PickN",
                    "numberOfClusters": pick,
                    "affinity": {"clusterAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
                            {"labelSelector": {"matchLabels": {"env": "prod"}}}]},
                        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "preference": {
                            "propertySorter": {"name": "resources.kubernetes-fleet.io/allocatable-cpu", "sortOrder": "Descending"}}}],
                    }},
                    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "region", "whenUnsatisfiable": "DoNotSchedule"}],
                },
            },
        });
        http.create(&format!("{PLACEMENT_PATH}/clusterresourceplacements"), &placement).await
    })
    .await?;
    let created_in = started.elapsed();
    let path = format!("{PLACEMENT_PATH}/clusterresourceplacements");
    let deadline = Instant::now() + DEADLINE;
    fleet_hub::watch_until(&http, &path, args.placements as usize, scheduled, deadline, "placements scheduled").await?;
    let scheduled_in = started.elapsed();
    let (cpu_after, rss) = ::tests::process::usage(pid);

    let written = fleet_hub::objects_written(&http).await?;

    // The hub's shard dies and comes back: how long until every placement is passed again.
    shard.kill9();
    let restarted = Instant::now();
    shard.restart().await?;
    let http = shard.http();
    let pid = shard.pid().context("the shard's pid")?;
    let deadline = Instant::now() + DEADLINE;
    loop {
        let passes = passes(&http).await.unwrap_or(0);
        if passes >= args.placements as u64 {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "{passes} of {} placements passed again", args.placements);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let repassed_in = restarted.elapsed();
    let (cpu_restart, rss_restart) = ::tests::process::usage(pid);
    // What the first pass left for the restart's to write (Works after Scheduled).
    let after_restart = fleet_hub::objects_written(&http).await?;

    let verdict = |seconds: f64, goal: f64| if seconds < goal { "met" } else { "MISSED" };
    println!("  placements created in {:.2} s", created_in.as_secs_f64());
    println!(
        "  first create → every placement Scheduled: {:>8.2} s   goal < {SCHEDULED_GOAL_SECONDS} s: {}",
        scheduled_in.as_secs_f64(),
        verdict(scheduled_in.as_secs_f64(), SCHEDULED_GOAL_SECONDS)
    );
    println!(
        "  kill -9 → every placement passed again:   {:>8.2} s   goal < {RESTART_GOAL_SECONDS} s: {}",
        repassed_in.as_secs_f64(),
        verdict(repassed_in.as_secs_f64(), RESTART_GOAL_SECONDS)
    );
    println!("  objects the placements wrote: {}", fleet_hub::written_line(&written));
    println!("  objects after the restart's pass: {}", fleet_hub::written_line(&after_restart));
    println!(
        "  hub during scheduling: {:.2} s CPU, {:.1} MiB resident; after the restart's pass: {:.2} s CPU, {:.1} MiB",
        (cpu_after - cpu_before) as f64 / 100.0,
        rss as f64 / 1024.0,
        cpu_restart as f64 / 100.0,
        rss_restart as f64 / 1024.0
    );
    Ok(())
}

/// Whether a placement reports `ClusterResourcePlacementScheduled` True for its generation.
fn scheduled(placement: &Value) -> bool {
    condition_true(placement, "ClusterResourcePlacementScheduled", placement.pointer("/metadata/generation"))
}

/// The hub controller's placement passes since the shard started.
async fn passes(http: &TlsHttp) -> anyhow::Result<u64> {
    let text = http.get("/metrics").await?.text();
    let line = text.lines().find(|l| l.starts_with("atoll_fleet_placement_passes_total "));
    Ok(line.and_then(|l| l.split_whitespace().nth(1)?.parse().ok()).unwrap_or(0))
}
