//! The workload kinds kubectl's typed commands send as protobuf: what `kubectl create` posts for
//! a deployment, job, cronjob, service, pdb, ingress or quota, and `kubectl run` and
//! `kubectl autoscale`.
//!
//! Transcribed from Kubernetes v1.33's `generated.proto` files (k8s.io/api v0.33.0: apps/v1,
//! batch/v1, core/v1, policy/v1, networking/v1, autoscaling/v1 and v2) with JSON keys and
//! `omitempty` from the Go `json:` tags. Fields in Go struct order, as elsewhere. Embedded
//! structs (`json:",inline"`) are [`Inline`](super::FieldKind::Inline); quantities are
//! [`Quantity`](super::FieldKind::Quantity) and [`QuantityMap`](super::FieldKind::QuantityMap),
//! with the wire tables for them here. One file per API group, Pods' volumes apart.
//!
//! Left out, so skipped like unknown field numbers: PodSpec's `ephemeralContainers` (written
//! only through their own subresource); the volume sources other than hostPath, emptyDir,
//! secret, nfs, persistentVolumeClaim, downwardAPI, configMap, projected and image (the in-tree
//! cloud and network storage plugins, csi, ephemeral) and the clusterTrustBundle projection;
//! and, of the statuses, which are the server's to write, PodStatus's container statuses and
//! resource claim statuses, a PodDisruptionBudget's `disruptedPods` and an autoscaling/v2
//! HorizontalPodAutoscaler's `currentMetrics`. A client that needs those sends JSON.

mod apps;
mod autoscaling;
mod batch;
mod networking;
mod pod;
mod pod_volumes;
mod policy;
mod service;

use super::FieldKind::{Int64, Quantity, String, Time};
use super::{non_zero, on_wire, Message};
use apps::DEPLOYMENT;
use autoscaling::{HORIZONTAL_POD_AUTOSCALER_V1, HORIZONTAL_POD_AUTOSCALER_V2};
use batch::{CRON_JOB, JOB};
use networking::INGRESS;
use pod::POD;
use policy::POD_DISRUPTION_BUDGET;
use service::{RESOURCE_QUOTA, SERVICE};

// resource.Quantity on the wire (k8s.io/apimachinery/pkg/api/resource/generated.proto), read by
// the decoder for FieldKind::Quantity and QuantityMap.

pub(super) static QUANTITY: Message = Message { name: "Quantity", fields: &[on_wire(1, "string", String)] };

pub(super) static QUANTITY_MAP_ENTRY: Message =
    Message { name: "map entry", fields: &[on_wire(1, "key", String), on_wire(2, "value", Quantity)] };

// meta/v1 Condition (k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto).

static CONDITION: Message = Message {
    name: "Condition",
    fields: &[
        on_wire(1, "type", String),
        on_wire(2, "status", String),
        non_zero(3, "observedGeneration", Int64),
        on_wire(4, "lastTransitionTime", Time),
        on_wire(5, "reason", String),
        on_wire(6, "message", String),
    ],
};

// What a container's env (`valueFrom`) and a downward API volume both read.
static OBJECT_FIELD_SELECTOR: Message = Message {
    name: "ObjectFieldSelector",
    fields: &[non_zero(1, "apiVersion", String), on_wire(2, "fieldPath", String)],
};

static RESOURCE_FIELD_SELECTOR: Message = Message {
    name: "ResourceFieldSelector",
    fields: &[
        non_zero(1, "containerName", String),
        on_wire(2, "resource", String),
        // A value field with omitempty, but Go writes even the zero Quantity, as "0", in both
        // encodings, so it is kept as kube-apiserver would show it.
        non_zero(3, "divisor", Quantity),
    ],
};

/// The workload kinds, for [`super::message_for`].
pub(super) static KINDS: &[(&str, &str, &Message)] = &[
    ("apps/v1", "Deployment", &DEPLOYMENT),
    ("batch/v1", "Job", &JOB),
    ("batch/v1", "CronJob", &CRON_JOB),
    ("v1", "Pod", &POD),
    ("v1", "Service", &SERVICE),
    ("v1", "ResourceQuota", &RESOURCE_QUOTA),
    ("policy/v1", "PodDisruptionBudget", &POD_DISRUPTION_BUDGET),
    ("networking.k8s.io/v1", "Ingress", &INGRESS),
    ("autoscaling/v1", "HorizontalPodAutoscaler", &HORIZONTAL_POD_AUTOSCALER_V1),
    ("autoscaling/v2", "HorizontalPodAutoscaler", &HORIZONTAL_POD_AUTOSCALER_V2),
];

