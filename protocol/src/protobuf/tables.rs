//! The schema tables, transcribed from Kubernetes' `generated.proto` files (field numbers checked
//! against the generated k8s-pb 0.9.0 code) with JSON keys from the Go `json:` tags. Kept in their
//! own module because importing `FieldKind::String` shadows `std::string::String`.
//!
//! [`KINDS`] lists its top-level kinds for [`super::message_for`].

use super::FieldKind::{self, Bool, Bytes, BytesMap, Int32, Int64, Json, MicroTime, String, StringMap, Time};
use super::{list, non_zero, on_wire, Field, Message};

// Wrappers of the wire format itself (k8s.io/apimachinery/pkg/runtime and intstr, and the
// protobuf map-entry convention). Their tables name fields for errors and fix wire types.

pub(super) static UNKNOWN: Message = Message {
    name: "Unknown",
    fields: &[
        on_wire(1, "typeMeta", FieldKind::Message(&TYPE_META)),
        on_wire(2, "raw", Bytes),
        on_wire(3, "contentEncoding", String),
        on_wire(4, "contentType", String),
    ],
};

pub(super) static TYPE_META: Message =
    Message { name: "TypeMeta", fields: &[on_wire(1, "apiVersion", String), on_wire(2, "kind", String)] };

pub(super) static TIMESTAMP: Message =
    Message { name: "Timestamp", fields: &[on_wire(1, "seconds", Int64), on_wire(2, "nanos", Int32)] };

pub(super) static INT_OR_STRING: Message = Message {
    name: "IntOrString",
    fields: &[on_wire(1, "type", Int64), on_wire(2, "intVal", Int32), on_wire(3, "strVal", String)],
};

pub(super) static RAW_EXTENSION: Message = Message { name: "RawExtension", fields: &[on_wire(1, "raw", Bytes)] };

pub(super) static STRING_MAP_ENTRY: Message =
    Message { name: "map entry", fields: &[on_wire(1, "key", String), on_wire(2, "value", String)] };

pub(super) static BYTES_MAP_ENTRY: Message =
    Message { name: "map entry", fields: &[on_wire(1, "key", String), on_wire(2, "value", Bytes)] };

// meta/v1 (k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto).

pub(super) static OBJECT_META: Message = Message {
    name: "ObjectMeta",
    fields: &[
        non_zero(1, "name", String),
        non_zero(2, "generateName", String),
        non_zero(3, "namespace", String),
        non_zero(4, "selfLink", String),
        non_zero(5, "uid", String),
        non_zero(6, "resourceVersion", String),
        non_zero(7, "generation", Int64),
        non_zero(8, "creationTimestamp", Time),
        on_wire(9, "deletionTimestamp", Time),
        on_wire(10, "deletionGracePeriodSeconds", Int64),
        on_wire(11, "labels", StringMap),
        on_wire(12, "annotations", StringMap),
        list(13, "ownerReferences", FieldKind::Message(&OWNER_REFERENCE)),
        list(14, "finalizers", String),
        list(17, "managedFields", FieldKind::Message(&MANAGED_FIELDS_ENTRY)),
    ],
};

pub(super) static OWNER_REFERENCE: Message = Message {
    name: "OwnerReference",
    fields: &[
        on_wire(5, "apiVersion", String),
        on_wire(1, "kind", String),
        on_wire(3, "name", String),
        on_wire(4, "uid", String),
        on_wire(6, "controller", Bool),
        on_wire(7, "blockOwnerDeletion", Bool),
    ],
};

pub(super) static MANAGED_FIELDS_ENTRY: Message = Message {
    name: "ManagedFieldsEntry",
    fields: &[
        non_zero(1, "manager", String),
        non_zero(2, "operation", String),
        non_zero(3, "apiVersion", String),
        on_wire(4, "time", Time),
        non_zero(6, "fieldsType", String),
        on_wire(7, "fieldsV1", Json),
        non_zero(8, "subresource", String),
    ],
};

pub(super) static LABEL_SELECTOR: Message = Message {
    name: "LabelSelector",
    fields: &[
        on_wire(1, "matchLabels", StringMap),
        list(2, "matchExpressions", FieldKind::Message(&LABEL_SELECTOR_REQUIREMENT)),
    ],
};

pub(super) static LABEL_SELECTOR_REQUIREMENT: Message = Message {
    name: "LabelSelectorRequirement",
    fields: &[on_wire(1, "key", String), on_wire(2, "operator", String), list(3, "values", String)],
};

// core/v1 (k8s.io/api/core/v1/generated.proto).

