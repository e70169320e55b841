//! HorizontalPodAutoscaler conversion between `autoscaling/v1` (what older kubectl
//! writes) and `autoscaling/v2` (the storage version, as in kube). v1 has one CPU target;
//! what v2 says beyond it rides in v1's annotations, as kube keeps it, so a v1 round trip
//! loses nothing. Pure.

use serde_json::{json, Map, Value};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";

fn is_cpu_utilization(metric: &Value) -> bool {
    metric.get("type").and_then(Value::as_str) == Some("Resource")
        && metric.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        && metric.pointer("/resource/target/type").and_then(Value::as_str) == Some("Utilization")
}

fn annotations(object: &mut Value) -> &mut Map<String, Value> {
    let metadata = protocol::meta::metadata_mut(object);
    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations.as_object_mut().expect("object")
}

fn drop_empty_annotations(object: &mut Value) {
    let metadata = protocol::meta::metadata_mut(object);
    if metadata.get("annotations").and_then(Value::as_object).is_some_and(Map::is_empty) {
        metadata.remove("annotations");
    }
}

/// An autoscaling/v2 HorizontalPodAutoscaler from an autoscaling/v1 one.
pub fn v2_from_v1(v1: &Value) -> Value {
    let mut v2 = v1.clone();
    v2["apiVersion"] = json!("autoscaling/v2");
    let spec = v1.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut new_spec = Map::new();
    for field in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(value) = spec.get(field) {
            new_spec.insert(field.into(), value.clone());
        }
    }
    let saved = |object: &mut Value, key: &str| -> Option<Value> {
        let text = annotations(object).remove(key)?;
        serde_json::from_str(text.as_str()?).ok()
    };
    let mut metrics: Vec<Value> = saved(&mut v2, METRICS).and_then(|m| m.as_array().cloned()).unwrap_or_default();
    if let Some(percent) = spec.get("targetCPUUtilizationPercentage").filter(|p| !p.is_null()) {
        metrics.insert(
            0,
            json!({"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": percent}}}),
        );
    }
    if !metrics.is_empty() {
        new_spec.insert("metrics".into(), Value::Array(metrics));
    }
    if let Some(behavior) = saved(&mut v2, BEHAVIOR) {
        new_spec.insert("behavior".into(), behavior);
    }
    v2["spec"] = Value::Object(new_spec);
    let status = v1.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut new_status = Map::new();
    for field in ["observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"] {
        if let Some(value) = status.get(field) {
            new_status.insert(field.into(), value.clone());
        }
    }
    let mut current: Vec<Value> =
        saved(&mut v2, CURRENT_METRICS).and_then(|m| m.as_array().cloned()).unwrap_or_default();
    if let Some(percent) = status.get("currentCPUUtilizationPercentage").filter(|p| !p.is_null()) {
        current.insert(
            0,
            json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": percent}}}),
        );
    }
    if !current.is_empty() {
        new_status.insert("currentMetrics".into(), Value::Array(current));
    }
    if let Some(conditions) = saved(&mut v2, CONDITIONS) {
        new_status.insert("conditions".into(), conditions);
    }
    if v1.get("status").is_some() {
        v2["status"] = Value::Object(new_status);
    }
    drop_empty_annotations(&mut v2);
    v2
}

/// An autoscaling/v1 HorizontalPodAutoscaler from an autoscaling/v2 one.
pub fn v1_from_v2(v2: &Value) -> Value {
    let mut v1 = v2.clone();
    v1["apiVersion"] = json!("autoscaling/v1");
    let spec = v2.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut new_spec = Map::new();
    for field in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(value) = spec.get(field) {
            new_spec.insert(field.into(), value.clone());
        }
    }
    let metrics = spec.get("metrics").and_then(Value::as_array).cloned().unwrap_or_default();
    let (cpu, others): (Vec<Value>, Vec<Value>) = metrics.into_iter().partition(is_cpu_utilization);
    if let Some(percent) = cpu.first().and_then(|m| m.pointer("/resource/target/averageUtilization")) {
        new_spec.insert("targetCPUUtilizationPercentage".into(), percent.clone());
    }
    let keep = |object: &mut Value, key: &str, value: Option<Value>| {
        if let Some(value) = value.filter(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty())) {
            annotations(object).insert(key.into(), Value::from(value.to_string()));
        }
    };
    keep(&mut v1, METRICS, Some(Value::Array(others)));
    keep(&mut v1, BEHAVIOR, spec.get("behavior").cloned());
    v1["spec"] = Value::Object(new_spec);
    if let Some(status) = v2.get("status").cloned() {
        let mut new_status = Map::new();
        for field in ["observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"] {
            if let Some(value) = status.get(field) {
                new_status.insert(field.into(), value.clone());
            }
        }
        let current = status.get("currentMetrics").and_then(Value::as_array).cloned().unwrap_or_default();
        let (cpu, others): (Vec<Value>, Vec<Value>) = current.into_iter().partition(|m| {
            m.get("type").and_then(Value::as_str) == Some("Resource")
                && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
                && m.pointer("/resource/current/averageUtilization").is_some()
        });
        if let Some(percent) = cpu.first().and_then(|m| m.pointer("/resource/current/averageUtilization")) {
            new_status.insert("currentCPUUtilizationPercentage".into(), percent.clone());
        }
        keep(&mut v1, CURRENT_METRICS, Some(Value::Array(others)));
        keep(&mut v1, CONDITIONS, status.get("conditions").cloned());
        v1["status"] = Value::Object(new_status);
    }
    drop_empty_annotations(&mut v1);
    v1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_v2_round_trip() {
        let v2 = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}});
        let v1 = v1_from_v2(&v2);
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
        assert!(v1["spec"].get("metrics").is_none());
        assert!(v1["metadata"]["annotations"][METRICS].as_str().unwrap().contains("memory"));
        assert_eq!(v2_from_v1(&v1), v2, "nothing v2 says is lost through v1");
        let plain = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "x"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 3, "targetCPUUtilizationPercentage": 50}});
        let converted = v2_from_v1(&plain);
        assert_eq!(converted["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 50);
        assert!(converted["metadata"].get("annotations").is_none());
        assert_eq!(v1_from_v2(&converted), plain);
    }
}
