//! The defaults kube-apiserver itself applies to workload objects (its `SetDefaults_*`
//! functions), so a Deployment read back from Atoll has the `replicas`, `strategy` and pod
//! template fields it would have read back from kube. Defaults that need a controller or
//! an allocator (a Service's `clusterIP` and IP families, a Pod's node) are not applied.
//! Pure: functions of the object.

use serde_json::{json, Map, Value};

/// Sets `key` of the object at `pointer` (created as needed) when it is absent or null.
fn default(object: &mut Value, pointer: &str, key: &str, value: Value) {
    let Some(target) = object_at(object, pointer) else { return };
    if target.get(key).is_none_or(Value::is_null) {
        target.insert(key.into(), value);
    }
}

/// The object at `pointer`, created (as `{}`) along the way; `None` when a non-object is
/// in the way (a wrong type is the validation's to report, not the defaulting's).
fn object_at<'v>(object: &'v mut Value, pointer: &str) -> Option<&'v mut Map<String, Value>> {
    let mut current = object;
    for field in pointer.split('/').filter(|f| !f.is_empty()) {
        let map = current.as_object_mut()?;
        current = map.entry(field).or_insert_with(|| json!({}));
        if current.is_null() {
            *current = json!({});
        }
    }
    current.as_object_mut()
}

/// The array at `pointer`, mutable, when there is one.
fn array_at<'v>(object: &'v mut Value, pointer: &str) -> Option<&'v mut Vec<Value>> {
    object.pointer_mut(pointer).and_then(Value::as_array_mut)
}

/// Applies kube's defaults for `group`/`kind` to a request body in storage shape.
pub fn apply(group: &str, kind: &str, object: &mut Value) {
    if !object.is_object() {
        return;
    }
    match (group, kind) {
        ("", "Pod") => {
            if let Some(spec) = object.get_mut("spec") {
                pod_spec(spec);
            }
            pod_requests_from_limits(object);
            default(object, "/spec", "enableServiceLinks", json!(true));
        }
        ("", "PodTemplate") => pod_template(object, "/template"),
        ("", "ReplicationController") => {
            default(object, "/spec", "replicas", json!(1));
            // An RC without a selector selects its template's labels, and labels itself so.
            let labels = object.pointer("/spec/template/metadata/labels").cloned();
            if let Some(labels) = labels.filter(|l| l.as_object().is_some_and(|m| !m.is_empty())) {
                default(object, "/spec", "selector", labels.clone());
                default(object, "/metadata", "labels", labels);
            }
            pod_template(object, "/spec/template");
        }
        ("", "Service") => service(object),
        ("", "Endpoints") => {
            for subset in array_at(object, "/subsets").into_iter().flatten() {
                protocol_tcp(subset, "/ports");
            }
        }
        ("", "PersistentVolumeClaim") => default(object, "/spec", "volumeMode", json!("Filesystem")),
        ("", "LimitRange") => {
            for item in array_at(object, "/spec/limits").into_iter().flatten() {
                limit_range_item(item);
            }
        }
        ("apps", "Deployment") => {
            default(object, "/spec", "replicas", json!(1));
            default(object, "/spec/strategy", "type", json!("RollingUpdate"));
            if object.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("RollingUpdate") {
                default(object, "/spec/strategy/rollingUpdate", "maxUnavailable", json!("25%"));
                default(object, "/spec/strategy/rollingUpdate", "maxSurge", json!("25%"));
            }
            default(object, "/spec", "revisionHistoryLimit", json!(10));
            default(object, "/spec", "progressDeadlineSeconds", json!(600));
            pod_template(object, "/spec/template");
        }
        ("apps", "ReplicaSet") => {
            default(object, "/spec", "replicas", json!(1));
            pod_template(object, "/spec/template");
        }
        ("apps", "StatefulSet") => {
            default(object, "/spec", "replicas", json!(1));
            default(object, "/spec", "podManagementPolicy", json!("OrderedReady"));
            default(object, "/spec/updateStrategy", "type", json!("RollingUpdate"));
            if object.pointer("/spec/updateStrategy/type").and_then(Value::as_str) == Some("RollingUpdate") {
                default(object, "/spec/updateStrategy/rollingUpdate", "partition", json!(0));
            }
            default(object, "/spec", "revisionHistoryLimit", json!(10));
            default(object, "/spec/persistentVolumeClaimRetentionPolicy", "whenDeleted", json!("Retain"));
            default(object, "/spec/persistentVolumeClaimRetentionPolicy", "whenScaled", json!("Retain"));
            for claim in array_at(object, "/spec/volumeClaimTemplates").into_iter().flatten() {
                default(claim, "/spec", "volumeMode", json!("Filesystem"));
                default(claim, "/status", "phase", json!("Pending"));
            }
            pod_template(object, "/spec/template");
        }
        ("apps", "DaemonSet") => {
            default(object, "/spec/updateStrategy", "type", json!("RollingUpdate"));
            if object.pointer("/spec/updateStrategy/type").and_then(Value::as_str) == Some("RollingUpdate") {
                default(object, "/spec/updateStrategy/rollingUpdate", "maxUnavailable", json!(1));
                default(object, "/spec/updateStrategy/rollingUpdate", "maxSurge", json!(0));
            }
            default(object, "/spec", "revisionHistoryLimit", json!(10));
            pod_template(object, "/spec/template");
        }
        ("batch", "Job") => {
            if let Some(spec) = object.get_mut("spec") {
                job_spec(spec);
            }
        }
        ("batch", "CronJob") => {
            default(object, "/spec", "concurrencyPolicy", json!("Allow"));
            default(object, "/spec", "suspend", json!(false));
            default(object, "/spec", "successfulJobsHistoryLimit", json!(3));
            default(object, "/spec", "failedJobsHistoryLimit", json!(1));
            pod_template(object, "/spec/jobTemplate/spec/template");
        }
        ("networking.k8s.io", "NetworkPolicy") => {
            let egress = object.pointer("/spec/egress").and_then(Value::as_array).is_some_and(|e| !e.is_empty());
            let types = if egress { json!(["Ingress", "Egress"]) } else { json!(["Ingress"]) };
            default(object, "/spec", "policyTypes", types);
            for direction in ["ingress", "egress"] {
                for rule in array_at(object, &format!("/spec/{direction}")).into_iter().flatten() {
                    protocol_tcp(rule, "/ports");
                }
            }
        }
        ("discovery.k8s.io", "EndpointSlice") => protocol_tcp(object, "/ports"),
        ("autoscaling", "HorizontalPodAutoscaler") => {
            default(object, "/spec", "minReplicas", json!(1));
            let metrics = object.pointer("/spec/metrics").and_then(Value::as_array).is_some_and(|m| !m.is_empty());
            if !metrics {
                let cpu = json!([{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}]);
                if let Some(spec) = object_at(object, "/spec") {
                    spec.insert("metrics".into(), cpu);
                }
            }
        }
        _ => {}
    }
}

