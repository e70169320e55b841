//! The agent-partition scenario (issue 15, scenario 8): Fleet member agents cut off from
//! their hub and killed while placements keep rolling out.
//!
//! A standalone shard is the hub (logical cluster `hub`, a Fleet hub as every logical
//! cluster is); a second standalone shard is the member installation, one logical
//! cluster per member. Three MemberClusters are each served by a real
//! `atoll-agent --member-cluster` process whose connection to the hub goes through a
//! fault proxy of its own ([`crate::netproxy`]), heartbeating every second. Three
//! ClusterResourcePlacements, all sticky (Fleet's default), select a namespace each
//! holding ConfigMaps: one PickAll, two PickN 2. A writer updates those ConfigMaps on the
//! hub all through the run.
//!
//! Faults, from the seed, in turns: one agent partitioned from the hub for at least
//! [`PARTITION_MIN_MS`] (blackhole: its connections held silent; or cut: every connection
//! reset and new ones closed at once), then healed; one agent `kill -9`ed and restarted. Every fault is shorter than the hub's heartbeat timeout, so no placement may
//! leave a cluster. Meanwhile the run watches the hub's ClusterResourceBindings (every
//! binding's target over time) and samples the MemberClusters' heartbeats; after healing
//! it waits (bounded) for convergence and reads the placements, the hub's ConfigMaps and
//! every member's. The placement checker ([`crate::check::placement`]) judges it all.

mod observe;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ::tests::agent::AgentProcess;
use ::tests::fleet_hub::{self, CLUSTER_PATH, HUB, PLACEMENT_PATH};
use ::tests::placement::member_cluster;
use ::tests::{ShardOptions, ShardProcess, TlsHttp};
use anyhow::Context;
use serde_json::{json, Value};

use crate::history::{AgentFault, PlacementRecord};
use crate::netproxy::{Direction, FaultProxy, NetFault};
use crate::scenario::{save, Report, RunOptions};
use crate::schedule::{self, Action, Step};
use crate::workload::Recorder;

/// The scenario's name.
pub const NAME: &str = "agent-partition";

/// The MemberClusters, each also the name of its logical cluster on the member shard.
const MEMBERS: [&str; 3] = ["m1", "m2", "m3"];

/// The hub's heartbeat timeout: longer than any fault the schedule holds (at most 3 s,
/// plus the agent's next heartbeat), so no member may be judged lost.
const HEARTBEAT_TIMEOUT_SECONDS: u64 = 10;

/// The shortest partition: long enough for the hub to be sampled several times after the
/// heartbeat stopped ([`crate::check::placement::STALL_GRACE_MS`]).
const PARTITION_MIN_MS: u64 = 2_500;

/// The placements: name, the namespace they select, N of PickN (`None`: PickAll).
const PLACEMENTS: [(&str, &str, Option<u32>); 3] =
    [("everywhere", "ns-everywhere", None), ("pair", "ns-pair", Some(2)), ("pair-b", "ns-pair-b", Some(2))];

/// ConfigMaps per selected namespace.
const CONFIGMAPS: u32 = 2;

/// How long the set-up and the convergence after healing may take: a bug bound.
const SETTLE: Duration = Duration::from_secs(60);

/// The faults, in turns: (member index, action).
const TURNS: [(usize, Action); 6] = [
    (0, Action::Net(NetFault::Blackhole)),
    (1, Action::Kill9),
    (2, Action::Net(NetFault::Blackhole)),
    (0, Action::Kill9),
    (1, Action::Net(NetFault::Cut)),
    (2, Action::Kill9),
];

/// The schedule of a fault phase of `duration_ms`: [`TURNS`] with offsets and holds from
/// the seed, partitions held at least [`PARTITION_MIN_MS`] (later steps shifted so none
/// overlaps; a step shifted past the phase's end is dropped).
pub fn draw(seed: u64, duration_ms: u64) -> Vec<Step> {
    let mut steps = schedule::draw_turns(seed, duration_ms, &TURNS);
    let mut shift = 0;
    for step in &mut steps {
        step.at_ms += shift;
        if matches!(step.action, Action::Net(_)) && step.hold_ms < PARTITION_MIN_MS {
            shift += PARTITION_MIN_MS - step.hold_ms;
            step.hold_ms = PARTITION_MIN_MS;
        }
    }
    steps.retain(|s| s.at_ms < duration_ms);
    steps
}

/// One member: its agent and the fault proxy between the agent and the hub.
struct Member {
    name: &'static str,
    agent: AgentProcess,
    proxy: FaultProxy,
}

