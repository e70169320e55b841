//! A raw HTTPS client that authenticates with a client certificate.
//!
//! `kube::Client` and `kubectl` only send well-formed requests; tests of bad input
//! (malformed JSON, wrong content types, broken HTTP) need a client that sends exactly
//! the bytes they are given. Benchmarks need to control connections: [`TlsHttp::connect`]
//! opens one dedicated HTTP/1.1 keep-alive connection, so N workers mean N connections.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// How long one request may take, from sending to the last body byte, unless changed
/// with [`TlsHttp::with_timeout`]. A hung server fails the test instead of hanging it.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest response body read into memory; larger bodies fail the request rather
/// than exhausting memory (a test that lists that much should page).
pub const RESPONSE_BODY_BYTES_MAX: usize = 64 * 1024 * 1024;

/// A client certificate and its private key, both PEM.
#[derive(Clone, Debug)]
pub struct ClientIdentity {
    /// The certificate chain, PEM.
    pub cert_pem: String,
    /// The private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key_pem: String,
}

/// A fully read HTTP response.
#[derive(Clone, Debug)]
pub struct HttpResponse {
    /// The status code.
    pub status: StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
}

impl HttpResponse {
    /// The body as text, lossily decoded, for assertions and error messages.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> anyhow::Result<serde_json::Value> {
        serde_json::from_slice(&self.body).with_context(|| format!("parse response body as JSON: {}", self.text()))
    }
}

/// An HTTPS client bound to one server (`https://host:port`), trusting one CA and
/// presenting an optional client certificate. Cheap to clone; clones share the pool.
#[derive(Clone)]
pub struct TlsHttp {
    base_url: String,
    authority: String,
    server_name: ServerName<'static>,
    ca_pem: Arc<Vec<u8>>,
    tls: Arc<rustls::ClientConfig>,
    pool: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
}

