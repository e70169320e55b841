//! One placement's share of a pass, in KubeFleet's order: the scheduler's part (snapshots,
//! the framework's decision, the bindings' specs), the rollout's (which bindings become
//! Bound, the policy snapshot's status), the work generator's (a Work per bound cluster,
//! and one per envelope) and the statuses of the bindings and the placement.

use super::*;

/// What scheduling a placement found: its selection, snapshots and decision.
struct Scheduled {
    objects: Vec<Value>,
    /// The latest resource snapshot's (master's) name and index.
    snapshot_name: String,
    resource_index: String,
    policy_snapshot: Value,
    decision: placement::Decision,
    held: Option<placement::pace::Held>,
    /// When held voluntary moves may happen.
    resume_at: Option<jiff::Timestamp>,
    /// The rebalance request the decision carried out.
    rebalanced: Option<String>,
    /// New bindings, not yet written: the rollout decides their first state.
    unwritten: BTreeSet<String>,
    /// Whether scheduling wrote a snapshot or a binding.
    moved: bool,
}

/// What the rollout decided for a placement.
struct Rollout {
    plan: rollout::Plan,
    /// What keeps the rollout from advancing, when nothing but a change can.
    blockers: Vec<String>,
    /// How far each placed cluster got with its Work.
    work_states: BTreeMap<String, WorkState>,
    /// Whether the rollout bound, moved or removed a binding.
    moved: bool,
}

/// What the Works of a placement came to.
#[derive(Default)]
struct Placed {
    /// Clusters whose overrides failed, and why.
    override_failures: BTreeMap<String, String>,
    /// Clusters with a Work, and whether an override changed it.
    overridden: BTreeMap<String, bool>,
    /// Whether a Work was written.
    moved: bool,
}

/// The bindings scheduling keeps, adds and drops.
struct Kept {
    /// New bindings, not yet written.
    unwritten: BTreeSet<String>,
    /// Whether a binding was written.
    moved: bool,
}

/// The placement's condition saying whether its policy is fulfilled.
const PLACEMENT_SCHEDULED: &str = "ClusterResourcePlacementScheduled";

/// A placement between the two halves of its pass.
pub(super) struct Halfway {
    /// The placement as the first half left it (its Scheduled condition written).
    crp: Value,
    scheduled: Scheduled,
    rollout: Rollout,
}