/// Runs the scenario to its verdict.
pub async fn run(options: &RunOptions) -> anyhow::Result<Report> {
    let started = Instant::now();
    let steps = draw(options.seed, options.fault_seconds * 1000);
    println!("scenario {NAME} seed {}: {} faults scheduled", options.seed, steps.len());
    for step in &steps {
        let member = MEMBERS[step.target];
        println!("  at {:>6} ms for {:>5} ms: agent {member} {:?}", step.at_ms, step.hold_ms, step.action);
    }
    let hub_args = vec!["--fleet-heartbeat-timeout-seconds".to_string(), HEARTBEAT_TIMEOUT_SECONDS.to_string()];
    let hub = ShardProcess::start(ShardOptions { name: "hub".into(), extra_args: hub_args, ..ShardOptions::default() })
        .await
        .context("start the hub shard")?;
    hub.create_logical_cluster(HUB).await?;
    let member_shard = ShardProcess::start(ShardOptions { name: "members".into(), ..ShardOptions::default() })
        .await
        .context("start the member shard")?;
    for name in MEMBERS {
        member_shard.create_logical_cluster(name).await?;
    }
    let http = hub.http().with_timeout(Duration::from_secs(5));
    populate(&http).await?;
    // The agents' kubeconfigs and logs live in the hub's data dir, removed with it.
    let logs = hub.data_dir().join("agents");
    std::fs::create_dir_all(&logs).context("make a dir for the agents' logs")?;
    let mut members = Vec::new();
    for name in MEMBERS {
        members.push(start_member(&hub, &member_shard, name, &logs).await?);
    }
    fleet_hub::wait_joined(&http, MEMBERS.len(), Instant::now() + SETTLE).await.context("the agents join")?;
    for (crp, namespace, pick) in PLACEMENTS {
        http.create(&format!("{PLACEMENT_PATH}/clusterresourceplacements"), &placement(crp, namespace, pick)).await?;
    }
    let reader = observe::Reader { hub: http.clone(), members: member_shard.http() };
    if let (_, Some(why)) = reader.settle(&base_record()).await {
        anyhow::bail!("the placements did not reach every picked member before any fault: {why}");
    }

    let recorder = Recorder::new(options.seed, NAME);
    let stop = Arc::new(AtomicBool::new(false));
    let observed = observe::Observed::default();
    let watcher = tokio::spawn(observe::watch_bindings(http.clone(), recorder.clone(), observed.clone()));
    let sampler = tokio::spawn(observe::sample_heartbeats(http.clone(), recorder.clone(), observed.clone()));
    let writes = Arc::new(AtomicU64::new(0));
    let writer = tokio::spawn(write_configmaps(http.clone(), stop.clone(), writes.clone()));
    let faults = Arc::new(Mutex::new(Vec::new()));
    let phase = inject(&mut members, &steps, &recorder, &faults).await;
    for member in &members {
        member.proxy.heal();
    }
    stop.store(true, Ordering::SeqCst);
    phase?;
    writer.await.context("join the writer")?;

    let mut record = base_record();
    record.faults = observe::lock(&faults).clone();
    record.writes = writes.load(Ordering::SeqCst);
    let settled = reader.settle(&record).await;
    // Heartbeats after the heal are the proof that each partition ended; let the sampler
    // see some before it stops.
    tokio::time::sleep(Duration::from_secs(2)).await;
    observed.stop();
    watcher.await.context("join the binding watcher")?;
    sampler.await.context("join the heartbeat sampler")?;
    let (mut record, why) = settled;
    if let Some(why) = why {
        println!("not converged within {SETTLE:?}: {why}");
    }
    (record.bindings, record.heartbeats) = observed.take();
    for member in &members {
        if record.faults.iter().any(|f| f.member == member.name) {
            println!("agent {} (log tail):\n{}", member.name, member.agent.log_tail(5));
        }
    }
    let mut history = recorder.snapshot();
    history.placement = Some(record);
    save(&history, options.history_file.as_deref())?;
    let violations = crate::check::check_all(&history);
    Ok(Report { history, violations, elapsed: started.elapsed() })
}

/// The record's fixed part: members, timeout, placements as configured.
fn base_record() -> PlacementRecord {
    PlacementRecord {
        heartbeat_timeout_ms: HEARTBEAT_TIMEOUT_SECONDS * 1000,
        members: MEMBERS.iter().map(|m| m.to_string()).collect(),
        ..PlacementRecord::default()
    }
}

/// The placements as the scenario configures them: (name, namespace, pick).
pub(crate) fn placements() -> impl Iterator<Item = (&'static str, &'static str, Option<u32>)> {
    PLACEMENTS.into_iter()
}

/// The selected namespaces, their ConfigMaps, and the MemberClusters.
async fn populate(http: &TlsHttp) -> anyhow::Result<()> {
    for (_, namespace, _) in PLACEMENTS {
        http.create("/clusters/hub/api/v1/namespaces", &json!({"metadata": {"name": namespace}})).await?;
        for i in 0..CONFIGMAPS {
            let config = json!({"metadata": {"name": format!("settings-{i}")}, "data": {"version": "0"}});
            http.create(&format!("/clusters/hub/api/v1/namespaces/{namespace}/configmaps"), &config).await?;
        }
    }
    for name in MEMBERS {
        http.create(&format!("{CLUSTER_PATH}/memberclusters"), &member_cluster(name, json!({"env": "chaos"}))).await?;
    }
    Ok(())
}

