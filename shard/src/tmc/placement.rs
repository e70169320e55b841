//! The Placement controller's first step, as kcp's: choose one Location for each Placement
//! on this shard, from its location workspace, read through the fallback lister (so an
//! inventory workspace on another shard is read from the cache, also while that shard is
//! down). The choice is the scheduling framework's (`placement::Profile::kcp_location`):
//! Locations of the Placement's locationResource that one of its locationSelectors
//! matches, the current choice kept while it stays valid, ties broken by a stable hash of
//! the Placement, so a restart or another shard's controller chooses the same.
//!
//! Binding namespaces to the chosen Location's SyncTargets is the next step (issue 17);
//! until then a Placement with a Location is `Unbound` with a Ready condition.

use crate::cache::lister;
use crate::objects;
use crate::registry::ResourceType;
use crate::state::Shard;
use crate::storage::{self, ObjectRef, WriteOptions};
use protocol::meta;
use protocol::types::{
    LOCATION_NOT_FOUND_REASON, LOCATION_RESOURCE, PLACEMENT_PHASE_BOUND, PLACEMENT_PHASE_PENDING,
    PLACEMENT_PHASE_UNBOUND, PLACEMENT_READY_CONDITION, PLACEMENT_RESOURCE, SCHEDULING_KCP_GROUP,
};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// How often every Placement is looked at again (Locations change on other shards, which
/// no local write announces).
const RESYNC: Duration = Duration::from_secs(2);

/// Runs the TMC controllers (Location status, then Placements' Locations) until the
/// process ends.
pub async fn run(shard: Arc<Shard>) {
    let mut tick = tokio::time::interval(RESYNC);
    loop {
        tick.tick().await;
        for (resource, what) in [(LOCATION_RESOURCE, "location"), (PLACEMENT_RESOURCE, "placement")] {
            let Some(rt) = shard.registry.get(SCHEDULING_KCP_GROUP, "v1alpha1", resource) else { return };
            let mut objects = Vec::new();
            if let Err(error) =
                objects::scan(&shard.store, &rt, |cluster, object| objects.push((cluster.to_string(), object.clone())))
            {
                tracing::warn!(%error, what, "listing failed");
                continue;
            }
            for (cluster, object) in objects {
                let done = match resource {
                    LOCATION_RESOURCE => super::location::reconcile(&shard, &rt, &cluster, &object).await,
                    _ => reconcile(&shard, &rt, &cluster, &object).await,
                };
                if let Err(error) = done {
                    tracing::warn!(%error, %cluster, what, "status update failed; retrying");
                }
            }
        }
    }
}

async fn reconcile(shard: &Shard, rt: &ResourceType, cluster: &str, placement: &Value) -> anyhow::Result<()> {
    if meta::is_deleting(placement) {
        return Ok(());
    }
    let path = location_path(cluster, placement);
    let location_cluster = lister::local_cluster(shard, &path)
        .or_else(|| shard.cache.cluster_of_path(&path))
        .unwrap_or_else(|| path.clone());
    let (locations, _) = lister::list(shard, SCHEDULING_KCP_GROUP, LOCATION_RESOURCE, &location_cluster);
    let name = meta::name(placement).unwrap_or_default();
    let chosen = choose_location(&format!("{cluster}/{name}"), placement, &path, &locations, jiff::Timestamp::now())?;
    let wanted = status(placement, &path, chosen.as_deref());
    if placement.get("status").is_some_and(|current| crate::conditions::same_status(current, &wanted)) {
        return Ok(());
    }
    let at = ObjectRef { cluster, namespace: None, name };
    storage::guaranteed_update(shard, rt, &at, Some("status"), WriteOptions::default(), |old| {
        let mut new = old.clone();
        new["status"] = crate::conditions::with_transition_times(old.get("status"), &wanted);
        Ok(new)
    })
    .await
    .map_err(|e| anyhow::anyhow!(e.message))?;
    Ok(())
}

/// The workspace a Placement takes Locations from: `spec.locationWorkspace`, else its own.
fn location_path(cluster: &str, placement: &Value) -> String {
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
fn choose_location(
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

/// The status a Placement should have with `chosen` (from the workspace at `path`). Pure.
fn status(placement: &Value, path: &str, chosen: Option<&str>) -> Value {
    match chosen {
        Some(location) => {
            let bound = placement.pointer("/status/phase").and_then(Value::as_str) == Some(PLACEMENT_PHASE_BOUND);
            json!({
                "phase": if bound { PLACEMENT_PHASE_BOUND } else { PLACEMENT_PHASE_UNBOUND },
                "selectedLocation": {"path": path, "locationName": location},
                "conditions": [{"type": PLACEMENT_READY_CONDITION, "status": "True"}],
            })
        }
        None => json!({
            "phase": PLACEMENT_PHASE_PENDING,
            "conditions": [{"type": PLACEMENT_READY_CONDITION, "status": "False", "reason": LOCATION_NOT_FOUND_REASON,
                "message": format!("no Location in workspace {path} matches the placement's locationSelectors and locationResource")}],
        }),
    }
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
        assert_eq!(status(&none, "root", None)["phase"], "Pending");
        let chosen = status(&aws, "root", Some("aws-1"));
        assert_eq!(chosen["phase"], "Unbound");
        assert_eq!(chosen["selectedLocation"], json!({"path": "root", "locationName": "aws-1"}));
    }
}
