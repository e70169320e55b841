//! networking.k8s.io/v1: Ingress, with its rules, backends and load balancer status.

use super::service::PORT_STATUS;
use crate::protobuf::tables::OBJECT_META;
use crate::protobuf::FieldKind::{self, Inline, Int32, String};
use crate::protobuf::{list, non_zero, on_wire, Message};

// networking.k8s.io/v1 (k8s.io/api/networking/v1/generated.proto).

pub(super) static INGRESS: Message = Message {
    name: "Ingress",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&INGRESS_SPEC)),
        non_zero(3, "status", FieldKind::Message(&INGRESS_STATUS)),
    ],
};

static INGRESS_SPEC: Message = Message {
    name: "IngressSpec",
    fields: &[
        on_wire(4, "ingressClassName", String),
        on_wire(1, "defaultBackend", FieldKind::Message(&INGRESS_BACKEND)),
        list(2, "tls", FieldKind::Message(&INGRESS_TLS)),
        list(3, "rules", FieldKind::Message(&INGRESS_RULE)),
    ],
};

static INGRESS_TLS: Message =
    Message { name: "IngressTLS", fields: &[list(1, "hosts", String), non_zero(2, "secretName", String)] };

static INGRESS_RULE: Message = Message {
    name: "IngressRule",
    fields: &[non_zero(1, "host", String), on_wire(2, "ingressRuleValue", Inline(&INGRESS_RULE_VALUE))],
};

static INGRESS_RULE_VALUE: Message =
    Message { name: "IngressRuleValue", fields: &[on_wire(1, "http", FieldKind::Message(&HTTP_INGRESS_RULE_VALUE))] };

static HTTP_INGRESS_RULE_VALUE: Message =
    Message { name: "HTTPIngressRuleValue", fields: &[list(1, "paths", FieldKind::Message(&HTTP_INGRESS_PATH))] };

static HTTP_INGRESS_PATH: Message = Message {
    name: "HTTPIngressPath",
    fields: &[
        non_zero(1, "path", String),
        on_wire(3, "pathType", String),
        on_wire(2, "backend", FieldKind::Message(&INGRESS_BACKEND)),
    ],
};

static INGRESS_BACKEND: Message = Message {
    name: "IngressBackend",
    fields: &[
        on_wire(4, "service", FieldKind::Message(&INGRESS_SERVICE_BACKEND)),
        on_wire(3, "resource", FieldKind::Message(&TYPED_LOCAL_OBJECT_REFERENCE)),
    ],
};

static INGRESS_SERVICE_BACKEND: Message = Message {
    name: "IngressServiceBackend",
    fields: &[on_wire(1, "name", String), non_zero(2, "port", FieldKind::Message(&SERVICE_BACKEND_PORT))],
};

static SERVICE_BACKEND_PORT: Message =
    Message { name: "ServiceBackendPort", fields: &[non_zero(1, "name", String), non_zero(2, "number", Int32)] };

/// core/v1 TypedLocalObjectReference.
static TYPED_LOCAL_OBJECT_REFERENCE: Message = Message {
    name: "TypedLocalObjectReference",
    fields: &[on_wire(1, "apiGroup", String), on_wire(2, "kind", String), on_wire(3, "name", String)],
};

static INGRESS_STATUS: Message = Message {
    name: "IngressStatus",
    fields: &[non_zero(1, "loadBalancer", FieldKind::Message(&INGRESS_LOAD_BALANCER_STATUS))],
};

static INGRESS_LOAD_BALANCER_STATUS: Message = Message {
    name: "IngressLoadBalancerStatus",
    fields: &[list(1, "ingress", FieldKind::Message(&INGRESS_LOAD_BALANCER_INGRESS))],
};

static INGRESS_LOAD_BALANCER_INGRESS: Message = Message {
    name: "IngressLoadBalancerIngress",
    fields: &[
        non_zero(1, "ip", String),
        non_zero(2, "hostname", String),
        list(4, "ports", FieldKind::Message(&PORT_STATUS)),
    ],
};
