//! The request entry point: parse, authenticate, authorize, route, record.

use crate::authz;
use crate::metrics::RequestLabels;
use crate::state::Shard;
use apiserver::discovery;
use apiserver::registry::virtual_workspace::VirtualWorkspace;
use apiserver::rest::request_info::{self, RequestInfo, Target};
use apiserver::rest::status::{ApiError, ApiResult};
use apiserver::rest::{self, Response};
use apiserver::verbs::{self, Ctx, Scope};
use hyper::body::Incoming;
use protocol::path::ClusterRef;
use protocol::types::LOGICAL_CLUSTER_NAME;
use protocol::wellknown::MONITORING_GROUP;
use security::authn::{AuthnError, CertificateCaller, Identity};
use security::identity_headers;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

/// What the TLS layer learned about the connection, worked out once per connection
/// rather than per request.
#[derive(Debug, Clone, Default)]
pub struct PeerInfo {
    /// What the verified client certificate says, if one was presented: a user, or a
    /// front-proxy that names the user of each request in identity headers.
    pub certificate: Option<Result<CertificateCaller, AuthnError>>,
}

/// Serves one request; never fails (errors become Status responses).
pub async fn serve(shard: Arc<Shard>, peer: Arc<PeerInfo>, request: ::http::Request<Incoming>) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = own_prefix_stripped(&shard.name, request.uri().path()).to_string();
    let query = apiserver::rest::request_info::parse_query(request.uri().query());
    // A virtual workspace narrows the API path that follows its prefix and view.
    let (view, api_path) = match shard.registry.virtual_workspace(&path) {
        Some((workspace, view, api_path)) => (Some((workspace.clone(), view.to_string())), api_path),
        None => (None, path.as_str()),
    };
    let info = request_info::parse(&method, api_path, &query);
    let labels = labels_of(&shard, &info);
    let sampling = telemetry::Decision::of_http(request.headers());
    let span = request_span(&request, &info, &labels, &sampling);
    let response = async {
        let response = match route(&shard, &peer, info, query, request, view).await {
            Ok(response) => response,
            Err(error) => {
                if error.code >= 500 {
                    tracing::warn!(code = error.code, message = %error.message, "request failed");
                }
                rest::error_response(&error)
            }
        };
        let code = response.status().as_u16();
        let span = tracing::Span::current();
        // An integer, as OTel's HTTP conventions type it (a u16 would be recorded as text).
        span.record("http.response.status_code", i64::from(code));
        if code >= 500 {
            span.record("otel.status_code", "ERROR");
        }
        response
    }
    .instrument(span);
    let response = sampling.scope(response).await;
    let code = response.status().as_u16().to_string();
    let (verb, resource) = labels;
    let watch = verb == "watch";
    let labels = RequestLabels { verb, resource, code };
    shard.metrics.requests.get_or_create(&labels).inc();
    if !watch {
        shard.metrics.request_seconds.get_or_create(&labels).observe(started.elapsed().as_secs_f64());
    }
    response
}

/// The span of one request. When the sampler records the request, it is the server span
/// of the caller's trace (continuing a `traceparent` the caller sent): named after the
/// Kubernetes verb and resource (`create workspaces`), with OTel's HTTP server attributes
/// and what the request addresses, but no body, query or credential (the shard is named
/// once, by the exported Resource's `atoll.shard`). Without export it has the two fields a
/// log line quotes (method and path; a failed request's own line names its code),
/// formatted once. Exporting an unsampled request, there is none: log lines then name the
/// request's trace, not a span's fields.
fn request_span(
    request: &::http::Request<Incoming>,
    info: &RequestInfo,
    labels: &(String, String),
    sampling: &telemetry::Decision,
) -> tracing::Span {
    let method = request.method();
    let path = request.uri().path();
    if !telemetry::enabled() {
        return tracing::info_span!("request", %method, path = %path);
    }
    if !sampling.recorded() {
        return tracing::Span::none();
    }
    let (verb, resource) = labels;
    // The name's two words, formatted once, straight into the exported span's name.
    let (first, second) =
        if resource.is_empty() { (method.as_str(), verb.as_str()) } else { (verb.as_str(), resource.as_str()) };
    let (cluster, namespace) = match info {
        RequestInfo::Cluster(cluster, target) => {
            let namespace = match target {
                Target::Resource(r) => r.namespace.as_deref(),
                _ => None,
            };
            (Some(tracing::field::display(cluster)), namespace)
        }
        _ => (None, None),
    };
    let span = tracing::info_span!(
        "request",
        otel.name = %format_args!("{first} {second}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = method.as_str(),
        url.path = path,
        server.address = request.uri().host().or_else(|| request.headers().get(::http::header::HOST).and_then(|h| h.to_str().ok())),
        http.response.status_code = tracing::field::Empty,
        k8s.request.verb = verb.as_str(),
        k8s.request.resource = (!resource.is_empty()).then_some(resource.as_str()),
        k8s.namespace.name = namespace,
        atoll.logical_cluster = cluster,
    );
    sampling.start(&span);
    span
}

/// A request path without this shard's own `/shards/<name>` prefix: virtual workspace
/// URLs name their shard so that the front-proxy can route them, and work unchanged
/// against the shard itself. Other shards' prefixes stay and find no route (404).
fn own_prefix_stripped<'p>(name: &str, path: &'p str) -> &'p str {
    let own = path.strip_prefix("/shards/").and_then(|rest| rest.strip_prefix(name));
    match own {
        Some(rest) if rest.starts_with("/services/") => rest,
        _ => path,
    }
}

