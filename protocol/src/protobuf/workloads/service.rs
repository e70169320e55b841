//! core/v1 Service, with its ports and load balancer status, and ResourceQuota.

use super::CONDITION;
use crate::protobuf::tables::OBJECT_META;
use crate::protobuf::FieldKind::{self, Bool, Int32, IntOrString, QuantityMap, String, StringMap};
use crate::protobuf::{list, non_zero, on_wire, Message};

// core/v1 Service and ResourceQuota.

pub(super) static SERVICE: Message = Message {
    name: "Service",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&SERVICE_SPEC)),
        non_zero(3, "status", FieldKind::Message(&SERVICE_STATUS)),
    ],
};

static SERVICE_SPEC: Message = Message {
    name: "ServiceSpec",
    fields: &[
        list(1, "ports", FieldKind::Message(&SERVICE_PORT)),
        on_wire(2, "selector", StringMap),
        non_zero(3, "clusterIP", String),
        list(18, "clusterIPs", String),
        non_zero(4, "type", String),
        list(5, "externalIPs", String),
        non_zero(7, "sessionAffinity", String),
        non_zero(8, "loadBalancerIP", String),
        list(9, "loadBalancerSourceRanges", String),
        non_zero(10, "externalName", String),
        non_zero(11, "externalTrafficPolicy", String),
        non_zero(12, "healthCheckNodePort", Int32),
        non_zero(13, "publishNotReadyAddresses", Bool),
        on_wire(14, "sessionAffinityConfig", FieldKind::Message(&SESSION_AFFINITY_CONFIG)),
        list(19, "ipFamilies", String),
        on_wire(17, "ipFamilyPolicy", String),
        on_wire(20, "allocateLoadBalancerNodePorts", Bool),
        on_wire(21, "loadBalancerClass", String),
        on_wire(22, "internalTrafficPolicy", String),
        on_wire(23, "trafficDistribution", String),
    ],
};

static SERVICE_PORT: Message = Message {
    name: "ServicePort",
    fields: &[
        non_zero(1, "name", String),
        non_zero(2, "protocol", String),
        on_wire(6, "appProtocol", String),
        on_wire(3, "port", Int32),
        // A struct, so Go's JSON writes it even when zero; absent decodes to the same value.
        non_zero(4, "targetPort", IntOrString),
        non_zero(5, "nodePort", Int32),
    ],
};

static SESSION_AFFINITY_CONFIG: Message =
    Message { name: "SessionAffinityConfig", fields: &[on_wire(1, "clientIP", FieldKind::Message(&CLIENT_IP_CONFIG))] };

static CLIENT_IP_CONFIG: Message = Message { name: "ClientIPConfig", fields: &[on_wire(1, "timeoutSeconds", Int32)] };

static SERVICE_STATUS: Message = Message {
    name: "ServiceStatus",
    fields: &[
        non_zero(1, "loadBalancer", FieldKind::Message(&LOAD_BALANCER_STATUS)),
        list(2, "conditions", FieldKind::Message(&CONDITION)),
    ],
};

static LOAD_BALANCER_STATUS: Message =
    Message { name: "LoadBalancerStatus", fields: &[list(1, "ingress", FieldKind::Message(&LOAD_BALANCER_INGRESS))] };

static LOAD_BALANCER_INGRESS: Message = Message {
    name: "LoadBalancerIngress",
    fields: &[
        non_zero(1, "ip", String),
        non_zero(2, "hostname", String),
        on_wire(3, "ipMode", String),
        list(4, "ports", FieldKind::Message(&PORT_STATUS)),
    ],
};

/// core/v1 PortStatus and networking/v1 IngressPortStatus share one message shape.
pub(super) static PORT_STATUS: Message = Message {
    name: "PortStatus",
    fields: &[on_wire(1, "port", Int32), on_wire(2, "protocol", String), on_wire(3, "error", String)],
};

pub(super) static RESOURCE_QUOTA: Message = Message {
    name: "ResourceQuota",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&RESOURCE_QUOTA_SPEC)),
        non_zero(3, "status", FieldKind::Message(&RESOURCE_QUOTA_STATUS)),
    ],
};

static RESOURCE_QUOTA_SPEC: Message = Message {
    name: "ResourceQuotaSpec",
    fields: &[
        on_wire(1, "hard", QuantityMap),
        list(2, "scopes", String),
        on_wire(3, "scopeSelector", FieldKind::Message(&SCOPE_SELECTOR)),
    ],
};

static SCOPE_SELECTOR: Message = Message {
    name: "ScopeSelector",
    fields: &[list(1, "matchExpressions", FieldKind::Message(&SCOPED_RESOURCE_SELECTOR_REQUIREMENT))],
};

static SCOPED_RESOURCE_SELECTOR_REQUIREMENT: Message = Message {
    name: "ScopedResourceSelectorRequirement",
    fields: &[on_wire(1, "scopeName", String), on_wire(2, "operator", String), list(3, "values", String)],
};

static RESOURCE_QUOTA_STATUS: Message = Message {
    name: "ResourceQuotaStatus",
    fields: &[on_wire(1, "hard", QuantityMap), on_wire(2, "used", QuantityMap)],
};
