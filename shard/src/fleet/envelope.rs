//! Envelopes: objects that carry others to member clusters without being applied on the
//! hub. KubeFleet's annotated ConfigMaps, ClusterResourceEnvelopes and ResourceEnvelopes,
//! and the split of a placement's manifests into plain objects and envelopes. Pure.

use super::resources::{prepare, sort};
use protocol::meta;
use serde_json::{json, Value};

/// The annotation that makes a ConfigMap an envelope: its data values are objects to
/// place on members, not to apply on the hub.
pub const ENVELOPE_ANNOTATION: &str = "kubernetes-fleet.io/envelope-configmap";

/// KubeFleet's envelope kinds (`placement.kubernetes-fleet.io/v1beta1`), whose `data` maps
/// names to the objects they wrap: cluster-scoped objects in a cluster-scoped
/// ClusterResourceEnvelope, namespaced ones in a ResourceEnvelope of their namespace.
pub const CLUSTER_RESOURCE_ENVELOPE: &str = "ClusterResourceEnvelope";
pub const RESOURCE_ENVELOPE: &str = "ResourceEnvelope";

/// The kinds of object that carry others to members without being applied anywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvelopeType {
    /// A ConfigMap with the envelope annotation, each data value a YAML or JSON object.
    ConfigMap,
    ClusterResourceEnvelope,
    ResourceEnvelope,
}

impl EnvelopeType {
    /// What kind of envelope `object` is, if it is one.
    pub fn of(object: &Value) -> Option<EnvelopeType> {
        let kind = object.get("kind").and_then(Value::as_str)?;
        let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        let placement = api_version.rsplit_once('/').is_some_and(|(group, _)| group == super::PLACEMENT_GROUP);
        match kind {
            "ConfigMap" if meta::annotations(object).get(ENVELOPE_ANNOTATION).is_some_and(|v| !v.is_empty()) => {
                Some(EnvelopeType::ConfigMap)
            }
            CLUSTER_RESOURCE_ENVELOPE if placement => Some(EnvelopeType::ClusterResourceEnvelope),
            RESOURCE_ENVELOPE if placement => Some(EnvelopeType::ResourceEnvelope),
            _ => None,
        }
    }

    /// The value of the `kubernetes-fleet.io/envelope-work` label on its Works, as
    /// KubeFleet's work generator writes it.
    pub fn label(self) -> &'static str {
        match self {
            EnvelopeType::ConfigMap => "configmap",
            EnvelopeType::ClusterResourceEnvelope => CLUSTER_RESOURCE_ENVELOPE,
            EnvelopeType::ResourceEnvelope => RESOURCE_ENVELOPE,
        }
    }

    /// An envelope custom resource: it is not overridden itself, the objects it wraps are.
    pub fn is_custom_resource(self) -> bool {
        self != EnvelopeType::ConfigMap
    }
}

/// The objects an envelope carries; `None` when `object` is not an envelope. An envelope
/// ConfigMap's objects land in its namespace when they name none; an envelope custom
/// resource's must name their scope themselves, as KubeFleet requires.
pub fn envelope_contents(object: &Value) -> Option<Result<Vec<Value>, String>> {
    match EnvelopeType::of(object)? {
        EnvelopeType::ConfigMap => Some(configmap_contents(object)),
        kind => Some(custom_resource_contents(object, kind)),
    }
}

/// The objects an envelope ClusterResourceEnvelope or ResourceEnvelope wraps, by key:
/// none of a ClusterResourceEnvelope's may name a namespace, each of a ResourceEnvelope's
/// must name the envelope's.
fn custom_resource_contents(object: &Value, kind: EnvelopeType) -> Result<Vec<Value>, String> {
    let name = meta::name(object).unwrap_or_default();
    let namespace = meta::namespace(object).filter(|ns| !ns.is_empty());
    let at = match namespace {
        Some(namespace) => format!("{} {namespace}/{name}", kind.label()),
        None => format!("{} {name}", kind.label()),
    };
    let data = object.get("data").and_then(Value::as_object).filter(|d| !d.is_empty());
    let data = data.ok_or_else(|| format!("{at}: data wraps no object"))?;
    let mut keys: Vec<&String> = data.keys().collect();
    keys.sort();
    let mut out = Vec::new();
    for key in keys {
        let inner = &data[key];
        if !inner.is_object() || inner.get("kind").is_none() {
            return Err(format!("{at}, key {key}: not a Kubernetes object"));
        }
        match (kind, namespace, meta::namespace(inner).filter(|ns| !ns.is_empty())) {
            (EnvelopeType::ClusterResourceEnvelope, _, Some(ns)) => {
                return Err(format!(
                    "{at}, key {key}: a namespaced object (namespace {ns}) cannot travel in a ClusterResourceEnvelope; wrap it in a ResourceEnvelope"
                ))
            }
            (EnvelopeType::ResourceEnvelope, _, None) => {
                return Err(format!(
                    "{at}, key {key}: a cluster-scoped object (no metadata.namespace) cannot travel in a ResourceEnvelope; wrap it in a ClusterResourceEnvelope"
                ))
            }
            (EnvelopeType::ResourceEnvelope, Some(envelope_ns), Some(ns)) if ns != envelope_ns => {
                return Err(format!("{at}, key {key}: a wrapped object must be in {envelope_ns}, not {ns}"))
            }
            _ => {}
        }
        out.push(inner.clone());
    }
    Ok(out)
}

