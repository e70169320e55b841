//! Workspace and WorkspaceType (`tenancy.kcp.io/v1alpha1`): how users create logical
//! clusters as a tree of workspaces, and the types that decide what a new workspace is
//! initialized with and which workspaces may nest in which.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, ListMeta, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{api_version, impl_cluster_scoped_kind, is_default, kind, list_kind, PHASES};

/// API group of [`Workspace`] and [`WorkspaceType`].
pub const TENANCY_KCP_GROUP: &str = "tenancy.kcp.io";
/// API version of [`Workspace`] and [`WorkspaceType`] within [`TENANCY_KCP_GROUP`].
pub const TENANCY_KCP_VERSION: &str = "v1alpha1";
/// `apiVersion` carried by [`Workspace`] objects.
pub const WORKSPACE_API_VERSION: &str = "tenancy.kcp.io/v1alpha1";
/// Kind of [`Workspace`].
pub const WORKSPACE_KIND: &str = "Workspace";
/// Kind of [`WorkspaceList`].
pub const WORKSPACE_LIST_KIND: &str = "WorkspaceList";
/// Plural resource name of [`Workspace`]; it is cluster-scoped.
pub const WORKSPACE_RESOURCE: &str = "workspaces";
/// `apiVersion` carried by [`WorkspaceType`] objects.
pub const WORKSPACE_TYPE_API_VERSION: &str = "tenancy.kcp.io/v1alpha1";
/// Kind of [`WorkspaceType`].
pub const WORKSPACE_TYPE_KIND: &str = "WorkspaceType";
/// Kind of [`WorkspaceTypeList`].
pub const WORKSPACE_TYPE_LIST_KIND: &str = "WorkspaceTypeList";
/// Plural resource name of [`WorkspaceType`]; it is cluster-scoped.
pub const WORKSPACE_TYPE_RESOURCE: &str = "workspacetypes";

/// Workspace is a child logical cluster created from its parent. Once ready, it is served
/// like a Kubernetes cluster of its own (discovery, OpenAPI and resource endpoints) at the
/// URL in its spec, so standard Kubernetes clients and kubectl work against it unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.tenancy.v1alpha1.Workspace")]
pub struct Workspace {
    /// APIVersion defines the versioned schema of this representation of an object. Servers
    /// should convert recognized schemas to the latest internal value, and may reject
    /// unrecognized values. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources
    #[serde(default = "api_version::<Workspace>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents. Servers
    /// may infer this from the endpoint the client submits requests to. Cannot be updated. In
    /// CamelCase. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds
    #[serde(default = "kind::<Workspace>")]
    pub kind: String,
    /// Standard object's metadata. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// spec holds the desired state of the workspace: its type, where it may be placed, and
    /// (filled in by the system) the logical cluster backing it and the URL it is served at.
    #[serde(default)]
    pub spec: WorkspaceSpec,
    /// status holds the observed state of the workspace: its phase, conditions and the
    /// initializers that have not finished yet.
    #[serde(default)]
    pub status: WorkspaceStatus,
}

/// WorkspaceSpec is the desired state of a Workspace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.tenancy.v1alpha1.WorkspaceSpec")]
pub struct WorkspaceSpec {
    /// type names the WorkspaceType this workspace is created from. The type decides what the
    /// workspace is initialized with (initializers, default API bindings) and which child
    /// workspaces it may hold. When omitted, the parent's default child type is used. The
    /// type must exist when the workspace is created, using it requires permission to "use"
    /// the workspacetypes resource, and it cannot be changed afterwards.
    // Plain schema, no `nullable`: see LogicalClusterSpec.owner.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "WorkspaceTypeReference")]
    pub type_: Option<WorkspaceTypeReference>,
    /// location restricts which shards the workspace may be scheduled to. When omitted, any
    /// shard may be chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "WorkspaceLocation")]
    pub location: Option<WorkspaceLocation>,
    /// cluster is the name of the logical cluster that stores this workspace's contents. It
    /// is set by the system when the workspace is scheduled and cannot be changed or unset.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    /// URL is the address of the workspace's Kubernetes-cluster-like endpoint, usable with
    /// standard Kubernetes client libraries and command line tools. It is set by the system.
    #[serde(rename = "URL", default, skip_serializing_if = "String::is_empty")]
    pub url: String,
}