/// Metric labels. The resource comes from the URL, so only resources some logical cluster
/// serves are named: anyone could otherwise add a label series per request.
fn labels_of(shard: &Shard, info: &RequestInfo) -> (String, String) {
    match info {
        RequestInfo::Cluster(cluster, Target::Resource(r)) => {
            // Built-ins, or the addressed cluster's own CRDs: never a scan of every cluster.
            let known = shard.registry.get(&r.group, &r.version, &r.resource).is_some()
                || matches!(cluster, ClusterRef::Name(name)
                    if shard.registry.lookup(Some(name), &r.group, &r.version, &r.resource).is_some());
            (r.verb.as_str().to_string(), if known { r.resource.clone() } else { "unknown".into() })
        }
        RequestInfo::Cluster(..) => ("discovery".into(), String::new()),
        RequestInfo::Process(endpoint) => (endpoint.clone(), String::new()),
        RequestInfo::Unknown => ("unknown".into(), String::new()),
    }
}

async fn route(
    shard: &Arc<Shard>,
    peer: &PeerInfo,
    info: RequestInfo,
    mut query: HashMap<String, String>,
    request: ::http::Request<Incoming>,
    view: Option<(Arc<dyn VirtualWorkspace>, String)>,
) -> ApiResult<Response> {
    let (cluster, mut target) = match info {
        RequestInfo::Cluster(cluster, target) => (cluster, target),
        _ if view.is_some() => {
            return Err(ApiError::not_found_message("a virtual workspace serves the Kubernetes API under /clusters/"))
        }
        RequestInfo::Process(endpoint) => return process_endpoint(shard, peer, &endpoint, &request),
        RequestInfo::Unknown => return Err(unknown_path(shard, peer, &request)),
    };
    let identity = authenticate(shard, peer, &request)?;
    let identity = authz::impersonation::effective(shard, identity, &cluster, view.is_some(), request.headers())?;
    let mut writes = None;
    let mut served = None;
    let mut clusters = None;
    // The addressed cluster's LogicalCluster, read once: it decides both whether the cluster
    // exists and whether it is being deleted.
    let mut record = None;
    let scope = match &view {
        Some((workspace, view)) => {
            let admitted = workspace.admit(&identity, view, &cluster, &mut target, &mut query)?;
            writes = admitted.writes;
            served = admitted.served;
            clusters = admitted.clusters.map(Arc::new);
            match admitted.cluster {
                Some(name) => Scope::Cluster(name),
                None => Scope::Wildcard,
            }
        }
        None => {
            let question =
                authz::Request { requested: &cluster, method: request.method(), target: &target, query: &query };
            let (scope, read) = resolve_scope(shard, &identity, &cluster, &target)
                .map_err(|error| authz::conceal_missing_cluster(&identity, &question, error))?;
            record = read;
            if let Scope::Cluster(name) = &scope {
                authz::authorize(shard, &identity, name, &question)?;
            }
            scope
        }
    };
    if let Scope::Cluster(name) = &scope {
        // Only after authorization: the answer tells that the cluster is being deleted.
        if writes_content(&target) {
            let record = record.or_else(|| shard.logical_cluster_record(name));
            refuse_writes_while_deleting(name, record.as_ref())?;
        }
    }
    let accept = request.headers().get(::http::header::ACCEPT).and_then(|v| v.to_str().ok()).map(str::to_string);
    let cluster = match &scope {
        Scope::Cluster(name) => Some(name.as_str()),
        Scope::Wildcard => None,
    };
    let Target::Resource(req) = target else {
        let served = served.unwrap_or_else(|| match cluster {
            Some(cluster) => shard.registry.served(cluster),
            None => shard.registry.all().to_vec(),
        });
        return discovery::handle(&served, &target, accept.as_deref(), query.contains_key("hash"));
    };
    let rt = shard.registry.lookup(cluster, &req.group, &req.version, &req.resource).ok_or_else(|| {
        ApiError::not_found_message(format!(
            "the server could not find the requested resource: no resource \"{}\" in {}",
            req.resource,
            protocol::gvr::GroupVersion::new(req.group.clone(), req.version.clone())
        ))
    })?;
    check_scope_of_path(&rt, &req)?;
    let (parts, body) = request.into_parts();
    let ctx =
        Ctx { core: shard.core.clone(), identity, scope, req, rt, query, headers: parts.headers, writes, clusters };
    // Resources that are never stored (access reviews) are questions answered at once.
    if !ctx.rt.strategy.stored() {
        verbs::check_request(&ctx)?;
        return authz::review::handle(shard, &ctx, body).await;
    }
    verbs::dispatch(ctx, body).await
}

