//! The registry rows of the workload kinds, as kube-apiserver serves them: groups,
//! versions, short names, the `all` category, subresources and printer columns.

use super::columns::{self as c, computed, CellFn};
use super::strategy::{AutoscalerV1, Workload};
use apiserver::registry::definition::ScalePaths;
use apiserver::registry::{age_column, builtin, col, strings, wide, Cell, Column, ResourceType};
use k8s_openapi::api::{apps, autoscaling, batch, core, discovery, networking, policy};
use std::sync::Arc;

const AGE: &str = "CreationTimestamp is a timestamp representing the server time when this object was created.";

fn text(name: &'static str, description: &str, f: CellFn) -> Column {
    col(name, "string", description, computed(name, f))
}

fn number(name: &str, description: &str, pointer: &'static str) -> Column {
    col(name, "integer", description, Cell::Pointer(pointer))
}

fn wide_text(name: &'static str, description: &str, f: CellFn) -> Column {
    wide(name, description, computed(name, f))
}

/// The wide `CONTAINERS`, `IMAGES` and `SELECTOR` columns of controllers of pods.
fn template_wide(selector: CellFn) -> Vec<Column> {
    vec![
        wide_text("Containers", "Names of each container in the template.", c::template_containers),
        wide_text("Images", "Images referenced by each container in the template.", c::template_images),
        wide_text("Selector", "Label selector for pods.", selector),
    ]
}

/// `DESIRED`, `CURRENT` and `READY` of ReplicaSets and ReplicationControllers.
fn replica_columns() -> Vec<Column> {
    vec![
        number("Desired", "Number of desired pods.", "/spec/replicas"),
        number("Current", "Number of actually running pods.", "/status/replicas"),
        number("Ready", "Number of pods ready.", "/status/readyReplicas"),
    ]
}

fn scale(selector: Option<&str>) -> Option<ScalePaths> {
    Some(ScalePaths {
        spec_replicas: ".spec.replicas".into(),
        status_replicas: ".status.replicas".into(),
        label_selector: selector.map(str::to_string),
    })
}

/// A workload row: `builtin`'s defaults with the kind's strategy, its `all` category and
/// the status subresource unless told otherwise.
#[allow(clippy::too_many_arguments)]
fn row(
    group: &str,
    version: &str,
    resource: &str,
    kind: &str,
    namespaced: bool,
    schema: &str,
    strategy: Workload,
    short_names: &[&str],
    in_all: bool,
    subresources: &[&str],
    columns: Vec<Column>,
) -> ResourceType {
    let singular = kind.to_lowercase();
    ResourceType {
        short_names: strings(short_names),
        categories: if in_all { strings(&["all"]) } else { Vec::new() },
        subresources: strings(subresources),
        strategy: Arc::new(strategy),
        columns,
        ..builtin(group, version, resource, &singular, kind, namespaced, schema)
    }
}

