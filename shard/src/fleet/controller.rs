//! The Fleet hub controller of one shard, per logical cluster with Fleet objects, run when
//! a MemberCluster, ClusterResourcePlacement, Work or override of that cluster is
//! written and on a slow resync (which also picks up changed resources):
//! - each MemberCluster gets its reserved namespace `fleet-member-<name>` and its
//!   `ReadyToJoin` / `Joined` conditions from its member agent's report;
//! - each ClusterResourcePlacement gets, in this order: the latest
//!   ClusterResourceSnapshot of what it selects and ClusterSchedulingPolicySnapshot of its
//!   policy (new ones only when their hashes change); its clusters chosen by the framework's
//!   `fleet` profile and recorded as ClusterResourceBindings (Scheduled, Bound,
//!   Unscheduled, as KubeFleet's scheduler keeps them); the rolling update
//!   ([`super::rollout`]); one Work per bound cluster in the cluster's namespace; and the
//!   statuses of the bindings, the policy snapshot and the placement.
//!
//! Snapshots, bindings and Works are owned by their placement, so the garbage collector
//! removes them with it; the member agent's finalizer on a Work holds it until the
//! member's copies are gone.

use super::policy::{self as fleet_policy, PlacementType};
use super::resources::{self, Rule};
use super::rollout::{self, State};
use super::*;
use crate::controllers::{watch_clusters, DirtyClusters};
use crate::state::Shard;
use apiserver::objects;
use apiserver::registry::ResourceType;
use apiserver::storage::{self, DeletePreconditions, ObjectRef, WriteOptions};
use placement::{Outcome, Profile, State as Now};
use protocol::meta;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// How often every logical cluster with Fleet objects is passed again without a write.
const RESYNC: Duration = Duration::from_secs(3);

/// How the hub judges members.
#[derive(Clone, Copy, Debug, Default)]
pub struct Settings {
    pub eligibility: fleet_policy::Eligibility,
}

/// The resources one hub reads and writes.
struct Rows {
    members: Arc<ResourceType>,
    placements: Arc<ResourceType>,
    policy_snapshots: Arc<ResourceType>,
    resource_snapshots: Arc<ResourceType>,
    bindings: Arc<ResourceType>,
    works: Arc<ResourceType>,
    cluster_overrides: Arc<ResourceType>,
    resource_overrides: Arc<ResourceType>,
    namespaces: Arc<ResourceType>,
}

impl Rows {
    fn of(shard: &Shard) -> Option<Rows> {
        let row = |resource: &str| shard.registry.get(PLACEMENT_GROUP, "v1", resource);
        Some(Rows {
            members: shard.registry.get(CLUSTER_GROUP, "v1", "memberclusters")?,
            placements: row("clusterresourceplacements")?,
            policy_snapshots: row("clusterschedulingpolicysnapshots")?,
            resource_snapshots: row("clusterresourcesnapshots")?,
            bindings: row("clusterresourcebindings")?,
            works: row("works")?,
            cluster_overrides: row("clusterresourceoverrides")?,
            resource_overrides: row("resourceoverrides")?,
            namespaces: shard.registry.namespaces(),
        })
    }
}

/// Runs the controller until the process ends.
pub async fn run(shard: Arc<Shard>, settings: Settings) {
    let Some(rows) = Rows::of(&shard) else { return };
    let dirty = Arc::new(DirtyClusters::default());
    let watched = [&rows.members, &rows.placements, &rows.works, &rows.cluster_overrides, &rows.resource_overrides];
    watch_clusters(&shard, &watched, &dirty);
    let mut resync = tokio::time::interval(RESYNC);
    loop {
        tokio::select! {
            _ = dirty.wake.notified() => {}
            _ = resync.tick() => {
                let mut hubs = BTreeSet::new();
                for rt in [&rows.placements, &rows.members] {
                    let _ = objects::scan(&shard.store, rt, |cluster, _| {
                        hubs.insert(cluster.to_string());
                    });
                }
                dirty.extend(hubs);
                continue;
            }
        }
        for cluster in dirty.take() {
            let started = std::time::Instant::now();
            let hub = Hub { shard: &shard, rows: &rows, cluster: &cluster, settings };
            match hub.pass().await {
                Ok(again) => {
                    if again {
                        dirty.mark(&cluster);
                    }
                }
                Err(error) => {
                    tracing::warn!(error = %format!("{error:#}"), %cluster, "Fleet hub pass failed; retrying");
                    let dirty = dirty.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(crate::controllers::REQUEUE_DELAY).await;
                        dirty.mark(&cluster);
                    });
                }
            }
            tracing::debug!(took = ?started.elapsed(), "Fleet hub pass");
        }
    }
}

/// One pass over one hub logical cluster.
struct Hub<'a> {
    shard: &'a Shard,
    rows: &'a Rows,
    cluster: &'a str,
    settings: Settings,
}

fn api(e: apiserver::rest::status::ApiError) -> anyhow::Error {
    anyhow::anyhow!(e.message)
}

fn owner(kind: &str, object: &Value) -> Value {
    json!({
        "apiVersion": object.get("apiVersion").cloned().unwrap_or(Value::Null),
        "kind": kind,
        "name": meta::name(object),
        "uid": meta::meta_str(object, "uid"),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

fn condition(kind: &str, status: bool, reason: &str, message: String, generation: i64) -> Value {
    json!({"type": kind, "status": if status { "True" } else { "False" }, "reason": reason,
        "message": message, "observedGeneration": generation})
}

fn unknown(kind: &str, reason: &str, message: &str, generation: i64) -> Value {
    json!({"type": kind, "status": "Unknown", "reason": reason, "message": message, "observedGeneration": generation})
}

fn find_condition<'v>(object: &'v Value, kind: &str) -> Option<&'v Value> {
    let conditions = object.pointer("/status/conditions").and_then(Value::as_array);
    conditions.into_iter().flatten().find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

fn label<'v>(object: &'v Value, key: &str) -> Option<&'v str> {
    object.pointer("/metadata/labels").and_then(|l| l.get(key)).and_then(Value::as_str)
}

fn annotation<'v>(object: &'v Value, key: &str) -> Option<&'v str> {
    object.pointer("/metadata/annotations").and_then(|l| l.get(key)).and_then(Value::as_str)
}

/// What one placement's pass found out about one bound cluster's Work.
#[derive(Default, Clone)]
struct WorkState {
    /// The resource snapshot the Work carries.
    snapshot: String,
    synced: bool,
    applied: Option<bool>,
    available: Option<bool>,
    /// Available only because nothing could be tracked, and for how long.
    untrackable_since: Option<jiff::Timestamp>,
    message: String,
}