pub(super) static NAMESPACE: Message = Message {
    name: "Namespace",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&NAMESPACE_SPEC)),
        non_zero(3, "status", FieldKind::Message(&NAMESPACE_STATUS)),
    ],
};

pub(super) static NAMESPACE_SPEC: Message = Message { name: "NamespaceSpec", fields: &[list(1, "finalizers", String)] };

pub(super) static NAMESPACE_STATUS: Message = Message {
    name: "NamespaceStatus",
    fields: &[non_zero(1, "phase", String), list(2, "conditions", FieldKind::Message(&NAMESPACE_CONDITION))],
};

pub(super) static NAMESPACE_CONDITION: Message = Message {
    name: "NamespaceCondition",
    fields: &[
        on_wire(1, "type", String),
        on_wire(2, "status", String),
        non_zero(4, "lastTransitionTime", Time),
        non_zero(5, "reason", String),
        non_zero(6, "message", String),
    ],
};

pub(super) static CONFIG_MAP: Message = Message {
    name: "ConfigMap",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        on_wire(4, "immutable", Bool),
        on_wire(2, "data", StringMap),
        on_wire(3, "binaryData", BytesMap),
    ],
};

pub(super) static SECRET: Message = Message {
    name: "Secret",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        on_wire(5, "immutable", Bool),
        on_wire(2, "data", BytesMap),
        on_wire(4, "stringData", StringMap),
        non_zero(3, "type", String),
    ],
};

pub(super) static SERVICE_ACCOUNT: Message = Message {
    name: "ServiceAccount",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        list(2, "secrets", FieldKind::Message(&OBJECT_REFERENCE)),
        list(3, "imagePullSecrets", FieldKind::Message(&LOCAL_OBJECT_REFERENCE)),
        on_wire(4, "automountServiceAccountToken", Bool),
    ],
};

pub(super) static OBJECT_REFERENCE: Message = Message {
    name: "ObjectReference",
    fields: &[
        non_zero(1, "kind", String),
        non_zero(2, "namespace", String),
        non_zero(3, "name", String),
        non_zero(4, "uid", String),
        non_zero(5, "apiVersion", String),
        non_zero(6, "resourceVersion", String),
        non_zero(7, "fieldPath", String),
    ],
};

pub(super) static LOCAL_OBJECT_REFERENCE: Message =
    Message { name: "LocalObjectReference", fields: &[non_zero(1, "name", String)] };

pub(super) static EVENT: Message = Message {
    name: "Event",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        on_wire(2, "involvedObject", FieldKind::Message(&OBJECT_REFERENCE)),
        non_zero(3, "reason", String),
        non_zero(4, "message", String),
        non_zero(5, "source", FieldKind::Message(&EVENT_SOURCE)),
        non_zero(6, "firstTimestamp", Time),
        non_zero(7, "lastTimestamp", Time),
        non_zero(8, "count", Int32),
        non_zero(9, "type", String),
        non_zero(10, "eventTime", MicroTime),
        on_wire(11, "series", FieldKind::Message(&EVENT_SERIES)),
        non_zero(12, "action", String),
        on_wire(13, "related", FieldKind::Message(&OBJECT_REFERENCE)),
        // Go field ReportingController, JSON key reportingComponent, no omitempty.
        on_wire(14, "reportingComponent", String),
        on_wire(15, "reportingInstance", String),
    ],
};

pub(super) static EVENT_SOURCE: Message =
    Message { name: "EventSource", fields: &[non_zero(1, "component", String), non_zero(2, "host", String)] };

pub(super) static EVENT_SERIES: Message =
    Message { name: "EventSeries", fields: &[non_zero(1, "count", Int32), non_zero(2, "lastObservedTime", MicroTime)] };

// rbac.authorization.k8s.io/v1 (k8s.io/api/rbac/v1/generated.proto).

pub(super) static ROLE: Message = Message {
    name: "Role",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        list(2, "rules", FieldKind::Message(&POLICY_RULE)),
    ],
};

pub(super) static CLUSTER_ROLE: Message = Message {
    name: "ClusterRole",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        list(2, "rules", FieldKind::Message(&POLICY_RULE)),
        on_wire(3, "aggregationRule", FieldKind::Message(&AGGREGATION_RULE)),
    ],
};

pub(super) static POLICY_RULE: Message = Message {
    name: "PolicyRule",
    fields: &[
        list(1, "verbs", String),
        list(2, "apiGroups", String),
        list(3, "resources", String),
        list(4, "resourceNames", String),
        list(5, "nonResourceURLs", String),
    ],
};

