//! Location status, as kcp's location controller keeps it: how many SyncTargets of the
//! Location's workspace its instanceSelector matches (`status.instances`), and how many
//! of those can take work (`status.availableInstances`: Ready, schedulable, not evicting);
//! and the Location's labels as one string in `scheduling.kcp.io/labels`, which its
//! `Labels` column shows.

use crate::state::Shard;
use apiserver::registry::ResourceType;
use apiserver::storage::{self, ObjectRef, WriteOptions};
use protocol::meta;
use protocol::selector::LabelSelector;
use protocol::types::{LOCATION_LABELS_STRING_ANNOTATION, SYNC_TARGET_RESOURCE, WORKLOAD_KCP_GROUP};
use serde_json::{json, Value};

/// Writes `location`'s status (in `cluster`) when the SyncTargets say otherwise.
pub async fn reconcile(shard: &Shard, rt: &ResourceType, cluster: &str, location: &Value) -> anyhow::Result<()> {
    if meta::is_deleting(location) {
        return Ok(());
    }
    let at = ObjectRef { cluster, namespace: None, name: meta::name(location).unwrap_or_default() };
    let shown = labels_string(location);
    if meta::annotations(location).get(LOCATION_LABELS_STRING_ANNOTATION) != Some(&shown) {
        storage::guaranteed_update(shard, rt, &at, None, WriteOptions::default(), |old| {
            let mut new = old.clone();
            meta::set_annotation(&mut new, LOCATION_LABELS_STRING_ANNOTATION, &labels_string(old));
            Ok(new)
        })
        .await
        .map_err(|e| anyhow::anyhow!(e.message))?;
    }
    let (targets, _) = crate::cache::lister::list(shard, WORKLOAD_KCP_GROUP, SYNC_TARGET_RESOURCE, cluster);
    let wanted = status(location, &targets, jiff::Timestamp::now());
    if location.get("status") == Some(&wanted) {
        return Ok(());
    }
    storage::guaranteed_update(shard, rt, &at, Some("status"), WriteOptions::default(), |old| {
        let mut new = old.clone();
        new["status"] = wanted.clone();
        Ok(new)
    })
    .await
    .map_err(|e| anyhow::anyhow!(e.message))?;
    Ok(())
}

/// A Location's labels as kcp prints them: `key=value` pairs, sorted, comma-separated.
fn labels_string(location: &Value) -> String {
    let labels = meta::labels(location);
    labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// Whether a SyncTarget can take new work at `now`: Ready (and not being deleted),
/// schedulable and not evicting, as the scheduler reads it ([`super::schedule::candidate`]).
pub fn available(target: &Value, now: jiff::Timestamp) -> bool {
    let candidate = super::schedule::candidate(target, None);
    candidate.ready && !candidate.unschedulable && candidate.evict_after.is_none_or(|evict_after| evict_after > now)
}

/// The status of `location` over the SyncTargets of its workspace. Pure. A Location
/// without an instanceSelector selects none, as in kcp.
fn status(location: &Value, targets: &[Value], now: jiff::Timestamp) -> Value {
    let selector = location
        .pointer("/spec/instanceSelector")
        .filter(|s| !s.is_null())
        .and_then(|s| LabelSelector::from_label_selector_json(s).ok())
        .unwrap_or_else(LabelSelector::nothing);
    let matched: Vec<&Value> = targets.iter().filter(|t| selector.matches(&meta::labels(t))).collect();
    let available = matched.iter().filter(|t| available(t, now)).count();
    json!({"instances": matched.len(), "availableInstances": available})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_count_matches_and_available_ones() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let ready = json!([{"type": "Ready", "status": "True"}]);
        let target = |name: &str, cloud: &str, spec: Value, conditions: Value| json!({"metadata": {"name": name, "labels": {"cloud": cloud}}, "spec": spec, "status": {"conditions": conditions}});
        let targets = [
            target("a", "aws", json!({}), ready.clone()),
            target("b", "aws", json!({}), json!([])),
            target("c", "aws", json!({"unschedulable": true}), ready.clone()),
            target("d", "aws", json!({"evictAfter": "2025-12-31T00:00:00Z"}), ready.clone()),
            target("e", "aws", json!({"evictAfter": "2026-06-01T00:00:00Z"}), ready.clone()),
            target("f", "gce", json!({}), ready),
        ];
        let location = json!({"spec": {"instanceSelector": {"matchLabels": {"cloud": "aws"}}}});
        assert_eq!(status(&location, &targets, now), json!({"instances": 5, "availableInstances": 2}));
        assert_eq!(status(&json!({"spec": {}}), &targets, now), json!({"instances": 0, "availableInstances": 0}));
        assert_eq!(
            labels_string(&json!({"metadata": {"labels": {"region": "eu", "cloud": "aws"}}})),
            "cloud=aws,region=eu"
        );
    }
}
