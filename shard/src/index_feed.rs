//! The index feed (gRPC `atoll.index.v1.IndexFeed`): streams this shard's LogicalClusters
//! and Workspaces to front-proxies, a snapshot first and then every change, so that a
//! proxy routes `/clusters/<path>` from memory.
//!
//! Served on the shard's HTTPS port (requests with `content-type: application/grpc`), to
//! front-proxy certificates and `system:masters` only. Events come from store watches, so
//! a change reaches the proxy as soon as it is committed; a proxy that reconnects with the
//! resourceVersion of its last event gets only what it missed while the change log still
//! holds it, and a fresh snapshot otherwise.

use crate::api::PeerInfo;
use crate::state::Shard;
use crate::tenancy::rows::TenancyRows;
use apiserver::objects;
use apiserver::registry::ResourceType;
use apiserver::rest::Response as HttpResponse;
use futures::Stream;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use protocol::index::index_event::{Entry, Kind};
use protocol::index::index_feed_server::{IndexFeed, IndexFeedServer};
use protocol::index::{IndexEvent, LogicalClusterEntry, WatchRequest, WorkspaceEntry};
use protocol::meta;
use protocol::types::Owner;
use protocol::watcher::{self, Start};
use protocol::wellknown::{CLUSTER_ANNOTATION, OWNER_ANNOTATION, PATH_ANNOTATION};
use security::authn::CertificateCaller;
use serde_json::Value;
use std::pin::Pin;
use std::sync::Arc;
use store::ListOptions;
use tokio::sync::mpsc;
use tonic::codegen::Service;
use tonic::{Request, Response, Status};
use tracing::Instrument;

/// Events buffered per subscriber before the shard waits for the proxy to read.
const SUBSCRIBER_BUFFER: usize = 1024;

/// The gRPC service.
pub struct Feed {
    shard: Arc<Shard>,
}

/// Serves one gRPC call: the feed, to front-proxies and `system:masters` only.
pub async fn serve(shard: Arc<Shard>, peer: &PeerInfo, request: http::Request<Incoming>) -> HttpResponse {
    let allowed = match &peer.certificate {
        // The proxy's own call carries no user; a user's request relayed by the proxy
        // must not reach the feed (unless the user is a master).
        Some(Ok(CertificateCaller::FrontProxy { .. })) => match security::identity_headers::decode(request.headers()) {
            Ok(None) => true,
            Ok(Some(identity)) => identity.is_master(),
            Err(_) => false,
        },
        Some(Ok(CertificateCaller::User(identity))) => identity.is_master(),
        _ => false,
    };
    let response = if allowed {
        let mut service = IndexFeedServer::new(Feed { shard });
        match service.call(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    } else {
        Status::permission_denied("the index feed serves front-proxies and system:masters only").into_http()
    };
    response.map(|body| body.map_err(std::io::Error::other).boxed_unsync())
}

type EventStream = Pin<Box<dyn Stream<Item = Result<IndexEvent, Status>> + Send>>;

#[tonic::async_trait]
impl IndexFeed for Feed {
    type WatchStream = EventStream;

    async fn watch(&self, request: Request<WatchRequest>) -> Result<Response<Self::WatchStream>, Status> {
        let resume_rv = request.into_inner().resume_rv;
        let (tx, rx) = mpsc::channel(SUBSCRIBER_BUFFER);
        let shard = self.shard.clone();
        let span = tracing::info_span!("index_feed", resume_rv);
        tokio::spawn(
            async move {
                if let Err(status) = stream_events(&shard, resume_rv, &tx).await {
                    tracing::debug!(%status, "index feed ended");
                    let _ = tx.send(Err(status)).await;
                }
            }
            .instrument(span),
        );
        Ok(Response::new(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))))
    }
}

