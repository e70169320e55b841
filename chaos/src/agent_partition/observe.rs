//! What the agent-partition scenario reads from the hub and the members: the binding
//! watch and the heartbeat samples during the run, and the final state after healing.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use serde_json::Value;
use tests::fleet_hub::{CLUSTER_PATH, PLACEMENT_PATH};
use tests::tls_http::list_items;
use tests::TlsHttp;

use super::{placements, SETTLE};
use crate::check::placement::final_state;
use crate::history::{BindingEvent, HeartbeatSample, MemberObject, PlacedObject, PlacementOutcome, PlacementRecord};
use crate::workload::Recorder;

/// How often the hub's MemberClusters are sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// How long a silent binding watch waits before it looks at the stop flag again.
const QUIET: Duration = Duration::from_secs(1);

/// Locks `mutex`, ignoring a poisoned lock (a panicked observer must not hide the rest).
pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The binding events and heartbeat samples recorded so far, shared with the observers.
#[derive(Clone, Default)]
pub(super) struct Observed {
    recorded: Arc<Mutex<(Vec<BindingEvent>, Vec<HeartbeatSample>)>>,
    stop: Arc<AtomicBool>,
}

impl Observed {
    /// Tells the observers to stop.
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Everything recorded: the binding events and the heartbeat samples.
    pub(super) fn take(&self) -> (Vec<BindingEvent>, Vec<HeartbeatSample>) {
        std::mem::take(&mut *lock(&self.recorded))
    }
}

/// A binding as an event (or a list) showed it at `at_ms`; `None` for an object that is
/// not a placement's binding.
fn binding_event(at_ms: u64, object: &Value, exists: bool) -> Option<BindingEvent> {
    let binding = object.pointer("/metadata/name")?.as_str()?.to_string();
    let crp = object.pointer("/metadata/labels/kubernetes-fleet.io~1parent-CRP")?.as_str()?.to_string();
    let cluster = object.pointer("/spec/targetCluster")?.as_str()?.to_string();
    let state = object.pointer("/spec/state").and_then(Value::as_str).unwrap_or_default();
    Some(BindingEvent { at_ms, binding, crp, cluster, scheduled: exists && state != "Unscheduled" })
}

/// Watches the hub's ClusterResourceBindings until told to stop: a list, then a watch
/// from its resourceVersion, and a list again whenever the watch ends. A re-list records
/// every listed binding and the removal of every known binding no longer listed, so a
/// removal missed between two watches is still seen.
pub(super) async fn watch_bindings(http: TlsHttp, recorder: Recorder, observed: Observed) {
    let path = format!("{PLACEMENT_PATH}/clusterresourcebindings");
    let mut known: BTreeMap<String, BindingEvent> = BTreeMap::new();
    while !observed.stopped() {
        let Ok(list) = http.get_json(&path).await else {
            tokio::time::sleep(SAMPLE_EVERY).await;
            continue;
        };
        let at_ms = recorder.now_ms();
        let listed: BTreeMap<String, BindingEvent> = list_items(&list)
            .iter()
            .filter_map(|b| binding_event(at_ms, b, true))
            .map(|e| (e.binding.clone(), e))
            .collect();
        let mut events: Vec<BindingEvent> = known
            .values()
            .filter(|old| !listed.contains_key(&old.binding))
            .map(|old| BindingEvent { at_ms, scheduled: false, ..old.clone() })
            .collect();
        events.extend(listed.values().cloned());
        lock(&observed.recorded).0.extend(events);
        known = listed;
        let rv = list.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("0");
        let watch = format!("{path}?watch=true&resourceVersion={rv}");
        let response = http.send_streaming(http::Method::GET, &watch, &[], Vec::new()).await;
        let Some(response) = response.ok().filter(|r| r.status().is_success()) else { continue };
        let mut body = response.into_body();
        let mut buffer = Vec::new();
        while !observed.stopped() {
            let frame = match tokio::time::timeout(QUIET, body.frame()).await {
                Err(_) => continue,
                Ok(Some(Ok(frame))) => frame,
                Ok(_) => break,
            };
            let Some(data) = frame.data_ref() else { continue };
            buffer.extend_from_slice(data);
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let Ok(event) = serde_json::from_slice::<Value>(&line) else { continue };
                let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
                let exists = kind != "DELETED";
                let object = event.get("object").cloned().unwrap_or_default();
                let Some(seen) = binding_event(recorder.now_ms(), &object, exists) else { continue };
                if exists {
                    known.insert(seen.binding.clone(), seen.clone());
                } else {
                    known.remove(&seen.binding);
                }
                lock(&observed.recorded).0.push(seen);
            }
        }
    }
}

