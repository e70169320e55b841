//! The CRD strategy: the cleanup finalizer, defaulting, validation, and the status kube's
//! apiextensions controllers would write (accepted names, conditions, stored versions).
//!
//! Names are accepted at write time: `metadata.name` is `<plural>.<group>`, so two CRDs
//! of one cluster can never claim the same plural, and the CRD is `Established` as soon
//! as the write that created it answers (the index is updated before it does).

use super::CLEANUP_FINALIZER;
use protocol::meta;
use serde_json::{json, Map, Value};

/// Defaults a new CRD, adds the cleanup finalizer and fills its status.
pub fn prepare_create(crd: &mut Value, now: &str) {
    protocol::crd::default_crd(crd);
    let mut finalizers = meta::finalizers(crd);
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        finalizers.push(CLEANUP_FINALIZER.to_string());
        meta::set_finalizers(crd, &finalizers);
    }
    crd["status"] = status(crd, None, now);
}

/// Defaults an updated CRD and recomputes its status from the old one. A write through
/// the status subresource may set `storedVersions` (what storage-version migrators do once
/// every object is rewritten); otherwise they only grow.
pub fn prepare_update(old: &Value, crd: &mut Value, now: &str, status_write: bool) {
    protocol::crd::default_crd(crd);
    let requested = crd.pointer("/status/storedVersions").cloned();
    let mut previous = old.get("status").cloned().unwrap_or_default();
    if let (true, Some(requested)) = (status_write, requested) {
        previous["storedVersions"] = requested;
    }
    crd["status"] = status(crd, Some(&previous), now);
}

/// Validation causes of a CRD, as (field, message) pairs.
pub fn validate(old: Option<&Value>, crd: &Value) -> Vec<(String, String)> {
    let errors = match old {
        None => protocol::crd::validate_crd(crd),
        Some(old) => protocol::crd::validate_crd_update(old, crd),
    };
    errors.iter().map(|e| (e.field.clone(), e.message())).collect()
}

/// A CRD may not define a resource the built-in table serves (kube serves the built-in
/// and ignores such a CRD; refusing it says so at once).
pub fn shadowed_builtin(registry: &apiserver::registry::Registry, crd: &Value) -> Vec<(String, String)> {
    let group = crd.pointer("/spec/group").and_then(Value::as_str).unwrap_or_default();
    let plural = crd.pointer("/spec/names/plural").and_then(Value::as_str).unwrap_or_default();
    if !registry.is_builtin(group, plural) {
        return Vec::new();
    }
    vec![(
        "spec.names.plural".into(),
        format!(
            "Invalid value: {plural:?}: {plural}.{group} is a built-in resource of this server and cannot be redefined"
        ),
    )]
}

/// The status of `crd`: accepted names, conditions (keeping transition times that did
/// not change) and every version ever used for storage.
fn status(crd: &Value, old: Option<&Value>, now: &str) -> Value {
    let spec = crd.get("spec").cloned().unwrap_or_default();
    let mut stored: Vec<String> = old
        .and_then(|s| s.get("storedVersions"))
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let storage = spec
        .get("versions")
        .and_then(Value::as_array)
        .and_then(|versions| versions.iter().find(|v| v.get("storage").and_then(Value::as_bool) == Some(true)))
        .and_then(|v| v.get("name").and_then(Value::as_str));
    if let Some(storage) = storage {
        if !stored.iter().any(|v| v == storage) {
            stored.push(storage.to_string());
        }
    }
    let old_conditions = old.and_then(|s| s.get("conditions")).and_then(Value::as_array).cloned().unwrap_or_default();
    let mut conditions = vec![
        condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        condition("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
    ];
    if meta::is_deleting(crd) {
        conditions.push(condition(
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        ));
    }
    for condition in &mut conditions {
        let previous = old_conditions.iter().find(|c| c.get("type") == condition.get("type"));
        let time = match previous {
            Some(p) if p.get("status") == condition.get("status") => p.get("lastTransitionTime").cloned(),
            _ => None,
        };
        condition["lastTransitionTime"] = time.unwrap_or_else(|| Value::from(now));
    }
    json!({
        "acceptedNames": spec.get("names").cloned().unwrap_or_else(|| Value::Object(Map::new())),
        "conditions": conditions,
        "storedVersions": stored,
    })
}

fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": message})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(storage: &str) -> Value {
        json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Cluster",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"name": storage, "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]}
        })
    }

    #[test]
    fn create_establishes_and_update_keeps_stored_versions() {
        let mut created = crd("v1");
        prepare_create(&mut created, "2026-01-01T00:00:00Z");
        assert_eq!(meta::finalizers(&created), [CLEANUP_FINALIZER]);
        assert_eq!(created.pointer("/status/conditions/1/type"), Some(&json!("Established")));
        assert_eq!(created.pointer("/status/storedVersions"), Some(&json!(["v1"])));
        assert_eq!(created.pointer("/status/acceptedNames/listKind"), Some(&json!("WidgetList")));

        let mut updated = crd("v2");
        prepare_update(&created, &mut updated, "2026-02-02T00:00:00Z", false);
        assert_eq!(updated.pointer("/status/storedVersions"), Some(&json!(["v1", "v2"])));
        // A migrator drops v1 through the status subresource; the storage version stays.
        let mut migrated = updated.clone();
        migrated["status"]["storedVersions"] = json!([]);
        prepare_update(&updated, &mut migrated, "2026-03-03T00:00:00Z", true);
        assert_eq!(migrated.pointer("/status/storedVersions"), Some(&json!(["v2"])));
        let mut ignored = updated.clone();
        ignored["status"]["storedVersions"] = json!([]);
        prepare_update(&updated, &mut ignored, "2026-03-03T00:00:00Z", false);
        assert_eq!(ignored.pointer("/status/storedVersions"), Some(&json!(["v1", "v2"])));
        assert_eq!(updated.pointer("/status/conditions/1/lastTransitionTime"), Some(&json!("2026-01-01T00:00:00Z")));
    }
}
