//! Connections to shards: one pooled HTTP/1.1 client for proxied requests and the shared
//! HTTP/2 gRPC client (`security::grpc`) for the index feeds, both presenting the front-proxy's client certificate
//! (signed by the front-proxy CA), the one certificate shards take identity headers from.

use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use security::authn::Identity;
use security::identity_headers;

/// Any body the proxy sends or returns: a client's streamed body, a shard's, or bytes.
pub type Body = BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// Idle connections kept per shard; enough for every client connection of a busy proxy
/// to have one ready (the benchmark runs 64).
const IDLE_PER_SHARD: usize = 256;
/// How long to wait for a TCP connection to a shard before calling it down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// The front-proxy's own identity on calls it makes for itself (shard list, home
/// workspaces): it may do anything, like a shard's peer identity.
pub fn proxy_identity(process_name: &str) -> Identity {
    Identity::new(security::pki::front_proxy_user(process_name), "", ["system:masters".to_owned()])
}

/// The clients towards shards.
#[derive(Clone)]
pub struct Upstream {
    /// Proxied REST requests (HTTP/1.1, pooled).
    pub rest: Client<HttpsConnector<HttpConnector>, Body>,
    /// gRPC index feeds (HTTP/2).
    pub grpc: security::grpc::GrpcClient,
    /// Who the proxy is on its own calls.
    pub identity: Identity,
}

impl Upstream {
    /// Clients that trust `ca_pem` and present `cert_pem`/`key_pem`.
    pub fn new(ca_pem: &str, cert_pem: &str, key_pem: &str, process_name: &str) -> anyhow::Result<Upstream> {
        // hyper-rustls sets the ALPN protocols itself (h2 or http/1.1, as enabled).
        let tls = security::tls::client_config(ca_pem, Some((cert_pem, key_pem)), &[])
            .context("build the TLS configuration towards shards")?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config((*tls).clone())
            .https_only()
            .enable_http1()
            .wrap_connector(http);
        let rest = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(IDLE_PER_SHARD)
            .pool_timer(TokioTimer::new())
            .build(connector);
        let grpc = security::grpc::client(ca_pem, cert_pem, key_pem).context("build the gRPC client towards shards")?;
        Ok(Upstream { rest, grpc, identity: proxy_identity(process_name) })
    }

    /// Sends one request of the proxy's own (as [`Upstream::identity`]) and reads the
    /// whole answer: `(status, body)`.
    pub async fn call(
        &self,
        method: http::Method,
        url: &str,
        body: Option<&serde_json::Value>,
    ) -> anyhow::Result<(http::StatusCode, Bytes)> {
        let mut builder = http::Request::builder().method(method).uri(url);
        for (name, value) in identity_headers::encode(&self.identity)? {
            builder = builder.header(name, value);
        }
        let bytes = match body {
            Some(value) => {
                builder = builder.header(http::header::CONTENT_TYPE, "application/json");
                Bytes::from(serde_json::to_vec(value)?)
            }
            None => Bytes::new(),
        };
        let request = builder.body(full(bytes))?;
        let response = tokio::time::timeout(Duration::from_secs(10), self.rest.request(request))
            .await
            .with_context(|| format!("{url} did not answer in time"))?
            .with_context(|| format!("call {url}"))?;
        let status = response.status();
        let bytes = response.into_body().collect().await.with_context(|| format!("read {url}"))?.to_bytes();
        Ok((status, bytes))
    }
}

/// A complete body from bytes.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).map_err(|never| match never {}).boxed()
}
