//! autoscaling/v1 and v2: HorizontalPodAutoscaler, with v2's metrics and scaling behavior.

use crate::protobuf::tables::{LABEL_SELECTOR, OBJECT_META};
use crate::protobuf::FieldKind::{self, Int32, Int64, Quantity, String, Time};
use crate::protobuf::{list, non_zero, on_wire, Message};

// autoscaling/v1 (k8s.io/api/autoscaling/v1/generated.proto).

pub(super) static HORIZONTAL_POD_AUTOSCALER_V1: Message = Message {
    name: "HorizontalPodAutoscaler",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&HORIZONTAL_POD_AUTOSCALER_SPEC_V1)),
        non_zero(3, "status", FieldKind::Message(&HORIZONTAL_POD_AUTOSCALER_STATUS_V1)),
    ],
};

static HORIZONTAL_POD_AUTOSCALER_SPEC_V1: Message = Message {
    name: "HorizontalPodAutoscalerSpec",
    fields: &[
        on_wire(1, "scaleTargetRef", FieldKind::Message(&CROSS_VERSION_OBJECT_REFERENCE)),
        on_wire(2, "minReplicas", Int32),
        on_wire(3, "maxReplicas", Int32),
        on_wire(4, "targetCPUUtilizationPercentage", Int32),
    ],
};

/// The same message in autoscaling/v1 and v2.
static CROSS_VERSION_OBJECT_REFERENCE: Message = Message {
    name: "CrossVersionObjectReference",
    fields: &[on_wire(1, "kind", String), on_wire(2, "name", String), non_zero(3, "apiVersion", String)],
};

static HORIZONTAL_POD_AUTOSCALER_STATUS_V1: Message = Message {
    name: "HorizontalPodAutoscalerStatus",
    fields: &[
        on_wire(1, "observedGeneration", Int64),
        on_wire(2, "lastScaleTime", Time),
        on_wire(3, "currentReplicas", Int32),
        on_wire(4, "desiredReplicas", Int32),
        on_wire(5, "currentCPUUtilizationPercentage", Int32),
    ],
};

// autoscaling/v2 (k8s.io/api/autoscaling/v2/generated.proto).

pub(super) static HORIZONTAL_POD_AUTOSCALER_V2: Message = Message {
    name: "HorizontalPodAutoscaler",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&HORIZONTAL_POD_AUTOSCALER_SPEC_V2)),
        non_zero(3, "status", FieldKind::Message(&HORIZONTAL_POD_AUTOSCALER_STATUS_V2)),
    ],
};

static HORIZONTAL_POD_AUTOSCALER_SPEC_V2: Message = Message {
    name: "HorizontalPodAutoscalerSpec",
    fields: &[
        on_wire(1, "scaleTargetRef", FieldKind::Message(&CROSS_VERSION_OBJECT_REFERENCE)),
        on_wire(2, "minReplicas", Int32),
        on_wire(3, "maxReplicas", Int32),
        list(4, "metrics", FieldKind::Message(&METRIC_SPEC)),
        on_wire(5, "behavior", FieldKind::Message(&HORIZONTAL_POD_AUTOSCALER_BEHAVIOR)),
    ],
};

static METRIC_SPEC: Message = Message {
    name: "MetricSpec",
    fields: &[
        on_wire(1, "type", String),
        on_wire(2, "object", FieldKind::Message(&OBJECT_METRIC_SOURCE)),
        on_wire(3, "pods", FieldKind::Message(&PODS_METRIC_SOURCE)),
        on_wire(4, "resource", FieldKind::Message(&RESOURCE_METRIC_SOURCE)),
        on_wire(7, "containerResource", FieldKind::Message(&CONTAINER_RESOURCE_METRIC_SOURCE)),
        on_wire(5, "external", FieldKind::Message(&EXTERNAL_METRIC_SOURCE)),
    ],
};

