//! The workload kinds kubectl's typed commands send as protobuf: what `kubectl create` posts for
//! a deployment, job, cronjob, service, pdb, ingress or quota, and `kubectl run` and
//! `kubectl autoscale`.
//!
//! Transcribed from Kubernetes v1.33's `generated.proto` files (k8s.io/api v0.33.0: apps/v1,
//! batch/v1, core/v1, policy/v1, networking/v1, autoscaling/v1 and v2) with JSON keys and
//! `omitempty` from the Go `json:` tags. Fields in Go struct order, as elsewhere. Embedded
//! structs (`json:",inline"`) are [`FieldKind::Inline`]; quantities are [`FieldKind::Quantity`]
//! and [`FieldKind::QuantityMap`], with the wire tables for them here.
//!
//! Left out, so skipped like unknown field numbers: PodSpec's `ephemeralContainers` (written
//! only through their own subresource); the volume sources other than hostPath, emptyDir,
//! secret, nfs, persistentVolumeClaim, downwardAPI, configMap, projected and image (the in-tree
//! cloud and network storage plugins, csi, ephemeral) and the clusterTrustBundle projection;
//! and, of the statuses, which are the server's to write, PodStatus's container statuses and
//! resource claim statuses, a PodDisruptionBudget's `disruptedPods` and an autoscaling/v2
//! HorizontalPodAutoscaler's `currentMetrics`. A client that needs those sends JSON.

use super::tables::{LABEL_SELECTOR, LOCAL_OBJECT_REFERENCE, OBJECT_META, OBJECT_REFERENCE};
use super::FieldKind::{self, Bool, Inline, Int32, Int64, IntOrString, Quantity, QuantityMap, String, StringMap, Time};
use super::{list, non_zero, on_wire, Message};

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

// apps/v1 (k8s.io/api/apps/v1/generated.proto).

static DEPLOYMENT: Message = Message {
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

// batch/v1 (k8s.io/api/batch/v1/generated.proto).

static JOB: Message = Message {
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

static CRON_JOB: Message = Message {
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

// core/v1 (k8s.io/api/core/v1/generated.proto): Pod and what it holds.

static POD: Message = Message {
    name: "Pod",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&POD_SPEC)),
        non_zero(3, "status", FieldKind::Message(&POD_STATUS)),
    ],
};

static POD_TEMPLATE_SPEC: Message = Message {
    name: "PodTemplateSpec",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&POD_SPEC)),
    ],
};

static POD_SPEC: Message = Message {
    name: "PodSpec",
    fields: &[
        list(1, "volumes", FieldKind::Message(&VOLUME)),
        list(20, "initContainers", FieldKind::Message(&CONTAINER)),
        list(2, "containers", FieldKind::Message(&CONTAINER)),
        non_zero(3, "restartPolicy", String),
        on_wire(4, "terminationGracePeriodSeconds", Int64),
        on_wire(5, "activeDeadlineSeconds", Int64),
        non_zero(6, "dnsPolicy", String),
        on_wire(7, "nodeSelector", StringMap),
        non_zero(8, "serviceAccountName", String),
        // Go field DeprecatedServiceAccount.
        non_zero(9, "serviceAccount", String),
        on_wire(21, "automountServiceAccountToken", Bool),
        non_zero(10, "nodeName", String),
        non_zero(11, "hostNetwork", Bool),
        non_zero(12, "hostPID", Bool),
        non_zero(13, "hostIPC", Bool),
        on_wire(27, "shareProcessNamespace", Bool),
        on_wire(14, "securityContext", FieldKind::Message(&POD_SECURITY_CONTEXT)),
        list(15, "imagePullSecrets", FieldKind::Message(&LOCAL_OBJECT_REFERENCE)),
        non_zero(16, "hostname", String),
        non_zero(17, "subdomain", String),
        on_wire(18, "affinity", FieldKind::Message(&AFFINITY)),
        non_zero(19, "schedulerName", String),
        list(22, "tolerations", FieldKind::Message(&TOLERATION)),
        list(23, "hostAliases", FieldKind::Message(&HOST_ALIAS)),
        non_zero(24, "priorityClassName", String),
        on_wire(25, "priority", Int32),
        on_wire(26, "dnsConfig", FieldKind::Message(&POD_DNS_CONFIG)),
        list(28, "readinessGates", FieldKind::Message(&POD_READINESS_GATE)),
        on_wire(29, "runtimeClassName", String),
        on_wire(30, "enableServiceLinks", Bool),
        on_wire(31, "preemptionPolicy", String),
        on_wire(32, "overhead", QuantityMap),
        list(33, "topologySpreadConstraints", FieldKind::Message(&TOPOLOGY_SPREAD_CONSTRAINT)),
        on_wire(35, "setHostnameAsFQDN", Bool),
        on_wire(36, "os", FieldKind::Message(&POD_OS)),
        on_wire(37, "hostUsers", Bool),
        list(38, "schedulingGates", FieldKind::Message(&POD_SCHEDULING_GATE)),
        list(39, "resourceClaims", FieldKind::Message(&POD_RESOURCE_CLAIM)),
        on_wire(40, "resources", FieldKind::Message(&RESOURCE_REQUIREMENTS)),
    ],
};

