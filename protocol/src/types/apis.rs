//! APIExport, APIResourceSchema, APIExportEndpointSlice and APIBinding
//! (`apis.kcp.io/v1alpha1`): how a workspace publishes an API and how other workspaces
//! bind to it.
//!
//! A provider describes each resource of its API in an [`ApiResourceSchema`] (immutable,
//! named `<prefix>.<plural>.<group>`) and lists the schemas in an [`ApiExport`]. The export
//! gets an identity when it is created: a secret the server keeps beside it, whose
//! SHA-256 is published in `status.identityHash`. Consumers create an [`ApiBinding`] that
//! references the export by workspace path and name; once the binding is `Bound`, the
//! bound resources are served in the consumer's workspace and stored under the export's
//! identity. [`ApiExportEndpointSlice`] lists the URLs under which an export's virtual
//! workspace is served.

use k8s_openapi::api::core::v1::SecretReference;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceConversion, CustomResourceDefinitionNames, CustomResourceSubresources,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{api_version, impl_cluster_scoped_kind, is_default, kind, list_kind};

/// API group of the kinds in this module.
pub const APIS_KCP_GROUP: &str = "apis.kcp.io";
/// API version of the kinds in this module within [`APIS_KCP_GROUP`].
pub const APIS_KCP_VERSION: &str = "v1alpha1";
/// `apiVersion` carried by every kind in this module.
pub const APIS_KCP_API_VERSION: &str = "apis.kcp.io/v1alpha1";
/// Kind of [`ApiExport`].
pub const API_EXPORT_KIND: &str = "APIExport";
/// Kind of [`ApiExportList`].
pub const API_EXPORT_LIST_KIND: &str = "APIExportList";
/// Plural resource name of [`ApiExport`]; it is cluster-scoped.
pub const API_EXPORT_RESOURCE: &str = "apiexports";
/// Kind of [`ApiResourceSchema`].
pub const API_RESOURCE_SCHEMA_KIND: &str = "APIResourceSchema";
/// Kind of [`ApiResourceSchemaList`].
pub const API_RESOURCE_SCHEMA_LIST_KIND: &str = "APIResourceSchemaList";
/// Plural resource name of [`ApiResourceSchema`]; it is cluster-scoped.
pub const API_RESOURCE_SCHEMA_RESOURCE: &str = "apiresourceschemas";
/// Kind of [`ApiExportEndpointSlice`].
pub const API_EXPORT_ENDPOINT_SLICE_KIND: &str = "APIExportEndpointSlice";
/// Kind of [`ApiExportEndpointSliceList`].
pub const API_EXPORT_ENDPOINT_SLICE_LIST_KIND: &str = "APIExportEndpointSliceList";
/// Plural resource name of [`ApiExportEndpointSlice`]; it is cluster-scoped.
pub const API_EXPORT_ENDPOINT_SLICE_RESOURCE: &str = "apiexportendpointslices";
/// Kind of [`ApiBinding`].
pub const API_BINDING_KIND: &str = "APIBinding";
/// Kind of [`ApiBindingList`].
pub const API_BINDING_LIST_KIND: &str = "APIBindingList";
/// Plural resource name of [`ApiBinding`]; it is cluster-scoped.
pub const API_BINDING_RESOURCE: &str = "apibindings";

/// APIBinding phase while the binding controller resolves the export and its schemas.
pub const BINDING_PHASE_BINDING: &str = "Binding";
/// APIBinding phase once the bound resources are served in the workspace.
pub const BINDING_PHASE_BOUND: &str = "Bound";
/// Every value `status.phase` of an APIBinding may hold; empty means "just created".
pub const BINDING_PHASES: [&str; 3] = ["", BINDING_PHASE_BINDING, BINDING_PHASE_BOUND];

/// The scopes an APIResourceSchema may give its resource.
pub const RESOURCE_SCOPES: [&str; 2] = ["Cluster", "Namespaced"];
/// The states a consumer may give a permission claim.
pub const CLAIM_STATES: [&str; 2] = ["Accepted", "Rejected"];

// ---------------------------------------------------------------------------------------
// Shared parts
// ---------------------------------------------------------------------------------------

