//! The storage strategy of the workload kinds: typed decoding against k8s-openapi's
//! types, kube's defaults, the status a new object starts with, a Job's generated
//! selector, and the kinds' validation. Nothing runs the objects.

use super::{convert, defaults, validate};
use apiserver::registry::strategy::{Causes, Strategy};
use apiserver::registry::ResourceType;
use apiserver::rest::status::ApiResult;
use protocol::meta;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

/// Decodes `object` as `T`, for the typed-decoding check: `Some(path: error)` when a field
/// holds the wrong type. Missing fields are validation's to report (422, with kube's
/// wording), so they do not count here.
fn decode<T: DeserializeOwned>(object: &Value) -> Option<String> {
    match serde_path_to_error::deserialize::<_, T>(object) {
        Ok(_) => None,
        Err(error) if error.inner().to_string().starts_with("missing field") => None,
        Err(error) => {
            let path = error.path().to_string();
            Some(if path == "." { error.inner().to_string() } else { format!("{path}: {}", error.inner()) })
        }
    }
}

/// One workload kind's behaviour.
#[derive(Debug)]
pub struct Workload {
    /// API group of the stored kind.
    pub group: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Whether `metadata.generation` counts spec changes (kinds whose controllers report
    /// an `observedGeneration`).
    pub generation: bool,
    /// The typed decoding check of the served version's k8s-openapi type.
    pub decode: fn(&Value) -> Option<String>,
}

impl Workload {
    /// A workload kind decoded as `T`.
    pub fn of<T: DeserializeOwned + k8s_openapi::Resource>(generation: bool) -> Self {
        Workload { group: T::GROUP, kind: T::KIND, generation, decode: decode::<T> }
    }

    fn defaults(&self, object: &mut Value) {
        defaults::normalize_quantities(self.group, self.kind, object);
        defaults::apply(self.group, self.kind, object);
    }
}

/// The status a new object starts with (kube's PrepareForCreate resets it): what the kind
/// reports before any controller has looked at it.
fn initial_status(group: &str, kind: &str, object: &Value) -> Option<Value> {
    Some(match (group, kind) {
        ("", "Pod") => json!({"phase": "Pending", "qosClass": qos_class(object)}),
        ("", "Service") | ("networking.k8s.io", "Ingress") => json!({"loadBalancer": {}}),
        ("", "PersistentVolumeClaim") => json!({"phase": "Pending"}),
        ("policy", "PodDisruptionBudget") => {
            json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0})
        }
        ("autoscaling", "HorizontalPodAutoscaler") => json!({"currentReplicas": 0, "desiredReplicas": 0}),
        ("", "ReplicationController") | ("apps", "ReplicaSet") => json!({"replicas": 0}),
        ("apps", "StatefulSet") => json!({"replicas": 0, "availableReplicas": 0}),
        ("apps", "DaemonSet") => {
            json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0})
        }
        ("apps", "Deployment") | ("batch", "Job" | "CronJob") | ("", "ResourceQuota") => json!({}),
        _ => return None,
    })
}

/// A Pod's quality-of-service class, as kube computes it from its containers' resources:
/// Guaranteed when every container limits CPU and memory at what it requests, BestEffort
/// when none requests or limits anything, else Burstable.
pub fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .flat_map(|list| pod.pointer(&format!("/spec/{list}")).and_then(Value::as_array).into_iter().flatten())
        .collect();
    let resources =
        |c: &Value, which: &str| c.pointer(&format!("/resources/{which}")).and_then(Value::as_object).cloned();
    let any = containers.iter().any(|c| {
        resources(c, "limits").is_some_and(|m| !m.is_empty()) || resources(c, "requests").is_some_and(|m| !m.is_empty())
    });
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let limits = resources(c, "limits").unwrap_or_default();
        let requests = resources(c, "requests").unwrap_or_default();
        ["cpu", "memory"]
            .iter()
            .all(|r| limits.get(*r).is_some() && requests.get(*r).is_none_or(|q| Some(q) == limits.get(*r)))
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// kube's generated Job selector: unless the Job asks for a manual selector, it selects
/// its own pods by its uid, and its template carries the labels that make that true.
fn generate_job_selector(job: &mut Value) {
    if job.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let uid = meta::meta_str(job, "uid").unwrap_or_default().to_string();
    let name = meta::name(job).unwrap_or_default().to_string();
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else { return };
    spec.insert("selector".into(), json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}));
    let template = spec.entry("template").or_insert_with(|| json!({}));
    let labels = [
        ("batch.kubernetes.io/controller-uid", uid.as_str()),
        ("batch.kubernetes.io/job-name", name.as_str()),
        ("controller-uid", uid.as_str()),
        ("job-name", name.as_str()),
    ];
    for (key, value) in labels {
        apiserver::strategy::set_label(template, key, value);
    }
}

