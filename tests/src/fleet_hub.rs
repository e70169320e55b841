//! A Fleet hub as the Fleet benchmarks load it: a standalone shard whose logical cluster
//! `hub` holds MemberClusters written as their member agents would write them, waits that
//! list once and then watch (so the wait costs the hub one event per write, not a list
//! every few milliseconds), and the count of what placements wrote.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::tls_http::list_items;
use crate::TlsHttp;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio::task::JoinSet;

/// The hub's logical cluster.
pub const HUB: &str = "hub";
/// Fleet's cluster API (MemberCluster) in the hub.
pub const CLUSTER_PATH: &str = "/clusters/hub/apis/cluster.kubernetes-fleet.io/v1";
/// Fleet's placement API in the hub.
pub const PLACEMENT_PATH: &str = "/clusters/hub/apis/placement.kubernetes-fleet.io/v1";

/// How long a watch may stay silent before the objects are listed again.
const QUIET: Duration = Duration::from_secs(5);

/// The name of the `n`th MemberCluster.
pub fn member_name(n: u32) -> String {
    format!("member-{n:05}")
}

/// MemberCluster `n` with `labels`, heartbeating every `heartbeat_seconds`, for the agent
/// user `identity`.
pub fn member(n: u32, labels: Value, identity: &str, heartbeat_seconds: u32) -> Value {
    json!({
        "apiVersion": "cluster.kubernetes-fleet.io/v1", "kind": "MemberCluster",
        "metadata": {"name": member_name(n), "labels": labels},
        "spec": {"identity": {"kind": "User", "name": identity}, "heartbeatPeriodSeconds": heartbeat_seconds},
    })
}

fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// What a member agent reports with every heartbeat: joined and healthy, heard from now.
pub fn agent_status() -> Value {
    let now = now();
    let condition = |kind: &str, reason: &str| json!({"type": kind, "status": "True", "reason": reason, "lastTransitionTime": now, "observedGeneration": 1});
    json!([{
        "type": "MemberAgent",
        "lastReceivedHeartbeat": now,
        "conditions": [condition("Joined", "InternalMemberClusterJoined"), condition("Healthy", "InternalMemberClusterHealthy")],
    }])
}

/// Member `n`'s status as its agent reports it when it joins: [`agent_status`], with a
/// node count and allocatable CPU and memory that differ per member.
pub fn member_status(n: u32) -> Value {
    let now = now();
    let cpu = 4 + (n * 37) % 60;
    let memory = 8 + (n * 53) % 120;
    json!({
        "agentStatus": agent_status(),
        "properties": {"kubernetes-fleet.io/node-count": {"value": (1 + n % 7).to_string(), "observationTime": now}},
        "resourceUsage": {"allocatable": {"cpu": cpu.to_string(), "memory": format!("{memory}Gi")}, "observationTime": now},
    })
}

/// Creates member `n` and writes its joining status, as an admin and its agent would.
pub async fn join(http: &TlsHttp, member: &Value, n: u32) -> anyhow::Result<()> {
    http.create(&format!("{CLUSTER_PATH}/memberclusters"), member).await?;
    let status = json!({"status": member_status(n)});
    http.merge_patch(&format!("{CLUSTER_PATH}/memberclusters/{}/status", member_name(n)), &status).await
}

/// Heartbeats `members` from now on, as their agents would: each once per `period`,
/// spread evenly over it, one write at a time (so the load is bounded at
/// `members / period` writes per second). A failed heartbeat is counted, not retried: the
/// next period brings the next one. Ends when the task is aborted.
pub fn heartbeat(http: TlsHttp, members: Vec<u32>, period: Duration) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut failed = 0;
        if members.is_empty() {
            return failed;
        }
        let every = (period / members.len() as u32).max(Duration::from_millis(1));
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for n in members.iter().cycle() {
            tick.tick().await;
            let path = format!("{CLUSTER_PATH}/memberclusters/{}/status", member_name(*n));
            if http.merge_patch(&path, &json!({"status": {"agentStatus": agent_status()}})).await.is_err() {
                failed += 1;
            }
        }
        failed
    })
}

