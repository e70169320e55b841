//! apps/v1: Deployment, with its spec, rollout strategy and status.

use super::pod::POD_TEMPLATE_SPEC;
use crate::protobuf::tables::{LABEL_SELECTOR, OBJECT_META};
use crate::protobuf::FieldKind::{self, Bool, Int32, Int64, IntOrString, String, Time};
use crate::protobuf::{list, non_zero, on_wire, Message};

// apps/v1 (k8s.io/api/apps/v1/generated.proto).

pub(super) static DEPLOYMENT: Message = Message {
    name: "Deployment",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&DEPLOYMENT_SPEC)),
        non_zero(3, "status", FieldKind::Message(&DEPLOYMENT_STATUS)),
    ],
};

static DEPLOYMENT_SPEC: Message = Message {
    name: "DeploymentSpec",
    fields: &[
        on_wire(1, "replicas", Int32),
        on_wire(2, "selector", FieldKind::Message(&LABEL_SELECTOR)),
        on_wire(3, "template", FieldKind::Message(&POD_TEMPLATE_SPEC)),
        non_zero(4, "strategy", FieldKind::Message(&DEPLOYMENT_STRATEGY)),
        non_zero(5, "minReadySeconds", Int32),
        on_wire(6, "revisionHistoryLimit", Int32),
        non_zero(7, "paused", Bool),
        on_wire(9, "progressDeadlineSeconds", Int32),
    ],
};

static DEPLOYMENT_STRATEGY: Message = Message {
    name: "DeploymentStrategy",
    fields: &[non_zero(1, "type", String), on_wire(2, "rollingUpdate", FieldKind::Message(&ROLLING_UPDATE_DEPLOYMENT))],
};

static ROLLING_UPDATE_DEPLOYMENT: Message = Message {
    name: "RollingUpdateDeployment",
    fields: &[on_wire(1, "maxUnavailable", IntOrString), on_wire(2, "maxSurge", IntOrString)],
};

static DEPLOYMENT_STATUS: Message = Message {
    name: "DeploymentStatus",
    fields: &[
        non_zero(1, "observedGeneration", Int64),
        non_zero(2, "replicas", Int32),
        non_zero(3, "updatedReplicas", Int32),
        non_zero(7, "readyReplicas", Int32),
        non_zero(4, "availableReplicas", Int32),
        non_zero(5, "unavailableReplicas", Int32),
        on_wire(9, "terminatingReplicas", Int32),
        list(6, "conditions", FieldKind::Message(&DEPLOYMENT_CONDITION)),
        on_wire(8, "collisionCount", Int32),
    ],
};

static DEPLOYMENT_CONDITION: Message = Message {
    name: "DeploymentCondition",
    fields: &[
        on_wire(1, "type", String),
        on_wire(2, "status", String),
        non_zero(6, "lastUpdateTime", Time),
        non_zero(7, "lastTransitionTime", Time),
        non_zero(4, "reason", String),
        non_zero(5, "message", String),
    ],
};
