//! Which SyncTargets a namespace is scheduled to, as kcp's namespace controllers keep it
//! on the namespace itself:
//! - `scheduling.kcp.io/placement` (annotation, empty value) while a valid Placement of the
//!   workspace selects the namespace;
//! - `state.workload.kcp.io/<key>: Sync` (label) for the SyncTarget each such Placement
//!   chose (several Placements, several labels);
//! - `deletion.internal.workload.kcp.io/<key>: <RFC 3339 time>` (annotation) once a
//!   SyncTarget is no longer chosen; label and annotation go after the grace period, so
//!   the agent has time to delete downstream.
//!
//! Pure: the controller reads the Placements and the namespace, this says what to change.

use protocol::meta;
use protocol::selector::LabelSelector;
use protocol::types::{
    CLUSTER_RESOURCE_STATE_LABEL_PREFIX, INTERNAL_CLUSTER_DELETION_TIMESTAMP_ANNOTATION_PREFIX,
    INTERNAL_SYNC_TARGET_PLACEMENT_ANNOTATION, PLACEMENT_ANNOTATION, PLACEMENT_PHASE_PENDING,
    PLACEMENT_READY_CONDITION, RESOURCE_STATE_SYNC, SYNCER_FINALIZER_NAME_PREFIX,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A Placement as the namespace scheduler needs it.
#[derive(Debug, Clone)]
pub struct PlacementView {
    /// The namespaces it selects; a Placement without a namespaceSelector selects none.
    pub selector: LabelSelector,
    /// Ready, past Pending and not being deleted.
    pub valid: bool,
    /// The key of the SyncTarget it chose, if any.
    pub target: Option<String>,
}

impl PlacementView {
    /// The view of a stored Placement.
    pub fn of(placement: &Value) -> PlacementView {
        let selector = placement
            .pointer("/spec/namespaceSelector")
            .filter(|s| !s.is_null())
            .and_then(|s| LabelSelector::from_label_selector_json(s).ok())
            .unwrap_or_else(LabelSelector::nothing);
        let phase = placement.pointer("/status/phase").and_then(Value::as_str).unwrap_or(PLACEMENT_PHASE_PENDING);
        let valid = !meta::is_deleting(placement)
            && phase != PLACEMENT_PHASE_PENDING
            && apiserver::conditions::is_true(placement.get("status"), PLACEMENT_READY_CONDITION);
        let target = meta::annotations(placement).get(INTERNAL_SYNC_TARGET_PLACEMENT_ANNOTATION).cloned();
        PlacementView { selector, valid, target }
    }

    /// Whether it is valid and selects a namespace with `labels`.
    pub fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        self.valid && self.selector.matches(labels)
    }
}

/// The changes a namespace needs: `Some(value)` sets, `None` removes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    /// Label changes.
    pub labels: BTreeMap<String, Option<String>>,
    /// Annotation changes.
    pub annotations: BTreeMap<String, Option<String>>,
    /// Finalizers to remove (of agents whose SyncTarget is gone).
    pub finalizers_removed: Vec<String>,
    /// When to look again (a removal's grace period ends).
    pub requeue_after: Option<Duration>,
}

impl Changes {
    /// Whether nothing is to be written.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.annotations.is_empty() && self.finalizers_removed.is_empty()
    }

    /// Applies the changes to an object's metadata.
    pub fn apply(&self, object: &mut Value) {
        for (field, changes) in [("labels", &self.labels), ("annotations", &self.annotations)] {
            for (key, value) in changes {
                meta::set_map_entry(object, field, key, value.as_deref());
            }
        }
        if !self.finalizers_removed.is_empty() {
            let mut finalizers = meta::finalizers(object);
            finalizers.retain(|f| !self.finalizers_removed.contains(f));
            meta::set_finalizers(object, &finalizers);
        }
    }
}

