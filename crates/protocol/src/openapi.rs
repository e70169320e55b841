//! The OpenAPI v3 documents a kube-apiserver serves, built per logical cluster.
//!
//! A client meets them in this order:
//! 1. [`discovery_root`] is `GET /openapi/v3`: one entry per group-version, each pointing at
//!    that group-version's document with a content hash (so clients can cache it).
//! 2. [`group_version_document`] is `GET /openapi/v3/apis/<group>/<version>`: the REST
//!    operations of each resource plus every schema they reference.
//! 3. [`builtin_components`] are the schemas of the built-in kinds Atoll serves, generated
//!    once from `k8s-openapi` (and [`crate::types`]) and reshaped to what kube publishes.
//!
//! What stock kubectl v1.32 reads from these documents, and therefore must hold:
//! - `serverRelativeURL` starts with `/openapi/v3/` and does *not* carry the
//!   `/clusters/<name>` prefix: client-go sees the `/openapi/v3` root and re-adds the path
//!   of its kubeconfig server URL itself (`AbsPath`), see [`discovery_root`].
//! - Every PATCH operation of a kind carries `x-kubernetes-group-version-kind` (an object)
//!   and a `fieldValidation` parameter `in: query` directly in its own `parameters` (path
//!   level parameters are not looked at). kubectl's `queryParamVerifierV3` takes the first
//!   PATCH operation it finds for the kind, in Go's random map order, to decide whether the
//!   server validates fields; a single PATCH operation without the parameter (say on
//!   `/status`) makes kubectl fall back to client-side validation at random.
//! - Kind schemas carry `x-kubernetes-group-version-kind` (an array): `kubectl explain` and
//!   kubectl's OpenAPI-v3 strategic-merge patching find a kind's schema by it.
//! - The PATCH request body lists `application/strategic-merge-patch+json` only for kinds
//!   compiled into kube: kubectl then computes strategic merge patches from the schema's
//!   `x-kubernetes-patch-*` extensions; for other kinds it falls back to JSON merge patch.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use k8s_openapi::api::{coordination, core, events, rbac};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{json, Map, Value};

use crate::gvr::GroupVersion;
use crate::types::LogicalCluster;

/// Where a document's component schemas live; every `$ref` points below it.
pub const SCHEMA_REF_PREFIX: &str = "#/components/schemas/";
/// Components key of ObjectMeta, the schema `metadata` of every object is checked against.
pub const OBJECT_META_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
/// Components key of ListMeta, the `metadata` of list responses.
pub const LIST_META_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
/// Components key of the body of DELETE requests.
pub const DELETE_OPTIONS_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
/// Components key of the Status returned by deletes and errors.
pub const STATUS_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
/// Components key of the (opaque) body of PATCH requests.
pub const PATCH_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
/// Extension naming the kinds a schema (array) or an operation (single object) is about.
pub const GVK_EXTENSION: &str = "x-kubernetes-group-version-kind";
/// Extension that keeps unknown fields below a schema node instead of pruning them.
pub const PRESERVE_UNKNOWN_FIELDS: &str = "x-kubernetes-preserve-unknown-fields";

/// The `{"$ref": "#/components/schemas/<name>"}` schema pointing at a component.
pub fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("{SCHEMA_REF_PREFIX}{name}") })
}

/// The components key a `$ref` points at, if it points into `components.schemas`.
///
/// Swagger 2.0 style `#/definitions/<name>` is accepted too, so schemas copied from older
/// documents still resolve.
pub fn ref_name(reference: &str) -> Option<&str> {
    reference.strip_prefix(SCHEMA_REF_PREFIX).or_else(|| reference.strip_prefix("#/definitions/"))
}

// ---------------------------------------------------------------------------------------
// Discovery root
// ---------------------------------------------------------------------------------------

/// The `/openapi/v3` discovery document: `{"paths": {"api/v1": {"serverRelativeURL":
/// "/openapi/v3/api/v1?hash=…"}, …}}`.
///
/// `paths` yields `(path, hash)` pairs such as `("apis/coordination.k8s.io/v1", hash)`;
/// leading and trailing slashes are ignored. The hash must be URL-safe (e.g. from
/// [`document_hash`]); clients use the whole URL as a cache key, so it has to change
/// whenever the document does.
///
/// The URL deliberately lacks the logical cluster's `/clusters/<name>` prefix. client-go
/// (`openapi/client.go` since kubernetes#117495, in kubectl v1.32) fetches a URL that
/// starts with `/openapi/v3` through `AbsPath`, which prepends the path of the kubeconfig
/// server URL
/// (`https://host/clusters/root` → `/clusters/root/openapi/v3/api/v1?hash=…`). Any other
/// URL is used verbatim as a server-absolute request URI, which would bake the shard's own
/// view of the path into the document and break behind the front-proxy, where the user's
/// path (`/clusters/root:org:team`) differs from the shard's.
pub fn discovery_root(paths: impl IntoIterator<Item = (String, String)>) -> Value {
    let entries: BTreeMap<String, Value> = paths
        .into_iter()
        .map(|(path, hash)| {
            let path = path.trim_matches('/').to_owned();
            let url = format!("/openapi/v3/{path}?hash={hash}");
            (path, json!({ "serverRelativeURL": url }))
        })
        .collect();
    json!({ "paths": entries })
}

/// A stable content hash of a serialized document, as 16 upper-case hex digits.
///
/// FNV-1a (64 bit) over the bytes the server will send: deterministic across processes and
/// builds, which is all a cache-busting `?hash=` needs. It is not collision resistant and
/// must not be used where an adversary picks the input.
pub fn document_hash(document_bytes: &[u8]) -> String {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = document_bytes.iter().fold(OFFSET_BASIS, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(PRIME));
    format!("{hash:016X}")
}

// ---------------------------------------------------------------------------------------
// Group-version documents
// ---------------------------------------------------------------------------------------

/// One resource of a group-version, as [`group_version_document`] describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenApiResource {
    /// Plural resource name, the URL segment (`configmaps`).
    pub resource: String,
    /// Kind of the objects (`ConfigMap`).
    pub kind: String,
    /// Whether objects live in namespaces (`/namespaces/{namespace}/…` paths).
    pub namespaced: bool,
    /// Components key of the kind's schema, e.g. `io.k8s.api.core.v1.ConfigMap`. The list
    /// schema's key is this with the trailing kind replaced by `list_kind`.
    pub schema_name: String,
    /// Kind of list responses (`ConfigMapList`).
    pub list_kind: String,
    /// Kube verbs the resource supports (`get`, `list`, `watch`, `create`, `update`,
    /// `patch`, `delete`, `deletecollection`); each becomes its operations.
    pub verbs: Vec<String>,
    /// Subresources. `status` (get/put/patch of the parent kind) and `finalize` (put) are
    /// described; others (e.g. `scale`) carry other kinds and are left out.
    pub subresources: Vec<String>,
}

