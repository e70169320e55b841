//! What a ClusterResourcePlacement places, pure: its resource selectors, the objects they
//! pick, each object as it is sent to members (the hub's bookkeeping stripped), KubeFleet's
//! order, the hash that tells one selection from another, the split into snapshots of at
//! most 800 KiB, and overrides per member cluster. Envelopes are [`super::envelope`]'s.

use protocol::meta;
use protocol::selector::LabelSelector;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// A snapshot group's objects are split so no snapshot holds more than this many bytes.
pub const SNAPSHOT_LIMIT_BYTES: usize = 800 * 1024;

/// One `spec.resourceSelectors` entry.
#[derive(Clone, Debug)]
pub struct Selector {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: Option<String>,
    pub labels: Option<LabelSelector>,
    /// For a Namespace: only the namespace itself, not what is in it.
    pub namespace_only: bool,
}

/// The selectors of a placement, or an error naming the selector to fix.
pub fn selectors(crp: &Value) -> Result<Vec<Selector>, String> {
    let list = crp.pointer("/spec/resourceSelectors").and_then(Value::as_array).cloned().unwrap_or_default();
    if list.is_empty() {
        return Err("spec.resourceSelectors: at least one selector is required".to_string());
    }
    if list.len() > 100 {
        return Err(format!("spec.resourceSelectors: at most 100 selectors are allowed, not {}", list.len()));
    }
    let mut out = Vec::new();
    for (i, s) in list.iter().enumerate() {
        let text = |field: &str| s.get(field).and_then(Value::as_str).map(str::to_string);
        let name = text("name").filter(|n| !n.is_empty());
        let labels = match s.get("labelSelector") {
            Some(selector) => Some(
                LabelSelector::from_label_selector_json(selector)
                    .map_err(|e| format!("spec.resourceSelectors[{i}].labelSelector: {e}"))?,
            ),
            None => None,
        };
        if name.is_some() && labels.is_some() {
            return Err(format!("spec.resourceSelectors[{i}]: name and labelSelector are mutually exclusive"));
        }
        out.push(Selector {
            group: text("group").unwrap_or_default(),
            version: text("version").unwrap_or_default(),
            kind: text("kind").unwrap_or_default(),
            name,
            labels,
            namespace_only: text("selectionScope").as_deref() == Some("NamespaceOnly"),
        });
    }
    Ok(out)
}

impl Selector {
    /// Whether it picks `object` (of its kind).
    pub fn picks(&self, object: &Value) -> bool {
        if let Some(name) = &self.name {
            return meta::name(object) == Some(name.as_str());
        }
        match &self.labels {
            Some(selector) => selector.matches(&meta::labels(object)),
            None => true,
        }
    }

    pub fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.kind == "Namespace"
    }
}

/// Namespaces never placed: the members' own (`default`, `kube-*`) and the hub's
/// (`fleet-*`).
pub fn reserved_namespace(name: &str) -> bool {
    name == "default" || name.starts_with("kube-") || name.starts_with("fleet-")
}

/// An object as members receive it: without its hub identity, history, status and the
/// fields a member's controllers allocate.
pub fn prepare(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(fields) = object.as_object_mut() {
        fields.remove("status");
    }
    let metadata = meta::metadata_mut(&mut object);
    for field in [
        "resourceVersion",
        "generation",
        "uid",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "creationTimestamp",
        "ownerReferences",
        "finalizers",
        "generateName",
    ] {
        metadata.remove(field);
    }
    if let Some(annotations) = metadata.get_mut("annotations").and_then(Value::as_object_mut) {
        annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
        annotations.remove("deployment.kubernetes.io/revision");
        annotations.remove(protocol::wellknown::CLUSTER_ANNOTATION);
        if annotations.is_empty() {
            metadata.remove("annotations");
        }
    }
    if object.get("kind").and_then(Value::as_str) == Some("Service") {
        if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
            if spec.get("clusterIP").and_then(Value::as_str) != Some("None") {
                spec.remove("clusterIP");
                spec.remove("clusterIPs");
            }
            spec.remove("healthCheckNodePort");
        }
    }
    object
}

/// KubeFleet's apply order: what others depend on first.
const KIND_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// Sorts objects in apply order, then by apiVersion and kind (kinds KubeFleet does not
/// rank), then namespace and name.
pub fn sort(objects: &mut [Value]) {
    let key = |o: &Value| {
        let kind = o.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
        let rank = KIND_ORDER.iter().position(|k| *k == kind).unwrap_or(KIND_ORDER.len());
        let api_version = o.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_string();
        let namespace = meta::namespace(o).unwrap_or_default().to_string();
        let name = meta::name(o).unwrap_or_default().to_string();
        (rank, api_version, kind, namespace, name)
    };
    objects.sort_by_cached_key(key);
}

