//! A gRPC client for `atoll-cache-server`, as tests and benchmarks use it.
//!
//! HTTP/2 over mutual TLS (`security::grpc::client`, what shards and caches use), with the
//! tonic client generated in `protocol::cache`. Tests read with it (List, Watch) and
//! write with it (Replicate), the latter to tamper with a cache the way drift would: a
//! forced upsert of altered content, or a forced tombstone, at position 0 so that no
//! sender's resume position moves.

use std::time::Duration;

use anyhow::Context;
use futures::SinkExt;
use http::{StatusCode, Uri};
use http_body_util::BodyExt;
use protocol::cache::cache_client::CacheClient as GeneratedClient;
use protocol::cache::{
    change, replicate_request, Batch, Change, Hello, ListRequest, ListResponse, Replica, ReplicaKey, ReplicateRequest,
    ReplicateResponse, WatchEvent, WatchRequest,
};
use tonic::{Code, Status, Streaming};

use crate::tls_http::ClientIdentity;

/// The HTTP/2 connection pool the generated client runs on (the one every Atoll process
/// uses, from `security::grpc`).
pub type GrpcChannel = security::grpc::GrpcClient;

/// How long one unary call (List, a health probe) or one replicate exchange may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// The largest message accepted: a List of every replica of a test installation is far
/// below this; a larger one means a runaway cache, and failing beats exhausting memory.
const MESSAGE_BYTES_MAX: usize = 256 * 1024 * 1024;

/// The sender name tests use for tampering: an admin (system:masters) may write any
/// origin, as a child cache server does.
pub const ADMIN_SENDER: &str = "admin";

/// How many batches one [`CacheClient::replicate`] call may send; more is a test bug.
const BATCHES_MAX: usize = 1024;

/// A client of one cache server, authenticated by one client certificate. Cheap to clone;
/// clones share the connection.
#[derive(Clone)]
pub struct CacheClient {
    url: String,
    origin: Uri,
    channel: GrpcChannel,
}

impl std::fmt::Debug for CacheClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheClient").field("url", &self.url).finish_non_exhaustive()
    }
}

impl CacheClient {
    /// A client of the cache at `url` (`https://host:port`) that trusts `ca_pem` and
    /// presents `identity`.
    pub fn new(url: &str, ca_pem: &str, identity: &ClientIdentity) -> anyhow::Result<CacheClient> {
        let origin: Uri = url.parse().with_context(|| format!("parse cache URL {url:?}"))?;
        anyhow::ensure!(origin.scheme_str() == Some("https"), "cache URL {url:?} is not https");
        let channel = security::grpc::client(ca_pem, &identity.cert_pem, &identity.key_pem)
            .context("build the gRPC client towards the cache server")?;
        Ok(CacheClient { url: url.trim_end_matches('/').to_string(), origin, channel })
    }

    /// A client of the cache at `url` whose host is not a name its certificate carries (a
    /// container's address on a compose network): the certificate is checked for
    /// `server_name` instead (the service name the cache was given as `--tls-san`).
    pub fn with_server_name(
        url: &str,
        ca_pem: &str,
        identity: &ClientIdentity,
        server_name: &str,
    ) -> anyhow::Result<CacheClient> {
        let origin: Uri = url.parse().with_context(|| format!("parse cache URL {url:?}"))?;
        anyhow::ensure!(origin.scheme_str() == Some("https"), "cache URL {url:?} is not https");
        let name = rustls::pki_types::ServerName::try_from(server_name.to_string())
            .with_context(|| format!("parse server name {server_name:?}"))?;
        // The connector as `security::grpc::client` builds it, with the name fixed; the
        // keep-alive pings it adds matter to long streams, not to the lists tests make.
        let tls = security::tls::client_config(ca_pem, Some((&identity.cert_pem, &identity.key_pem)), &[])
            .context("build the TLS configuration of the gRPC client")?;
        let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config((*tls).clone())
            .https_only()
            .with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
            .enable_http2()
            .wrap_connector(http);
        let channel = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .http2_only(true)
            .build(connector);
        Ok(CacheClient { url: url.trim_end_matches('/').to_string(), origin, channel })
    }

    /// The same cache, authenticated as someone else.
    pub fn with_identity(&self, ca_pem: &str, identity: &ClientIdentity) -> anyhow::Result<CacheClient> {
        CacheClient::new(&self.url, ca_pem, identity)
    }

