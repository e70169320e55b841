//! What a request asks to do, as kube-apiserver's authorizer sees it (its
//! `authorizer.Attributes`): a verb on a resource, or a verb on a non-resource path.
//! Pure: built from the parsed request or from a review's spec.

use apiserver::rest::request_info::{ResourceRequest, Target};
use protocol::selector::FieldSelector;
use std::collections::HashMap;

/// A resource request. Empty strings mean "none", as in kube, which keeps matching and
/// messages as simple as kube's and lets review specs map one to one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`
    /// (or any verb a review asks about).
    pub verb: String,
    /// API group, empty for core.
    pub group: String,
    /// API version (not used by RBAC).
    pub version: String,
    /// Plural resource name.
    pub resource: String,
    /// Subresource (`status`, `scale`).
    pub subresource: String,
    /// Object name; empty for collections.
    pub name: String,
    /// Namespace; empty for cluster-scoped requests and lists across namespaces.
    pub namespace: String,
}

/// A request that is not about a resource: discovery, OpenAPI, `/version`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NonResourceAttributes {
    /// The HTTP method in lower case (`get`), or the verb a review asks about.
    pub verb: String,
    /// The path below the logical cluster's root (`/api`, `/openapi/v3`).
    pub path: String,
}

/// What a request asks to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attributes {
    /// A verb on a resource.
    Resource(ResourceAttributes),
    /// A verb on a path.
    NonResource(NonResourceAttributes),
}

impl Attributes {
    /// The attributes of a parsed request under `/clusters/<cluster>`.
    pub fn of_request(method: &http::Method, target: &Target, query: &HashMap<String, String>) -> Attributes {
        match target {
            Target::Resource(request) => Attributes::Resource(resource_attributes(request, query)),
            other => Attributes::NonResource(NonResourceAttributes {
                verb: method.as_str().to_ascii_lowercase(),
                path: non_resource_path(other),
            }),
        }
    }

    /// What kcp's workspace content authorizer asks in the target logical cluster.
    pub fn workspace_access() -> Attributes {
        Attributes::NonResource(NonResourceAttributes { verb: ACCESS_VERB.into(), path: "/".into() })
    }

    /// The verb.
    pub fn verb(&self) -> &str {
        match self {
            Attributes::Resource(r) => &r.verb,
            Attributes::NonResource(n) => &n.verb,
        }
    }

    /// The namespace whose RoleBindings apply; empty when only cluster-wide ones do.
    pub fn namespace(&self) -> &str {
        match self {
            Attributes::Resource(r) => &r.namespace,
            Attributes::NonResource(_) => "",
        }
    }

    /// kube's explanation of a denial (`forbiddenMessage` in the apiserver's handlers).
    pub fn forbidden_message(&self, user: &str) -> String {
        match self {
            Attributes::NonResource(n) => format!("User {user:?} cannot {} path {:?}", n.verb, n.path),
            Attributes::Resource(r) => {
                let resource = match r.subresource.as_str() {
                    "" => r.resource.clone(),
                    sub => format!("{}/{sub}", r.resource),
                };
                let (verb, group) = (&r.verb, &r.group);
                match r.namespace.as_str() {
                    "" => format!(
                        "User {user:?} cannot {verb} resource {resource:?} in API group {group:?} at the cluster scope"
                    ),
                    ns => format!(
                        "User {user:?} cannot {verb} resource {resource:?} in API group {group:?} in the namespace {ns:?}"
                    ),
                }
            }
        }
    }
}

/// The verb kcp grants workspace access with.
pub const ACCESS_VERB: &str = "access";

/// kube's RequestInfo, seen by the authorizer: a namespace's own object counts as in that
/// namespace (so a RoleBinding there may grant reading it), and a list or watch pinned to
/// one name by `fieldSelector=metadata.name=<x>` names that object (so `resourceNames`
/// rules allow `kubectl get cm x --watch`).
fn resource_attributes(request: &ResourceRequest, query: &HashMap<String, String>) -> ResourceAttributes {
    let verb = request.verb.as_str();
    let mut name = request.name.clone().unwrap_or_default();
    if name.is_empty() && matches!(verb, "list" | "watch") {
        name = pinned_name(query.get("fieldSelector").map(String::as_str)).unwrap_or_default();
    }
    let namespace = match (&request.namespace, request.group.as_str(), request.resource.as_str()) {
        (Some(namespace), _, _) => namespace.clone(),
        (None, "", "namespaces") => request.name.clone().unwrap_or_default(),
        (None, _, _) => String::new(),
    };
    ResourceAttributes {
        verb: verb.to_string(),
        group: request.group.clone(),
        version: request.version.clone(),
        resource: request.resource.clone(),
        subresource: request.subresource.clone().unwrap_or_default(),
        name,
        namespace,
    }
}

