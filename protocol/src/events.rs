//! core/v1 Event ⇄ events.k8s.io/v1 Event. kube serves both APIs over one stored
//! object; the field names differ (`involvedObject` ⇄ `regarding`, `message` ⇄ `note`,
//! the old timestamps become `deprecated…`), everything else is shared.

use serde_json::{Map, Value};

/// core/v1 field name → events.k8s.io/v1 field name.
const RENAMES: [(&str, &str); 8] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    // Same name in both; listed so that nothing else is carried by accident.
    ("related", "related"),
];

/// Fields both versions share under one name.
const SHARED: [&str; 7] = ["metadata", "eventTime", "series", "reportingInstance", "action", "reason", "type"];

/// An events.k8s.io/v1 Event as the core/v1 Event it is stored as.
pub fn core_from_v1(event: &Value) -> Value {
    convert(event, "v1", RENAMES.map(|(core, v1)| (v1, core)))
}

/// A stored core/v1 Event as events.k8s.io/v1 shows it.
pub fn v1_from_core(event: &Value) -> Value {
    convert(event, "events.k8s.io/v1", RENAMES)
}

/// Copies the shared fields and the `(from, to)` renamed ones.
fn convert(event: &Value, api_version: &str, renames: [(&str, &str); 8]) -> Value {
    let Some(source) = event.as_object() else { return event.clone() };
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::from(api_version));
    out.insert("kind".into(), Value::from("Event"));
    for field in SHARED {
        if let Some(value) = source.get(field) {
            out.insert(field.into(), value.clone());
        }
    }
    for (from, to) in renames {
        if let Some(value) = source.get(from) {
            out.insert(to.into(), value.clone());
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_convert_both_ways() {
        let core = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "cm.1", "namespace": "default"},
            "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "default"},
            "reason": "Tested", "message": "hello", "type": "Normal",
            "source": {"component": "test"}, "count": 2,
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:01:00Z",
            "reportingComponent": "ctl", "reportingInstance": "ctl-1",
        });
        let v1 = v1_from_core(&core);
        assert_eq!(v1["apiVersion"], "events.k8s.io/v1");
        assert_eq!(v1["regarding"]["name"], "cm");
        assert_eq!(v1["note"], "hello");
        assert_eq!(v1["deprecatedCount"], 2);
        assert_eq!(v1["reportingController"], "ctl");
        assert!(v1.get("message").is_none() && v1.get("involvedObject").is_none());
        assert_eq!(core_from_v1(&v1), core, "a round trip keeps everything");
    }
}