    /// `https://host:port`.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn grpc(&self) -> GeneratedClient<GrpcChannel> {
        GeneratedClient::with_origin(self.channel.clone(), self.origin.clone())
            .max_decoding_message_size(MESSAGE_BYTES_MAX)
            .max_encoding_message_size(MESSAGE_BYTES_MAX)
    }

    /// `GET /healthz`: the status code the cache answers with.
    pub async fn healthz(&self) -> anyhow::Result<StatusCode> {
        let uri = format!("{}/healthz", self.url);
        let request = http::Request::get(&uri).body(tonic::body::Body::empty()).context("build the health request")?;
        let exchange = async {
            let response = self.channel.request(request).await.with_context(|| format!("GET {uri}"))?;
            let status = response.status();
            // Drain the body so the stream is finished rather than reset.
            response.into_body().collect().await.with_context(|| format!("read GET {uri}"))?;
            anyhow::Ok(status)
        };
        tokio::time::timeout(CALL_TIMEOUT, exchange).await.with_context(|| format!("GET {uri}: no answer in time"))?
    }

    /// One List call.
    pub async fn list(&self, request: ListRequest) -> Result<ListResponse, Status> {
        let call = async { self.grpc().list(request).await.map(tonic::Response::into_inner) };
        tokio::time::timeout(CALL_TIMEOUT, call).await.unwrap_or_else(|_| {
            Err(Status::deadline_exceeded(format!("List on {} took over {CALL_TIMEOUT:?}", self.url)))
        })
    }

    /// Every replica the cache holds, of every resource and origin.
    pub async fn list_all(&self) -> anyhow::Result<Vec<Replica>> {
        Ok(self.list_everything().await?.items)
    }

    /// The whole List answer: every replica, and the cache's session records (`epochs`).
    pub async fn list_everything(&self) -> anyhow::Result<ListResponse> {
        self.list(ListRequest::default()).await.map_err(|status| status_error(&self.url, "List", status))
    }

    /// Every replica of `group/resource`.
    pub async fn list_resource(&self, group: &str, resource: &str) -> anyhow::Result<ListResponse> {
        let request = ListRequest { group: group.into(), resource: resource.into(), ..ListRequest::default() };
        self.list(request).await.map_err(|status| status_error(&self.url, "List", status))
    }

    /// Opens a Watch; only the opening is time-limited, the stream runs until dropped.
    pub async fn watch(&self, request: WatchRequest) -> Result<Streaming<WatchEvent>, Status> {
        let call = async { self.grpc().watch(request).await.map(tonic::Response::into_inner) };
        tokio::time::timeout(CALL_TIMEOUT, call).await.unwrap_or_else(|_| {
            Err(Status::deadline_exceeded(format!("Watch on {} took over {CALL_TIMEOUT:?}", self.url)))
        })
    }

    /// Runs one Replicate stream: Hello as `sender`, then each batch in turn, waiting for
    /// each acknowledgement before sending the next. Returns the answer to the Hello
    /// followed by one acknowledgement per batch; the first error status ends the call
    /// (a refused write is PERMISSION_DENIED, a malformed one INVALID_ARGUMENT).
    pub async fn replicate(&self, sender: &str, batches: Vec<Batch>) -> Result<Vec<ReplicateResponse>, Status> {
        if batches.len() > BATCHES_MAX {
            return Err(Status::invalid_argument(format!("at most {BATCHES_MAX} batches per call")));
        }
        let exchange = self.replicate_unbounded(sender, batches);
        tokio::time::timeout(CALL_TIMEOUT, exchange).await.unwrap_or_else(|_| {
            Err(Status::deadline_exceeded(format!("Replicate on {} took over {CALL_TIMEOUT:?}", self.url)))
        })
    }

    async fn replicate_unbounded(&self, sender: &str, batches: Vec<Batch>) -> Result<Vec<ReplicateResponse>, Status> {
        // One slot: the next message is only queued once the previous one was answered.
        let (mut requests, outgoing) = futures::channel::mpsc::channel::<ReplicateRequest>(1);
        let hello = ReplicateRequest {
            request: Some(replicate_request::Request::Hello(Hello { sender: sender.into(), ..Hello::default() })),
        };
        requests.send(hello).await.map_err(|_| Status::internal("queue the Hello"))?;
        let mut responses = self.grpc().replicate(outgoing).await?.into_inner();
        let mut answers = vec![next_answer(&mut responses, "the Hello").await?];
        for (index, batch) in batches.into_iter().enumerate() {
            let request = ReplicateRequest { request: Some(replicate_request::Request::Batch(batch)) };
            requests.send(request).await.map_err(|_| Status::unavailable("the cache closed the Replicate stream"))?;
            answers.push(next_answer(&mut responses, &format!("batch {}", index + 1)).await?);
        }
        // Closing the request stream ends the call cleanly.
        drop(requests);
        Ok(answers)
    }

    /// Overwrites a replica as drift would: a forced upsert as [`ADMIN_SENDER`] that moves
    /// no position.
    pub async fn force_upsert(&self, replica: Replica) -> anyhow::Result<()> {
        let change = Change { change: Some(change::Change::Upsert(replica)), force: true };
        self.force(change).await
    }

    /// Deletes a replica as drift would: a forced tombstone as [`ADMIN_SENDER`].
    pub async fn force_tombstone(&self, key: ReplicaKey) -> anyhow::Result<()> {
        let change = Change { change: Some(change::Change::Tombstone(key)), force: true };
        self.force(change).await
    }

    async fn force(&self, change: Change) -> anyhow::Result<()> {
        let batch = Batch { changes: vec![change], position: 0, ..Batch::default() };
        self.replicate(ADMIN_SENDER, vec![batch])
            .await
            .map_err(|status| status_error(&self.url, "Replicate", status))?;
        Ok(())
    }
}

/// The next response on a Replicate stream; the stream ending early is an error.
async fn next_answer(responses: &mut Streaming<ReplicateResponse>, what: &str) -> Result<ReplicateResponse, Status> {
    match responses.message().await? {
        Some(answer) => Ok(answer),
        None => {
            Err(Status::new(Code::Unavailable, format!("the cache ended the Replicate stream before answering {what}")))
        }
    }
}

/// A gRPC status as an error naming the call and the cache.
pub fn status_error(url: &str, call: &str, status: Status) -> anyhow::Error {
    anyhow::anyhow!("{call} on {url}: {:?}: {}", status.code(), status.message())
}