/// Defaults of the pod template at `pointer` (its spec's).
fn pod_template(object: &mut Value, pointer: &str) {
    if let Some(spec) = object.pointer_mut(&format!("{pointer}/spec")) {
        pod_spec(spec);
    }
}

/// `SetDefaults_PodSpec` and what it reaches: containers, volumes, probes.
fn pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default(spec, "", "dnsPolicy", json!("ClusterFirst"));
    default(spec, "", "restartPolicy", json!("Always"));
    default(spec, "", "terminationGracePeriodSeconds", json!(30));
    default(spec, "", "schedulerName", json!("default-scheduler"));
    default(spec, "", "securityContext", json!({}));
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for container in array_at(spec, &format!("/{list}")).into_iter().flatten() {
            self::container(container);
        }
    }
    for volume in array_at(spec, "/volumes").into_iter().flatten() {
        for source in ["configMap", "secret", "downwardAPI", "projected"] {
            if volume.get(source).is_some_and(Value::is_object) {
                default(volume, &format!("/{source}"), "defaultMode", json!(420));
            }
        }
    }
}

/// A container's defaults: termination message, image pull policy, port protocols,
/// probe timings and env field references' API version.
fn container(container: &mut Value) {
    if !container.is_object() {
        return;
    }
    default(container, "", "terminationMessagePath", json!("/dev/termination-log"));
    default(container, "", "terminationMessagePolicy", json!("File"));
    let image = container.get("image").and_then(Value::as_str).unwrap_or_default();
    default(container, "", "imagePullPolicy", json!(image_pull_policy(image)));
    protocol_tcp(container, "/ports");
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if container.get(probe).is_some_and(Value::is_object) {
            let at = format!("/{probe}");
            default(container, &at, "timeoutSeconds", json!(1));
            default(container, &at, "periodSeconds", json!(10));
            default(container, &at, "successThreshold", json!(1));
            default(container, &at, "failureThreshold", json!(3));
            if container.pointer(&format!("{at}/httpGet")).is_some_and(Value::is_object) {
                default(container, &format!("{at}/httpGet"), "scheme", json!("HTTP"));
            }
        }
    }
    for variable in array_at(container, "/env").into_iter().flatten() {
        if variable.pointer("/valueFrom/fieldRef").is_some_and(Value::is_object) {
            default(variable, "/valueFrom/fieldRef", "apiVersion", json!("v1"));
        }
    }
}

