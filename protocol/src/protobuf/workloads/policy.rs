//! policy/v1: PodDisruptionBudget.

use super::CONDITION;
use crate::protobuf::tables::{LABEL_SELECTOR, OBJECT_META};
use crate::protobuf::FieldKind::{self, Int32, Int64, IntOrString, String};
use crate::protobuf::{list, non_zero, on_wire, Message};

// policy/v1 (k8s.io/api/policy/v1/generated.proto).

pub(super) static POD_DISRUPTION_BUDGET: Message = Message {
    name: "PodDisruptionBudget",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&POD_DISRUPTION_BUDGET_SPEC)),
        non_zero(3, "status", FieldKind::Message(&POD_DISRUPTION_BUDGET_STATUS)),
    ],
};

static POD_DISRUPTION_BUDGET_SPEC: Message = Message {
    name: "PodDisruptionBudgetSpec",
    fields: &[
        on_wire(1, "minAvailable", IntOrString),
        on_wire(2, "selector", FieldKind::Message(&LABEL_SELECTOR)),
        on_wire(3, "maxUnavailable", IntOrString),
        on_wire(4, "unhealthyPodEvictionPolicy", String),
    ],
};

static POD_DISRUPTION_BUDGET_STATUS: Message = Message {
    name: "PodDisruptionBudgetStatus",
    fields: &[
        non_zero(1, "observedGeneration", Int64),
        on_wire(3, "disruptionsAllowed", Int32),
        on_wire(4, "currentHealthy", Int32),
        on_wire(5, "desiredHealthy", Int32),
        on_wire(6, "expectedPods", Int32),
        list(7, "conditions", FieldKind::Message(&CONDITION)),
    ],
};
