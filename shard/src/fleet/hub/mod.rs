//! One pass of the Fleet hub controller ([`super::controller`]) over one hub logical
//! cluster:
//! - each MemberCluster it was woken for gets its reserved namespace
//!   `fleet-member-<name>` and its `ReadyToJoin` / `Joined` conditions from its member
//!   agent's report; what the scheduler sees of it (labels, taints, properties,
//!   eligibility) is remembered, and a change re-decides every placement;
//! - each ClusterResourcePlacement it was woken for gets, in this order: the latest
//!   ClusterResourceSnapshot of what it selects and ClusterSchedulingPolicySnapshot of its
//!   policy (new ones only when their hashes change); its clusters chosen by the
//!   framework's `fleet` profile and recorded as ClusterResourceBindings (Scheduled, Bound,
//!   Unscheduled, as KubeFleet's scheduler keeps them); the rolling update
//!   ([`super::rollout`]); one Work per bound cluster in the cluster's namespace; and the
//!   statuses of the bindings, the policy snapshot and the placement ([`super::status`]).
//!
//! A pass lists each kind once and works on the placement's share of it, so a pass over
//! many placements reads the hub once, not once per placement. Snapshots, bindings and
//! Works are owned by their placement, so the garbage collector removes them with it; the
//! member agent's finalizer on a Work holds it until the member's copies are gone.
//!
//! The pass is here; [`members`] keeps each MemberCluster (namespace, conditions, leave
//! flow), [`selection`] resolves what a placement selects, [`snapshots`] keeps
//! its resource and policy snapshots, [`works`] its Works.

use super::policy::{self as fleet_policy, PlacementType};
use super::resources::{self, Rule};
use super::rollout::{self, State};
use super::scope::{MemberMemo, Rows, Selection, Settings, Triggers};
use super::status::*;
use super::*;
use crate::controllers::pacing;
use crate::state::Shard;
use apiserver::objects;
use apiserver::registry::ResourceType;
use apiserver::storage::{self, DeletePreconditions, ObjectRef, WriteOptions};
use placement::{Outcome, Profile, State as Now};
use protocol::meta;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

mod events;
mod members;
mod selection;
mod snapshots;
mod works;

use selection::*;
use snapshots::*;
use works::*;

/// One pass over one hub logical cluster.
pub(super) struct Hub<'a> {
    pub shard: &'a Shard,
    pub rows: &'a Rows,
    pub cluster: &'a str,
    pub settings: Settings,
    /// Records KubeFleet's events about placements.
    pub recorder: &'a crate::events::Recorder,
    /// Records KubeFleet's events about MemberClusters.
    pub member_recorder: &'a crate::events::Recorder,
}

/// One placement's share of the hub's snapshots, bindings and Works, kept current as the
/// pass writes.
#[derive(Default)]
struct Group {
    bindings: Vec<Value>,
    policy_snapshots: Vec<Value>,
    resource_snapshots: Vec<Value>,
    works: Vec<Value>,
}

/// What a list of resource selectors picked (or why it is wrong) and what it covers.
type Selected = (Result<Vec<Value>, String>, Selection);

/// What the rest of the hub looks like to a placement's pass.
struct Shared<'a> {
    members: &'a [Value],
    /// The members as the framework sees them, built once per pass.
    candidates: &'a [placement::Candidate],
    /// What each distinct list of resource selectors picked, computed once per pass.
    selected: &'a parking_lot::Mutex<HashMap<String, Selected>>,
    cluster_overrides: &'a [Value],
    resource_overrides: &'a [Value],
    now: jiff::Timestamp,
}

/// What a pass found out.
#[derive(Default)]
pub(super) struct Passed {
    /// Something was written that the next pass should look at.
    pub again: bool,
    /// What each passed placement selects, by name (`None`: the placement is gone).
    pub selections: Vec<(String, Option<Selection>)>,
    /// Placements passed.
    pub placements: usize,
}