impl Hub<'_> {
    /// The first half of a placement's pass over its `group`, in KubeFleet's order: the
    /// snapshots, the decision and the bindings, the rollout's part, then the placement's
    /// Scheduled condition, before any Work (KubeFleet's scheduler and placement
    /// controller report the decision while the work generator is still to run). Records
    /// what it selects in `selection`. `None` when the placement is invalid, which its
    /// status then says.
    pub(super) async fn decide(
        &self,
        crp: &Value,
        shared: &Shared<'_>,
        group: &mut Group,
        selection: &mut Selection,
    ) -> anyhow::Result<Option<Halfway>> {
        let Some(mut scheduled) = self.schedule(crp, shared, group, selection).await? else {
            return Ok(None);
        };
        let rollout = self.roll(crp, shared.now, group, selection, &scheduled).await?;
        // Every placement of the pass waits here for the others: it keeps only what the
        // second half reads. A report per member and the policy snapshots are the
        // scheduler's; the status needs the picked clusters' scores and a few others.
        crate::fleet::status::keep_for_status(&mut scheduled.decision);
        scheduled.policy_snapshot = Value::Null;
        group.policy_snapshots = Vec::new();
        // Only the Scheduled condition: the rest of the status waits for the Works, and a
        // pass that changes nothing writes nothing here either.
        let condition =
            crate::fleet::status::scheduled(PLACEMENT_SCHEDULED, &scheduled.decision, meta::generation(crp));
        let wanted = crate::fleet::status::with_condition(crp, condition);
        let crp = self.write_placement_status(crp, wanted).await?.unwrap_or_else(|| crp.clone());
        Ok(Some(Halfway { crp, scheduled, rollout }))
    }

    /// The second half: the Works, then the statuses of the bindings and the placement.
    /// Returns whether the placement should be passed again at once.
    pub(super) async fn place(&self, shared: &Shared<'_>, group: &mut Group, halfway: Halfway) -> anyhow::Result<bool> {
        let Halfway { crp, scheduled, mut rollout } = halfway;
        let crp = &crp;
        let placed = self.write_works(crp, shared, group, &scheduled, &mut rollout.work_states).await?;
        self.remove_stale_works(&group.bindings, &mut group.works).await?;
        self.write_statuses(crp, group, &scheduled, &rollout, &placed).await?;
        // Another pass can only help when the strategy held bindings back and this pass
        // changed what it counts; anything else waits on a change that wakes the
        // placement by itself (a Work's status, a member, the placement, its resources).
        let moved = scheduled.moved || rollout.moved || placed.moved;
        Ok(moved && !rollout.plan.blocked.is_empty())
    }

    /// The scheduler's part: the snapshots, the decision, and the specs of the bindings
    /// that stay or go (new ones are left to the rollout). `None` when the placement is
    /// invalid, which its status then says.
    async fn schedule(
        &self,
        crp: &Value,
        shared: &Shared<'_>,
        group: &mut Group,
        selection: &mut Selection,
    ) -> anyhow::Result<Option<Scheduled>> {
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
            // As KubeFleet: only the Scheduled condition changes; what was placed stays
            // placed, and the status goes on saying where.
            let scheduled = condition("ClusterResourcePlacementScheduled", false, reason, message, generation);
            let wanted = crate::fleet::status::with_condition(crp, scheduled);
            self.write_status(&self.rows.placements, crp, wanted).await?;
            return Ok(None);
        }
        let (Ok(objects), Ok(framework_policy)) = (selected, framework_policy) else { unreachable!("checked above") };
        let (resource_snapshot, resource_index, resource_created) =
            self.resource_snapshot(crp, &objects, group).await?;
        let (policy_snapshot, policy_created) = self.policy_snapshot(crp, group).await?;
        let policy_snapshot_name = meta::name(&policy_snapshot).unwrap_or_default().to_string();

        // Scheduling: the framework over the members, sticky to the live bindings.
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
        // Only the reports the statuses read: a report per member for each of a thousand
        // placements was an eighth of the hub's time in a pass, nearly all thrown away.
        let reports = reports_read(&framework_policy);
        let paced = placement::pace::decide_reporting(
            &Profile::fleet(),
            &framework_policy,
            candidates,
            &state,
            &pacing,
            &moves,
            reports,
        )
        .map_err(|e| anyhow::anyhow!("decide: {e}"))?;
        let moves = (!paced.moved.is_empty()).then_some(&paced.moves);
        pacing::write(self.shard, &self.rows.placements, crp, self.cluster, moves, None).await?;
        let held = paced.held_report();
        let decision = paced.decision;
        let kept = self.keep_bindings(crp, group, &decision, &policy_snapshot_name).await?;
        Ok(Some(Scheduled {
            objects,
            snapshot_name: meta::name(&resource_snapshot).unwrap_or_default().to_string(),
            resource_index,
            policy_snapshot,
            decision,
            held,
            resume_at: paced.resume_at,
            rebalanced: paced.rebalanced,
            unwritten: kept.unwritten,
            moved: resource_created || policy_created || kept.moved,
        }))
    }

    /// The bindings' specs as `decision` wants them: kept ones refreshed, revived ones
    /// back in their previous state, dropped ones Unscheduled, new ones added to `group`
    /// unwritten (their names returned).
    async fn keep_bindings(
        &self,
        crp: &Value,
        group: &mut Group,
        decision: &placement::Decision,
        policy_snapshot_name: &str,
    ) -> anyhow::Result<Kept> {
        let name = meta::name(crp).unwrap_or_default();
        let mut unwritten: BTreeSet<String> = BTreeSet::new();
        let mut moved = false;
        for cluster in &decision.desired {
            let cluster_decision = cluster_decision(cluster, decision, true);
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
                            != Some(policy_snapshot_name)
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
                    let binding_name = binding_name(name, cluster);
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
        Ok(Kept { unwritten, moved })
    }

    /// The rollout's part: which bindings become Bound to the latest snapshot (new ones
    /// written in the state it gives them), which move to it and which go, within the
    /// strategy; then the policy snapshot's status.
    async fn roll(
        &self,
        crp: &Value,
        now: jiff::Timestamp,
        group: &mut Group,
        selection: &mut Selection,
        scheduled: &Scheduled,
    ) -> anyhow::Result<Rollout> {
        let name = meta::name(crp).unwrap_or_default();
        let (snapshot_name, unwritten) = (&scheduled.snapshot_name, &scheduled.unwritten);
        // How far each placed cluster got with the Works it has now (the main one and its
        // envelopes'): the rollout's readiness.
        let crp_work = format!("{name}-work");
        let mut work_states: BTreeMap<String, WorkState> = BTreeMap::new();
        for binding in group.bindings.iter().filter(|b| State::of(b) != State::Scheduled) {
            let cluster = target_of(binding).unwrap_or_default();
            let namespace = member_namespace(&cluster);
            // A binding being deleted serves with the Works it had until they are gone.
            let leaving = meta::is_deleting(binding);
            let in_namespace =
                |w: &&Value| meta::namespace(w) == Some(namespace.as_str()) && (leaving || !meta::is_deleting(w));
            if !group.works.iter().filter(in_namespace).any(|w| meta::name(w) == Some(crp_work.as_str())) {
                continue;
            }
            let states = group.works.iter().filter(in_namespace).map(|w| work_state(w, false)).collect();
            work_states.insert(cluster, combine_states(states));
        }

        let policy = crp.pointer("/spec/policy");
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
        selection.wake_at = crate::controllers::earliest(untrackable_ready, scheduled.resume_at);
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
            .map(|b| {
                let cluster = target_of(b).unwrap_or_default();
                let work = work_states.get(&cluster).cloned().unwrap_or_default();
                let binding_snapshot = b.pointer("/spec/resourceSnapshotName").and_then(Value::as_str);
                // Ready for what the binding says now: a Work still carrying an earlier
                // snapshot (not rewritten yet, or held by a failed override) is not.
                let ready = work.available == Some(true)
                    && binding_snapshot.is_some_and(|s| s == work.snapshot)
                    && work.untrackable_since.is_none_or(|since| now.duration_since(since) >= unavailable_period);
                // KubeFleet's terminal binding failures: the override, the apply or the
                // availability check said False (the override as this pass's binding
                // status last recorded it).
                let override_failed = find_condition(b, "Overridden").is_some_and(|c| {
                    c.get("status").and_then(Value::as_str) == Some("False")
                        && c.get("observedGeneration").and_then(Value::as_i64) == Some(meta::generation(b))
                });
                rollout::Member {
                    name: meta::name(b).unwrap_or_default().to_string(),
                    state: State::of(b),
                    current: binding_snapshot == Some(snapshot_name),
                    ready,
                    failed: override_failed || work.applied == Some(false) || work.available == Some(false),
                    stuck: stuck(&cluster, Some(&work), None, now, unavailable_period),
                    deleting: meta::is_deleting(b),
                }
            })
            .collect();
        roll.sort_by(|a, b| a.name.cmp(&b.name));
        let plan = rollout::plan(&roll, target, max_unavailable, max_surge);
        let blockers = rollout::blockers(&roll, &plan, max_unavailable);
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
        let rebalanced = scheduled.rebalanced.as_deref();
        pacing::write(self.shard, &self.rows.placements, crp, self.cluster, None, rebalanced).await?;
        let written = self.policy_snapshot_status(crp, &scheduled.policy_snapshot, &scheduled.decision).await?;
        if let Some(written) = written {
            keep(&mut group.policy_snapshots, written);
        }
        let mut moved = false;
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
            self.delete_binding(binding_name).await?;
            group.bindings.retain(|b| meta::name(b) != Some(binding_name.as_str()));
            moved = true;
        }
        Ok(Rollout { plan, blockers, work_states, moved })
    }

    /// The work generator's part: what each placed cluster gets now, its overrides
    /// applied, written in the same pass as the rollout bound it.
    async fn write_works(
        &self,
        crp: &Value,
        shared: &Shared<'_>,
        group: &mut Group,
        scheduled: &Scheduled,
        work_states: &mut BTreeMap<String, WorkState>,
    ) -> anyhow::Result<Placed> {
        let mut placed = Placed::default();
        let bound: Vec<Value> = group
            .bindings
            .iter()
            .filter(|b| !meta::is_deleting(b) && State::of(b) != State::Scheduled)
            .cloned()
            .collect();
        let mut jobs = Vec::new();
        for binding in &bound {
            let cluster = target_of(binding).unwrap_or_default();
            let member = shared.members.iter().find(|m| meta::name(m) == Some(cluster.as_str()));
            // A member leaving gets nothing new: its namespace is about to go.
            let Some(member) = member.filter(|m| !meta::is_deleting(m)) else { continue };
            let binding_snapshot = binding.pointer("/spec/resourceSnapshotName").and_then(Value::as_str);
            let Some(binding_snapshot) = binding_snapshot.filter(|s| !s.is_empty()) else { continue };
            let stored;
            let manifests: &[Value] = if binding_snapshot == scheduled.snapshot_name {
                &scheduled.objects
            } else {
                match snapshot_objects(&group.resource_snapshots, binding_snapshot) {
                    Some(objects) => {
                        stored = objects;
                        &stored
                    }
                    // Its snapshot is gone: the Work stays as it is until the rollout
                    // moves the binding on.
                    None => continue,
                }
            };
            // Each envelope gets a Work of its own, as KubeFleet's work generator makes
            // them; the main Work carries the rest.
            let (manifests, envelopes, any_override) = match member_loads(manifests, member, shared) {
                Ok(loads) => loads,
                Err(message) => {
                    placed.override_failures.insert(cluster.clone(), message);
                    continue;
                }
            };
            placed.overridden.insert(cluster.clone(), any_override);
            jobs.push((cluster.clone(), binding, binding_snapshot, manifests, None));
            for (envelope, inner) in envelopes {
                jobs.push((cluster.clone(), binding, binding_snapshot, inner, Some(envelope)));
            }
        }
        // The Works are independent objects: written together, they share the store's commits.
        let works = &group.works;
        let writes = jobs.into_iter().map(|(cluster, binding, snapshot, manifests, envelope)| async move {
            let load = Load { manifests, envelope: envelope.as_ref() };
            let done = self.work(crp, binding, &cluster, snapshot, load, works).await?;
            anyhow::Ok((cluster, envelope.is_some(), done))
        });
        let mut states: BTreeMap<String, Vec<WorkState>> = BTreeMap::new();
        let mut kept_envelopes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (cluster, is_envelope, (state, written, name)) in futures::future::try_join_all(writes).await? {
            if let Some(work) = written {
                keep_work(&mut group.works, work);
                placed.moved = true;
            }
            let kept = kept_envelopes.entry(cluster.clone()).or_default();
            if is_envelope {
                kept.insert(name);
            }
            states.entry(cluster).or_default().push(state);
        }
        // An envelope that left the selection takes its Work with it.
        for (cluster, kept) in &kept_envelopes {
            placed.moved |= self.remove_stale_envelope_works(cluster, kept, &mut group.works).await?;
        }
        for (cluster, states) in states {
            work_states.insert(cluster, combine_states(states));
        }
        Ok(placed)
    }

    /// Each binding's status, then the placement's.
    async fn write_statuses(
        &self,
        crp: &Value,
        group: &Group,
        scheduled: &Scheduled,
        rollout: &Rollout,
        placed: &Placed,
    ) -> anyhow::Result<()> {
        let blocked: BTreeSet<&String> = rollout.plan.blocked.iter().collect();
        let mut per_cluster = Vec::new();
        let mut statuses = Vec::new();
        for binding in group.bindings.iter().filter(|b| !meta::is_deleting(b)) {
            let cluster = target_of(binding).unwrap_or_default();
            let binding_name = meta::name(binding).unwrap_or_default().to_string();
            let conditions = binding_conditions(
                binding,
                &scheduled.snapshot_name,
                blocked.contains(&binding_name),
                rollout.work_states.get(&cluster),
                placed.override_failures.get(&cluster),
                placed.overridden.get(&cluster).copied(),
            );
            let mut wanted = binding.get("status").cloned().unwrap_or_else(|| json!({}));
            wanted["conditions"] = Value::Array(conditions.clone());
            statuses.push(self.write_status(&self.rows.bindings, binding, wanted));
            if State::of(binding) != State::Unscheduled {
                per_cluster.push((cluster, binding.clone(), conditions));
            }
        }
        futures::future::try_join_all(statuses).await?;
        let status = placement_status(
            crp,
            &scheduled.decision,
            &per_cluster,
            &scheduled.objects,
            &scheduled.resource_index,
            &rollout.blockers,
            scheduled.held.as_ref(),
        );
        self.write_placement_status(crp, status).await.map(|_| ())
    }
}

/// A binding that counts for the decision: not being deleted, not Unscheduled.
fn live(binding: &&Value) -> bool {
    !meta::is_deleting(binding) && State::of(binding) != State::Unscheduled
}
