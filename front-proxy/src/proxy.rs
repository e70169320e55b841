//! One proxied request: authenticate, resolve `/clusters/<path>` to a shard, forward with
//! the caller's identity in headers, and stream the answer back unbuffered (watches and
//! long lists included).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use security::authn::{Authenticator, AuthnError, CertificateCaller, Identity};
use security::identity_headers;
use tracing::Instrument;

use crate::caller::Caller;
use crate::feed::Routing;
use crate::home;
use crate::index::{Lookup, Target};
use crate::metrics::Metrics;
use crate::status;
use crate::sync_gate::{self, Unresolved};
use crate::upstream::{Body, Upstream};

/// Everything a request needs: one per worker thread, sharing all but the connection
/// pool towards shards.
#[derive(Clone)]
pub struct Proxy {
    /// Client certificates and bearer tokens.
    pub authn: Arc<Authenticator>,
    /// Whether requests without credentials go through as `system:anonymous`.
    pub anonymous: bool,
    /// The index and the shard set.
    pub routing: Arc<Routing>,
    /// Clients towards shards.
    pub upstream: Upstream,
    /// The root shard's base URL, for requests outside `/clusters/`.
    pub root_shard_url: String,
    /// Request counters.
    pub metrics: Arc<Metrics>,
}

/// Headers that describe one hop and must not be forwarded (RFC 9110 §7.6.1).
/// Kept as `HeaderName`s: removing by `&str` would parse and hash each name on every
/// request, twice.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::HOST,
];

/// What the connection's client certificate says: decided once per connection.
pub type ConnectionIdentity = Option<Result<Arc<Caller>, AuthnError>>;

/// The span of one proxied request at `level`: its fields are OTel's HTTP server
/// attributes plus the user and the shard it went to, recorded as they become known.
macro_rules! request_span {
    ($level:ident, $request:expr) => {
        tracing::span!(
            tracing::Level::$level,
            "proxy",
            otel.name = %format_args!("proxy {}", $request.method()),
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
            http.request.method = $request.method().as_str(),
            url.path = %$request.uri().path(),
            server.address = $request.uri().host().or_else(|| $request.headers().get(header::HOST).and_then(|h| h.to_str().ok())),
            http.response.status_code = tracing::field::Empty,
            enduser.id = tracing::field::Empty,
            atoll.shard = tracing::field::Empty,
        )
    };
}

impl Proxy {
    /// The identity of a verified client certificate (only the client CA is trusted by the
    /// proxy's TLS listener, so this is always a user).
    pub fn certificate_identity(&self, der: &[u8]) -> ConnectionIdentity {
        Some(self.authn.certificate_caller(der).and_then(|caller| match caller {
            CertificateCaller::User(identity) => Caller::new(identity).map(Arc::new),
            CertificateCaller::FrontProxy { .. } => Err(AuthnError::InvalidClientCertificate {
                reason: "front-proxy certificates cannot be used by clients".into(),
            }),
        }))
    }

    /// Serves one request; never fails (errors become `Status` responses).
    pub async fn serve(
        self: Arc<Self>,
        connection: Arc<ConnectionIdentity>,
        request: Request<Incoming>,
    ) -> http::Response<Body> {
        let started = Instant::now();
        // Debug level unless the request is recorded: at the default info filter a
        // disabled span costs nothing, and the proxy's added latency per request is a
        // benchmarked goal. Recorded, it is the server span of the caller's trace (OTel's
        // HTTP conventions), continuing a `traceparent` the caller sent. An unsampled
        // request's work carries its context instead, so the shard is told not to sample.
        let sampling = telemetry::Decision::of_http(request.headers());
        let span = if sampling.recorded() { request_span!(INFO, request) } else { request_span!(DEBUG, request) };
        sampling.start(&span);
        // Not `.instrument(span)`: the request's future is polled several times (the
        // shard's answer arrives on another task), and entering and leaving an exported
        // span on each poll cost ~2.5 µs per request. The span is handed down instead,
        // and entered only around what logs or calls out on the request's behalf.
        let response = sampling.scope(self.route(&span, &connection, request)).await;
        let code = response.status().as_u16();
        // An integer, as OTel's HTTP conventions type it (a u16 would be recorded as text).
        span.record("http.response.status_code", i64::from(code));
        if code >= 500 {
            span.record("otel.status_code", "ERROR");
        }
        self.metrics.observe(code, started.elapsed());
        response
    }