/// Condition describes one aspect of the observed state of an object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.third_party.conditions.v1alpha1.Condition")]
pub struct KcpCondition {
    /// type of the condition in CamelCase, e.g. Ready.
    #[serde(rename = "type")]
    pub type_: String,
    /// status of the condition: True, False or Unknown.
    pub status: String,
    /// severity classifies a condition whose status is False: Error, Warning or Info.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub severity: String,
    /// lastTransitionTime is when the condition last changed from one status to another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Time")]
    pub last_transition_time: Option<Time>,
    /// reason is a one-word CamelCase explanation of the condition's last transition.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// message is a human readable explanation of the condition's last transition.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// ExportBindingReference names an APIExport by the workspace that holds it and its name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.ExportBindingReference")]
pub struct ExportBindingReference {
    /// path is the canonical path of the workspace holding the APIExport, e.g. root:org.
    /// When empty, the APIExport is looked up in the workspace of the referencing object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("pattern" = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"))]
    pub path: String,
    /// name of the APIExport.
    pub name: String,
}

/// PermissionClaim asks for access to objects of a resource that the export does not
/// define itself, e.g. ConfigMaps in the consumer's workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.PermissionClaim")]
pub struct PermissionClaim {
    /// group of the claimed resource; empty for the core group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// resource is the plural name of the claimed resource, e.g. configmaps.
    pub resource: String,
    /// identityHash is the identity of the APIExport that defines the claimed resource;
    /// empty for built-in resources.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity_hash: String,
    /// all claims every object of the resource. Exclusive with resourceSelector.
    #[serde(default, skip_serializing_if = "is_default")]
    pub all: bool,
    /// resourceSelector claims only the selected objects. Exclusive with all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_selector: Vec<ResourceSelector>,
}

/// ResourceSelector selects claimed objects by name and namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.ResourceSelector")]
pub struct ResourceSelector {
    /// name of the claimed object; when empty, every object of the namespace is claimed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// namespace of the claimed objects; when empty, objects of that name in every
    /// namespace are claimed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// AcceptablePermissionClaim is a permission claim of the export together with the
/// consumer's decision about it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.AcceptablePermissionClaim")]
pub struct AcceptablePermissionClaim {
    /// The claim decided on.
    #[serde(flatten)]
    pub claim: PermissionClaim,
    /// state is the consumer's decision: Accepted or Rejected.
    #[schemars(extend("enum" = CLAIM_STATES))]
    pub state: String,
}

// ---------------------------------------------------------------------------------------
// APIExport
// ---------------------------------------------------------------------------------------

/// APIExport publishes an API, described by APIResourceSchemas of the same workspace, so
/// that other workspaces can bind to it with APIBindings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.APIExport")]
pub struct ApiExport {
    /// APIVersion defines the versioned schema of this representation of an object. Servers
    /// should convert recognized schemas to the latest internal value, and may reject
    /// unrecognized values. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources
    #[serde(default = "api_version::<ApiExport>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents. Servers
    /// may infer this from the endpoint the client submits requests to. Cannot be updated. In
    /// CamelCase. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds
    #[serde(default = "kind::<ApiExport>")]
    pub kind: String,
    /// Standard object's metadata. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// spec holds the desired state: the schemas exported, the identity and the
    /// permissions asked of consumers.
    #[serde(default)]
    pub spec: ApiExportSpec,
    /// status holds the observed state: the identity hash and conditions.
    #[serde(default)]
    pub status: ApiExportStatus,
}

/// APIExportSpec is the desired state of an APIExport.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.APIExportSpec")]
pub struct ApiExportSpec {
    /// latestResourceSchemas names the APIResourceSchemas (in the export's workspace) that
    /// this export serves. Changing the list affects new APIBindings only; existing ones
    /// keep the schemas they were bound with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub latest_resource_schemas: Vec<String>,
    /// identity of the export. The server generates a secret identity key when the export
    /// is created and keeps it beside the export (it is never served); objects of bound
    /// resources are stored under it, so two exports of the same group and resource never
    /// see each other's objects. secretRef is recorded but the generated key is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Identity")]
    pub identity: Option<Identity>,
    /// maximalPermissionPolicy is an upper bound on what consumers may do with the
    /// exported resources, as RBAC in the export's workspace. Recorded, not yet enforced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "MaximalPermissionPolicy")]
    pub maximal_permission_policy: Option<MaximalPermissionPolicy>,
    /// permissionClaims ask consumers for access to other resources in their workspaces.
    /// Recorded, not yet enforced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permission_claims: Vec<PermissionClaim>,
}

/// Identity points at the secret holding an export's identity key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.Identity")]
pub struct Identity {
    /// secretRef names a Secret whose 'key' entry holds the identity key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "SecretReference")]
    pub secret_ref: Option<SecretReference>,
}

/// MaximalPermissionPolicy bounds what consumers of an export may do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.MaximalPermissionPolicy")]
pub struct MaximalPermissionPolicy {
    /// local is a policy given by the RBAC objects of the export's workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "LocalApiExportPolicy")]
    pub local: Option<LocalApiExportPolicy>,
}

/// LocalAPIExportPolicy is a maximal permission policy given by the RBAC objects of the
/// export's workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "io.kcp.apis.v1alpha1.LocalAPIExportPolicy")]
pub struct LocalApiExportPolicy {}

/// APIExportStatus is the observed state of an APIExport.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.APIExportStatus")]
pub struct ApiExportStatus {
    /// identityHash is the lowercase hex SHA-256 of the export's identity key. It is set
    /// when the export is created and never changes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity_hash: String,
    /// conditions describe the current processing state of the APIExport.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<KcpCondition>,
    /// virtualWorkspaces are the URLs of the export's virtual workspaces. Deprecated: read
    /// APIExportEndpointSlice.status.endpoints instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub virtual_workspaces: Vec<ApiExportVirtualWorkspace>,
}

/// One URL of an APIExport's virtual workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.VirtualWorkspace")]
pub struct ApiExportVirtualWorkspace {
    /// url of the virtual workspace.
    pub url: String,
}

/// APIExportList is a list of APIExports, as returned by list requests.
// No JsonSchema derive: see LogicalClusterList.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiExportList {
    /// APIVersion defines the versioned schema of this representation of an object.
    #[serde(default = "api_version::<ApiExport>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    #[serde(default = "list_kind::<ApiExport>")]
    pub kind: String,
    /// Standard list metadata.
    #[serde(default)]
    pub metadata: ListMeta,
    /// items is the list of APIExports.
    pub items: Vec<ApiExport>,
}

impl_cluster_scoped_kind!(
    ApiExport,
    ApiExportList {
        group: APIS_KCP_GROUP,
        version: APIS_KCP_VERSION,
        api_version: APIS_KCP_API_VERSION,
        kind: API_EXPORT_KIND,
        list_kind: API_EXPORT_LIST_KIND,
        resource: API_EXPORT_RESOURCE,
    }
);

// ---------------------------------------------------------------------------------------
// APIResourceSchema
// ---------------------------------------------------------------------------------------

/// APIResourceSchema describes one resource of an exported API: its group, names, scope
/// and versions with their OpenAPI schemas. It is immutable, and its name must be
/// PREFIX.PLURAL.GROUP (e.g. v1.widgets.example.io) so that new revisions of a
/// schema get new names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.APIResourceSchema")]
pub struct ApiResourceSchema {
    /// APIVersion defines the versioned schema of this representation of an object. Servers
    /// should convert recognized schemas to the latest internal value, and may reject
    /// unrecognized values. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources
    #[serde(default = "api_version::<ApiResourceSchema>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents. Servers
    /// may infer this from the endpoint the client submits requests to. Cannot be updated. In
    /// CamelCase. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds
    #[serde(default = "kind::<ApiResourceSchema>")]
    pub kind: String,
    /// Standard object's metadata. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// spec describes the resource. It cannot be changed after creation.
    #[serde(default)]
    pub spec: ApiResourceSchemaSpec,
}

/// APIResourceSchemaSpec describes a resource like the spec of a CustomResourceDefinition,
/// except that each version's schema is the OpenAPI v3 schema itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.APIResourceSchemaSpec")]
pub struct ApiResourceSchemaSpec {
    /// group is the API group of the resource; empty for the core group. Resources are
    /// served under /apis/GROUP/VERSION.
    #[serde(default)]
    pub group: String,
    /// names are the plural, singular, kind, list kind, short names and categories of the
    /// resource. singular defaults to the lower-cased kind and listKind to the kind followed by List.
    #[serde(default)]
    pub names: CustomResourceDefinitionNames,
    /// scope of the resource: Cluster or Namespaced.
    #[serde(default)]
    #[schemars(extend("enum" = RESOURCE_SCOPES))]
    pub scope: String,
    /// versions of the resource. Exactly one is the storage version.
    #[serde(default)]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub versions: Vec<ApiResourceVersion>,
    /// conversion says how objects are converted between versions; only None is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "CustomResourceConversion")]
    pub conversion: Option<CustomResourceConversion>,
}

/// APIResourceVersion is one version of a resource described by an APIResourceSchema.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.APIResourceVersion")]
pub struct ApiResourceVersion {
    /// name of the version, e.g. v1 or v2beta1.
    pub name: String,
    /// served says whether the version is served by the REST API. Defaults to true.
    #[serde(default = "served_default")]
    pub served: bool,
    /// storage says whether objects are stored in this version. Exactly one version must
    /// be the storage version.
    #[serde(default)]
    pub storage: bool,
    /// deprecated marks the version as deprecated: requests to it get a warning.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deprecated: bool,
    /// deprecationWarning replaces the default warning of a deprecated version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub deprecation_warning: Option<String>,
    /// schema is the OpenAPI v3 schema of objects of this version (what a
    /// CustomResourceDefinition holds in schema.openAPIV3Schema). It must be structural.
    #[serde(default)]
    #[schemars(schema_with = "preserved_object")]
    pub schema: Value,
    /// subresources served for this version: status and scale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "CustomResourceSubresources")]
    pub subresources: Option<CustomResourceSubresources>,
    /// additionalPrinterColumns are the columns kubectl get prints for this version, after
    /// the name. Without any, the age is printed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_printer_columns: Vec<CustomResourceColumnDefinition>,
}

fn served_default() -> bool {
    true
}

/// The schema of a field holding an arbitrary JSON object, kept as a whole.
fn preserved_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-map-type": "atomic",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// APIResourceSchemaList is a list of APIResourceSchemas, as returned by list requests.
// No JsonSchema derive: see LogicalClusterList.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiResourceSchemaList {
    /// APIVersion defines the versioned schema of this representation of an object.
    #[serde(default = "api_version::<ApiResourceSchema>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    #[serde(default = "list_kind::<ApiResourceSchema>")]
    pub kind: String,
    /// Standard list metadata.
    #[serde(default)]
    pub metadata: ListMeta,
    /// items is the list of APIResourceSchemas.
    pub items: Vec<ApiResourceSchema>,
}