/// WorkspaceLocation constrains the shards a Workspace may be scheduled to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.tenancy.v1alpha1.WorkspaceLocation")]
pub struct WorkspaceLocation {
    /// selector picks, by their labels, the shards the workspace may be scheduled to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "LabelSelector")]
    pub selector: Option<LabelSelector>,
}

/// WorkspaceStatus is the observed state of a Workspace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.tenancy.v1alpha1.WorkspaceStatus")]
pub struct WorkspaceStatus {
    /// phase of the workspace: Scheduling, Initializing, Ready or Unavailable. It follows the
    /// phase of the logical cluster backing the workspace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = PHASES))]
    pub phase: String,
    /// conditions describe the current processing state of the Workspace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// initializers that still have to finish their work, each by removing itself from this
    /// list, before the workspace becomes Ready and can be used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub initializers: Vec<String>,
}

/// WorkspaceList is a list of Workspaces, as returned by list requests.
// No JsonSchema derive: see LogicalClusterList.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceList {
    /// APIVersion defines the versioned schema of this representation of an object.
    #[serde(default = "api_version::<Workspace>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    #[serde(default = "list_kind::<Workspace>")]
    pub kind: String,
    /// Standard list metadata.
    #[serde(default)]
    pub metadata: ListMeta,
    /// items is the list of Workspaces.
    pub items: Vec<Workspace>,
}

impl_cluster_scoped_kind!(
    Workspace,
    WorkspaceList {
        group: TENANCY_KCP_GROUP,
        version: TENANCY_KCP_VERSION,
        api_version: WORKSPACE_API_VERSION,
        kind: WORKSPACE_KIND,
        list_kind: WORKSPACE_LIST_KIND,
        resource: WORKSPACE_RESOURCE,
    }
);

/// WorkspaceTypeReference names a WorkspaceType unambiguously: by its name and the logical
/// cluster that holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.tenancy.v1alpha1.WorkspaceTypeReference")]
pub struct WorkspaceTypeReference {
    /// name is the name of the WorkspaceType object, in lower case (e.g. universal).
    pub name: String,
    /// path is the canonical path of the logical cluster holding the WorkspaceType, e.g.
    /// root or root:org. When empty, the type is looked up relative to where the reference
    /// is used.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
}

/// `path:name`, or only `name` when there is no path: the form kcp prints types in and the
/// form of the initializer a type with `spec.initializer` adds.
impl fmt::Display for WorkspaceTypeReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}:{}", self.path, self.name)
        }
    }
}

/// WorkspaceType describes a kind of workspace: what a new workspace of this type is
/// initialized with, which type its own children get by default, and which types may be
/// nested inside it or may contain it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.tenancy.v1alpha1.WorkspaceType")]
pub struct WorkspaceType {
    /// APIVersion defines the versioned schema of this representation of an object. Servers
    /// should convert recognized schemas to the latest internal value, and may reject
    /// unrecognized values. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources
    #[serde(default = "api_version::<WorkspaceType>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents. Servers
    /// may infer this from the endpoint the client submits requests to. Cannot be updated. In
    /// CamelCase. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds
    #[serde(default = "kind::<WorkspaceType>")]
    pub kind: String,
    /// Standard object's metadata. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// spec defines how workspaces of this type are initialized and nested.
    #[serde(default)]
    pub spec: WorkspaceTypeSpec,
    /// status holds the observed state of the type: conditions and the virtual workspace
    /// URLs its initializer uses.
    #[serde(default)]
    pub status: WorkspaceTypeStatus,
}

