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
//! - the objects the placements wrote, by kind, and the hub's CPU time and memory.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::tests::tls_http::list_items;
use ::tests::{ShardProcess, TlsHttp};
use anyhow::Context;
use clap::Parser;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio::task::JoinSet;

const SCHEDULED_GOAL_SECONDS: f64 = 10.0;
const RESTART_GOAL_SECONDS: f64 = 30.0;

/// How long a wait may take before the run gives up.
const DEADLINE: Duration = Duration::from_secs(600);

const CLUSTER_PATH: &str = "/clusters/hub/apis/cluster.kubernetes-fleet.io/v1";
const PLACEMENT_PATH: &str = "/clusters/hub/apis/placement.kubernetes-fleet.io/v1";

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
    let mut shard = ShardProcess::with_clusters(&["hub"]).await;
    let http = shard.http();
    let pid = shard.pid().context("the shard's pid")?;

    http.create("/clusters/hub/api/v1/namespaces", &json!({"metadata": {"name": "app"}})).await?;
    let config = json!({"metadata": {"name": "settings"}, "data": {"greeting": "hello"}});
    http.create("/clusters/hub/api/v1/namespaces/app/configmaps", &config).await?;

    let loaded = Instant::now();
    run_clients(&http, args.clients, args.members, |http, n| async move {
        let name = member_name(n);
        let member = json!({
            "apiVersion": "cluster.kubernetes-fleet.io/v1", "kind": "MemberCluster",
            "metadata": {"name": name, "labels": {"env": "prod", "region": format!("region-{}", n % 10)}},
            "spec": {"identity": {"kind": "User", "name": format!("agent-{n}")}, "heartbeatPeriodSeconds": 60},
        });
        http.create(&format!("{CLUSTER_PATH}/memberclusters"), &member).await?;
        http.merge_patch(&format!("{CLUSTER_PATH}/memberclusters/{name}/status"), &json!({"status": status(n)})).await
    })
    .await?;
    // The hub gives every member its namespace and Joined condition: wait for all.
    let deadline = Instant::now() + DEADLINE;
    loop {
        let members = http.get_json(&format!("{CLUSTER_PATH}/memberclusters")).await?;
        let joined = list_items(&members).iter().filter(|m| condition_true(m, "Joined", None)).count();
        if joined == args.members as usize {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "{joined} of {} members joined", args.members);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
    wait_scheduled(&http, args.placements as usize).await?;
    let scheduled_in = started.elapsed();
    let (cpu_after, rss) = ::tests::process::usage(pid);

    let mut written = BTreeMap::new();
    for (kind, path) in [
        ("ClusterSchedulingPolicySnapshots", format!("{PLACEMENT_PATH}/clusterschedulingpolicysnapshots")),
        ("ClusterResourceSnapshots", format!("{PLACEMENT_PATH}/clusterresourcesnapshots")),
        ("ClusterResourceBindings", format!("{PLACEMENT_PATH}/clusterresourcebindings")),
        ("Works", format!("{PLACEMENT_PATH}/works")),
    ] {
        written.insert(kind, list_items(&http.get_json(&path).await?).len());
    }

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
    let total: usize = written.values().sum();
    let listed: Vec<String> = written.iter().map(|(kind, n)| format!("{n} {kind}")).collect();
    println!("  objects the placements wrote: {total} ({})", listed.join(", "));
    println!(
        "  hub during scheduling: {:.2} s CPU, {:.1} MiB resident; after the restart's pass: {:.2} s CPU, {:.1} MiB",
        (cpu_after - cpu_before) as f64 / 100.0,
        rss as f64 / 1024.0,
        cpu_restart as f64 / 100.0,
        rss_restart as f64 / 1024.0
    );
    Ok(())
}

fn member_name(n: u32) -> String {
    format!("member-{n:05}")
}

/// Runs `job(http, n)` for every `n` below `total` on `clients` concurrent clients.
async fn run_clients<F, Fut>(http: &TlsHttp, clients: u32, total: u32, job: F) -> anyhow::Result<()>
where
    F: Fn(TlsHttp, u32) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let next = Arc::new(AtomicU32::new(0));
    let mut set = JoinSet::new();
    for _ in 0..clients {
        let (http, next, job) = (http.clone(), next.clone(), job.clone());
        set.spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    return anyhow::Ok(());
                }
                job(http.clone(), n).await?;
            }
        });
    }
    while let Some(done) = set.join_next().await {
        done??;
    }
    Ok(())
}

