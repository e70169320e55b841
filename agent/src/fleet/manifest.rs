//! What the member agent does with a Work's manifests, and how it finds what it applied.
//! Pure.
//!
//! - The order manifests go in: the Work's, with Namespaces and then
//!   CustomResourceDefinitions moved first so that what lives in them can land.
//! - The object applied from a manifest: without what the server owns (identity, status,
//!   owner references into the hub), in its namespace, labelled
//!   `kubernetes-fleet.io/applied-by-work` and annotated
//!   `kubernetes-fleet.io/applied-from: <hub namespace>/<work>`, so the agent can list
//!   everything it applied and tell which Work an object came from.
//! - Whether a Work still wants an object of the member (the garbage sweep), and the
//!   merge patches that hold and release the Work with the agent's finalizer.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The label on every object the agent applies: the Work's name (shortened with a hash
/// when longer than a label value may be).
pub const WORK_LABEL: &str = "kubernetes-fleet.io/applied-by-work";
/// The annotation on every object the agent applies: `<hub namespace>/<work name>`.
pub const FROM_ANNOTATION: &str = "kubernetes-fleet.io/applied-from";
/// The finalizer the agent holds on a Work while objects it applied from it may exist.
pub const FINALIZER: &str = "kubernetes-fleet.io/work-cleanup";

/// Metadata the server sets; a manifest copied from another cluster may carry it.
const SERVER_OWNED: &[&str] = &[
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    // They would name objects of the hub: the member's garbage collector would delete it.
    "ownerReferences",
];

/// A Work's manifests, in its order.
pub fn manifests(work: &Value) -> &[Value] {
    work.pointer("/spec/workload/manifests").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// The group, version and kind a manifest names.
pub fn group_version_kind(manifest: &Value) -> Option<(String, String, String)> {
    let api_version = manifest.get("apiVersion").and_then(Value::as_str).filter(|v| !v.is_empty())?;
    let kind = manifest.get("kind").and_then(Value::as_str).filter(|k| !k.is_empty())?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    Some((group.to_string(), version.to_string(), kind.to_string()))
}

/// The indices of `manifests` in the order they are applied: the Work's order, except
/// that Namespaces and then CustomResourceDefinitions come first.
pub fn apply_order(manifests: &[Value]) -> Vec<usize> {
    let rank = |manifest: &Value| match group_version_kind(manifest) {
        Some((group, _, kind)) if group.is_empty() && kind == "Namespace" => 0,
        Some((group, _, kind)) if group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition" => 1,
        _ => 2,
    };
    let mut order: Vec<usize> = (0..manifests.len()).collect();
    // A stable sort: the Work's order holds within each rank.
    order.sort_by_key(|&index| rank(&manifests[index]));
    order
}

/// The value of [`WORK_LABEL`] for Work `work`: its name, or, when longer than the 63
/// characters of a label value, its first 54 characters and 8 hex digits of its SHA-256.
pub fn label_value(work: &str) -> String {
    if work.len() <= 63 {
        return work.to_string();
    }
    let digest = Sha256::digest(work.as_bytes());
    let hash: String = digest.iter().take(4).map(|byte| format!("{byte:02x}")).collect();
    let prefix: String = work.chars().take(54).collect();
    format!("{prefix}-{hash}")
}

/// The object the agent applies for `manifest` of Work `work` in `hub_namespace`:
/// `namespace` is where it goes (`None`: cluster-scoped).
pub fn prepared(manifest: &Value, namespace: Option<&str>, work: &str, hub_namespace: &str) -> Value {
    let mut object = manifest.as_object().cloned().unwrap_or_default();
    object.remove("status");
    let mut metadata = object.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    for field in SERVER_OWNED {
        metadata.remove(*field);
    }
    match namespace {
        Some(namespace) => {
            metadata.insert("namespace".into(), json!(namespace));
        }
        None => {
            metadata.remove("namespace");
        }
    }
    let mut labels = metadata.get("labels").and_then(Value::as_object).cloned().unwrap_or_default();
    labels.insert(WORK_LABEL.into(), json!(label_value(work)));
    metadata.insert("labels".into(), Value::Object(labels));
    let mut annotations = metadata.get("annotations").and_then(Value::as_object).cloned().unwrap_or_default();
    annotations.insert(FROM_ANNOTATION.into(), json!(format!("{hub_namespace}/{work}")));
    metadata.insert("annotations".into(), Value::Object(annotations));
    object.insert("metadata".into(), Value::Object(metadata));
    // A Service's cluster IPs are the member's to assign; a headless one stays headless.
    if group_version_kind(manifest).is_some_and(|(group, _, kind)| group.is_empty() && kind == "Service") {
        if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
            if spec.get("clusterIP").and_then(Value::as_str) != Some("None") {
                spec.remove("clusterIP");
                spec.remove("clusterIPs");
            }
        }
    }
    Value::Object(object)
}