static OBJECT_METRIC_SOURCE: Message = Message {
    name: "ObjectMetricSource",
    fields: &[
        on_wire(1, "describedObject", FieldKind::Message(&CROSS_VERSION_OBJECT_REFERENCE)),
        on_wire(2, "target", FieldKind::Message(&METRIC_TARGET)),
        on_wire(3, "metric", FieldKind::Message(&METRIC_IDENTIFIER)),
    ],
};

static PODS_METRIC_SOURCE: Message = Message {
    name: "PodsMetricSource",
    fields: &[
        on_wire(1, "metric", FieldKind::Message(&METRIC_IDENTIFIER)),
        on_wire(2, "target", FieldKind::Message(&METRIC_TARGET)),
    ],
};

static RESOURCE_METRIC_SOURCE: Message = Message {
    name: "ResourceMetricSource",
    fields: &[on_wire(1, "name", String), on_wire(2, "target", FieldKind::Message(&METRIC_TARGET))],
};

static CONTAINER_RESOURCE_METRIC_SOURCE: Message = Message {
    name: "ContainerResourceMetricSource",
    fields: &[
        on_wire(1, "name", String),
        on_wire(2, "target", FieldKind::Message(&METRIC_TARGET)),
        on_wire(3, "container", String),
    ],
};

static EXTERNAL_METRIC_SOURCE: Message = Message {
    name: "ExternalMetricSource",
    fields: &[
        on_wire(1, "metric", FieldKind::Message(&METRIC_IDENTIFIER)),
        on_wire(2, "target", FieldKind::Message(&METRIC_TARGET)),
    ],
};

static METRIC_IDENTIFIER: Message = Message {
    name: "MetricIdentifier",
    fields: &[on_wire(1, "name", String), on_wire(2, "selector", FieldKind::Message(&LABEL_SELECTOR))],
};

static METRIC_TARGET: Message = Message {
    name: "MetricTarget",
    fields: &[
        on_wire(1, "type", String),
        on_wire(2, "value", Quantity),
        on_wire(3, "averageValue", Quantity),
        on_wire(4, "averageUtilization", Int32),
    ],
};

static HORIZONTAL_POD_AUTOSCALER_BEHAVIOR: Message = Message {
    name: "HorizontalPodAutoscalerBehavior",
    fields: &[
        on_wire(1, "scaleUp", FieldKind::Message(&HPA_SCALING_RULES)),
        on_wire(2, "scaleDown", FieldKind::Message(&HPA_SCALING_RULES)),
    ],
};

static HPA_SCALING_RULES: Message = Message {
    name: "HPAScalingRules",
    fields: &[
        on_wire(3, "stabilizationWindowSeconds", Int32),
        on_wire(1, "selectPolicy", String),
        list(2, "policies", FieldKind::Message(&HPA_SCALING_POLICY)),
        on_wire(4, "tolerance", Quantity),
    ],
};

static HPA_SCALING_POLICY: Message = Message {
    name: "HPAScalingPolicy",
    fields: &[on_wire(1, "type", String), on_wire(2, "value", Int32), on_wire(3, "periodSeconds", Int32)],
};

static HORIZONTAL_POD_AUTOSCALER_STATUS_V2: Message = Message {
    name: "HorizontalPodAutoscalerStatus",
    fields: &[
        on_wire(1, "observedGeneration", Int64),
        on_wire(2, "lastScaleTime", Time),
        non_zero(3, "currentReplicas", Int32),
        on_wire(4, "desiredReplicas", Int32),
        list(6, "conditions", FieldKind::Message(&HORIZONTAL_POD_AUTOSCALER_CONDITION)),
    ],
};

static HORIZONTAL_POD_AUTOSCALER_CONDITION: Message = Message {
    name: "HorizontalPodAutoscalerCondition",
    fields: &[
        on_wire(1, "type", String),
        on_wire(2, "status", String),
        non_zero(3, "lastTransitionTime", Time),
        non_zero(4, "reason", String),
        non_zero(5, "message", String),
    ],
};
