//! LogicalCluster (`core.kcp.io/v1alpha1`): the object through which a logical cluster
//! describes itself, its owner and its lifecycle phase.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ListMeta, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{api_version, impl_cluster_scoped_kind, is_default, kind, list_kind};

/// API group of [`LogicalCluster`] and [`super::Shard`].
pub const CORE_KCP_GROUP: &str = "core.kcp.io";
/// API version of [`LogicalCluster`] and [`super::Shard`] within [`CORE_KCP_GROUP`].
pub const CORE_KCP_VERSION: &str = "v1alpha1";
/// `apiVersion` carried by [`LogicalCluster`] objects.
pub const LOGICAL_CLUSTER_API_VERSION: &str = "core.kcp.io/v1alpha1";
/// Kind of [`LogicalCluster`].
pub const LOGICAL_CLUSTER_KIND: &str = "LogicalCluster";
/// Kind of [`LogicalClusterList`].
pub const LOGICAL_CLUSTER_LIST_KIND: &str = "LogicalClusterList";
/// Plural resource name of [`LogicalCluster`]; it is cluster-scoped.
pub const LOGICAL_CLUSTER_RESOURCE: &str = "logicalclusters";
/// The one name a LogicalCluster object may have inside its logical cluster (kcp's
/// singleton convention: each logical cluster describes itself as `cluster`).
pub const LOGICAL_CLUSTER_NAME: &str = "cluster";

/// Phase while the scheduler places the logical cluster on a shard.
pub const PHASE_SCHEDULING: &str = "Scheduling";
/// Phase while initializers listed in `status.initializers` are still pending.
pub const PHASE_INITIALIZING: &str = "Initializing";
/// Phase once the logical cluster serves requests.
pub const PHASE_READY: &str = "Ready";
/// Phase when the logical cluster exists but cannot serve requests (e.g. its shard is
/// gone); kcp added it after v1alpha1 first shipped, so older objects never carry it.
pub const PHASE_UNAVAILABLE: &str = "Unavailable";
/// Every phase `status.phase` of a LogicalCluster or Workspace may hold, in lifecycle order.
pub const PHASES: [&str; 4] = [PHASE_SCHEDULING, PHASE_INITIALIZING, PHASE_READY, PHASE_UNAVAILABLE];

/// LogicalCluster describes the logical cluster it lives in. It is used to authorize
/// requests to the logical cluster and to track its lifecycle. Every logical cluster holds
/// exactly one, named "cluster".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.core.v1alpha1.LogicalCluster")]
pub struct LogicalCluster {
    /// APIVersion defines the versioned schema of this representation of an object. Servers
    /// should convert recognized schemas to the latest internal value, and may reject
    /// unrecognized values. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources
    #[serde(default = "api_version::<LogicalCluster>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents. Servers
    /// may infer this from the endpoint the client submits requests to. Cannot be updated. In
    /// CamelCase. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds
    #[serde(default = "kind::<LogicalCluster>")]
    pub kind: String,
    /// Standard object's metadata. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// spec holds the desired state of the logical cluster: who owns it, whether it may be
    /// deleted from inside, and which initializers must run before it becomes ready.
    #[serde(default)]
    pub spec: LogicalClusterSpec,
    /// status holds the observed state of the logical cluster: its phase, the URL it is
    /// served at, conditions and the initializers that have not finished yet.
    #[serde(default)]
    pub status: LogicalClusterStatus,
}

/// LogicalClusterSpec is the desired state of a LogicalCluster.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.core.v1alpha1.LogicalClusterSpec")]
pub struct LogicalClusterSpec {
    /// directlyDeletable indicates that this logical cluster can be deleted by a user from
    /// inside it, by deleting its LogicalCluster object. When false, only deleting the
    /// owning Workspace deletes the logical cluster.
    #[serde(default, skip_serializing_if = "is_default")]
    pub directly_deletable: bool,
    /// owner is a reference to the resource controlling the life-cycle of this logical
    /// cluster, usually a Workspace in the parent logical cluster. When the LogicalCluster is
    /// deleted, the finalizer core.kcp.io/logicalcluster is removed from the owner; when the
    /// LogicalCluster is deleted but the owner is not, the owner is deleted too.
    // The schema uses the plain owner type: kube never marks optional fields `nullable`, and
    // a `nullable` here would make `kubectl explain` and validators differ from kcp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "LogicalClusterOwner")]
    pub owner: Option<LogicalClusterOwner>,
    /// initializers are set on creation by the system and copied to status when
    /// initialization starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub initializers: Vec<String>,
}

