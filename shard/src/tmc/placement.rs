//! The Placement's first step, as kcp's: choose one Location for each Placement from its
//! location workspace. The choice is the scheduling framework's
//! (`placement::Profile::kcp_location`): Locations of the Placement's locationResource
//! that one of its locationSelectors matches, the current choice kept while it stays
//! valid, ties broken by a stable hash of the Placement, so a restart or another shard's
//! controller chooses the same. And the Placement's status: phase, selected Location,
//! the Ready (a Location) and Scheduled (a SyncTarget) conditions. Pure; the controller
//! ([`super::controller`]) reads and writes.

use protocol::meta;
use protocol::types::{
    LOCATION_NOT_FOUND_REASON, PLACEMENT_PHASE_BOUND, PLACEMENT_PHASE_PENDING, PLACEMENT_PHASE_UNBOUND,
    PLACEMENT_READY_CONDITION, PLACEMENT_SCHEDULED_CONDITION, SCHEDULE_LOCATION_NOT_FOUND_REASON,
    SCHEDULE_NO_VALID_TARGET_REASON,
};
use serde_json::{json, Value};

/// The workspace a Placement takes Locations from: `spec.locationWorkspace`, else its own.
pub fn location_path(cluster: &str, placement: &Value) -> String {
    match placement.pointer("/spec/locationWorkspace").and_then(Value::as_str) {
        Some(path) if !path.is_empty() => path.to_string(),
        _ => cluster.to_string(),
    }
}

/// `group/version/resource` of a kcp GroupVersionResource object.
fn gvr(value: Option<&Value>) -> Option<String> {
    let value = value?;
    let text = |field: &str| value.get(field).and_then(Value::as_str).unwrap_or_default();
    Some(format!("{}/{}/{}", text("group"), text("version"), text("resource")))
}

/// The Location the framework chooses for `placement` (keyed `key`) among `locations` of
/// the workspace at `path`. Pure.
pub fn choose_location(
    key: &str,
    placement: &Value,
    path: &str,
    locations: &[Value],
    now: jiff::Timestamp,
) -> anyhow::Result<Option<String>> {
    let candidates: Vec<placement::Candidate> = locations
        .iter()
        .filter(|location| !meta::is_deleting(location))
        .map(|location| {
            let mut candidate = placement::Candidate::new(meta::name(location).unwrap_or_default());
            candidate.labels = meta::labels(location);
            candidate.location_resource = gvr(location.pointer("/spec/resource"));
            candidate
        })
        .collect();
    let selectors = placement.pointer("/spec/locationSelectors").and_then(Value::as_array).cloned().unwrap_or_default();
    let required = selectors
        .into_iter()
        .map(|selector| {
            let label_selector = serde_json::from_value(selector)?;
            Ok(placement::SelectorTerm { label_selector: Some(label_selector), ..Default::default() })
        })
        .collect::<Result<Vec<_>, serde_json::Error>>()?;
    let policy = placement::Policy {
        number: placement::Number::N(1),
        required: Some(required),
        location_resource: gvr(placement.pointer("/spec/locationResource")),
        tie_break_key: key.to_string(),
        ..Default::default()
    };
    let mut state = placement::State::at(now);
    let current_path = placement.pointer("/status/selectedLocation/path").and_then(Value::as_str);
    let current = placement.pointer("/status/selectedLocation/locationName").and_then(Value::as_str);
    if let (Some(current), Some(current_path)) = (current, current_path) {
        if current_path == path {
            state.current.push(current.to_string());
        }
    }
    let decision = placement::decide(&placement::Profile::kcp_location(), &policy, &candidates, &state)?;
    Ok(decision.desired.into_iter().next())
}

/// What the controller found for one Placement.
#[derive(Debug, Clone, Copy)]
pub struct Found<'a> {
    /// The workspace its Locations come from.
    pub path: &'a str,
    /// The Location chosen, if any.
    pub location: Option<&'a str>,
    /// The SyncTarget chosen in it, or why none is valid.
    pub target: Result<&'a str, &'a str>,
    /// Whether a namespace of the workspace is selected by it.
    pub selects_namespaces: bool,
}