/// kube's rule: `Always` for an image without a tag or with `:latest` (and no digest),
/// else `IfNotPresent`.
pub fn image_pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    // The tag follows the last colon after the last slash (a registry port is not a tag).
    let last_segment = image.rsplit('/').next().unwrap_or(image);
    match last_segment.rsplit_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

/// `protocol: TCP` on every entry of the port list at `pointer`.
fn protocol_tcp(object: &mut Value, pointer: &str) {
    for port in array_at(object, pointer).into_iter().flatten() {
        if port.is_object() {
            default(port, "", "protocol", json!("TCP"));
        }
    }
}

/// A Pod's containers request what they limit when they request nothing of it.
fn pod_requests_from_limits(pod: &mut Value) {
    for list in ["containers", "initContainers"] {
        for container in array_at(pod, &format!("/spec/{list}")).into_iter().flatten() {
            let Some(limits) = container.pointer("/resources/limits").and_then(Value::as_object).cloned() else {
                continue;
            };
            if let Some(requests) = object_at(container, "/resources/requests") {
                for (resource, quantity) in limits {
                    requests.entry(resource).or_insert(quantity);
                }
            }
        }
    }
}

/// A Service's defaults by type.
fn service(object: &mut Value) {
    default(object, "/spec", "type", json!("ClusterIP"));
    default(object, "/spec", "sessionAffinity", json!("None"));
    let kind = object.pointer("/spec/type").and_then(Value::as_str).unwrap_or_default().to_string();
    if kind != "ExternalName" {
        default(object, "/spec", "internalTrafficPolicy", json!("Cluster"));
    }
    if kind == "NodePort" || kind == "LoadBalancer" {
        default(object, "/spec", "externalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        default(object, "/spec", "allocateLoadBalancerNodePorts", json!(true));
    }
    for port in array_at(object, "/spec/ports").into_iter().flatten() {
        if !port.is_object() {
            continue;
        }
        default(port, "", "protocol", json!("TCP"));
        if let Some(number) = port.get("port").cloned() {
            default(port, "", "targetPort", number);
        }
    }
}

/// A Job's defaults: one completion by one pod unless told otherwise, six retries, and
/// kube's current policies.
fn job_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    if spec.get("completions").is_none_or(Value::is_null) && spec.get("parallelism").is_none_or(Value::is_null) {
        default(spec, "", "completions", json!(1));
    }
    default(spec, "", "parallelism", json!(1));
    let per_index = spec.get("backoffLimitPerIndex").is_some_and(|v| !v.is_null());
    default(spec, "", "backoffLimit", json!(if per_index { i32::MAX } else { 6 }));
    default(spec, "", "completionMode", json!("NonIndexed"));
    default(spec, "", "suspend", json!(false));
    if spec.get("podFailurePolicy").is_none_or(Value::is_null) {
        default(spec, "", "podReplacementPolicy", json!("TerminatingOrFailed"));
    }
    pod_template(spec, "/template");
}

/// A LimitRange item of type Container: the default limit is the maximum, the default
/// request the default limit (else the maximum).
fn limit_range_item(item: &mut Value) {
    if item.get("type").and_then(Value::as_str) != Some("Container") {
        return;
    }
    let max = item.get("max").and_then(Value::as_object).cloned().unwrap_or_default();
    if let Some(defaults) = object_at(item, "/default") {
        for (resource, quantity) in &max {
            defaults.entry(resource.clone()).or_insert_with(|| quantity.clone());
        }
    }
    let limits = item.get("default").and_then(Value::as_object).cloned().unwrap_or_default();
    if let Some(requests) = object_at(item, "/defaultRequest") {
        for (resource, quantity) in limits.iter().chain(max.iter()) {
            requests.entry(resource.clone()).or_insert_with(|| quantity.clone());
        }
    }
    for field in ["default", "defaultRequest"] {
        if item.get(field).and_then(Value::as_object).is_some_and(Map::is_empty) {
            item.as_object_mut().map(|map| map.remove(field));
        }
    }
}