pub(super) static AGGREGATION_RULE: Message = Message {
    name: "AggregationRule",
    fields: &[list(1, "clusterRoleSelectors", FieldKind::Message(&LABEL_SELECTOR))],
};

/// RoleBinding and ClusterRoleBinding share one message shape.
const BINDING_FIELDS: &[Field] = &[
    non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
    list(2, "subjects", FieldKind::Message(&SUBJECT)),
    on_wire(3, "roleRef", FieldKind::Message(&ROLE_REF)),
];

pub(super) static ROLE_BINDING: Message = Message { name: "RoleBinding", fields: BINDING_FIELDS };

pub(super) static CLUSTER_ROLE_BINDING: Message = Message { name: "ClusterRoleBinding", fields: BINDING_FIELDS };

pub(super) static SUBJECT: Message = Message {
    name: "Subject",
    fields: &[
        on_wire(1, "kind", String),
        non_zero(2, "apiGroup", String),
        on_wire(3, "name", String),
        non_zero(4, "namespace", String),
    ],
};

pub(super) static ROLE_REF: Message = Message {
    name: "RoleRef",
    fields: &[on_wire(1, "apiGroup", String), on_wire(2, "kind", String), on_wire(3, "name", String)],
};

// coordination.k8s.io/v1 (k8s.io/api/coordination/v1/generated.proto).

pub(super) static LEASE: Message = Message {
    name: "Lease",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&LEASE_SPEC)),
    ],
};

pub(super) static LEASE_SPEC: Message = Message {
    name: "LeaseSpec",
    fields: &[
        on_wire(1, "holderIdentity", String),
        on_wire(2, "leaseDurationSeconds", Int32),
        on_wire(3, "acquireTime", MicroTime),
        on_wire(4, "renewTime", MicroTime),
        on_wire(5, "leaseTransitions", Int32),
        on_wire(6, "strategy", String),
        on_wire(7, "preferredHolder", String),
    ],
};

/// The top-level kinds with a schema: what kubectl v1.32's typed `create` commands send, plus
/// Lease and core/v1 Event, which client-go components post as protobuf.
pub(super) static KINDS: &[(&str, &str, &Message)] = &[
    ("v1", "Namespace", &NAMESPACE),
    ("v1", "ConfigMap", &CONFIG_MAP),
    ("v1", "Secret", &SECRET),
    ("v1", "ServiceAccount", &SERVICE_ACCOUNT),
    ("v1", "Event", &EVENT),
    ("rbac.authorization.k8s.io/v1", "Role", &ROLE),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", &CLUSTER_ROLE),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", &ROLE_BINDING),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &CLUSTER_ROLE_BINDING),
    ("coordination.k8s.io/v1", "Lease", &LEASE),
];

#[cfg(test)]
mod tests {
    use super::{FieldKind, Message, KINDS, UNKNOWN};
    use crate::protobuf::message_for;
    use crate::protobuf::tests::{decode, fresh_meta, time, Enc};
    use serde_json::json;

    #[test]
    fn config_map_keeps_pointer_zeros_and_drops_value_zeros() {
        let object = Enc::new()
            .message(1, fresh_meta("cm").entry(11, "app", b"web").entry(11, "tier", b"front").entry(12, "note", b""))
            .entry(2, "b", b"2")
            .entry(2, "a", b"1")
            .entry(3, "blob", &[0, 0xff, 1])
            .bool(4, false);
        assert_eq!(
            decode("v1", "ConfigMap", object),
            json!({
                "kind": "ConfigMap",
                "apiVersion": "v1",
                "metadata": {"name": "cm", "labels": {"app": "web", "tier": "front"}, "annotations": {"note": ""}},
                "immutable": false,
                "data": {"a": "1", "b": "2"},
                "binaryData": {"blob": "AP8B"},
            })
        );
    }

    #[test]
    fn secret_data_is_base64_and_empty_type_is_dropped() {
        let object = Enc::new()
            .message(1, fresh_meta("s").string(3, "ns1"))
            .entry(2, "token", b"\x00secret")
            .string(3, "")
            .entry(4, "plain", b"text")
            .bool(5, true);
        let decoded = decode("v1", "Secret", object);
        assert_eq!(
            decoded,
            json!({
                "kind": "Secret",
                "apiVersion": "v1",
                "metadata": {"name": "s", "namespace": "ns1"},
                "immutable": true,
                "data": {"token": "AHNlY3JldA=="},
                "stringData": {"plain": "text"},
            })
        );
        let typed = decode("v1", "Secret", Enc::new().message(1, fresh_meta("s")).string(3, "kubernetes.io/tls"));
        assert_eq!(typed["type"], "kubernetes.io/tls");
    }

