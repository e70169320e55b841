//! The validation kube-apiserver applies to workload objects beyond their schema: required
//! fields, pod templates a controller could run, selectors that select their template,
//! fields that never change. Pure: (field, message) causes for a 422, worded as kube's.

use protocol::names;
use protocol::selector::LabelSelector;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// Validation causes.
pub type Causes = Vec<(String, String)>;

fn text<'v>(object: &'v Value, pointer: &str) -> &'v str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn required(causes: &mut Causes, object: &Value, pointer: &str) {
    let present = match object.pointer(pointer) {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(items)) => !items.is_empty(),
        Some(_) => true,
    };
    if !present {
        causes.push((field(pointer), "Required value".into()));
    }
}

/// `/spec/template/spec` → `spec.template.spec`.
fn field(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

fn unsupported(value: &str, supported: &[&str]) -> String {
    let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    format!("Unsupported value: {value:?}: supported values: {}", supported.join(", "))
}

fn non_negative(causes: &mut Causes, object: &Value, pointer: &str) {
    if let Some(n) = object.pointer(pointer).and_then(Value::as_i64).filter(|n| *n < 0) {
        causes.push((field(pointer), format!("Invalid value: {n}: must be greater than or equal to 0")));
    }
}

/// The causes `object` of `group`/`kind` violates; `old` is the stored object of an update.
pub fn validate(group: &str, kind: &str, old: Option<&Value>, object: &Value) -> Causes {
    let mut causes = Vec::new();
    match (group, kind) {
        ("", "Pod") => pod_spec(&mut causes, object, "/spec", &["Always", "OnFailure", "Never"]),
        ("", "PodTemplate") => pod_spec(&mut causes, object, "/template/spec", &["Always", "OnFailure", "Never"]),
        ("", "ReplicationController") => {
            non_negative(&mut causes, object, "/spec/replicas");
            pod_spec(&mut causes, object, "/spec/template/spec", &["Always"]);
            let selector: BTreeMap<String, String> = string_map(object.pointer("/spec/selector"));
            if selector.is_empty() {
                causes.push(("spec.selector".into(), "Required value".into()));
            } else if !selector
                .iter()
                .all(|(k, v)| string_map(object.pointer("/spec/template/metadata/labels")).get(k) == Some(v))
            {
                causes.push(template_mismatch(object));
            }
        }
        ("", "Service") => service(&mut causes, object),
        ("", "PersistentVolumeClaim") => {
            required(&mut causes, object, "/spec/accessModes");
            required(&mut causes, object, "/spec/resources/requests/storage");
        }
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") => {
            non_negative(&mut causes, object, "/spec/replicas");
            selected_template(&mut causes, object);
            pod_spec(&mut causes, object, "/spec/template/spec", &["Always"]);
            immutable(&mut causes, old, object, "/spec/selector");
            if kind == "Deployment" {
                let strategy = text(object, "/spec/strategy/type");
                if !matches!(strategy, "RollingUpdate" | "Recreate") {
                    causes.push(("spec.strategy.type".into(), unsupported(strategy, &["Recreate", "RollingUpdate"])));
                }
            }
        }
        ("apps", "ControllerRevision") => non_negative(&mut causes, object, "/revision"),
        ("batch", "Job") => {
            for counted in ["/spec/parallelism", "/spec/completions", "/spec/backoffLimit"] {
                non_negative(&mut causes, object, counted);
            }
            pod_spec(&mut causes, object, "/spec/template/spec", &["OnFailure", "Never"]);
            if object.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
                selected_template(&mut causes, object);
            }
            immutable(&mut causes, old, object, "/spec/selector");
            immutable(&mut causes, old, object, "/spec/completionMode");
        }
        ("batch", "CronJob") => {
            let schedule = text(object, "/spec/schedule");
            if schedule.is_empty() {
                causes.push(("spec.schedule".into(), "Required value".into()));
            } else if !valid_schedule(schedule) {
                causes.push((
                    "spec.schedule".into(),
                    format!(
                        "Invalid value: {schedule:?}: expected exactly 5 fields, found {}",
                        schedule.split_whitespace().count()
                    ),
                ));
            }
            let policy = text(object, "/spec/concurrencyPolicy");
            if !matches!(policy, "Allow" | "Forbid" | "Replace") {
                causes.push(("spec.concurrencyPolicy".into(), unsupported(policy, &["Allow", "Forbid", "Replace"])));
            }
            pod_spec(&mut causes, object, "/spec/jobTemplate/spec/template/spec", &["OnFailure", "Never"]);
        }
        ("networking.k8s.io", "Ingress") => {
            let rules = object.pointer("/spec/rules").and_then(Value::as_array).cloned().unwrap_or_default();
            if rules.is_empty() && object.pointer("/spec/defaultBackend").is_none() {
                causes.push((
                    "spec".into(),
                    "Invalid value: \"\": either `defaultBackend` or `rules` must be specified".into(),
                ));
            }
            for (i, rule) in rules.iter().enumerate() {
                let paths = rule.pointer("/http/paths").and_then(Value::as_array).cloned().unwrap_or_default();
                for (j, path) in paths.iter().enumerate() {
                    let at = format!("spec.rules[{i}].http.paths[{j}]");
                    let kind = text(path, "/pathType");
                    if kind.is_empty() {
                        causes.push((format!("{at}.pathType"), "Required value: pathType must be specified".into()));
                    } else if !matches!(kind, "Exact" | "Prefix" | "ImplementationSpecific") {
                        causes.push((
                            format!("{at}.pathType"),
                            unsupported(kind, &["Exact", "ImplementationSpecific", "Prefix"]),
                        ));
                    }
                }
            }
        }
        ("networking.k8s.io", "IngressClass") => required(&mut causes, object, "/spec/controller"),
        ("policy", "PodDisruptionBudget")
            if object.pointer("/spec/minAvailable").is_some() && object.pointer("/spec/maxUnavailable").is_some() =>
        {
            causes.push(("spec".into(), "Invalid value: minAvailable and maxUnavailable cannot be both set".into()));
        }
        ("autoscaling", "HorizontalPodAutoscaler") => {
            required(&mut causes, object, "/spec/scaleTargetRef/kind");
            required(&mut causes, object, "/spec/scaleTargetRef/name");
            let min = object.pointer("/spec/minReplicas").and_then(Value::as_i64).unwrap_or(1);
            let max = object.pointer("/spec/maxReplicas").and_then(Value::as_i64).unwrap_or(0);
            if min < 1 {
                causes.push((
                    "spec.minReplicas".into(),
                    format!("Invalid value: {min}: must be greater than or equal to 1"),
                ));
            }
            if max < min {
                causes.push((
                    "spec.maxReplicas".into(),
                    format!("Invalid value: {max}: must be greater than or equal to `minReplicas`"),
                ));
            }
        }
        ("discovery.k8s.io", "EndpointSlice") => {
            let kind = text(object, "/addressType");
            if !matches!(kind, "IPv4" | "IPv6" | "FQDN") {
                causes.push(("addressType".into(), unsupported(kind, &["FQDN", "IPv4", "IPv6"])));
            }
            immutable(&mut causes, old, object, "/addressType");
        }
        _ => {}
    }
    causes
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|map| map.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
        .unwrap_or_default()
}