impl std::fmt::Debug for TlsHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsHttp")
            .field("base_url", &self.base_url)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl TlsHttp {
    /// Creates a client for `base_url` (`https://host:port`, any path is ignored) that
    /// trusts `ca_pem` and authenticates as `identity` (anonymous if `None`).
    pub fn new(base_url: &str, ca_pem: &[u8], identity: Option<&ClientIdentity>) -> anyhow::Result<TlsHttp> {
        let (scheme, rest) = base_url.split_once("://").with_context(|| format!("split scheme off {base_url:?}"))?;
        anyhow::ensure!(scheme == "https", "base URL {base_url:?} is not https");
        let authority = rest.split('/').next().unwrap_or_default().to_string();
        let host = host_of(&authority);
        let server_name =
            ServerName::try_from(host.to_string()).with_context(|| format!("parse server name {host:?}"))?;
        let tls = Arc::new(client_config(ca_pem, identity)?);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config((*tls).clone())
            .https_only()
            .enable_http1()
            .build();
        let pool = Client::builder(TokioExecutor::new()).build(connector);
        Ok(TlsHttp {
            base_url: format!("https://{authority}"),
            authority,
            server_name,
            ca_pem: Arc::new(ca_pem.to_vec()),
            tls,
            pool,
            timeout: REQUEST_TIMEOUT,
        })
    }

    /// The same server and CA, authenticating as someone else (or anonymously).
    pub fn with_identity(&self, identity: Option<&ClientIdentity>) -> anyhow::Result<TlsHttp> {
        Ok(TlsHttp::new(&self.base_url, &self.ca_pem, identity)?.with_timeout(self.timeout))
    }

    /// The same server, address and identity, checking the server's certificate for
    /// `name` instead of the URL's host: for a server reached at an address its
    /// certificate does not name (a container's IP on a compose network, where the
    /// certificate names its service).
    pub fn with_server_name(mut self, name: &str) -> anyhow::Result<TlsHttp> {
        let server_name =
            ServerName::try_from(name.to_string()).with_context(|| format!("parse server name {name:?}"))?;
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config((*self.tls).clone())
            .https_only()
            .with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(server_name.clone()))
            .enable_http1()
            .build();
        self.pool = Client::builder(TokioExecutor::new()).build(connector);
        self.server_name = server_name;
        Ok(self)
    }

    /// Changes the per-request time limit (see [`REQUEST_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> TlsHttp {
        self.timeout = timeout;
        self
    }

    /// `https://host:port`, without a path.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Sends `method path` (path includes any query) with `headers` and `body` over the
    /// shared connection pool, and reads the whole response.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> anyhow::Result<HttpResponse> {
        let request = build_request(method, &self.base_url, &self.authority, path, headers, body)?;
        let what = format!("{} {path}", request.method());
        let exchange = async {
            let response = self.pool.request(request).await.context("send request")?;
            read_response(response).await
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .with_context(|| format!("{what}: no full response within {:?}", self.timeout))?
            .with_context(|| format!("exchange {what}"))
    }

    /// Sends a request and returns as soon as the headers arrive, leaving the body as a
    /// stream: for watches and other long responses. Only the headers are time-limited.
    pub async fn send_streaming(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> anyhow::Result<http::Response<Incoming>> {
        let request = build_request(method, &self.base_url, &self.authority, path, headers, body)?;
        let what = format!("{} {path}", request.method());
        tokio::time::timeout(self.timeout, self.pool.request(request))
            .await
            .with_context(|| format!("{what}: no response headers within {:?}", self.timeout))?
            .with_context(|| format!("send {what}"))
    }

    /// `GET path`.
    pub async fn get(&self, path: &str) -> anyhow::Result<HttpResponse> {
        self.send(Method::GET, path, &[], Bytes::new()).await
    }

    /// `POST path` with a JSON body.
    pub async fn post_json(&self, path: &str, body: &serde_json::Value) -> anyhow::Result<HttpResponse> {
        let bytes = serde_json::to_vec(body).context("serialize JSON body")?;
        let headers = [(CONTENT_TYPE.as_str(), "application/json")];
        self.send(Method::POST, path, &headers, bytes).await
    }

    /// `POST path` with a JSON body that must answer 201 Created.
    pub async fn create(&self, path: &str, body: &serde_json::Value) -> anyhow::Result<()> {
        let response = self.post_json(path, body).await?;
        anyhow::ensure!(response.status == StatusCode::CREATED, "POST {path}: {} {}", response.status, response.text());
        Ok(())
    }

    /// A JSON merge patch of `path` that must answer 200 OK.
    pub async fn merge_patch(&self, path: &str, body: &serde_json::Value) -> anyhow::Result<()> {
        let headers = [("content-type", "application/merge-patch+json")];
        let response = self.send(Method::PATCH, path, &headers, serde_json::to_vec(body)?).await?;
        anyhow::ensure!(response.status == StatusCode::OK, "PATCH {path}: {} {}", response.status, response.text());
        Ok(())
    }

    /// `GET path` that must answer 200 OK, as JSON.
    pub async fn get_json(&self, path: &str) -> anyhow::Result<serde_json::Value> {
        let response = self.get(path).await?;
        anyhow::ensure!(response.status == StatusCode::OK, "GET {path}: {} {}", response.status, response.text());
        response.json()
    }

    /// Opens one dedicated HTTP/1.1 keep-alive connection (TLS handshake included,
    /// bounded by the request time limit).
    pub async fn connect(&self) -> anyhow::Result<TlsConnection> {
        let connecting = async {
            let tls = self.tls_stream().await?;
            let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                .await
                .context("start HTTP/1.1 on the TLS connection")?;
            // The connection task ends when the sender is dropped or the server closes;
            // its error then shows up on the next `send`, so it is not logged here.
            tokio::spawn(connection);
            anyhow::Ok(sender)
        };
        let sender = tokio::time::timeout(self.timeout, connecting)
            .await
            .with_context(|| format!("connect to {} within {:?}", self.base_url, self.timeout))??;
        Ok(TlsConnection {
            sender,
            base_url: self.base_url.clone(),
            authority: self.authority.clone(),
            timeout: self.timeout,
        })
    }

    /// Writes `raw` bytes over a fresh TLS connection and returns what the server sends
    /// back until it closes the connection, `wait` passes, or
    /// [`RESPONSE_BODY_BYTES_MAX`] bytes arrived: for requests that are not valid HTTP.
    pub async fn send_raw(&self, raw: &[u8], wait: Duration) -> anyhow::Result<Bytes> {
        let deadline = Instant::now() + wait;
        let mut tls = tokio::time::timeout(wait, self.tls_stream())
            .await
            .context("connect for a raw request within the wait")??;
        tls.write_all(raw).await.context("write raw request")?;
        tls.flush().await.context("flush raw request")?;
        let mut received = Vec::new();
        let mut buffer = vec![0u8; 16 * 1024];
        while received.len() < RESPONSE_BODY_BYTES_MAX {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, tls.read(&mut buffer)).await {
                Err(_elapsed) => break,
                Ok(Ok(0)) => break,
                Ok(Ok(n)) => received.extend_from_slice(&buffer[..n]),
                // A reset after the server answered is normal for bad input; keep what came.
                Ok(Err(_)) if !received.is_empty() => break,
                Ok(Err(error)) => return Err(error).context("read raw response"),
            }
        }
        Ok(Bytes::from(received))
    }

    async fn tls_stream(&self) -> anyhow::Result<TlsStream<TcpStream>> {
        let tcp =
            TcpStream::connect(&self.authority).await.with_context(|| format!("connect TCP to {}", self.authority))?;
        // Latency benchmarks measure the server, not Nagle's algorithm.
        tcp.set_nodelay(true).context("set TCP_NODELAY")?;
        TlsConnector::from(self.tls.clone())
            .connect(self.server_name.clone(), tcp)
            .await
            .with_context(|| format!("TLS handshake with {}", self.authority))
    }
}

