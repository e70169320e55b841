//! `GET /openapi/v3/api/v1` and `/openapi/v3/apis/<group>/<version>`: a group-version's
//! paths and operations (kube's operation IDs, tags, parameters and media types) and the
//! transitive collection of the component schemas they reference.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::builtin::{builtin_components, builtin_schema};
use super::components::{
    collect_refs, gvk_value, list_schema, schema_ref, with_gvk, DELETE_OPTIONS_SCHEMA, GVK_EXTENSION, PATCH_SCHEMA,
    PRESERVE_UNKNOWN_FIELDS, STATUS_SCHEMA,
};
use crate::gvr::GroupVersion;

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
    if std::ptr::eq(components, builtin_components()) {
        return builtin_schema(name);
    }
    components.get(name).or_else(|| builtin_schema(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openapi::components::{assert_refs_resolve, LIST_META_SCHEMA, OBJECT_META_SCHEMA};

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
}