/// The status a Placement should have. Pure. Phases as kcp's: Pending without a
/// Location, Bound while it selects a namespace, else Unbound.
pub fn status(found: Found<'_>) -> Value {
    let Some(location) = found.location else {
        let path = found.path;
        return json!({
            "phase": PLACEMENT_PHASE_PENDING,
            "conditions": [
                {"type": PLACEMENT_READY_CONDITION, "status": "False", "reason": LOCATION_NOT_FOUND_REASON,
                    "message": format!("no Location in workspace {path} matches the placement's locationSelectors and locationResource")},
                {"type": PLACEMENT_SCHEDULED_CONDITION, "status": "False", "reason": SCHEDULE_LOCATION_NOT_FOUND_REASON,
                    "message": "no Location is selected"},
            ],
        });
    };
    let scheduled = match found.target {
        Ok(_) => json!({"type": PLACEMENT_SCHEDULED_CONDITION, "status": "True"}),
        Err(why) => json!({"type": PLACEMENT_SCHEDULED_CONDITION, "status": "False",
            "reason": SCHEDULE_NO_VALID_TARGET_REASON, "message": format!("No valid target with reason: {why}")}),
    };
    json!({
        "phase": if found.selects_namespaces { PLACEMENT_PHASE_BOUND } else { PLACEMENT_PHASE_UNBOUND },
        "selectedLocation": {"path": found.path, "locationName": location},
        "conditions": [{"type": PLACEMENT_READY_CONDITION, "status": "True"}, scheduled],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn location(name: &str, cloud: &str) -> Value {
        json!({"metadata": {"name": name, "labels": {"cloud": cloud}},
            "spec": {"resource": {"group": "workload.kcp.io", "version": "v1alpha1", "resource": "synctargets"}}})
    }

    fn placement(selectors: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"locationSelectors": selectors,
            "locationResource": {"group": "workload.kcp.io", "version": "v1alpha1", "resource": "synctargets"}}})
    }

    #[test]
    fn one_matching_location_is_chosen_and_kept() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let locations = [location("aws-1", "aws"), location("aws-2", "aws"), location("gce", "gce")];
        let aws = placement(json!([{"matchLabels": {"cloud": "aws"}}]));
        let first = choose_location("c/p", &aws, "root", &locations, now).unwrap().expect("an aws location");
        assert!(first.starts_with("aws-"), "{first}");
        assert_eq!(choose_location("c/p", &aws, "root", &locations, now).unwrap().as_deref(), Some(first.as_str()));
        // The current choice is kept while valid, even where the hash would pick the other.
        let other = if first == "aws-1" { "aws-2" } else { "aws-1" };
        let mut current = aws.clone();
        current["status"] = json!({"selectedLocation": {"path": "root", "locationName": other}});
        assert_eq!(choose_location("c/p", &current, "root", &locations, now).unwrap().as_deref(), Some(other));
        let none = placement(json!([{"matchLabels": {"cloud": "azure"}}]));
        assert_eq!(choose_location("c/p", &none, "root", &locations, now).unwrap(), None);
        let found = Found { path: "root", location: None, target: Err("none"), selects_namespaces: true };
        assert_eq!(status(found)["phase"], "Pending");
        let found = Found { location: Some("aws-1"), target: Ok("t"), selects_namespaces: false, ..found };
        let chosen = status(found);
        assert_eq!(chosen["phase"], "Unbound");
        assert_eq!(chosen["selectedLocation"], json!({"path": "root", "locationName": "aws-1"}));
        assert_eq!(chosen["conditions"][1], json!({"type": "Scheduled", "status": "True"}));
        let bound = status(Found { selects_namespaces: true, target: Err("SyncTarget a: not Ready"), ..found });
        assert_eq!(bound["phase"], "Bound");
        assert_eq!(bound["conditions"][1]["reason"], "NoValidTarget");
    }
}
