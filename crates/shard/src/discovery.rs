//! Discovery (`/api`, `/apis`, group and group-version documents, aggregated discovery),
//! `/version` and the OpenAPI v3 documents — all derived from the registry.

use crate::http::negotiate::{self, Representation};
use crate::http::request_info::Target;
use crate::http::status::{ApiError, ApiResult};
use crate::http::{self, Response};
use crate::registry::{Registry, ResourceType, VERBS};
use protocol::openapi::{self, OpenApiResource};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// The Kubernetes version this server behaves like.
pub const KUBE_MINOR: &str = "32";

/// Answers a discovery, version or OpenAPI request for one logical cluster.
pub fn handle(registry: &Registry, target: &Target, accept: Option<&str>, query_hash: bool) -> ApiResult<Response> {
    let allow_aggregated = matches!(target, Target::CoreVersions | Target::Groups);
    let representation = negotiate::choose(accept, false, allow_aggregated)?;
    if let Representation::AggregatedDiscovery(version) = representation {
        let core = matches!(target, Target::CoreVersions);
        let body = aggregated(registry, core, version);
        let content_type = format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
        return Ok(http::bytes_response(200, &content_type, serde_json::to_vec(&body).unwrap_or_default(), &[]));
    }
    let body = match target {
        Target::CoreVersions => json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}),
        Target::Groups => json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": registry.groups().into_iter().filter(|(g, _)| !g.is_empty()).map(|(g, v)| api_group(&g, &v)).collect::<Vec<_>>(),
        }),
        Target::Group(group) => match registry.groups().into_iter().find(|(g, _)| g == group && !g.is_empty()) {
            Some((g, versions)) => api_group(&g, &versions),
            None => return Err(not_found()),
        },
        Target::GroupVersion(group, version) => resource_list(registry, group, version)?,
        Target::Version => version_info(),
        Target::OpenApiRoot => openapi_root(registry),
        Target::OpenApiGroupVersion(gv) => {
            let mut response = http::json_response(200, &openapi_document(registry, gv)?, &[]);
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
    Ok(http::json_response(200, &body, &[]))
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

fn resource_list(registry: &Registry, group: &str, version: &str) -> ApiResult<Value> {
    let resources = registry.resources_of(group, version);
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
            "verbs": VERBS,
            "shortNames": rt.short_names,
            "categories": rt.categories,
        }));
        for sub in rt.subresources {
            entries.push(json!({
                "name": format!("{}/{sub}", rt.resource),
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": subresource_verbs(sub),
            }));
        }
    }
    let group_version = protocol::gvr::GroupVersion::new(group, version).api_version();
    Ok(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": entries}))
}

fn subresource_verbs(sub: &str) -> &'static [&'static str] {
    match sub {
        "finalize" => &["update"],
        _ => &["get", "patch", "update"],
    }
}

fn aggregated(registry: &Registry, core: bool, version: &str) -> Value {
    let items: Vec<Value> = registry
        .groups()
        .into_iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| {
                    let resources: Vec<Value> =
                        registry.resources_of(&group, v).iter().map(|rt| aggregated_resource(rt)).collect();
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
        .map(|sub| json!({"subresource": sub, "responseKind": kind, "verbs": subresource_verbs(sub)}))
        .collect();
    json!({
        "resource": rt.resource,
        "responseKind": kind,
        "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": rt.singular,
        "verbs": VERBS,
        "shortNames": rt.short_names,
        "categories": rt.categories,
        "subresources": subresources,
    })
}

/// OpenAPI documents per group-version path (`api/v1`, `apis/g/v`), built once: the
/// built-in resources are the same in every logical cluster.
fn openapi_documents(registry: &Registry) -> &'static BTreeMap<String, (Arc<Value>, String)> {
    static DOCUMENTS: OnceLock<BTreeMap<String, (Arc<Value>, String)>> = OnceLock::new();
    DOCUMENTS.get_or_init(|| {
        let mut documents = BTreeMap::new();
        for (group, versions) in registry.groups() {
            for version in versions {
                let resources: Vec<OpenApiResource> = registry
                    .resources_of(&group, &version)
                    .iter()
                    .map(|rt| OpenApiResource {
                        resource: rt.resource.into(),
                        kind: rt.kind.into(),
                        namespaced: rt.namespaced,
                        schema_name: rt.schema_name.into(),
                        list_kind: rt.list_kind(),
                        verbs: VERBS.iter().map(|v| v.to_string()).collect(),
                        subresources: rt.subresources.iter().map(|s| s.to_string()).collect(),
                    })
                    .collect();
                let document =
                    openapi::group_version_document(&group, &version, &resources, openapi::builtin_components());
                let hash = openapi::document_hash(&serde_json::to_vec(&document).unwrap_or_default());
                let path = protocol::gvr::GroupVersion::new(group.clone(), version).url_prefix();
                documents.insert(path, (Arc::new(document), hash));
            }
        }
        documents
    })
}

fn openapi_root(registry: &Registry) -> Value {
    openapi::discovery_root(openapi_documents(registry).iter().map(|(path, (_, hash))| (path.clone(), hash.clone())))
}

fn openapi_document(registry: &Registry, path: &str) -> ApiResult<Value> {
    openapi_documents(registry)
        .get(path.trim_matches('/'))
        .map(|(document, _)| (**document).clone())
        .ok_or_else(not_found)
}