static CONTAINER: Message = Message {
    name: "Container",
    fields: &[
        on_wire(1, "name", String),
        non_zero(2, "image", String),
        list(3, "command", String),
        list(4, "args", String),
        non_zero(5, "workingDir", String),
        list(6, "ports", FieldKind::Message(&CONTAINER_PORT)),
        list(19, "envFrom", FieldKind::Message(&ENV_FROM_SOURCE)),
        list(7, "env", FieldKind::Message(&ENV_VAR)),
        non_zero(8, "resources", FieldKind::Message(&RESOURCE_REQUIREMENTS)),
        list(23, "resizePolicy", FieldKind::Message(&CONTAINER_RESIZE_POLICY)),
        on_wire(24, "restartPolicy", String),
        list(9, "volumeMounts", FieldKind::Message(&VOLUME_MOUNT)),
        list(21, "volumeDevices", FieldKind::Message(&VOLUME_DEVICE)),
        on_wire(10, "livenessProbe", FieldKind::Message(&PROBE)),
        on_wire(11, "readinessProbe", FieldKind::Message(&PROBE)),
        on_wire(22, "startupProbe", FieldKind::Message(&PROBE)),
        on_wire(12, "lifecycle", FieldKind::Message(&LIFECYCLE)),
        non_zero(13, "terminationMessagePath", String),
        non_zero(20, "terminationMessagePolicy", String),
        non_zero(14, "imagePullPolicy", String),
        on_wire(15, "securityContext", FieldKind::Message(&SECURITY_CONTEXT)),
        non_zero(16, "stdin", Bool),
        non_zero(17, "stdinOnce", Bool),
        non_zero(18, "tty", Bool),
    ],
};

static CONTAINER_PORT: Message = Message {
    name: "ContainerPort",
    fields: &[
        non_zero(1, "name", String),
        non_zero(2, "hostPort", Int32),
        on_wire(3, "containerPort", Int32),
        non_zero(4, "protocol", String),
        non_zero(5, "hostIP", String),
    ],
};

static ENV_FROM_SOURCE: Message = Message {
    name: "EnvFromSource",
    fields: &[
        non_zero(1, "prefix", String),
        on_wire(2, "configMapRef", FieldKind::Message(&CONFIG_MAP_ENV_SOURCE)),
        on_wire(3, "secretRef", FieldKind::Message(&SECRET_ENV_SOURCE)),
    ],
};

static CONFIG_MAP_ENV_SOURCE: Message = Message {
    name: "ConfigMapEnvSource",
    fields: &[on_wire(1, "localObjectReference", Inline(&LOCAL_OBJECT_REFERENCE)), on_wire(2, "optional", Bool)],
};