/// A complete OpenAPI 3.0 document for one group-version, as kube-apiserver serves at
/// `/openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`.
///
/// Paths and operations follow kube's naming (operation IDs, tags, parameters, media
/// types). `components.schemas` holds each kind's and list's schema and everything they
/// reference, transitively. Schemas are looked up in `components` first and in
/// [`builtin_components`] second, so a caller describing custom resources only passes their
/// own kind schemas; ObjectMeta, Status and friends come from the built-ins. Kind and list
/// schemas get `x-kubernetes-group-version-kind` added when missing; a missing list schema
/// is synthesised from the kind, and a missing kind schema becomes an object schema that
/// preserves unknown fields, so that the document stays valid.
pub fn group_version_document(
    group: &str,
    version: &str,
    resources: &[OpenApiResource],
    components: &Map<String, Value>,
) -> Value {
    let gv = GroupVersion::new(group, version);
    let mut paths = BTreeMap::new();
    for resource in resources {
        add_resource_paths(&mut paths, &gv, resource);
    }
    let schemas = document_schemas(&gv, resources, components);
    json!({
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "in": "header",
                    "name": "authorization",
                    "type": "apiKey"
                }
            }
        },
        "info": { "title": "Kubernetes", "version": "unversioned" },
        "openapi": "3.0.0",
        "paths": paths
    })
}

/// Where an operation is served, relative to a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    /// `…/<resource>` (in one namespace when namespaced).
    Collection,
    /// `…/<resource>` across all namespaces; only for namespaced resources.
    AllNamespaces,
    /// `…/<resource>/{name}`.
    Item,
    /// `…/<resource>/{name}/status`.
    Status,
    /// `…/<resource>/{name}/finalize`.
    Finalize,
}

/// What a request body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    None,
    Object,
    Patch,
    DeleteOptions,
}

/// What a successful response carries, and with which status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    Object(&'static [u16]),
    List,
    Status(&'static [u16]),
}

/// One row of the operation table: an HTTP method on an endpoint, served when the resource
/// supports `verb`.
struct OperationSpec {
    endpoint: Endpoint,
    method: &'static str,
    verb: &'static str,
    action: &'static str,
    id_prefix: &'static str,
    description: &'static str,
    parameters: &'static [&'static str],
    body: Body,
    reply: Reply,
}

const LIST_PARAMETERS: &[&str] = &[
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];
const WRITE_PARAMETERS: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];
const PATCH_PARAMETERS: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "force"];
const DELETE_PARAMETERS: &[&str] = &["dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy"];
const DELETE_COLLECTION_PARAMETERS: &[&str] = &[
    "continue",
    "dryRun",
    "fieldSelector",
    "gracePeriodSeconds",
    "labelSelector",
    "limit",
    "orphanDependents",
    "propagationPolicy",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
];

/// Every operation kube describes for a resource; rows whose verb or endpoint the resource
/// lacks are skipped.
const OPERATIONS: &[OperationSpec] = &[
    OperationSpec {
        endpoint: Endpoint::Collection,
        method: "get",
        verb: "list",
        action: "list",
        id_prefix: "list",
        description: "list or watch objects of kind",
        parameters: LIST_PARAMETERS,
        body: Body::None,
        reply: Reply::List,
    },
    OperationSpec {
        endpoint: Endpoint::Collection,
        method: "post",
        verb: "create",
        action: "post",
        id_prefix: "create",
        description: "create a",
        parameters: WRITE_PARAMETERS,
        body: Body::Object,
        reply: Reply::Object(&[200, 201, 202]),
    },
    OperationSpec {
        endpoint: Endpoint::Collection,
        method: "delete",
        verb: "deletecollection",
        action: "deletecollection",
        id_prefix: "delete",
        description: "delete collection of",
        parameters: DELETE_COLLECTION_PARAMETERS,
        body: Body::DeleteOptions,
        reply: Reply::Status(&[200]),
    },
    OperationSpec {
        endpoint: Endpoint::AllNamespaces,
        method: "get",
        verb: "list",
        action: "list",
        id_prefix: "list",
        description: "list or watch objects of kind",
        parameters: LIST_PARAMETERS,
        body: Body::None,
        reply: Reply::List,
    },
    OperationSpec {
        endpoint: Endpoint::Item,
        method: "get",
        verb: "get",
        action: "get",
        id_prefix: "read",
        description: "read the specified",
        parameters: &[],
        body: Body::None,
        reply: Reply::Object(&[200]),
    },
    OperationSpec {
        endpoint: Endpoint::Item,
        method: "put",
        verb: "update",
        action: "put",
        id_prefix: "replace",
        description: "replace the specified",
        parameters: WRITE_PARAMETERS,
        body: Body::Object,
        reply: Reply::Object(&[200, 201]),
    },
    OperationSpec {
        endpoint: Endpoint::Item,
        method: "patch",
        verb: "patch",
        action: "patch",
        id_prefix: "patch",
        description: "partially update the specified",
        parameters: PATCH_PARAMETERS,
        body: Body::Patch,
        reply: Reply::Object(&[200, 201]),
    },
    OperationSpec {
        endpoint: Endpoint::Item,
        method: "delete",
        verb: "delete",
        action: "delete",
        id_prefix: "delete",
        description: "delete a",
        parameters: DELETE_PARAMETERS,
        body: Body::DeleteOptions,
        reply: Reply::Status(&[200, 202]),
    },
    OperationSpec {
        endpoint: Endpoint::Status,
        method: "get",
        verb: "get",
        action: "get",
        id_prefix: "read",
        description: "read status of the specified",
        parameters: &[],
        body: Body::None,
        reply: Reply::Object(&[200]),
    },
    OperationSpec {
        endpoint: Endpoint::Status,
        method: "put",
        verb: "update",
        action: "put",
        id_prefix: "replace",
        description: "replace status of the specified",
        parameters: WRITE_PARAMETERS,
        body: Body::Object,
        reply: Reply::Object(&[200, 201]),
    },
    OperationSpec {
        endpoint: Endpoint::Status,
        method: "patch",
        verb: "patch",
        action: "patch",
        id_prefix: "patch",
        description: "partially update status of the specified",
        parameters: PATCH_PARAMETERS,
        body: Body::Patch,
        reply: Reply::Object(&[200, 201]),
    },
    OperationSpec {
        endpoint: Endpoint::Finalize,
        method: "put",
        verb: "update",
        action: "put",
        id_prefix: "replace",
        description: "replace finalize of the specified",
        parameters: WRITE_PARAMETERS,
        body: Body::Object,
        reply: Reply::Object(&[200, 201]),
    },
];

