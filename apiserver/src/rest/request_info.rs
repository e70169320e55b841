//! Turning a request path and method into what it asks for — pure, table-tested.
//!
//! Mirrors kube-apiserver's RequestInfoFactory, with kcp's `/clusters/<cluster>` prefix.

use protocol::path::ClusterRef;
use std::collections::HashMap;

/// The Kubernetes verb a resource request maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET with `watch=true` (or the legacy `/watch/` prefix).
    Watch,
    /// POST to a collection.
    Create,
    /// PUT of one object.
    Update,
    /// PATCH of one object.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
    /// A method the path does not support (PUT or PATCH of a collection, OPTIONS, …):
    /// answered with 405.
    Unsupported,
}

impl Verb {
    /// The lower-case verb name used in RBAC and discovery.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Unsupported => "unsupported",
        }
    }
}

/// A request for a resource (or a collection of it) in one API group-version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRequest {
    /// API group, empty for core.
    pub group: String,
    /// API version.
    pub version: String,
    /// Namespace from the URL, if the path names one.
    pub namespace: Option<String>,
    /// Plural resource name.
    pub resource: String,
    /// Object name, if the path names one.
    pub name: Option<String>,
    /// Subresource (`status`, `finalize`, …).
    pub subresource: Option<String>,
    /// The verb.
    pub verb: Verb,
}

/// What a path under a cluster root addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `/api`: the core group's versions.
    CoreVersions,
    /// `/apis`: all groups.
    Groups,
    /// `/apis/<group>`.
    Group(String),
    /// `/api/v1` or `/apis/<group>/<version>`: the resources of a group-version.
    GroupVersion(String, String),
    /// `/openapi/v3`.
    OpenApiRoot,
    /// `/openapi/v3/<api/v1 | apis/g/v>`.
    OpenApiGroupVersion(String),
    /// `/version`.
    Version,
    /// A resource request.
    Resource(ResourceRequest),
}

/// A parsed request: which cluster and what in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestInfo {
    /// A process-wide endpoint (`/healthz`, `/livez`, `/readyz`, `/metrics`, `/version`).
    Process(String),
    /// Something under `/clusters/<cluster>/`.
    Cluster(ClusterRef, Target),
    /// A path this server does not serve.
    Unknown,
}

/// Parses a method, path and query into what the request asks for.
pub fn parse(method: &http::Method, path: &str, query: &HashMap<String, String>) -> RequestInfo {
    let decoded: Vec<std::borrow::Cow<'_, str>> =
        path.trim_matches('/').split('/').filter(|s| !s.is_empty()).map(protocol::path::percent_decode).collect();
    // A `/` that was `%2F` cannot be part of a name, a namespace or a cluster: no such
    // object can exist, and keys must not contain it.
    if decoded.iter().any(|segment| segment.contains('/')) {
        return RequestInfo::Unknown;
    }
    let parts: Vec<&str> = decoded.iter().map(|s| s.as_ref()).collect();
    match parts.as_slice() {
        [endpoint @ ("healthz" | "livez" | "readyz" | "metrics" | "version")] => {
            RequestInfo::Process((*endpoint).to_string())
        }
        [probe @ ("healthz" | "livez" | "readyz"), _check] => RequestInfo::Process((*probe).to_string()),
        ["clusters", cluster, rest @ ..] => match ClusterRef::parse(cluster) {
            Ok(cluster) => match parse_target(method, rest, query) {
                Some(target) => RequestInfo::Cluster(cluster, target),
                None => RequestInfo::Unknown,
            },
            Err(_) => RequestInfo::Unknown,
        },
        _ => RequestInfo::Unknown,
    }
}