/// What `namespace` needs given the workspace's `placements`, a removal grace period of
/// `grace`, at `now`.
pub fn schedule(namespace: &Value, placements: &[PlacementView], grace: Duration, now: jiff::Timestamp) -> Changes {
    let labels = meta::labels(namespace);
    let annotations = meta::annotations(namespace);
    let selecting: Vec<&PlacementView> = placements.iter().filter(|p| p.selects(&labels)).collect();
    let mut changes = Changes::default();
    match (selecting.is_empty(), annotations.contains_key(PLACEMENT_ANNOTATION)) {
        (false, false) => drop(changes.annotations.insert(PLACEMENT_ANNOTATION.into(), Some(String::new()))),
        (true, true) => drop(changes.annotations.insert(PLACEMENT_ANNOTATION.into(), None)),
        _ => {}
    }
    let scheduled: BTreeSet<&str> = selecting.iter().filter_map(|p| p.target.as_deref()).collect();
    let mut synced = BTreeSet::new();
    for key in labels.keys().filter_map(|label| label.strip_prefix(CLUSTER_RESOURCE_STATE_LABEL_PREFIX)) {
        synced.insert(key);
        let deletion = format!("{INTERNAL_CLUSTER_DELETION_TIMESTAMP_ANNOTATION_PREFIX}{key}");
        match annotations.get(&deletion) {
            None if !scheduled.contains(key) => {
                changes.annotations.insert(deletion, Some(rfc3339(now)));
                changes.requeue_after = earliest(changes.requeue_after, grace);
            }
            None => {}
            // Chosen again within the grace period: it stays.
            Some(_) if scheduled.contains(key) => drop(changes.annotations.insert(deletion, None)),
            Some(since) => {
                // An unreadable time counts as long past, as kcp's zero time does.
                let since = since.parse::<jiff::Timestamp>().unwrap_or(jiff::Timestamp::UNIX_EPOCH);
                let left = since.duration_since(now).as_secs_f64() + grace.as_secs_f64();
                if left <= 0.0 {
                    changes.labels.insert(format!("{CLUSTER_RESOURCE_STATE_LABEL_PREFIX}{key}"), None);
                    changes.annotations.insert(deletion, None);
                } else {
                    changes.requeue_after = earliest(changes.requeue_after, Duration::from_secs_f64(left));
                }
            }
        }
    }
    for key in scheduled.difference(&synced) {
        changes.labels.insert(format!("{CLUSTER_RESOURCE_STATE_LABEL_PREFIX}{key}"), Some(RESOURCE_STATE_SYNC.into()));
    }
    changes
}

/// The scheduling metadata a namespace hands down to the objects in it: its
/// `state.workload.kcp.io/*` labels and `deletion.internal.workload.kcp.io/*` annotations.
pub fn inherited(namespace: &Value) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let labels = meta::labels(namespace)
        .into_iter()
        .filter(|(key, _)| key.starts_with(CLUSTER_RESOURCE_STATE_LABEL_PREFIX))
        .collect();
    let annotations = meta::annotations(namespace)
        .into_iter()
        .filter(|(key, _)| key.starts_with(INTERNAL_CLUSTER_DELETION_TIMESTAMP_ANNOTATION_PREFIX))
        .collect();
    (labels, annotations)
}

/// What an object in a namespace needs so that its scheduling metadata is the
/// namespace's (`inherited`): kcp's resource scheduling controller. A SyncTarget whose
/// agent still holds the object (its `workload.kcp.io/syncer-<key>` finalizer) keeps its
/// label, marked for deletion, until the agent has deleted downstream and lets go (it
/// removes finalizer, label and mark together), so the object stays in its sync view;
/// unless the SyncTarget is `gone` (deleted): then nobody will let go, and the finalizer
/// goes here.
pub fn inherit(
    object: &Value,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    now: jiff::Timestamp,
    gone: &dyn Fn(&str) -> bool,
) -> Changes {
    let mut changes = Changes::default();
    let current_labels = meta::labels(object);
    let current_annotations = meta::annotations(object);
    let finalizers = meta::finalizers(object);
    let deletion = |key: &str| format!("{INTERNAL_CLUSTER_DELETION_TIMESTAMP_ANNOTATION_PREFIX}{key}");
    // A target the namespace marks for deletion is not handed to an object that no longer
    // has it: its agent let go already (or never held it).
    let leaving = |label: &str| {
        label
            .strip_prefix(CLUSTER_RESOURCE_STATE_LABEL_PREFIX)
            .is_some_and(|key| annotations.contains_key(&deletion(key)) && !current_labels.contains_key(label))
    };
    for (label, value) in labels.iter().filter(|(l, _)| !leaving(l)) {
        if current_labels.get(label) != Some(value) {
            changes.labels.insert(label.clone(), Some(value.clone()));
        }
    }
    for (annotation, value) in annotations {
        let key = annotation.strip_prefix(INTERNAL_CLUSTER_DELETION_TIMESTAMP_ANNOTATION_PREFIX).unwrap_or_default();
        if leaving(&format!("{CLUSTER_RESOURCE_STATE_LABEL_PREFIX}{key}")) {
            continue;
        }
        if current_annotations.get(annotation) != Some(value) {
            changes.annotations.insert(annotation.clone(), Some(value.clone()));
        }
    }
    let state_label = |key: &str| format!("{CLUSTER_RESOURCE_STATE_LABEL_PREFIX}{key}");
    // Held: the namespace dropped the target, the object still has its label and the
    // target's agent still has its finalizer on it.
    let held = |key: &str| {
        !labels.contains_key(&state_label(key))
            && current_labels.contains_key(&state_label(key))
            && finalizers.iter().any(|f| f.strip_prefix(SYNCER_FINALIZER_NAME_PREFIX) == Some(key))
            && !gone(key)
    };
    for finalizer in &finalizers {
        let Some(key) = finalizer.strip_prefix(SYNCER_FINALIZER_NAME_PREFIX) else { continue };
        if gone(key) && !labels.contains_key(&state_label(key)) {
            changes.finalizers_removed.push(finalizer.clone());
        }
    }
    for label in current_labels.keys().filter(|l| !labels.contains_key(*l)) {
        let Some(key) = label.strip_prefix(CLUSTER_RESOURCE_STATE_LABEL_PREFIX) else { continue };
        if !held(key) {
            changes.labels.insert(label.clone(), None);
        } else if !current_annotations.contains_key(&deletion(key)) {
            changes.annotations.insert(deletion(key), Some(rfc3339(now)));
        }
    }
    for annotation in current_annotations.keys().filter(|a| !annotations.contains_key(*a)) {
        let Some(key) = annotation.strip_prefix(INTERNAL_CLUSTER_DELETION_TIMESTAMP_ANNOTATION_PREFIX) else {
            continue;
        };
        if !held(key) {
            changes.annotations.insert(annotation.clone(), None);
        }
    }
    changes
}