    #[test]
    fn namespace_with_spec_and_status() {
        let condition = Enc::new()
            .string(1, "NamespaceDeletionContentFailure")
            .string(2, "False")
            .message(4, time(1_704_164_645, 0))
            .string(5, "")
            .string(6, "");
        let object = Enc::new()
            .message(1, fresh_meta("ns1"))
            .message(2, Enc::new().string(1, "kubernetes"))
            .message(3, Enc::new().string(1, "Active").message(2, condition));
        assert_eq!(
            decode("v1", "Namespace", object),
            json!({
                "kind": "Namespace",
                "apiVersion": "v1",
                "metadata": {"name": "ns1"},
                "spec": {"finalizers": ["kubernetes"]},
                "status": {
                    "phase": "Active",
                    "conditions": [{
                        "type": "NamespaceDeletionContentFailure",
                        "status": "False",
                        "lastTransitionTime": "2024-01-02T03:04:05Z",
                    }],
                },
            })
        );
    }

    #[test]
    fn cluster_role_binding_subjects_and_role_ref() {
        let rbac = "rbac.authorization.k8s.io";
        let object = Enc::new()
            .message(1, fresh_meta("crb"))
            .message(2, Enc::new().string(1, "User").string(2, rbac).string(3, "alice").string(4, ""))
            .message(2, Enc::new().string(1, "ServiceAccount").string(2, "").string(3, "sa").string(4, "kube-system"))
            .message(3, Enc::new().string(1, rbac).string(2, "ClusterRole").string(3, "view"));
        assert_eq!(
            decode("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", object),
            json!({
                "kind": "ClusterRoleBinding",
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "metadata": {"name": "crb"},
                "subjects": [
                    {"kind": "User", "apiGroup": rbac, "name": "alice"},
                    {"kind": "ServiceAccount", "name": "sa", "namespace": "kube-system"},
                ],
                "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "view"},
            })
        );
    }