// APIResourceSchema has no status, which the shared macro requires: its traits by hand.
impl ApiResourceSchema {
    /// An APIResourceSchema with the given metadata and an empty spec, carrying the right
    /// `apiVersion` and `kind`.
    pub fn new(metadata: ObjectMeta) -> Self {
        Self { api_version: api_version::<Self>(), kind: kind::<Self>(), metadata, spec: Default::default() }
    }
}

impl Default for ApiResourceSchema {
    fn default() -> Self {
        Self::new(Default::default())
    }
}

impl Default for ApiResourceSchemaList {
    fn default() -> Self {
        Self {
            api_version: api_version::<ApiResourceSchema>(),
            kind: list_kind::<ApiResourceSchema>(),
            metadata: Default::default(),
            items: Vec::new(),
        }
    }
}

impl k8s_openapi::Resource for ApiResourceSchema {
    const API_VERSION: &'static str = APIS_KCP_API_VERSION;
    const GROUP: &'static str = APIS_KCP_GROUP;
    const KIND: &'static str = API_RESOURCE_SCHEMA_KIND;
    const VERSION: &'static str = APIS_KCP_VERSION;
    const URL_PATH_SEGMENT: &'static str = API_RESOURCE_SCHEMA_RESOURCE;
    type Scope = k8s_openapi::ClusterResourceScope;
}