fn parse_target(method: &http::Method, parts: &[&str], query: &HashMap<String, String>) -> Option<Target> {
    match parts {
        ["api"] => Some(Target::CoreVersions),
        ["apis"] => Some(Target::Groups),
        ["version"] => Some(Target::Version),
        ["openapi", "v3"] => Some(Target::OpenApiRoot),
        ["openapi", "v3", rest @ ..] if !rest.is_empty() => Some(Target::OpenApiGroupVersion(rest.join("/"))),
        ["apis", group] => Some(Target::Group((*group).to_string())),
        ["api", version] => Some(Target::GroupVersion(String::new(), (*version).to_string())),
        ["apis", group, version] => Some(Target::GroupVersion((*group).to_string(), (*version).to_string())),
        ["api", version, rest @ ..] => parse_resource(method, "", version, rest, query).map(Target::Resource),
        ["apis", group, version, rest @ ..] => {
            parse_resource(method, group, version, rest, query).map(Target::Resource)
        }
        _ => None,
    }
}

fn parse_resource(
    method: &http::Method,
    group: &str,
    version: &str,
    rest: &[&str],
    query: &HashMap<String, String>,
) -> Option<ResourceRequest> {
    let (legacy_watch, rest) = match rest {
        ["watch", tail @ ..] => (true, tail),
        _ => (false, rest),
    };
    let (namespace, rest) = match rest {
        // `/namespaces/<ns>` alone, and its `status` and `finalize` subresources, are the
        // namespace object itself, not a namespace scope (as in kube's RequestInfoFactory).
        ["namespaces", ns, tail @ ..] if !matches!(tail, [] | ["status" | "finalize"]) => {
            (Some((*ns).to_string()), tail)
        }
        _ => (None, rest),
    };
    let (resource, name, subresource) = match rest {
        [resource] => (*resource, None, None),
        [resource, name] => (*resource, Some((*name).to_string()), None),
        [resource, name, sub] => (*resource, Some((*name).to_string()), Some((*sub).to_string())),
        _ => return None,
    };
    let watch_param = query.get("watch").is_some_and(|w| w == "true" || w == "1");
    let verb = verb_for(method, name.is_some(), legacy_watch || watch_param);
    Some(ResourceRequest {
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        resource: resource.to_string(),
        name,
        subresource,
        verb,
    })
}

fn verb_for(method: &http::Method, has_name: bool, watch: bool) -> Verb {
    use http::Method;
    match (method, has_name) {
        (&Method::GET, _) if watch => Verb::Watch,
        (&Method::GET | &Method::HEAD, true) => Verb::Get,
        (&Method::GET | &Method::HEAD, false) => Verb::List,
        (&Method::POST, false) => Verb::Create,
        // POST to a named object is how subresources like `eviction` are created; the
        // dispatcher rejects the ones it does not serve with 405.
        (&Method::POST, true) => Verb::Create,
        (&Method::PUT, true) => Verb::Update,
        (&Method::PATCH, true) => Verb::Patch,
        (&Method::DELETE, true) => Verb::Delete,
        (&Method::DELETE, false) => Verb::DeleteCollection,
        _ => Verb::Unsupported,
    }
}

/// A query-string key or value: `+` is a space, then percent escapes.
fn decode_query_component(text: &str) -> String {
    protocol::path::percent_decode(&text.replace('+', " ")).into_owned()
}