/// The Work an object of the member was applied from, when it was applied from a Work
/// in `hub_namespace` (an agent serving another MemberCluster may share the member).
pub fn applied_from<'a>(object: &'a Value, hub_namespace: &str) -> Option<&'a str> {
    let from = object.pointer("/metadata/annotations")?.get(FROM_ANNOTATION)?.as_str()?;
    let (namespace, work) = from.split_once('/')?;
    (namespace == hub_namespace && !work.is_empty()).then_some(work)
}

/// Whether `work` (`None`: gone) still wants the member's object of `group` and `kind`
/// named `namespace`/`name` (`namespace` empty: cluster-scoped): the Work is not being
/// deleted and one of its manifests names the object. A manifest without a namespace
/// names a namespaced object in `default`.
pub fn wanted(work: Option<&Value>, group: &str, kind: &str, namespace: &str, name: &str) -> bool {
    let Some(work) = work.filter(|work| !deleting(work)) else { return false };
    manifests(work).iter().any(|manifest| {
        let Some((manifest_group, _, manifest_kind)) = group_version_kind(manifest) else { return false };
        let text = |pointer: &str| manifest.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
        let manifest_namespace = text("/metadata/namespace");
        manifest_group == group
            && manifest_kind == kind
            && text("/metadata/name") == name
            && (namespace.is_empty()
                || manifest_namespace == namespace
                || (manifest_namespace.is_empty() && namespace == "default"))
    })
}

/// Whether an object is being deleted.
pub fn deleting(object: &Value) -> bool {
    object.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
}

/// Whether a Work carries the agent's [`FINALIZER`].
pub fn holds_finalizer(work: &Value) -> bool {
    finalizers(work).iter().any(|f| f == FINALIZER)
}

/// The merge patch that puts the agent's finalizer on `work` (`held`) or takes it off,
/// if that changes anything. The resourceVersion makes it fail (409) rather than
/// overwrite a concurrent change of the finalizers.
pub fn finalizer_patch(work: &Value, held: bool) -> Option<Value> {
    let mut finalizers = finalizers(work);
    if holds_finalizer(work) == held {
        return None;
    }
    if held {
        finalizers.push(FINALIZER.to_string());
    } else {
        finalizers.retain(|f| f != FINALIZER);
    }
    let resource_version = work.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null);
    Some(json!({"metadata": {"resourceVersion": resource_version, "finalizers": finalizers}}))
}

/// What the agent acts on in a Work: its spec, whether it is being deleted and whether it
/// holds the finalizer. A change to anything else (the status the agent writes) needs no
/// new pass.
pub fn fingerprint(work: &Value) -> String {
    json!([work.get("spec"), deleting(work), holds_finalizer(work)]).to_string()
}