/// LogicalClusterOwner is a reference to the resource controlling the life-cycle of a
/// LogicalCluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.core.v1alpha1.LogicalClusterOwner")]
pub struct LogicalClusterOwner {
    /// apiVersion is the group and API version of the owner, e.g. tenancy.kcp.io/v1alpha1.
    pub api_version: String,
    /// resource is the plural API resource of the owner, e.g. workspaces.
    pub resource: String,
    /// name is the name of the owner.
    pub name: String,
    /// namespace is the namespace of the owner; empty for cluster-scoped owners.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// cluster is the name of the logical cluster in which the owner is located.
    pub cluster: String,
    /// uid is the UID of the owner. It tells a re-created owner of the same name apart from
    /// the one this logical cluster was created for.
    pub uid: String,
}

/// LogicalClusterStatus is the observed state of a LogicalCluster.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.core.v1alpha1.LogicalClusterStatus")]
pub struct LogicalClusterStatus {
    /// URL is the address under which the Kubernetes-cluster-like endpoint of this logical
    /// cluster can be found. It can be used to access the logical cluster with standard
    /// Kubernetes client libraries and command line tools.
    #[serde(rename = "URL", default, skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// phase of the logical cluster: Scheduling, Initializing, Ready or Unavailable.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = PHASES))]
    pub phase: String,
    /// conditions describe the current processing state of the LogicalCluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// initializers are set on creation by the system and must be cleared by a controller
    /// before the logical cluster can be used. The LogicalCluster stays in phase
    /// Initializing until all initializers are cleared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub initializers: Vec<String>,
}

/// LogicalClusterList is a list of LogicalClusters, as returned by list requests.
// No JsonSchema derive: [`crate::openapi`] builds every list schema the same way from its
// item kind, so a derived one would be a second, diverging source of truth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogicalClusterList {
    /// APIVersion defines the versioned schema of this representation of an object. Servers
    /// should convert recognized schemas to the latest internal value, and may reject
    /// unrecognized values. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources
    #[serde(default = "api_version::<LogicalCluster>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents. Servers
    /// may infer this from the endpoint the client submits requests to. Cannot be updated. In
    /// CamelCase. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds
    #[serde(default = "list_kind::<LogicalCluster>")]
    pub kind: String,
    /// Standard list metadata. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
    #[serde(default)]
    pub metadata: ListMeta,
    /// items is the list of LogicalClusters.
    pub items: Vec<LogicalCluster>,
}

impl_cluster_scoped_kind!(
    LogicalCluster,
    LogicalClusterList {
        group: CORE_KCP_GROUP,
        version: CORE_KCP_VERSION,
        api_version: LOGICAL_CLUSTER_API_VERSION,
        kind: LOGICAL_CLUSTER_KIND,
        list_kind: LOGICAL_CLUSTER_LIST_KIND,
        resource: LOGICAL_CLUSTER_RESOURCE,
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_names_match_kcp() {
        let mut cluster = LogicalCluster::new(ObjectMeta { name: Some("cluster".into()), ..ObjectMeta::default() });
        cluster.spec.directly_deletable = true;
        cluster.spec.owner = Some(LogicalClusterOwner {
            api_version: "tenancy.kcp.io/v1alpha1".into(),
            resource: "workspaces".into(),
            name: "team".into(),
            namespace: String::new(),
            cluster: "root".into(),
            uid: "1234".into(),
        });
        cluster.status.url = "https://shard-1/clusters/abc".into();
        cluster.status.phase = PHASE_READY.into();
        let wire = serde_json::to_value(&cluster).unwrap();
        assert_eq!(
            wire,
            json!({
                "apiVersion": "core.kcp.io/v1alpha1",
                "kind": "LogicalCluster",
                "metadata": {"name": "cluster"},
                "spec": {
                    "directlyDeletable": true,
                    "owner": {
                        "apiVersion": "tenancy.kcp.io/v1alpha1",
                        "resource": "workspaces",
                        "name": "team",
                        "cluster": "root",
                        "uid": "1234"
                    }
                },
                "status": {"URL": "https://shard-1/clusters/abc", "phase": "Ready"}
            })
        );
        let back: LogicalCluster = serde_json::from_value(wire).unwrap();
        assert_eq!(back, cluster);
    }

    #[test]
    fn decoding_fills_type_meta_and_empty_parts() {
        let cluster: LogicalCluster = serde_json::from_value(json!({"metadata": {"name": "cluster"}})).unwrap();
        assert_eq!(cluster.api_version, LOGICAL_CLUSTER_API_VERSION);
        assert_eq!(cluster.kind, LOGICAL_CLUSTER_KIND);
        assert_eq!(cluster.spec, LogicalClusterSpec::default());
        assert_eq!(cluster.status, LogicalClusterStatus::default());
    }
}