static SECRET_ENV_SOURCE: Message = Message {
    name: "SecretEnvSource",
    fields: &[on_wire(1, "localObjectReference", Inline(&LOCAL_OBJECT_REFERENCE)), on_wire(2, "optional", Bool)],
};

static ENV_VAR: Message = Message {
    name: "EnvVar",
    fields: &[
        on_wire(1, "name", String),
        non_zero(2, "value", String),
        on_wire(3, "valueFrom", FieldKind::Message(&ENV_VAR_SOURCE)),
    ],
};

static ENV_VAR_SOURCE: Message = Message {
    name: "EnvVarSource",
    fields: &[
        on_wire(1, "fieldRef", FieldKind::Message(&OBJECT_FIELD_SELECTOR)),
        on_wire(2, "resourceFieldRef", FieldKind::Message(&RESOURCE_FIELD_SELECTOR)),
        on_wire(3, "configMapKeyRef", FieldKind::Message(&CONFIG_MAP_KEY_SELECTOR)),
        on_wire(4, "secretKeyRef", FieldKind::Message(&SECRET_KEY_SELECTOR)),
    ],
};

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

static CONFIG_MAP_KEY_SELECTOR: Message = Message {
    name: "ConfigMapKeySelector",
    fields: &[
        on_wire(1, "localObjectReference", Inline(&LOCAL_OBJECT_REFERENCE)),
        on_wire(2, "key", String),
        on_wire(3, "optional", Bool),
    ],
};

static SECRET_KEY_SELECTOR: Message = Message {
    name: "SecretKeySelector",
    fields: &[
        on_wire(1, "localObjectReference", Inline(&LOCAL_OBJECT_REFERENCE)),
        on_wire(2, "key", String),
        on_wire(3, "optional", Bool),
    ],
};

static RESOURCE_REQUIREMENTS: Message = Message {
    name: "ResourceRequirements",
    fields: &[
        on_wire(1, "limits", QuantityMap),
        on_wire(2, "requests", QuantityMap),
        list(3, "claims", FieldKind::Message(&RESOURCE_CLAIM)),
    ],
};

static RESOURCE_CLAIM: Message =
    Message { name: "ResourceClaim", fields: &[on_wire(1, "name", String), non_zero(2, "request", String)] };

static CONTAINER_RESIZE_POLICY: Message = Message {
    name: "ContainerResizePolicy",
    fields: &[on_wire(1, "resourceName", String), on_wire(2, "restartPolicy", String)],
};

static VOLUME_MOUNT: Message = Message {
    name: "VolumeMount",
    fields: &[
        on_wire(1, "name", String),
        non_zero(2, "readOnly", Bool),
        on_wire(7, "recursiveReadOnly", String),
        on_wire(3, "mountPath", String),
        non_zero(4, "subPath", String),
        on_wire(5, "mountPropagation", String),
        non_zero(6, "subPathExpr", String),
    ],
};

static VOLUME_DEVICE: Message =
    Message { name: "VolumeDevice", fields: &[on_wire(1, "name", String), on_wire(2, "devicePath", String)] };

static PROBE: Message = Message {
    name: "Probe",
    fields: &[
        on_wire(1, "handler", Inline(&PROBE_HANDLER)),
        non_zero(2, "initialDelaySeconds", Int32),
        non_zero(3, "timeoutSeconds", Int32),
        non_zero(4, "periodSeconds", Int32),
        non_zero(5, "successThreshold", Int32),
        non_zero(6, "failureThreshold", Int32),
        on_wire(7, "terminationGracePeriodSeconds", Int64),
    ],
};