impl Hub<'_> {
    fn list(&self, rt: &ResourceType) -> anyhow::Result<Vec<Value>> {
        objects::list_in_cluster(&self.shard.store, rt, self.cluster)
            .map_err(|e| anyhow::anyhow!("list {}: {}", rt.resource, e.message))
    }

    async fn create(&self, rt: &ResourceType, object: Value) -> anyhow::Result<()> {
        match storage::create(self.shard, rt, self.cluster, object, WriteOptions::default()).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_already_exists() => Ok(()),
            Err(e) => Err(anyhow::anyhow!("create {}: {}", rt.kind, e.message)),
        }
    }

    async fn update(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        change: impl Fn(&Value) -> Value + Send + Sync,
    ) -> anyhow::Result<Value> {
        let at = ObjectRef { cluster: self.cluster, namespace, name };
        storage::guaranteed_update(self.shard, rt, &at, subresource, WriteOptions::default(), |old| Ok(change(old)))
            .await
            .map_err(|e| anyhow::anyhow!("update {} {name}: {}", rt.kind, e.message))
    }

    async fn delete(&self, rt: &ResourceType, namespace: Option<&str>, name: &str) -> anyhow::Result<()> {
        let at = ObjectRef { cluster: self.cluster, namespace, name };
        match storage::delete(self.shard, rt, &at, &DeletePreconditions::default(), WriteOptions::default()).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(anyhow::anyhow!("delete {} {name}: {}", rt.kind, e.message)),
        }
    }

    /// Writes `wanted` as the status of an object when it says something new.
    async fn write_status(&self, rt: &ResourceType, object: &Value, wanted: Value) -> anyhow::Result<bool> {
        let current = object.get("status").cloned().unwrap_or(Value::Null);
        if apiserver::conditions::same_status(&current, &wanted) {
            return Ok(false);
        }
        let name = meta::name(object).unwrap_or_default();
        self.update(rt, meta::namespace(object), name, Some("status"), |old| {
            let mut new = old.clone();
            new["status"] = apiserver::conditions::with_transition_times(old.get("status"), &wanted);
            new
        })
        .await?;
        Ok(true)
    }

    /// The whole pass; returns whether another pass is due at once (something moved).
    async fn pass(&self) -> anyhow::Result<bool> {
        let members = self.list(&self.rows.members)?;
        let mut again = false;
        for member in &members {
            again |= self.member(member).await?;
        }
        let placements = self.list(&self.rows.placements)?;
        if placements.is_empty() {
            return Ok(again);
        }
        let now = jiff::Timestamp::now();
        let mut failed = None;
        for crp in placements.iter().filter(|p| !meta::is_deleting(p)) {
            match self.placement(crp, &members, now).await {
                Ok(moved) => again |= moved,
                Err(error) => {
                    tracing::warn!(error = %format!("{error:#}"), crp = meta::name(crp), "placement pass failed");
                    failed = Some(error);
                }
            }
        }
        failed.map_or(Ok(again), Err)
    }

    /// A member's namespace and its hub conditions.
    async fn member(&self, member: &Value) -> anyhow::Result<bool> {
        if meta::is_deleting(member) {
            return Ok(false);
        }
        let name = meta::name(member).unwrap_or_default();
        let namespace = member_namespace(name);
        let at = ObjectRef { cluster: self.cluster, namespace: None, name: &namespace };
        if storage::get(self.shard, &self.rows.namespaces, &at).is_err() {
            let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": namespace,
                "labels": {FLEET_RESOURCE_LABEL: "true", MEMBER_NAME_LABEL: name},
                "ownerReferences": [owner("MemberCluster", member)],
            }});
            self.create(&self.rows.namespaces, object).await?;
        }
        let generation = meta::generation(member);
        let agent = member
            .pointer("/status/agentStatus")
            .and_then(Value::as_array)
            .and_then(|agents| agents.iter().find(|a| a.get("type").and_then(Value::as_str) == Some("MemberAgent")));
        let joined = agent
            .and_then(|a| a.get("conditions"))
            .and_then(Value::as_array)
            .and_then(|conditions| conditions.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Joined")));
        let joined = match joined.and_then(|c| c.get("status")).and_then(Value::as_str) {
            Some("True") => {
                condition("Joined", true, "MemberClusterJoined", "all the agents joined".into(), generation)
            }
            Some("False") => condition("Joined", false, "MemberClusterLeft", "all the agents left".into(), generation),
            _ => unknown("Joined", "MemberClusterJoinStateUnknown", "the member agent has not reported", generation),
        };
        let ready = condition(
            "ReadyToJoin",
            true,
            "MemberClusterReadyToJoin",
            format!("the hub is ready for the member: namespace {namespace}"),
            generation,
        );
        let mut wanted = member.get("status").cloned().unwrap_or_else(|| json!({}));
        wanted["conditions"] = json!([ready, joined]);
        self.write_status(&self.rows.members, member, wanted).await
    }

    /// One placement's whole pass; returns whether something moved.
    async fn placement(&self, crp: &Value, members: &[Value], now: jiff::Timestamp) -> anyhow::Result<bool> {
        let name = meta::name(crp).unwrap_or_default().to_string();
        let generation = meta::generation(crp);
        let policy = crp.pointer("/spec/policy");
        let selected = self.select(crp);
        let framework_policy = fleet_policy::policy(&name, policy);
        let (objects, framework_policy) = match (selected, framework_policy) {
            (Ok(objects), Ok(p)) => (objects, p),
            (Err(message), _) | (_, Err(message)) => {
                let scheduled = condition(
                    "ClusterResourcePlacementScheduled",
                    false,
                    "InvalidResourceSelectors",
                    message,
                    generation,
                );
                let wanted = json!({"conditions": [scheduled], "placementStatuses": [], "selectedResources": []});
                return self.write_status(&self.rows.placements, crp, wanted).await;
            }
        };
        let mut moved = false;
        let (resource_snapshot, resource_index, created) = self.resource_snapshot(crp, &objects).await?;
        moved |= created;
        let (policy_snapshot, created) = self.policy_snapshot(crp).await?;
        moved |= created;
        let policy_snapshot_name = meta::name(&policy_snapshot).unwrap_or_default().to_string();

        // Scheduling: the framework over the members, sticky to the live bindings.
        let mut bindings: Vec<Value> =
            self.list(&self.rows.bindings)?.into_iter().filter(|b| label(b, PARENT_CRP_LABEL) == Some(&name)).collect();
        let live = |b: &&Value| !meta::is_deleting(b) && State::of(b) != State::Unscheduled;
        let current: Vec<String> = bindings.iter().filter(live).filter_map(target_of).collect();
        let candidates: Vec<placement::Candidate> = members
            .iter()
            .map(|m| {
                let mut candidate = fleet_policy::candidate(m, now, self.settings.eligibility);
                // A member that stops heartbeating keeps what it has (KubeFleet never
                // re-checks a current binding); only leaving the fleet takes it away.
                if current.contains(&candidate.name) && !meta::is_deleting(m) {
                    candidate.ready = true;
                }
                candidate
            })
            .collect();
        let state = Now { now, current: current.clone(), other_decisions: BTreeMap::new() };
        let decision = placement::decide(&Profile::fleet(), &framework_policy, &candidates, &state)
            .map_err(|e| anyhow::anyhow!("decide: {e}"))?;
        for cluster in &decision.desired {
            let report = decision.report(cluster);
            let cluster_decision = cluster_decision(cluster, report, true);
            let existing = bindings.iter().find(|b| target_of(b).as_deref() == Some(cluster.as_str()));
            match existing {
                Some(binding) if meta::is_deleting(binding) => {}
                Some(binding) => {
                    let state = State::of(binding);
                    let wanted_state = match state {
                        State::Unscheduled => match annotation(binding, PREVIOUS_STATE_ANNOTATION) {
                            Some("Bound") => State::Bound,
                            _ => State::Scheduled,
                        },
                        other => other,
                    };
                    let spec = binding.get("spec").cloned().unwrap_or_default();
                    if wanted_state != state
                        || spec.get("schedulingPolicySnapshotName").and_then(Value::as_str)
                            != Some(&policy_snapshot_name)
                        || spec.pointer("/clusterDecision/reason") != cluster_decision.get("reason")
                    {
                        let binding_name = meta::name(binding).unwrap_or_default();
                        self.update(&self.rows.bindings, None, binding_name, None, |old| {
                            let mut new = old.clone();
                            new["spec"]["state"] = json!(wanted_state.as_str());
                            new["spec"]["schedulingPolicySnapshotName"] = json!(policy_snapshot_name);
                            new["spec"]["clusterDecision"] = cluster_decision.clone();
                            new
                        })
                        .await?;
                        moved = true;
                    }
                }
                None => {
                    let binding = json!({
                        "apiVersion": format!("{PLACEMENT_GROUP}/v1"),
                        "kind": "ClusterResourceBinding",
                        "metadata": {
                            "name": binding_name(&name, cluster),
                            "labels": {PARENT_CRP_LABEL: name},
                            "ownerReferences": [owner("ClusterResourcePlacement", crp)],
                        },
                        "spec": {
                            "state": "Scheduled",
                            "targetCluster": cluster,
                            "schedulingPolicySnapshotName": policy_snapshot_name,
                            "clusterDecision": cluster_decision,
                        },
                    });
                    self.create(&self.rows.bindings, binding).await?;
                    moved = true;
                }
            }
        }
        for binding in bindings.iter().filter(live) {
            let cluster = target_of(binding).unwrap_or_default();
            if decision.desired.contains(&cluster) {
                continue;
            }
            let previous = State::of(binding).as_str();
            let binding_name = meta::name(binding).unwrap_or_default();
            self.update(&self.rows.bindings, None, binding_name, None, |old| {
                let mut new = old.clone();
                new["spec"]["state"] = json!("Unscheduled");
                meta::set_annotation(&mut new, PREVIOUS_STATE_ANNOTATION, previous);
                new
            })
            .await?;
            moved = true;
        }
        self.policy_snapshot_status(crp, &policy_snapshot, &decision).await?;
        if moved {
            bindings = self
                .list(&self.rows.bindings)?
                .into_iter()
                .filter(|b| label(b, PARENT_CRP_LABEL) == Some(&name))
                .collect();
        }

        // Works: what each bound cluster gets, and how far it got.
        let snapshot_name = meta::name(&resource_snapshot).unwrap_or_default().to_string();
        let works = self.list(&self.rows.works)?;
        let mut work_states: BTreeMap<String, WorkState> = BTreeMap::new();
        let mut override_failures: BTreeMap<String, String> = BTreeMap::new();
        let mut overridden: BTreeMap<String, bool> = BTreeMap::new();
        for binding in bindings.iter().filter(|b| !meta::is_deleting(b) && State::of(b) != State::Scheduled) {
            let cluster = target_of(binding).unwrap_or_default();
            let Some(member) = members.iter().find(|m| meta::name(m) == Some(cluster.as_str())) else { continue };
            let binding_snapshot = binding.pointer("/spec/resourceSnapshotName").and_then(Value::as_str);
            let Some(binding_snapshot) = binding_snapshot.filter(|s| !s.is_empty()) else { continue };
            let manifests = if binding_snapshot == snapshot_name {
                objects.clone()
            } else {
                match self.snapshot_objects(binding_snapshot)? {
                    Some(objects) => objects,
                    None => objects.clone(),
                }
            };
            let (manifests, any_override) = match self.overridden(&manifests, member) {
                Ok(result) => result,
                Err(message) => {
                    override_failures.insert(cluster.clone(), message);
                    continue;
                }
            };
            overridden.insert(cluster.clone(), any_override);
            let (state, wrote) = self.work(crp, binding, &cluster, binding_snapshot, manifests, &works).await?;
            moved |= wrote;
            work_states.insert(cluster, state);
        }

        // The rolling update.
        let target = match PlacementType::of(policy) {
            PlacementType::PickAll => bindings.iter().filter(live).count(),
            _ => fleet_policy::wanted(policy).unwrap_or(0),
        };
        let rolling = crp.pointer("/spec/strategy/rollingUpdate");
        let max_unavailable = rollout::scaled(rolling.and_then(|r| r.get("maxUnavailable")), 25, target)
            .map_err(|e| anyhow::anyhow!("spec.strategy.rollingUpdate.maxUnavailable: {e}"))?;
        let max_surge = rollout::scaled(rolling.and_then(|r| r.get("maxSurge")), 25, target)
            .map_err(|e| anyhow::anyhow!("spec.strategy.rollingUpdate.maxSurge: {e}"))?;
        let unavailable_period = rolling.and_then(|r| r.get("unavailablePeriodSeconds")).and_then(Value::as_i64);
        let unavailable_period = jiff::SignedDuration::from_secs(unavailable_period.unwrap_or(60));
        let mut roll: Vec<rollout::Member> = bindings
            .iter()
            .filter(|b| !meta::is_deleting(b))
            .map(|b| {
                let cluster = target_of(b).unwrap_or_default();
                let work = work_states.get(&cluster).cloned().unwrap_or_default();
                let ready = work.available == Some(true)
                    && work.untrackable_since.is_none_or(|since| now.duration_since(since) >= unavailable_period);
                rollout::Member {
                    name: meta::name(b).unwrap_or_default().to_string(),
                    state: State::of(b),
                    current: b.pointer("/spec/resourceSnapshotName").and_then(Value::as_str) == Some(&snapshot_name),
                    ready,
                    failed: work.applied == Some(false) || override_failures.contains_key(&cluster),
                }
            })
            .collect();
        roll.sort_by(|a, b| a.name.cmp(&b.name));
        let plan = rollout::plan(&roll, target, max_unavailable, max_surge);
        for binding_name in plan.bind.iter().chain(&plan.update) {
            self.update(&self.rows.bindings, None, binding_name, None, |old| {
                let mut new = old.clone();
                new["spec"]["state"] = json!("Bound");
                new["spec"]["resourceSnapshotName"] = json!(snapshot_name);
                new
            })
            .await?;
            moved = true;
        }
        for binding_name in &plan.remove {
            self.delete(&self.rows.bindings, None, binding_name).await?;
            moved = true;
        }
        if moved {
            bindings = self
                .list(&self.rows.bindings)?
                .into_iter()
                .filter(|b| label(b, PARENT_CRP_LABEL) == Some(&name))
                .collect();
        }
        self.remove_stale_works(&name, &bindings, &works).await?;

        // Statuses: each binding's, then the placement's.
        let blocked: BTreeSet<&String> = plan.blocked.iter().collect();
        let mut per_cluster = Vec::new();
        for binding in bindings.iter().filter(|b| !meta::is_deleting(b)) {
            let cluster = target_of(binding).unwrap_or_default();
            let binding_name = meta::name(binding).unwrap_or_default().to_string();
            let conditions = binding_conditions(
                binding,
                &snapshot_name,
                blocked.contains(&binding_name),
                work_states.get(&cluster),
                override_failures.get(&cluster),
                overridden.get(&cluster).copied(),
            );
            let mut wanted = binding.get("status").cloned().unwrap_or_else(|| json!({}));
            wanted["conditions"] = Value::Array(conditions.clone());
            self.write_status(&self.rows.bindings, binding, wanted).await?;
            if State::of(binding) != State::Unscheduled {
                per_cluster.push((cluster, binding.clone(), conditions));
            }
        }
        let status = placement_status(crp, &decision, &per_cluster, &objects, &resource_index, &policy_snapshot);
        self.write_status(&self.rows.placements, crp, status).await?;
        Ok(moved)
    }

    /// The prepared, ordered objects a placement selects, or why its selectors are wrong.
    fn select(&self, crp: &Value) -> Result<Vec<Value>, String> {
        let selectors = resources::selectors(crp)?;
        let mut picked: BTreeMap<(String, String, String), Value> = BTreeMap::new();
        for (i, selector) in selectors.iter().enumerate() {
            let rt = self.shard.registry.resource_for_kind(self.cluster, &selector.group, &selector.kind).ok_or_else(
                || {
                    format!(
                        "spec.resourceSelectors[{i}]: the hub serves no kind {} in group {:?} (version {})",
                        selector.kind, selector.group, selector.version
                    )
                },
            )?;
            if rt.namespaced {
                return Err(format!(
                    "spec.resourceSelectors[{i}]: {} is namespaced; a ClusterResourcePlacement selects cluster-scoped resources (select their Namespace)",
                    selector.kind
                ));
            }
            for object in self.list(&rt).map_err(|e| e.to_string())? {
                if meta::is_deleting(&object) || !selector.picks(&object) {
                    continue;
                }
                if selector.is_namespace() {
                    let namespace = meta::name(&object).unwrap_or_default().to_string();
                    if resources::reserved_namespace(&namespace) {
                        continue;
                    }
                    if !selector.namespace_only {
                        for inner in self.namespace_contents(&namespace).map_err(|e| e.to_string())? {
                            insert(&mut picked, inner);
                        }
                    }
                }
                insert(&mut picked, object);
            }
        }
        let mut out = Vec::new();
        for object in picked.into_values() {
            match resources::envelope_contents(&object) {
                Some(Ok(inner)) => out.extend(inner.iter().map(resources::prepare)),
                Some(Err(message)) => return Err(message),
                None => out.push(resources::prepare(&object)),
            }
        }
        resources::sort(&mut out);
        Ok(out)
    }

    /// Every stored object in a namespace of the hub that placement carries.
    fn namespace_contents(&self, namespace: &str) -> anyhow::Result<Vec<Value>> {
        let mut out = Vec::new();
        for rt in self.shard.registry.stored(self.cluster) {
            if !rt.namespaced || !placeable(&rt) {
                continue;
            }
            let prefix = objects::collection_prefix(&rt, Some(self.cluster), Some(namespace));
            let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
            let page = self.shard.store.list(&options, |_, _| true)?;
            for (_, stored) in &page.items {
                let mut object = objects::decode(stored).map_err(api)?;
                if meta::is_deleting(&object) || has_controller(&object) {
                    continue;
                }
                if object.get("apiVersion").is_none() {
                    object["apiVersion"] = json!(rt.api_version());
                    object["kind"] = json!(rt.kind);
                }
                out.push(object);
            }
        }
        Ok(out)
    }

    /// The latest resource snapshot of a placement, made anew when its selection's hash
    /// changed: (master snapshot, its index, whether one was created).
    async fn resource_snapshot(&self, crp: &Value, objects: &[Value]) -> anyhow::Result<(Value, String, bool)> {
        let name = meta::name(crp).unwrap_or_default();
        let hash = resources::hash(objects);
        let snapshots: Vec<Value> = self
            .list(&self.rows.resource_snapshots)?
            .into_iter()
            .filter(|s| label(s, PARENT_CRP_LABEL) == Some(name))
            .collect();
        let latest = snapshots
            .iter()
            .find(|s| label(s, IS_LATEST_LABEL) == Some("true") && annotation(s, SUBINDEX_ANNOTATION).is_none());
        if let Some(latest) = latest {
            if annotation(latest, RESOURCE_HASH_ANNOTATION) == Some(hash.as_str()) {
                let index = label(latest, RESOURCE_INDEX_LABEL).unwrap_or("0").to_string();
                return Ok((latest.clone(), index, false));
            }
        }
        let index = snapshots.iter().filter_map(|s| label(s, RESOURCE_INDEX_LABEL)?.parse::<u64>().ok()).max();
        let index = index.map_or(0, |i| i + 1);
        self.retire(&self.rows.resource_snapshots, &snapshots, RESOURCE_INDEX_LABEL, crp).await?;
        let chunks = resources::split(objects, resources::SNAPSHOT_LIMIT_BYTES);
        let mut master = Value::Null;
        for (sub, chunk) in chunks.iter().enumerate() {
            let (snapshot_name, mut labels, mut annotations) = if sub == 0 {
                (
                    format!("{name}-{index}-snapshot"),
                    json!({IS_LATEST_LABEL: "true"}),
                    json!({
                        RESOURCE_HASH_ANNOTATION: hash,
                        SNAPSHOT_COUNT_ANNOTATION: chunks.len().to_string(),
                    }),
                )
            } else {
                (format!("{name}-{index}-{}", sub - 1), json!({}), json!({SUBINDEX_ANNOTATION: (sub - 1).to_string()}))
            };
            labels[PARENT_CRP_LABEL] = json!(name);
            labels[RESOURCE_INDEX_LABEL] = json!(index.to_string());
            annotations[CRP_GENERATION_ANNOTATION] = json!(meta::generation(crp).to_string());
            let snapshot = json!({
                "apiVersion": format!("{PLACEMENT_GROUP}/v1"),
                "kind": "ClusterResourceSnapshot",
                "metadata": {"name": snapshot_name, "labels": labels, "annotations": annotations,
                    "ownerReferences": [owner("ClusterResourcePlacement", crp)]},
                "spec": {"selectedResources": chunk},
            });
            if sub == 0 {
                master = snapshot.clone();
            }
            self.create(&self.rows.resource_snapshots, snapshot).await?;
        }
        Ok((master, index.to_string(), true))
    }

    /// The objects of a resource snapshot group, by its master's name.
    fn snapshot_objects(&self, master: &str) -> anyhow::Result<Option<Vec<Value>>> {
        let snapshots = self.list(&self.rows.resource_snapshots)?;
        let Some(master) = snapshots.iter().find(|s| meta::name(s) == Some(master)) else { return Ok(None) };
        let index = label(master, RESOURCE_INDEX_LABEL);
        let parent = label(master, PARENT_CRP_LABEL);
        let mut group: Vec<&Value> = snapshots
            .iter()
            .filter(|s| label(s, RESOURCE_INDEX_LABEL) == index && label(s, PARENT_CRP_LABEL) == parent)
            .collect();
        group.sort_by_key(|s| annotation(s, SUBINDEX_ANNOTATION).and_then(|i| i.parse::<i64>().ok()).unwrap_or(-1));
        let objects = group
            .iter()
            .flat_map(|s| s.pointer("/spec/selectedResources").and_then(Value::as_array).cloned().unwrap_or_default())
            .collect();
        Ok(Some(objects))
    }

    /// Marks a placement's older snapshots not latest and keeps at most
    /// `revisionHistoryLimit - 1` of their index groups, oldest going first.
    async fn retire(
        &self,
        rt: &ResourceType,
        snapshots: &[Value],
        index_label: &str,
        crp: &Value,
    ) -> anyhow::Result<()> {
        let limit = crp.pointer("/spec/revisionHistoryLimit").and_then(Value::as_u64).unwrap_or(10).max(1) as usize;
        for snapshot in snapshots.iter().filter(|s| label(s, IS_LATEST_LABEL) == Some("true")) {
            let name = meta::name(snapshot).unwrap_or_default();
            self.update(rt, None, name, None, |old| {
                let mut new = old.clone();
                new["metadata"]["labels"][IS_LATEST_LABEL] = json!("false");
                new
            })
            .await?;
        }
        let indexes: BTreeSet<u64> = snapshots.iter().filter_map(|s| label(s, index_label)?.parse().ok()).collect();
        let excess = indexes.len().saturating_sub(limit - 1);
        for old in indexes.iter().take(excess) {
            for snapshot in snapshots.iter().filter(|s| label(s, index_label) == Some(old.to_string().as_str())) {
                self.delete(rt, None, meta::name(snapshot).unwrap_or_default()).await?;
            }
        }
        Ok(())
    }

    /// The latest policy snapshot of a placement: a new one when the policy's hash
    /// changed, else the latest with its number of clusters and generation brought up.
    async fn policy_snapshot(&self, crp: &Value) -> anyhow::Result<(Value, bool)> {
        let name = meta::name(crp).unwrap_or_default();
        let policy = crp.pointer("/spec/policy");
        let hash = fleet_policy::hash(policy);
        let generation = meta::generation(crp).to_string();
        let number = match PlacementType::of(policy) {
            PlacementType::PickN => fleet_policy::wanted(policy).map(|n| n.to_string()),
            _ => None,
        };
        let snapshots: Vec<Value> = self
            .list(&self.rows.policy_snapshots)?
            .into_iter()
            .filter(|s| label(s, PARENT_CRP_LABEL) == Some(name))
            .collect();
        let latest = snapshots.iter().find(|s| label(s, IS_LATEST_LABEL) == Some("true"));
        if let Some(latest) = latest.filter(|s| s.pointer("/spec/policyHash").and_then(Value::as_str) == Some(&hash)) {
            let stale = annotation(latest, CRP_GENERATION_ANNOTATION) != Some(generation.as_str())
                || annotation(latest, NUMBER_OF_CLUSTERS_ANNOTATION) != number.as_deref();
            if !stale {
                return Ok((latest.clone(), false));
            }
            let latest_name = meta::name(latest).unwrap_or_default();
            let updated = self
                .update(&self.rows.policy_snapshots, None, latest_name, None, |old| {
                    let mut new = old.clone();
                    meta::set_map_entry(&mut new, "annotations", CRP_GENERATION_ANNOTATION, Some(&generation));
                    meta::set_map_entry(&mut new, "annotations", NUMBER_OF_CLUSTERS_ANNOTATION, number.as_deref());
                    new["spec"]["policy"] = policy.cloned().unwrap_or(Value::Null);
                    new
                })
                .await?;
            return Ok((updated, true));
        }
        let index = snapshots.iter().filter_map(|s| label(s, POLICY_INDEX_LABEL)?.parse::<u64>().ok()).max();
        let index = index.map_or(0, |i| i + 1);
        self.retire(&self.rows.policy_snapshots, &snapshots, POLICY_INDEX_LABEL, crp).await?;
        let mut annotations = json!({CRP_GENERATION_ANNOTATION: generation});
        if let Some(number) = number {
            annotations[NUMBER_OF_CLUSTERS_ANNOTATION] = json!(number);
        }
        let snapshot = json!({
            "apiVersion": format!("{PLACEMENT_GROUP}/v1"),
            "kind": "ClusterSchedulingPolicySnapshot",
            "metadata": {
                "name": format!("{name}-{index}"),
                "labels": {PARENT_CRP_LABEL: name, IS_LATEST_LABEL: "true", POLICY_INDEX_LABEL: index.to_string()},
                "annotations": annotations,
                "ownerReferences": [owner("ClusterResourcePlacement", crp)],
            },
            "spec": {"policy": policy.cloned().unwrap_or(json!({"placementType": "PickAll"})), "policyHash": hash},
        });
        self.create(&self.rows.policy_snapshots, snapshot.clone()).await?;
        Ok((snapshot, true))
    }

    /// The policy snapshot's status: the decisions (picked first, then up to 20 not
    /// picked and the rejected, at most 1,000) and whether the policy is fulfilled.
    async fn policy_snapshot_status(
        &self,
        crp: &Value,
        snapshot: &Value,
        decision: &placement::Decision,
    ) -> anyhow::Result<()> {
        // A snapshot just created is read back for its uid and generation.
        let name = meta::name(snapshot).unwrap_or_default();
        let at = ObjectRef { cluster: self.cluster, namespace: None, name };
        let (snapshot, _) = storage::get(self.shard, &self.rows.policy_snapshots, &at).map_err(api)?;
        let mut targets: Vec<Value> =
            decision.desired.iter().map(|c| cluster_decision(c, decision.report(c), true)).collect();
        let not_picked = decision.clusters.iter().filter(|r| r.outcome == Outcome::NotPicked).take(20);
        let rejected = decision.clusters.iter().filter(|r| r.outcome == Outcome::Rejected);
        targets.extend(not_picked.chain(rejected).map(|r| cluster_decision(&r.name, Some(r), false)));
        targets.truncate(1000);
        let fulfilled = decision.unsatisfied == 0 && decision.missing.is_empty();
        let scheduled = if fulfilled {
            condition(
                "Scheduled",
                true,
                "SchedulingPolicyFulfilled",
                format!(
                    "found all cluster needed as specified by the scheduling policy, found {} cluster(s)",
                    decision.desired.len()
                ),
                meta::generation(&snapshot),
            )
        } else {
            condition(
                "Scheduled",
                false,
                "SchedulingPolicyUnfulfilled",
                format!(
                    "could not find all the clusters needed as specified by the scheduling policy, found {} cluster(s) instead{}",
                    decision.desired.len(),
                    blocking(decision)
                ),
                meta::generation(&snapshot),
            )
        };
        let wanted = json!({
            "observedCRPGeneration": meta::generation(crp),
            "conditions": [scheduled],
            "targetClusters": targets,
        });
        self.write_status(&self.rows.policy_snapshots, &snapshot, wanted).await?;
        Ok(())
    }

    /// Manifests for one member after the overrides that apply to it; whether any did.
    fn overridden(&self, manifests: &[Value], member: &Value) -> Result<(Vec<Value>, bool), String> {
        let cluster = meta::name(member).unwrap_or_default();
        let labels = meta::labels(member);
        let cluster_overrides = self.list(&self.rows.cluster_overrides).map_err(|e| e.to_string())?;
        let resource_overrides = self.list(&self.rows.resource_overrides).map_err(|e| e.to_string())?;
        let mut any = false;
        let mut out = Vec::new();
        for manifest in manifests {
            let mut rules: Vec<Rule> = Vec::new();
            let kind = manifest.get("kind").and_then(Value::as_str).unwrap_or_default();
            let api_version = manifest.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let name = meta::name(manifest).unwrap_or_default();
            let namespace = meta::namespace(manifest);
            let picks = |selector: &Value, kind: &str, name: &str| {
                selector.get("group").and_then(Value::as_str).unwrap_or_default() == group_of(kind, group)
                    && selector.get("kind").and_then(Value::as_str) == Some(kind)
                    && selector.get("name").and_then(Value::as_str) == Some(name)
            };
            // Cluster-scoped objects by themselves, namespaced ones through their namespace.
            let (scope_kind, scope_name) = match namespace {
                Some(ns) => ("Namespace", ns),
                None => (kind, name),
            };
            for o in &cluster_overrides {
                let selectors = o.pointer("/spec/clusterResourceSelectors").and_then(Value::as_array);
                if selectors.into_iter().flatten().any(|s| picks(s, scope_kind, scope_name)) {
                    rules.extend(resources::rules_for(o, &labels));
                }
            }
            for o in resource_overrides.iter().filter(|o| namespace.is_some() && meta::namespace(o) == namespace) {
                let selectors = o.pointer("/spec/resourceSelectors").and_then(Value::as_array);
                if selectors.into_iter().flatten().any(|s| picks(s, kind, name)) {
                    rules.extend(resources::rules_for(o, &labels));
                }
            }
            any |= !rules.is_empty();
            let what = format!("{kind} {}{name}", namespace.map(|n| format!("{n}/")).unwrap_or_default());
            match resources::apply_rules(manifest, &rules, cluster, &labels) {
                Ok(Some(object)) => out.push(object),
                Ok(None) => {}
                Err(message) => return Err(format!("override of {what} for cluster {cluster}: {message}")),
            }
        }
        Ok((out, any))
    }

    /// Creates or updates the Work of one bound cluster; returns how far the member got.
    async fn work(
        &self,
        crp: &Value,
        binding: &Value,
        cluster: &str,
        snapshot: &str,
        manifests: Vec<Value>,
        works: &[Value],
    ) -> anyhow::Result<(WorkState, bool)> {
        let crp_name = meta::name(crp).unwrap_or_default();
        let namespace = member_namespace(cluster);
        let name = format!("{crp_name}-work");
        let binding_name = meta::name(binding).unwrap_or_default();
        let digest = resources::hash(&manifests);
        let existing = works.iter().find(|w| meta::namespace(w) == Some(&namespace) && meta::name(w) == Some(&name));
        let labels = json!({PARENT_CRP_LABEL: crp_name, PARENT_BINDING_LABEL: binding_name,
            PARENT_SNAPSHOT_INDEX_LABEL: snapshot.trim_end_matches("-snapshot").rsplit('-').next().unwrap_or("0")});
        let annotations = json!({PARENT_SNAPSHOT_NAME_ANNOTATION: snapshot, WORK_HASH_ANNOTATION: digest});
        let mut wrote = false;
        let work = match existing {
            Some(work) if annotation(work, WORK_HASH_ANNOTATION) == Some(&digest) && !meta::is_deleting(work) => {
                work.clone()
            }
            Some(work) if !meta::is_deleting(work) => {
                wrote = true;
                self.update(&self.rows.works, Some(&namespace), &name, None, |old| {
                    let mut new = old.clone();
                    new["metadata"]["labels"] = labels.clone();
                    new["metadata"]["annotations"] = annotations.clone();
                    new["spec"]["workload"]["manifests"] = json!(manifests);
                    new
                })
                .await?
            }
            Some(_) => return Ok((WorkState::default(), false)),
            None => {
                wrote = true;
                let work = json!({
                    "apiVersion": format!("{PLACEMENT_GROUP}/v1"),
                    "kind": "Work",
                    "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations,
                        "ownerReferences": [owner("ClusterResourcePlacement", crp)]},
                    "spec": {"workload": {"manifests": manifests}},
                });
                self.create(&self.rows.works, work.clone()).await?;
                work
            }
        };
        Ok((work_state(&work, wrote), wrote))
    }

    /// Deletes the Works of a placement whose cluster no longer has a binding past
    /// Scheduled.
    async fn remove_stale_works(&self, crp: &str, bindings: &[Value], works: &[Value]) -> anyhow::Result<()> {
        let wanted: BTreeSet<String> = bindings
            .iter()
            .filter(|b| State::of(b) != State::Scheduled)
            .filter_map(|b| target_of(b).map(|c| member_namespace(&c)))
            .collect();
        for work in works.iter().filter(|w| label(w, PARENT_CRP_LABEL) == Some(crp) && !meta::is_deleting(w)) {
            let namespace = meta::namespace(work).unwrap_or_default();
            if !wanted.contains(namespace) {
                self.delete(&self.rows.works, Some(namespace), meta::name(work).unwrap_or_default()).await?;
            }
        }
        Ok(())
    }
}

