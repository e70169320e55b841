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
//! many placements reads the hub once, not once per placement. Snapshots and bindings are
//! owned by their placement and Works by their binding, so the garbage collector removes
//! them with it; the member agent's finalizer on a Work holds it until the member's copies
//! are gone, and a binding the rollout removes waits for its Works (foreground deletion).
//!
//! The pass is here; [`members`] keeps each MemberCluster (namespace, conditions, leave
//! flow), [`crp`] takes one placement through its share of the pass, [`selection`]
//! resolves what a placement selects, [`snapshots`] keeps its resource and policy
//! snapshots, [`works`] its Works.

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
use apiserver::storage::{self, Cascade, DeletePreconditions, ObjectRef, Propagation, WriteOptions};
use futures::StreamExt;
use placement::{Profile, State as Now};
use protocol::meta;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

mod crp;
mod events;
mod members;
mod selection;
mod snapshots;
mod works;

use selection::*;
use snapshots::*;
use works::*;

/// How many placements one pass works on at once. Each placement's writes follow one
/// another (snapshots, bindings, Works, statuses), each waiting for a commit; several
/// placements at once fill the store's group commits. Bounded, as every placement in
/// flight holds its share of the hub's objects.
const PLACEMENTS_IN_FLIGHT: usize = 16;

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
    /// Placements whose rollout held something back that this pass's writes may let
    /// through: the next pass looks at them again.
    pub again: Vec<String>,
    /// What each passed placement selects, by name (`None`: the placement is gone).
    pub selections: Vec<(String, Option<Selection>)>,
    /// Placements passed.
    pub placements: usize,
    /// How long deciding every placement took (the first half), and placing them.
    pub halves: (std::time::Duration, std::time::Duration),
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

    /// Deletes a binding in foreground: it stays, being deleted, until the garbage
    /// collector has deleted the Works it owns and their member agents have removed what
    /// they applied, as KubeFleet's binding waits on its work-cleanup finalizer; meanwhile
    /// the rollout counts it as still serving.
    async fn delete_binding(&self, name: &str) -> anyhow::Result<()> {
        let at = ObjectRef { cluster: self.cluster, namespace: None, name };
        let (preconditions, cascade) = (DeletePreconditions::default(), Cascade::with(Propagation::Foreground));
        match storage::delete_cascading(
            self.shard,
            &self.rows.bindings,
            &at,
            &preconditions,
            cascade,
            WriteOptions::default(),
        )
        .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(anyhow::anyhow!("delete ClusterResourceBinding {name}: {}", e.message)),
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
        // Placements are independent of each other: a few at a time, so that their
        // writes share the store's commits instead of each waiting for its own.
        let mut jobs = Vec::new();
        for crp in &placements {
            let name = meta::name(crp).unwrap_or_default().to_string();
            if meta::is_deleting(crp) {
                passed.selections.push((name, None));
                continue;
            }
            let group = Group {
                bindings: bindings.remove(&name).unwrap_or_default(),
                policy_snapshots: policy_snapshots.remove(&name).unwrap_or_default(),
                resource_snapshots: resource_snapshots.remove(&name).unwrap_or_default(),
                works: works.remove(&name).unwrap_or_default(),
            };
            jobs.push((crp, name, group));
        }
        passed.placements = jobs.len();
        let shared = &shared;
        // Every placement decided and bound first, then every placement's Works: the
        // decisions (and their Scheduled conditions) do not wait behind other placements'
        // Works, as KubeFleet's scheduler does not wait for its work generator.
        let started = std::time::Instant::now();
        let deciding: Vec<_> = jobs
            .into_iter()
            .map(|(crp, name, mut group)| async move {
                let mut selection = Selection::default();
                let halfway = self.decide(crp, shared, &mut group, &mut selection).await;
                (name, group, selection, halfway)
            })
            .collect();
        let decided: Vec<_> = futures::stream::iter(deciding).buffer_unordered(PLACEMENTS_IN_FLIGHT).collect().await;
        let decided_at = std::time::Instant::now();
        let placing: Vec<_> = decided
            .into_iter()
            .map(|(name, mut group, selection, halfway)| async move {
                let outcome = match halfway {
                    Ok(Some(halfway)) => self.place(shared, &mut group, halfway).await,
                    Ok(None) => Ok(false),
                    Err(error) => Err(error),
                };
                (name, selection, outcome)
            })
            .collect();
        let outcomes: Vec<_> = futures::stream::iter(placing).buffer_unordered(PLACEMENTS_IN_FLIGHT).collect().await;
        passed.halves = (decided_at - started, decided_at.elapsed());
        let mut failed = None;
        for (name, selection, outcome) in outcomes {
            match outcome {
                Ok(true) => passed.again.push(name.clone()),
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(error = %format!("{error:#}"), crp = %name, "placement pass failed");
                    failed = Some(error);
                }
            }
            passed.selections.push((name, Some(selection)));
        }
        failed.map_or(Ok(passed), Err)
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