impl k8s_openapi::ListableResource for ApiResourceSchema {
    const LIST_KIND: &'static str = API_RESOURCE_SCHEMA_LIST_KIND;
}

impl k8s_openapi::Metadata for ApiResourceSchema {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &Self::Ty {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut Self::Ty {
        &mut self.metadata
    }
}

// ---------------------------------------------------------------------------------------
// APIExportEndpointSlice
// ---------------------------------------------------------------------------------------

/// APIExportEndpointSlice collects the URLs under which the virtual workspace of an
/// APIExport is served, for the controllers of the API's provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.APIExportEndpointSlice")]
pub struct ApiExportEndpointSlice {
    /// APIVersion defines the versioned schema of this representation of an object. Servers
    /// should convert recognized schemas to the latest internal value, and may reject
    /// unrecognized values. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources
    #[serde(default = "api_version::<ApiExportEndpointSlice>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents. Servers
    /// may infer this from the endpoint the client submits requests to. Cannot be updated. In
    /// CamelCase. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds
    #[serde(default = "kind::<ApiExportEndpointSlice>")]
    pub kind: String,
    /// Standard object's metadata. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// spec names the APIExport and an optional partition filtering its endpoints.
    #[serde(default)]
    pub spec: ApiExportEndpointSliceSpec,
    /// status lists the endpoints found.
    #[serde(default)]
    pub status: ApiExportEndpointSliceStatus,
}

/// APIExportEndpointSliceSpec is the desired state of an APIExportEndpointSlice.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.APIExportEndpointSliceSpec")]
pub struct ApiExportEndpointSliceSpec {
    /// export names the APIExport whose endpoints are collected. It cannot be changed.
    #[serde(default)]
    pub export: ExportBindingReference,
    /// partition names a Partition that filters the endpoints (by shard).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub partition: String,
}

/// APIExportEndpointSliceStatus is the observed state of an APIExportEndpointSlice.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.APIExportEndpointSliceStatus")]
pub struct ApiExportEndpointSliceStatus {
    /// conditions describe the current processing state of the APIExportEndpointSlice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<KcpCondition>,
    /// endpoints are the URLs of the APIExport's virtual workspace, one per shard.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<ApiExportEndpoint>,
}

/// One endpoint of an APIExport's virtual workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.APIExportEndpoint")]
pub struct ApiExportEndpoint {
    /// url of the virtual workspace on one shard.
    pub url: String,
}

/// APIExportEndpointSliceList is a list of APIExportEndpointSlices.
// No JsonSchema derive: see LogicalClusterList.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiExportEndpointSliceList {
    /// APIVersion defines the versioned schema of this representation of an object.
    #[serde(default = "api_version::<ApiExportEndpointSlice>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    #[serde(default = "list_kind::<ApiExportEndpointSlice>")]
    pub kind: String,
    /// Standard list metadata.
    #[serde(default)]
    pub metadata: ListMeta,
    /// items is the list of APIExportEndpointSlices.
    pub items: Vec<ApiExportEndpointSlice>,
}