fn template_mismatch(object: &Value) -> (String, String) {
    let labels = string_map(object.pointer("/spec/template/metadata/labels"));
    let shown: Vec<String> = labels.iter().map(|(k, v)| format!("{k:?}:{v:?}")).collect();
    (
        "spec.template.metadata.labels".into(),
        format!(
            "Invalid value: map[string]string{{{}}}: `selector` does not match template `labels`",
            shown.join(", ")
        ),
    )
}

/// A controller's `spec.selector` is required, not empty, and selects its template.
fn selected_template(causes: &mut Causes, object: &Value) {
    let Some(selector) = object.pointer("/spec/selector").filter(|s| !s.is_null()) else {
        causes.push(("spec.selector".into(), "Required value".into()));
        return;
    };
    match LabelSelector::from_label_selector_json(selector) {
        Err(e) => causes.push(("spec.selector".into(), format!("Invalid value: {e}"))),
        Ok(parsed) if parsed.is_empty() => {
            causes.push(("spec.selector".into(), "Invalid value: \"\": empty selector is invalid".into()));
        }
        Ok(parsed) => {
            if !parsed.matches(&string_map(object.pointer("/spec/template/metadata/labels"))) {
                causes.push(template_mismatch(object));
            }
        }
    }
}

fn immutable(causes: &mut Causes, old: Option<&Value>, object: &Value, pointer: &str) {
    if let Some(old) = old {
        if old.pointer(pointer) != object.pointer(pointer) {
            causes.push((field(pointer), "Invalid value: field is immutable".into()));
        }
    }
}