fn finalizers(object: &Value) -> Vec<String> {
    let list = object.pointer("/metadata/finalizers").and_then(Value::as_array);
    list.into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Value {
        let mut metadata = json!({"name": name});
        if let Some(namespace) = namespace {
            metadata["namespace"] = json!(namespace);
        }
        json!({"apiVersion": api_version, "kind": kind, "metadata": metadata})
    }

    fn work(manifests: Vec<Value>) -> Value {
        json!({"metadata": {"name": "crp-work", "namespace": "fleet-member-m1", "resourceVersion": "5",
            "finalizers": ["other"]}, "spec": {"workload": {"manifests": manifests}}})
    }

    #[test]
    fn namespaces_then_definitions_go_first_in_the_works_order() {
        let manifests = vec![
            object("apps/v1", "Deployment", Some("app"), "web"),
            object("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "widgets.example.com"),
            object("v1", "ConfigMap", Some("app"), "settings"),
            object("v1", "Namespace", None, "app"),
            object("example.com/v1", "Widget", Some("app"), "w"),
            object("v1", "Namespace", None, "other"),
            // A Namespace kind of another group is nothing special.
            object("example.com/v1", "Namespace", None, "x"),
        ];
        assert_eq!(apply_order(&manifests), vec![3, 5, 1, 0, 2, 4, 6]);
        assert_eq!(apply_order(&[]), Vec::<usize>::new());
    }

    #[test]
    fn group_version_kind_reads_core_and_grouped_api_versions() {
        let cases = [
            (json!({"apiVersion": "v1", "kind": "ConfigMap"}), Some(("", "v1", "ConfigMap"))),
            (json!({"apiVersion": "apps/v1", "kind": "Deployment"}), Some(("apps", "v1", "Deployment"))),
            (json!({"apiVersion": "apps/v1"}), None),
            (json!({"apiVersion": "", "kind": "ConfigMap"}), None),
        ];
        for (manifest, expected) in cases {
            let expected = expected.map(|(g, v, k)| (g.to_string(), v.to_string(), k.to_string()));
            assert_eq!(group_version_kind(&manifest), expected, "{manifest}");
        }
    }

    #[test]
    fn applied_objects_are_marked_and_stripped_of_what_the_server_owns() {
        let manifest = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "uid": "u", "resourceVersion": "9", "generation": 2,
                "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [], "ownerReferences": [{"uid": "x"}],
                "labels": {"app": "web"}, "annotations": {"team": "a"}},
            "data": {"k": "v"}, "status": {}});
        assert_eq!(
            prepared(&manifest, Some("default"), "crp-work", "fleet-member-m1"),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "settings", "namespace": "default",
                    "labels": {"app": "web", "kubernetes-fleet.io/applied-by-work": "crp-work"},
                    "annotations": {"team": "a", "kubernetes-fleet.io/applied-from": "fleet-member-m1/crp-work"}},
                "data": {"k": "v"}})
        );
        let namespaced = object("v1", "Namespace", Some("stray"), "app");
        let cluster_scoped = prepared(&namespaced, None, "w", "ns");
        assert_eq!(cluster_scoped["metadata"].get("namespace"), None);
        let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "ports": []}});
        assert_eq!(prepared(&service, Some("a"), "w", "ns")["spec"], json!({"ports": []}));
        let headless =
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"clusterIP": "None"}});
        assert_eq!(prepared(&headless, Some("a"), "w", "ns")["spec"]["clusterIP"], "None");
    }

    #[test]
    fn long_work_names_make_valid_distinct_label_values() {
        assert_eq!(label_value("crp-work"), "crp-work");
        let long_a = format!("{}-work", "a".repeat(63));
        let long_b = format!("{}-1", "a".repeat(63));
        let (a, b) = (label_value(&long_a), label_value(&long_b));
        assert_eq!(a.len(), 63);
        assert_eq!(b.len(), 63);
        assert_ne!(a, b);
        assert!(a.ends_with(|c: char| c.is_ascii_alphanumeric()));
        assert_eq!(label_value(&"b".repeat(63)), "b".repeat(63));
    }

    #[test]
    fn the_sweep_keeps_only_what_a_live_work_names() {
        let live = work(vec![
            object("v1", "ConfigMap", Some("app"), "settings"),
            object("v1", "Secret", None, "token"),
            object("v1", "Namespace", None, "app"),
        ]);
        let mut gone = live.clone();
        gone["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        let cases = [
            (Some(&live), "", "ConfigMap", "app", "settings", true),
            (Some(&live), "", "ConfigMap", "other", "settings", false),
            (Some(&live), "", "ConfigMap", "app", "other", false),
            (Some(&live), "apps", "ConfigMap", "app", "settings", false),
            (Some(&live), "", "Secret", "default", "token", true),
            (Some(&live), "", "Secret", "app", "token", false),
            (Some(&live), "", "Namespace", "", "app", true),
            (Some(&gone), "", "ConfigMap", "app", "settings", false),
            (None, "", "ConfigMap", "app", "settings", false),
        ];
        for (work, group, kind, namespace, name, expected) in cases {
            assert_eq!(wanted(work, group, kind, namespace, name), expected, "{kind} {namespace}/{name}");
        }
    }

    #[test]
    fn the_work_an_object_came_from_is_read_for_our_namespace_only() {
        let marked = |from: &str| json!({"metadata": {"annotations": {FROM_ANNOTATION: from}}});
        assert_eq!(applied_from(&marked("fleet-member-m1/crp-work"), "fleet-member-m1"), Some("crp-work"));
        assert_eq!(applied_from(&marked("fleet-member-m2/crp-work"), "fleet-member-m1"), None);
        assert_eq!(applied_from(&marked("fleet-member-m1/"), "fleet-member-m1"), None);
        assert_eq!(applied_from(&json!({"metadata": {}}), "fleet-member-m1"), None);
    }

    #[test]
    fn the_finalizer_is_added_once_and_removed_with_a_precondition() {
        let held = finalizer_patch(&work(vec![]), true).unwrap();
        assert_eq!(
            held,
            json!({"metadata": {"resourceVersion": "5", "finalizers": ["other", "kubernetes-fleet.io/work-cleanup"]}})
        );
        let mut holding = work(vec![]);
        holding["metadata"]["finalizers"] = held["metadata"]["finalizers"].clone();
        assert!(holds_finalizer(&holding));
        assert_eq!(finalizer_patch(&holding, true), None);
        assert_eq!(
            finalizer_patch(&holding, false),
            Some(json!({"metadata": {"resourceVersion": "5", "finalizers": ["other"]}}))
        );
        assert_eq!(finalizer_patch(&work(vec![]), false), None);
    }

    #[test]
    fn only_spec_deletion_and_finalizer_changes_change_the_fingerprint() {
        let base = work(vec![object("v1", "ConfigMap", Some("a"), "c")]);
        let mut with_status = base.clone();
        with_status["status"] = json!({"conditions": [{"type": "Applied", "status": "True"}]});
        with_status["metadata"]["resourceVersion"] = json!("6");
        assert_eq!(fingerprint(&base), fingerprint(&with_status));
        let mut changed = base.clone();
        changed["spec"]["workload"]["manifests"][0]["data"] = json!({"k": "v"});
        assert_ne!(fingerprint(&base), fingerprint(&changed));
        let mut deleting = base.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_ne!(fingerprint(&base), fingerprint(&deleting));
    }
}
