//! Typed structs of Atoll's own API groups.
//!
//! Built-in Kubernetes kinds come from `k8s-openapi`; the kinds defined here are Atoll's
//! (kcp's) own. They derive `schemars::JsonSchema` so that [`crate::openapi`] publishes
//! their schemas next to the built-in ones: the doc comments on fields become the
//! descriptions `kubectl explain` prints, so they are written for users, not for us.
//!
//! Field names follow kcp's `core.kcp.io/v1alpha1`, `tenancy.kcp.io/v1alpha1`,
//! `apis.kcp.io/v1alpha1` and (TMC, as of kcp v0.11) `workload.kcp.io/v1alpha1` and
//! `scheduling.kcp.io/v1alpha1` exactly, so kcp clients and manifests work unchanged. One
//! file per kind family:
//! - `logical_cluster`: [`LogicalCluster`], what a logical cluster says about itself.
//! - `workspace`: [`Workspace`] and [`WorkspaceType`], how users create logical clusters
//!   in a tree and what kinds of workspace they may create where.
//! - `owner`: [`Owner`], the creator record a workspace's owner annotation holds.
//! - `shard`: [`Shard`], one Atoll server process logical clusters are placed on.
//! - `apis`: [`ApiExport`], [`ApiResourceSchema`], [`ApiExportEndpointSlice`] and
//!   [`ApiBinding`] (`apis.kcp.io/v1alpha1`), how workspaces publish and bind APIs.
//! - `workload`: [`SyncTarget`] (`workload.kcp.io/v1alpha1`, kcp v0.11's TMC), a physical
//!   cluster workloads are synced to, and the labels, annotations and finalizers of syncing.
//! - `scheduling`: [`Location`] and [`Placement`] (`scheduling.kcp.io/v1alpha1`, kcp v0.11's
//!   TMC), how namespaces choose a set of SyncTargets to be scheduled to.
//!
//! Every kind has a `<Kind>List` without a schema of its own: [`crate::openapi`] derives
//! all list schemas from their item kind.

// Field doc comments are published verbatim as OpenAPI descriptions, where kube writes
// bare URLs; angle brackets would show up in `kubectl explain`.
#![allow(rustdoc::bare_urls)]

mod apis;
mod logical_cluster;
mod owner;
mod scheduling;
mod shard;
mod workload;
mod workspace;

pub use apis::*;
pub use logical_cluster::*;
pub use owner::Owner;
pub use scheduling::*;
pub use shard::*;
pub use workload::*;
pub use workspace::*;

/// Serde default of `apiVersion`, so objects decoded without type meta still carry it.
fn api_version<R: k8s_openapi::Resource>() -> String {
    R::API_VERSION.to_owned()
}

/// Serde default of `kind` of an object.
fn kind<R: k8s_openapi::Resource>() -> String {
    R::KIND.to_owned()
}

/// Serde default of `kind` of a list; the list is named after its item type `R`.
fn list_kind<R: k8s_openapi::ListableResource>() -> String {
    R::LIST_KIND.to_owned()
}

/// Whether `value` is its type's default: fields kcp marks `omitempty` are left out of
/// the wire form then, so objects round-trip byte-for-byte with kcp's.
fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// Implements what every kind here shares, so no kind can get one of them subtly wrong:
/// `new` and `Default` for the kind and its list, and the k8s-openapi traits that let
/// kube-rs clients (`kube::Api<Workspace>`) address the resource without a hand-written
/// `ApiResource`. The kind must have the fields `api_version`, `kind`, `metadata`, `spec`
/// and `status` (spec and status implementing `Default`), the list `api_version`, `kind`,
/// `metadata` and `items`.
macro_rules! impl_cluster_scoped_kind {
    ($kind:ident, $list:ident {
        group: $group:expr,
        version: $version:expr,
        api_version: $api_version:expr,
        kind: $kind_name:expr,
        list_kind: $list_kind:expr,
        resource: $resource:expr $(,)?
    }) => {
        // Paths are spelled out: a macro's item paths resolve where it is invoked.
        impl $kind {
            /// An object of this kind with the given metadata and empty spec and status,
            /// carrying the right `apiVersion` and `kind`.
            pub fn new(metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Self {
                Self {
                    api_version: $crate::types::api_version::<Self>(),
                    kind: $crate::types::kind::<Self>(),
                    metadata,
                    spec: Default::default(),
                    status: Default::default(),
                }
            }
        }

        impl Default for $kind {
            fn default() -> Self {
                Self::new(Default::default())
            }
        }

        impl Default for $list {
            fn default() -> Self {
                Self {
                    api_version: $crate::types::api_version::<$kind>(),
                    kind: $crate::types::list_kind::<$kind>(),
                    metadata: Default::default(),
                    items: Vec::new(),
                }
            }
        }

        impl k8s_openapi::Resource for $kind {
            const API_VERSION: &'static str = $api_version;
            const GROUP: &'static str = $group;
            const KIND: &'static str = $kind_name;
            const VERSION: &'static str = $version;
            const URL_PATH_SEGMENT: &'static str = $resource;
            type Scope = k8s_openapi::ClusterResourceScope;
        }

        impl k8s_openapi::ListableResource for $kind {
            const LIST_KIND: &'static str = $list_kind;
        }

        impl k8s_openapi::Metadata for $kind {
            type Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

            fn metadata(&self) -> &Self::Ty {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.metadata
            }
        }
    };
}
use impl_cluster_scoped_kind;

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::{ListableResource, Resource};
    use serde_json::json;

    /// Asserts that the constants of kind `R` agree with each other, with kcp's names and
    /// with the wire form of a fresh object and list.
    fn assert_kind<R, L>(api_version: &str, resource: &str)
    where
        R: Resource + ListableResource + Default + serde::Serialize,
        L: Default + serde::Serialize,
    {
        assert_eq!(R::API_VERSION, api_version);
        assert_eq!(R::API_VERSION, format!("{}/{}", R::GROUP, R::VERSION));
        assert_eq!(R::LIST_KIND, format!("{}List", R::KIND));
        assert_eq!(R::URL_PATH_SEGMENT, resource);
        let object = serde_json::to_value(R::default()).unwrap();
        assert_eq!(object["apiVersion"], R::API_VERSION);
        assert_eq!(object["kind"], R::KIND);
        let list = serde_json::to_value(L::default()).unwrap();
        assert_eq!(list["apiVersion"], R::API_VERSION);
        assert_eq!(list["kind"], R::LIST_KIND);
        assert_eq!(list["items"], json!([]), "items is always present, as in kube's lists");
    }

    #[test]
    fn kinds_match_kcp() {
        assert_kind::<LogicalCluster, LogicalClusterList>("core.kcp.io/v1alpha1", "logicalclusters");
        assert_kind::<Shard, ShardList>("core.kcp.io/v1alpha1", "shards");
        assert_kind::<Workspace, WorkspaceList>("tenancy.kcp.io/v1alpha1", "workspaces");
        assert_kind::<WorkspaceType, WorkspaceTypeList>("tenancy.kcp.io/v1alpha1", "workspacetypes");
        assert_kind::<SyncTarget, SyncTargetList>("workload.kcp.io/v1alpha1", "synctargets");
        assert_kind::<Location, LocationList>("scheduling.kcp.io/v1alpha1", "locations");
        assert_kind::<Placement, PlacementList>("scheduling.kcp.io/v1alpha1", "placements");
    }
}
