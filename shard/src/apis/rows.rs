//! The rows of the `apis.kcp.io` group.

use apiserver::registry::{age_column, builtin, col, strings, Cell, Column, ResourceType};

const APIS: &str = "apis.kcp.io";

/// kcp's READY column of its `apis.kcp.io` kinds: the status of one condition.
fn ready_column(condition: &str) -> Column {
    let path = format!(".status.conditions[?(@.type==\"{condition}\")].status");
    col("Ready", "string", &format!("Status of the {condition} condition."), Cell::JsonPath(path))
}

/// APIExports, APIResourceSchemas, APIExportEndpointSlices and APIBindings.
pub fn rows() -> Vec<ResourceType> {
    vec![
        ResourceType {
            categories: strings(&["kcp"]),
            subresources: strings(&["status"]),
            columns: vec![age_column(), ready_column("VirtualWorkspaceURLsReady")],
            ..builtin(APIS, "v1alpha1", "apiexports", "apiexport", "APIExport", false, "io.kcp.apis.v1alpha1.APIExport")
        },
        ResourceType {
            categories: strings(&["kcp"]),
            ..builtin(
                APIS,
                "v1alpha1",
                "apiresourceschemas",
                "apiresourceschema",
                "APIResourceSchema",
                false,
                "io.kcp.apis.v1alpha1.APIResourceSchema",
            )
        },
        ResourceType {
            categories: strings(&["kcp"]),
            subresources: strings(&["status"]),
            columns: vec![
                col(
                    "Export",
                    "string",
                    "The APIExport whose endpoints are listed.",
                    Cell::Pointer("/spec/export/name"),
                ),
                col("Partition", "string", "The partition filtering the endpoints.", Cell::Pointer("/spec/partition")),
                age_column(),
            ],
            ..builtin(
                APIS,
                "v1alpha1",
                "apiexportendpointslices",
                "apiexportendpointslice",
                "APIExportEndpointSlice",
                false,
                "io.kcp.apis.v1alpha1.APIExportEndpointSlice",
            )
        },
        ResourceType {
            categories: strings(&["kcp"]),
            subresources: strings(&["status"]),
            columns: vec![age_column(), ready_column("Ready")],
            ..builtin(
                APIS,
                "v1alpha1",
                "apibindings",
                "apibinding",
                "APIBinding",
                false,
                "io.kcp.apis.v1alpha1.APIBinding",
            )
        },
    ]
}