/// Quantities written as JSON numbers (`cpu: 1` in YAML) become the strings kube stores
/// them as (`"1"`, `"500m"`), wherever the kind holds quantities.
pub fn normalize_quantities(group: &str, kind: &str, object: &mut Value) {
    let mut maps: Vec<String> = Vec::new();
    let mut singles: Vec<String> = Vec::new();
    let pod_specs: &[&str] = match (group, kind) {
        ("", "Pod") => &["/spec"],
        ("", "PodTemplate") => &["/template/spec"],
        ("", "ReplicationController") | ("apps", _) | ("batch", "Job") => &["/spec/template/spec"],
        ("batch", "CronJob") => &["/spec/jobTemplate/spec/template/spec"],
        _ => &[],
    };
    for spec in pod_specs {
        maps.push(format!("{spec}/overhead"));
        maps.push(format!("{spec}/resources/limits"));
        maps.push(format!("{spec}/resources/requests"));
        for list in ["containers", "initContainers"] {
            let count = object.pointer(&format!("{spec}/{list}")).and_then(Value::as_array).map_or(0, Vec::len);
            for i in 0..count {
                maps.push(format!("{spec}/{list}/{i}/resources/limits"));
                maps.push(format!("{spec}/{list}/{i}/resources/requests"));
            }
        }
        let volumes = object.pointer(&format!("{spec}/volumes")).and_then(Value::as_array).map_or(0, Vec::len);
        for i in 0..volumes {
            singles.push(format!("{spec}/volumes/{i}/emptyDir/sizeLimit"));
        }
    }
    match (group, kind) {
        ("", "ResourceQuota") => maps.extend(["/spec/hard", "/status/hard", "/status/used"].map(String::from)),
        ("", "PersistentVolumeClaim") => {
            maps.extend(["/spec/resources/requests", "/spec/resources/limits", "/status/capacity"].map(String::from))
        }
        ("", "LimitRange") => {
            let count = object.pointer("/spec/limits").and_then(Value::as_array).map_or(0, Vec::len);
            for i in 0..count {
                for field in ["max", "min", "default", "defaultRequest", "maxLimitRequestRatio"] {
                    maps.push(format!("/spec/limits/{i}/{field}"));
                }
            }
        }
        ("apps", "StatefulSet") => {
            let count = object.pointer("/spec/volumeClaimTemplates").and_then(Value::as_array).map_or(0, Vec::len);
            for i in 0..count {
                maps.push(format!("/spec/volumeClaimTemplates/{i}/spec/resources/requests"));
                maps.push(format!("/spec/volumeClaimTemplates/{i}/spec/resources/limits"));
            }
        }
        ("autoscaling", "HorizontalPodAutoscaler") => {
            let count = object.pointer("/spec/metrics").and_then(Value::as_array).map_or(0, Vec::len);
            for i in 0..count {
                for source in ["resource", "pods", "object", "external", "containerResource"] {
                    for field in ["value", "averageValue"] {
                        singles.push(format!("/spec/metrics/{i}/{source}/target/{field}"));
                    }
                }
            }
        }
        _ => {}
    }
    for pointer in maps {
        if let Some(map) = object.pointer_mut(&pointer).and_then(Value::as_object_mut) {
            map.values_mut().for_each(quantity_text);
        }
    }
    for pointer in singles {
        if let Some(value) = object.pointer_mut(&pointer) {
            quantity_text(value);
        }
    }
}