/// Sends the snapshot (unless resuming) and then changes, until the receiver goes away.
async fn stream_events(
    shard: &Shard,
    resume_rv: u64,
    tx: &mpsc::Sender<Result<IndexEvent, Status>>,
) -> Result<(), Status> {
    let kinds = [shard.registry.logical_clusters(), shard.registry.workspaces()];
    let prefixes = kinds.each_ref().map(|rt| objects::collection_prefix(rt, None, None).into_bytes());
    // The shared decision of [`protocol::watcher::start`]; a 410 later on ends the stream
    // and the proxy's reconnect lists again (a relist inside the stream would not replace
    // the proxy's entries).
    let start = watcher::start(resume_rv, shard.store.current_rv(), shard.store.compacted_rv());
    let resumable = start != Start::List;
    let from_rv = if resumable {
        resume_rv
    } else {
        // Both lists at one resourceVersion, so the snapshot is one consistent state.
        let mut rv = None;
        for (rt, prefix) in kinds.iter().zip(&prefixes) {
            let options = ListOptions { prefix: prefix.clone(), at_rv: rv, ..ListOptions::default() };
            let page = shard.store.list(&options, |_, _| true).map_err(|e| Status::unavailable(e.to_string()))?;
            let rv = *rv.get_or_insert(page.rv);
            for (_, stored) in &page.items {
                let Ok(object) = objects::decode(stored) else { continue };
                if let Some(entry) = entry_of(rt, &object) {
                    send(tx, IndexEvent { kind: Kind::Upsert as i32, rv, entry: Some(entry), ..IndexEvent::default() })
                        .await?;
                }
            }
        }
        rv.unwrap_or_else(|| shard.store.current_rv())
    };
    send(tx, IndexEvent { kind: Kind::Synced as i32, rv: from_rv, resumed: resumable, ..IndexEvent::default() })
        .await?;

    let [lc_prefix, ws_prefix] = prefixes;
    let gone = |e: store::StoreError| Status::aborted(format!("index watch ended: {e}; reconnect"));
    let mut clusters = shard.store.watch(lc_prefix, from_rv).map_err(gone)?;
    let mut workspaces = shard.store.watch(ws_prefix, from_rv).map_err(gone)?;
    loop {
        let (rt, event) = tokio::select! {
            event = clusters.next() => (&kinds[0], event.map_err(gone)?),
            event = workspaces.next() => (&kinds[1], event.map_err(gone)?),
            _ = tx.closed() => return Ok(()),
        };
        let committed_unix_micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| i64::try_from(since.as_micros()).unwrap_or(i64::MAX));
        let (kind, bytes) = match (&event.value, &event.prev) {
            (Some(value), _) => (Kind::Upsert, value.clone()),
            (None, Some(prev)) => (Kind::Delete, prev.value.clone()),
            (None, None) => continue,
        };
        let Ok(object) = objects::decode(&store::Versioned { rv: event.rv, value: bytes }) else { continue };
        // Where a reconnecting client may resume: every change up to it was sent. The other
        // watch may still hold older changes, so this can trail the event (a resume then
        // repeats some events, which the index applies idempotently).
        let resume_rv = clusters.progress_rv().min(workspaces.progress_rv());
        if let Some(entry) = entry_of(rt, &object) {
            let event = IndexEvent {
                kind: kind as i32,
                rv: resume_rv,
                entry: Some(entry),
                committed_unix_micros,
                ..IndexEvent::default()
            };
            send(tx, event).await?;
        }
    }
}

async fn send(tx: &mpsc::Sender<Result<IndexEvent, Status>>, event: IndexEvent) -> Result<(), Status> {
    tx.send(Ok(event)).await.map_err(|_| Status::cancelled("the subscriber went away"))
}

/// The index entry of a LogicalCluster or Workspace object.
fn entry_of(rt: &ResourceType, object: &Value) -> Option<Entry> {
    let annotations = meta::annotations(object);
    let cluster = annotations.get(CLUSTER_ANNOTATION)?.clone();
    let phase = object.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default().to_string();
    if rt.resource == "logicalclusters" {
        let owner = annotations
            .get(OWNER_ANNOTATION)
            .and_then(|text| Owner::parse(text))
            .map(|owner| owner.username)
            .unwrap_or_default();
        let path = annotations.get(PATH_ANNOTATION).cloned().unwrap_or_default();
        return Some(Entry::LogicalCluster(LogicalClusterEntry { name: cluster, path, phase, owner }));
    }
    Some(Entry::Workspace(WorkspaceEntry {
        parent: cluster,
        name: meta::name(object)?.to_string(),
        cluster: object.pointer("/spec/cluster").and_then(Value::as_str).unwrap_or_default().to_string(),
        phase,
    }))
}