/// WorkspaceTypeSpec is the desired behaviour of workspaces of a WorkspaceType.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.tenancy.v1alpha1.WorkspaceTypeSpec")]
pub struct WorkspaceTypeSpec {
    /// initializer, when true, gives this type an initializer: every new workspace of the
    /// type waits in phase Initializing until a controller has done its set-up work and
    /// removed the initializer. The initializer is named after the logical cluster holding
    /// the type and the type's name, e.g. root:org:example for type example in root:org.
    #[serde(default, skip_serializing_if = "is_default")]
    pub initializer: bool,
    /// extend lists other WorkspaceTypes this type builds on. It inherits their
    /// initializers and their limitAllowedChildren and limitAllowedParents constraints, and
    /// counts as each of them (transitively) when those constraints are evaluated. A type
    /// whose extensions form a cycle or name a missing type cannot be used for workspaces.
    #[serde(default, skip_serializing_if = "is_default")]
    pub extend: WorkspaceTypeExtension,
    /// additionalWorkspaceLabels are labels put on every Workspace of this type when it is
    /// created.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub additional_workspace_labels: BTreeMap<String, String>,
    /// defaultChildWorkspaceType is the type given to workspaces created inside a workspace
    /// of this type when they do not name one. When unset, such workspaces must name their
    /// type. It is not inherited through extend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "WorkspaceTypeReference")]
    pub default_child_workspace_type: Option<WorkspaceTypeReference>,
    /// limitAllowedChildren restricts the types of workspaces that may be created inside
    /// workspaces of this type, on top of the restrictions of the types it extends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "WorkspaceTypeSelector")]
    pub limit_allowed_children: Option<WorkspaceTypeSelector>,
    /// limitAllowedParents restricts the types of the parent workspaces a workspace of this
    /// type may be created in, on top of the restrictions of the types it extends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "WorkspaceTypeSelector")]
    pub limit_allowed_parents: Option<WorkspaceTypeSelector>,
    /// defaultAPIBindings lists APIExports that are bound, under generated APIBinding names,
    /// while a workspace of this type is initialized.
    #[serde(rename = "defaultAPIBindings", default, skip_serializing_if = "Vec::is_empty")]
    pub default_api_bindings: Vec<ApiExportReference>,
}

/// WorkspaceTypeExtension lists the WorkspaceTypes a WorkspaceType builds on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.tenancy.v1alpha1.WorkspaceTypeExtension")]
pub struct WorkspaceTypeExtension {
    /// with are the WorkspaceTypes extended: their initializers are added to those of the
    /// extending type, and the extending type is treated as an alias of each of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<WorkspaceTypeReference>,
}

/// WorkspaceTypeSelector matches a set of WorkspaceTypes. Exactly one of none and types
/// is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.tenancy.v1alpha1.WorkspaceTypeSelector")]
pub struct WorkspaceTypeSelector {
    /// none, when true, matches no type at all.
    #[serde(default, skip_serializing_if = "is_default")]
    pub none: bool,
    /// types are the WorkspaceTypes that match. A type that extends one of them, even
    /// indirectly, matches as well.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<WorkspaceTypeReference>,
}

/// APIExportReference names an APIExport to bind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.tenancy.v1alpha1.APIExportReference")]
pub struct ApiExportReference {
    /// path is the canonical path of the logical cluster holding the APIExport, e.g.
    /// root:org. When empty, the APIExport is looked up in the workspace being initialized.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// export is the name of the APIExport.
    pub export: String,
}

/// WorkspaceTypeStatus is the observed state of a WorkspaceType.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.tenancy.v1alpha1.WorkspaceTypeStatus")]
pub struct WorkspaceTypeStatus {
    /// conditions describe the current processing state of the WorkspaceType.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// virtualWorkspaces are the URLs of the virtual workspaces through which the type's
    /// initializer sees workspaces that are still initializing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub virtual_workspaces: Vec<VirtualWorkspace>,
}

/// VirtualWorkspace is one address under which a virtual workspace is served.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.tenancy.v1alpha1.VirtualWorkspace")]
pub struct VirtualWorkspace {
    /// url is the address of the virtual workspace.
    pub url: String,
}

/// WorkspaceTypeList is a list of WorkspaceTypes, as returned by list requests.
// No JsonSchema derive: see LogicalClusterList.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceTypeList {
    /// APIVersion defines the versioned schema of this representation of an object.
    #[serde(default = "api_version::<WorkspaceType>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    #[serde(default = "list_kind::<WorkspaceType>")]
    pub kind: String,
    /// Standard list metadata.
    #[serde(default)]
    pub metadata: ListMeta,
    /// items is the list of WorkspaceTypes.
    pub items: Vec<WorkspaceType>,
}

