//! Well-known names that are wire contracts between Atoll's processes, kcp clients and
//! stored objects: annotations, finalizers, system logical clusters and groups.
//!
//! Each is written here once. A name another process or a stored object depends on is a
//! contract: spelling it twice lets the copies drift apart silently (a proxy writing one
//! annotation and a shard reading another compiles and runs, and is wrong).
//! Group/version/kind/resource names of Atoll's own kinds live with the kinds, in
//! [`crate::types`]; the replication annotations here are read by [`crate::replication`].

/// Annotation holding a logical cluster's canonical path (`root:org:team`), on its
/// LogicalCluster, its Workspace and every object replicated to a cache.
pub const PATH_ANNOTATION: &str = "kcp.io/path";

/// Annotation naming the logical cluster an object lives in, on objects served through
/// wildcard (`/clusters/*/…`) endpoints and on replicas.
pub const CLUSTER_ANNOTATION: &str = "kcp.io/cluster";

/// Annotation on a Workspace and its LogicalCluster: the creator, as kcp's
/// `authentication.k8s.io/v1` UserInfo JSON ([`crate::types::Owner`]). Shards read it as
/// a grant of cluster-admin in that logical cluster.
pub const OWNER_ANNOTATION: &str = "experimental.tenancy.kcp.io/owner";

/// Annotation on a LogicalCluster naming the WorkspaceType its Workspace was created with.
pub const WORKSPACE_TYPE_ANNOTATION: &str = "tenancy.kcp.io/workspace-type";

/// Annotation the scheduler writes on a Workspace with the logical-cluster name it chose,
/// before that cluster exists.
pub const SCHEDULED_CLUSTER_ANNOTATION: &str = "internal.tenancy.kcp.io/cluster";

/// Annotation the scheduler writes on a Workspace with the shard it chose for the
/// logical cluster.
pub const SCHEDULED_SHARD_ANNOTATION: &str = "internal.tenancy.kcp.io/shard";

/// Annotation carrying an APIExport's identity hash on the objects derived from it.
pub const IDENTITY_ANNOTATION: &str = "apis.kcp.io/identity-hash";

/// Annotation naming the APIResourceSchema a bound CustomResourceDefinition was made from.
pub const SCHEMA_ANNOTATION: &str = "apis.kcp.io/schema";

/// Objects of a resource annotated with this are replicated when
/// [`crate::replication::REPLICATED`] says so.
pub const REPLICATE_ANNOTATION: &str = "internal.kcp.io/replicate";

/// The annotation a replica carries with its origin's `metadata.resourceVersion` (a
/// replica's own resourceVersion is the cache's).
pub const SOURCE_RV_ANNOTATION: &str = "atoll.io/source-resource-version";

/// The annotation a replica carries with its origin shard's name.
pub const ORIGIN_ANNOTATION: &str = "atoll.io/origin-shard";

/// Finalizer that holds a LogicalCluster until its contents are gone.
pub const LOGICAL_CLUSTER_FINALIZER: &str = "core.kcp.io/logicalcluster-deletion";

/// Finalizer that holds a Workspace until its logical cluster is gone.
pub const WORKSPACE_FINALIZER: &str = "tenancy.kcp.io/workspace-deletion";

/// The system logical cluster that holds the CustomResourceDefinitions of bound APIs.
pub const BOUND_CRDS_CLUSTER: &str = "system:bound-crds";

/// The group whose members may do anything, in every logical cluster.
pub const MASTERS_GROUP: &str = "system:masters";

/// Kubernetes' group for scrapers and probes (kube binds it to the `system:monitoring`
/// ClusterRole: `get` on `/metrics` and the health endpoints): its members may read a
/// shard's `/metrics` without being `system:masters`.
pub const MONITORING_GROUP: &str = "system:monitoring";