/// Query parameters by name: (name, schema type, description).
const QUERY_PARAMETERS: &[(&str, &str, &str)] = &[
    ("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\". The server may send bookmarks at its discretion; this field is ignored unless watch is true."),
    ("continue", "string", "The continue option should be set when retrieving more results from the server. It is the continue token of a previous list response, used with otherwise identical query parameters. An expired token is answered with 410 ResourceExpired."),
    ("dryRun", "string", "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed"),
    ("fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters. It is required for apply requests (application/apply-patch) but optional otherwise."),
    ("fieldSelector", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."),
    ("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: unknown fields are silently dropped and all but the last duplicate field are ignored. - Warn: a warning is sent via the standard warning response header for each unknown field that is dropped and each duplicate field; the request still succeeds. This is the default. - Strict: the request fails with a BadRequest error naming all unknown and duplicate fields."),
    ("force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."),
    ("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used."),
    ("labelSelector", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."),
    ("limit", "integer", "limit is a maximum number of responses to return for a list call. If more items exist, the server sets the continue field on the list metadata to a token that retrieves the next chunk. This field is not supported if watch is true."),
    ("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both."),
    ("pretty", "string", "If 'true', then the output is pretty printed."),
    ("propagationPolicy", "string", "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."),
    ("resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"),
    ("resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"),
    ("sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`. The watch stream then begins with synthetic events for the current state of the collection, followed by a bookmark annotated \"k8s.io/initial-events-end\"."),
    ("timeoutSeconds", "integer", "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity."),
    ("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion."),
];

/// The query parameter `name` as kube writes it: `in: query`, with a schema.
fn query_parameter(name: &str) -> Value {
    let (_, schema_type, description) =
        QUERY_PARAMETERS.iter().find(|(known, _, _)| *known == name).copied().unwrap_or((name, "string", ""));
    debug_assert!(!description.is_empty(), "query parameter {name} missing from QUERY_PARAMETERS");
    json!({
        "description": description,
        "in": "query",
        "name": name,
        "schema": { "type": schema_type, "uniqueItems": true }
    })
}

fn path_parameter(name: &str, description: &str) -> Value {
    json!({
        "description": description,
        "in": "path",
        "name": name,
        "required": true,
        "schema": { "type": "string", "uniqueItems": true }
    })
}

/// Everything operations of one resource share.
struct ResourceContext<'a> {
    resource: &'a OpenApiResource,
    gvk: Value,
    id_group_version: String,
    tag: String,
    strategic_merge_patch: bool,
}

fn add_resource_paths(paths: &mut BTreeMap<String, Value>, gv: &GroupVersion, resource: &OpenApiResource) {
    let context = ResourceContext {
        resource,
        gvk: json!({ "group": gv.group, "kind": resource.kind, "version": gv.version }),
        id_group_version: format!("{}{}", upper_camel(&group_words(&gv.group)), capitalize(&gv.version)),
        tag: format!("{}_{}", lower_camel(&group_words(&gv.group)), gv.version),
        strategic_merge_patch: compiled_into_kube(&resource.schema_name),
    };
    for endpoint in
        [Endpoint::Collection, Endpoint::AllNamespaces, Endpoint::Item, Endpoint::Status, Endpoint::Finalize]
    {
        let Some(path) = endpoint_path(gv, resource, endpoint) else {
            continue;
        };
        let operations: Vec<(&str, Value)> = OPERATIONS
            .iter()
            .filter(|spec| spec.endpoint == endpoint && resource.verbs.iter().any(|verb| verb == spec.verb))
            .map(|spec| (spec.method, operation(&context, spec)))
            .collect();
        if operations.is_empty() {
            continue;
        }
        let mut item = Map::new();
        for (method, operation) in operations {
            item.insert(method.to_owned(), operation);
        }
        item.insert("parameters".to_owned(), Value::Array(path_parameters(resource, endpoint)));
        item.sort_keys();
        paths.insert(path, Value::Object(item));
    }
}

/// The URL path of an endpoint, or None when the resource has no such endpoint.
fn endpoint_path(gv: &GroupVersion, resource: &OpenApiResource, endpoint: Endpoint) -> Option<String> {
    let base = format!("/{}", gv.url_prefix());
    let collection = if resource.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", resource.resource)
    } else {
        format!("{base}/{}", resource.resource)
    };
    let has_subresource = |name: &str| resource.subresources.iter().any(|sub| sub == name);
    match endpoint {
        Endpoint::Collection => Some(collection),
        Endpoint::AllNamespaces => resource.namespaced.then(|| format!("{base}/{}", resource.resource)),
        Endpoint::Item => Some(format!("{collection}/{{name}}")),
        Endpoint::Status => has_subresource("status").then(|| format!("{collection}/{{name}}/status")),
        Endpoint::Finalize => has_subresource("finalize").then(|| format!("{collection}/{{name}}/finalize")),
    }
}

fn path_parameters(resource: &OpenApiResource, endpoint: Endpoint) -> Vec<Value> {
    let mut parameters = Vec::new();
    if matches!(endpoint, Endpoint::Item | Endpoint::Status | Endpoint::Finalize) {
        parameters.push(path_parameter("name", &format!("name of the {}", resource.kind)));
    }
    if resource.namespaced && endpoint != Endpoint::AllNamespaces {
        parameters.push(path_parameter("namespace", "object name and auth scope, such as for teams and projects"));
    }
    parameters.push(query_parameter("pretty"));
    parameters
}

fn operation(context: &ResourceContext<'_>, spec: &OperationSpec) -> Value {
    let resource = context.resource;
    let mut operation = Map::new();
    operation.insert("description".into(), json!(format!("{} {}", spec.description, resource.kind)));
    operation.insert("operationId".into(), json!(operation_id(context, spec)));
    if !spec.parameters.is_empty() {
        let parameters = spec.parameters.iter().map(|name| query_parameter(name)).collect();
        operation.insert("parameters".into(), Value::Array(parameters));
    }
    if let Some(body) = request_body(context, spec.body) {
        operation.insert("requestBody".into(), body);
    }
    operation.insert("responses".into(), responses(context, spec.reply));
    operation.insert("tags".into(), json!([context.tag]));
    operation.insert("x-kubernetes-action".into(), json!(spec.action));
    operation.insert(GVK_EXTENSION.into(), context.gvk.clone());
    Value::Object(operation)
}

