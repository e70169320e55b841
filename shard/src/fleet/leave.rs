//! KubeFleet's leave flow for a MemberCluster being deleted, pure: what the hub does next.
//!
//! The hub holds every MemberCluster with [`MEMBER_CLUSTER_FINALIZER`]. Once one is being
//! deleted its agent (which reads the MemberCluster itself: there is no
//! InternalMemberCluster here) removes what the Works applied to the member, lets go of
//! the Works and reports its `Joined` condition False. Then, as KubeFleet's hub
//! member-cluster controller does, the hub takes any finalizer left off the Works of the
//! member's namespace `fleet-member-<name>`, deletes that namespace, waits for it to go
//! and lets go of the MemberCluster. An agent that never answers does not hold the
//! member forever: after the force-delete wait (KubeFleet's `--force-delete-wait-time`,
//! here `--fleet-force-delete-wait-seconds`) since the deletion started, the hub collects
//! the namespace all the same, leaving whatever the dead agent applied on the member.
//!
//! The member's bindings are not the leave flow's business: a member being deleted is
//! ineligible, so the scheduler marks its bindings Unscheduled (KubeFleet's dangling
//! bindings) and a PickN placement picks another cluster in the same pass.

use jiff::{SignedDuration, Timestamp};
use protocol::meta;
use serde_json::Value;
use std::time::Duration;

/// KubeFleet's finalizer on MemberClusters.
pub const MEMBER_CLUSTER_FINALIZER: &str = "kubernetes-fleet.io/membercluster-finalizer";
/// KubeFleet's default force-delete wait (15 minutes).
pub const DEFAULT_FORCE_DELETE_WAIT: Duration = Duration::from_secs(15 * 60);

/// The member's reserved namespace, as the hub finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Namespace {
    Present,
    Deleting,
    Absent,
}

/// What the hub does next for a MemberCluster being deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Not the hub's (it holds no finalizer on it).
    Nothing,
    /// Wait for the agent to report that it left, until `force_at`.
    AwaitAgent { force_at: Timestamp },
    /// Take the finalizers off the namespace's Works and delete the namespace; `forced`
    /// when the agent never reported that it left.
    CollectNamespace { forced: bool },
    /// The namespace is going: wait for it (its deletion wakes the hub).
    AwaitNamespace,
    /// The namespace is gone: let go of the MemberCluster.
    Release,
}

/// Whether the member's agent reported that it left: its `Joined` condition is False
/// for the MemberCluster's current generation (KubeFleet's test, as it reads the agent's
/// conditions copied from the InternalMemberCluster).
pub fn agent_left(member: &Value) -> bool {
    let generation = meta::generation(member);
    let agents = member.pointer("/status/agentStatus").and_then(Value::as_array);
    let agent = agents.into_iter().flatten().find(|a| a.get("type").and_then(Value::as_str) == Some("MemberAgent"));
    let conditions = agent.and_then(|a| a.get("conditions")).and_then(Value::as_array);
    let joined = conditions.into_iter().flatten().find(|c| c.get("type").and_then(Value::as_str) == Some("Joined"));
    joined.is_some_and(|c| {
        c.get("status").and_then(Value::as_str) == Some("False")
            && c.get("observedGeneration").and_then(Value::as_i64).is_none_or(|g| g >= generation)
    })
}

/// When the force-delete wait of a MemberCluster being deleted ends.
pub fn force_at(member: &Value, wait: Duration) -> Option<Timestamp> {
    let since: Timestamp = member.pointer("/metadata/deletionTimestamp")?.as_str()?.parse().ok()?;
    since.checked_add(SignedDuration::try_from(wait).ok()?).ok()
}

/// Whether the hub holds `member` with its finalizer.
pub fn held(member: &Value) -> bool {
    meta::finalizers(member).iter().any(|f| f == MEMBER_CLUSTER_FINALIZER)
}

/// The next step for `member`, being deleted, at `now`.
pub fn step(member: &Value, namespace: Namespace, now: Timestamp, wait: Duration) -> Step {
    if !held(member) {
        return Step::Nothing;
    }
    match namespace {
        Namespace::Absent => return Step::Release,
        Namespace::Deleting => return Step::AwaitNamespace,
        Namespace::Present => {}
    }
    if agent_left(member) {
        return Step::CollectNamespace { forced: false };
    }
    // A deletion time that cannot be read cannot be waited on: collect at once.
    match force_at(member, wait) {
        Some(at) if now < at => Step::AwaitAgent { force_at: at },
        _ => Step::CollectNamespace { forced: true },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn member(finalizer: bool, joined: Option<(&str, i64)>) -> Value {
        let finalizers: Vec<&str> = if finalizer { vec![MEMBER_CLUSTER_FINALIZER] } else { vec![] };
        let agent_status = match joined {
            Some((status, generation)) => json!([{"type": "MemberAgent", "conditions": [
                {"type": "Joined", "status": status, "observedGeneration": generation},
                {"type": "Healthy", "status": "True", "observedGeneration": generation}]}]),
            None => json!([]),
        };
        json!({"metadata": {"name": "m1", "generation": 2, "finalizers": finalizers,
            "deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"agentStatus": agent_status}})
    }

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn the_leave_flow_steps_as_kubefleets_hub_does() {
        let wait = Duration::from_secs(60);
        let early = at("2026-01-01T00:00:30Z");
        let late = at("2026-01-01T00:01:00Z");
        let force_at = at("2026-01-01T00:01:00Z");
        let cases: &[(&str, Value, Namespace, Timestamp, Step)] = &[
            ("not held: not ours", member(false, Some(("True", 2))), Namespace::Present, early, Step::Nothing),
            (
                "agent still joined",
                member(true, Some(("True", 2))),
                Namespace::Present,
                early,
                Step::AwaitAgent { force_at },
            ),
            ("agent never reported", member(true, None), Namespace::Present, early, Step::AwaitAgent { force_at }),
            (
                "agent left",
                member(true, Some(("False", 2))),
                Namespace::Present,
                early,
                Step::CollectNamespace { forced: false },
            ),
            (
                "left for an older generation",
                member(true, Some(("False", 1))),
                Namespace::Present,
                early,
                Step::AwaitAgent { force_at },
            ),
            (
                "dead agent, wait over",
                member(true, Some(("True", 2))),
                Namespace::Present,
                late,
                Step::CollectNamespace { forced: true },
            ),
            ("namespace going", member(true, Some(("False", 2))), Namespace::Deleting, late, Step::AwaitNamespace),
            ("namespace gone", member(true, Some(("True", 2))), Namespace::Absent, early, Step::Release),
        ];
        for (name, member, namespace, now, want) in cases {
            assert_eq!(&step(member, *namespace, *now, wait), want, "{name}");
        }
    }

    #[test]
    fn the_force_deadline_counts_from_the_deletion() {
        let deadline = force_at(&member(true, None), Duration::from_secs(3));
        assert_eq!(deadline, Some(at("2026-01-01T00:00:03Z")));
        assert_eq!(force_at(&json!({"metadata": {}}), Duration::from_secs(3)), None);
    }
}