/// A member's status as its agent reports it: joined and healthy, heard from now, with a
/// node count and allocatable CPU and memory that differ per member.
fn status(n: u32) -> Value {
    let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let cpu = 4 + (n * 37) % 60;
    let memory = 8 + (n * 53) % 120;
    let condition = |kind: &str, reason: &str| json!({"type": kind, "status": "True", "reason": reason, "lastTransitionTime": now, "observedGeneration": 1});
    json!({
        "agentStatus": [{
            "type": "MemberAgent",
            "lastReceivedHeartbeat": now,
            "conditions": [condition("Joined", "InternalMemberClusterJoined"), condition("Healthy", "InternalMemberClusterHealthy")],
        }],
        "properties": {"kubernetes-fleet.io/node-count": {"value": (1 + n % 7).to_string(), "observationTime": now}},
        "resourceUsage": {"allocatable": {"cpu": cpu.to_string(), "memory": format!("{memory}Gi")}, "observationTime": now},
    })
}

/// Whether `object` has condition `kind` True (for `generation`, when given).
fn condition_true(object: &Value, kind: &str, generation: Option<&Value>) -> bool {
    let conditions = object.pointer("/status/conditions").and_then(Value::as_array);
    conditions.into_iter().flatten().any(|c| {
        c.get("type").and_then(Value::as_str) == Some(kind)
            && c.get("status").and_then(Value::as_str) == Some("True")
            && generation.is_none_or(|g| c.get("observedGeneration") == Some(g))
    })
}

/// Whether a placement reports `ClusterResourcePlacementScheduled` True for its generation.
fn scheduled(placement: &Value) -> bool {
    condition_true(placement, "ClusterResourcePlacementScheduled", placement.pointer("/metadata/generation"))
}

/// How long the watch may stay silent before the placements are listed again.
const QUIET: Duration = Duration::from_secs(5);

/// Waits until `total` placements are Scheduled: one list, then a watch from the list's
/// resourceVersion, so the wait costs the hub one event per placement write rather than a
/// list of every placement ten times a second (which took ~30% of the hub's CPU). The
/// watch cannot miss a write between the list and its start; when it ends, fails or stays
/// silent for `QUIET`, the placements are listed again, so a dropped stream cannot hang
/// the wait.
async fn wait_scheduled(http: &TlsHttp, total: usize) -> anyhow::Result<()> {
    let path = format!("{PLACEMENT_PATH}/clusterresourceplacements");
    let deadline = Instant::now() + DEADLINE;
    loop {
        let list = http.get_json(&path).await?;
        let mut done: BTreeSet<String> = list_items(&list)
            .iter()
            .filter(|p| scheduled(p))
            .filter_map(|p| Some(p.pointer("/metadata/name")?.as_str()?.to_string()))
            .collect();
        if done.len() == total {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "{} of {total} placements scheduled", done.len());
        let rv = list.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("0");
        let watch = format!("{path}?watch=true&resourceVersion={rv}");
        let response = http.send_streaming(http::Method::GET, &watch, &[], Vec::new()).await;
        let Some(response) = response.ok().filter(|r| r.status().is_success()) else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let mut body = response.into_body();
        let mut buffer = Vec::new();
        while let Ok(Some(Ok(frame))) = tokio::time::timeout(QUIET, body.frame()).await {
            let Some(data) = frame.data_ref() else { continue };
            buffer.extend_from_slice(data);
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let Ok(event) = serde_json::from_slice::<Value>(&line) else { continue };
                let object = event.get("object").cloned().unwrap_or_default();
                let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str) else { continue };
                match event.get("type").and_then(Value::as_str) {
                    Some("ADDED" | "MODIFIED") if scheduled(&object) => done.insert(name.to_string()),
                    _ => done.remove(name),
                };
            }
            if done.len() == total {
                return Ok(());
            }
            anyhow::ensure!(Instant::now() < deadline, "{} of {total} placements scheduled", done.len());
        }
    }
}

/// The hub controller's placement passes since the shard started.
async fn passes(http: &TlsHttp) -> anyhow::Result<u64> {
    let text = http.get("/metrics").await?.text();
    let line = text.lines().find(|l| l.starts_with("atoll_fleet_placement_passes_total "));
    Ok(line.and_then(|l| l.split_whitespace().nth(1)?.parse().ok()).unwrap_or(0))
}