    #[test]
    fn object_meta_every_field() {
        let owner = Enc::new()
            .string(1, "ReplicaSet")
            .string(3, "rs")
            .string(4, "uid-1")
            .string(5, "apps/v1")
            .bool(6, true)
            .bool(7, false);
        let managed = Enc::new()
            .string(1, "kubectl")
            .string(2, "Update")
            .string(3, "v1")
            .message(4, time(0, 0))
            .string(6, "FieldsV1")
            .message(7, Enc::new().string(1, r#"{"f:data":{}}"#))
            .string(8, "");
        let meta = Enc::new()
            .string(1, "n")
            .string(2, "gen-")
            .string(3, "ns")
            .string(4, "/self")
            .string(5, "uid-2")
            .string(6, "42")
            .int64(7, 3)
            .message(8, time(1_704_164_645, 0))
            .message(9, time(1_704_164_646, 0))
            .int64(10, 0)
            .entry(11, "l", b"1")
            .entry(12, "a", b"2")
            .message(13, owner)
            .string(14, "example.com/f")
            .message(17, managed);
        let decoded = decode("v1", "ConfigMap", Enc::new().message(1, meta));
        assert_eq!(
            decoded["metadata"],
            json!({
                "name": "n",
                "generateName": "gen-",
                "namespace": "ns",
                "selfLink": "/self",
                "uid": "uid-2",
                "resourceVersion": "42",
                "generation": 3,
                "creationTimestamp": "2024-01-02T03:04:05Z",
                "deletionTimestamp": "2024-01-02T03:04:06Z",
                "deletionGracePeriodSeconds": 0,
                "labels": {"l": "1"},
                "annotations": {"a": "2"},
                "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "uid-1",
                    "controller": true, "blockOwnerDeletion": false,
                }],
                "finalizers": ["example.com/f"],
                "managedFields": [{
                    "manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                    "time": "1970-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}},
                }],
            })
        );
    }

    #[test]
    fn service_account_references() {
        let object = Enc::new()
            .message(1, fresh_meta("sa"))
            .message(2, Enc::new().string(1, "Secret").string(2, "").string(3, "tok").string(7, ""))
            .message(3, Enc::new().string(1, "regcred"))
            .bool(4, false);
        assert_eq!(
            decode("v1", "ServiceAccount", object),
            json!({
                "kind": "ServiceAccount",
                "apiVersion": "v1",
                "metadata": {"name": "sa"},
                "secrets": [{"kind": "Secret", "name": "tok"}],
                "imagePullSecrets": [{"name": "regcred"}],
                "automountServiceAccountToken": false,
            })
        );
    }

    #[test]
    fn cluster_role_rules_and_aggregation() {
        let rule = Enc::new().string(1, "get").string(2, "").string(3, "pods").string(4, "p1").string(5, "/healthz");
        let selector = Enc::new()
            .entry(1, "agg", b"true")
            .message(2, Enc::new().string(1, "tier").string(2, "In").string(3, "a").string(3, "b"));
        let object =
            Enc::new().message(1, fresh_meta("cr")).message(2, rule).message(3, Enc::new().message(1, selector));
        let decoded = decode("rbac.authorization.k8s.io/v1", "ClusterRole", object);
        assert_eq!(
            decoded["rules"],
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["p1"], "nonResourceURLs": ["/healthz"]}])
        );
        assert_eq!(
            decoded["aggregationRule"],
            json!({"clusterRoleSelectors": [{
                "matchLabels": {"agg": "true"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
            }]})
        );
    }

    #[test]
    fn lease_spec_pointers_and_micro_times() {
        let spec = Enc::new()
            .string(1, "node-a")
            .int32(2, 0)
            .message(3, time(1_704_164_645, 123_456_789))
            .message(4, time(1_704_164_646, 0))
            .int32(5, -1)
            .string(6, "")
            .string(7, "node-b");
        let decoded =
            decode("coordination.k8s.io/v1", "Lease", Enc::new().message(1, fresh_meta("l")).message(2, spec));
        assert_eq!(
            decoded["spec"],
            json!({
                "holderIdentity": "node-a",
                "leaseDurationSeconds": 0,
                "acquireTime": "2024-01-02T03:04:05.123456Z",
                "renewTime": "2024-01-02T03:04:06.000000Z",
                "leaseTransitions": -1,
                "strategy": "",
                "preferredHolder": "node-b",
            })
        );
    }

    #[test]
    fn core_event() {
        let involved = Enc::new().string(1, "Pod").string(2, "default").string(3, "p").string(4, "").string(7, "");
        let object = Enc::new()
            .message(1, fresh_meta("p.1"))
            .message(2, involved)
            .string(3, "Started")
            .string(4, "Started container")
            .message(5, Enc::new().string(1, "kubelet").string(2, "node-a"))
            .message(6, time(1_704_164_645, 0))
            .message(7, Enc::new())
            .int32(8, 2)
            .string(9, "Normal")
            .message(10, Enc::new())
            .message(11, Enc::new().int32(1, 3).message(2, time(1_704_164_647, 5_000)))
            .string(12, "")
            .message(13, Enc::new().string(1, "Node").string(3, "node-a"))
            .string(14, "")
            .string(15, "");
        assert_eq!(
            decode("v1", "Event", object),
            json!({
                "kind": "Event",
                "apiVersion": "v1",
                "metadata": {"name": "p.1"},
                "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
                "reason": "Started",
                "message": "Started container",
                "source": {"component": "kubelet", "host": "node-a"},
                "firstTimestamp": "2024-01-02T03:04:05Z",
                "count": 2,
                "type": "Normal",
                "series": {"count": 3, "lastObservedTime": "2024-01-02T03:04:07.000005Z"},
                "related": {"kind": "Node", "name": "node-a"},
                "reportingComponent": "",
                "reportingInstance": "",
            })
        );
    }

    /// Tags and JSON keys unique per message, maps never repeated, and no cycles (the decoder's
    /// recursion depth is the schema's depth).
    #[test]
    fn tables_are_well_formed() {
        fn check(message: &'static Message, depth: usize) {
            assert!(depth < 8, "{} nests too deep (a cycle?)", message.name);
            for (i, field) in message.fields.iter().enumerate() {
                assert!(field.tag >= 1, "{}.{}", message.name, field.json_name);
                for other in &message.fields[i + 1..] {
                    assert_ne!(field.tag, other.tag, "{}: duplicate tag", message.name);
                    assert_ne!(field.json_name, other.json_name, "{}: duplicate key", message.name);
                }
                let is_map = matches!(field.kind, FieldKind::StringMap | FieldKind::BytesMap);
                assert!(!(is_map && field.repeated), "{}.{}: repeated map", message.name, field.json_name);
                if let FieldKind::Message(nested) = field.kind {
                    check(nested, depth + 1);
                }
            }
        }
        check(&UNKNOWN, 0);
        for (api_version, kind, message) in KINDS {
            assert_eq!(message_for(api_version, kind).map(|m| m.name), Some(message.name));
            check(message, 0);
        }
    }
}