/// kube's operation IDs: `patchCoreV1NamespacedConfigMapStatus`,
/// `deleteRbacAuthorizationV1CollectionClusterRole`, `listCoreV1SecretForAllNamespaces`.
fn operation_id(context: &ResourceContext<'_>, spec: &OperationSpec) -> String {
    let collection = if spec.action == "deletecollection" { "Collection" } else { "" };
    let namespaced =
        if context.resource.namespaced && spec.endpoint != Endpoint::AllNamespaces { "Namespaced" } else { "" };
    let suffix = match spec.endpoint {
        Endpoint::AllNamespaces => "ForAllNamespaces",
        Endpoint::Status => "Status",
        Endpoint::Finalize => "Finalize",
        Endpoint::Collection | Endpoint::Item => "",
    };
    format!("{}{}{collection}{namespaced}{}{suffix}", spec.id_prefix, context.id_group_version, context.resource.kind)
}

fn request_body(context: &ResourceContext<'_>, body: Body) -> Option<Value> {
    match body {
        Body::None => None,
        Body::Object => Some(json!({
            "content": { "*/*": { "schema": schema_ref(&context.resource.schema_name) } },
            "required": true
        })),
        Body::DeleteOptions => Some(json!({
            "content": { "*/*": { "schema": schema_ref(DELETE_OPTIONS_SCHEMA) } }
        })),
        Body::Patch => {
            let mut media_types =
                vec!["application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"];
            if context.strategic_merge_patch {
                media_types.push("application/strategic-merge-patch+json");
            }
            Some(json!({ "content": media_type_map(&media_types, PATCH_SCHEMA), "required": true }))
        }
    }
}

fn responses(context: &ResourceContext<'_>, reply: Reply) -> Value {
    let resource = context.resource;
    let (schema, codes, media_types): (String, &[u16], &[&str]) = match reply {
        Reply::Object(codes) => (resource.schema_name.clone(), codes, &["application/json", "application/yaml"]),
        Reply::Status(codes) => (STATUS_SCHEMA.to_owned(), codes, &["application/json", "application/yaml"]),
        Reply::List => (
            list_schema_name(resource),
            &[200],
            &["application/json", "application/json;stream=watch", "application/yaml"],
        ),
    };
    let mut responses = Map::new();
    for code in codes {
        let description = match code {
            201 => "Created",
            202 => "Accepted",
            _ => "OK",
        };
        responses.insert(
            code.to_string(),
            json!({ "content": media_type_map(media_types, &schema), "description": description }),
        );
    }
    responses.insert("401".into(), json!({ "description": "Unauthorized" }));
    Value::Object(responses)
}

fn media_type_map(media_types: &[&str], schema_name: &str) -> Value {
    let content: Map<String, Value> = media_types
        .iter()
        .map(|media_type| ((*media_type).to_owned(), json!({ "schema": schema_ref(schema_name) })))
        .collect();
    Value::Object(content)
}

/// Kinds compiled into kube-apiserver accept strategic merge patches; custom resources
/// (whose schema names are reversed group names such as `io.kcp.core…`) do not.
fn compiled_into_kube(schema_name: &str) -> bool {
    schema_name.starts_with("io.k8s.api.") || schema_name.starts_with("io.k8s.apiextensions-apiserver.")
}

/// Components key of a resource's list schema.
fn list_schema_name(resource: &OpenApiResource) -> String {
    match resource.schema_name.strip_suffix(&resource.kind) {
        Some(prefix) => format!("{prefix}{}", resource.list_kind),
        None => format!("{}List", resource.schema_name),
    }
}

/// Words of a group for operation IDs and tags: `rbac.authorization.k8s.io` → `rbac`,
/// `authorization`; the core group is `core`.
fn group_words(group: &str) -> Vec<&str> {
    if group.is_empty() {
        return vec!["core"];
    }
    let group = group.strip_suffix(".k8s.io").unwrap_or(group);
    group.split(['.', '-']).filter(|word| !word.is_empty()).collect()
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn upper_camel(words: &[&str]) -> String {
    words.iter().map(|word| capitalize(word)).collect()
}

fn lower_camel(words: &[&str]) -> String {
    let mut camel = upper_camel(words);
    if let Some(first) = camel.get(..1) {
        let lower = first.to_lowercase();
        camel.replace_range(..1, &lower);
    }
    camel
}

/// The schemas a group-version document carries: its kinds and lists, the schemas its
/// operations name, and everything they reference.
fn document_schemas(
    gv: &GroupVersion,
    resources: &[OpenApiResource],
    components: &Map<String, Value>,
) -> Map<String, Value> {
    let mut schemas: BTreeMap<String, Value> = BTreeMap::new();
    for resource in resources {
        let kind_gvk = gvk_value(&gv.group, &gv.version, &resource.kind);
        let kind_schema = match lookup_schema(components, &resource.schema_name) {
            Some(schema) => with_gvk(schema.clone(), kind_gvk),
            None => {
                json!({ "type": "object", PRESERVE_UNKNOWN_FIELDS: true, GVK_EXTENSION: [kind_gvk] })
            }
        };
        schemas.insert(resource.schema_name.clone(), kind_schema);
        let list_name = list_schema_name(resource);
        let list_gvk = gvk_value(&gv.group, &gv.version, &resource.list_kind);
        let list_schema = match lookup_schema(components, &list_name) {
            Some(schema) => with_gvk(schema.clone(), list_gvk),
            None => list_schema(&resource.schema_name, &resource.kind, list_gvk),
        };
        schemas.insert(list_name, list_schema);
    }
    let mut pending: Vec<String> = [DELETE_OPTIONS_SCHEMA, STATUS_SCHEMA, PATCH_SCHEMA].map(String::from).to_vec();
    for schema in schemas.values() {
        collect_refs(schema, &mut pending);
    }
    // Each name is inserted at most once, so this ends after at most as many rounds as
    // there are distinct schemas.
    while let Some(name) = pending.pop() {
        if schemas.contains_key(&name) {
            continue;
        }
        if let Some(schema) = lookup_schema(components, &name) {
            collect_refs(schema, &mut pending);
            schemas.insert(name, schema.clone());
        }
    }
    schemas.into_iter().collect()
}

/// A component schema by name: the caller's first, the built-ins second.
pub fn lookup_schema<'a>(components: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    components.get(name).or_else(|| builtin_components().get(name))
}

/// Pushes the component names of every `$ref` inside `schema`.
fn collect_refs(schema: &Value, names: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(name) = map.get("$ref").and_then(Value::as_str).and_then(ref_name) {
                names.push(name.to_owned());
            }
            map.values().for_each(|value| collect_refs(value, names));
        }
        Value::Array(values) => values.iter().for_each(|value| collect_refs(value, names)),
        _ => {}
    }
}

