//! batch/v1: Job, with its pod failure and success policies, and CronJob.

use super::pod::POD_TEMPLATE_SPEC;
use crate::protobuf::tables::{LABEL_SELECTOR, OBJECT_META, OBJECT_REFERENCE};
use crate::protobuf::FieldKind::{self, Bool, Int32, Int64, String, Time};
use crate::protobuf::{list, non_zero, on_wire, Message};

// batch/v1 (k8s.io/api/batch/v1/generated.proto).

pub(super) static JOB: Message = Message {
    name: "Job",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&JOB_SPEC)),
        non_zero(3, "status", FieldKind::Message(&JOB_STATUS)),
    ],
};

static JOB_SPEC: Message = Message {
    name: "JobSpec",
    fields: &[
        on_wire(1, "parallelism", Int32),
        on_wire(2, "completions", Int32),
        on_wire(3, "activeDeadlineSeconds", Int64),
        on_wire(11, "podFailurePolicy", FieldKind::Message(&POD_FAILURE_POLICY)),
        on_wire(16, "successPolicy", FieldKind::Message(&SUCCESS_POLICY)),
        on_wire(7, "backoffLimit", Int32),
        on_wire(12, "backoffLimitPerIndex", Int32),
        on_wire(13, "maxFailedIndexes", Int32),
        on_wire(4, "selector", FieldKind::Message(&LABEL_SELECTOR)),
        on_wire(5, "manualSelector", Bool),
        on_wire(6, "template", FieldKind::Message(&POD_TEMPLATE_SPEC)),
        on_wire(8, "ttlSecondsAfterFinished", Int32),
        on_wire(9, "completionMode", String),
        on_wire(10, "suspend", Bool),
        on_wire(14, "podReplacementPolicy", String),
        on_wire(15, "managedBy", String),
    ],
};

static POD_FAILURE_POLICY: Message =
    Message { name: "PodFailurePolicy", fields: &[list(1, "rules", FieldKind::Message(&POD_FAILURE_POLICY_RULE))] };

static POD_FAILURE_POLICY_RULE: Message = Message {
    name: "PodFailurePolicyRule",
    fields: &[
        on_wire(1, "action", String),
        on_wire(2, "onExitCodes", FieldKind::Message(&POD_FAILURE_POLICY_ON_EXIT_CODES_REQUIREMENT)),
        list(3, "onPodConditions", FieldKind::Message(&POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERN)),
    ],
};

static POD_FAILURE_POLICY_ON_EXIT_CODES_REQUIREMENT: Message = Message {
    name: "PodFailurePolicyOnExitCodesRequirement",
    fields: &[on_wire(1, "containerName", String), on_wire(2, "operator", String), list(3, "values", Int32)],
};

static POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERN: Message = Message {
    name: "PodFailurePolicyOnPodConditionsPattern",
    fields: &[on_wire(1, "type", String), on_wire(2, "status", String)],
};

static SUCCESS_POLICY: Message =
    Message { name: "SuccessPolicy", fields: &[list(1, "rules", FieldKind::Message(&SUCCESS_POLICY_RULE))] };

static SUCCESS_POLICY_RULE: Message = Message {
    name: "SuccessPolicyRule",
    fields: &[on_wire(1, "succeededIndexes", String), on_wire(2, "succeededCount", Int32)],
};

static JOB_STATUS: Message = Message {
    name: "JobStatus",
    fields: &[
        list(1, "conditions", FieldKind::Message(&JOB_CONDITION)),
        on_wire(2, "startTime", Time),
        on_wire(3, "completionTime", Time),
        non_zero(4, "active", Int32),
        non_zero(5, "succeeded", Int32),
        non_zero(6, "failed", Int32),
        on_wire(11, "terminating", Int32),
        non_zero(7, "completedIndexes", String),
        on_wire(10, "failedIndexes", String),
        on_wire(8, "uncountedTerminatedPods", FieldKind::Message(&UNCOUNTED_TERMINATED_PODS)),
        on_wire(9, "ready", Int32),
    ],
};

static JOB_CONDITION: Message = Message {
    name: "JobCondition",
    fields: &[
        on_wire(1, "type", String),
        on_wire(2, "status", String),
        non_zero(3, "lastProbeTime", Time),
        non_zero(4, "lastTransitionTime", Time),
        non_zero(5, "reason", String),
        non_zero(6, "message", String),
    ],
};

static UNCOUNTED_TERMINATED_PODS: Message =
    Message { name: "UncountedTerminatedPods", fields: &[list(1, "succeeded", String), list(2, "failed", String)] };

pub(super) static CRON_JOB: Message = Message {
    name: "CronJob",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&CRON_JOB_SPEC)),
        non_zero(3, "status", FieldKind::Message(&CRON_JOB_STATUS)),
    ],
};

static CRON_JOB_SPEC: Message = Message {
    name: "CronJobSpec",
    fields: &[
        on_wire(1, "schedule", String),
        on_wire(8, "timeZone", String),
        on_wire(2, "startingDeadlineSeconds", Int64),
        non_zero(3, "concurrencyPolicy", String),
        on_wire(4, "suspend", Bool),
        on_wire(5, "jobTemplate", FieldKind::Message(&JOB_TEMPLATE_SPEC)),
        on_wire(6, "successfulJobsHistoryLimit", Int32),
        on_wire(7, "failedJobsHistoryLimit", Int32),
    ],
};

static JOB_TEMPLATE_SPEC: Message = Message {
    name: "JobTemplateSpec",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&JOB_SPEC)),
    ],
};

static CRON_JOB_STATUS: Message = Message {
    name: "CronJobStatus",
    fields: &[
        list(1, "active", FieldKind::Message(&OBJECT_REFERENCE)),
        on_wire(4, "lastScheduleTime", Time),
        on_wire(5, "lastSuccessfulTime", Time),
    ],
};