/// Samples every MemberCluster's last heartbeat on the hub until told to stop.
pub(super) async fn sample_heartbeats(http: TlsHttp, recorder: Recorder, observed: Observed) {
    let path = format!("{CLUSTER_PATH}/memberclusters");
    while !observed.stopped() {
        if let Ok(list) = http.get_json(&path).await {
            let at_ms = recorder.now_ms();
            let items = list_items(&list);
            let samples = items.iter().filter_map(|member| {
                let name = member.pointer("/metadata/name")?.as_str()?.to_string();
                let agents = member.pointer("/status/agentStatus")?.as_array()?;
                let agent = agents.iter().find(|a| a["type"] == "MemberAgent")?;
                let last_received = agent.get("lastReceivedHeartbeat")?.as_str()?.to_string();
                Some(HeartbeatSample { at_ms, member: name, last_received })
            });
            lock(&observed.recorded).1.extend(samples);
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
}

/// Reads the final state: placements from the hub, selected objects from the hub and
/// every member.
pub(super) struct Reader {
    pub(super) hub: TlsHttp,
    pub(super) members: TlsHttp,
}

impl Reader {
    /// Reads the final state into `base` until the placement checker's final-state
    /// guarantees hold, at most [`SETTLE`]; returns the last reading and, if they never
    /// held, why.
    pub(super) async fn settle(&self, base: &PlacementRecord) -> (PlacementRecord, Option<String>) {
        let deadline = Instant::now() + SETTLE;
        loop {
            let mut record = base.clone();
            let why = match self.read(&mut record).await {
                Ok(()) => {
                    let found = final_state(&record);
                    let why: Vec<String> = found.iter().map(ToString::to_string).collect();
                    (!why.is_empty()).then(|| why.join("; "))
                }
                Err(error) => Some(format!("{error:#}")),
            };
            if why.is_none() || Instant::now() >= deadline {
                return (record, why);
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn read(&self, record: &mut PlacementRecord) -> anyhow::Result<()> {
        let bindings = list_items(&self.hub.get_json(&format!("{PLACEMENT_PATH}/clusterresourcebindings")).await?);
        let crps = list_items(&self.hub.get_json(&format!("{PLACEMENT_PATH}/clusterresourceplacements")).await?);
        record.placements.clear();
        record.hub_objects.clear();
        record.member_objects.clear();
        for (crp, namespace, pick) in placements() {
            let picked = bindings
                .iter()
                .filter_map(|b| binding_event(0, b, true))
                .filter(|b| b.crp == crp && b.scheduled)
                .map(|b| b.cluster)
                .collect();
            let object = crps.iter().find(|c| c.pointer("/metadata/name").and_then(Value::as_str) == Some(crp));
            let reporting = |kind: &str| object.map(|o| clusters_reporting(o, kind)).unwrap_or_default();
            let (applied, available) = (reporting("Applied"), reporting("Available"));
            let outcome = PlacementOutcome {
                crp: crp.into(),
                namespace: namespace.into(),
                sticky: true,
                pick,
                picked,
                applied,
                available,
            };
            record.placements.push(outcome);
            record.hub_objects.extend(configmaps(&self.hub, "hub", namespace).await?);
            for member in record.members.clone() {
                let held = configmaps(&self.members, &member, namespace).await?;
                let held = held.into_iter().map(|object| MemberObject { member: member.clone(), object });
                record.member_objects.extend(held);
            }
        }
        Ok(())
    }
}

/// The clusters whose per-cluster status in `crp` has condition `kind` True.
fn clusters_reporting(crp: &Value, kind: &str) -> Vec<String> {
    let statuses = crp.pointer("/status/placementStatuses").and_then(Value::as_array);
    statuses
        .into_iter()
        .flatten()
        .filter(|s| {
            let conditions = s.get("conditions").and_then(Value::as_array);
            conditions.into_iter().flatten().any(|c| c["type"] == kind && c["status"] == "True")
        })
        .filter_map(|s| s.get("clusterName").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// The placed ConfigMaps (`settings-*`) of `namespace` in logical cluster `cluster`;
/// none when the namespace does not exist there.
async fn configmaps(http: &TlsHttp, cluster: &str, namespace: &str) -> anyhow::Result<Vec<PlacedObject>> {
    let response = http.get(&format!("/clusters/{cluster}/api/v1/namespaces/{namespace}/configmaps")).await?;
    if response.status == http::StatusCode::NOT_FOUND {
        return Ok(Vec::new());
    }
    anyhow::ensure!(response.status.is_success(), "list {namespace}'s ConfigMaps in {cluster}: {}", response.status);
    let list = response.json()?;
    let placed = list_items(&list).into_iter().filter_map(|c| {
        let name = c.pointer("/metadata/name")?.as_str()?.to_string();
        let data = c.get("data").cloned().unwrap_or_default().to_string();
        name.starts_with("settings-").then(|| PlacedObject { namespace: namespace.to_string(), name, data })
    });
    Ok(placed.collect())
}
