//! Discovery (`/api`, `/apis`, group and group-version documents, aggregated discovery),
//! `/version` and the OpenAPI v3 documents — all derived from the registry.

use crate::registry::{groups, resources_of, ResourceType};
use crate::rest::negotiate::{self, Representation};
use crate::rest::request_info::Target;
use crate::rest::status::{ApiError, ApiResult};
use crate::rest::{self, Response};
use parking_lot::Mutex;
use protocol::openapi::{self, OpenApiResource};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// The Kubernetes version this server behaves like.
pub const KUBE_MINOR: &str = "32";

/// Answers a discovery, version or OpenAPI request for one logical cluster, which serves
/// the resources `served` (built-in and its own custom ones).
pub fn handle(
    served: &[Arc<ResourceType>],
    target: &Target,
    accept: Option<&str>,
    query_hash: bool,
) -> ApiResult<Response> {
    let registry = served;
    let allow_aggregated = matches!(target, Target::CoreVersions | Target::Groups);
    let representation = negotiate::choose(accept, false, allow_aggregated)?;
    if let Representation::AggregatedDiscovery(version) = representation {
        let core = matches!(target, Target::CoreVersions);
        let body = aggregated(registry, core, version);
        let content_type = format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
        return Ok(rest::bytes_response(200, &content_type, serde_json::to_vec(&body).unwrap_or_default(), &[]));
    }
    let body = match target {
        Target::CoreVersions => json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}),
        Target::Groups => json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": groups(registry).into_iter().filter(|(g, _)| !g.is_empty()).map(|(g, v)| api_group(&g, &v)).collect::<Vec<_>>(),
        }),
        Target::Group(group) => match groups(registry).into_iter().find(|(g, _)| g == group && !g.is_empty()) {
            Some((g, versions)) => api_group(&g, &versions),
            None => return Err(not_found()),
        },
        Target::GroupVersion(group, version) => resource_list(registry, group, version)?,
        Target::Version => version_info(),
        Target::OpenApiRoot => openapi_root(registry),
        Target::OpenApiGroupVersion(gv) => {
            let mut response = rest::json_response(200, &openapi_document(registry, gv)?, &[]);
            if query_hash {
                // The hash in the URL names this exact document: clients may cache it forever.
                response
                    .headers_mut()
                    .insert(::http::header::CACHE_CONTROL, ::http::HeaderValue::from_static("public, immutable"));
            }
            return Ok(response);
        }
        Target::Resource(_) => return Err(not_found()),
    };
    Ok(rest::json_response(200, &body, &[]))
}

fn not_found() -> ApiError {
    ApiError::not_found_message("the server could not find the requested resource")
}

/// `/version`.
pub fn version_info() -> Value {
    json!({
        "major": "1",
        "minor": KUBE_MINOR,
        "gitVersion": format!("v1.{KUBE_MINOR}.0+atoll-{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "amd64" } else { std::env::consts::ARCH }),
    })
}

fn api_group(group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> =
        versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect();
    json!({"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": versions, "preferredVersion": versions[0]})
}

fn resource_list(registry: &[Arc<ResourceType>], group: &str, version: &str) -> ApiResult<Value> {
    let resources = resources_of(registry, group, version);
    if resources.is_empty() {
        return Err(not_found());
    }
    let mut entries = Vec::new();
    for rt in &resources {
        entries.push(json!({
            "name": rt.resource,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": rt.verbs(),
            "shortNames": rt.short_names,
            "categories": rt.categories,
        }));
        for sub in &rt.subresources {
            let (group, version, kind) = subresource_kind(rt, sub);
            let mut entry = json!({
                "name": format!("{}/{sub}", rt.resource),
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": kind,
                "verbs": subresource_verbs(sub),
            });
            if !group.is_empty() {
                entry["group"] = Value::from(group);
                entry["version"] = Value::from(version);
            }
            entries.push(entry);
        }
    }
    let group_version = protocol::gvr::GroupVersion::new(group, version).api_version();
    Ok(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": entries}))
}

/// Group, version and kind a subresource answers with: `scale` is autoscaling/v1 Scale.
fn subresource_kind<'a>(rt: &'a ResourceType, sub: &str) -> (&'a str, &'a str, &'a str) {
    match sub {
        "scale" => ("autoscaling", "v1", "Scale"),
        _ => ("", "", &rt.kind),
    }
}

fn subresource_verbs(sub: &str) -> &'static [&'static str] {
    match sub {
        "finalize" => &["update"],
        _ => &["get", "patch", "update"],
    }
}