/// A number as kube's canonical quantity text: whole numbers as they are, fractions in
/// milli-units (`0.5` → `500m`).
fn quantity_text(value: &mut Value) {
    let Value::Number(number) = value else { return };
    let text = match (number.as_i64(), number.as_f64()) {
        (Some(whole), _) => whole.to_string(),
        (None, Some(real)) if real.fract() == 0.0 => format!("{real:.0}"),
        (None, Some(real)) => format!("{}m", (real * 1000.0).round() as i64),
        _ => number.to_string(),
    };
    *value = Value::from(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaulted(group: &str, kind: &str, object: Value) -> Value {
        let mut object = object;
        apply(group, kind, &mut object);
        object
    }

    #[test]
    fn deployment_gets_kubes_defaults() {
        let deployment = defaulted(
            "apps",
            "Deployment",
            json!({"spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}}),
        );
        let spec = &deployment["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(spec["revisionHistoryLimit"], 10);
        assert_eq!(spec["progressDeadlineSeconds"], 600);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["terminationGracePeriodSeconds"], 30);
        assert_eq!(pod["schedulerName"], "default-scheduler");
        assert_eq!(pod["securityContext"], json!({}));
        let container = &pod["containers"][0];
        assert_eq!(container["imagePullPolicy"], "IfNotPresent");
        assert_eq!(container["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(container["terminationMessagePolicy"], "File");
        assert_eq!(container["ports"][0]["protocol"], "TCP");
        assert!(pod.get("enableServiceLinks").is_none(), "only pods get enableServiceLinks");
    }

    #[test]
    fn given_values_are_kept() {
        let deployment = defaulted(
            "apps",
            "Deployment",
            json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}, "template": {"spec": {"restartPolicy": "Always"}}}}),
        );
        assert_eq!(deployment["spec"]["replicas"], 0);
        assert_eq!(deployment["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        let cases = [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("registry:5000/nginx", "Always"),
            ("registry:5000/nginx:1.0", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
        ];
        for (image, policy) in cases {
            assert_eq!(image_pull_policy(image), policy, "{image}");
        }
    }

    #[test]
    fn services_default_by_type() {
        let service = defaulted("", "Service", json!({"spec": {"ports": [{"port": 80}]}}));
        assert_eq!(service["spec"]["type"], "ClusterIP");
        assert_eq!(service["spec"]["sessionAffinity"], "None");
        assert_eq!(service["spec"]["internalTrafficPolicy"], "Cluster");
        assert!(service["spec"].get("externalTrafficPolicy").is_none());
        assert_eq!(service["spec"]["ports"][0], json!({"port": 80, "protocol": "TCP", "targetPort": 80}));
        let balancer = defaulted(
            "",
            "Service",
            json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 443, "targetPort": "https"}]}}),
        );
        assert_eq!(balancer["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(balancer["spec"]["allocateLoadBalancerNodePorts"], true);
        assert_eq!(balancer["spec"]["ports"][0]["targetPort"], "https");
    }

    #[test]
    fn jobs_pods_and_others() {
        let job = defaulted("batch", "Job", json!({"spec": {"template": {"spec": {"restartPolicy": "Never"}}}}));
        assert_eq!(job["spec"]["completions"], 1);
        assert_eq!(job["spec"]["parallelism"], 1);
        assert_eq!(job["spec"]["backoffLimit"], 6);
        assert_eq!(job["spec"]["completionMode"], "NonIndexed");
        assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
        let queue = defaulted("batch", "Job", json!({"spec": {"parallelism": 3}}));
        assert!(queue["spec"].get("completions").is_none(), "a work queue has no completion count");
        let pod = defaulted(
            "",
            "Pod",
            json!({"spec": {"containers": [{"name": "a", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}]}}),
        );
        assert_eq!(pod["spec"]["enableServiceLinks"], true);
        assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(pod["spec"]["containers"][0]["resources"]["requests"], json!({"cpu": "1"}));
        let rc = defaulted(
            "",
            "ReplicationController",
            json!({"spec": {"template": {"metadata": {"labels": {"app": "x"}}}}}),
        );
        assert_eq!(rc["spec"]["selector"], json!({"app": "x"}));
        assert_eq!(rc["metadata"]["labels"], json!({"app": "x"}));
        let policy =
            defaulted("networking.k8s.io", "NetworkPolicy", json!({"spec": {"egress": [{"ports": [{"port": 53}]}]}}));
        assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(policy["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        let limits =
            defaulted("", "LimitRange", json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}]}}));
        assert_eq!(limits["spec"]["limits"][0]["default"], json!({"cpu": "2"}));
        assert_eq!(limits["spec"]["limits"][0]["defaultRequest"], json!({"cpu": "2"}));
        let mut quantities = json!({"spec": {"containers": [{"resources": {"limits": {"cpu": 0.5, "memory": 128}}}]}});
        normalize_quantities("", "Pod", &mut quantities);
        assert_eq!(quantities["spec"]["containers"][0]["resources"]["limits"], json!({"cpu": "500m", "memory": "128"}));
        let hpa = defaulted("autoscaling", "HorizontalPodAutoscaler", json!({"spec": {"maxReplicas": 3}}));
        assert_eq!(hpa["spec"]["minReplicas"], 1);
        assert_eq!(hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 80);
        let statefulset = defaulted("apps", "StatefulSet", json!({"spec": {}}));
        assert_eq!(
            statefulset["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(statefulset["spec"]["podManagementPolicy"], "OrderedReady");
    }
}