/// Replaces the object of the same name in `list`, or adds it.
fn keep(list: &mut Vec<Value>, object: Value) {
    let name = meta::name(&object).map(str::to_string);
    match list.iter_mut().find(|o| meta::name(o).map(str::to_string) == name) {
        Some(slot) => *slot = object,
        None => list.push(object),
    }
}

fn by_parent(objects: Vec<Value>) -> HashMap<String, Vec<Value>> {
    let mut out: HashMap<String, Vec<Value>> = HashMap::new();
    for object in objects {
        if let Some(parent) = label(&object, PARENT_CRP_LABEL) {
            out.entry(parent.to_string()).or_default().push(object);
        }
    }
    out
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

impl Hub<'_> {
    fn list(&self, rt: &ResourceType) -> anyhow::Result<Vec<Value>> {
        objects::list_in_cluster(&self.shard.store, rt, self.cluster)
            .map_err(|e| anyhow::anyhow!("list {}: {}", rt.resource, e.message))
    }

    /// Creates `object`; one that exists already is read back.
    async fn create(&self, rt: &ResourceType, object: Value) -> anyhow::Result<Value> {
        let name = meta::name(&object).unwrap_or_default().to_string();
        let namespace = meta::namespace(&object).map(str::to_string);
        match storage::create(self.shard, rt, self.cluster, object, WriteOptions::default()).await {
            Ok(created) => Ok(created),
            Err(e) if e.is_already_exists() => {
                let at = ObjectRef { cluster: self.cluster, namespace: namespace.as_deref(), name: &name };
                Ok(storage::get(self.shard, rt, &at).map_err(api)?.0)
            }
            Err(e) => Err(anyhow::anyhow!("create {} {name}: {}", rt.kind, e.message)),
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

    /// Writes `wanted` as the status of an object when it says something new; returns
    /// the object as stored, if written.
    async fn write_status(&self, rt: &ResourceType, object: &Value, wanted: Value) -> anyhow::Result<Option<Value>> {
        let current = object.get("status").cloned().unwrap_or(Value::Null);
        if apiserver::conditions::same_status(&current, &wanted) {
            return Ok(None);
        }
        let name = meta::name(object).unwrap_or_default();
        let written = self
            .update(rt, meta::namespace(object), name, Some("status"), |old| {
                let mut new = old.clone();
                new["status"] = apiserver::conditions::with_transition_times(old.get("status"), &wanted);
                new
            })
            .await?;
        Ok(Some(written))
    }

    /// The pass `triggers` asks for; `memo` is what the scheduler saw of each member
    /// last time.
    pub async fn pass(&self, triggers: &Triggers, memo: &mut MemberMemo) -> anyhow::Result<Passed> {
        let now = jiff::Timestamp::now();
        let mut passed = Passed::default();
        let whole = triggers.all || !triggers.placements.is_empty();
        // Members: all of them when placements are decided (they are the candidates),
        // else only those that changed.
        let members = match whole {
            true => self.list(&self.rows.members)?,
            false => {
                let mut found = Vec::new();
                for name in &triggers.members {
                    let at = ObjectRef { cluster: self.cluster, namespace: None, name };
                    match storage::get(self.shard, &self.rows.members, &at) {
                        Ok((member, _)) => found.push(member),
                        Err(e) if e.is_not_found() => {}
                        Err(e) => return Err(api(e)),
                    }
                }
                found
            }
        };
        let mut members_moved = false;
        for member in &members {
            let name = meta::name(member).unwrap_or_default();
            if triggers.all || triggers.members.contains(name) {
                // One member's trouble (say, a name too long for its namespace) must not
                // hold up the others or any placement.
                if let Err(error) = self.member(member).await {
                    tracing::warn!(error = %format!("{error:#}"), member = name, "member pass failed");
                }
            }
            let seen = fleet_policy::fingerprint(member, now, self.settings.eligibility);
            // Only a lapse still to come needs a wake-up; one past is in the fingerprint.
            let deadline = fleet_policy::eligible_until(member, self.settings.eligibility);
            // A member being deleted is looked at again when its agent's time to leave is up.
            let force_at = crate::fleet::leave::force_at(member, self.settings.force_delete_wait)
                .filter(|_| meta::is_deleting(member) && crate::fleet::leave::held(member));
            let deadline = crate::controllers::earliest(deadline, force_at).filter(|at| *at > now);
            members_moved |= memo.observe(name, seen, deadline);
        }
        if whole {
            let present: BTreeSet<&str> = members.iter().filter_map(meta::name).collect();
            members_moved |= memo.retain(|name| present.contains(name));
        } else {
            for name in &triggers.members {
                if !members.iter().any(|m| meta::name(m) == Some(name.as_str())) {
                    members_moved |= memo.forget(name);
                }
            }
        }
        let every_placement = triggers.all || members_moved;
        if !every_placement && triggers.placements.is_empty() {
            return Ok(passed);
        }
        let members = match whole {
            true => members,
            false => self.list(&self.rows.members)?,
        };
        let placements: Vec<Value> = match every_placement {
            true => self.list(&self.rows.placements)?,
            false => {
                let mut found = Vec::new();
                for name in &triggers.placements {
                    let at = ObjectRef { cluster: self.cluster, namespace: None, name };
                    match storage::get(self.shard, &self.rows.placements, &at) {
                        Ok((crp, _)) => found.push(crp),
                        Err(e) if e.is_not_found() => passed.selections.push((name.clone(), None)),
                        Err(e) => return Err(api(e)),
                    }
                }
                found
            }
        };
        if placements.is_empty() {
            return Ok(passed);
        }
        let mut bindings = by_parent(self.list(&self.rows.bindings)?);
        let mut policy_snapshots = by_parent(self.list(&self.rows.policy_snapshots)?);
        let mut resource_snapshots = by_parent(self.list(&self.rows.resource_snapshots)?);
        let mut works = by_parent(self.list(&self.rows.works)?);
        let cluster_overrides = self.list(&self.rows.cluster_overrides)?;
        let resource_overrides = self.list(&self.rows.resource_overrides)?;
        let candidates: Vec<placement::Candidate> =
            members.iter().map(|m| fleet_policy::candidate(m, now, self.settings.eligibility)).collect();
        let selected = parking_lot::Mutex::default();
        let shared = Shared {
            members: &members,
            candidates: &candidates,
            selected: &selected,
            cluster_overrides: &cluster_overrides,
            resource_overrides: &resource_overrides,
            now,
        };
        let mut failed = None;
        for crp in &placements {
            let name = meta::name(crp).unwrap_or_default().to_string();
            if meta::is_deleting(crp) {
                passed.selections.push((name, None));
                continue;
            }
            let mut group = Group {
                bindings: bindings.remove(&name).unwrap_or_default(),
                policy_snapshots: policy_snapshots.remove(&name).unwrap_or_default(),
                resource_snapshots: resource_snapshots.remove(&name).unwrap_or_default(),
                works: works.remove(&name).unwrap_or_default(),
            };
            let mut selection = Selection::default();
            passed.placements += 1;
            match self.placement(crp, &shared, &mut group, &mut selection).await {
                Ok(moved) => passed.again |= moved,
                Err(error) => {
                    tracing::warn!(error = %format!("{error:#}"), crp = %name, "placement pass failed");
                    failed = Some(error);
                }
            }
            passed.selections.push((name, Some(selection)));
        }
        failed.map_or(Ok(passed), Err)
    }

    /// One placement's whole pass over its `group`; records what it selects in
    /// `selection`; returns whether something moved.
    async fn placement(
        &self,
        crp: &Value,
        shared: &Shared<'_>,
        group: &mut Group,
        selection: &mut Selection,
    ) -> anyhow::Result<bool> {
        let (members, now) = (shared.members, shared.now);
        let name = meta::name(crp).unwrap_or_default().to_string();
        let generation = meta::generation(crp);
        let policy = crp.pointer("/spec/policy");
        let selected = self.select_cached(crp, shared, selection);
        let framework_policy = fleet_policy::policy(&name, policy);
        let invalid = match (&selected, &framework_policy) {
            (Err(message), _) => Some(("InvalidResourceSelectors", message.clone())),
            (_, Err(message)) => Some(("SchedulingPolicyUnfulfilled", format!("invalid scheduling policy: {message}"))),
            _ => None,
        };
        if let Some((reason, message)) = invalid {
            let scheduled = condition("ClusterResourcePlacementScheduled", false, reason, message, generation);
            let wanted = json!({"conditions": [scheduled], "placementStatuses": [], "selectedResources": []});
            self.write_status(&self.rows.placements, crp, wanted).await?;
            return Ok(false);
        }
        let (Ok(objects), Ok(framework_policy)) = (selected, framework_policy) else { unreachable!("checked above") };
        let mut moved = false;
        let (resource_snapshot, resource_index, created) = self.resource_snapshot(crp, &objects, group).await?;
        moved |= created;
        let (policy_snapshot, created) = self.policy_snapshot(crp, group).await?;
        moved |= created;
        let policy_snapshot_name = meta::name(&policy_snapshot).unwrap_or_default().to_string();

        // Scheduling: the framework over the members, sticky to the live bindings.
        let live = |b: &&Value| !meta::is_deleting(b) && State::of(b) != State::Unscheduled;
        let current: Vec<String> = group.bindings.iter().filter(live).filter_map(target_of).collect();
        // A member that stops heartbeating keeps what it has (KubeFleet never re-checks a
        // current binding); only leaving the fleet takes it away. To the framework it is
        // then what an unschedulable kcp target is: it keeps its current decisions and
        // takes no new ones, so a placement that opted in to rescheduling (which
        // reconsiders current decisions) moves off it, paced like any voluntary move. The
        // shared candidates are copied only when this placement has such a member.
        let current_set: BTreeSet<&str> = current.iter().map(String::as_str).collect();
        let silent_current = |c: &placement::Candidate| {
            !c.ready
                && current_set.contains(c.name.as_str())
                && !members.iter().any(|m| meta::name(m) == Some(c.name.as_str()) && meta::is_deleting(m))
        };
        let patched: Option<Vec<placement::Candidate>> = shared.candidates.iter().any(silent_current).then(|| {
            let mut candidates = shared.candidates.to_vec();
            for candidate in candidates.iter_mut().filter(|c| silent_current(c)) {
                candidate.ready = true;
                candidate.unschedulable = true;
            }
            candidates
        });
        let candidates = patched.as_deref().unwrap_or(shared.candidates);
        // Bound bindings are trimmed last when PickN shrinks, Scheduled ones first (KubeFleet).
        let bound = |b: &&Value| State::of(b) == State::Bound;
        let settled: Vec<String> = group.bindings.iter().filter(live).filter(bound).filter_map(target_of).collect();
        let state = Now { now, current: current.clone(), other_decisions: BTreeMap::new(), reconsider: false, settled };
        let (pacing, moves) = pacing::read(crp, self.settings.damping);
        let paced = placement::pace::decide(&Profile::fleet(), &framework_policy, candidates, &state, &pacing, &moves)
            .map_err(|e| anyhow::anyhow!("decide: {e}"))?;
        let moves = (!paced.moved.is_empty()).then_some(&paced.moves);
        pacing::write(self.shard, &self.rows.placements, crp, self.cluster, moves, None).await?;
        let held = paced.held_report();
        let decision = paced.decision;
        // New bindings, not yet written: the rollout below decides their first state.
        let mut unwritten: BTreeSet<String> = BTreeSet::new();
        for cluster in &decision.desired {
            let cluster_decision = cluster_decision(cluster, &decision, true);
            let existing = group.bindings.iter().find(|b| target_of(b).as_deref() == Some(cluster.as_str()));
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
                    // A kept binding's decision is refreshed when the policy changes, not
                    // when only its rank among the others moved (no write per score change).
                    let spec = binding.get("spec").cloned().unwrap_or_default();
                    if wanted_state != state
                        || spec.get("schedulingPolicySnapshotName").and_then(Value::as_str)
                            != Some(&policy_snapshot_name)
                    {
                        let binding_name = meta::name(binding).unwrap_or_default().to_string();
                        let updated = self
                            .update(&self.rows.bindings, None, &binding_name, None, |old| {
                                let mut new = old.clone();
                                new["spec"]["state"] = json!(wanted_state.as_str());
                                new["spec"]["schedulingPolicySnapshotName"] = json!(policy_snapshot_name);
                                new["spec"]["clusterDecision"] = cluster_decision.clone();
                                new
                            })
                            .await?;
                        keep(&mut group.bindings, updated);
                        moved = true;
                    }
                }
                None => {
                    // Written once the rollout has looked at it: Bound at once when the
                    // strategy lets it be, so a new binding costs one write, not two.
                    let binding_name = binding_name(&name, cluster);
                    let binding = json!({
                        "apiVersion": format!("{PLACEMENT_GROUP}/v1"),
                        "kind": "ClusterResourceBinding",
                        "metadata": {
                            "name": binding_name,
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
                    group.bindings.push(binding);
                    unwritten.insert(binding_name);
                    moved = true;
                }
            }
        }
        let dropped: Vec<Value> = group
            .bindings
            .iter()
            .filter(live)
            .filter(|b| !decision.desired.contains(&target_of(b).unwrap_or_default()))
            .cloned()
            .collect();
        for binding in dropped {
            let previous = State::of(&binding).as_str();
            let binding_name = meta::name(&binding).unwrap_or_default();
            let updated = self
                .update(&self.rows.bindings, None, binding_name, None, |old| {
                    let mut new = old.clone();
                    new["spec"]["state"] = json!("Unscheduled");
                    meta::set_annotation(&mut new, PREVIOUS_STATE_ANNOTATION, previous);
                    new
                })
                .await?;
            keep(&mut group.bindings, updated);
            moved = true;
        }

        // How far each placed cluster got with the Work it has now: the rollout's readiness.
        let snapshot_name = meta::name(&resource_snapshot).unwrap_or_default().to_string();
        let crp_work = format!("{name}-work");
        let mut work_states: BTreeMap<String, WorkState> = BTreeMap::new();
        for binding in group.bindings.iter().filter(|b| !meta::is_deleting(b) && State::of(b) != State::Scheduled) {
            let cluster = target_of(binding).unwrap_or_default();
            let namespace = member_namespace(&cluster);
            let work = group
                .works
                .iter()
                .find(|w| meta::namespace(w) == Some(namespace.as_str()) && meta::name(w) == Some(crp_work.as_str()));
            if let Some(work) = work {
                work_states.insert(cluster, work_state(work, false));
            }
        }
        let override_failures: BTreeMap<String, String> = BTreeMap::new();

        // The rolling update.
        let target = match PlacementType::of(policy) {
            PlacementType::PickAll => group.bindings.iter().filter(live).count(),
            _ => fleet_policy::wanted(policy).unwrap_or(0),
        };
        let rolling = crp.pointer("/spec/strategy/rollingUpdate");
        let limits = rollout::scaled(rolling.and_then(|r| r.get("maxUnavailable")), 25, target)
            .map_err(|e| anyhow::anyhow!("spec.strategy.rollingUpdate.maxUnavailable: {e}"))
            .and_then(|unavailable| {
                let surge = rollout::scaled(rolling.and_then(|r| r.get("maxSurge")), 25, target)
                    .map_err(|e| anyhow::anyhow!("spec.strategy.rollingUpdate.maxSurge: {e}"))?;
                Ok((unavailable, surge))
            });
        let (max_unavailable, max_surge) = match limits {
            Ok(limits) => limits,
            Err(error) => {
                // No rollout: the scheduler's decision still stands, as Scheduled bindings.
                for binding in group.bindings.iter().filter(|b| meta::name(b).is_some_and(|n| unwritten.contains(n))) {
                    self.create(&self.rows.bindings, binding.clone()).await?;
                }
                return Err(error);
            }
        };
        let unavailable_period = rolling.and_then(|r| r.get("unavailablePeriodSeconds")).and_then(Value::as_i64);
        let unavailable_period = jiff::SignedDuration::from_secs(unavailable_period.unwrap_or(60));
        // A cluster whose availability cannot be tracked becomes ready by time alone:
        // the placement is looked at again when the first such period ends.
        let untrackable_ready = work_states
            .values()
            .filter(|w| w.available == Some(true))
            .filter_map(|w| w.untrackable_since?.checked_add(unavailable_period).ok())
            .filter(|at| *at > now)
            .min();
        // Held voluntary moves are looked at again when pacing allows them.
        selection.wake_at = crate::controllers::earliest(untrackable_ready, paced.resume_at);
        // An unavailable cluster blocks the rollout once its period is over: look again then.
        let unavailable_over = work_states
            .values()
            .filter_map(|w| w.unavailable_since?.checked_add(unavailable_period).ok())
            .filter(|at| *at > now)
            .min();
        selection.wake_at = crate::controllers::earliest(selection.wake_at, unavailable_over);
        let mut roll: Vec<rollout::Member> = group
            .bindings
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
                    stuck: stuck(&cluster, Some(&work), override_failures.get(&cluster), now, unavailable_period),
                }
            })
            .collect();
        roll.sort_by(|a, b| a.name.cmp(&b.name));
        let plan = rollout::plan(&roll, target, max_unavailable, max_surge);
        let blockers = rollout::blockers(&roll, &plan);
        // The new bindings: Bound to the latest snapshot when the rollout binds them now
        // (what a Scheduled binding bound at once would hold), else Scheduled.
        let mut creates = Vec::new();
        for binding in group.bindings.iter().filter(|b| meta::name(b).is_some_and(|n| unwritten.contains(n))) {
            let mut binding = binding.clone();
            if plan.bind.iter().any(|b| Some(b.as_str()) == meta::name(&binding)) {
                binding["spec"]["state"] = json!("Bound");
                binding["spec"]["resourceSnapshotName"] = json!(snapshot_name);
            }
            creates.push(self.create(&self.rows.bindings, binding));
        }
        for binding in futures::future::try_join_all(creates).await? {
            keep(&mut group.bindings, binding);
        }
        // The bindings say the rebalanced decision now: the request is carried out.
        let rebalanced = paced.rebalanced.as_deref();
        pacing::write(self.shard, &self.rows.placements, crp, self.cluster, None, rebalanced).await?;
        let written = self.policy_snapshot_status(crp, &policy_snapshot, &decision).await?;
        if let Some(written) = written {
            keep(&mut group.policy_snapshots, written);
        }
        for binding_name in plan.bind.iter().chain(&plan.update).filter(|b| !unwritten.contains(*b)) {
            let updated = self
                .update(&self.rows.bindings, None, binding_name, None, |old| {
                    let mut new = old.clone();
                    new["spec"]["state"] = json!("Bound");
                    new["spec"]["resourceSnapshotName"] = json!(snapshot_name);
                    new
                })
                .await?;
            keep(&mut group.bindings, updated);
            moved = true;
        }
        for binding_name in &plan.remove {
            self.delete(&self.rows.bindings, None, binding_name).await?;
            group.bindings.retain(|b| meta::name(b) != Some(binding_name.as_str()));
            moved = true;
        }
        // Works: what each placed cluster gets now, written in the same pass as the
        // rollout bound it.
        let mut override_failures = override_failures;
        let mut overridden: BTreeMap<String, bool> = BTreeMap::new();
        let placed: Vec<Value> = group
            .bindings
            .iter()
            .filter(|b| !meta::is_deleting(b) && State::of(b) != State::Scheduled)
            .cloned()
            .collect();
        let mut jobs = Vec::new();
        for binding in &placed {
            let cluster = target_of(binding).unwrap_or_default();
            let Some(member) = members.iter().find(|m| meta::name(m) == Some(cluster.as_str())) else { continue };
            // A member leaving gets nothing new: its namespace is about to go.
            if meta::is_deleting(member) {
                continue;
            }
            let binding_snapshot = binding.pointer("/spec/resourceSnapshotName").and_then(Value::as_str);
            let Some(binding_snapshot) = binding_snapshot.filter(|s| !s.is_empty()) else { continue };
            let manifests = if binding_snapshot == snapshot_name {
                objects.clone()
            } else {
                match snapshot_objects(&group.resource_snapshots, binding_snapshot) {
                    Some(objects) => objects,
                    // Its snapshot is gone: the Work stays as it is until the rollout
                    // moves the binding on.
                    None => {
                        continue;
                    }
                }
            };
            let (manifests, any_override) = match apply_overrides(&manifests, member, shared) {
                Ok(result) => result,
                Err(message) => {
                    override_failures.insert(cluster.clone(), message);
                    continue;
                }
            };
            overridden.insert(cluster.clone(), any_override);
            jobs.push((cluster, binding, binding_snapshot, manifests));
        }
        // The Works are independent objects: written together, they share the store's commits.
        let works = &group.works;
        let writes = jobs.into_iter().map(|(cluster, binding, snapshot, manifests)| async move {
            let done = self.work(crp, binding, &cluster, snapshot, manifests, works).await?;
            anyhow::Ok((cluster, done))
        });
        for (cluster, (state, written)) in futures::future::try_join_all(writes).await? {
            if let Some(work) = written {
                keep_work(&mut group.works, work);
                moved = true;
            }
            work_states.insert(cluster, state);
        }

        self.remove_stale_works(&group.bindings, &mut group.works).await?;

        // Statuses: each binding's, then the placement's.
        let blocked: BTreeSet<&String> = plan.blocked.iter().collect();
        let mut per_cluster = Vec::new();
        let mut statuses = Vec::new();
        for binding in group.bindings.iter().filter(|b| !meta::is_deleting(b)) {
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
            statuses.push(self.write_status(&self.rows.bindings, binding, wanted));
            if State::of(binding) != State::Unscheduled {
                per_cluster.push((cluster, binding.clone(), conditions));
            }
        }
        futures::future::try_join_all(statuses).await?;
        let status =
            placement_status(crp, &decision, &per_cluster, &objects, &resource_index, &blockers, held.as_ref());
        self.write_placement_status(crp, status).await?;
        Ok(moved)
    }
}

/// The reserved namespace of a member cluster in its hub.
pub fn member_namespace(cluster: &str) -> String {
    format!("fleet-member-{cluster}")
}

fn target_of(binding: &Value) -> Option<String> {
    binding.pointer("/spec/targetCluster").and_then(Value::as_str).map(str::to_string)
}

/// A unique binding name, as KubeFleet forms it: `<crp[:26]>-<cluster[:27]>-<8 hex>`.
fn binding_name(crp: &str, cluster: &str) -> String {
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let cut = |s: &str, n: usize| s.chars().take(n).collect::<String>().trim_end_matches(['-', '.']).to_string();
    format!("{}-{}-{}", cut(crp, 26), cut(cluster, 27), &suffix[..8])
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
}