impl Strategy for Workload {
    fn tracks_generation(&self) -> bool {
        self.generation
    }

    fn decode_error(&self, _rt: &ResourceType, object: &Value) -> Option<String> {
        let mut normalized = object.clone();
        defaults::normalize_quantities(self.group, self.kind, &mut normalized);
        (self.decode)(&normalized)
    }

    fn prepare_create(&self, rt: &ResourceType, object: &mut Value, _now: &str) -> ApiResult<()> {
        self.defaults(object);
        if (self.group, self.kind) == ("batch", "Job") {
            generate_job_selector(object);
        }
        if rt.has_subresource("status") {
            if let (Some(status), Some(map)) = (initial_status(self.group, self.kind, object), object.as_object_mut()) {
                map.insert("status".into(), status);
            }
        }
        Ok(())
    }

    fn prepare_update(&self, _rt: &ResourceType, _old: &Value, new: &mut Value, _sub: Option<&str>) -> ApiResult<()> {
        self.defaults(new);
        Ok(())
    }

    fn validate(&self, _rt: &ResourceType, old: Option<&Value>, object: &Value) -> Causes {
        validate::validate(self.group, self.kind, old, object)
    }
}

/// `autoscaling/v1` HorizontalPodAutoscalers: stored as v2 (kube's storage version) and
/// converted on the way in and out; v2's strategy does the rest.
#[derive(Debug)]
pub struct AutoscalerV1(pub Workload);

impl Strategy for AutoscalerV1 {
    fn tracks_generation(&self) -> bool {
        self.0.generation
    }

    fn converts(&self) -> bool {
        true
    }

    fn to_storage(&self, _rt: &ResourceType, object: &mut Value) {
        if object.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v1") {
            *object = convert::v2_from_v1(object);
            self.0.defaults(object);
        }
    }

    fn to_version(&self, _rt: &ResourceType, object: &mut Value) {
        if object.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v2") {
            *object = convert::v1_from_v2(object);
        }
    }

    fn decode_error(&self, rt: &ResourceType, object: &Value) -> Option<String> {
        self.0.decode_error(rt, object)
    }

    fn prepare_create(&self, rt: &ResourceType, object: &mut Value, _now: &str) -> ApiResult<()> {
        if rt.has_subresource("status") {
            object["status"] = json!({"currentReplicas": 0, "desiredReplicas": 0});
        }
        Ok(())
    }

    fn validate(&self, rt: &ResourceType, old: Option<&Value>, object: &Value) -> Causes {
        self.0.validate(rt, old, object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;

    #[test]
    fn typed_decoding_names_the_field_and_ignores_missing_ones() {
        let good = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web"}]}}}});
        assert_eq!(decode::<Deployment>(&good), None, "missing selector and image are validation's");
        let mut bad = good.clone();
        bad["spec"]["replicas"] = json!("two");
        let error = decode::<Deployment>(&bad).expect("a string is no replica count");
        assert!(error.starts_with("spec.replicas: invalid type: string \"two\""), "{error}");
        let workload = Workload::of::<k8s_openapi::api::core::v1::Pod>(false);
        let rt = apiserver::registry::builtin("", "v1", "pods", "pod", "Pod", true, "io.k8s.api.core.v1.Pod");
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "image": "b", "resources": {"limits": {"cpu": 1}}}]}});
        assert_eq!(workload.decode_error(&rt, &pod), None, "a number is a quantity");
    }

    #[test]
    fn qos_and_job_selectors() {
        let pod = |resources: Value| json!({"spec": {"containers": [{"resources": resources}]}});
        assert_eq!(qos_class(&pod(json!({}))), "BestEffort");
        assert_eq!(qos_class(&pod(json!({"limits": {"cpu": "1", "memory": "1Gi"}}))), "Guaranteed");
        assert_eq!(qos_class(&pod(json!({"requests": {"cpu": "1"}}))), "Burstable");
        let mut job = json!({"metadata": {"name": "pi", "uid": "u-1"}, "spec": {"template": {"spec": {}}}});
        generate_job_selector(&mut job);
        assert_eq!(job["spec"]["selector"], json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}));
        assert_eq!(job["spec"]["template"]["metadata"]["labels"]["job-name"], "pi");
        let mut manual = json!({"metadata": {"name": "pi", "uid": "u-1"}, "spec": {"manualSelector": true}});
        generate_job_selector(&mut manual);
        assert!(manual["spec"].get("selector").is_none());
    }
}