    async fn route(
        &self,
        span: &tracing::Span,
        connection: &ConnectionIdentity,
        request: Request<Incoming>,
    ) -> http::Response<Body> {
        let path = request.uri().path().to_owned();
        if let Some(endpoint) = local_endpoint(&path) {
            return self.local(endpoint);
        }
        let grpc =
            request.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
        if grpc {
            return status::forbidden("gRPC is not served through the front-proxy");
        }
        let caller = match self.authenticate(connection, &request) {
            Ok(caller) => caller,
            Err(message) => return status::unauthorized(&message),
        };
        let identity = &caller.identity;
        span.record("enduser.id", identity.user.as_str());
        if let Some(shard) = path.strip_prefix("/shards/") {
            return self.to_shard(span, request, &caller, shard).await;
        }
        let Some((segment, rest)) = split_cluster(&path) else {
            // Outside /clusters/: the root logical cluster, as kcp's front-proxy does.
            let url = format!("{}/clusters/root{path}", self.root_shard_url);
            return self.forward(span, request, &caller, url, "root").await;
        };
        let target = match segment.as_str() {
            "*" => {
                return status::forbidden(
                    "wildcard requests (/clusters/*) are not served through the front-proxy: they are shard-direct and privileged",
                )
            }
            // Forwarded by cluster name: the shard does not know `~`.
            "~" => match home::resolve(&self.routing, &self.upstream, identity).instrument(span.clone()).await {
                Ok(target) => Target { canonical: false, ..target },
                Err(response) => return response,
            },
            other => {
                let lookup = self.routing.index.read().lookup(other);
                match lookup {
                    Lookup::Found(target) => target,
                    unresolved => {
                        return self.unresolved(&caller, &unresolved, other).instrument(span.clone()).await
                    }
                }
            }
        };
        span.record("atoll.shard", target.shard.as_str());
        let Some(base) = self.routing.shard_url(&target.shard) else {
            return status::unavailable(&format!("shard {} is not known to the front-proxy yet", target.shard));
        };
        // A canonical path is forwarded as typed, so the shard's messages name what the
        // user asked for; anything else by the logical cluster's name.
        let cluster = if target.canonical { segment.as_str() } else { target.cluster.as_str() };
        let query = request.uri().query().map(|q| format!("?{q}")).unwrap_or_default();
        let url = format!("{base}/clusters/{cluster}{rest}{query}");
        match self.try_forward(span, request, &caller, url).await {
            Ok(response) => response,
            Err(error) => {
                span.in_scope(|| tracing::info!(%error, shard = %target.shard, "shard unreachable"));
                crate::dead_shard::answer(&self.routing, &self.upstream, &caller, &target, &segment)
                    .instrument(span.clone())
                    .await
            }
        }
    }

    /// The answer for `path`, which the index does not resolve: 403 as for any missing
    /// workspace, or 503 while the feed of a shard that could host it has not synced
    /// (see [`sync_gate`]).
    async fn unresolved(&self, caller: &Caller, lookup: &Lookup, path: &str) -> http::Response<Body> {
        let pending = self.routing.pending();
        match sync_gate::unresolved(lookup, pending.as_ref(), path) {
            Unresolved::NoAccess => status::no_access(&caller.identity.user, path),
            Unresolved::Unavailable(message) => status::unavailable_retry(&message, sync_gate::RETRY_AFTER_SECONDS),
            Unresolved::UnavailableIfVisible { cluster, message } => {
                if crate::dead_shard::may_see(&self.routing, &self.upstream, caller, &cluster).await {
                    status::unavailable_retry(&message, sync_gate::RETRY_AFTER_SECONDS)
                } else {
                    status::no_access(&caller.identity.user, path)
                }
            }
        }
    }

    /// `/shards/<shard>/services/…`: a virtual workspace served by one shard (an
    /// APIExport view, as APIExportEndpointSlices list them), forwarded as it is to that
    /// shard, which authorizes the caller for the view. Nothing else is routed by shard:
    /// workspaces are addressed by path.
    async fn to_shard(
        &self,
        span: &tracing::Span,
        request: Request<Incoming>,
        caller: &Caller,
        after: &str,
    ) -> http::Response<Body> {
        let Some((shard, rest)) = after.split_once('/').filter(|(s, r)| !s.is_empty() && r.starts_with("services/"))
        else {
            return status::failure(
                404,
                "NotFound",
                "under /shards/<shard>/ the front-proxy routes only virtual workspaces (/shards/<shard>/services/...); \
                 address workspaces as /clusters/<path>/",
            );
        };
        span.record("atoll.shard", shard);
        let Some(base) = self.routing.shard_url(shard) else {
            return status::failure(404, "NotFound", &format!("no shard {shard:?} is known to the front-proxy"));
        };
        let query = request.uri().query().map(|q| format!("?{q}")).unwrap_or_default();
        let url = format!("{base}/shards/{shard}/{rest}{query}");
        let shard = shard.to_string();
        self.forward(span, request, caller, url, &shard).await
    }

    /// The caller, or why it is refused (for a 401).
    fn authenticate(
        &self,
        connection: &ConnectionIdentity,
        request: &Request<Incoming>,
    ) -> Result<Arc<Caller>, String> {
        if let Some(result) = connection {
            return result.clone().map_err(|error| format!("Unauthorized: {error}"));
        }
        let authorization = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let identity = match self.authn.authenticate(None, authorization) {
            Ok(Some(identity)) => Ok(identity),
            Ok(None) if self.anonymous => Ok(Identity::anonymous()),
            Ok(None) => {
                Err("Unauthorized: present a client certificate from this installation's client CA or a bearer token"
                    .into())
            }
            Err(error) => Err(format!("Unauthorized: {error}")),
        }?;
        Caller::new(identity).map(Arc::new).map_err(|error| format!("Unauthorized: {error}"))
    }