fn gvk_value(group: &str, version: &str, kind: &str) -> Value {
    json!({ "group": group, "kind": kind, "version": version })
}

/// `schema` with `gvk` in its `x-kubernetes-group-version-kind` list.
fn with_gvk(mut schema: Value, gvk: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        let entry = map.entry(GVK_EXTENSION).or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(gvks) = entry {
            if !gvks.contains(&gvk) {
                gvks.push(gvk);
            }
        }
    }
    schema
}

/// A list schema shaped like kube's (`ConfigMapList`): apiVersion, kind, ListMeta metadata
/// and the required `items`.
fn list_schema(item_schema: &str, item_kind: &str, list_gvk: Value) -> Value {
    json!({
        "description": format!("{item_kind}List is a list of {item_kind} objects."),
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
                "type": "string"
            },
            "items": {
                "description": format!("items is the list of {item_kind} objects."),
                "items": schema_ref(item_schema),
                "type": "array"
            },
            "kind": {
                "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "type": "string"
            },
            "metadata": {
                "allOf": [schema_ref(LIST_META_SCHEMA)],
                "default": {},
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
            }
        },
        "required": ["items"],
        "type": "object",
        GVK_EXTENSION: [list_gvk]
    })
}

// ---------------------------------------------------------------------------------------
// Built-in component schemas
// ---------------------------------------------------------------------------------------

/// A built-in kind: its identity, its schema's components key and how to generate it.
struct BuiltinKind {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    schema_name: fn() -> Cow<'static, str>,
    generate: fn(&mut SchemaGenerator) -> Schema,
}

/// Builds a [`BuiltinKind`] from a type implementing both `k8s_openapi::Resource` and
/// `JsonSchema`, so group, version and kind cannot drift from the type.
macro_rules! builtin_kind {
    ($ty:ty) => {
        BuiltinKind {
            group: <$ty as k8s_openapi::Resource>::GROUP,
            version: <$ty as k8s_openapi::Resource>::VERSION,
            kind: <$ty as k8s_openapi::Resource>::KIND,
            schema_name: <$ty as JsonSchema>::schema_name,
            generate: SchemaGenerator::subschema_for::<$ty>,
        }
    };
}

/// The kinds Atoll serves with built-in storage, in discovery order.
const BUILTIN_KINDS: &[BuiltinKind] = &[
    builtin_kind!(core::v1::Namespace),
    builtin_kind!(core::v1::ConfigMap),
    builtin_kind!(core::v1::Secret),
    builtin_kind!(core::v1::ServiceAccount),
    builtin_kind!(core::v1::Event),
    builtin_kind!(events::v1::Event),
    builtin_kind!(coordination::v1::Lease),
    builtin_kind!(rbac::v1::Role),
    builtin_kind!(rbac::v1::RoleBinding),
    builtin_kind!(rbac::v1::ClusterRole),
    builtin_kind!(rbac::v1::ClusterRoleBinding),
    builtin_kind!(apiextensions::CustomResourceDefinition),
    builtin_kind!(LogicalCluster),
];

/// Schemas every document may need besides the kinds: operation bodies and replies, list
/// metadata, and the special forms (Quantity, IntOrString, RawExtension) future kinds and
/// custom resources reference.
const SUPPORT_SCHEMAS: &[fn(&mut SchemaGenerator) -> Schema] = &[
    SchemaGenerator::subschema_for::<meta::ListMeta>,
    SchemaGenerator::subschema_for::<meta::DeleteOptions>,
    SchemaGenerator::subschema_for::<meta::Status>,
    SchemaGenerator::subschema_for::<meta::Patch>,
    SchemaGenerator::subschema_for::<RawExtension>,
    SchemaGenerator::subschema_for::<Quantity>,
    SchemaGenerator::subschema_for::<IntOrString>,
];

/// Meta kinds that carry a GVK in kube's documents; kube lists one per group, the core one
/// is what clients look for.
const META_KINDS: &[(&str, &str)] = &[(DELETE_OPTIONS_SCHEMA, "DeleteOptions"), (STATUS_SCHEMA, "Status")];

/// All built-in component schemas, keyed like kube's (`io.k8s.api.core.v1.ConfigMap`), with
/// OpenAPI 3.0 `$ref`s (`#/components/schemas/…`), generated on first use.
///
/// Covers core/v1 Namespace, ConfigMap, Secret, ServiceAccount, Event; events.k8s.io/v1
/// Event; coordination.k8s.io/v1 Lease; rbac.authorization.k8s.io/v1 Role, RoleBinding,
/// ClusterRole, ClusterRoleBinding; apiextensions.k8s.io/v1 CustomResourceDefinition;
/// core.kcp.io/v1alpha1 LogicalCluster — each with its List — plus everything they
/// reference and the schemas operations name (DeleteOptions, Status, Patch).
///
/// Generated from k8s-openapi with schemars' OpenAPI 3 settings, then reshaped where
/// k8s-openapi and kube differ: Quantity and IntOrString use kube's `oneOf` forms, JSON
/// and the JSONSchemaPropsOr* unions are bare descriptions, `metadata` is never required,
/// and the list-merge extensions kubectl's strategic merge patch needs are present.
/// RawExtension, JSON, FieldsV1 and Patch additionally carry
/// `x-kubernetes-preserve-unknown-fields: true` (kube leaves them as bare `type: object`
/// or typeless, meaning "anything"): [`crate::schema`] then keeps their contents instead of
/// pruning them, and clients ignore the extension.
pub fn builtin_components() -> &'static Map<String, Value> {
    static COMPONENTS: OnceLock<Map<String, Value>> = OnceLock::new();
    COMPONENTS.get_or_init(generate_builtin_components)
}

/// Components key of the schema for a built-in kind or its list, e.g. (`""`, `v1`,
/// `ConfigMapList`) → `io.k8s.api.core.v1.ConfigMapList`.
pub fn schema_name_for(group: &str, version: &str, kind: &str) -> Option<String> {
    BUILTIN_KINDS.iter().filter(|builtin| builtin.group == group && builtin.version == version).find_map(|builtin| {
        let name = (builtin.schema_name)();
        if builtin.kind == kind {
            Some(name.into_owned())
        } else if kind.strip_suffix("List") == Some(builtin.kind) {
            Some(format!("{name}List"))
        } else {
            None
        }
    })
}