static PROBE_HANDLER: Message = Message {
    name: "ProbeHandler",
    fields: &[
        on_wire(1, "exec", FieldKind::Message(&EXEC_ACTION)),
        on_wire(2, "httpGet", FieldKind::Message(&HTTP_GET_ACTION)),
        on_wire(3, "tcpSocket", FieldKind::Message(&TCP_SOCKET_ACTION)),
        on_wire(4, "grpc", FieldKind::Message(&GRPC_ACTION)),
    ],
};

static LIFECYCLE: Message = Message {
    name: "Lifecycle",
    fields: &[
        on_wire(1, "postStart", FieldKind::Message(&LIFECYCLE_HANDLER)),
        on_wire(2, "preStop", FieldKind::Message(&LIFECYCLE_HANDLER)),
        on_wire(3, "stopSignal", String),
    ],
};

static LIFECYCLE_HANDLER: Message = Message {
    name: "LifecycleHandler",
    fields: &[
        on_wire(1, "exec", FieldKind::Message(&EXEC_ACTION)),
        on_wire(2, "httpGet", FieldKind::Message(&HTTP_GET_ACTION)),
        on_wire(3, "tcpSocket", FieldKind::Message(&TCP_SOCKET_ACTION)),
        on_wire(4, "sleep", FieldKind::Message(&SLEEP_ACTION)),
    ],
};

static EXEC_ACTION: Message = Message { name: "ExecAction", fields: &[list(1, "command", String)] };

static HTTP_GET_ACTION: Message = Message {
    name: "HTTPGetAction",
    fields: &[
        non_zero(1, "path", String),
        on_wire(2, "port", IntOrString),
        non_zero(3, "host", String),
        non_zero(4, "scheme", String),
        list(5, "httpHeaders", FieldKind::Message(&HTTP_HEADER)),
    ],
};

static HTTP_HEADER: Message =
    Message { name: "HTTPHeader", fields: &[on_wire(1, "name", String), on_wire(2, "value", String)] };

static TCP_SOCKET_ACTION: Message =
    Message { name: "TCPSocketAction", fields: &[on_wire(1, "port", IntOrString), non_zero(2, "host", String)] };

static GRPC_ACTION: Message =
    Message { name: "GRPCAction", fields: &[on_wire(1, "port", Int32), on_wire(2, "service", String)] };

static SLEEP_ACTION: Message = Message { name: "SleepAction", fields: &[on_wire(1, "seconds", Int64)] };

static SECURITY_CONTEXT: Message = Message {
    name: "SecurityContext",
    fields: &[
        on_wire(1, "capabilities", FieldKind::Message(&CAPABILITIES)),
        on_wire(2, "privileged", Bool),
        on_wire(3, "seLinuxOptions", FieldKind::Message(&SE_LINUX_OPTIONS)),
        on_wire(10, "windowsOptions", FieldKind::Message(&WINDOWS_SECURITY_CONTEXT_OPTIONS)),
        on_wire(4, "runAsUser", Int64),
        on_wire(8, "runAsGroup", Int64),
        on_wire(5, "runAsNonRoot", Bool),
        on_wire(6, "readOnlyRootFilesystem", Bool),
        on_wire(7, "allowPrivilegeEscalation", Bool),
        on_wire(9, "procMount", String),
        on_wire(11, "seccompProfile", FieldKind::Message(&SECCOMP_PROFILE)),
        on_wire(12, "appArmorProfile", FieldKind::Message(&APP_ARMOR_PROFILE)),
    ],
};

static POD_SECURITY_CONTEXT: Message = Message {
    name: "PodSecurityContext",
    fields: &[
        on_wire(1, "seLinuxOptions", FieldKind::Message(&SE_LINUX_OPTIONS)),
        on_wire(8, "windowsOptions", FieldKind::Message(&WINDOWS_SECURITY_CONTEXT_OPTIONS)),
        on_wire(2, "runAsUser", Int64),
        on_wire(6, "runAsGroup", Int64),
        on_wire(3, "runAsNonRoot", Bool),
        list(4, "supplementalGroups", Int64),
        on_wire(12, "supplementalGroupsPolicy", String),
        on_wire(5, "fsGroup", Int64),
        list(7, "sysctls", FieldKind::Message(&SYSCTL)),
        on_wire(9, "fsGroupChangePolicy", String),
        on_wire(10, "seccompProfile", FieldKind::Message(&SECCOMP_PROFILE)),
        on_wire(11, "appArmorProfile", FieldKind::Message(&APP_ARMOR_PROFILE)),
        on_wire(13, "seLinuxChangePolicy", String),
    ],
};