/// A pod spec a kubelet could run: containers with DNS-label names, unique, and images; a
/// restart policy the owning kind allows.
fn pod_spec(causes: &mut Causes, object: &Value, pointer: &str, restart_policies: &[&str]) {
    let Some(spec) = object.pointer(pointer) else {
        causes.push((format!("{}.containers", field(pointer)), "Required value".into()));
        return;
    };
    let at = field(pointer);
    let containers = spec.get("containers").and_then(Value::as_array).cloned().unwrap_or_default();
    if containers.is_empty() {
        causes.push((format!("{at}.containers"), "Required value".into()));
    }
    let mut seen = HashSet::new();
    for list in ["initContainers", "containers"] {
        for (i, container) in spec.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
            let name = text(container, "/name");
            let here = format!("{at}.{list}[{i}]");
            if name.is_empty() {
                causes.push((format!("{here}.name"), "Required value".into()));
            } else {
                for message in names::dns1123_label(name) {
                    causes.push((format!("{here}.name"), format!("Invalid value: {name:?}: {message}")));
                }
                if !seen.insert(name.to_string()) {
                    causes.push((format!("{here}.name"), format!("Duplicate value: {name:?}")));
                }
            }
            if text(container, "/image").trim().is_empty() {
                causes.push((format!("{here}.image"), "Required value".into()));
            }
            for (j, port) in container.get("ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
                let number = port.get("containerPort").and_then(Value::as_i64).unwrap_or(0);
                if !(1..=65535).contains(&number) {
                    causes.push((
                        format!("{here}.ports[{j}].containerPort"),
                        format!("Invalid value: {number}: must be between 1 and 65535, inclusive"),
                    ));
                }
            }
        }
    }
    let policy = text(spec, "/restartPolicy");
    if !restart_policies.contains(&policy) {
        causes.push((format!("{at}.restartPolicy"), unsupported(policy, restart_policies)));
    }
}

/// A Service: a known type, ports (unless headless or ExternalName) in range, named when
/// there are several, each name once.
fn service(causes: &mut Causes, object: &Value) {
    let kind = text(object, "/spec/type");
    let types = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
    if !types.contains(&kind) {
        causes.push(("spec.type".into(), unsupported(kind, &types)));
    }
    let ports = object.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default();
    let headless = text(object, "/spec/clusterIP") == "None";
    if kind == "ExternalName" {
        if text(object, "/spec/externalName").is_empty() {
            causes.push(("spec.externalName".into(), "Required value".into()));
        }
    } else if ports.is_empty() && !headless {
        causes.push(("spec.ports".into(), "Required value".into()));
    }
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=65535).contains(&number) {
            causes.push((
                format!("spec.ports[{i}].port"),
                format!("Invalid value: {number}: must be between 1 and 65535, inclusive"),
            ));
        }
        let name = text(port, "/name");
        if ports.len() > 1 && name.is_empty() {
            causes.push((format!("spec.ports[{i}].name"), "Required value".into()));
        }
        if !name.is_empty() && !names.insert(name.to_string()) {
            causes.push((format!("spec.ports[{i}].name"), format!("Duplicate value: {name:?}")));
        }
        let protocol = text(port, "/protocol");
        if !matches!(protocol, "TCP" | "UDP" | "SCTP") {
            causes.push((format!("spec.ports[{i}].protocol"), unsupported(protocol, &["SCTP", "TCP", "UDP"])));
        }
    }
}