fn generate_builtin_components() -> Map<String, Value> {
    let mut generator = SchemaSettings::openapi3().into_generator();
    for builtin in BUILTIN_KINDS {
        (builtin.generate)(&mut generator);
    }
    for generate in SUPPORT_SCHEMAS {
        generate(&mut generator);
    }
    let mut components = generator.take_definitions(true);
    for (name, schema) in components.iter_mut() {
        if name.starts_with(ATOLL_SCHEMA_PREFIX) {
            unwrap_descriptions(schema);
        }
    }
    apply_kube_forms(&mut components);
    for schema in components.values_mut() {
        drop_required_metadata(schema);
    }
    apply_list_semantics(&mut components);
    for builtin in BUILTIN_KINDS {
        let name = (builtin.schema_name)().into_owned();
        let gvk = gvk_value(builtin.group, builtin.version, builtin.kind);
        if let Some(schema) = components.get_mut(&name) {
            drop_type_meta_defaults(schema);
            *schema = with_gvk(schema.take(), gvk);
        }
        let list_gvk = gvk_value(builtin.group, builtin.version, &format!("{}List", builtin.kind));
        let list = list_schema(&name, builtin.kind, list_gvk);
        components.insert(format!("{name}List"), list);
    }
    for (name, kind) in META_KINDS {
        if let Some(schema) = components.get_mut(*name) {
            *schema = with_gvk(schema.take(), gvk_value("", "v1", kind));
        }
    }
    components.sort_keys();
    components
}

/// Schemas derived from Atoll's own types ([`crate::types`]) are named after their
/// reversed API group, as kube names custom resource schemas.
const ATOLL_SCHEMA_PREFIX: &str = "io.kcp.";

/// Joins the hard-wrapped lines doc comments bring into descriptions, keeping paragraph
/// breaks: kube's descriptions are unwrapped and `kubectl explain` re-wraps them to the
/// terminal, so a kept line break would print as a ragged early break.
fn unwrap_descriptions(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(text) if key == "description" => *text = unwrap_lines(text),
                    _ => unwrap_descriptions(value),
                }
            }
        }
        Value::Array(values) => values.iter_mut().for_each(unwrap_descriptions),
        _ => {}
    }
}

fn unwrap_lines(text: &str) -> String {
    let paragraphs: Vec<String> = text.split("\n\n").map(|paragraph| paragraph.replace('\n', " ")).collect();
    paragraphs.join("\n\n")
}

/// Serde defaults on `apiVersion` and `kind` of Atoll's kinds leak into the schema as
/// `default`s; kube's kind schemas have none, and a server defaulting from the schema
/// must not invent type meta.
fn drop_type_meta_defaults(schema: &mut Value) {
    for field in ["apiVersion", "kind"] {
        if let Some(Value::Object(property)) = schema.pointer_mut(&format!("/properties/{field}")) {
            property.remove("default");
        }
    }
}

/// Replaces k8s-openapi's rendering of special types by kube's OpenAPI v3 rendering.
fn apply_kube_forms(components: &mut Map<String, Value>) {
    let forms = [
        (
            "io.k8s.apimachinery.pkg.api.resource.Quantity",
            json!({ "oneOf": [{ "type": "string" }, { "type": "number" }] }),
        ),
        (
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
            json!({ "format": "int-or-string", "oneOf": [{ "type": "integer" }, { "type": "string" }] }),
        ),
        ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON", json!({ PRESERVE_UNKNOWN_FIELDS: true })),
        ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray", json!({})),
        ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool", json!({})),
        ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray", json!({})),
        ("io.k8s.apimachinery.pkg.runtime.RawExtension", json!({ "type": "object", PRESERVE_UNKNOWN_FIELDS: true })),
        ("io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1", json!({ "type": "object", PRESERVE_UNKNOWN_FIELDS: true })),
        (PATCH_SCHEMA, json!({ "type": "object", PRESERVE_UNKNOWN_FIELDS: true })),
    ];
    for (name, form) in forms {
        if let Some(schema) = components.get_mut(name) {
            *schema = keep_description(schema, form);
        }
    }
}

/// `form` with the description of `schema`, which k8s-openapi copied from kube.
fn keep_description(schema: &Value, form: Value) -> Value {
    let mut result = Map::new();
    if let Some(description) = schema.get("description") {
        result.insert("description".into(), description.clone());
    }
    if let Value::Object(form) = form {
        result.extend(form);
    }
    Value::Object(result)
}

/// k8s-openapi marks `metadata` required because its Rust field is not optional; kube never
/// requires it (`kubectl create` of a manifest without metadata.name must reach the server
/// to get kube's error, not a client-side schema error).
fn drop_required_metadata(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    let Some(Value::Array(required)) = map.get_mut("required") else {
        return;
    };
    required.retain(|field| field != "metadata");
    if required.is_empty() {
        map.remove("required");
    }
}