/// The workload rows every logical cluster serves.
pub fn rows() -> Vec<ResourceType> {
    let status = &["status"][..];
    let scaled = &["scale", "status"][..];
    let mut rows = vec![
        row(
            "",
            "v1",
            "pods",
            "Pod",
            true,
            "io.k8s.api.core.v1.Pod",
            Workload::of::<core::v1::Pod>(false),
            &["po"],
            true,
            status,
            vec![
                text("Ready", "The aggregate readiness state of this pod for accepting traffic.", c::pod_ready),
                text("Status", "The aggregate status of the containers in this pod.", c::pod_status),
                col("Restarts", "string", "The number of times the containers in this pod have been restarted.", computed("Restarts", c::pod_restarts)),
                age_column(),
                wide_text("IP", "IP address allocated to the pod.", c::pod_ip),
                wide_text("Node", "Name of the node where the pod runs.", c::pod_node),
                wide_text("Nominated Node", "Node the scheduler nominated for the pod.", c::pod_nominated_node),
                wide_text("Readiness Gates", "Readiness gates of the pod.", c::pod_readiness_gates),
            ],
        ),
        row(
            "",
            "v1",
            "services",
            "Service",
            true,
            "io.k8s.api.core.v1.Service",
            Workload::of::<core::v1::Service>(false),
            &["svc"],
            true,
            status,
            vec![
                col("Type", "string", "The type of service.", Cell::Pointer("/spec/type")),
                text("Cluster-IP", "The cluster-internal IP of the service.", c::service_cluster_ip),
                text("External-IP", "The external IPs of the service.", c::service_external_ip),
                text("Port(s)", "The ports the service exposes.", c::service_ports),
                age_column(),
                wide_text("Selector", "The service routes traffic to pods with labels matching this selector.", c::map_selector),
            ],
        ),
        row(
            "",
            "v1",
            "endpoints",
            "Endpoints",
            true,
            "io.k8s.api.core.v1.Endpoints",
            Workload::of::<core::v1::Endpoints>(false),
            &["ep"],
            false,
            &[],
            vec![text("Endpoints", "Endpoints of the service.", c::endpoints), age_column()],
        ),
        row(
            "",
            "v1",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            true,
            "io.k8s.api.core.v1.PersistentVolumeClaim",
            Workload::of::<core::v1::PersistentVolumeClaim>(false),
            &["pvc"],
            false,
            status,
            vec![
                text("Status", "The phase of the claim.", c::claim_phase),
                col("Volume", "string", "The volume bound to the claim.", Cell::Pointer("/spec/volumeName")),
                text("Capacity", "The capacity of the bound volume.", c::claim_capacity),
                text("Access Modes", "The access modes of the claim.", c::claim_access_modes),
                col("StorageClass", "string", "The storage class the claim asks for.", Cell::Pointer("/spec/storageClassName")),
                col("VolumeAttributesClass", "string", "The volume attributes class of the claim.", Cell::Pointer("/spec/volumeAttributesClassName")),
                age_column(),
                wide("VolumeMode", "Whether the volume is a file system or a block device.", Cell::Pointer("/spec/volumeMode")),
            ],
        ),
        row(
            "",
            "v1",
            "resourcequotas",
            "ResourceQuota",
            true,
            "io.k8s.api.core.v1.ResourceQuota",
            Workload::of::<core::v1::ResourceQuota>(false),
            &["quota"],
            false,
            status,
            vec![
                age_column(),
                text("Request", "Used and hard amounts of requested resources.", c::quota_requests),
                text("Limit", "Used and hard amounts of limited resources.", c::quota_limits),
            ],
        ),
        row(
            "",
            "v1",
            "limitranges",
            "LimitRange",
            true,
            "io.k8s.api.core.v1.LimitRange",
            Workload::of::<core::v1::LimitRange>(false),
            &["limits"],
            false,
            &[],
            vec![col("Created At", "date", AGE, Cell::CreatedAt)],
        ),
        row(
            "",
            "v1",
            "podtemplates",
            "PodTemplate",
            true,
            "io.k8s.api.core.v1.PodTemplate",
            Workload::of::<core::v1::PodTemplate>(false),
            &[],
            false,
            &[],
            vec![
                text("Containers", "Names of each container in the template.", c::pod_template_containers),
                text("Images", "Images referenced by each container in the template.", c::pod_template_images),
                text("Pod Labels", "The labels of the pod template.", c::pod_template_labels),
            ],
        ),
        row(
            "",
            "v1",
            "replicationcontrollers",
            "ReplicationController",
            true,
            "io.k8s.api.core.v1.ReplicationController",
            Workload::of::<core::v1::ReplicationController>(true),
            &["rc"],
            true,
            scaled,
            [replica_columns(), vec![age_column()], template_wide(c::map_selector)].concat(),
        ),
        row(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            true,
            "io.k8s.api.apps.v1.Deployment",
            Workload::of::<apps::v1::Deployment>(true),
            &["deploy"],
            true,
            scaled,
            [
                vec![
                    text("Ready", "Number of the pod with ready state.", c::ready_of_replicas),
                    number("Up-to-date", "Total number of non-terminated pods targeted by this deployment that have the desired template spec.", "/status/updatedReplicas"),
                    number("Available", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.", "/status/availableReplicas"),
                    age_column(),
                ],
                template_wide(c::spec_selector),
            ]
            .concat(),
        ),
        row(
            "apps",
            "v1",
            "replicasets",
            "ReplicaSet",
            true,
            "io.k8s.api.apps.v1.ReplicaSet",
            Workload::of::<apps::v1::ReplicaSet>(true),
            &["rs"],
            true,
            scaled,
            [replica_columns(), vec![age_column()], template_wide(c::spec_selector)].concat(),
        ),
        row(
            "apps",
            "v1",
            "statefulsets",
            "StatefulSet",
            true,
            "io.k8s.api.apps.v1.StatefulSet",
            Workload::of::<apps::v1::StatefulSet>(true),
            &["sts"],
            true,
            scaled,
            vec![
                text("Ready", "Number of the pod with ready state.", c::ready_of_replicas),
                age_column(),
                wide_text("Containers", "Names of each container in the template.", c::template_containers),
                wide_text("Images", "Images referenced by each container in the template.", c::template_images),
            ],
        ),
        row(
            "apps",
            "v1",
            "daemonsets",
            "DaemonSet",
            true,
            "io.k8s.api.apps.v1.DaemonSet",
            Workload::of::<apps::v1::DaemonSet>(true),
            &["ds"],
            true,
            status,
            [
                vec![
                    number("Desired", "The total number of nodes that should be running the daemon pod.", "/status/desiredNumberScheduled"),
                    number("Current", "The number of nodes running at least one daemon pod.", "/status/currentNumberScheduled"),
                    number("Ready", "The number of nodes running the daemon pod ready.", "/status/numberReady"),
                    number("Up-to-date", "The number of nodes running the updated daemon pod.", "/status/updatedNumberScheduled"),
                    number("Available", "The number of nodes running the daemon pod available.", "/status/numberAvailable"),
                    text("Node Selector", "The node selector of the daemon pods.", node_selector),
                    age_column(),
                ],
                template_wide(c::spec_selector),
            ]
            .concat(),
        ),
        row(
            "apps",
            "v1",
            "controllerrevisions",
            "ControllerRevision",
            true,
            "io.k8s.api.apps.v1.ControllerRevision",
            Workload::of::<apps::v1::ControllerRevision>(false),
            &[],
            false,
            &[],
            vec![
                text("Controller", "The controller of the revision.", c::revision_controller),
                number("Revision", "The revision number.", "/revision"),
                age_column(),
            ],
        ),
        row(
            "batch",
            "v1",
            "jobs",
            "Job",
            true,
            "io.k8s.api.batch.v1.Job",
            Workload::of::<batch::v1::Job>(true),
            &[],
            true,
            status,
            [
                vec![
                    text("Status", "Status of the job.", c::job_status),
                    text("Completions", "The completion status of the job.", c::job_completions),
                    text("Duration", "Time required to complete the job.", c::job_duration),
                    age_column(),
                ],
                template_wide(c::spec_selector),
            ]
            .concat(),
        ),
        row(
            "batch",
            "v1",
            "cronjobs",
            "CronJob",
            true,
            "io.k8s.api.batch.v1.CronJob",
            Workload::of::<batch::v1::CronJob>(true),
            &["cj"],
            true,
            status,
            vec![
                col("Schedule", "string", "The schedule in Cron format.", Cell::Pointer("/spec/schedule")),
                text("Timezone", "The time zone of the schedule.", c::cron_time_zone),
                text("Suspend", "Whether the cron job is suspended.", c::cron_suspend),
                text("Active", "The number of currently running jobs.", c::cron_active),
                text("Last Schedule", "When the job was last successfully scheduled.", c::cron_last_schedule),
                age_column(),
                wide_text("Containers", "Names of each container in the template.", c::cron_containers),
                wide_text("Images", "Images referenced by each container in the template.", c::cron_images),
                wide_text("Selector", "Label selector for pods.", job_template_selector),
            ],
        ),
        row(
            "networking.k8s.io",
            "v1",
            "ingresses",
            "Ingress",
            true,
            "io.k8s.api.networking.v1.Ingress",
            Workload::of::<networking::v1::Ingress>(true),
            &["ing"],
            false,
            status,
            vec![
                text("Class", "The name of the ingress class.", c::ingress_class),
                text("Hosts", "Hosts the ingress routes.", c::ingress_hosts),
                text("Address", "Address of the ingress.", c::ingress_address),
                text("Ports", "Ports of the ingress.", c::ingress_ports),
                age_column(),
            ],
        ),
        row(
            "networking.k8s.io",
            "v1",
            "ingressclasses",
            "IngressClass",
            false,
            "io.k8s.api.networking.v1.IngressClass",
            Workload::of::<networking::v1::IngressClass>(false),
            &[],
            false,
            &[],
            vec![
                col("Controller", "string", "The controller implementing the class.", Cell::Pointer("/spec/controller")),
                text("Parameters", "The parameters of the class.", c::ingress_class_parameters),
                age_column(),
            ],
        ),
        row(
            "networking.k8s.io",
            "v1",
            "networkpolicies",
            "NetworkPolicy",
            true,
            "io.k8s.api.networking.v1.NetworkPolicy",
            Workload::of::<networking::v1::NetworkPolicy>(true),
            &["netpol"],
            false,
            &[],
            vec![text("Pod-Selector", "The pods the policy applies to.", c::pod_selector), age_column()],
        ),
        row(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            true,
            "io.k8s.api.policy.v1.PodDisruptionBudget",
            Workload::of::<policy::v1::PodDisruptionBudget>(true),
            &["pdb"],
            false,
            status,
            vec![
                text("Min Available", "The minimum number of pods that must be available.", c::pdb_min_available),
                text("Max Unavailable", "The maximum number of pods that may be unavailable.", c::pdb_max_unavailable),
                number("Allowed Disruptions", "How many pods may be disrupted now.", "/status/disruptionsAllowed"),
                age_column(),
            ],
        ),
        row(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            true,
            "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
            Workload::of::<autoscaling::v2::HorizontalPodAutoscaler>(false),
            &["hpa"],
            true,
            status,
            hpa_columns(c::hpa_targets),
        ),
        row(
            "discovery.k8s.io",
            "v1",
            "endpointslices",
            "EndpointSlice",
            true,
            "io.k8s.api.discovery.v1.EndpointSlice",
            Workload::of::<discovery::v1::EndpointSlice>(false),
            &[],
            false,
            &[],
            vec![
                col("AddressType", "string", "The type of the addresses.", Cell::Pointer("/addressType")),
                text("Ports", "The ports of the slice.", c::slice_ports),
                text("Endpoints", "The addresses of the slice.", c::slice_endpoints),
                age_column(),
            ],
        ),
    ];
    rows.push(ResourceType {
        strategy: Arc::new(AutoscalerV1(Workload::of::<autoscaling::v1::HorizontalPodAutoscaler>(false))),
        columns: hpa_columns(hpa_v1_targets),
        schema_name: "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler".into(),
        version: "v1".into(),
        ..rows.iter().find(|r| r.resource == "horizontalpodautoscalers").expect("v2 row").clone()
    });
    for row in &mut rows {
        // kube's pod, service and claim storage answer a delete with the object.
        row.return_deleted_object =
            row.group.is_empty() && matches!(row.resource.as_str(), "pods" | "services" | "persistentvolumeclaims");
        row.scale = match (row.group.as_str(), row.resource.as_str()) {
            ("", "replicationcontrollers") => scale(Some(".spec.selector")),
            ("apps", "deployments" | "replicasets" | "statefulsets") => scale(Some(".spec.selector")),
            _ => None,
        };
    }
    rows
}

fn hpa_columns(targets: CellFn) -> Vec<Column> {
    vec![
        text("Reference", "The target of the autoscaler.", c::hpa_reference),
        text("Targets", "Current and target values of the metrics.", targets),
        col("MinPods", "string", "Lower limit of the number of pods.", computed("MinPods", c::hpa_min_pods)),
        number("MaxPods", "Upper limit of the number of pods.", "/spec/maxReplicas"),
        number("Replicas", "Current number of pods.", "/status/currentReplicas"),
        age_column(),
    ]
}

/// `TARGETS` of an autoscaling/v1 autoscaler, read from its one CPU target.
fn hpa_v1_targets(object: &serde_json::Value, _: jiff::Timestamp) -> serde_json::Value {
    let target = object.pointer("/spec/targetCPUUtilizationPercentage").and_then(serde_json::Value::as_i64);
    let current = object.pointer("/status/currentCPUUtilizationPercentage").and_then(serde_json::Value::as_i64);
    let current = current.map_or_else(|| "<unknown>".to_string(), |p| format!("{p}%"));
    serde_json::Value::from(match target {
        Some(target) => format!("cpu: {current}/{target}%"),
        None => "<none>".to_string(),
    })
}

/// A DaemonSet's `NODE SELECTOR`: its template's node selector.
fn node_selector(object: &serde_json::Value, _: jiff::Timestamp) -> serde_json::Value {
    let selector = object.pointer("/spec/template/spec/nodeSelector").and_then(serde_json::Value::as_object);
    let mut pairs: Vec<String> = selector
        .map(|m| m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect())
        .unwrap_or_default();
    pairs.sort();
    serde_json::Value::from(if pairs.is_empty() { "<none>".to_string() } else { pairs.join(",") })
}

/// A CronJob's `SELECTOR` (wide): its job template's selector.
fn job_template_selector(object: &serde_json::Value, now: jiff::Timestamp) -> serde_json::Value {
    let template = object.pointer("/spec/jobTemplate").cloned().unwrap_or_default();
    c::spec_selector(&template, now)
}