/// A sticky placement of `namespace`: PickAll, or PickN `pick`.
fn placement(name: &str, namespace: &str, pick: Option<u32>) -> Value {
    let policy = match pick {
        None => json!({"placementType": "PickAll"}),
        Some(n) => json!({"placementType": "PickN", "numberOfClusters": n}),
    };
    json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": name},
        "spec": {
            "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": namespace}],
            "policy": policy,
        },
    })
}

/// Starts member `name`'s agent, its hub connection through a fault proxy of its own.
async fn start_member(
    hub: &ShardProcess,
    member_shard: &ShardProcess,
    name: &'static str,
    logs: &std::path::Path,
) -> anyhow::Result<Member> {
    let upstream = std::net::SocketAddr::from(([127, 0, 0, 1], hub.admin().port()?));
    let proxy = FaultProxy::start(&format!("hub-{name}"), upstream).await?;
    let identity = hub.user_identity("fleet-agent", &["system:masters"])?;
    let hub_config = logs.join(format!("hub-{name}.kubeconfig"));
    let server = format!("https://{}/clusters/{HUB}", proxy.listen_addr());
    ::tests::kubeconfig::write(&hub_config, &server, &hub.admin().ca_pem, &identity)?;
    let member_config = member_shard.user_kubeconfig(&format!("admin-{name}"), &["system:masters"], name)?;
    let log = logs.join(format!("{name}.log"));
    let args = ["--heartbeat-interval-seconds", "1"];
    let agent = AgentProcess::start_member_cluster(&hub_config, name, &member_config, &args, &log)?;
    Ok(Member { name, agent, proxy })
}

/// Updates the selected ConfigMaps on the hub, one after the other, until told to stop;
/// counts what the hub acknowledged (a failed write is retried by the next round).
async fn write_configmaps(http: TlsHttp, stop: Arc<AtomicBool>, writes: Arc<AtomicU64>) {
    let mut version = 0u64;
    while !stop.load(Ordering::SeqCst) {
        for (_, namespace, _) in PLACEMENTS {
            for i in 0..CONFIGMAPS {
                version += 1;
                let path = format!("/clusters/hub/api/v1/namespaces/{namespace}/configmaps/settings-{i}");
                if http.merge_patch(&path, &json!({"data": {"version": version.to_string()}})).await.is_ok() {
                    writes.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Injects every step at its offset, holds it and lifts it; records each as a fault of
/// the run and an [`AgentFault`].
async fn inject(
    members: &mut [Member],
    steps: &[Step],
    recorder: &Recorder,
    faults: &Mutex<Vec<AgentFault>>,
) -> anyhow::Result<()> {
    let phase_start = Instant::now();
    for step in steps {
        tokio::time::sleep_until((phase_start + Duration::from_millis(step.at_ms)).into()).await;
        let member = &mut members[step.target];
        let hold = Duration::from_millis(step.hold_ms);
        let from_ms = recorder.now_ms();
        let (what, partition) = match step.action {
            Action::Net(fault) => {
                recorder.fault(format!("agent {} ↔ hub: {fault:?} for {} ms", member.name, step.hold_ms));
                if fault == NetFault::Cut {
                    // A cut alone is momentary (the agent reconnects at once): keep the
                    // agent cut off by closing its new connections until the heal.
                    member.proxy.inject(NetFault::Drop(Direction::Upstream));
                }
                member.proxy.inject(fault);
                tokio::time::sleep(hold).await;
                member.proxy.inject(NetFault::Heal);
                recorder.fault(format!("agent {} ↔ hub: healed", member.name));
                (format!("{fault:?}"), true)
            }
            Action::Kill9 => {
                recorder.fault(format!("agent {}: kill -9, restart after {} ms", member.name, step.hold_ms));
                member.agent.kill9();
                tokio::time::sleep(hold).await;
                member.agent.restart().with_context(|| format!("restart agent {}", member.name))?;
                recorder.fault(format!("agent {}: restarted", member.name));
                ("kill -9".to_string(), false)
            }
            other => anyhow::bail!("{other:?} is not an agent fault"),
        };
        let fault = AgentFault { member: member.name.to_string(), what, partition, from_ms, to_ms: recorder.now_ms() };
        observe::lock(faults).push(fault);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_held_long_enough_and_steps_do_not_overlap() {
        for seed in 0..30 {
            let steps = draw(seed, 12_000);
            assert!(steps.len() >= 2, "seed {seed}: {steps:?}");
            for pair in steps.windows(2) {
                assert!(pair[0].at_ms + pair[0].hold_ms < pair[1].at_ms, "seed {seed}: {pair:?}");
            }
            for step in &steps {
                if matches!(step.action, Action::Net(_)) {
                    assert!(step.hold_ms >= PARTITION_MIN_MS, "seed {seed}: {step:?}");
                }
                assert!(step.hold_ms < HEARTBEAT_TIMEOUT_SECONDS * 1000, "seed {seed}: {step:?}");
            }
            assert_eq!(steps[0].action, Action::Net(NetFault::Blackhole), "the first turn is a partition");
        }
        assert_eq!(draw(9, 12_000), draw(9, 12_000));
    }
}