static CAPABILITIES: Message =
    Message { name: "Capabilities", fields: &[list(1, "add", String), list(2, "drop", String)] };

static SE_LINUX_OPTIONS: Message = Message {
    name: "SELinuxOptions",
    fields: &[
        non_zero(1, "user", String),
        non_zero(2, "role", String),
        non_zero(3, "type", String),
        non_zero(4, "level", String),
    ],
};

static WINDOWS_SECURITY_CONTEXT_OPTIONS: Message = Message {
    name: "WindowsSecurityContextOptions",
    fields: &[
        on_wire(1, "gmsaCredentialSpecName", String),
        on_wire(2, "gmsaCredentialSpec", String),
        on_wire(3, "runAsUserName", String),
        on_wire(4, "hostProcess", Bool),
    ],
};

static SECCOMP_PROFILE: Message =
    Message { name: "SeccompProfile", fields: &[on_wire(1, "type", String), on_wire(2, "localhostProfile", String)] };

static APP_ARMOR_PROFILE: Message =
    Message { name: "AppArmorProfile", fields: &[on_wire(1, "type", String), on_wire(2, "localhostProfile", String)] };

static SYSCTL: Message = Message { name: "Sysctl", fields: &[on_wire(1, "name", String), on_wire(2, "value", String)] };

static AFFINITY: Message = Message {
    name: "Affinity",
    fields: &[
        on_wire(1, "nodeAffinity", FieldKind::Message(&NODE_AFFINITY)),
        on_wire(2, "podAffinity", FieldKind::Message(&POD_AFFINITY)),
        on_wire(3, "podAntiAffinity", FieldKind::Message(&POD_AFFINITY)),
    ],
};

static NODE_AFFINITY: Message = Message {
    name: "NodeAffinity",
    fields: &[
        on_wire(1, "requiredDuringSchedulingIgnoredDuringExecution", FieldKind::Message(&NODE_SELECTOR)),
        list(2, "preferredDuringSchedulingIgnoredDuringExecution", FieldKind::Message(&PREFERRED_SCHEDULING_TERM)),
    ],
};

static NODE_SELECTOR: Message =
    Message { name: "NodeSelector", fields: &[list(1, "nodeSelectorTerms", FieldKind::Message(&NODE_SELECTOR_TERM))] };

static NODE_SELECTOR_TERM: Message = Message {
    name: "NodeSelectorTerm",
    fields: &[
        list(1, "matchExpressions", FieldKind::Message(&NODE_SELECTOR_REQUIREMENT)),
        list(2, "matchFields", FieldKind::Message(&NODE_SELECTOR_REQUIREMENT)),
    ],
};

static NODE_SELECTOR_REQUIREMENT: Message = Message {
    name: "NodeSelectorRequirement",
    fields: &[on_wire(1, "key", String), on_wire(2, "operator", String), list(3, "values", String)],
};

static PREFERRED_SCHEDULING_TERM: Message = Message {
    name: "PreferredSchedulingTerm",
    fields: &[on_wire(1, "weight", Int32), on_wire(2, "preference", FieldKind::Message(&NODE_SELECTOR_TERM))],
};

/// PodAffinity and PodAntiAffinity share one message shape.
static POD_AFFINITY: Message = Message {
    name: "PodAffinity",
    fields: &[
        list(1, "requiredDuringSchedulingIgnoredDuringExecution", FieldKind::Message(&POD_AFFINITY_TERM)),
        list(2, "preferredDuringSchedulingIgnoredDuringExecution", FieldKind::Message(&WEIGHTED_POD_AFFINITY_TERM)),
    ],
};