    /// Sends `request` to `url` as `identity`, streaming both bodies; 503 when the shard
    /// does not answer.
    async fn forward(
        &self,
        span: &tracing::Span,
        request: Request<Incoming>,
        caller: &Caller,
        url: String,
        shard: &str,
    ) -> http::Response<Body> {
        self.try_forward(span, request, caller, url).await.unwrap_or_else(|error| {
            span.in_scope(|| tracing::info!(%error, shard, "shard unreachable"));
            status::unavailable(&format!(
                "shard {shard} hosting this workspace is unavailable; other workspaces are not affected"
            ))
        })
    }

    /// Sends `request` to `url` as `identity`, streaming both bodies; the error when the
    /// shard did not answer. `span` (the request's) becomes the parent of the shard's.
    async fn try_forward(
        &self,
        span: &tracing::Span,
        request: Request<Incoming>,
        caller: &Caller,
        url: String,
    ) -> Result<http::Response<Body>, hyper_util::client::legacy::Error> {
        let (mut parts, body) = request.into_parts();
        let uri = match url.parse::<http::Uri>() {
            Ok(uri) => uri,
            Err(_) => return Ok(status::bad_request(&format!("cannot forward to {url}"))),
        };
        let headers = &mut parts.headers;
        if headers.contains_key(header::CONNECTION) {
            let listed: Vec<HeaderName> = headers
                .get_all(header::CONNECTION)
                .iter()
                .filter_map(|value| value.to_str().ok())
                .flat_map(|value| value.split(','))
                .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
                .collect();
            for name in listed {
                headers.remove(name);
            }
        }
        for name in &HOP_BY_HOP {
            headers.remove(name);
        }
        headers.remove(header::AUTHORIZATION);
        if headers.keys().any(identity_headers::is_identity_header) {
            let claimed: Vec<HeaderName> =
                headers.keys().filter(|name| identity_headers::is_identity_header(name)).cloned().collect();
            for name in claimed {
                headers.remove(name);
            }
        }
        for (name, value) in caller.headers() {
            headers.append(name.clone(), value.clone());
        }
        // The shard's span becomes a child of this request's.
        telemetry::propagation::inject_http(span, headers);
        parts.uri = uri;
        parts.version = http::Version::HTTP_11;
        let upstream_request = Request::from_parts(parts, body.map_err(Into::into).boxed());
        let response = self.upstream.rest.request(upstream_request).await?;
        let (mut parts, body) = response.into_parts();
        for name in &HOP_BY_HOP {
            parts.headers.remove(name);
        }
        Ok(http::Response::from_parts(parts, body.map_err(Into::into).boxed()))
    }

    fn local(&self, endpoint: &str) -> http::Response<Body> {
        if endpoint == "readyz" {
            if let Err(reason) = self.routing.readiness() {
                return status::unavailable(&reason);
            }
        }
        let (content_type, body): (&str, Bytes) = match endpoint {
            "metrics" => (
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                self.metrics.render(&self.routing).into(),
            ),
            _ => ("text/plain", Bytes::from_static(b"ok")),
        };
        let mut response = http::Response::new(crate::upstream::full(body));
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        *response.status_mut() = StatusCode::OK;
        response
    }
}

/// The proxy's own endpoints, answered without authentication like kube's health checks.
fn local_endpoint(path: &str) -> Option<&'static str> {
    match path {
        "/healthz" | "/livez" => Some("healthz"),
        // Ready once every known shard's index feed has synced (see `sync_gate`).
        "/readyz" => Some("readyz"),
        "/metrics" => Some("metrics"),
        _ => None,
    }
}

/// Splits `/clusters/<segment><rest>` into the percent-decoded segment and the rest
/// (`/api/v1/…`, possibly empty).
fn split_cluster(path: &str) -> Option<(String, &str)> {
    let after = path.strip_prefix("/clusters/")?;
    let end = after.find('/').unwrap_or(after.len());
    let segment = protocol::path::percent_decode(&after[..end]).into_owned();
    Some((segment, &after[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_segments_are_split_and_decoded() {
        let cases = [
            ("/clusters/root/api/v1", Some(("root", "/api/v1"))),
            ("/clusters/root:org", Some(("root:org", ""))),
            ("/clusters/%2A/api", Some(("*", "/api"))),
            ("/clusters/~/apis", Some(("~", "/apis"))),
            ("/clusters/%7E/apis", Some(("~", "/apis"))),
            ("/api/v1", None),
        ];
        for (path, want) in cases {
            let got = split_cluster(path);
            assert_eq!(got.as_ref().map(|(s, r)| (s.as_str(), *r)), want, "{path}");
        }
    }

    #[test]
    fn health_and_metrics_are_local() {
        assert_eq!(local_endpoint("/healthz"), Some("healthz"));
        assert_eq!(local_endpoint("/metrics"), Some("metrics"));
        assert_eq!(local_endpoint("/version"), None);
    }
}