/// Lowercase hex SHA-256 of the selection.
pub fn hash(objects: &[Value]) -> String {
    let body = json!({"selectedResources": objects});
    super::policy::hex(&Sha256::digest(serde_json::to_vec(&body).unwrap_or_default()))
}

/// Splits objects, in order, into chunks of at most `limit` bytes of JSON; an object
/// larger than the limit gets a chunk of its own. There is always at least one chunk.
pub fn split(objects: &[Value], limit: usize) -> Vec<Vec<Value>> {
    let mut chunks: Vec<Vec<Value>> = vec![Vec::new()];
    let mut size = 0;
    for object in objects {
        let bytes = serde_json::to_vec(object).map(|b| b.len()).unwrap_or_default();
        let current = chunks.last_mut().expect("at least one chunk");
        if !current.is_empty() && size + bytes > limit {
            chunks.push(Vec::new());
            size = 0;
        }
        chunks.last_mut().expect("at least one chunk").push(object.clone());
        size += bytes;
    }
    chunks
}

/// The `selectedResources` entry of an object.
pub fn identifier(object: &Value) -> Value {
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let mut id = json!({"group": group, "version": version,
        "kind": object.get("kind").cloned().unwrap_or(Value::Null), "name": meta::name(object)});
    if let Some(namespace) = meta::namespace(object) {
        id["namespace"] = json!(namespace);
    }
    id
}

/// One override rule that applies to a member: JSON patch operations or a delete.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    Patch(Vec<Value>),
    Delete,
}

/// The rules of an override's `spec.policy` that apply to a member with `labels`: a rule
/// without a clusterSelector applies to none, an empty term list to all, else any term
/// whose labelSelector matches.
pub fn rules_for(override_: &Value, labels: &std::collections::BTreeMap<String, String>) -> Vec<Rule> {
    let rules = override_.pointer("/spec/policy/overrideRules").and_then(Value::as_array);
    let mut out = Vec::new();
    for rule in rules.into_iter().flatten() {
        let Some(selector) = rule.get("clusterSelector") else { continue };
        let terms = selector.get("clusterSelectorTerms").and_then(Value::as_array).cloned().unwrap_or_default();
        let applies = terms.is_empty()
            || terms.iter().any(|term| match term.get("labelSelector") {
                Some(s) => LabelSelector::from_label_selector_json(s).is_ok_and(|s| s.matches(labels)),
                None => true,
            });
        if !applies {
            continue;
        }
        match rule.get("overrideType").and_then(Value::as_str) {
            Some("Delete") => out.push(Rule::Delete),
            _ => out.push(Rule::Patch(
                rule.get("jsonPatchOverrides").and_then(Value::as_array).cloned().unwrap_or_default(),
            )),
        }
    }
    out
}

/// Applies rules to one object for the member `cluster` with `labels`; `Ok(None)` when a
/// Delete rule drops it. `${MEMBER-CLUSTER-NAME}` and `${MEMBER-CLUSTER-LABEL-KEY-<key>}`
/// in string values are replaced.
pub fn apply_rules(
    object: &Value,
    rules: &[Rule],
    cluster: &str,
    labels: &std::collections::BTreeMap<String, String>,
) -> Result<Option<Value>, String> {
    let mut object = object.clone();
    for rule in rules {
        match rule {
            Rule::Delete => return Ok(None),
            Rule::Patch(operations) => {
                let mut operations = operations.clone();
                for operation in &mut operations {
                    if let Some(value) = operation.get_mut("value") {
                        substitute(value, cluster, labels)?;
                    }
                }
                let patch: json_patch::Patch =
                    serde_json::from_value(Value::Array(operations)).map_err(|e| format!("invalid JSON patch: {e}"))?;
                json_patch::patch(&mut object, &patch).map_err(|e| format!("JSON patch failed: {e}"))?;
            }
        }
    }
    Ok(Some(object))
}

