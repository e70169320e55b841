//! Calls to other shards of the installation, over mutual TLS.
//!
//! A shard authenticates to its peers with its own client certificate (issued from the
//! installation's client CA) and trusts the installation's serving CA. One `kube`
//! client per peer base URL is kept and reused, so connections (HTTP/2) are pooled.

use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

/// How long connecting to a peer may take before it counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a peer may take to answer.
const READ_TIMEOUT: Duration = Duration::from_secs(15);

/// Why a call to a peer failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PeerError {
    /// No answer: refused, timed out, TLS failed.
    #[error("shard at {url} is unreachable: {message}")]
    Unreachable {
        /// The peer's base URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The peer answered with a Kubernetes Status error.
    #[error("shard answered {code} {reason}: {message}")]
    Status {
        /// HTTP code.
        code: u16,
        /// Status reason (`AlreadyExists`, `NotFound`, ...).
        reason: String,
        /// Status message.
        message: String,
    },
}

impl PeerError {
    /// The HTTP code of a Status answer.
    pub fn code(&self) -> Option<u16> {
        match self {
            PeerError::Status { code, .. } => Some(*code),
            PeerError::Unreachable { .. } => None,
        }
    }

    /// Whether the peer answered 404 NotFound.
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    /// Whether the peer answered 409 AlreadyExists: a create found the name taken.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, PeerError::Status { code: 409, reason, .. } if reason == "AlreadyExists")
    }
}

/// The credentials for peer calls, as PEM.
#[derive(Clone)]
pub struct PeerCredentials {
    /// CA that signs every shard's serving certificate.
    pub server_ca_pem: String,
    /// This shard's client certificate.
    pub client_cert_pem: String,
    /// Its private key.
    pub client_key_pem: String,
}

/// Clients for the other shards.
pub struct Peers {
    credentials: PeerCredentials,
    clients: Mutex<HashMap<String, kube::Client>>,
}

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peers").field("clients", &self.clients.lock().len()).finish_non_exhaustive()
    }
}

impl Peers {
    /// Peer clients authenticating with `credentials`.
    pub fn new(credentials: PeerCredentials) -> Peers {
        Peers { credentials, clients: Mutex::default() }
    }

    async fn client(&self, base_url: &str) -> Result<kube::Client, PeerError> {
        if let Some(client) = self.clients.lock().get(base_url) {
            return Ok(client.clone());
        }
        let unreachable = |message: String| PeerError::Unreachable { url: base_url.to_string(), message };
        let credentials = &self.credentials;
        let document = security::pki::kubeconfig_document(
            base_url,
            &credentials.server_ca_pem,
            &credentials.client_cert_pem,
            &credentials.client_key_pem,
        );
        let kubeconfig: kube::config::Kubeconfig =
            serde_json::from_value(document).map_err(|e| unreachable(format!("peer kubeconfig: {e}")))?;
        let options = kube::config::KubeConfigOptions::default();
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|e| unreachable(format!("peer client configuration: {e}")))?;
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        config.read_timeout = Some(READ_TIMEOUT);
        let client = kube::Client::try_from(config).map_err(|e| unreachable(format!("peer client: {e}")))?;
        self.clients.lock().insert(base_url.to_string(), client.clone());
        Ok(client)
    }

    /// Sends a request with an optional JSON body to `base_url` + `path` and returns the
    /// JSON answer.
    #[tracing::instrument(
        name = "peer.call",
        skip(self, body),
        fields(
            otel.name = %format_args!("peer {method}"),
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            http.request.method = %method,
            server.address = %base_url,
            url.path = %path,
            http.response.status_code = tracing::field::Empty,
        )
    )]
    pub async fn call(
        &self,
        base_url: &str,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, PeerError> {
        let client = self.client(base_url).await?;
        let bytes = match body {
            Some(body) => serde_json::to_vec(body).expect("JSON values serialize"),
            None => Vec::new(),
        };
        let mut request = http::Request::builder()
            .method(method)
            .uri(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(bytes)
            .map_err(|e| PeerError::Unreachable { url: base_url.into(), message: format!("bad request: {e}") })?;
        // The other shard's span becomes a child of this call's.
        let span = tracing::Span::current();
        telemetry::propagation::inject_http(&span, request.headers_mut());
        let answer = match client.request::<Value>(request).await {
            Ok(value) => Ok(value),
            Err(kube::Error::Api(status)) => Err(PeerError::Status {
                code: status.code,
                reason: status.reason.clone(),
                message: status.message.clone(),
            }),
            Err(other) => Err(PeerError::Unreachable { url: base_url.into(), message: other.to_string() }),
        };
        match &answer {
            Ok(_) => span.record("http.response.status_code", 200),
            Err(error) => {
                if let Some(code) = error.code() {
                    span.record("http.response.status_code", code);
                }
                span.record("otel.status_code", "ERROR")
            }
        };
        answer
    }

    /// Whether the shard at `base_url` answers at all: its `/livez`, within the client's
    /// timeouts. Any HTTP answer counts; only no answer is [`PeerError::Unreachable`].
    pub async fn probe(&self, base_url: &str) -> Result<(), PeerError> {
        let client = self.client(base_url).await?;
        let request = http::Request::get("/livez")
            .body(Vec::new())
            .map_err(|e| PeerError::Unreachable { url: base_url.into(), message: format!("bad request: {e}") })?;
        match client.request_text(request).await {
            Ok(_) | Err(kube::Error::Api(_)) => Ok(()),
            Err(other) => Err(PeerError::Unreachable { url: base_url.into(), message: other.to_string() }),
        }
    }

    /// GET.
    pub async fn get(&self, base_url: &str, path: &str) -> Result<Value, PeerError> {
        self.call(base_url, http::Method::GET, path, None).await
    }

    /// POST a new object.
    pub async fn create(&self, base_url: &str, path: &str, body: &Value) -> Result<Value, PeerError> {
        self.call(base_url, http::Method::POST, path, Some(body)).await
    }

    /// PUT an object.
    pub async fn replace(&self, base_url: &str, path: &str, body: &Value) -> Result<Value, PeerError> {
        self.call(base_url, http::Method::PUT, path, Some(body)).await
    }

    /// DELETE an object.
    pub async fn delete(&self, base_url: &str, path: &str) -> Result<Value, PeerError> {
        self.call(base_url, http::Method::DELETE, path, None).await
    }
}

/// The REST path of a cluster's LogicalCluster object (or their collection).
pub fn logical_cluster_path(cluster: &str, object: bool) -> String {
    let collection = format!("/clusters/{cluster}/apis/core.kcp.io/v1alpha1/logicalclusters");
    if object {
        format!("{collection}/{}", protocol::types::LOGICAL_CLUSTER_NAME)
    } else {
        collection
    }
}