fn aggregated(registry: &[Arc<ResourceType>], core: bool, version: &str) -> Value {
    let items: Vec<Value> = groups(registry)
        .into_iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| {
                    let resources: Vec<Value> =
                        resources_of(registry, &group, v).iter().map(|rt| aggregated_resource(rt)).collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": group}, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": format!("apidiscovery.k8s.io/{version}"), "metadata": {}, "items": items})
}

fn aggregated_resource(rt: &ResourceType) -> Value {
    let kind = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
    let subresources: Vec<Value> = rt
        .subresources
        .iter()
        .map(|sub| {
            let (group, version, sub_kind) = subresource_kind(rt, sub);
            let kind = match group {
                "" => kind.clone(),
                _ => json!({"group": group, "version": version, "kind": sub_kind}),
            };
            json!({"subresource": sub, "responseKind": kind, "verbs": subresource_verbs(sub)})
        })
        .collect();
    json!({
        "resource": rt.resource,
        "responseKind": kind,
        "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": rt.singular,
        "verbs": rt.verbs(),
        "shortNames": rt.short_names,
        "categories": rt.categories,
        "subresources": subresources,
    })
}

/// The OpenAPI description of one resource.
fn openapi_resource(rt: &ResourceType) -> OpenApiResource {
    OpenApiResource {
        resource: rt.resource.clone(),
        kind: rt.kind.clone(),
        namespaced: rt.namespaced,
        schema_name: rt.schema_name.clone(),
        list_kind: rt.list_kind(),
        verbs: rt.verbs().iter().map(|v| v.to_string()).collect(),
        subresources: rt.subresources.clone(),
    }
}

/// An OpenAPI document of a group-version and its hash.
type Document = (Arc<Value>, String);

/// The OpenAPI document of a group-version and its hash.
fn build_document(rows: &[Arc<ResourceType>], group: &str, version: &str) -> Document {
    let resources: Vec<OpenApiResource> = rows.iter().map(|rt| openapi_resource(rt)).collect();
    let custom = crate::openapi::components(rows);
    let components = if custom.is_empty() { openapi::builtin_components() } else { &custom };
    let document = openapi::group_version_document(group, version, &resources, components);
    let hash = openapi::document_hash(&serde_json::to_vec(&document).unwrap_or_default());
    (Arc::new(document), hash)
}

/// The document of one served group-version. Documents of rows without a custom schema
/// (built-ins and the rows features add at start-up) are the same in every logical
/// cluster, so they are built once per set of rows and kept; a group-version with custom
/// resources is built for its cluster.
fn document_of(registry: &[Arc<ResourceType>], group: &str, version: &str) -> Document {
    static DOCUMENTS: OnceLock<Mutex<HashMap<String, Document>>> = OnceLock::new();
    let rows = resources_of(registry, group, version);
    if rows.iter().any(|r| r.custom.is_some()) {
        return build_document(&rows, group, version);
    }
    let path = protocol::gvr::GroupVersion::new(group, version).url_prefix();
    let names: Vec<&str> = rows.iter().map(|r| r.resource.as_str()).collect();
    let key = format!("{path} {}", names.join(","));
    let documents = DOCUMENTS.get_or_init(Mutex::default);
    if let Some(document) = documents.lock().get(&key) {
        return document.clone();
    }
    let document = build_document(&rows, group, version);
    documents.lock().insert(key, document.clone());
    document
}

fn openapi_root(registry: &[Arc<ResourceType>]) -> Value {
    let mut paths = Vec::new();
    for (group, versions) in groups(registry) {
        for version in versions {
            let path = protocol::gvr::GroupVersion::new(group.clone(), version.clone()).url_prefix();
            paths.push((path, document_of(registry, &group, &version).1));
        }
    }
    openapi::discovery_root(paths)
}

fn openapi_document(registry: &[Arc<ResourceType>], path: &str) -> ApiResult<Value> {
    let path = path.trim_matches('/');
    groups(registry)
        .into_iter()
        .flat_map(|(group, versions)| versions.into_iter().map(move |v| (group.clone(), v)))
        .find(|(group, version)| {
            protocol::gvr::GroupVersion::new(group.as_str(), version.as_str()).url_prefix() == path
        })
        .map(|(group, version)| (*document_of(registry, &group, &version).0).clone())
        .ok_or_else(not_found)
}