/// A cron schedule of five fields, or one of the `@` macros cron understands.
fn valid_schedule(schedule: &str) -> bool {
    let schedule =
        schedule.strip_prefix("CRON_TZ=").map_or(schedule, |rest| rest.split_once(' ').map_or("", |(_, s)| s));
    let schedule = schedule.strip_prefix("TZ=").map_or(schedule, |rest| rest.split_once(' ').map_or("", |(_, s)| s));
    if schedule.starts_with('@') {
        return matches!(
            schedule,
            "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly"
        ) || schedule.starts_with("@every ");
    }
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    fields.len() == 5 && fields.iter().all(|f| f.chars().all(|c| c.is_ascii_alphanumeric() || ",-*/?".contains(c)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Value {
        json!({"spec": {"replicas": 1, "strategy": {"type": "RollingUpdate"},
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"restartPolicy": "Always", "containers": [{"name": "web", "image": "nginx"}]}}}})
    }

    fn fields(causes: &Causes) -> Vec<&str> {
        causes.iter().map(|(field, _)| field.as_str()).collect()
    }

    #[test]
    fn a_valid_deployment_passes_and_broken_ones_say_where() {
        assert!(validate("apps", "Deployment", None, &deployment()).is_empty());
        let mut broken = deployment();
        broken["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
        broken["spec"]["replicas"] = json!(-1);
        broken["spec"]["template"]["spec"]["containers"] = json!([{"name": "Web_1"}, {"name": "Web_1", "image": "x"}]);
        broken["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        let causes = validate("apps", "Deployment", None, &broken);
        assert_eq!(
            fields(&causes),
            [
                "spec.replicas",
                "spec.template.metadata.labels",
                "spec.template.spec.containers[0].name",
                "spec.template.spec.containers[0].image",
                "spec.template.spec.containers[1].name",
                "spec.template.spec.containers[1].name",
                "spec.template.spec.restartPolicy",
            ],
            "{causes:?}"
        );
        assert!(causes[1].1.contains("`selector` does not match template `labels`"));
        assert_eq!(causes[6].1, r#"Unsupported value: "Never": supported values: "Always""#);
        let mut moved = deployment();
        moved["spec"]["selector"] = json!({"matchLabels": {"app": "new"}});
        moved["spec"]["template"]["metadata"]["labels"] = json!({"app": "new"});
        let causes = validate("apps", "Deployment", Some(&deployment()), &moved);
        assert_eq!(fields(&causes), ["spec.selector"]);
    }

    #[test]
    fn services_jobs_and_cronjobs() {
        let service = json!({"spec": {"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP"}, {"port": 0, "protocol": "TCP"}]}});
        let causes = validate("", "Service", None, &service);
        assert_eq!(fields(&causes), ["spec.ports[0].name", "spec.ports[1].port", "spec.ports[1].name"]);
        let headless = json!({"spec": {"type": "ClusterIP", "clusterIP": "None"}});
        assert!(validate("", "Service", None, &headless).is_empty());
        let job = json!({"spec": {"template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "a", "image": "b"}]}}}});
        let causes = validate("batch", "Job", None, &job);
        assert_eq!(
            causes,
            [(
                "spec.template.spec.restartPolicy".to_string(),
                r#"Unsupported value: "Always": supported values: "OnFailure", "Never""#.to_string()
            )]
        );
        let cron = json!({"spec": {"schedule": "*/5 * * *", "concurrencyPolicy": "Allow",
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "a", "image": "b"}]}}}}}});
        assert_eq!(fields(&validate("batch", "CronJob", None, &cron)), ["spec.schedule"]);
        assert!(valid_schedule("*/5 * * * *") && valid_schedule("@hourly") && valid_schedule("0 3 * * MON-FRI"));
    }
}