#[cfg(test)]
mod tests {
    use super::{Message, KINDS};
    use crate::protobuf::message_for;
    use crate::protobuf::tests::{decode, fresh_meta, Enc};
    use crate::protobuf::FieldKind;
    use serde_json::json;

    /// `kubectl create deployment web --image=nginx --replicas=2 --port=80`: every value field
    /// written, zero or not, as Go's marshaller does. Compared as text, so key order counts.
    #[test]
    fn kubectl_create_deployment() {
        let port = Enc::new().string(1, "").int32(2, 0).int32(3, 80).string(4, "").string(5, "");
        let container = Enc::new()
            .string(1, "nginx")
            .string(2, "nginx")
            .string(5, "")
            .message(6, port)
            .message(8, Enc::new())
            .string(13, "")
            .string(14, "")
            .bool(16, false)
            .bool(17, false)
            .bool(18, false)
            .string(20, "");
        let pod_spec = Enc::new()
            .message(2, container)
            .string(3, "")
            .string(6, "")
            .string(8, "")
            .string(9, "")
            .string(10, "")
            .bool(11, false)
            .bool(12, false)
            .bool(13, false)
            .string(16, "")
            .string(17, "")
            .string(19, "")
            .string(24, "");
        let template = Enc::new().message(1, fresh_meta("").entry(11, "app", b"web")).message(2, pod_spec);
        let spec = Enc::new()
            .int32(1, 2)
            .message(2, Enc::new().entry(1, "app", b"web"))
            .message(3, template)
            .message(4, Enc::new().string(1, ""))
            .int32(5, 0)
            .bool(7, false);
        let status = Enc::new().int64(1, 0).int32(2, 0).int32(3, 0).int32(4, 0).int32(5, 0).int32(7, 0);
        let object =
            Enc::new().message(1, fresh_meta("web").entry(11, "app", b"web")).message(2, spec).message(3, status);
        let want = json!({
            "kind": "Deployment",
            "apiVersion": "apps/v1",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx", "ports": [{"containerPort": 80}]}]},
                },
            },
        });
        assert_eq!(decode("apps/v1", "Deployment", object).to_string(), want.to_string());
    }

    /// `kubectl create service clusterip web --tcp=80:8080`, plus a second port whose
    /// targetPort names a container port.
    #[test]
    fn kubectl_create_service_int_or_string_target_ports() {
        let numbered = Enc::new()
            .string(1, "80-8080")
            .string(2, "TCP")
            .int32(3, 80)
            .message(4, Enc::new().int64(1, 0).int32(2, 8080).string(3, ""))
            .int32(5, 0);
        let named = Enc::new()
            .string(1, "metrics")
            .string(2, "TCP")
            .string(6, "http")
            .int32(3, 9090)
            .message(4, Enc::new().int64(1, 1).int32(2, 0).string(3, "metrics"))
            .int32(5, 0);
        let spec = Enc::new()
            .message(1, numbered)
            .message(1, named)
            .entry(2, "app", b"web")
            .string(3, "")
            .string(4, "ClusterIP")
            .string(7, "")
            .string(8, "")
            .string(10, "")
            .string(11, "")
            .int32(12, 0)
            .bool(13, false);
        let object = Enc::new()
            .message(1, fresh_meta("web").entry(11, "app", b"web"))
            .message(2, spec)
            .message(3, Enc::new().message(1, Enc::new()));
        assert_eq!(
            decode("v1", "Service", object),
            json!({
                "kind": "Service",
                "apiVersion": "v1",
                "metadata": {"name": "web", "labels": {"app": "web"}},
                "spec": {
                    "ports": [
                        {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
                        {
                            "name": "metrics",
                            "protocol": "TCP",
                            "appProtocol": "http",
                            "port": 9090,
                            "targetPort": "metrics",
                        },
                    ],
                    "selector": {"app": "web"},
                    "type": "ClusterIP",
                },
            })
        );
    }

    /// Embedded structs (`json:",inline"`) join their parent object; quantities become strings.
    #[test]
    fn pod_inlined_sources_probes_and_quantities() {
        let quantity = |value: &str| Enc::new().string(1, value).0;
        let config_map_ref = Enc::new().message(1, Enc::new().string(1, "app")).string(2, "mode").bool(3, true);
        let env = Enc::new().string(1, "MODE").string(2, "").message(3, Enc::new().message(3, config_map_ref));
        let (cpu, memory) = (quantity("500m"), quantity("64Mi"));
        // An empty Quantity message is the zero Quantity.
        let resources = Enc::new().entry(1, "cpu", &cpu).entry(1, "example.com/gpu", b"").entry(2, "memory", &memory);
        let http_get = Enc::new()
            .string(1, "/healthz")
            .message(2, Enc::new().int64(1, 1).int32(2, 0).string(3, "http"))
            .string(3, "")
            .string(4, "HTTP");
        let probe = Enc::new()
            .message(1, Enc::new().message(2, http_get))
            .int32(2, 0)
            .int32(3, 1)
            .int32(4, 10)
            .int32(5, 1)
            .int32(6, 3);
        let mount = Enc::new().string(1, "cfg").bool(2, true).string(3, "/etc/app").string(4, "").string(6, "");
        let container = Enc::new()
            .string(1, "app")
            .string(2, "nginx")
            .message(7, env)
            .message(8, resources)
            .message(9, mount)
            .message(11, probe);
        let config_map_volume = Enc::new().message(1, Enc::new().string(1, "app")).int32(3, 420);
        let empty_dir = Enc::new().string(1, "").message(2, Enc::new().string(1, "1Gi"));
        let spec = Enc::new()
            .message(1, Enc::new().string(1, "cfg").message(2, Enc::new().message(19, config_map_volume)))
            .message(1, Enc::new().string(1, "scratch").message(2, Enc::new().message(2, empty_dir)))
            .message(2, container)
            .string(3, "Never");
        let object = Enc::new().message(1, fresh_meta("app")).message(2, spec).message(3, Enc::new().string(1, ""));
        let want = json!({
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {"name": "app"},
            "spec": {
                "volumes": [
                    {"name": "cfg", "configMap": {"name": "app", "defaultMode": 420}},
                    {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
                ],
                "containers": [{
                    "name": "app",
                    "image": "nginx",
                    "env": [{
                        "name": "MODE",
                        "valueFrom": {"configMapKeyRef": {"name": "app", "key": "mode", "optional": true}},
                    }],
                    "resources": {"limits": {"cpu": "500m", "example.com/gpu": "0"}, "requests": {"memory": "64Mi"}},
                    "volumeMounts": [{"name": "cfg", "readOnly": true, "mountPath": "/etc/app"}],
                    "readinessProbe": {
                        "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                        "timeoutSeconds": 1,
                        "periodSeconds": 10,
                        "successThreshold": 1,
                        "failureThreshold": 3,
                    },
                }],
                "restartPolicy": "Never",
            },
        });
        assert_eq!(decode("v1", "Pod", object).to_string(), want.to_string());
    }

    /// What tables.rs checks of its own kinds, with inlined fields' keys counted in their
    /// parent's: tags and JSON keys unique, maps and inlined structs never repeated, and a
    /// bounded depth (no cycles). Pod templates nest deeper than tables.rs's kinds do.
    #[test]
    fn tables_are_well_formed() {
        fn keys(message: &'static Message) -> Vec<&'static str> {
            let mut found = Vec::new();
            for field in message.fields {
                match field.kind {
                    FieldKind::Inline(inlined) => found.extend(keys(inlined)),
                    _ => found.push(field.json_name),
                }
            }
            found
        }
        fn check(message: &'static Message, depth: usize) {
            assert!(depth < 16, "{} nests too deep (a cycle?)", message.name);
            let json_keys = keys(message);
            for (i, key) in json_keys.iter().enumerate() {
                assert!(!json_keys[i + 1..].contains(key), "{}: duplicate key {key}", message.name);
            }
            for (i, field) in message.fields.iter().enumerate() {
                assert!(field.tag >= 1, "{}.{}", message.name, field.json_name);
                for other in &message.fields[i + 1..] {
                    assert_ne!(field.tag, other.tag, "{}: duplicate tag", message.name);
                }
                let single = matches!(
                    field.kind,
                    FieldKind::StringMap | FieldKind::BytesMap | FieldKind::QuantityMap | FieldKind::Inline(_)
                );
                assert!(!(single && field.repeated), "{}.{}: repeated", message.name, field.json_name);
                if let FieldKind::Message(nested) | FieldKind::Inline(nested) = field.kind {
                    check(nested, depth + 1);
                }
            }
        }
        for (api_version, kind, message) in KINDS {
            assert_eq!(message_for(api_version, kind).map(|m| m.name), Some(message.name), "{api_version} {kind}");
            check(message, 0);
        }
    }
}