/// List semantics kube publishes (from Go struct tags) and k8s-openapi does not carry:
/// kubectl's strategic merge patch merges these lists by key instead of replacing them.
fn apply_list_semantics(components: &mut Map<String, Value>) {
    let map_list = |key: &str| {
        json!({
            "x-kubernetes-list-map-keys": [key],
            "x-kubernetes-list-type": "map",
            "x-kubernetes-patch-merge-key": key,
            "x-kubernetes-patch-strategy": "merge"
        })
    };
    let semantics = [
        (
            OBJECT_META_SCHEMA,
            "finalizers",
            json!({ "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge" }),
        ),
        (OBJECT_META_SCHEMA, "ownerReferences", map_list("uid")),
        ("io.k8s.api.core.v1.ServiceAccount", "secrets", map_list("name")),
        ("io.k8s.api.core.v1.NamespaceStatus", "conditions", map_list("type")),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
            "x-kubernetes-validations",
            map_list("rule"),
        ),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
            "conditions",
            json!({ "x-kubernetes-list-map-keys": ["type"], "x-kubernetes-list-type": "map" }),
        ),
    ];
    for (schema, property, extensions) in semantics {
        let target =
            components.get_mut(schema).and_then(|schema| schema.pointer_mut(&format!("/properties/{property}")));
        debug_assert!(target.is_some(), "{schema} has no property {property}");
        if let (Some(Value::Object(target)), Value::Object(extensions)) = (target, extensions) {
            target.extend(extensions);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(resource: &str, kind: &str, namespaced: bool, schema_name: &str) -> OpenApiResource {
        OpenApiResource {
            resource: resource.into(),
            kind: kind.into(),
            namespaced,
            schema_name: schema_name.into(),
            list_kind: format!("{kind}List"),
            verbs: ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
                .map(String::from)
                .to_vec(),
            subresources: Vec::new(),
        }
    }

    fn core_document() -> Value {
        let mut namespaces = resource("namespaces", "Namespace", false, "io.k8s.api.core.v1.Namespace");
        namespaces.subresources = vec!["status".into(), "finalize".into()];
        let configmaps = resource("configmaps", "ConfigMap", true, "io.k8s.api.core.v1.ConfigMap");
        group_version_document("", "v1", &[namespaces, configmaps], builtin_components())
    }

    #[test]
    fn discovery_root_urls_are_rooted_at_openapi_v3() {
        let root = discovery_root([
            ("api/v1".to_owned(), "ABC".to_owned()),
            ("/apis/coordination.k8s.io/v1".to_owned(), "DEF".to_owned()),
        ]);
        assert_eq!(
            root,
            json!({"paths": {
                "api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=ABC"},
                "apis/coordination.k8s.io/v1": {"serverRelativeURL": "/openapi/v3/apis/coordination.k8s.io/v1?hash=DEF"}
            }})
        );
    }

    #[test]
    fn document_hash_is_stable_and_content_sensitive() {
        assert_eq!(document_hash(b""), "CBF29CE484222325");
        assert_eq!(document_hash(b"a"), document_hash(b"a"));
        assert_ne!(document_hash(b"{\"a\":1}"), document_hash(b"{\"a\":2}"));
    }

    #[test]
    fn paths_and_operations_follow_kube() {
        let document = core_document();
        let cases = [
            ("/api/v1/namespaces", "get", "listCoreV1Namespace", "list"),
            ("/api/v1/namespaces", "post", "createCoreV1Namespace", "post"),
            ("/api/v1/namespaces", "delete", "deleteCoreV1CollectionNamespace", "deletecollection"),
            ("/api/v1/namespaces/{name}", "get", "readCoreV1Namespace", "get"),
            ("/api/v1/namespaces/{name}", "put", "replaceCoreV1Namespace", "put"),
            ("/api/v1/namespaces/{name}", "patch", "patchCoreV1Namespace", "patch"),
            ("/api/v1/namespaces/{name}", "delete", "deleteCoreV1Namespace", "delete"),
            ("/api/v1/namespaces/{name}/status", "patch", "patchCoreV1NamespaceStatus", "patch"),
            ("/api/v1/namespaces/{name}/finalize", "put", "replaceCoreV1NamespaceFinalize", "put"),
            ("/api/v1/namespaces/{namespace}/configmaps", "get", "listCoreV1NamespacedConfigMap", "list"),
            ("/api/v1/namespaces/{namespace}/configmaps/{name}", "patch", "patchCoreV1NamespacedConfigMap", "patch"),
            ("/api/v1/configmaps", "get", "listCoreV1ConfigMapForAllNamespaces", "list"),
        ];
        for (path, method, operation_id, action) in cases {
            let operation = &document["paths"][path][method];
            assert_eq!(operation["operationId"], operation_id, "{path} {method}");
            assert_eq!(operation["x-kubernetes-action"], action, "{path} {method}");
            assert!(operation[GVK_EXTENSION].is_object(), "{path} {method}");
        }
        assert!(document["paths"]["/api/v1/namespaces/{name}/finalize"].get("patch").is_none());
        assert!(document["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}/status"].is_null());
    }

    /// kubectl v1.32 `supportsQueryParamV3`: for each path's PATCH operation whose
    /// `x-kubernetes-group-version-kind` matches, look for an `in: query` parameter named
    /// `fieldValidation` in the operation's own parameters. Map order is random in Go, so
    /// every such operation must have it.
    #[test]
    fn every_patch_operation_advertises_field_validation() {
        let document = core_document();
        let mut patch_operations = 0;
        for (path, item) in document["paths"].as_object().unwrap() {
            let Some(patch) = item.get("patch") else {
                continue;
            };
            patch_operations += 1;
            assert!(patch[GVK_EXTENSION]["kind"].is_string(), "{path}");
            let parameters = patch["parameters"].as_array().unwrap();
            assert!(
                parameters.iter().any(|parameter| parameter["name"] == "fieldValidation" && parameter["in"] == "query"),
                "{path}"
            );
        }
        assert_eq!(patch_operations, 3);
    }

    #[test]
    fn strategic_merge_patch_only_for_kinds_compiled_into_kube() {
        let cluster = resource("logicalclusters", "LogicalCluster", false, "io.kcp.core.v1alpha1.LogicalCluster");
        let kcp = group_version_document("core.kcp.io", "v1alpha1", &[cluster], builtin_components());
        let kcp_patch = &kcp["paths"]["/apis/core.kcp.io/v1alpha1/logicalclusters/{name}"]["patch"];
        assert!(kcp_patch["requestBody"]["content"].get("application/strategic-merge-patch+json").is_none());
        assert!(kcp_patch["requestBody"]["content"].get("application/merge-patch+json").is_some());
        let core = core_document();
        let core_patch = &core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert!(core_patch["requestBody"]["content"].get("application/strategic-merge-patch+json").is_some());
    }

    #[test]
    fn document_carries_referenced_schemas_transitively() {
        let document = core_document();
        let schemas = document["components"]["schemas"].as_object().unwrap();
        for name in [
            "io.k8s.api.core.v1.ConfigMap",
            "io.k8s.api.core.v1.ConfigMapList",
            "io.k8s.api.core.v1.NamespaceSpec",
            OBJECT_META_SCHEMA,
            LIST_META_SCHEMA,
            "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
            "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
            DELETE_OPTIONS_SCHEMA,
            STATUS_SCHEMA,
            PATCH_SCHEMA,
        ] {
            assert!(schemas.contains_key(name), "{name}");
        }
        assert!(!schemas.contains_key("io.k8s.api.rbac.v1.Role"));
        assert_refs_resolve(&document, schemas);
        assert_eq!(document["openapi"], "3.0.0");
    }

    #[test]
    fn custom_resources_get_gvk_and_synthesised_list() {
        let mut components = Map::new();
        components.insert(
            "com.example.v1.Widget".into(),
            json!({"type": "object", "properties": {"spec": {"type": "object"}}}),
        );
        let widgets = resource("widgets", "Widget", true, "com.example.v1.Widget");
        let document = group_version_document("example.com", "v1", &[widgets], &components);
        let schemas = &document["components"]["schemas"];
        assert_eq!(
            schemas["com.example.v1.Widget"][GVK_EXTENSION],
            json!([{"group": "example.com", "kind": "Widget", "version": "v1"}])
        );
        assert_eq!(schemas["com.example.v1.WidgetList"][GVK_EXTENSION][0]["kind"], "WidgetList");
        assert!(schemas.get(LIST_META_SCHEMA).is_some());
        assert_eq!(
            document["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets"]["get"]["tags"],
            json!(["exampleCom_v1"])
        );
        assert_eq!(
            document["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets"]["get"]["operationId"],
            "listExampleComV1NamespacedWidget"
        );
    }

    #[test]
    fn schema_names_for_builtin_kinds() {
        let cases = [
            ("", "v1", "ConfigMap", Some("io.k8s.api.core.v1.ConfigMap")),
            ("", "v1", "ConfigMapList", Some("io.k8s.api.core.v1.ConfigMapList")),
            ("", "v1", "Event", Some("io.k8s.api.core.v1.Event")),
            ("events.k8s.io", "v1", "Event", Some("io.k8s.api.events.v1.Event")),
            ("coordination.k8s.io", "v1", "Lease", Some("io.k8s.api.coordination.v1.Lease")),
            (
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRoleBindingList",
                Some("io.k8s.api.rbac.v1.ClusterRoleBindingList"),
            ),
            (
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"),
            ),
            ("core.kcp.io", "v1alpha1", "LogicalCluster", Some("io.kcp.core.v1alpha1.LogicalCluster")),
            ("", "v1", "Pod", None),
            ("apps", "v1", "ConfigMap", None),
        ];
        for (group, version, kind, expected) in cases {
            assert_eq!(schema_name_for(group, version, kind).as_deref(), expected, "{group}/{version} {kind}");
        }
    }

    #[test]
    fn every_builtin_kind_and_list_carries_its_gvk() {
        let components = builtin_components();
        for builtin in BUILTIN_KINDS {
            for kind in [builtin.kind.to_owned(), format!("{}List", builtin.kind)] {
                let name = schema_name_for(builtin.group, builtin.version, &kind).unwrap();
                let gvks = &components[&name][GVK_EXTENSION];
                assert_eq!(
                    gvks,
                    &json!([{"group": builtin.group, "kind": kind, "version": builtin.version}]),
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn builtin_components_are_openapi_3_0() {
        let components = builtin_components();
        assert_refs_resolve(&Value::Object(components.clone()), components);
        for (name, schema) in components {
            visit_schema(schema, &mut |node| {
                for forbidden in ["$schema", "$defs", "definitions", "const", "examples", "nullable", "prefixItems"] {
                    assert!(node.get(forbidden).is_none(), "{forbidden} in {name}: {node:?}");
                }
                if let Some(kind) = node.get("type") {
                    assert!(kind.is_string(), "type must be one string in {name}");
                }
                if node.contains_key("$ref") {
                    assert_eq!(node.len(), 1, "OpenAPI 3.0 ignores siblings of $ref, in {name}");
                }
            });
        }
    }

    #[test]
    fn special_types_come_out_as_kube_publishes_them() {
        let components = builtin_components();
        let cases = [
            (
                "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
                &["type", "format"][..],
                json!({"type": "string", "format": "date-time"}),
            ),
            (
                "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
                &["format", "oneOf"][..],
                json!({"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]}),
            ),
            (
                "io.k8s.apimachinery.pkg.api.resource.Quantity",
                &["oneOf"][..],
                json!({"oneOf": [{"type": "string"}, {"type": "number"}]}),
            ),
            (
                "io.k8s.apimachinery.pkg.runtime.RawExtension",
                &["type", PRESERVE_UNKNOWN_FIELDS][..],
                json!({"type": "object", PRESERVE_UNKNOWN_FIELDS: true}),
            ),
            (
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
                &["type", PRESERVE_UNKNOWN_FIELDS][..],
                json!({PRESERVE_UNKNOWN_FIELDS: true}),
            ),
        ];
        for (name, keys, expected) in cases {
            let schema = &components[name];
            let picked: Map<String, Value> =
                keys.iter().filter_map(|key| Some(((*key).to_owned(), schema.get(*key)?.clone()))).collect();
            assert_eq!(Value::Object(picked), expected, "{name}");
            assert!(schema["description"].is_string(), "{name} keeps kube's description");
        }
        let config_map = &components["io.k8s.api.core.v1.ConfigMap"];
        assert!(config_map.get("required").is_none(), "metadata is not required");
        assert_eq!(config_map["properties"]["metadata"]["allOf"][0], schema_ref(OBJECT_META_SCHEMA));
        let finalizers = &components[OBJECT_META_SCHEMA]["properties"]["finalizers"];
        assert_eq!(finalizers["x-kubernetes-patch-strategy"], "merge");
    }

    #[test]
    fn logical_cluster_schema_uses_kcp_field_names() {
        let components = builtin_components();
        let cluster = &components["io.kcp.core.v1alpha1.LogicalCluster"];
        assert!(cluster["description"].as_str().unwrap().starts_with("LogicalCluster describes"));
        let spec = &components["io.kcp.core.v1alpha1.LogicalClusterSpec"]["properties"];
        for field in ["directlyDeletable", "owner", "initializers"] {
            assert!(spec[field]["description"].is_string(), "spec.{field}");
        }
        let status = &components["io.kcp.core.v1alpha1.LogicalClusterStatus"]["properties"];
        for field in ["URL", "phase", "conditions", "initializers"] {
            assert!(status[field]["description"].is_string(), "status.{field}");
        }
        assert_eq!(status["phase"]["enum"], json!(["Scheduling", "Initializing", "Ready", "Unavailable"]));
        let url_description = status["URL"]["description"].as_str().unwrap();
        assert!(!url_description.contains('\n'), "doc comment wrapping is joined");
        assert!(cluster["properties"]["apiVersion"].get("default").is_none());
        let owner = &components["io.kcp.core.v1alpha1.LogicalClusterOwner"];
        assert_eq!(owner["required"], json!(["apiVersion", "resource", "name", "cluster", "uid"]));
    }

    /// Calls `check` on `schema` and every subschema position below it (not on maps of
    /// property names, which may legitimately be named `$schema` or `nullable`).
    fn visit_schema(schema: &Value, check: &mut dyn FnMut(&Map<String, Value>)) {
        let Some(map) = schema.as_object() else {
            return;
        };
        check(map);
        if let Some(Value::Object(properties)) = map.get("properties") {
            properties.values().for_each(|property| visit_schema(property, check));
        }
        for key in ["items", "additionalProperties", "not"] {
            if let Some(subschema) = map.get(key) {
                visit_schema(subschema, check);
            }
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(subschemas)) = map.get(key) {
                subschemas.iter().for_each(|subschema| visit_schema(subschema, check));
            }
        }
    }

    fn assert_refs_resolve(document: &Value, schemas: &Map<String, Value>) {
        let mut names = Vec::new();
        collect_refs(document, &mut names);
        assert!(!names.is_empty());
        for name in names {
            assert!(schemas.contains_key(&name), "dangling $ref to {name}");
        }
    }
}