/// Runs `job(http, n)` for every `n` below `total` on `clients` concurrent clients.
pub async fn run_clients<F, Fut>(http: &TlsHttp, clients: u32, total: u32, job: F) -> anyhow::Result<()>
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

/// Whether `object` has condition `kind` True (for `generation`, when given).
pub fn condition_true(object: &Value, kind: &str, generation: Option<&Value>) -> bool {
    let conditions = object.pointer("/status/conditions").and_then(Value::as_array);
    conditions.into_iter().flatten().any(|c| {
        c.get("type").and_then(Value::as_str) == Some(kind)
            && c.get("status").and_then(Value::as_str) == Some("True")
            && generation.is_none_or(|g| c.get("observedGeneration") == Some(g))
    })
}

/// Waits until every one of `total` members reports the hub's Joined condition.
pub async fn wait_joined(http: &TlsHttp, total: usize, deadline: Instant) -> anyhow::Result<()> {
    loop {
        let members = http.get_json(&format!("{CLUSTER_PATH}/memberclusters")).await?;
        let joined = list_items(&members).iter().filter(|m| condition_true(m, "Joined", None)).count();
        if joined == total {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "{joined} of {total} members joined");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An object's key within a list: namespace and name.
fn key(object: &Value) -> Option<String> {
    let name = object.pointer("/metadata/name")?.as_str()?;
    let namespace = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
    Some(format!("{namespace}/{name}"))
}

/// Waits until `needed` objects of the list at `path` are `accepted`; returns when that
/// was seen. One list, then a watch from the list's resourceVersion, so the watch cannot
/// miss a write between the two; when the watch ends, fails or stays silent for
/// [`QUIET`], the objects are listed again, so a dropped stream cannot hang the wait.
/// `what` names the objects in the error after `deadline`.
pub async fn watch_until(
    http: &TlsHttp,
    path: &str,
    needed: usize,
    accepted: impl Fn(&Value) -> bool,
    deadline: Instant,
    what: &str,
) -> anyhow::Result<Instant> {
    loop {
        let list = http.get_json(path).await?;
        let mut done: BTreeSet<String> = list_items(&list).iter().filter(|o| accepted(o)).filter_map(key).collect();
        if done.len() >= needed {
            return Ok(Instant::now());
        }
        anyhow::ensure!(Instant::now() < deadline, "{} of {needed} {what}", done.len());
        let rv = list.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("0");
        let separator = if path.contains('?') { '&' } else { '?' };
        let watch = format!("{path}{separator}watch=true&resourceVersion={rv}");
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
                let Some(key) = key(&object) else { continue };
                match event.get("type").and_then(Value::as_str) {
                    Some("ADDED" | "MODIFIED") if accepted(&object) => done.insert(key),
                    _ => done.remove(&key),
                };
            }
            if done.len() >= needed {
                return Ok(Instant::now());
            }
            anyhow::ensure!(Instant::now() < deadline, "{} of {needed} {what}", done.len());
        }
    }
}

/// How many snapshots, bindings and Works the hub holds, by kind.
pub async fn objects_written(http: &TlsHttp) -> anyhow::Result<BTreeMap<&'static str, usize>> {
    let mut written = BTreeMap::new();
    for (kind, resource) in [
        ("ClusterSchedulingPolicySnapshots", "clusterschedulingpolicysnapshots"),
        ("ClusterResourceSnapshots", "clusterresourcesnapshots"),
        ("ClusterResourceBindings", "clusterresourcebindings"),
        ("Works", "works"),
    ] {
        written.insert(kind, list_items(&http.get_json(&format!("{PLACEMENT_PATH}/{resource}")).await?).len());
    }
    Ok(written)
}

/// `written` as one line: the total, then each kind.
pub fn written_line(written: &BTreeMap<&'static str, usize>) -> String {
    let total: usize = written.values().sum();
    let listed: Vec<String> = written.iter().map(|(kind, n)| format!("{n} {kind}")).collect();
    format!("{total} ({})", listed.join(", "))
}
