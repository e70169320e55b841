//! The HTTPS front door: each request goes to the gRPC service (by content type), to the
//! readiness probe, or gets a 404.
//!
//! TLS accepts connections without a client certificate (the shared rustls configuration
//! does), so that probes can reach `/healthz` without one; every gRPC call needs a
//! certificate from the client CA and is refused UNAUTHENTICATED without it.

use crate::authz::Caller;
use crate::service::{Service, MESSAGE_BYTES_MAX};
use crate::state::State;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use protocol::cache::cache_server::CacheServer;
use std::sync::Arc;
use tonic::body::Body;
use tonic::codegen::Service as _;
use tonic::Status;

/// What the client certificate of a connection says: nothing (none presented), the
/// caller, or why the certificate names no usable caller.
pub type Peer = Option<Result<Caller, String>>;

/// Works out the caller of a connection from its (already verified) client certificate.
pub fn peer_of(connection: &rustls::ServerConnection) -> Peer {
    let der = security::tls::client_certificate_der(connection)?;
    Some(
        security::authn::identity_from_certificate(der)
            .map(|identity| Caller::from_identity(&identity))
            .map_err(|e| format!("{e:#}")),
    )
}

/// Serves one request; never fails (errors become gRPC statuses or HTTP codes).
pub async fn serve(state: Arc<State>, peer: Arc<Peer>, mut request: http::Request<Incoming>) -> http::Response<Body> {
    if security::grpc::is_grpc(&request) {
        let caller = match peer.as_ref() {
            Some(Ok(caller)) => caller.clone(),
            Some(Err(why)) => return Status::unauthenticated(format!("invalid client certificate: {why}")).into_http(),
            None => {
                return Status::unauthenticated(
                    "the cache server needs a client certificate from the installation's client CA",
                )
                .into_http()
            }
        };
        request.extensions_mut().insert(caller);
        let mut service = CacheServer::new(Service::new(state))
            .max_decoding_message_size(MESSAGE_BYTES_MAX)
            .max_encoding_message_size(usize::MAX);
        return match service.call(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
    }
    match (request.method(), request.uri().path()) {
        // Serving means ready: the store is open and replicas are answered from it.
        (&http::Method::GET, "/healthz" | "/livez" | "/readyz") => plain(http::StatusCode::OK, "ok"),
        (&http::Method::GET, "/metrics") => match peer.as_ref() {
            Some(Ok(_)) => respond(
                http::StatusCode::OK,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                state.metrics.render().into(),
            ),
            _ => plain(
                http::StatusCode::UNAUTHORIZED,
                "present a client certificate from the installation's client CA to read /metrics\n",
            ),
        },
        _ => plain(
            http::StatusCode::NOT_FOUND,
            "not found: this is a cache server; it serves gRPC, /healthz, /livez, /readyz and /metrics\n",
        ),
    }
}

fn plain(status: http::StatusCode, text: &'static str) -> http::Response<Body> {
    respond(status, "text/plain", Bytes::from_static(text.as_bytes()))
}

fn respond(status: http::StatusCode, content_type: &'static str, body: Bytes) -> http::Response<Body> {
    let mut response = http::Response::new(Body::new(Full::new(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    response
}
