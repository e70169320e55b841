//! The printer cells of the workload kinds that no JSON pointer expresses, computed as
//! kube-apiserver's table printers compute them (`kubectl get` shows what it would
//! against a kube cluster). Pure functions of the object and the request's time.

use apiserver::registry::{Cell, Computed};
use apiserver::table::human_duration;
use jiff::Timestamp;
use protocol::selector::LabelSelector;
use serde_json::Value;

/// How a computed cell is made: from the object and the request's time.
pub type CellFn = fn(&Value, Timestamp) -> Value;

/// kube's placeholder for an empty cell.
const NONE: &str = "<none>";

fn text<'v>(object: &'v Value, pointer: &str) -> &'v str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn int(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn items<'v>(object: &'v Value, pointer: &str) -> &'v [Value] {
    object.pointer(pointer).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn or_none(joined: String) -> Value {
    Value::from(if joined.is_empty() { NONE.to_string() } else { joined })
}

/// A cell computed by `f`, named for equality and debugging.
pub fn computed(name: &'static str, f: CellFn) -> Cell {
    Cell::Computed(Computed(name, f))
}

/// One field of every container in the list at `pointer`, comma separated; `<none>`
/// without containers.
fn container_fields(object: &Value, pointer: &str, field: &str) -> Value {
    or_none(items(object, pointer).iter().map(|c| text(c, field)).collect::<Vec<_>>().join(","))
}

/// `ready/desired` of a controller's replicas (Deployment and StatefulSet `READY`).
pub fn ready_of_replicas(object: &Value, _: Timestamp) -> Value {
    Value::from(format!("{}/{}", int(object, "/status/readyReplicas"), int(object, "/spec/replicas")))
}

/// Names of the pod template's containers (`CONTAINERS`, wide).
pub fn template_containers(object: &Value, _: Timestamp) -> Value {
    container_fields(object, "/spec/template/spec/containers", "/name")
}

/// Images of the pod template's containers (`IMAGES`, wide).
pub fn template_images(object: &Value, _: Timestamp) -> Value {
    container_fields(object, "/spec/template/spec/containers", "/image")
}

/// Names of the containers of a CronJob's job template.
pub fn cron_containers(object: &Value, _: Timestamp) -> Value {
    container_fields(object, "/spec/jobTemplate/spec/template/spec/containers", "/name")
}

/// Images of the containers of a CronJob's job template.
pub fn cron_images(object: &Value, _: Timestamp) -> Value {
    container_fields(object, "/spec/jobTemplate/spec/template/spec/containers", "/image")
}

/// A LabelSelector object at `pointer`, rendered as kube does; `<none>` when empty.
fn selector_at(object: &Value, pointer: &str) -> Value {
    match object.pointer(pointer) {
        Some(selector @ Value::Object(_)) => match LabelSelector::from_label_selector_json(selector) {
            Ok(parsed) if !parsed.is_empty() => Value::from(parsed.to_string()),
            _ => Value::from(NONE),
        },
        _ => Value::from(NONE),
    }
}

/// `spec.selector` as a LabelSelector (`SELECTOR`, wide).
pub fn spec_selector(object: &Value, _: Timestamp) -> Value {
    selector_at(object, "/spec/selector")
}

/// A map selector (`spec.selector` of Services and ReplicationControllers): `k=v,…`.
pub fn map_selector(object: &Value, _: Timestamp) -> Value {
    let pairs = object.pointer("/spec/selector").and_then(Value::as_object);
    let mut pairs: Vec<String> = pairs
        .map(|map| map.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect())
        .unwrap_or_default();
    pairs.sort();
    or_none(pairs.join(","))
}

/// A NetworkPolicy's `POD-SELECTOR`.
pub fn pod_selector(object: &Value, _: Timestamp) -> Value {
    selector_at(object, "/spec/podSelector")
}

/// A Pod's `READY`: ready containers of all containers.
pub fn pod_ready(object: &Value, _: Timestamp) -> Value {
    let total = items(object, "/spec/containers").len();
    let ready = items(object, "/status/containerStatuses")
        .iter()
        .filter(|status| status.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    Value::from(format!("{ready}/{total}"))
}

/// A Pod's `STATUS`: a terminating pod says so, else the status reason or phase.
pub fn pod_status(object: &Value, _: Timestamp) -> Value {
    if object.pointer("/metadata/deletionTimestamp").is_some() {
        return Value::from("Terminating");
    }
    let waiting = items(object, "/status/containerStatuses")
        .iter()
        .find_map(|status| status.pointer("/state/waiting/reason").and_then(Value::as_str));
    let reason = [text(object, "/status/reason"), waiting.unwrap_or_default(), text(object, "/status/phase")]
        .into_iter()
        .find(|s| !s.is_empty())
        .unwrap_or("Pending");
    Value::from(reason)
}

/// A Pod's `RESTARTS`: restarts of all its containers.
pub fn pod_restarts(object: &Value, _: Timestamp) -> Value {
    let restarts: i64 = items(object, "/status/containerStatuses").iter().map(|s| int(s, "/restartCount")).sum();
    Value::from(restarts)
}

/// A text at `pointer`, or `<none>`.
fn text_or_none(object: &Value, pointer: &str) -> Value {
    or_none(text(object, pointer).to_string())
}

/// A Pod's `IP` (wide).
pub fn pod_ip(object: &Value, _: Timestamp) -> Value {
    text_or_none(object, "/status/podIP")
}

/// A Pod's `NODE` (wide).
pub fn pod_node(object: &Value, _: Timestamp) -> Value {
    text_or_none(object, "/spec/nodeName")
}

/// A Pod's `NOMINATED NODE` (wide).
pub fn pod_nominated_node(object: &Value, _: Timestamp) -> Value {
    text_or_none(object, "/status/nominatedNodeName")
}

/// A Pod's `READINESS GATES` (wide): true gates of all gates.
pub fn pod_readiness_gates(object: &Value, _: Timestamp) -> Value {
    let gates = items(object, "/spec/readinessGates");
    if gates.is_empty() {
        return Value::from(NONE);
    }
    let conditions = items(object, "/status/conditions");
    let ready = gates
        .iter()
        .filter(|gate| {
            let wanted = text(gate, "/conditionType");
            conditions.iter().any(|c| text(c, "/type") == wanted && text(c, "/status") == "True")
        })
        .count();
    Value::from(format!("{ready}/{}", gates.len()))
}

/// A Service's `CLUSTER-IP`.
pub fn service_cluster_ip(object: &Value, _: Timestamp) -> Value {
    text_or_none(object, "/spec/clusterIP")
}

/// A Service's `EXTERNAL-IP`, as kube prints it per type.
pub fn service_external_ip(object: &Value, _: Timestamp) -> Value {
    let external: Vec<&str> = items(object, "/spec/externalIPs").iter().filter_map(Value::as_str).collect();
    let ingress: Vec<&str> = items(object, "/status/loadBalancer/ingress")
        .iter()
        .filter_map(|i| i.get("ip").or_else(|| i.get("hostname")).and_then(Value::as_str))
        .collect();
    let shown = match text(object, "/spec/type") {
        "ExternalName" => text(object, "/spec/externalName").to_string(),
        "LoadBalancer" => {
            let all: Vec<&str> = ingress.iter().chain(external.iter()).copied().collect();
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        _ => external.join(","),
    };
    or_none(shown)
}

/// A Service's `PORT(S)`: `port[:nodePort]/protocol`, comma separated.
pub fn service_ports(object: &Value, _: Timestamp) -> Value {
    let ports: Vec<String> = items(object, "/spec/ports")
        .iter()
        .map(|port| {
            let protocol = Some(text(port, "/protocol")).filter(|p| !p.is_empty()).unwrap_or("TCP");
            match port.get("nodePort").and_then(Value::as_i64) {
                Some(node_port) => format!("{}:{node_port}/{protocol}", int(port, "/port")),
                None => format!("{}/{protocol}", int(port, "/port")),
            }
        })
        .collect();
    or_none(ports.join(","))
}

/// Endpoints' `ENDPOINTS`: `ip:port` of ready addresses, at most three then `+ N more...`.
pub fn endpoints(object: &Value, _: Timestamp) -> Value {
    let mut shown = Vec::new();
    for subset in items(object, "/subsets") {
        let ports = items(subset, "/ports");
        for address in items(subset, "/addresses") {
            let ip = text(address, "/ip");
            if ports.is_empty() {
                shown.push(ip.to_string());
            }
            for port in ports {
                shown.push(format!("{ip}:{}", int(port, "/port")));
            }
        }
    }
    Value::from(summarize(shown))
}

/// kube's list formatting: up to three entries, then `+ N more...`; `<none>` when empty.
fn summarize(entries: Vec<String>) -> String {
    match entries.len() {
        0 => NONE.to_string(),
        1..=3 => entries.join(","),
        n => format!("{} + {} more...", entries[..3].join(","), n - 3),
    }
}

/// An EndpointSlice's `PORTS`.
pub fn slice_ports(object: &Value, _: Timestamp) -> Value {
    let ports: Vec<String> = items(object, "/ports").iter().map(|p| int(p, "/port").to_string()).collect();
    Value::from(if ports.is_empty() { "<unset>".to_string() } else { summarize(ports) })
}

/// An EndpointSlice's `ENDPOINTS`.
pub fn slice_endpoints(object: &Value, _: Timestamp) -> Value {
    let addresses: Vec<String> = items(object, "/endpoints")
        .iter()
        .flat_map(|e| items(e, "/addresses").iter().filter_map(Value::as_str).map(str::to_string))
        .collect();
    Value::from(if addresses.is_empty() { "<unset>".to_string() } else { summarize(addresses) })
}

/// A PersistentVolumeClaim's `STATUS`: its phase, Pending until something binds it.
pub fn claim_phase(object: &Value, _: Timestamp) -> Value {
    let phase = text(object, "/status/phase");
    Value::from(if object.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if phase.is_empty() {
        "Pending"
    } else {
        phase
    })
}

/// A PersistentVolumeClaim's `ACCESS MODES`, abbreviated as kube does.
pub fn claim_access_modes(object: &Value, _: Timestamp) -> Value {
    let modes = items(object, "/status/accessModes");
    let modes = if modes.is_empty() { items(object, "/spec/accessModes") } else { modes };
    let short: Vec<&str> = modes
        .iter()
        .filter_map(Value::as_str)
        .map(|mode| match mode {
            "ReadWriteOnce" => "RWO",
            "ReadOnlyMany" => "ROX",
            "ReadWriteMany" => "RWX",
            "ReadWriteOncePod" => "RWOP",
            other => other,
        })
        .collect();
    Value::from(short.join(","))
}

/// A PersistentVolumeClaim's `CAPACITY`.
pub fn claim_capacity(object: &Value, _: Timestamp) -> Value {
    Value::from(text(object, "/status/capacity/storage"))
}

/// `used/hard` of a ResourceQuota's limits (`LIMIT`) or other resources (`REQUEST`).
fn quota(object: &Value, limits: bool) -> Value {
    let hard = object.pointer("/spec/hard").and_then(Value::as_object);
    let mut shown: Vec<String> = hard
        .map(|hard| {
            hard.iter()
                .filter(|(name, _)| name.starts_with("limits.") == limits)
                .map(|(name, value)| {
                    let used = object
                        .pointer(&format!("/status/used/{}", name.replace('~', "~0").replace('/', "~1")))
                        .and_then(Value::as_str)
                        .unwrap_or("0");
                    format!("{name}: {used}/{}", value.as_str().map_or_else(|| value.to_string(), str::to_string))
                })
                .collect()
        })
        .unwrap_or_default();
    shown.sort();
    Value::from(shown.join(", "))
}

/// A ResourceQuota's `REQUEST`.
pub fn quota_requests(object: &Value, _: Timestamp) -> Value {
    quota(object, false)
}

/// A ResourceQuota's `LIMIT`.
pub fn quota_limits(object: &Value, _: Timestamp) -> Value {
    quota(object, true)
}

/// A PodTemplate's `CONTAINERS`.
pub fn pod_template_containers(object: &Value, _: Timestamp) -> Value {
    container_fields(object, "/template/spec/containers", "/name")
}

/// A PodTemplate's `IMAGES`.
pub fn pod_template_images(object: &Value, _: Timestamp) -> Value {
    container_fields(object, "/template/spec/containers", "/image")
}

/// A PodTemplate's `POD LABELS`.
pub fn pod_template_labels(object: &Value, _: Timestamp) -> Value {
    let labels = object.pointer("/template/metadata/labels").and_then(Value::as_object);
    let mut pairs: Vec<String> = labels
        .map(|map| map.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect())
        .unwrap_or_default();
    pairs.sort();
    or_none(pairs.join(","))
}

/// A ControllerRevision's `CONTROLLER`: `<kind>.<group>/<name>` of its controller.
pub fn revision_controller(object: &Value, _: Timestamp) -> Value {
    let owner = items(object, "/metadata/ownerReferences")
        .iter()
        .find(|owner| owner.get("controller").and_then(Value::as_bool) == Some(true));
    let Some(owner) = owner else { return Value::from(NONE) };
    let group = text(owner, "/apiVersion").rsplit_once('/').map_or("", |(group, _)| group);
    let kind = text(owner, "/kind").to_lowercase();
    let name = text(owner, "/name");
    Value::from(if group.is_empty() { format!("{kind}/{name}") } else { format!("{kind}.{group}/{name}") })
}

fn condition_true(object: &Value, kind: &str) -> bool {
    items(object, "/status/conditions").iter().any(|c| text(c, "/type") == kind && text(c, "/status") == "True")
}

/// A Job's `STATUS`, from its conditions (kube 1.28+).
pub fn job_status(object: &Value, _: Timestamp) -> Value {
    let status = ["Complete", "Failed", "FailureTarget", "SuccessCriteriaMet", "Suspended"]
        .into_iter()
        .find(|kind| condition_true(object, kind))
        .map_or("Running", |kind| if kind == "Suspended" { "Suspended" } else { kind });
    Value::from(status)
}

/// A Job's `COMPLETIONS`: `succeeded/completions`, or `succeeded/1 of parallelism` for a
/// work queue without a completion count.
pub fn job_completions(object: &Value, _: Timestamp) -> Value {
    let succeeded = int(object, "/status/succeeded");
    Value::from(match object.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(completions) => format!("{succeeded}/{completions}"),
        None => {
            let parallelism = object.pointer("/spec/parallelism").and_then(Value::as_i64).unwrap_or(1);
            if parallelism > 1 {
                format!("{succeeded}/1 of {parallelism}")
            } else {
                format!("{succeeded}/1")
            }
        }
    })
}

fn stamp(object: &Value, pointer: &str) -> Option<Timestamp> {
    object.pointer(pointer).and_then(Value::as_str).and_then(|s| s.parse().ok())
}

/// A Job's `DURATION`: from start to completion, or to now while it runs.
pub fn job_duration(object: &Value, now: Timestamp) -> Value {
    let Some(start) = stamp(object, "/status/startTime") else { return Value::from("") };
    let end = stamp(object, "/status/completionTime").unwrap_or(now);
    Value::from(human_duration(end.as_second() - start.as_second()))
}

/// A CronJob's `TIMEZONE`.
pub fn cron_time_zone(object: &Value, _: Timestamp) -> Value {
    text_or_none(object, "/spec/timeZone")
}

/// A CronJob's `SUSPEND`.
pub fn cron_suspend(object: &Value, _: Timestamp) -> Value {
    Value::from(object.pointer("/spec/suspend").and_then(Value::as_bool).unwrap_or(false).to_string())
}

/// A CronJob's `ACTIVE`: how many of its jobs run.
pub fn cron_active(object: &Value, _: Timestamp) -> Value {
    Value::from(items(object, "/status/active").len())
}

/// A CronJob's `LAST SCHEDULE`: time since then, `<none>` before the first.
pub fn cron_last_schedule(object: &Value, now: Timestamp) -> Value {
    match stamp(object, "/status/lastScheduleTime") {
        Some(then) => Value::from(human_duration(now.as_second() - then.as_second())),
        None => Value::from(NONE),
    }
}

/// An Ingress's `CLASS`.
pub fn ingress_class(object: &Value, _: Timestamp) -> Value {
    text_or_none(object, "/spec/ingressClassName")
}

/// An Ingress's `HOSTS`: the rules' hosts, `*` for a rule without one.
pub fn ingress_hosts(object: &Value, _: Timestamp) -> Value {
    let hosts: Vec<String> = items(object, "/spec/rules")
        .iter()
        .map(|rule| Some(text(rule, "/host")).filter(|h| !h.is_empty()).unwrap_or("*").to_string())
        .collect();
    Value::from(if hosts.is_empty() { "*".to_string() } else { summarize(hosts) })
}

/// An Ingress's `ADDRESS`.
pub fn ingress_address(object: &Value, _: Timestamp) -> Value {
    let addresses: Vec<&str> = items(object, "/status/loadBalancer/ingress")
        .iter()
        .filter_map(|i| i.get("ip").or_else(|| i.get("hostname")).and_then(Value::as_str))
        .collect();
    Value::from(addresses.join(","))
}

/// An Ingress's `PORTS`: 80, and 443 when it terminates TLS.
pub fn ingress_ports(object: &Value, _: Timestamp) -> Value {
    Value::from(if items(object, "/spec/tls").is_empty() { "80" } else { "80, 443" })
}

/// An IngressClass's `PARAMETERS`: `<kind>.<group>/<name>`.
pub fn ingress_class_parameters(object: &Value, _: Timestamp) -> Value {
    match object.pointer("/spec/parameters") {
        Some(parameters) => {
            let group = text(parameters, "/apiGroup");
            let kind = text(parameters, "/kind");
            let name = text(parameters, "/name");
            Value::from(if group.is_empty() { format!("{kind}/{name}") } else { format!("{kind}.{group}/{name}") })
        }
        None => Value::from(NONE),
    }
}

/// A PodDisruptionBudget's `MIN AVAILABLE` or `MAX UNAVAILABLE`: the value or `N/A`.
fn budget(object: &Value, pointer: &str) -> Value {
    match object.pointer(pointer) {
        Some(Value::String(text)) => Value::from(text.clone()),
        Some(Value::Number(n)) => Value::from(n.to_string()),
        _ => Value::from("N/A"),
    }
}

/// A PodDisruptionBudget's `MIN AVAILABLE`.
pub fn pdb_min_available(object: &Value, _: Timestamp) -> Value {
    budget(object, "/spec/minAvailable")
}

/// A PodDisruptionBudget's `MAX UNAVAILABLE`.
pub fn pdb_max_unavailable(object: &Value, _: Timestamp) -> Value {
    budget(object, "/spec/maxUnavailable")
}

/// A HorizontalPodAutoscaler's `REFERENCE`: `<kind>/<name>` of its target.
pub fn hpa_reference(object: &Value, _: Timestamp) -> Value {
    Value::from(format!("{}/{}", text(object, "/spec/scaleTargetRef/kind"), text(object, "/spec/scaleTargetRef/name")))
}

/// A HorizontalPodAutoscaler's `TARGETS` (autoscaling/v2 shape): current/target of each
/// resource metric, `<unknown>` until something measures it.
pub fn hpa_targets(object: &Value, _: Timestamp) -> Value {
    let metrics = items(object, "/spec/metrics");
    let current = items(object, "/status/currentMetrics");
    let shown: Vec<String> = metrics
        .iter()
        .map(|metric| {
            let name = text(metric, "/resource/name");
            let target = match metric.pointer("/resource/target/averageUtilization").and_then(Value::as_i64) {
                Some(percent) => format!("{percent}%"),
                None => text(metric, "/resource/target/averageValue").to_string(),
            };
            let measured = current
                .iter()
                .find(|m| text(m, "/resource/name") == name)
                .and_then(|m| m.pointer("/resource/current/averageUtilization").and_then(Value::as_i64))
                .map_or_else(|| "<unknown>".to_string(), |p| format!("{p}%"));
            if name.is_empty() {
                format!("{measured}/{target}")
            } else {
                format!("{name}: {measured}/{target}")
            }
        })
        .collect();
    Value::from(if shown.is_empty() { "<none>".to_string() } else { shown.join(", ") })
}

/// A HorizontalPodAutoscaler's `MINPODS` (1 when unset, as kube defaults it).
pub fn hpa_min_pods(object: &Value, _: Timestamp) -> Value {
    Value::from(object.pointer("/spec/minReplicas").and_then(Value::as_i64).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-01T00:10:00Z".parse().unwrap()
    }

    #[test]
    fn cells_read_as_kube_prints_them() {
        let deployment = json!({
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}, {"name": "side", "image": "busybox"}]}}},
            "status": {"readyReplicas": 2}
        });
        let cases: Vec<(CellFn, &Value, Value)> = vec![
            (ready_of_replicas, &deployment, json!("2/3")),
            (template_containers, &deployment, json!("nginx,side")),
            (template_images, &deployment, json!("nginx:1.27,busybox")),
            (spec_selector, &deployment, json!("app=web")),
        ];
        for (cell, object, expected) in cases {
            assert_eq!(cell(object, now()), expected);
        }
        let service = json!({"spec": {"type": "NodePort", "selector": {"b": "2", "a": "1"},
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}});
        assert_eq!(service_ports(&service, now()), json!("80:30080/TCP,53/UDP"));
        assert_eq!(map_selector(&service, now()), json!("a=1,b=2"));
        assert_eq!(service_cluster_ip(&service, now()), json!("<none>"));
        assert_eq!(service_external_ip(&service, now()), json!("<none>"));
        let balancer = json!({"spec": {"type": "LoadBalancer"}});
        assert_eq!(service_external_ip(&balancer, now()), json!("<pending>"));
        let pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "containerStatuses": [{"ready": true, "restartCount": 2}, {"ready": false, "restartCount": 1}]}});
        assert_eq!(pod_ready(&pod, now()), json!("1/2"));
        assert_eq!(pod_status(&pod, now()), json!("Running"));
        assert_eq!(pod_restarts(&pod, now()), json!(3));
        assert_eq!(pod_status(&json!({}), now()), json!("Pending"));
        let job = json!({"spec": {"completions": 3}, "status": {"succeeded": 1, "startTime": "2026-01-01T00:00:00Z"}});
        assert_eq!(job_completions(&job, now()), json!("1/3"));
        assert_eq!(job_status(&job, now()), json!("Running"));
        assert_eq!(job_duration(&job, now()), json!("10m"));
        let done = json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(job_status(&done, now()), json!("Complete"));
        let endpoints_object = json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
            "ports": [{"port": 80}, {"port": 443}]}]});
        assert_eq!(endpoints(&endpoints_object, now()), json!("10.0.0.1:80,10.0.0.1:443,10.0.0.2:80 + 1 more..."));
        let claim = json!({"spec": {"accessModes": ["ReadWriteOnce", "ReadOnlyMany"]}});
        assert_eq!(claim_access_modes(&claim, now()), json!("RWO,ROX"));
        assert_eq!(claim_phase(&claim, now()), json!("Pending"));
        let quota_object =
            json!({"spec": {"hard": {"pods": "10", "limits.cpu": "2"}}, "status": {"used": {"pods": "3"}}});
        assert_eq!(quota_requests(&quota_object, now()), json!("pods: 3/10"));
        assert_eq!(quota_limits(&quota_object, now()), json!("limits.cpu: 0/2"));
        let hpa = json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}});
        assert_eq!(hpa_reference(&hpa, now()), json!("Deployment/web"));
        assert_eq!(hpa_targets(&hpa, now()), json!("cpu: <unknown>/80%"));
        assert_eq!(hpa_min_pods(&hpa, now()), json!(1));
        let revision = json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "controller": true}]}});
        assert_eq!(revision_controller(&revision, now()), json!("daemonset.apps/agent"));
        let ingress = json!({"spec": {"rules": [{"host": "a.example"}, {}], "tls": [{}]}});
        assert_eq!(ingress_hosts(&ingress, now()), json!("a.example,*"));
        assert_eq!(ingress_ports(&ingress, now()), json!("80, 443"));
        assert_eq!(pdb_min_available(&json!({"spec": {"minAvailable": "50%"}}), now()), json!("50%"));
        assert_eq!(pdb_max_unavailable(&json!({"spec": {}}), now()), json!("N/A"));
    }
}
