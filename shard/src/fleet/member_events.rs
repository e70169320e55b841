//! KubeFleet's events about a MemberCluster, pure: what the hub says when a member's
//! hub conditions change and when it carries out a step of the leave flow
//! ([`super::leave`]), so that `kubectl describe membercluster` and `kubectl get events`
//! show a member joining, leaving, or being let go without its agent.
//!
//! The condition events are KubeFleet's (its hub member-cluster controller records one
//! when a condition's status changes): `MemberClusterReadyToJoin`, `MemberClusterJoined`,
//! `MemberClusterLeft` and the warning `MemberClusterJoinStateUnknown`, with its
//! messages. KubeFleet records "member cluster left" under the reason
//! `MemberClusterJoined`, an evident slip; here it carries `MemberClusterLeft`, the reason
//! of the condition it reports. KubeFleet only logs the leave flow's own steps; the hub
//! records them as events too, and the forced one as a warning, because what the dead
//! agent applied stays on the member for a person to clean.

use super::leave::{Step, MEMBER_CLUSTER_FINALIZER};
use serde_json::Value;
use std::time::Duration;

/// An event about a MemberCluster: whether it is a warning, its reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberEvent {
    pub warning: bool,
    pub reason: &'static str,
    pub message: String,
}

fn normal(reason: &'static str, message: impl Into<String>) -> MemberEvent {
    MemberEvent { warning: false, reason, message: message.into() }
}

/// What one leave step that the hub carried out did, for its event.
#[derive(Debug, Clone, Copy)]
pub struct Carried<'a> {
    /// The member's reserved namespace.
    pub namespace: &'a str,
    /// How many of its Works the hub took the finalizers off.
    pub works_released: usize,
    /// The force-delete wait.
    pub wait: Duration,
}

/// The events a change of a member's hub conditions from `old` to `new` (each a
/// `conditions` list) deserves: one per condition whose status changed, as KubeFleet
/// records them, so that writing the same conditions again says nothing.
pub fn condition_events(old: &Value, new: &Value) -> Vec<MemberEvent> {
    let status = |conditions: &Value, kind: &str| -> Option<String> {
        let list = conditions.as_array()?;
        let c = list.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(kind))?;
        c.get("status").and_then(Value::as_str).map(str::to_string)
    };
    let mut events = Vec::new();
    for kind in ["ReadyToJoin", "Joined"] {
        let Some(now) = status(new, kind) else { continue };
        if status(old, kind).as_deref() == Some(now.as_str()) {
            continue;
        }
        let event = match (kind, now.as_str()) {
            ("ReadyToJoin", "True") => normal("MemberClusterReadyToJoin", "member cluster ready to join"),
            ("Joined", "True") => normal("MemberClusterJoined", "member cluster joined"),
            ("Joined", "False") => normal("MemberClusterLeft", "member cluster left"),
            ("Joined", _) => MemberEvent {
                warning: true,
                reason: "MemberClusterJoinStateUnknown",
                message: "member cluster join state unknown".into(),
            },
            _ => continue,
        };
        events.push(event);
    }
    events
}

/// The event for a leave step the hub carried out; `None` for the steps that only wait.
pub fn leave_event(step: &Step, carried: Carried<'_>) -> Option<MemberEvent> {
    let Carried { namespace, works_released, wait } = carried;
    match step {
        Step::Nothing | Step::AwaitAgent { .. } | Step::AwaitNamespace => None,
        Step::CollectNamespace { forced: false } => Some(normal(
            "MemberClusterNamespaceDeleted",
            format!(
                "the member agent left: deleting namespace {namespace} and releasing its {works_released} Work(s)"
            ),
        )),
        Step::CollectNamespace { forced: true } => Some(MemberEvent {
            warning: true,
            reason: "MemberClusterForceDeleted",
            message: format!(
                "the member agent did not leave within {}s of the deletion: deleting namespace {namespace} and \
                 releasing its {works_released} Work(s); what the agent applied stays on the member cluster",
                wait.as_secs()
            ),
        }),
        Step::Release => Some(normal(
            "MemberClusterReleased",
            format!("namespace {namespace} is gone: finalizer {MEMBER_CLUSTER_FINALIZER} removed, the member left the fleet"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conditions(ready: Option<&str>, joined: Option<&str>) -> Value {
        let mut list = Vec::new();
        if let Some(status) = ready {
            list.push(json!({"type": "ReadyToJoin", "status": status, "reason": "MemberClusterReadyToJoin"}));
        }
        if let Some(status) = joined {
            list.push(json!({"type": "Joined", "status": status, "reason": "any"}));
        }
        Value::Array(list)
    }

    #[test]
    fn condition_changes_give_kubefleets_events_once() {
        /// A case: its name, the old and new conditions, the events wanted (reason, warning).
        type Case = (&'static str, Value, Value, &'static [(&'static str, bool)]);
        let cases: &[Case] = &[
            (
                "a new member: ready, its agent not reported yet",
                Value::Null,
                conditions(Some("True"), Some("Unknown")),
                &[("MemberClusterReadyToJoin", false), ("MemberClusterJoinStateUnknown", true)],
            ),
            (
                "its agent joins",
                conditions(Some("True"), Some("Unknown")),
                conditions(Some("True"), Some("True")),
                &[("MemberClusterJoined", false)],
            ),
            ("the same again", conditions(Some("True"), Some("True")), conditions(Some("True"), Some("True")), &[]),
            (
                "its agent leaves",
                conditions(Some("True"), Some("True")),
                conditions(Some("True"), Some("False")),
                &[("MemberClusterLeft", false)],
            ),
            (
                "a reason alone changes nothing",
                json!([{"type": "Joined", "status": "False", "reason": "MemberClusterJoinStateUnknown"}]),
                json!([{"type": "Joined", "status": "False", "reason": "MemberClusterLeft"}]),
                &[],
            ),
        ];
        for (name, old, new, want) in cases {
            let got: Vec<(&str, bool)> = condition_events(old, new).iter().map(|e| (e.reason, e.warning)).collect();
            assert_eq!(&got, want, "{name}");
        }
    }

    #[test]
    fn leave_steps_the_hub_carries_out_are_told_and_waiting_is_not() {
        let carried = Carried { namespace: "fleet-member-m1", works_released: 2, wait: Duration::from_secs(900) };
        let force_at = "2026-01-01T00:15:00Z".parse().unwrap();
        for waiting in [Step::Nothing, Step::AwaitAgent { force_at }, Step::AwaitNamespace] {
            assert_eq!(leave_event(&waiting, carried), None, "{waiting:?}");
        }
        let left = leave_event(&Step::CollectNamespace { forced: false }, carried).unwrap();
        assert_eq!((left.reason, left.warning), ("MemberClusterNamespaceDeleted", false));
        assert!(left.message.contains("fleet-member-m1") && left.message.contains("2 Work(s)"), "{}", left.message);
        let forced = leave_event(&Step::CollectNamespace { forced: true }, carried).unwrap();
        assert_eq!((forced.reason, forced.warning), ("MemberClusterForceDeleted", true));
        assert!(forced.message.contains("within 900s") && forced.message.contains("stays on the member"));
        let released = leave_event(&Step::Release, carried).unwrap();
        assert_eq!((released.reason, released.warning), ("MemberClusterReleased", false));
        assert!(released.message.contains(MEMBER_CLUSTER_FINALIZER));
    }
}
