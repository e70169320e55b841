//! The Events a ClusterResourcePlacement's status change deserves, pure: KubeFleet's
//! reasons and messages for each condition of its chain turning True, and a warning for a
//! failure a person must act on. Written by the hub (`hub/events.rs`).

use serde_json::Value;

/// An event about a placement: whether it is a warning, KubeFleet's reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementEvent {
    pub warning: bool,
    pub reason: &'static str,
    pub message: String,
}

/// KubeFleet's event reasons and messages for the chain's conditions turning True.
const EVENTS_FOR_TRUE: &[(&str, &str, &str)] = &[
    ("ClusterResourcePlacementRolloutStarted", "PlacementRolloutStarted", "Started rolling out the latest resources"),
    (
        "ClusterResourcePlacementOverridden",
        "PlacementOverriddenSucceeded",
        "Placement has been successfully overridden",
    ),
    (
        "ClusterResourcePlacementWorkSynchronized",
        "PlacementWorkSynchronized",
        "Work(s) have been created or updated successfully for the selected cluster(s)",
    ),
    ("ClusterResourcePlacementApplied", "PlacementApplied", "Resources have been applied to the selected cluster(s)"),
    ("ClusterResourcePlacementAvailable", "PlacementAvailable", "Resources are available on the selected cluster(s)"),
];

/// Failure reasons of the placement's conditions that deserve a warning, with the
/// event's reason: what a person must act on, not what waiting resolves.
const EVENTS_FOR_FAILURE: &[(&str, &str)] = &[
    ("SchedulingPolicyUnfulfilled", "PlacementSchedulingPolicyUnfulfilled"),
    ("RolloutBlocked", "PlacementRolloutBlocked"),
    ("OverriddenFailed", "PlacementOverriddenFailed"),
    ("ApplyFailed", "PlacementApplyFailed"),
];

/// The events a placement's status change from `old` to `new` (their `conditions`)
/// deserves: one per condition that changed status or reason, so that a pass that
/// writes the same status again says nothing. A condition turning True gives
/// KubeFleet's event (Available also `PlacementRolloutCompleted`); one turning False
/// with a reason a person must act on gives a warning with its message.
pub fn placement_events(old: &Value, new: &Value) -> Vec<PlacementEvent> {
    let find = |status: &Value, kind: &str| -> Option<(String, String)> {
        let conditions = status.get("conditions").and_then(Value::as_array)?;
        let c = conditions.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(kind))?;
        let text = |field: &str| c.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
        Some((text("status"), text("reason")))
    };
    let mut events = Vec::new();
    let kinds = std::iter::once("ClusterResourcePlacementScheduled").chain(EVENTS_FOR_TRUE.iter().map(|e| e.0));
    for kind in kinds {
        let Some((status, reason)) = find(new, kind) else { continue };
        if find(old, kind) == Some((status.clone(), reason.clone())) {
            continue;
        }
        if status == "True" {
            let Some((_, event, message)) = EVENTS_FOR_TRUE.iter().find(|e| e.0 == kind) else { continue };
            events.push(PlacementEvent { warning: false, reason: event, message: message.to_string() });
            if kind == "ClusterResourcePlacementAvailable" {
                let message = "Placement has finished the rollout process and reached the desired status".to_string();
                events.push(PlacementEvent { warning: false, reason: "PlacementRolloutCompleted", message });
            }
        } else if let Some((_, event)) = EVENTS_FOR_FAILURE.iter().find(|e| status == "False" && e.0 == reason) {
            let conditions = new.get("conditions").and_then(Value::as_array);
            let c = conditions.into_iter().flatten().find(|c| c.get("type").and_then(Value::as_str) == Some(kind));
            let message = c.and_then(|c| c.get("message")).and_then(Value::as_str).unwrap_or_default().to_string();
            events.push(PlacementEvent { warning: true, reason: event, message });
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placement_events_follow_condition_changes_only() {
        let status = |conditions: &[(&str, &str, &str)]| {
            let list: Vec<Value> = conditions
                .iter()
                .map(|(kind, status, reason)| {
                    json!({"type": format!("ClusterResourcePlacement{kind}"), "status": status, "reason": reason, "message": "m"})
                })
                .collect();
            json!({"conditions": list})
        };
        let reasons = |events: Vec<PlacementEvent>| events.iter().map(|e| e.reason).collect::<Vec<_>>();
        let rolling = status(&[
            ("Scheduled", "True", "SchedulingPolicyFulfilled"),
            ("RolloutStarted", "False", "RolloutNotStartedYet"),
        ]);
        let started = status(&[
            ("Scheduled", "True", "SchedulingPolicyFulfilled"),
            ("RolloutStarted", "True", "RolloutStarted"),
            ("Overridden", "True", "NoOverrideSpecified"),
            ("WorkSynchronized", "True", "WorkSynchronized"),
            ("Applied", "True", "ApplySucceeded"),
            ("Available", "True", "ResourceAvailable"),
        ]);
        let blocked = status(&[
            ("Scheduled", "True", "SchedulingPolicyFulfilled"),
            ("RolloutStarted", "False", "RolloutBlocked"),
        ]);
        let empty = json!({});
        let cases: Vec<(&str, &Value, &Value, Vec<&str>)> = vec![
            ("nothing new", &rolling, &rolling, vec![]),
            ("waiting on the strategy is no news", &empty, &rolling, vec![]),
            (
                "every stage reached",
                &rolling,
                &started,
                vec![
                    "PlacementRolloutStarted",
                    "PlacementOverriddenSucceeded",
                    "PlacementWorkSynchronized",
                    "PlacementApplied",
                    "PlacementAvailable",
                    "PlacementRolloutCompleted",
                ],
            ),
            ("the same again", &started, &started, vec![]),
            ("blocked", &rolling, &blocked, vec!["PlacementRolloutBlocked"]),
        ];
        for (case, old, new, want) in cases {
            assert_eq!(reasons(placement_events(old, new)), want, "{case}");
        }
        assert!(placement_events(&rolling, &blocked)[0].warning);
    }
}