/// The reserved namespace of a member cluster in its hub.
pub fn member_namespace(cluster: &str) -> String {
    format!("fleet-member-{cluster}")
}

fn target_of(binding: &Value) -> Option<String> {
    binding.pointer("/spec/targetCluster").and_then(Value::as_str).map(str::to_string)
}

fn group_of<'a>(kind: &str, group: &'a str) -> &'a str {
    if kind == "Namespace" {
        ""
    } else {
        group
    }
}

fn insert(picked: &mut BTreeMap<(String, String, String), Value>, object: Value) {
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    let namespace = meta::namespace(&object).unwrap_or_default().to_string();
    let name = meta::name(&object).unwrap_or_default().to_string();
    picked.insert((kind, namespace, name), object);
}

/// Whether objects of `rt` travel with their namespace: not events, leases, endpoints
/// (members make their own) nor the control plane's own kinds.
fn placeable(rt: &ResourceType) -> bool {
    let skipped_group = rt.group == "events.k8s.io"
        || rt.group == "coordination.k8s.io"
        || rt.group == "discovery.k8s.io"
        || rt.group.ends_with(".kcp.io")
        || rt.group.ends_with("kubernetes-fleet.io")
        || rt.group.ends_with("open-cluster-management.io");
    let skipped_core = rt.group.is_empty() && matches!(rt.resource.as_str(), "events" | "endpoints" | "pods");
    !(skipped_group || skipped_core)
}

