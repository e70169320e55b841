//! core/v1 Pod and PodTemplateSpec: PodSpec and all it holds but volumes (in [`super::pod_volumes`]),
//! such as containers, env, resources, probes, security contexts and affinity; and PodStatus.

use super::pod_volumes::VOLUME;
use super::{OBJECT_FIELD_SELECTOR, RESOURCE_FIELD_SELECTOR};
use crate::protobuf::tables::{LABEL_SELECTOR, LOCAL_OBJECT_REFERENCE, OBJECT_META};
use crate::protobuf::FieldKind::{self, Bool, Inline, Int32, Int64, IntOrString, QuantityMap, String, StringMap, Time};
use crate::protobuf::{list, non_zero, on_wire, Message};

// core/v1 (k8s.io/api/core/v1/generated.proto): Pod and what it holds.

pub(super) static POD: Message = Message {
    name: "Pod",
    fields: &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        non_zero(2, "spec", FieldKind::Message(&POD_SPEC)),
        non_zero(3, "status", FieldKind::Message(&POD_STATUS)),
    ],
};

pub(super) static POD_TEMPLATE_SPEC: Message = Message {
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