/// Splits and percent-decodes a query string.
pub fn parse_query(query: Option<&str>) -> HashMap<String, String> {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode_query_component(key), decode_query_component(value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn res(group: &str, ns: Option<&str>, resource: &str, name: Option<&str>, sub: Option<&str>, verb: Verb) -> Target {
        Target::Resource(ResourceRequest {
            group: group.into(),
            version: "v1".into(),
            namespace: ns.map(Into::into),
            resource: resource.into(),
            name: name.map(Into::into),
            subresource: sub.map(Into::into),
            verb,
        })
    }

    #[test]
    fn path_segments_are_percent_decoded() {
        assert!(matches!(
            parse(&Method::GET, "/clusters/c/api/v1/namespaces/default/configmaps/a%2Fb", &HashMap::new()),
            RequestInfo::Unknown
        ));
        let info = parse(&Method::GET, "/clusters/%2A/api/v1/configmaps", &HashMap::new());
        assert!(matches!(info, RequestInfo::Cluster(ClusterRef::Wildcard, _)), "{info:?}");
    }

    #[test]
    fn parses_paths_like_kube_apiserver() {
        let name = |n: &str| ClusterRef::Name(n.into());
        let cases: Vec<(Method, &str, &str, RequestInfo)> = vec![
            (Method::GET, "/healthz", "", RequestInfo::Process("healthz".into())),
            (Method::GET, "/readyz/ping", "", RequestInfo::Process("readyz".into())),
            (Method::GET, "/clusters/root/api", "", RequestInfo::Cluster(name("root"), Target::CoreVersions)),
            (
                Method::GET,
                "/clusters/root/apis/rbac.authorization.k8s.io",
                "",
                RequestInfo::Cluster(name("root"), Target::Group("rbac.authorization.k8s.io".into())),
            ),
            (
                Method::GET,
                "/clusters/root/api/v1",
                "",
                RequestInfo::Cluster(name("root"), Target::GroupVersion("".into(), "v1".into())),
            ),
            (
                Method::GET,
                "/clusters/root/openapi/v3/apis/apps/v1",
                "",
                RequestInfo::Cluster(name("root"), Target::OpenApiGroupVersion("apis/apps/v1".into())),
            ),
            (
                Method::GET,
                "/clusters/root/api/v1/namespaces",
                "",
                RequestInfo::Cluster(name("root"), res("", None, "namespaces", None, None, Verb::List)),
            ),
            (
                Method::GET,
                "/clusters/root/api/v1/namespaces/default",
                "",
                RequestInfo::Cluster(name("root"), res("", None, "namespaces", Some("default"), None, Verb::Get)),
            ),
            (
                Method::PUT,
                "/clusters/root/api/v1/namespaces/default/finalize",
                "",
                RequestInfo::Cluster(
                    name("root"),
                    res("", None, "namespaces", Some("default"), Some("finalize"), Verb::Update),
                ),
            ),
            (
                Method::GET,
                "/clusters/root/api/v1/namespaces/default/configmaps",
                "watch=true",
                RequestInfo::Cluster(name("root"), res("", Some("default"), "configmaps", None, None, Verb::Watch)),
            ),
            (
                Method::GET,
                "/clusters/root/api/v1/watch/namespaces/default/configmaps",
                "",
                RequestInfo::Cluster(name("root"), res("", Some("default"), "configmaps", None, None, Verb::Watch)),
            ),
            (
                Method::POST,
                "/clusters/root/api/v1/namespaces/a/configmaps",
                "",
                RequestInfo::Cluster(name("root"), res("", Some("a"), "configmaps", None, None, Verb::Create)),
            ),
            (
                Method::PATCH,
                "/clusters/x/api/v1/namespaces/a/configmaps/c",
                "",
                RequestInfo::Cluster(name("x"), res("", Some("a"), "configmaps", Some("c"), None, Verb::Patch)),
            ),
            (
                Method::DELETE,
                "/clusters/x/api/v1/namespaces/a/configmaps",
                "",
                RequestInfo::Cluster(name("x"), res("", Some("a"), "configmaps", None, None, Verb::DeleteCollection)),
            ),
            (
                Method::GET,
                "/clusters/*/api/v1/configmaps",
                "",
                RequestInfo::Cluster(ClusterRef::Wildcard, res("", None, "configmaps", None, None, Verb::List)),
            ),
            (
                Method::PUT,
                "/clusters/x/api/v1/namespaces/a/configmaps",
                "",
                RequestInfo::Cluster(name("x"), res("", Some("a"), "configmaps", None, None, Verb::Unsupported)),
            ),
            (Method::GET, "/api/v1/namespaces", "", RequestInfo::Unknown),
            (Method::GET, "/clusters/x/api/v1/namespaces/a/configmaps/b/c/d", "", RequestInfo::Unknown),
        ];
        for (method, path, query, expected) in cases {
            let query: HashMap<String, String> = url_query(query);
            assert_eq!(parse(&method, path, &query), expected, "{method} {path}?{query:?}");
        }
    }

    fn url_query(q: &str) -> HashMap<String, String> {
        q.split('&')
            .filter(|s| !s.is_empty())
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}