impl_cluster_scoped_kind!(
    ApiExportEndpointSlice,
    ApiExportEndpointSliceList {
        group: APIS_KCP_GROUP,
        version: APIS_KCP_VERSION,
        api_version: APIS_KCP_API_VERSION,
        kind: API_EXPORT_ENDPOINT_SLICE_KIND,
        list_kind: API_EXPORT_ENDPOINT_SLICE_LIST_KIND,
        resource: API_EXPORT_ENDPOINT_SLICE_RESOURCE,
    }
);

// ---------------------------------------------------------------------------------------
// APIBinding
// ---------------------------------------------------------------------------------------

/// APIBinding makes the resources of an APIExport, possibly of another workspace, available
/// in this workspace. The creator needs permission to "bind" the export in the export's
/// workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.APIBinding")]
pub struct ApiBinding {
    /// APIVersion defines the versioned schema of this representation of an object. Servers
    /// should convert recognized schemas to the latest internal value, and may reject
    /// unrecognized values. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources
    #[serde(default = "api_version::<ApiBinding>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents. Servers
    /// may infer this from the endpoint the client submits requests to. Cannot be updated. In
    /// CamelCase. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds
    #[serde(default = "kind::<ApiBinding>")]
    pub kind: String,
    /// Standard object's metadata. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// spec names the APIExport to bind and the consumer's decisions on its permission
    /// claims.
    #[serde(default)]
    pub spec: ApiBindingSpec,
    /// status holds the observed state: the phase, the bound resources and conditions.
    #[serde(default)]
    pub status: ApiBindingStatus,
}