/// One dedicated HTTP/1.1 keep-alive connection to the server; requests on it are
/// sequential (HTTP/1.1 has no multiplexing), which is what a benchmark worker wants.
pub struct TlsConnection {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    base_url: String,
    authority: String,
    timeout: Duration,
}

impl TlsConnection {
    /// Sends one request on this connection and reads the whole response. After an
    /// error the connection is unusable; open a new one.
    pub async fn send(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> anyhow::Result<HttpResponse> {
        let mut request = build_request(method, &self.base_url, &self.authority, path, headers, body)?;
        // A connection-level sender wants origin-form targets ("/path?query").
        let origin = request
            .uri()
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
            .parse()
            .context("parse origin-form path")?;
        *request.uri_mut() = origin;
        let what = format!("{} {path}", request.method());
        let exchange = async {
            self.sender.ready().await.context("wait for the connection")?;
            let response = self.sender.send_request(request).await.context("send request")?;
            read_response(response).await
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .with_context(|| format!("{what}: no full response within {:?}", self.timeout))?
            .with_context(|| format!("exchange {what}"))
    }
}

fn build_request(
    method: Method,
    base_url: &str,
    authority: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> anyhow::Result<Request<Full<Bytes>>> {
    let uri = format!("{base_url}{path}");
    let mut request = Request::builder()
        .method(method)
        .uri(&uri)
        .body(Full::new(body.into()))
        .with_context(|| format!("build request for {uri:?}"))?;
    let map = request.headers_mut();
    map.insert(HOST, HeaderValue::from_str(authority).context("encode Host header")?);
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes()).with_context(|| format!("parse header name {name:?}"))?;
        let value = HeaderValue::from_str(value).with_context(|| format!("encode header {name}"))?;
        map.append(name, value);
    }
    Ok(request)
}

async fn read_response(response: http::Response<Incoming>) -> anyhow::Result<HttpResponse> {
    let (parts, body) = response.into_parts();
    let body = Limited::new(body, RESPONSE_BODY_BYTES_MAX)
        .collect()
        .await
        .map_err(|error| anyhow::anyhow!("{error}"))
        .context("read response body")?
        .to_bytes();
    Ok(HttpResponse { status: parts.status, headers: parts.headers, body })
}

fn client_config(ca_pem: &[u8], identity: Option<&ClientIdentity>) -> anyhow::Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(cert.context("parse CA certificate PEM")?).context("add CA certificate to the trust store")?;
    }
    anyhow::ensure!(!roots.is_empty(), "CA PEM holds no certificate");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("choose TLS protocol versions")?
        .with_root_certificates(roots);
    let Some(identity) = identity else {
        return Ok(builder.with_no_client_auth());
    };
    let chain = CertificateDer::pem_slice_iter(identity.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .context("parse client certificate PEM")?;
    let key = PrivateKeyDer::from_pem_slice(identity.key_pem.as_bytes()).context("parse client key PEM")?;
    builder.with_client_auth_cert(chain, key).context("configure the client certificate")
}

/// The host part of `host:port`, without IPv6 brackets.
fn host_of(authority: &str) -> &str {
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
        _ => authority,
    };
    host.trim_start_matches('[').trim_end_matches(']')
}

/// The `items` of a list answer (empty when there are none).
pub fn list_items(list: &serde_json::Value) -> Vec<serde_json::Value> {
    list.get("items").and_then(serde_json::Value::as_array).cloned().unwrap_or_default()
}

/// The first `count` events of a watch response (one JSON object per line), each within
/// 15 s; fewer if the stream ends.
pub async fn watch_events(response: http::Response<hyper::body::Incoming>, count: usize) -> Vec<serde_json::Value> {
    let mut body = response.into_body();
    let mut buffer = Vec::new();
    let mut events = Vec::new();
    while events.len() < count {
        let frame = tokio::time::timeout(Duration::from_secs(15), body.frame()).await.expect("event within 15 s");
        let Some(Ok(frame)) = frame else { break };
        if let Some(data) = frame.data_ref() {
            buffer.extend_from_slice(data);
        }
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            events.push(serde_json::from_slice(&line).expect("each line is one JSON event"));
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn host_of_strips_port_and_brackets() {
        let cases = [
            ("127.0.0.1:6443", "127.0.0.1"),
            ("localhost:1", "localhost"),
            ("[::1]:443", "::1"),
            ("example.com", "example.com"),
        ];
        for (authority, host) in cases {
            assert_eq!(host_of(authority), host, "{authority}");
        }
    }
}