/// The objects an envelope ConfigMap carries (each data value one YAML or JSON object),
/// placed in the envelope's namespace when they name none.
fn configmap_contents(object: &Value) -> Result<Vec<Value>, String> {
    let namespace = meta::namespace(object).unwrap_or_default();
    let name = meta::name(object).unwrap_or_default();
    let data = object.get("data").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut keys: Vec<&String> = data.keys().collect();
    keys.sort();
    let mut out = Vec::new();
    for key in keys {
        let text = data[key].as_str().unwrap_or_default();
        let mut inner: Value = match serde_yaml_ng::from_str(text) {
            Ok(value) => value,
            Err(e) => return Err(format!("envelope ConfigMap {namespace}/{name}, key {key}: {e}")),
        };
        if !inner.is_object() || inner.get("kind").is_none() {
            return Err(format!("envelope ConfigMap {namespace}/{name}, key {key}: not a Kubernetes object"));
        }
        match meta::namespace(&inner) {
            Some(ns) if ns != namespace => {
                return Err(format!(
                    "envelope ConfigMap {namespace}/{name}, key {key}: a wrapped namespaced object must be in {namespace}, not {ns}"
                ))
            }
            _ => {}
        }
        let namespaced =
            !CLUSTER_SCOPED_ENVELOPE_KINDS.contains(&inner.get("kind").and_then(Value::as_str).unwrap_or(""));
        if namespaced && meta::namespace(&inner).is_none() {
            meta::metadata_mut(&mut inner).insert("namespace".into(), json!(namespace));
        }
        out.push(inner);
    }
    Ok(out)
}

/// An envelope and the prepared objects it carries.
pub type Envelope = (Value, Vec<Value>);

/// A member's manifests split as KubeFleet's work generator splits them: the plain
/// objects (for the placement's main Work) and each envelope with the prepared objects
/// it carries (for a Work of its own), in order.
pub fn split_envelopes(manifests: Vec<Value>) -> Result<(Vec<Value>, Vec<Envelope>), String> {
    let mut plain = Vec::new();
    let mut envelopes = Vec::new();
    for manifest in manifests {
        match envelope_contents(&manifest) {
            Some(Ok(inner)) => {
                let mut inner: Vec<Value> = inner.iter().map(prepare).collect();
                sort(&mut inner);
                envelopes.push((manifest, inner));
            }
            Some(Err(message)) => return Err(message),
            None => plain.push(manifest),
        }
    }
    Ok((plain, envelopes))
}