static POD_AFFINITY_TERM: Message = Message {
    name: "PodAffinityTerm",
    fields: &[
        on_wire(1, "labelSelector", FieldKind::Message(&LABEL_SELECTOR)),
        list(2, "namespaces", String),
        on_wire(3, "topologyKey", String),
        on_wire(4, "namespaceSelector", FieldKind::Message(&LABEL_SELECTOR)),
        list(5, "matchLabelKeys", String),
        list(6, "mismatchLabelKeys", String),
    ],
};

static WEIGHTED_POD_AFFINITY_TERM: Message = Message {
    name: "WeightedPodAffinityTerm",
    fields: &[on_wire(1, "weight", Int32), on_wire(2, "podAffinityTerm", FieldKind::Message(&POD_AFFINITY_TERM))],
};

static TOLERATION: Message = Message {
    name: "Toleration",
    fields: &[
        non_zero(1, "key", String),
        non_zero(2, "operator", String),
        non_zero(3, "value", String),
        non_zero(4, "effect", String),
        on_wire(5, "tolerationSeconds", Int64),
    ],
};

static HOST_ALIAS: Message =
    Message { name: "HostAlias", fields: &[on_wire(1, "ip", String), list(2, "hostnames", String)] };

static POD_DNS_CONFIG: Message = Message {
    name: "PodDNSConfig",
    fields: &[
        list(1, "nameservers", String),
        list(2, "searches", String),
        list(3, "options", FieldKind::Message(&POD_DNS_CONFIG_OPTION)),
    ],
};

static POD_DNS_CONFIG_OPTION: Message =
    Message { name: "PodDNSConfigOption", fields: &[non_zero(1, "name", String), on_wire(2, "value", String)] };

static POD_READINESS_GATE: Message =
    Message { name: "PodReadinessGate", fields: &[on_wire(1, "conditionType", String)] };

static TOPOLOGY_SPREAD_CONSTRAINT: Message = Message {
    name: "TopologySpreadConstraint",
    fields: &[
        on_wire(1, "maxSkew", Int32),
        on_wire(2, "topologyKey", String),
        on_wire(3, "whenUnsatisfiable", String),
        on_wire(4, "labelSelector", FieldKind::Message(&LABEL_SELECTOR)),
        on_wire(5, "minDomains", Int32),
        on_wire(6, "nodeAffinityPolicy", String),
        on_wire(7, "nodeTaintsPolicy", String),
        list(8, "matchLabelKeys", String),
    ],
};

static POD_OS: Message = Message { name: "PodOS", fields: &[on_wire(1, "name", String)] };

static POD_SCHEDULING_GATE: Message = Message { name: "PodSchedulingGate", fields: &[on_wire(1, "name", String)] };

static POD_RESOURCE_CLAIM: Message = Message {
    name: "PodResourceClaim",
    fields: &[
        on_wire(1, "name", String),
        on_wire(3, "resourceClaimName", String),
        on_wire(4, "resourceClaimTemplateName", String),
    ],
};

// core/v1 volumes. Volume's source is an embedded struct: its one set field sits next to `name`.

static VOLUME: Message = Message {
    name: "Volume",
    fields: &[on_wire(1, "name", String), on_wire(2, "volumeSource", Inline(&VOLUME_SOURCE))],
};