impl_cluster_scoped_kind!(
    WorkspaceType,
    WorkspaceTypeList {
        group: TENANCY_KCP_GROUP,
        version: TENANCY_KCP_VERSION,
        api_version: WORKSPACE_TYPE_API_VERSION,
        kind: WORKSPACE_TYPE_KIND,
        list_kind: WORKSPACE_TYPE_LIST_KIND,
        resource: WORKSPACE_TYPE_RESOURCE,
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::PHASE_INITIALIZING;
    use serde_json::json;

    fn reference(path: &str, name: &str) -> WorkspaceTypeReference {
        WorkspaceTypeReference { name: name.into(), path: path.into() }
    }

    #[test]
    fn workspace_wire_names_match_kcp() {
        let mut workspace = Workspace::new(ObjectMeta { name: Some("team".into()), ..ObjectMeta::default() });
        workspace.spec.type_ = Some(reference("root", "universal"));
        workspace.spec.location = Some(WorkspaceLocation {
            selector: Some(LabelSelector {
                match_labels: Some([("region".to_owned(), "eu".to_owned())].into()),
                ..LabelSelector::default()
            }),
        });
        workspace.spec.cluster = "2x7a".into();
        workspace.spec.url = "https://shard-1/clusters/2x7a".into();
        workspace.status.phase = PHASE_INITIALIZING.into();
        workspace.status.initializers = vec!["root:universal".into()];
        let wire = serde_json::to_value(&workspace).unwrap();
        assert_eq!(
            wire,
            json!({
                "apiVersion": "tenancy.kcp.io/v1alpha1",
                "kind": "Workspace",
                "metadata": {"name": "team"},
                "spec": {
                    "type": {"name": "universal", "path": "root"},
                    "location": {"selector": {"matchLabels": {"region": "eu"}}},
                    "cluster": "2x7a",
                    "URL": "https://shard-1/clusters/2x7a"
                },
                "status": {"phase": "Initializing", "initializers": ["root:universal"]}
            })
        );
        let back: Workspace = serde_json::from_value(wire).unwrap();
        assert_eq!(back, workspace);
    }

    #[test]
    fn workspace_type_wire_names_match_kcp() {
        let mut workspace_type = WorkspaceType::new(ObjectMeta { name: Some("team".into()), ..ObjectMeta::default() });
        workspace_type.spec = WorkspaceTypeSpec {
            initializer: true,
            extend: WorkspaceTypeExtension { with: vec![reference("root", "universal")] },
            additional_workspace_labels: [("tier".to_owned(), "gold".to_owned())].into(),
            default_child_workspace_type: Some(reference("", "project")),
            limit_allowed_children: Some(WorkspaceTypeSelector { none: false, types: vec![reference("", "project")] }),
            limit_allowed_parents: Some(WorkspaceTypeSelector { none: true, types: Vec::new() }),
            default_api_bindings: vec![ApiExportReference { path: "root:org".into(), export: "widgets".into() }],
        };
        workspace_type.status.virtual_workspaces = vec![VirtualWorkspace { url: "https://vw/team".into() }];
        let wire = serde_json::to_value(&workspace_type).unwrap();
        assert_eq!(
            wire,
            json!({
                "apiVersion": "tenancy.kcp.io/v1alpha1",
                "kind": "WorkspaceType",
                "metadata": {"name": "team"},
                "spec": {
                    "initializer": true,
                    "extend": {"with": [{"name": "universal", "path": "root"}]},
                    "additionalWorkspaceLabels": {"tier": "gold"},
                    "defaultChildWorkspaceType": {"name": "project"},
                    "limitAllowedChildren": {"types": [{"name": "project"}]},
                    "limitAllowedParents": {"none": true},
                    "defaultAPIBindings": [{"path": "root:org", "export": "widgets"}]
                },
                "status": {"virtualWorkspaces": [{"url": "https://vw/team"}]}
            })
        );
        let back: WorkspaceType = serde_json::from_value(wire).unwrap();
        assert_eq!(back, workspace_type);
    }

    #[test]
    fn empty_parts_are_left_out_and_filled_in() {
        let wire = serde_json::to_value(WorkspaceType::default()).unwrap();
        assert_eq!(
            wire,
            json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {}, "spec": {}, "status": {}})
        );
        let workspace: Workspace = serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap();
        assert_eq!(workspace.api_version, WORKSPACE_API_VERSION);
        assert_eq!(workspace.kind, WORKSPACE_KIND);
        assert_eq!(workspace.spec, WorkspaceSpec::default());
    }

    #[test]
    fn type_references_print_as_kcp_does() {
        let cases = [(reference("", "universal"), "universal"), (reference("root:org", "team"), "root:org:team")];
        for (reference, expected) in cases {
            assert_eq!(reference.to_string(), expected);
        }
    }
}