/// Namespaced resources need a namespace in the path except for list/watch across
/// namespaces; cluster-scoped ones never have one.
fn check_scope_of_path(rt: &apiserver::registry::ResourceType, req: &request_info::ResourceRequest) -> ApiResult<()> {
    use request_info::Verb;
    let across_namespaces = matches!(req.verb, Verb::List | Verb::Watch);
    match (rt.namespaced, req.namespace.is_some()) {
        (true, false) if !across_namespaces => Err(ApiError::not_found_message(format!(
            "{} is namespaced: address it under /namespaces/<namespace>/{}",
            rt.resource, rt.resource
        ))),
        (false, true) => Err(ApiError::not_found_message(format!(
            "{} is cluster-scoped: address it without /namespaces/<namespace>",
            rt.resource
        ))),
        _ => Ok(()),
    }
}

/// The caller of one request: a user certificate, else the identity a front-proxy's
/// certificate vouches for in `X-Remote-*` headers, else a bearer token. Identity headers
/// on any other connection are ignored, so sending them gains nothing.
fn authenticate(shard: &Shard, peer: &PeerInfo, request: &::http::Request<Incoming>) -> ApiResult<Identity> {
    let authorization = request.headers().get(::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let authenticated = match &peer.certificate {
        Some(Ok(CertificateCaller::User(identity))) => Ok(Some(identity.clone())),
        Some(Ok(CertificateCaller::FrontProxy { user })) => match identity_headers::decode(request.headers()) {
            Ok(None) => Err(AuthnError::InvalidIdentityHeaders {
                reason: format!("front-proxy {user} sent no X-Remote-User header"),
            }),
            decoded => decoded,
        },
        Some(Err(error)) => Err(error.clone()),
        None => shard.authn.authenticate(None, authorization),
    };
    match authenticated {
        Ok(Some(identity)) => Ok(identity),
        Ok(None) => Err(ApiError::unauthorized(
            "Unauthorized: present a client certificate from this installation's client CA or a bearer token",
        )),
        Err(e) => Err(ApiError::unauthorized(format!("Unauthorized: {e}"))),
    }
}

/// Decides which clusters a request may address: wildcards need `system:masters`; a
/// canonical path must be one of this shard's clusters; a named cluster must exist,
/// except for creating its own LogicalCluster object. Returns the cluster's stored
/// LogicalCluster too, when it exists.
fn resolve_scope(
    shard: &Shard,
    identity: &Identity,
    cluster: &ClusterRef,
    target: &Target,
) -> ApiResult<(Scope, Option<store::Versioned>)> {
    let name = match cluster {
        ClusterRef::Wildcard if identity.is_master() => return Ok((Scope::Wildcard, None)),
        ClusterRef::Wildcard => {
            return Err(ApiError::forbidden(format!(
            "User \"{}\" cannot list or watch across all logical clusters: /clusters/* is reserved for system:masters",
            identity.user
        )))
        }
        ClusterRef::Name(name) => name.clone(),
        ClusterRef::Path(path) => shard.paths.resolve(path.as_str()).ok_or_else(|| {
            ApiError::not_found_message(format!(
                "logical cluster path {path} is not hosted on this shard: address it on the shard named in its Workspace's spec.URL, or by its logical-cluster name"
            ))
        })?,
    };
    match shard.logical_cluster_record(&name) {
        None if !creates_logical_cluster(target) => Err(ApiError::not_found_message(format!(
            "logical cluster \"{name}\" does not exist on this shard: create it by creating its LogicalCluster object named \"{LOGICAL_CLUSTER_NAME}\""
        ))),
        record => Ok((Scope::Cluster(name), record)),
    }
}

/// Content of a logical cluster that is being deleted is read-only; `record` is its
/// stored LogicalCluster.
fn refuse_writes_while_deleting(name: &str, record: Option<&store::Versioned>) -> ApiResult<()> {
    let deleting = record.is_some_and(|lc| apiserver::objects::is_marked_for_deletion(&lc.value).unwrap_or(false));
    if deleting {
        return Err(ApiError::forbidden(format!(
            "unable to create or change content in logical cluster {name} because it is being deleted"
        )));
    }
    Ok(())
}

/// A path this server does not serve. Under `/clusters/<x>/` only `system:masters` learn
/// that (404): anyone else gets the answer for a workspace they may not enter, so that
/// unknown sub-paths do not tell existing workspaces from missing ones.
fn unknown_path(shard: &Shard, peer: &PeerInfo, request: &::http::Request<Incoming>) -> ApiError {
    let path = request.uri().path();
    let not_found = || {
        ApiError::not_found_message(format!(
            "the server could not find the requested resource: Atoll serves the Kubernetes API per logical cluster under /clusters/<name>/ (got {path})"
        ))
    };
    let Some(rest) = path.strip_prefix("/clusters/") else { return not_found() };
    match authenticate(shard, peer, request) {
        Err(error) => error,
        Ok(identity) if identity.is_master() => not_found(),
        Ok(identity) => {
            let segment = protocol::path::percent_decode(rest.split('/').next().unwrap_or_default()).into_owned();
            ApiError::forbidden(protocol::path::workspace_access_denied(&identity.user, &segment))
        }
    }
}

/// Creates, updates and patches of anything but the LogicalCluster object itself (whose
/// finalizers must stay editable while it is deleted).
fn writes_content(target: &Target) -> bool {
    matches!(target, Target::Resource(r)
        if matches!(r.verb, request_info::Verb::Create | request_info::Verb::Update | request_info::Verb::Patch)
            && r.resource != "logicalclusters")
}

fn creates_logical_cluster(target: &Target) -> bool {
    matches!(target, Target::Resource(r)
        if r.group == "core.kcp.io" && r.resource == "logicalclusters" && r.verb == request_info::Verb::Create)
}

fn process_endpoint(
    shard: &Shard,
    peer: &PeerInfo,
    endpoint: &str,
    request: &::http::Request<Incoming>,
) -> ApiResult<Response> {
    match endpoint {
        "healthz" | "livez" => Ok(rest::bytes_response(200, "text/plain", "ok", &[])),
        // Ready once this shard is in its own shard set: it has joined the installation
        // (or remembers having joined), so the ring schedules onto it and its peers know it.
        "readyz" if shard.membership.current().shard(&shard.name).is_some() => {
            Ok(rest::bytes_response(200, "text/plain", "ok", &[]))
        }
        "readyz" => Err(ApiError::unavailable(format!(
            "shard {} has not joined the installation yet: its Shard object is not in its shard set (is the root shard reachable?)",
            shard.name
        ))),
        // Request counts per resource and authorization decisions are for operators and
        // their scrapers.
        "metrics" => {
            let identity = authenticate(shard, peer, request)?;
            if !identity.may_read_metrics() {
                return Err(ApiError::forbidden(format!(
                    "forbidden: User {:?} cannot get path \"/metrics\": a shard's metrics are for system:masters and for \
                     scrapers in the group {MONITORING_GROUP}; issue the scraper a client certificate with that \
                     organization",
                    identity.user
                )));
            }
            Ok(rest::bytes_response(
                200,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                shard.metrics.render(),
                &[],
            ))
        }
        "version" => Ok(rest::json_response(200, &discovery::version_info(), &[])),
        other => Err(ApiError::not_found_message(format!("unknown endpoint /{other}"))),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_own_shard_prefix_is_stripped_and_only_for_virtual_workspaces() {
        let strip = |path| super::own_prefix_stripped("shard-1", path);
        assert_eq!(
            strip("/shards/shard-1/services/apiexport/c/w/clusters/*/apis"),
            "/services/apiexport/c/w/clusters/*/apis"
        );
        assert_eq!(strip("/shards/shard-2/services/apiexport/c/w"), "/shards/shard-2/services/apiexport/c/w");
        assert_eq!(strip("/shards/shard-10/services/x"), "/shards/shard-10/services/x");
        assert_eq!(strip("/shards/shard-1/clusters/root/api"), "/shards/shard-1/clusters/root/api");
        assert_eq!(strip("/clusters/root/api"), "/clusters/root/api");
    }

    #[test]
    fn queries_are_split_and_decoded() {
        let q =
            apiserver::rest::request_info::parse_query(Some("labelSelector=a%3Db%2Cc+in+(x)&watch=true&flag&bad=%zz"));
        assert_eq!(q["labelSelector"], "a=b,c in (x)");
        assert_eq!(q["watch"], "true");
        assert_eq!(q["flag"], "");
        assert_eq!(q["bad"], "%zz");
    }
}