static VOLUME_SOURCE: Message = Message {
    name: "VolumeSource",
    fields: &[
        on_wire(1, "hostPath", FieldKind::Message(&HOST_PATH_VOLUME_SOURCE)),
        on_wire(2, "emptyDir", FieldKind::Message(&EMPTY_DIR_VOLUME_SOURCE)),
        on_wire(6, "secret", FieldKind::Message(&SECRET_VOLUME_SOURCE)),
        on_wire(7, "nfs", FieldKind::Message(&NFS_VOLUME_SOURCE)),
        on_wire(10, "persistentVolumeClaim", FieldKind::Message(&PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE)),
        on_wire(16, "downwardAPI", FieldKind::Message(&DOWNWARD_API_VOLUME_SOURCE)),
        on_wire(19, "configMap", FieldKind::Message(&CONFIG_MAP_VOLUME_SOURCE)),
        on_wire(26, "projected", FieldKind::Message(&PROJECTED_VOLUME_SOURCE)),
        on_wire(30, "image", FieldKind::Message(&IMAGE_VOLUME_SOURCE)),
    ],
};

static HOST_PATH_VOLUME_SOURCE: Message =
    Message { name: "HostPathVolumeSource", fields: &[on_wire(1, "path", String), on_wire(2, "type", String)] };

static EMPTY_DIR_VOLUME_SOURCE: Message = Message {
    name: "EmptyDirVolumeSource",
    fields: &[non_zero(1, "medium", String), on_wire(2, "sizeLimit", Quantity)],
};

static SECRET_VOLUME_SOURCE: Message = Message {
    name: "SecretVolumeSource",
    fields: &[
        non_zero(1, "secretName", String),
        list(2, "items", FieldKind::Message(&KEY_TO_PATH)),
        on_wire(3, "defaultMode", Int32),
        on_wire(4, "optional", Bool),
    ],
};

static NFS_VOLUME_SOURCE: Message = Message {
    name: "NFSVolumeSource",
    fields: &[on_wire(1, "server", String), on_wire(2, "path", String), non_zero(3, "readOnly", Bool)],
};

static PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE: Message = Message {
    name: "PersistentVolumeClaimVolumeSource",
    fields: &[on_wire(1, "claimName", String), non_zero(2, "readOnly", Bool)],
};

static DOWNWARD_API_VOLUME_SOURCE: Message = Message {
    name: "DownwardAPIVolumeSource",
    fields: &[list(1, "items", FieldKind::Message(&DOWNWARD_API_VOLUME_FILE)), on_wire(2, "defaultMode", Int32)],
};

static DOWNWARD_API_VOLUME_FILE: Message = Message {
    name: "DownwardAPIVolumeFile",
    fields: &[
        on_wire(1, "path", String),
        on_wire(2, "fieldRef", FieldKind::Message(&OBJECT_FIELD_SELECTOR)),
        on_wire(3, "resourceFieldRef", FieldKind::Message(&RESOURCE_FIELD_SELECTOR)),
        on_wire(4, "mode", Int32),
    ],
};

static CONFIG_MAP_VOLUME_SOURCE: Message = Message {
    name: "ConfigMapVolumeSource",
    fields: &[
        on_wire(1, "localObjectReference", Inline(&LOCAL_OBJECT_REFERENCE)),
        list(2, "items", FieldKind::Message(&KEY_TO_PATH)),
        on_wire(3, "defaultMode", Int32),
        on_wire(4, "optional", Bool),
    ],
};

static KEY_TO_PATH: Message = Message {
    name: "KeyToPath",
    fields: &[on_wire(1, "key", String), on_wire(2, "path", String), on_wire(3, "mode", Int32)],
};

static PROJECTED_VOLUME_SOURCE: Message = Message {
    name: "ProjectedVolumeSource",
    fields: &[list(1, "sources", FieldKind::Message(&VOLUME_PROJECTION)), on_wire(2, "defaultMode", Int32)],
};

static VOLUME_PROJECTION: Message = Message {
    name: "VolumeProjection",
    fields: &[
        on_wire(1, "secret", FieldKind::Message(&SECRET_PROJECTION)),
        on_wire(2, "downwardAPI", FieldKind::Message(&DOWNWARD_API_PROJECTION)),
        on_wire(3, "configMap", FieldKind::Message(&CONFIG_MAP_PROJECTION)),
        on_wire(4, "serviceAccountToken", FieldKind::Message(&SERVICE_ACCOUNT_TOKEN_PROJECTION)),
    ],
};