/// APIBindingSpec is the desired state of an APIBinding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.APIBindingSpec")]
pub struct ApiBindingSpec {
    /// reference names the API to bind. It cannot be changed once the binding is Bound.
    #[serde(default)]
    pub reference: BindingReference,
    /// permissionClaims record which of the export's permission claims the consumer
    /// accepts or rejects. Recorded, not yet enforced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permission_claims: Vec<AcceptablePermissionClaim>,
}

/// BindingReference names the API an APIBinding binds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.BindingReference")]
pub struct BindingReference {
    /// export names the APIExport by workspace path and name. Binding requires the verb
    /// "bind" on the APIExport in its workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ExportBindingReference")]
    pub export: Option<ExportBindingReference>,
}

/// APIBindingStatus is the observed state of an APIBinding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.APIBindingStatus")]
pub struct ApiBindingStatus {
    /// phase of the binding: empty when just created, Binding while the export is
    /// resolved, Bound once the resources are served in this workspace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = BINDING_PHASES))]
    pub phase: String,
    /// apiExportClusterName is the name (not the path) of the logical cluster holding the
    /// bound APIExport.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_export_cluster_name: String,
    /// boundResources are the resources served because of this binding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["group", "resource"]))]
    pub bound_resources: Vec<BoundApiResource>,
    /// conditions describe the current processing state of the APIBinding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<KcpCondition>,
    /// appliedPermissionClaims are the permission claims in effect.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied_permission_claims: Vec<PermissionClaim>,
    /// exportPermissionClaims are the permission claims the export asks for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub export_permission_claims: Vec<PermissionClaim>,
}

/// BoundAPIResource is one resource served because of an APIBinding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.apis.v1alpha1.BoundAPIResource")]
pub struct BoundApiResource {
    /// group of the bound resource; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// resource is the plural name of the bound resource.
    pub resource: String,
    /// schema is the APIResourceSchema the resource is served from.
    #[serde(default)]
    pub schema: BoundApiResourceSchema,
    /// storageVersions are every version objects of the resource were ever stored in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub storage_versions: Vec<String>,
}

/// BoundAPIResourceSchema identifies the APIResourceSchema a bound resource is served from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "io.kcp.apis.v1alpha1.BoundAPIResourceSchema")]
pub struct BoundApiResourceSchema {
    /// name of the APIResourceSchema.
    pub name: String,
    /// UID of the APIResourceSchema.
    #[serde(rename = "UID")]
    pub uid: String,
    /// identityHash of the APIExport the schema is bound through: objects of the resource
    /// are stored under this identity.
    #[serde(rename = "identityHash")]
    pub identity_hash: String,
}

/// APIBindingList is a list of APIBindings, as returned by list requests.
// No JsonSchema derive: see LogicalClusterList.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiBindingList {
    /// APIVersion defines the versioned schema of this representation of an object.
    #[serde(default = "api_version::<ApiBinding>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    #[serde(default = "list_kind::<ApiBinding>")]
    pub kind: String,
    /// Standard list metadata.
    #[serde(default)]
    pub metadata: ListMeta,
    /// items is the list of APIBindings.
    pub items: Vec<ApiBinding>,
}