/// The name a field selector pins, if it is a plausible object name.
fn pinned_name(field_selector: Option<&str>) -> Option<String> {
    let selector = FieldSelector::parse(field_selector?).ok()?;
    let name = selector.requires_exact_match("metadata.name")?;
    let plausible = !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '%']);
    plausible.then(|| name.to_string())
}

/// The path of a non-resource request, relative to the logical cluster.
fn non_resource_path(target: &Target) -> String {
    match target {
        Target::CoreVersions => "/api".into(),
        Target::Groups => "/apis".into(),
        Target::Group(group) => format!("/apis/{group}"),
        Target::GroupVersion(group, version) if group.is_empty() => format!("/api/{version}"),
        Target::GroupVersion(group, version) => format!("/apis/{group}/{version}"),
        Target::OpenApiRoot => "/openapi/v3".into(),
        Target::OpenApiGroupVersion(rest) => format!("/openapi/v3/{rest}"),
        Target::Version => "/version".into(),
        Target::Resource(_) => unreachable!("resource requests have resource attributes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apiserver::rest::request_info::{self, RequestInfo};
    use http::Method;

    fn parse(method: Method, path: &str, query: &str) -> Attributes {
        let query = apiserver::rest::request_info::parse_query(Some(query));
        let RequestInfo::Cluster(_, target) = request_info::parse(&method, path, &query) else {
            panic!("{path} is not a cluster request");
        };
        Attributes::of_request(&method, &target, &query)
    }

    fn resource(verb: &str, group: &str, resource: &str, sub: &str, name: &str, ns: &str) -> Attributes {
        Attributes::Resource(ResourceAttributes {
            verb: verb.into(),
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            namespace: ns.into(),
        })
    }

    fn path(verb: &str, path: &str) -> Attributes {
        Attributes::NonResource(NonResourceAttributes { verb: verb.into(), path: path.into() })
    }

    #[test]
    fn requests_become_kube_attributes() {
        let cases = [
            (
                Method::GET,
                "/clusters/c/api/v1/namespaces/default/configmaps/x",
                "",
                resource("get", "", "configmaps", "", "x", "default"),
            ),
            (Method::GET, "/clusters/c/api/v1/configmaps", "", resource("list", "", "configmaps", "", "", "")),
            (
                Method::GET,
                "/clusters/c/api/v1/namespaces/a/configmaps",
                "watch=1&fieldSelector=metadata.name%3Dx",
                resource("watch", "", "configmaps", "", "x", "a"),
            ),
            (
                Method::GET,
                "/clusters/c/api/v1/namespaces/a/configmaps",
                "fieldSelector=metadata.name%3D..",
                resource("list", "", "configmaps", "", "", "a"),
            ),
            (Method::GET, "/clusters/c/api/v1/namespaces/a", "", resource("get", "", "namespaces", "", "a", "a")),
            (
                Method::PUT,
                "/clusters/c/api/v1/namespaces/a/finalize",
                "",
                resource("update", "", "namespaces", "finalize", "a", "a"),
            ),
            (
                Method::DELETE,
                "/clusters/c/apis/rbac.authorization.k8s.io/v1/clusterroles",
                "",
                resource("deletecollection", "rbac.authorization.k8s.io", "clusterroles", "", "", ""),
            ),
            (Method::GET, "/clusters/c/api", "", path("get", "/api")),
            (Method::GET, "/clusters/c/apis/apps", "", path("get", "/apis/apps")),
            (Method::GET, "/clusters/c/api/v1", "", path("get", "/api/v1")),
            (Method::GET, "/clusters/c/apis/apps/v1", "", path("get", "/apis/apps/v1")),
            (Method::GET, "/clusters/c/openapi/v3/apis/apps/v1", "", path("get", "/openapi/v3/apis/apps/v1")),
            (Method::HEAD, "/clusters/c/version", "", path("head", "/version")),
        ];
        for (method, url, query, expected) in cases {
            let mut got = parse(method.clone(), url, query);
            if let (Attributes::Resource(got), Attributes::Resource(want)) = (&mut got, &expected) {
                got.version.clone_from(&want.version);
            }
            assert_eq!(got, expected, "{method} {url}?{query}");
        }
    }

    #[test]
    fn denials_read_like_kube() {
        let cases = [
            (
                resource("get", "", "configmaps", "", "x", "default"),
                r#"User "alice" cannot get resource "configmaps" in API group "" in the namespace "default""#,
            ),
            (
                resource("update", "apps", "deployments", "scale", "d", ""),
                r#"User "alice" cannot update resource "deployments/scale" in API group "apps" at the cluster scope"#,
            ),
            (path("get", "/api"), r#"User "alice" cannot get path "/api""#),
        ];
        for (attributes, message) in cases {
            assert_eq!(attributes.forbidden_message("alice"), message);
        }
    }
}
