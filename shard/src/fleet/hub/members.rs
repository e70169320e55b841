//! A MemberCluster on the hub: its namespace and the hub's conditions, its finalizer, and
//! its leave flow (the I/O around the pure steps of [`crate::fleet::leave`]).

use super::*;
use crate::fleet::leave::{self, Namespace, Step, MEMBER_CLUSTER_FINALIZER};
use crate::fleet::member_events::{condition_events, leave_event, Carried, MemberEvent};

impl Hub<'_> {
    /// A member's namespace and its hub conditions; whether anything was written.
    pub(super) async fn member(&self, member: &Value) -> anyhow::Result<bool> {
        if meta::is_deleting(member) {
            return self.leave(member).await;
        }
        self.hold_member(member).await?;
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
            let created =
                MemberEvent { warning: false, reason: "NamespaceCreated", message: "Namespace was created".into() };
            self.record_member_event(member, created).await;
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
        // Only the conditions are the hub's: the agent writes the rest of the status, and a
        // heartbeat written meanwhile must not be lost.
        self.member_conditions(member, vec![ready, joined]).await
    }

    /// Writes a member's `status.conditions` when they say something new (and only them:
    /// a heartbeat written meanwhile stays), with KubeFleet's events for the conditions
    /// whose status changed; whether it was written.
    async fn member_conditions(&self, member: &Value, conditions: Vec<Value>) -> anyhow::Result<bool> {
        let wanted = json!({"conditions": conditions});
        let current = json!({"conditions": member.pointer("/status/conditions").cloned().unwrap_or(Value::Null)});
        if apiserver::conditions::same_status(&current, &wanted) {
            return Ok(false);
        }
        let name = meta::name(member).unwrap_or_default();
        let written = self
            .update(&self.rows.members, None, name, Some("status"), |old| {
                let mut new = old.clone();
                let merged = apiserver::conditions::with_transition_times(old.get("status"), &wanted);
                new["status"]["conditions"] = merged["conditions"].clone();
                new
            })
            .await?;
        for event in condition_events(&current["conditions"], &wanted["conditions"]) {
            self.record_member_event(&written, event).await;
        }
        Ok(true)
    }

    /// Puts the hub's finalizer on a member that is not being deleted, so that deleting
    /// it runs the leave flow; whether it was written.
    pub(super) async fn hold_member(&self, member: &Value) -> anyhow::Result<bool> {
        if leave::held(member) || meta::is_deleting(member) {
            return Ok(false);
        }
        let name = meta::name(member).unwrap_or_default();
        self.update(&self.rows.members, None, name, None, |old| {
            let mut new = old.clone();
            let mut finalizers = meta::finalizers(old);
            // Deleted meanwhile: a new finalizer would be refused.
            if !finalizers.iter().any(|f| f == MEMBER_CLUSTER_FINALIZER) && !meta::is_deleting(old) {
                finalizers.push(MEMBER_CLUSTER_FINALIZER.to_string());
                meta::set_finalizers(&mut new, &finalizers);
            }
            new
        })
        .await?;
        Ok(true)
    }

    /// One step of the leave flow of a member being deleted; whether anything was written.
    pub(super) async fn leave(&self, member: &Value) -> anyhow::Result<bool> {
        let name = meta::name(member).unwrap_or_default();
        let namespace_name = member_namespace(name);
        let at = ObjectRef { cluster: self.cluster, namespace: None, name: &namespace_name };
        let namespace = match storage::get(self.shard, &self.rows.namespaces, &at) {
            Ok((ns, _)) if meta::is_deleting(&ns) => Namespace::Deleting,
            Ok(_) => Namespace::Present,
            Err(e) if e.is_not_found() => Namespace::Absent,
            Err(e) => return Err(api(e)),
        };
        let step = leave::step(member, namespace, jiff::Timestamp::now(), self.settings.force_delete_wait);
        let mut wrote = self.left_condition(member).await?;
        let mut works_released = 0;
        match step {
            Step::Nothing | Step::AwaitAgent { .. } | Step::AwaitNamespace => {}
            Step::CollectNamespace { forced } => {
                works_released = self.release_works(&namespace_name).await?;
                tracing::info!(
                    member = name,
                    forced,
                    works = works_released,
                    "the member left; deleting its namespace"
                );
                self.delete(&self.rows.namespaces, None, &namespace_name).await?;
                wrote = true;
            }
            Step::Release => {
                self.update(&self.rows.members, None, name, None, |old| {
                    let mut new = old.clone();
                    let finalizers: Vec<String> =
                        meta::finalizers(old).into_iter().filter(|f| f != MEMBER_CLUSTER_FINALIZER).collect();
                    meta::set_finalizers(&mut new, &finalizers);
                    new
                })
                .await?;
                tracing::info!(member = name, "the member's namespace is gone; the MemberCluster goes");
                wrote = true;
            }
        }
        // Told once each: a step that acts is followed by one that waits or by the end.
        let carried = Carried { namespace: &namespace_name, works_released, wait: self.settings.force_delete_wait };
        if let Some(event) = leave_event(&step, carried) {
            self.record_member_event(member, event).await;
        }
        Ok(wrote)
    }

    /// Takes every finalizer off the Works in `namespace` (KubeFleet's garbage collection
    /// of a member's Works: the agent that held them left or is dead); how many there were.
    async fn release_works(&self, namespace: &str) -> anyhow::Result<usize> {
        let works = self.list(&self.rows.works)?;
        let held: Vec<&Value> =
            works.iter().filter(|w| meta::namespace(w) == Some(namespace) && !meta::finalizers(w).is_empty()).collect();
        for work in &held {
            let name = meta::name(work).unwrap_or_default();
            self.update(&self.rows.works, Some(namespace), name, None, |old| {
                let mut new = old.clone();
                meta::set_finalizers(&mut new, &[]);
                new
            })
            .await?;
        }
        Ok(held.len())
    }

    /// The hub's `Joined` condition of a member being deleted: False (MemberClusterLeft)
    /// once its agent left, else as it was; whether it was written.
    async fn left_condition(&self, member: &Value) -> anyhow::Result<bool> {
        if !leave::agent_left(member) {
            return Ok(false);
        }
        let generation = meta::generation(member);
        let left = condition("Joined", false, "MemberClusterLeft", "all the agents left".into(), generation);
        let mut conditions: Vec<Value> =
            member.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some("Joined"));
        conditions.push(left);
        self.member_conditions(member, conditions).await
    }
}