impl_cluster_scoped_kind!(
    ApiBinding,
    ApiBindingList {
        group: APIS_KCP_GROUP,
        version: APIS_KCP_VERSION,
        api_version: APIS_KCP_API_VERSION,
        kind: API_BINDING_KIND,
        list_kind: API_BINDING_LIST_KIND,
        resource: API_BINDING_RESOURCE,
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn named(name: &str) -> ObjectMeta {
        ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() }
    }

    #[test]
    fn api_export_wire_names_match_kcp() {
        let mut export = ApiExport::new(named("widgets"));
        export.spec.latest_resource_schemas = vec!["v1.widgets.example.io".into()];
        export.spec.identity = Some(Identity {
            secret_ref: Some(SecretReference { name: Some("widgets".into()), namespace: Some("kcp-system".into()) }),
        });
        export.spec.maximal_permission_policy = Some(MaximalPermissionPolicy { local: Some(LocalApiExportPolicy {}) });
        export.spec.permission_claims =
            vec![PermissionClaim { resource: "configmaps".into(), all: true, ..Default::default() }];
        export.status.identity_hash = "ab".repeat(32);
        let wire = serde_json::to_value(&export).unwrap();
        assert_eq!(
            wire,
            json!({
                "apiVersion": "apis.kcp.io/v1alpha1",
                "kind": "APIExport",
                "metadata": {"name": "widgets"},
                "spec": {
                    "latestResourceSchemas": ["v1.widgets.example.io"],
                    "identity": {"secretRef": {"name": "widgets", "namespace": "kcp-system"}},
                    "maximalPermissionPolicy": {"local": {}},
                    "permissionClaims": [{"resource": "configmaps", "all": true}]
                },
                "status": {"identityHash": "ab".repeat(32)}
            })
        );
        assert_eq!(serde_json::from_value::<ApiExport>(wire).unwrap(), export);
    }

    #[test]
    fn api_resource_schema_keeps_the_schema_and_defaults_served() {
        let wire = json!({
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIResourceSchema",
            "metadata": {"name": "v1.widgets.example.io"},
            "spec": {
                "group": "example.io",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1",
                    "storage": true,
                    "schema": {"type": "object", "properties": {"spec": {"type": "object"}}},
                    "subresources": {"status": {}}
                }]
            }
        });
        let schema: ApiResourceSchema = serde_json::from_value(wire).unwrap();
        let version = &schema.spec.versions[0];
        assert!(version.served, "served defaults to true");
        assert_eq!(version.schema["properties"]["spec"]["type"], "object");
        let back = serde_json::to_value(&schema).unwrap();
        assert_eq!(back["spec"]["versions"][0]["served"], true);
        assert_eq!(back["spec"]["versions"][0]["subresources"], json!({"status": {}}));
        assert!(back.get("status").is_none(), "APIResourceSchemas have no status");
    }

    #[test]
    fn api_binding_wire_names_match_kcp() {
        let mut binding = ApiBinding::new(named("widgets"));
        binding.spec.reference.export =
            Some(ExportBindingReference { path: "root:org".into(), name: "widgets".into() });
        binding.spec.permission_claims = vec![AcceptablePermissionClaim {
            claim: PermissionClaim { resource: "configmaps".into(), all: true, ..Default::default() },
            state: "Accepted".into(),
        }];
        binding.status.phase = BINDING_PHASE_BOUND.into();
        binding.status.api_export_cluster_name = "2x7a".into();
        binding.status.bound_resources = vec![BoundApiResource {
            group: "example.io".into(),
            resource: "widgets".into(),
            schema: BoundApiResourceSchema {
                name: "v1.widgets.example.io".into(),
                uid: "u1".into(),
                identity_hash: "ab".repeat(32),
            },
            storage_versions: vec!["v1".into()],
        }];
        let wire = serde_json::to_value(&binding).unwrap();
        assert_eq!(
            wire["spec"],
            json!({
                "reference": {"export": {"path": "root:org", "name": "widgets"}},
                "permissionClaims": [{"resource": "configmaps", "all": true, "state": "Accepted"}]
            })
        );
        assert_eq!(
            wire["status"],
            json!({
                "phase": "Bound",
                "apiExportClusterName": "2x7a",
                "boundResources": [{
                    "group": "example.io",
                    "resource": "widgets",
                    "schema": {"name": "v1.widgets.example.io", "UID": "u1", "identityHash": "ab".repeat(32)},
                    "storageVersions": ["v1"]
                }]
            })
        );
        assert_eq!(serde_json::from_value::<ApiBinding>(wire).unwrap(), binding);
    }

    #[test]
    fn endpoint_slice_wire_names_match_kcp() {
        let mut slice = ApiExportEndpointSlice::new(named("widgets"));
        slice.spec.export = ExportBindingReference { path: String::new(), name: "widgets".into() };
        slice.status.endpoints = vec![ApiExportEndpoint { url: "https://shard-1/services/apiexport/x/widgets".into() }];
        let wire = serde_json::to_value(&slice).unwrap();
        assert_eq!(wire["spec"], json!({"export": {"name": "widgets"}}));
        assert_eq!(wire["status"], json!({"endpoints": [{"url": "https://shard-1/services/apiexport/x/widgets"}]}));
    }
}