fn earliest(current: Option<Duration>, candidate: Duration) -> Option<Duration> {
    Some(current.map_or(candidate, |c| c.min(candidate)))
}

/// `now` as kcp writes it (`time.RFC3339`, seconds, UTC).
fn rfc3339(now: jiff::Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view(selector: Value, target: &str) -> PlacementView {
        let placement = json!({"metadata": {"name": "p", "annotations": {"internal.workload.kcp.io/synctarget": target}},
            "spec": {"namespaceSelector": selector},
            "status": {"phase": "Bound", "conditions": [{"type": "Ready", "status": "True"}]}});
        PlacementView::of(&placement)
    }

    fn at(text: &str) -> jiff::Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn a_selected_namespace_is_annotated_and_labelled_for_each_target() {
        let ns = json!({"metadata": {"name": "app", "labels": {"team": "a"}}});
        let placements = [
            view(json!({}), "k1"),
            view(json!({"matchLabels": {"team": "a"}}), "k2"),
            view(json!({"matchLabels": {"team": "b"}}), "k3"),
        ];
        let changes = schedule(&ns, &placements, Duration::from_secs(5), at("2026-01-01T00:00:00Z"));
        assert_eq!(changes.annotations, BTreeMap::from([("scheduling.kcp.io/placement".into(), Some(String::new()))]));
        let labels: Vec<_> = changes.labels.iter().map(|(k, v)| format!("{k}={}", v.as_deref().unwrap())).collect();
        assert_eq!(labels, ["state.workload.kcp.io/k1=Sync", "state.workload.kcp.io/k2=Sync"]);
        assert_eq!(changes.requeue_after, None);
        // Applied, nothing more to do.
        let mut scheduled = ns.clone();
        changes.apply(&mut scheduled);
        assert!(schedule(&scheduled, &placements, Duration::from_secs(5), at("2026-01-01T00:00:00Z")).is_empty());
        // A Placement without a namespaceSelector, or not Ready, selects nothing.
        let mut unready = view(json!({}), "k1");
        unready.valid = false;
        let none = PlacementView::of(
            &json!({"status": {"phase": "Bound", "conditions": [{"type": "Ready", "status": "True"}]}}),
        );
        assert!(schedule(&ns, &[unready, none], Duration::from_secs(5), at("2026-01-01T00:00:00Z")).is_empty());
    }

    #[test]
    fn a_target_no_longer_chosen_is_marked_then_removed_after_the_grace_period() {
        let grace = Duration::from_secs(5);
        let ns = json!({"metadata": {"name": "app", "labels": {"state.workload.kcp.io/k1": "Sync"},
            "annotations": {"scheduling.kcp.io/placement": ""}}});
        let placements = [view(json!({}), "k2")];
        let changes = schedule(&ns, &placements, grace, at("2026-01-01T00:00:00Z"));
        assert_eq!(
            changes.annotations["deletion.internal.workload.kcp.io/k1"].as_deref(),
            Some("2026-01-01T00:00:00Z")
        );
        assert_eq!(changes.labels["state.workload.kcp.io/k2"].as_deref(), Some("Sync"));
        assert_eq!(changes.requeue_after, Some(grace));
        let mut marked = ns.clone();
        changes.apply(&mut marked);
        let early = schedule(&marked, &placements, grace, at("2026-01-01T00:00:02Z"));
        assert!(early.is_empty());
        assert_eq!(early.requeue_after, Some(Duration::from_secs(3)));
        let late = schedule(&marked, &placements, grace, at("2026-01-01T00:00:05Z"));
        assert_eq!(late.labels, BTreeMap::from([("state.workload.kcp.io/k1".into(), None)]));
        assert_eq!(late.annotations, BTreeMap::from([("deletion.internal.workload.kcp.io/k1".into(), None)]));
        // Chosen again within the grace period: the mark goes, the label stays.
        let again = schedule(&marked, &[view(json!({}), "k1")], grace, at("2026-01-01T00:00:02Z"));
        assert_eq!(again.annotations["deletion.internal.workload.kcp.io/k1"], None, "{again:?}");
        assert!(!again.labels.contains_key("state.workload.kcp.io/k1"), "{again:?}");
        // No Placement left: the placement annotation goes too.
        let gone = schedule(&marked, &[], grace, at("2026-01-01T00:00:01Z"));
        assert_eq!(gone.annotations["scheduling.kcp.io/placement"], None);
    }

    #[test]
    fn objects_inherit_the_namespace_scheduling_metadata_only() {
        let ns = json!({"metadata": {"labels": {"state.workload.kcp.io/k1": "Sync", "state.workload.kcp.io/k2": "Sync", "team": "a"},
            "annotations": {"deletion.internal.workload.kcp.io/k2": "t", "scheduling.kcp.io/placement": ""}}});
        let (labels, annotations) = inherited(&ns);
        let object = json!({"metadata": {"labels": {"app": "web", "state.workload.kcp.io/old": "Sync", "state.workload.kcp.io/k2": "Sync"}}});
        let now = jiff::Timestamp::UNIX_EPOCH;
        let changes = inherit(&object, &labels, &annotations, now, &|_| false);
        assert_eq!(
            changes.labels,
            BTreeMap::from([
                ("state.workload.kcp.io/k1".into(), Some("Sync".into())),
                ("state.workload.kcp.io/old".into(), None)
            ])
        );
        assert_eq!(
            changes.annotations,
            BTreeMap::from([("deletion.internal.workload.kcp.io/k2".into(), Some("t".into()))])
        );
        let mut done = object.clone();
        changes.apply(&mut done);
        assert_eq!(done["metadata"]["labels"]["app"], "web");
        assert!(inherit(&done, &labels, &annotations, now, &|_| false).is_empty());
    }

    #[test]
    fn a_label_the_agent_still_holds_stays_marked_for_deletion() {
        let held = json!({"metadata": {"finalizers": ["workload.kcp.io/syncer-k1"],
            "labels": {"state.workload.kcp.io/k1": "Sync"}}});
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let changes = inherit(&held, &BTreeMap::new(), &BTreeMap::new(), now, &|_| false);
        assert!(changes.labels.is_empty(), "{changes:?}");
        assert_eq!(
            changes.annotations["deletion.internal.workload.kcp.io/k1"].as_deref(),
            Some("2026-01-01T00:00:00Z")
        );
        let mut marked = held.clone();
        changes.apply(&mut marked);
        assert!(inherit(&marked, &BTreeMap::new(), &BTreeMap::new(), now, &|_| false).is_empty());
        // Once the agent let go (finalizer, label and mark removed), nothing comes back,
        // also while the namespace still carries the label and its mark.
        let released = json!({"metadata": {"labels": {"app": "web"}}});
        assert!(inherit(&released, &BTreeMap::new(), &BTreeMap::new(), now, &|_| false).is_empty());
        let ns_labels = BTreeMap::from([("state.workload.kcp.io/k1".to_string(), "Sync".to_string())]);
        let ns_marks = BTreeMap::from([("deletion.internal.workload.kcp.io/k1".to_string(), "t".to_string())]);
        assert!(inherit(&released, &ns_labels, &ns_marks, now, &|_| false).is_empty());
        // An object that still has the label gets the mark.
        let placed = json!({"metadata": {"labels": {"state.workload.kcp.io/k1": "Sync"}}});
        let marked = inherit(&placed, &ns_labels, &ns_marks, now, &|_| false);
        // A deleted SyncTarget's agent will never let go: its finalizer, label and mark go.
        let orphaned = inherit(&held, &BTreeMap::new(), &BTreeMap::new(), now, &|key| key == "k1");
        assert_eq!(orphaned.finalizers_removed, ["workload.kcp.io/syncer-k1"]);
        assert_eq!(orphaned.labels, BTreeMap::from([("state.workload.kcp.io/k1".into(), None)]));
        assert_eq!(
            marked.annotations,
            BTreeMap::from([("deletion.internal.workload.kcp.io/k1".into(), Some("t".into()))])
        );
    }
}