/// Objects another object controls (a ReplicaSet of a Deployment) are made again on the
/// member; KubeFleet does not place them.
fn has_controller(object: &Value) -> bool {
    let owners = object.pointer("/metadata/ownerReferences").and_then(Value::as_array);
    owners.into_iter().flatten().any(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
}

/// A unique binding name, as KubeFleet forms it: `<crp[:26]>-<cluster[:27]>-<8 hex>`.
fn binding_name(crp: &str, cluster: &str) -> String {
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let cut = |s: &str, n: usize| s.chars().take(n).collect::<String>().trim_end_matches(['-', '.']).to_string();
    format!("{}-{}-{}", cut(crp, 26), cut(cluster, 27), &suffix[..8])
}

/// A ClusterDecision: the cluster, whether it was selected, its scores and the
/// framework's reason.
fn cluster_decision(cluster: &str, report: Option<&placement::ClusterReport>, selected: bool) -> Value {
    let score = |plugin: &str| -> i64 {
        let Some(report) = report else { return 0 };
        let scorers = Profile::fleet().scorers;
        let position = scorers.iter().position(|s| format!("{:?}", s.plugin) == plugin);
        position.and_then(|p| report.scores.get(p)).and_then(|s| s.raw).unwrap_or(0.0) as i64
    };
    let reason = match report {
        Some(r) if selected => format!(
            "Successfully scheduled resources for placement in \"{cluster}\" (affinity score: {}, topology spread score: {}): {}",
            score("PreferredTerms"),
            score("TopologySpread"),
            r.reason
        ),
        Some(r) => format!("Cluster \"{cluster}\": {}{}", r.reason, r.plugin.as_ref().map(|p| format!(" ({p})")).unwrap_or_default()),
        None => format!("Cluster \"{cluster}\""),
    };
    json!({
        "clusterName": cluster,
        "selected": selected,
        "clusterScore": {"affinityScore": score("PreferredTerms"), "priorityScore": score("TopologySpread")},
        "reason": reason,
    })
}

/// Why a policy is short of clusters: the first few rejected clusters and the plugin that
/// rejected each, so a placement that cannot progress says what blocks it.
fn blocking(decision: &placement::Decision) -> String {
    let mut parts: Vec<String> = decision.missing.iter().map(|n| format!("cluster {n:?} is not found")).collect();
    let rejected = decision.clusters.iter().filter(|r| r.outcome == Outcome::Rejected).take(5);
    parts.extend(rejected.map(|r| format!("{}: {}", r.name, r.reason)));
    if parts.is_empty() {
        String::new()
    } else {
        format!("; blocked by {}", parts.join("; "))
    }
}

/// How far a member got with a Work, read from its status.
fn work_state(work: &Value, just_written: bool) -> WorkState {
    let generation = meta::generation(work);
    let current = |c: &&Value| c.get("observedGeneration").and_then(Value::as_i64) == Some(generation);
    let status = |kind: &str| -> Option<(bool, Value)> {
        let c = find_condition(work, kind).filter(current)?;
        Some((c.get("status").and_then(Value::as_str) == Some("True"), c.clone()))
    };
    let snapshot = annotation(work, PARENT_SNAPSHOT_NAME_ANNOTATION).unwrap_or_default().to_string();
    if just_written {
        return WorkState { snapshot, synced: true, ..WorkState::default() };
    }
    let applied = status("Applied");
    let available = status("Available");
    let untrackable_since = available
        .as_ref()
        .filter(|(ok, c)| *ok && c.get("reason").and_then(Value::as_str) == Some("WorkNotTrackable"))
        .and_then(|(_, c)| c.get("lastTransitionTime").and_then(Value::as_str)?.parse().ok());
    let message = [&applied, &available]
        .iter()
        .filter_map(|s| s.as_ref().filter(|(ok, _)| !ok))
        .filter_map(|(_, c)| c.get("message").and_then(Value::as_str).map(str::to_string))
        .next()
        .unwrap_or_default();
    WorkState {
        snapshot,
        synced: true,
        applied: applied.map(|(ok, _)| ok),
        available: available.map(|(ok, _)| ok),
        untrackable_since,
        message,
    }
}

/// A binding's conditions in KubeFleet's chain: RolloutStarted, Overridden,
/// WorkSynchronized, Applied, Available; the chain stops at the first that is not True.
fn binding_conditions(
    binding: &Value,
    latest_snapshot: &str,
    blocked: bool,
    work: Option<&WorkState>,
    override_failure: Option<&String>,
    overridden: Option<bool>,
) -> Vec<Value> {
    let generation = meta::generation(binding);
    let state = State::of(binding);
    let on_latest = binding.pointer("/spec/resourceSnapshotName").and_then(Value::as_str) == Some(latest_snapshot);
    let mut out = Vec::new();
    if state == State::Scheduled || (blocked && !on_latest) {
        out.push(condition(
            "RolloutStarted",
            false,
            "RolloutNotStartedYet",
            "The resources cannot be updated to the latest because of the rollout strategy".into(),
            generation,
        ));
        return out;
    }
    out.push(condition(
        "RolloutStarted",
        true,
        "RolloutStarted",
        "Detected the new changes on the resources and started the rollout process".into(),
        generation,
    ));
    if let Some(message) = override_failure {
        out.push(condition("Overridden", false, "OverriddenFailed", message.clone(), generation));
        return out;
    }
    let (reason, message) = match overridden {
        Some(true) => ("OverriddenSucceeded", "Successfully applied the override rules on the resources"),
        _ => ("NoOverrideSpecified", "No override rules are configured for the selected resources"),
    };
    out.push(condition("Overridden", true, reason, message.into(), generation));
    let binding_snapshot = binding.pointer("/spec/resourceSnapshotName").and_then(Value::as_str).unwrap_or_default();
    let Some(work) = work.filter(|w| w.synced && w.snapshot == binding_snapshot) else {
        out.push(unknown("WorkSynchronized", "WorkSynchronizedUnknown", "the Work is not written yet", generation));
        return out;
    };
    out.push(condition(
        "WorkSynchronized",
        true,
        "AllWorkSynced",
        "All of the works are synchronized to the latest".into(),
        generation,
    ));
    match work.applied {
        None => {
            out.push(unknown("Applied", "ApplyPending", "the member has not applied the Work yet", generation));
            return out;
        }
        Some(false) => {
            out.push(condition("Applied", false, "NotAllWorkHaveBeenApplied", work.message.clone(), generation));
            return out;
        }
        Some(true) => out.push(condition(
            "Applied",
            true,
            "AllWorkHaveBeenApplied",
            "All corresponding work objects are applied".into(),
            generation,
        )),
    }
    match work.available {
        None => out.push(unknown("Available", "ResourceAvailableUnknown", "availability not reported yet", generation)),
        Some(false) => {
            out.push(condition("Available", false, "NotAllWorkAreAvailable", work.message.clone(), generation))
        }
        Some(true) if work.untrackable_since.is_some() => out.push(condition(
            "Available",
            true,
            "NotAllWorkAreAvailabilityTrackable",
            "The availability of some resources cannot be tracked".into(),
            generation,
        )),
        Some(true) => out.push(condition(
            "Available",
            true,
            "AllWorkAreAvailable",
            "All corresponding work objects are available".into(),
            generation,
        )),
    }
    out
}

/// The per-cluster condition types and the placement-level names and reasons they roll up
/// into: (per-cluster type, placement type, True reason, False reason, Unknown reason).
const CHAIN: &[(&str, &str, &str, &str, &str)] = &[
    (
        "RolloutStarted",
        "ClusterResourcePlacementRolloutStarted",
        "RolloutStarted",
        "RolloutNotStartedYet",
        "RolloutStartedUnknown",
    ),
    (
        "Overridden",
        "ClusterResourcePlacementOverridden",
        "OverriddenSucceeded",
        "OverriddenFailed",
        "OverriddenPending",
    ),
    (
        "WorkSynchronized",
        "ClusterResourcePlacementWorkSynchronized",
        "WorkSynchronized",
        "WorkNotSynchronizedYet",
        "WorkSynchronizedUnknown",
    ),
    ("Applied", "ClusterResourcePlacementApplied", "ApplySucceeded", "ApplyFailed", "ApplyPending"),
    (
        "Available",
        "ClusterResourcePlacementAvailable",
        "ResourceAvailable",
        "ResourceNotAvailableYet",
        "ResourceAvailableUnknown",
    ),
];

/// The placement's status: Scheduled from the decision, one entry per placed cluster
/// (and per cluster it is short of), and the chain of conditions rolled up over clusters.
fn placement_status(
    crp: &Value,
    decision: &placement::Decision,
    clusters: &[(String, Value, Vec<Value>)],
    objects: &[Value],
    resource_index: &str,
    policy_snapshot: &Value,
) -> Value {
    let generation = meta::generation(crp);
    let fulfilled = decision.unsatisfied == 0 && decision.missing.is_empty();
    let scheduled = if fulfilled {
        condition(
            "ClusterResourcePlacementScheduled",
            true,
            "SchedulingPolicyFulfilled",
            format!(
                "found all cluster needed as specified by the scheduling policy, found {} cluster(s)",
                decision.desired.len()
            ),
            generation,
        )
    } else {
        condition(
            "ClusterResourcePlacementScheduled",
            false,
            "SchedulingPolicyUnfulfilled",
            format!(
                "could not find all the clusters needed as specified by the scheduling policy, found {} cluster(s) instead{}",
                decision.desired.len(),
                blocking(decision)
            ),
            generation,
        )
    };
    let _ = policy_snapshot;
    let mut statuses = Vec::new();
    for (cluster, _binding, conditions) in clusters {
        let report = decision.report(cluster);
        let mut list = vec![condition(
            "Scheduled",
            true,
            "Scheduled",
            cluster_decision(cluster, report, true)["reason"].as_str().unwrap_or_default().to_string(),
            generation,
        )];
        list.extend(conditions.iter().map(|c| {
            let mut c = c.clone();
            c["observedGeneration"] = json!(generation);
            c
        }));
        statuses.push(json!({"clusterName": cluster, "observedResourceIndex": resource_index, "conditions": list}));
    }
    if let Some(wanted) = decision.wanted {
        for _ in decision.desired.len()..wanted {
            let message = format!("could not find all the clusters needed{}", blocking(decision));
            statuses
                .push(json!({"conditions": [condition("Scheduled", false, "ScheduleFailed", message, generation)]}));
        }
    }
    let mut conditions = vec![scheduled];
    if !clusters.is_empty() {
        for (kind, placement_kind, true_reason, false_reason, unknown_reason) in CHAIN {
            let states: Vec<Option<&str>> = clusters
                .iter()
                .map(|(_, _, cs)| {
                    cs.iter()
                        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
                        .and_then(|c| c.get("status").and_then(Value::as_str))
                })
                .collect();
            let count = |s: &str| states.iter().filter(|x| **x == Some(s)).count();
            let unknown_count = states.iter().filter(|x| !matches!(x, Some("True") | Some("False"))).count();
            let c = if unknown_count > 0 {
                unknown(
                    placement_kind,
                    unknown_reason,
                    &format!("{unknown_count} cluster(s) have not reported {kind} yet"),
                    generation,
                )
            } else if count("False") > 0 {
                condition(
                    placement_kind,
                    false,
                    false_reason,
                    format!("{} cluster(s) are not {kind} yet", count("False")),
                    generation,
                )
            } else {
                let reason = if *kind == "Overridden"
                    && clusters.iter().all(|(_, _, cs)| {
                        cs.iter().any(|c| c.get("reason").and_then(Value::as_str) == Some("NoOverrideSpecified"))
                    }) {
                    "NoOverrideSpecified"
                } else {
                    true_reason
                };
                condition(
                    placement_kind,
                    true,
                    reason,
                    format!("all {} cluster(s) are {kind}", clusters.len()),
                    generation,
                )
            };
            let stop = c.get("status").and_then(Value::as_str) != Some("True");
            conditions.push(c);
            if stop {
                break;
            }
        }
    }
    json!({
        "selectedResources": objects.iter().map(resources::identifier).collect::<Vec<_>>(),
        "observedResourceIndex": resource_index,
        "placementStatuses": statuses,
        "conditions": conditions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_names_are_dns_labels_of_kubefleets_shape() {
        let name = binding_name(&"p".repeat(40), "member-1");
        assert!(name.starts_with(&format!("{}-member-1-", "p".repeat(26))), "{name}");
        assert_eq!(name.len(), 26 + 1 + 8 + 1 + 8);
        assert_ne!(binding_name("crp", "m"), binding_name("crp", "m"));
    }

    #[test]
    fn the_binding_chain_stops_at_the_first_condition_not_true() {
        let binding = json!({"metadata": {"generation": 2}, "spec": {"state": "Bound", "resourceSnapshotName": "crp-1-snapshot"}});
        let applying = WorkState { snapshot: "crp-1-snapshot".into(), synced: true, ..WorkState::default() };
        let types = |cs: Vec<Value>| {
            cs.iter()
                .map(|c| format!("{}={}", c["type"].as_str().unwrap(), c["status"].as_str().unwrap()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            types(binding_conditions(&binding, "crp-1-snapshot", false, Some(&applying), None, None)),
            ["RolloutStarted=True", "Overridden=True", "WorkSynchronized=True", "Applied=Unknown"]
        );
        let done = WorkState {
            snapshot: "crp-1-snapshot".into(),
            synced: true,
            applied: Some(true),
            available: Some(true),
            ..WorkState::default()
        };
        let stale = WorkState { snapshot: "crp-0-snapshot".into(), ..done.clone() };
        assert_eq!(
            types(binding_conditions(&binding, "crp-1-snapshot", false, Some(&stale), None, None)),
            ["RolloutStarted=True", "Overridden=True", "WorkSynchronized=Unknown"],
            "a Work of an older snapshot says nothing of the binding's"
        );
        assert_eq!(
            types(binding_conditions(&binding, "crp-1-snapshot", false, Some(&done), None, Some(true))).len(),
            5
        );
        assert_eq!(
            types(binding_conditions(&binding, "crp-2-snapshot", true, Some(&done), None, None)),
            ["RolloutStarted=False"],
            "held back by the strategy"
        );
        let failure = "bad patch".to_string();
        assert_eq!(
            types(binding_conditions(&binding, "crp-1-snapshot", false, Some(&done), Some(&failure), None)),
            ["RolloutStarted=True", "Overridden=False"]
        );
    }

    #[test]
    fn a_work_counts_only_conditions_of_its_generation() {
        let work = json!({"metadata": {"generation": 3}, "status": {"conditions": [
            {"type": "Applied", "status": "True", "observedGeneration": 3},
            {"type": "Available", "status": "True", "observedGeneration": 2}]}});
        let state = work_state(&work, false);
        assert_eq!(state.applied, Some(true));
        assert_eq!(state.available, None, "availability of an older generation says nothing");
        assert_eq!(work_state(&work, true).applied, None, "a Work just written is not applied yet");
    }
}