static SECRET_PROJECTION: Message = Message {
    name: "SecretProjection",
    fields: &[
        on_wire(1, "localObjectReference", Inline(&LOCAL_OBJECT_REFERENCE)),
        list(2, "items", FieldKind::Message(&KEY_TO_PATH)),
        on_wire(4, "optional", Bool),
    ],
};

static DOWNWARD_API_PROJECTION: Message = Message {
    name: "DownwardAPIProjection",
    fields: &[list(1, "items", FieldKind::Message(&DOWNWARD_API_VOLUME_FILE))],
};

static CONFIG_MAP_PROJECTION: Message = Message {
    name: "ConfigMapProjection",
    fields: &[
        on_wire(1, "localObjectReference", Inline(&LOCAL_OBJECT_REFERENCE)),
        list(2, "items", FieldKind::Message(&KEY_TO_PATH)),
        on_wire(4, "optional", Bool),
    ],
};

static SERVICE_ACCOUNT_TOKEN_PROJECTION: Message = Message {
    name: "ServiceAccountTokenProjection",
    fields: &[non_zero(1, "audience", String), on_wire(2, "expirationSeconds", Int64), on_wire(3, "path", String)],
};

static IMAGE_VOLUME_SOURCE: Message = Message {
    name: "ImageVolumeSource",
    fields: &[non_zero(1, "reference", String), non_zero(2, "pullPolicy", String)],
};

static POD_STATUS: Message = Message {
    name: "PodStatus",
    fields: &[
        non_zero(17, "observedGeneration", Int64),
        non_zero(1, "phase", String),
        list(2, "conditions", FieldKind::Message(&POD_CONDITION)),
        non_zero(3, "message", String),
        non_zero(4, "reason", String),
        non_zero(11, "nominatedNodeName", String),
        non_zero(5, "hostIP", String),
        list(16, "hostIPs", FieldKind::Message(&HOST_IP)),
        non_zero(6, "podIP", String),
        list(12, "podIPs", FieldKind::Message(&POD_IP)),
        on_wire(7, "startTime", Time),
        non_zero(9, "qosClass", String),
        non_zero(14, "resize", String),
    ],
};

static POD_CONDITION: Message = Message {
    name: "PodCondition",
    fields: &[
        on_wire(1, "type", String),
        non_zero(7, "observedGeneration", Int64),
        on_wire(2, "status", String),
        non_zero(3, "lastProbeTime", Time),
        non_zero(4, "lastTransitionTime", Time),
        non_zero(5, "reason", String),
        non_zero(6, "message", String),
    ],
};

static HOST_IP: Message = Message { name: "HostIP", fields: &[on_wire(1, "ip", String)] };

static POD_IP: Message = Message { name: "PodIP", fields: &[on_wire(1, "ip", String)] };

// core/v1 Service and ResourceQuota.

static SERVICE: Message = Message {
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
static PORT_STATUS: Message = Message {
    name: "PortStatus",
    fields: &[on_wire(1, "port", Int32), on_wire(2, "protocol", String), on_wire(3, "error", String)],
};

static RESOURCE_QUOTA: Message = Message {
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

// policy/v1 (k8s.io/api/policy/v1/generated.proto).

static POD_DISRUPTION_BUDGET: Message = Message {
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

// networking.k8s.io/v1 (k8s.io/api/networking/v1/generated.proto).

static INGRESS: Message = Message {
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

// autoscaling/v1 (k8s.io/api/autoscaling/v1/generated.proto).

static HORIZONTAL_POD_AUTOSCALER_V1: Message = Message {
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

static HORIZONTAL_POD_AUTOSCALER_V2: Message = Message {
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
    use super::{FieldKind, Message, KINDS};
    use crate::protobuf::message_for;
    use crate::protobuf::tests::{decode, fresh_meta, Enc};
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
