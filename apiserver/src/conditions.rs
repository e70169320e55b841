//! Status conditions as controllers write them: a status compared without the
//! conditions' transition times, and each condition's lastTransitionTime kept while its
//! status stays (kube's `meta.SetStatusCondition`).

use crate::storage;
use serde_json::{json, Value};

/// Whether `current` already says what `wanted` does (ignoring transition times).
pub fn same_status(current: &Value, wanted: &Value) -> bool {
    let strip = |status: &Value| -> Value {
        let mut status = status.clone();
        if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
            for c in conditions {
                if let Some(c) = c.as_object_mut() {
                    c.remove("lastTransitionTime");
                }
            }
        }
        status
    };
    strip(current) == strip(wanted)
}

/// Whether `status` holds a condition of `kind` whose status is `True`.
pub fn is_true(status: Option<&Value>, kind: &str) -> bool {
    status.and_then(|s| s.get("conditions")).and_then(Value::as_array).is_some_and(|conditions| {
        conditions.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some(kind)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
    })
}

/// `wanted` with each condition's lastTransitionTime kept from `old` when its status did
/// not change, else now.
pub fn with_transition_times(old: Option<&Value>, wanted: &Value) -> Value {
    let mut status = wanted.clone();
    let old_conditions = old.and_then(|s| s.get("conditions")).and_then(Value::as_array).cloned().unwrap_or_default();
    if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in conditions {
            let previous = old_conditions.iter().find(|o| o.get("type") == c.get("type"));
            let time = match previous {
                Some(p) if p.get("status") == c.get("status") => p.get("lastTransitionTime").cloned(),
                _ => None,
            };
            c["lastTransitionTime"] = time.unwrap_or_else(|| json!(storage::now()));
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_times_survive_unchanged_conditions() {
        let old = json!({"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "t0"}]});
        let wanted = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        assert_eq!(with_transition_times(Some(&old), &wanted)["conditions"][0]["lastTransitionTime"], "t0");
        assert!(same_status(&old, &wanted));
        let flipped = json!({"conditions": [{"type": "Ready", "status": "False"}]});
        assert_ne!(with_transition_times(Some(&old), &flipped)["conditions"][0]["lastTransitionTime"], "t0");
    }
}
