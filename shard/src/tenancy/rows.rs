//! The rows of kcp's logical clusters, workspaces, workspace types and shards, and the
//! lookups of them the shard's features share.

use apiserver::registry::{age_column, builtin, col, strings, Cell, NameRule, Registry, ResourceType};
use std::sync::Arc;

/// `core.kcp.io` LogicalClusters and Shards, `tenancy.kcp.io` Workspaces and
/// WorkspaceTypes.
pub fn rows() -> Vec<ResourceType> {
    vec![
        ResourceType {
            subresources: strings(&["status"]),
            return_deleted_object: true,
            columns: vec![
                col("Phase", "string", "The current phase of the logical cluster.", Cell::Pointer("/status/phase")),
                col("URL", "string", "The URL of the logical cluster.", Cell::Pointer("/status/URL")),
                age_column(),
            ],
            ..builtin(
                "core.kcp.io",
                "v1alpha1",
                "logicalclusters",
                "logicalcluster",
                "LogicalCluster",
                false,
                "io.kcp.core.v1alpha1.LogicalCluster",
            )
        },
        ResourceType {
            short_names: strings(&["ws"]),
            categories: strings(&["kcp"]),
            subresources: strings(&["status"]),
            names: NameRule::Label,
            return_deleted_object: true,
            columns: vec![
                col("Type", "string", "Type of the workspace.", Cell::Pointer("/spec/type/name")),
                col("Phase", "string", "The current phase of the workspace.", Cell::Pointer("/status/phase")),
                col("URL", "string", "URL to access the workspace.", Cell::Pointer("/spec/URL")),
                age_column(),
            ],
            ..builtin(
                "tenancy.kcp.io",
                "v1alpha1",
                "workspaces",
                "workspace",
                "Workspace",
                false,
                "io.kcp.tenancy.v1alpha1.Workspace",
            )
        },
        ResourceType {
            categories: strings(&["kcp"]),
            subresources: strings(&["status"]),
            names: NameRule::Label,
            ..builtin(
                "tenancy.kcp.io",
                "v1alpha1",
                "workspacetypes",
                "workspacetype",
                "WorkspaceType",
                false,
                "io.kcp.tenancy.v1alpha1.WorkspaceType",
            )
        },
        ResourceType {
            categories: strings(&["kcp"]),
            subresources: strings(&["status"]),
            columns: vec![
                col("URL", "string", "Base URL of the shard.", Cell::Pointer("/spec/baseURL")),
                col(
                    "External URL",
                    "string",
                    "URL clients use to reach the shard.",
                    Cell::Pointer("/spec/externalURL"),
                ),
                age_column(),
            ],
            ..builtin("core.kcp.io", "v1alpha1", "shards", "shard", "Shard", false, "io.kcp.core.v1alpha1.Shard")
        },
    ]
}

/// The tenancy rows of a registry that has them (every shard's, after assembly).
pub trait TenancyRows {
    /// `logicalclusters.core.kcp.io`.
    fn logical_clusters(&self) -> Arc<ResourceType>;
    /// `workspaces.tenancy.kcp.io`.
    fn workspaces(&self) -> Arc<ResourceType>;
    /// `workspacetypes.tenancy.kcp.io`.
    fn workspace_types(&self) -> Arc<ResourceType>;
    /// `shards.core.kcp.io`.
    fn shards(&self) -> Arc<ResourceType>;
}

impl TenancyRows for Registry {
    fn logical_clusters(&self) -> Arc<ResourceType> {
        self.required("core.kcp.io", "logicalclusters")
    }

    fn workspaces(&self) -> Arc<ResourceType> {
        self.required("tenancy.kcp.io", "workspaces")
    }

    fn workspace_types(&self) -> Arc<ResourceType> {
        self.required("tenancy.kcp.io", "workspacetypes")
    }

    fn shards(&self) -> Arc<ResourceType> {
        self.required("core.kcp.io", "shards")
    }
}