/// Cluster-scoped kinds an envelope commonly carries (webhooks, cluster RBAC).
const CLUSTER_SCOPED_ENVELOPE_KINDS: &[&str] = &[
    "ClusterRole",
    "ClusterRoleBinding",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
    "CustomResourceDefinition",
    "PriorityClass",
    "StorageClass",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_carry_objects_into_their_namespace() {
        let envelope = json!({"kind": "ConfigMap", "metadata": {"name": "env", "namespace": "app",
            "annotations": {ENVELOPE_ANNOTATION: "true"}},
            "data": {"b.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\n",
                     "a.yaml": "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\n"}});
        let inner = envelope_contents(&envelope).unwrap().unwrap();
        assert_eq!(inner[0]["kind"], "ResourceQuota");
        assert_eq!(meta::namespace(&inner[0]), Some("app"));
        assert_eq!(meta::namespace(&inner[1]), None);
        assert!(envelope_contents(&json!({"kind": "ConfigMap", "metadata": {"name": "plain"}})).is_none());
        let elsewhere = json!({"kind": "ConfigMap", "metadata": {"name": "e", "namespace": "app",
            "annotations": {ENVELOPE_ANNOTATION: "1"}}, "data": {"x": "kind: Role\nmetadata:\n  name: r\n  namespace: other\n"}});
        assert!(envelope_contents(&elsewhere).unwrap().unwrap_err().contains("must be in app"));
    }

    #[test]
    fn envelopes_split_from_the_plain_manifests() {
        let envelope = json!({"kind": "ConfigMap", "metadata": {"name": "env", "namespace": "app",
            "annotations": {ENVELOPE_ANNOTATION: "true"}},
            "data": {"r.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: r\n  uid: u\n"}});
        let plain = json!({"kind": "ConfigMap", "metadata": {"name": "plain", "namespace": "app"}});
        let (main, envelopes) = split_envelopes(vec![plain.clone(), envelope.clone()]).unwrap();
        assert_eq!(main, vec![plain.clone()]);
        assert_eq!(envelopes.len(), 1);
        assert_eq!(envelopes[0].0, envelope);
        assert_eq!(
            envelopes[0].1,
            vec![json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "r", "namespace": "app"}})],
            "carried objects land in the envelope's namespace, prepared"
        );
        let bad = json!({"kind": "ConfigMap", "metadata": {"name": "bad", "namespace": "app",
            "annotations": {ENVELOPE_ANNOTATION: "true"}}, "data": {"x": "just text"}});
        assert!(split_envelopes(vec![plain, bad]).unwrap_err().contains("not a Kubernetes object"));
    }

    #[test]
    fn envelope_custom_resources_carry_objects_of_their_own_scope() {
        let cluster = json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceEnvelope",
            "metadata": {"name": "guards"},
            "data": {"webhook.yaml": {"apiVersion": "admissionregistration.k8s.io/v1",
                        "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "guard"}},
                     "clusterrole.yaml": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                        "metadata": {"name": "reader"}}}});
        assert_eq!(EnvelopeType::of(&cluster), Some(EnvelopeType::ClusterResourceEnvelope));
        let inner = envelope_contents(&cluster).unwrap().unwrap();
        let kinds: Vec<&str> = inner.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(kinds, ["ClusterRole", "ValidatingWebhookConfiguration"], "by key");
        let mut namespaced = cluster.clone();
        namespaced["data"]["cm.yaml"] = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "app"}});
        assert!(envelope_contents(&namespaced).unwrap().unwrap_err().contains("wrap it in a ResourceEnvelope"));

        let resource = json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ResourceEnvelope",
            "metadata": {"name": "quota", "namespace": "app"},
            "data": {"quota.yaml": {"apiVersion": "v1", "kind": "ResourceQuota",
                "metadata": {"name": "q", "namespace": "app"}, "spec": {"hard": {"pods": "3"}}}}});
        assert_eq!(EnvelopeType::of(&resource), Some(EnvelopeType::ResourceEnvelope));
        assert_eq!(envelope_contents(&resource).unwrap().unwrap(), vec![resource["data"]["quota.yaml"].clone()]);
        let mut elsewhere = resource.clone();
        elsewhere["data"]["quota.yaml"]["metadata"]["namespace"] = json!("other");
        assert!(envelope_contents(&elsewhere).unwrap().unwrap_err().contains("must be in app, not other"));
        let mut unscoped = resource.clone();
        unscoped["data"]["role.yaml"] = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "r"}});
        assert!(envelope_contents(&unscoped).unwrap().unwrap_err().contains("wrap it in a ClusterResourceEnvelope"));
        let mut text = resource.clone();
        text["data"]["quota.yaml"] = json!("kind: ResourceQuota");
        assert!(envelope_contents(&text).unwrap().unwrap_err().contains("not a Kubernetes object"));
        let empty = json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ResourceEnvelope",
            "metadata": {"name": "e", "namespace": "app"}, "data": {}});
        assert!(envelope_contents(&empty).unwrap().unwrap_err().contains("wraps no object"));

        // Only KubeFleet's group makes one: another group's kind of the same name is plain.
        let other = json!({"apiVersion": "example.com/v1", "kind": "ResourceEnvelope", "metadata": {"name": "x"}});
        assert_eq!(EnvelopeType::of(&other), None);
        let (main, envelopes) = split_envelopes(vec![other.clone(), resource.clone()]).unwrap();
        assert_eq!(main, vec![other]);
        assert_eq!(envelopes.len(), 1);
        assert_eq!(envelopes[0].0, resource);
        assert_eq!(envelopes[0].1[0]["kind"], "ResourceQuota");
    }
}
