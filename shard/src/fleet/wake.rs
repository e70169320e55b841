//! What the Fleet hub controller reads of a written object to decide whether the write
//! wakes a placement, without building the object: only the fields the decision needs are
//! deserialized, and the rest (a Work's manifests, a placement's status, managedFields) is
//! skipped by the parser. The controller sees every write of its shard, so these run on
//! the hub's own writes too, thousands a second during a pass.

use super::PARENT_CRP_LABEL;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Whether a write changed an object's status and nothing else the hub reads (its spec,
/// labels, annotations, deletion): the status, resourceVersion and managedFields are
/// skipped, everything else compared.
pub fn status_only(value: &[u8], prev: &[u8]) -> bool {
    match (serde_json::from_slice::<Unreported>(value), serde_json::from_slice::<Unreported>(prev)) {
        (Ok(new), Ok(old)) => new == old,
        _ => false,
    }
}

/// The placement a Work's write wakes: the Work's parent, when its member reported (its
/// status changed), when it started being deleted or is gone (`value` `None`). A Work's
/// spec written by the hub wakes nothing, as KubeFleet's work generator ignores it.
pub fn work_wakes(value: Option<&[u8]>, prev: &[u8]) -> Option<String> {
    let old = serde_json::from_slice::<Glance>(prev).ok();
    let new = value.and_then(|v| serde_json::from_slice::<Glance>(v).ok());
    let reported = match (&old, &new) {
        (Some(old), Some(new)) => old.status != new.status || old.deleting() != new.deleting(),
        _ => true,
    };
    if !reported {
        return None;
    }
    new.or(old).and_then(Glance::parent)
}

/// The placement an object belongs to, by its parent-CRP label.
pub fn parent(bytes: &[u8]) -> Option<String> {
    serde_json::from_slice::<Glance>(bytes).ok().and_then(Glance::parent)
}

/// The labels, deletion and status of an object; nothing else is built.
#[derive(Deserialize)]
struct Glance {
    #[serde(default)]
    metadata: GlanceMeta,
    #[serde(default)]
    status: Value,
}

#[derive(Deserialize, Default)]
struct GlanceMeta {
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default, rename = "deletionTimestamp")]
    deletion_timestamp: Option<String>,
}

impl Glance {
    fn deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    fn parent(self) -> Option<String> {
        self.metadata.labels?.remove(PARENT_CRP_LABEL)
    }
}

/// An object without its status, and its metadata without resourceVersion and
/// managedFields; those are skipped, never built.
#[derive(PartialEq, Debug)]
struct Unreported(Map<String, Value>);

impl<'de> Deserialize<'de> for Unreported {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(Skipping { skipped: &["status"], metadata: true }).map(Unreported)
    }
}

/// Metadata without what every write changes.
struct Metadata(Map<String, Value>);

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let skipping = Skipping { skipped: &["resourceVersion", "managedFields"], metadata: false };
        deserializer.deserialize_map(skipping).map(Metadata)
    }
}

/// A JSON object's fields but `skipped`; with `metadata`, its metadata as [`Metadata`].
struct Skipping {
    skipped: &'static [&'static str],
    metadata: bool,
}

impl<'de> Visitor<'de> for Skipping {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if self.skipped.contains(&key.as_str()) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let value = match self.metadata && key == "metadata" {
                true => Value::Object(map.next_value::<Metadata>()?.0),
                false => map.next_value::<Value>()?,
            };
            out.insert(key, value);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bytes(value: &Value) -> Vec<u8> {
        serde_json::to_vec(value).unwrap()
    }

    fn crp() -> Value {
        json!({"apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
            "metadata": {"name": "web", "resourceVersion": "5", "generation": 1,
                "managedFields": [{"manager": "kubectl"}], "annotations": {"a": "1"}},
            "spec": {"policy": {"placementType": "PickAll"}},
            "status": {"conditions": [{"type": "ClusterResourcePlacementScheduled", "status": "True"}]}})
    }

    #[test]
    fn a_placement_write_is_status_only_when_nothing_but_bookkeeping_changed() {
        let old = crp();
        let mut reported = old.clone();
        reported["status"]["conditions"][0]["status"] = json!("False");
        reported["metadata"]["resourceVersion"] = json!("6");
        reported["metadata"]["managedFields"] = json!([{"manager": "atoll"}]);
        assert!(status_only(&bytes(&reported), &bytes(&old)));
        let mut no_status = old.clone();
        no_status.as_object_mut().unwrap().remove("status");
        assert!(status_only(&bytes(&no_status), &bytes(&old)), "a status removed is still a status write");

        let mut spec = old.clone();
        spec["spec"]["policy"]["placementType"] = json!("PickN");
        assert!(!status_only(&bytes(&spec), &bytes(&old)));
        let mut annotated = old.clone();
        annotated["metadata"]["annotations"]["a"] = json!("2");
        assert!(!status_only(&bytes(&annotated), &bytes(&old)), "the hub reads annotations (pacing, rebalance)");
        let mut deleting = old.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(!status_only(&bytes(&deleting), &bytes(&old)));
        assert!(!status_only(b"not json", &bytes(&old)), "what cannot be read wakes");
    }

    fn work() -> Value {
        json!({"apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "Work",
            "metadata": {"name": "web-work", "namespace": "fleet-member-m1", "resourceVersion": "3",
                "labels": {PARENT_CRP_LABEL: "web", "kubernetes-fleet.io/parent-resource-binding": "web-m1-1"}},
            "spec": {"workload": {"manifests": [{"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}]}}})
    }

    #[test]
    fn a_work_wakes_its_placement_when_its_member_reports_or_it_goes() {
        let old = work();
        let mut rewritten = old.clone();
        rewritten["spec"]["workload"]["manifests"][0]["data"]["k"] = json!("w");
        rewritten["metadata"]["resourceVersion"] = json!("4");
        assert_eq!(work_wakes(Some(&bytes(&rewritten)), &bytes(&old)), None, "the hub's own spec write");

        let mut applied = old.clone();
        applied["status"] = json!({"conditions": [{"type": "Applied", "status": "True"}]});
        assert_eq!(work_wakes(Some(&bytes(&applied)), &bytes(&old)).as_deref(), Some("web"));
        let mut available = applied.clone();
        available["status"]["conditions"][0]["status"] = json!("False");
        assert_eq!(work_wakes(Some(&bytes(&available)), &bytes(&applied)).as_deref(), Some("web"));

        let mut deleting = old.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(work_wakes(Some(&bytes(&deleting)), &bytes(&old)).as_deref(), Some("web"));
        assert_eq!(work_wakes(None, &bytes(&old)).as_deref(), Some("web"), "gone");

        let mut orphan = applied.clone();
        orphan["metadata"].as_object_mut().unwrap().remove("labels");
        assert_eq!(work_wakes(Some(&bytes(&orphan)), &bytes(&old)), None, "no placement to wake");
    }

    #[test]
    fn an_objects_parent_is_its_parent_crp_label() {
        assert_eq!(parent(&bytes(&work())).as_deref(), Some("web"));
        assert_eq!(parent(&bytes(&crp())), None);
        assert_eq!(parent(b"{"), None);
    }
}