fn substitute(
    value: &mut Value,
    cluster: &str,
    labels: &std::collections::BTreeMap<String, String>,
) -> Result<(), String> {
    match value {
        Value::String(text) => {
            let mut out = text.replace("${MEMBER-CLUSTER-NAME}", cluster);
            const LABEL: &str = "${MEMBER-CLUSTER-LABEL-KEY-";
            while let Some(start) = out.find(LABEL) {
                let rest = &out[start + LABEL.len()..];
                let end = rest.find('}').ok_or_else(|| format!("unterminated {LABEL} in {text:?}"))?;
                let key = &rest[..end];
                let label = labels.get(key).ok_or_else(|| format!("member cluster {cluster} has no label {key}"))?;
                out = format!("{}{}{}", &out[..start], label, &rest[end + 1..]);
            }
            *text = out;
        }
        Value::Array(items) => items.iter_mut().try_for_each(|v| substitute(v, cluster, labels))?,
        Value::Object(fields) => fields.values_mut().try_for_each(|v| substitute(v, cluster, labels))?,
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn prepared_objects_lose_hub_bookkeeping_and_sort_in_apply_order() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "app",
            "uid": "u", "resourceVersion": "5", "managedFields": [], "creationTimestamp": "t",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}, "data": {"k": "v"}});
        let prepared = prepare(&cm);
        assert_eq!(
            prepared,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "b", "namespace": "app"}, "data": {"k": "v"}})
        );
        let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"clusterIP": "10.0.0.1", "ports": []}, "status": {}});
        assert_eq!(
            prepare(&service),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": []}})
        );
        let mut objects = vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "app"}}),
            json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "app"}}),
            prepared,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "app"}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}}),
        ];
        sort(&mut objects);
        let order: Vec<&str> = objects.iter().map(|o| meta::name(o).unwrap()).collect();
        assert_eq!(order, ["app", "a", "b", "d", "w"]);
    }

    #[test]
    fn splitting_keeps_order_and_the_limit() {
        let object = |n: usize| json!({"kind": "ConfigMap", "metadata": {"name": format!("c{n}")}, "data": {"k": "x".repeat(300)}});
        let objects: Vec<Value> = (0..10).map(object).collect();
        let size = serde_json::to_vec(&objects[0]).unwrap().len();
        let chunks = split(&objects, size * 3);
        assert_eq!(chunks.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 3, 1]);
        assert_eq!(chunks.concat(), objects);
        assert_eq!(split(&objects[..1], 10).len(), 1, "a big object gets its own chunk");
        assert_eq!(split(&[], 10), vec![Vec::<Value>::new()]);
        assert_ne!(hash(&objects[..1]), hash(&objects[..2]));
    }

    #[test]
    fn selectors_are_validated_and_pick_by_name_or_labels() {
        let crp = json!({"spec": {"resourceSelectors": [
            {"group": "", "version": "v1", "kind": "Namespace", "name": "app"},
            {"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole", "labelSelector": {"matchLabels": {"team": "a"}}}]}});
        let s = selectors(&crp).unwrap();
        assert!(s[0].is_namespace() && !s[0].namespace_only);
        assert!(s[0].picks(&json!({"metadata": {"name": "app"}})));
        assert!(!s[0].picks(&json!({"metadata": {"name": "other"}})));
        assert!(s[1].picks(&json!({"metadata": {"name": "r", "labels": {"team": "a"}}})));
        assert!(!s[1].picks(&json!({"metadata": {"name": "r", "labels": {"team": "b"}}})));
        let both = json!({"spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "a", "labelSelector": {}}]}});
        assert!(selectors(&both).unwrap_err().contains("mutually exclusive"));
        assert!(selectors(&json!({"spec": {}})).unwrap_err().contains("at least one"));
        assert!(
            reserved_namespace("kube-system") && reserved_namespace("fleet-member-a") && reserved_namespace("default")
        );
        assert!(!reserved_namespace("app"));
    }

    #[test]
    fn overrides_apply_per_member_with_variables() {
        let override_ = json!({"spec": {"policy": {"overrideRules": [
            {"clusterSelector": {"clusterSelectorTerms": [{"labelSelector": {"matchLabels": {"env": "canary"}}}]},
             "jsonPatchOverrides": [{"op": "replace", "path": "/data/where", "value": "${MEMBER-CLUSTER-NAME} in ${MEMBER-CLUSTER-LABEL-KEY-region}"}]},
            {"clusterSelector": {"clusterSelectorTerms": [{"labelSelector": {"matchLabels": {"env": "off"}}}]}, "overrideType": "Delete"},
            {"jsonPatchOverrides": [{"op": "add", "path": "/data/never", "value": "x"}]}]}}});
        let cm = json!({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"where": "hub"}});
        let canary: BTreeMap<String, String> =
            [("env".into(), "canary".into()), ("region".into(), "east".into())].into();
        let rules = rules_for(&override_, &canary);
        assert_eq!(rules.len(), 1, "a rule without a clusterSelector applies to none");
        let out = apply_rules(&cm, &rules, "m1", &canary).unwrap().unwrap();
        assert_eq!(out["data"]["where"], "m1 in east");
        let off: BTreeMap<String, String> = [("env".into(), "off".into())].into();
        assert_eq!(apply_rules(&cm, &rules_for(&override_, &off), "m2", &off).unwrap(), None);
        let prod: BTreeMap<String, String> = [("env".into(), "prod".into())].into();
        assert!(rules_for(&override_, &prod).is_empty());
        let no_region: BTreeMap<String, String> = [("env".into(), "canary".into())].into();
        assert!(apply_rules(&cm, &rules, "m3", &no_region).unwrap_err().contains("no label region"));
    }
}
