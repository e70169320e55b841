//! gRPC over mutual TLS: the client side every Atoll process uses to call another's gRPC
//! services (shards and child caches replicating into a cache server, cache informers,
//! front-proxies reading shards' index feeds).
//!
//! tonic's own transport is not compiled in (the workspace builds tonic without it);
//! generated clients run over any tower service, so [`client`] builds a hyper client that
//! speaks HTTP/2 only, over rustls, presenting this process's client certificate. Pass it
//! to a generated client with the server's base URL:
//!
//! ```ignore
//! let channel = security::grpc::client(&material.ca_cert_pem, &cert_pem, &key_pem)?;
//! let uri: http::Uri = "https://cache.example:6443".parse()?;
//! let mut cache = protocol::cache::cache_client::CacheClient::with_origin(channel.clone(), uri);
//! ```
//!
//! Servers tell gRPC calls from REST requests on their shared port with [`is_grpc`].
//!
//! The client is cheap to clone and pools connections per host: every call to the same
//! server is multiplexed over one HTTP/2 connection.

use std::time::Duration;

use anyhow::Context;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

/// Whether `request` is a gRPC call rather than a REST request: servers that share one
/// HTTPS port between both route on the content type (`application/grpc`, `+proto`, …).
pub fn is_grpc<B>(request: &http::Request<B>) -> bool {
    request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/grpc"))
}

/// A gRPC channel: an HTTP/2-only hyper client over rustls with a client certificate.
pub type GrpcClient = Client<HttpsConnector<HttpConnector>, tonic::body::Body>;

/// How long to wait for a TCP connection before calling the server down; callers retry
/// with their own backoff, so failing fast lets them fail over sooner.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Idle connections are pinged this often, so that a server that vanished (power loss,
/// network partition) is noticed even on a stream that only waits for events.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(20);
/// A ping unanswered for this long closes the connection and fails its streams.
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// A gRPC client that trusts servers whose certificates chain to `ca_pem` (the serving
/// CA) and presents `cert_pem`/`key_pem` (a client-CA certificate naming the caller).
///
/// Fails when the PEM text does not parse or the key does not match the certificate.
pub fn client(ca_pem: &str, cert_pem: &str, key_pem: &str) -> anyhow::Result<GrpcClient> {
    // hyper-rustls sets the ALPN protocol itself (h2, the only one enabled).
    let tls = crate::tls::client_config(ca_pem, Some((cert_pem, key_pem)), &[])
        .context("build the TLS configuration of the gRPC client")?;
    let mut http = HttpConnector::new();
    // The connector is handed `https://` URIs; hyper-rustls does the TLS part.
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(CONNECT_TIMEOUT));
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config((*tls).clone())
        .https_only()
        .enable_http2()
        .wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new())
        .http2_only(true)
        .timer(TokioTimer::new())
        .http2_keep_alive_interval(KEEP_ALIVE_INTERVAL)
        .http2_keep_alive_timeout(KEEP_ALIVE_TIMEOUT)
        // Pings also on connections without open streams: a cache informer between
        // reconnects must learn early that its server is gone.
        .http2_keep_alive_while_idle(true)
        .build(connector))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki;

    #[test]
    fn grpc_calls_are_told_apart_by_content_type() {
        let cases = [
            (Some("application/grpc"), true),
            (Some("application/grpc+proto"), true),
            (Some("application/json"), false),
            (Some("application/vnd.kubernetes.protobuf"), false),
            (None, false),
        ];
        for (content_type, expected) in cases {
            let mut request = http::Request::builder();
            if let Some(value) = content_type {
                request = request.header(http::header::CONTENT_TYPE, value);
            }
            assert_eq!(is_grpc(&request.body(()).unwrap()), expected, "{content_type:?}");
        }
    }

    #[test]
    fn builds_from_the_installation_pki_and_refuses_mismatched_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        let material = pki::load_or_create(dir.path(), &[]).expect("pki");
        let built = client(&material.ca_cert_pem, &material.peer_client_cert_pem, &material.peer_client_key_pem);
        assert!(built.is_ok());
        let mismatched = client(&material.ca_cert_pem, &material.peer_client_cert_pem, &material.admin_key_pem);
        assert!(mismatched.is_err());
        let garbage = client("not a certificate", &material.peer_client_cert_pem, &material.peer_client_key_pem);
        assert!(garbage.is_err_and(|error| format!("{error:#}").contains("CA")));
    }
}
