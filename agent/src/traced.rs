//! The agent's Kubernetes clients. While traces are exported, each HTTP call is an OTel
//! client span, a child of the agent's work it serves, and its context goes out as a W3C
//! `traceparent`: a shard (or a member) that exports too continues the agent's trace, so
//! one trace shows a Work's pass from the agent through the member's write and back to
//! the hub's status update.
//!
//! kube's own `HTTP` span stays at debug level and names no trace context; this layer
//! sits outside it.

use futures::future::BoxFuture;
use futures::FutureExt;
use http::{Request, Response};
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service};
use tracing::Instrument;

/// A kube client for `config` whose calls carry the caller's trace.
pub(crate) fn client(config: kube::Config) -> anyhow::Result<kube::Client> {
    let server = Arc::new(Server::of(&config.cluster_url));
    let builder = kube::client::ClientBuilder::try_from(config)?;
    Ok(builder.with_layer(&TraceContext(server)).build())
}

/// The span of one unit of the agent's work, `name` (`work.reconcile`), on `object` of
/// `resource`, in `namespace` of logical cluster `cluster` where those apply: an internal
/// span whose HTTP calls are its children.
pub(crate) fn work_span(
    name: &'static str,
    resource: &str,
    cluster: Option<&str>,
    namespace: Option<&str>,
    object: &str,
) -> tracing::Span {
    tracing::info_span!(
        "work",
        otel.name = name,
        otel.kind = "internal",
        otel.status_code = tracing::field::Empty,
        atoll.resource = resource,
        atoll.logical_cluster = cluster,
        k8s.namespace.name = namespace,
        atoll.object = object,
    )
}

/// Marks the current span (the agent's unit of work) as failed, as OTel's span status says.
pub(crate) fn failed() {
    tracing::Span::current().record("otel.status_code", "ERROR");
}

/// The server a client calls, as its spans name it. (Out here a request carries only its
/// path: kube's innermost layer puts the cluster URL in front.)
#[derive(Debug)]
struct Server {
    /// The cluster URL without a trailing `/`, which each path follows.
    base: String,
    address: Option<String>,
    port: Option<u16>,
}

impl Server {
    fn of(url: &http::Uri) -> Server {
        let default_port = match url.scheme_str() {
            Some("http") => Some(80),
            Some("https") => Some(443),
            _ => None,
        };
        // Credentials a URL may carry (`user:password@host`) stay out of every span, as
        // OTel's `url.full` asks.
        let authority = url.authority().map_or("", |a| a.as_str().rsplit('@').next().unwrap_or_default());
        let scheme = url.scheme_str().unwrap_or("https");
        Server {
            base: format!("{scheme}://{authority}{}", url.path().trim_end_matches('/')),
            address: url.host().map(str::to_string),
            port: url.port_u16().or(default_port),
        }
    }
}

/// Wraps a service in [`Traced`].
#[derive(Debug, Clone)]
struct TraceContext(Arc<Server>);

impl<S> Layer<S> for TraceContext {
    type Service = Traced<S>;

    fn layer(&self, inner: S) -> Traced<S> {
        Traced { inner, server: self.0.clone() }
    }
}

/// A service whose calls are client spans that inject their context.
#[derive(Debug, Clone)]
struct Traced<S> {
    inner: S,
    server: Arc<Server>,
}

impl<S, B, R> Service<Request<B>> for Traced<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    R: Send + 'static,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<R>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        if !telemetry::enabled() {
            return self.inner.call(request).boxed();
        }
        let span = call_span(&self.server, &request);
        telemetry::propagation::inject_http(&span, request.headers_mut());
        let call = span.in_scope(|| self.inner.call(request));
        let recorded = span.clone();
        async move {
            let result = call.await;
            match &result {
                Ok(response) => record_status(&recorded, response.status().as_u16()),
                Err(_) => {
                    recorded.record("otel.status_code", "ERROR");
                }
            }
            result
        }
        .instrument(span)
        .boxed()
    }
}

/// An HTTP client span after OTel's conventions: named by the method, with the server and
/// the full URL (kube puts selectors, never credentials, in the query).
fn call_span<B>(server: &Server, request: &Request<B>) -> tracing::Span {
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
    tracing::info_span!(
        "http.client",
        otel.name = request.method().as_str(),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        http.request.method = request.method().as_str(),
        server.address = server.address.as_deref(),
        server.port = server.port.map(i64::from),
        url.full = %format_args!("{}{path}", server.base),
        http.response.status_code = tracing::field::Empty,
    )
}

/// The response code, and an error status for 4xx and 5xx, as OTel marks client spans.
fn record_status(span: &tracing::Span, code: u16) {
    span.record("http.response.status_code", i64::from(code));
    if code >= 400 {
        span.record("otel.status_code", "ERROR");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_named_by_the_cluster_url() {
        let server = Server::of(&"https://proxy.example:6443/clusters/root:hub/".parse().unwrap());
        assert_eq!(server.base, "https://proxy.example:6443/clusters/root:hub");
        assert_eq!(server.address.as_deref(), Some("proxy.example"));
        assert_eq!(server.port, Some(6443));
        let server = Server::of(&"https://member.example".parse().unwrap());
        assert_eq!(server.base, "https://member.example");
        assert_eq!(server.port, Some(443), "the scheme's port when the URL names none");
        let server = Server::of(&"https://admin:secret@member.example:8443/clusters/m/".parse().unwrap());
        assert_eq!(server.base, "https://member.example:8443/clusters/m", "no credentials");
        assert_eq!(server.address.as_deref(), Some("member.example"));
    }
}
