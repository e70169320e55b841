//! Watch: a stream of JSON events, with kube's start semantics, selectors, bookmarks,
//! streaming lists (`sendInitialEvents`) and 410 as an in-band ERROR event.

use super::ctx::{Ctx, Scope};
use super::list::{wait_for_rv, Selectors};
use crate::objects;
use crate::rest::negotiate::Representation;
use crate::rest::status::{ApiError, ApiResult};
use crate::rest::{Body, Response};
use crate::table::{self, IncludeObject};
use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use protocol::meta;
use serde_json::{json, Value};
use std::time::Duration;
use store::{EventKind, ListOptions, StoreError};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;

/// How often an idle watch with `allowWatchBookmarks` gets a BOOKMARK.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(10);
/// A watch without `timeoutSeconds` ends after this long; clients re-watch (kube uses
/// a random 30–60 minutes).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);
/// Encoded events buffered per watch before the producer waits for the client.
const FRAMES_BUFFERED_MAX: usize = 256;

/// Where the stream starts.
enum Start {
    /// Send the current state as ADDED events first, then changes after it.
    WithInitialState { initial_events_end_bookmark: bool },
    /// Send changes after this resourceVersion.
    After(u64),
}

/// Parameters of a watch request, checked before the stream starts.
struct Plan {
    start: Start,
    bookmarks: bool,
    timeout: Duration,
    selectors: Selectors,
    table: Option<IncludeObject>,
    prefix: String,
    namespace_filter: Option<String>,
    /// Set when the path names one object (`…/configmaps/foo?watch=true`).
    name_filter: Option<String>,
    /// The clusters a virtual workspace narrows `*` to.
    cluster_filter: Option<std::sync::Arc<std::collections::BTreeSet<String>>>,
}

/// Starts a watch stream.
pub fn handle(ctx: Ctx) -> ApiResult<Response> {
    let plan = plan(&ctx)?;
    let (tx, rx) = mpsc::channel::<Bytes>(FRAMES_BUFFERED_MAX);
    tokio::spawn(async move {
        let _active = ctx.core.metrics.watch_started();
        let deadline = tokio::time::sleep(plan.timeout);
        tokio::pin!(deadline);
        tokio::select! {
            _ = &mut deadline => {}
            _ = stream(&ctx, &plan, &tx) => {}
        }
    });
    let frames = ReceiverStream::new(rx).map(|bytes| Ok::<_, std::io::Error>(hyper::body::Frame::data(bytes)));
    let body: Body = StreamBody::new(frames).boxed_unsync();
    http::Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body)
        .map_err(|e| ApiError::internal(e.to_string()))
}

fn plan(ctx: &Ctx) -> ApiResult<Plan> {
    let table = match ctx.representation()? {
        Representation::Table => Some(IncludeObject::parse(ctx.param("includeObject"))),
        _ => None,
    };
    let flag = |name: &str| ctx.param(name).is_some_and(|v| v == "true" || v == "1");
    let rv = ctx.param("resourceVersion").filter(|v| !v.is_empty());
    let send_initial = ctx.param("sendInitialEvents").map(|v| v == "true" || v == "1");
    let bookmarks = flag("allowWatchBookmarks");
    let start = match (send_initial, rv) {
        (Some(true), _) => {
            if ctx.param("resourceVersionMatch") != Some("NotOlderThan") {
                return Err(ApiError::bad_request("sendInitialEvents=true requires resourceVersionMatch=NotOlderThan"));
            }
            if !bookmarks {
                return Err(ApiError::bad_request("sendInitialEvents=true requires allowWatchBookmarks=true"));
            }
            Start::WithInitialState { initial_events_end_bookmark: true }
        }
        (Some(false), None | Some("0")) => Start::After(ctx.core.store.current_rv()),
        (_, None) | (None, Some("0")) => Start::WithInitialState { initial_events_end_bookmark: false },
        (_, Some(rv)) => Start::After(objects::parse_rv(rv)?),
    };
    // kube treats 0 like an absent timeout.
    let timeout = match ctx.param("timeoutSeconds").filter(|t| !t.is_empty()) {
        Some(t) => match t.parse::<u64>() {
            Ok(0) => DEFAULT_TIMEOUT,
            Ok(seconds) => Duration::from_secs(seconds),
            Err(_) => return Err(ApiError::bad_request("timeoutSeconds must be a whole number")),
        },
        None => DEFAULT_TIMEOUT,
    };
    let (prefix, namespace_filter) = match &ctx.scope {
        Scope::Cluster(cluster) => (objects::collection_prefix(&ctx.rt, Some(cluster), ctx.namespace()), None),
        Scope::Wildcard => (objects::collection_prefix(&ctx.rt, None, None), ctx.namespace().map(str::to_string)),
    };
    let name_filter = ctx.req.name.clone();
    Ok(Plan {
        start,
        bookmarks,
        timeout,
        selectors: Selectors::parse(ctx)?,
        table,
        prefix,
        namespace_filter,
        name_filter,
        cluster_filter: ctx.clusters.clone(),
    })
}

/// Produces the stream until the client goes away, the store fails or the history is gone.
async fn stream(ctx: &Ctx, plan: &Plan, tx: &mpsc::Sender<Bytes>) -> Option<()> {
    let mut encoder = Encoder { ctx, plan, columns_sent: false };
    let from = match plan.start {
        Start::After(rv) => rv,
        Start::WithInitialState { initial_events_end_bookmark } => {
            if let Some(rv) = ctx.param("resourceVersion").and_then(|rv| rv.parse().ok()) {
                if wait_for_rv(ctx, rv).await.is_err() {
                    return send(tx, encoder.error(&ApiError::timeout("Too large resource version"))).await;
                }
            }
            let rv = send_initial_state(&mut encoder, tx).await?;
            if initial_events_end_bookmark {
                send(tx, encoder.bookmark(rv, true)).await?;
            }
            rv
        }
    };
    // A resourceVersion this shard has not reached (say, after its data was restored)
    // must not silently swallow the events up to it: wait briefly, then fail so that the
    // client re-lists.
    if wait_for_rv(ctx, from).await.is_err() {
        let current = ctx.core.store.current_rv();
        let error = ApiError::timeout(format!("Too large resource version: {from}, current: {current}"));
        return send(tx, encoder.error(&error)).await;
    }
    let mut watch = match ctx.core.store.watch(plan.prefix.clone().into_bytes(), from) {
        Ok(watch) => watch,
        Err(e) => return send(tx, encoder.error(&ApiError::from(e))).await,
    };
    let mut ticker = tokio::time::interval(BOOKMARK_INTERVAL);
    ticker.tick().await;
    loop {
        tokio::select! {
            event = watch.next() => match event {
                Ok(event) => {
                    if let Some(frame) = encoder.event(&event) {
                        send(tx, frame).await?;
                    }
                }
                Err(e @ StoreError::Gone { .. }) | Err(e @ StoreError::Closed) => {
                    return send(tx, encoder.error(&ApiError::from(e))).await;
                }
                Err(e) => return send(tx, encoder.error(&ApiError::from(e))).await,
            },
            _ = ticker.tick(), if plan.bookmarks => {
                send(tx, encoder.bookmark(watch.progress_rv(), false)).await?;
            }
            _ = tx.closed() => return None,
        }
    }
}

async fn send_initial_state(encoder: &mut Encoder<'_>, tx: &mpsc::Sender<Bytes>) -> Option<u64> {
    let options = ListOptions { prefix: encoder.plan.prefix.clone().into_bytes(), ..ListOptions::default() };
    let page = match encoder.ctx.core.store.list(&options, |key, _| encoder.plan.key_matches(key)) {
        Ok(page) => page,
        Err(e) => {
            send(tx, encoder.error(&ApiError::from(e))).await;
            return None;
        }
    };
    for (_, stored) in &page.items {
        let Ok(object) = objects::decode(stored) else { continue };
        if encoder.plan.selectors.matches(&encoder.ctx.rt, &object) {
            send(tx, encoder.frame("ADDED", &object)).await?;
        }
    }
    // The namespaces' implicit objects (a `default` ServiceAccount) exist as far as a
    // client can tell, so the initial state holds them too.
    if let Scope::Cluster(cluster) = &encoder.ctx.scope {
        let implicit = super::list::implicit_objects(encoder.ctx, cluster).unwrap_or_default();
        for object in implicit {
            let key = objects::key(
                &encoder.ctx.rt,
                cluster,
                meta::namespace(&object),
                meta::name(&object).unwrap_or_default(),
            );
            if encoder.plan.key_matches(key.as_bytes()) && encoder.plan.selectors.matches(&encoder.ctx.rt, &object) {
                send(tx, encoder.frame("ADDED", &object)).await?;
            }
        }
    }
    Some(page.rv)
}

async fn send(tx: &mpsc::Sender<Bytes>, frame: Bytes) -> Option<()> {
    tx.send(frame).await.ok()
}

impl Plan {
    /// Whether a key is in the watched namespace (and cluster, in a narrowed view) and, for
    /// a named watch, is that object.
    fn key_matches(&self, key: &[u8]) -> bool {
        if self.namespace_filter.is_none() && self.name_filter.is_none() && self.cluster_filter.is_none() {
            return true;
        }
        let Some((key_cluster, key_ns, key_name)) = objects::split_key(key) else { return false };
        self.namespace_filter.as_ref().is_none_or(|ns| ns == key_ns)
            && self.name_filter.as_ref().is_none_or(|name| name == key_name)
            && self.cluster_filter.as_ref().is_none_or(|clusters| clusters.contains(key_cluster))
    }
}

/// Turns store events into watch frames for one request.
struct Encoder<'a> {
    ctx: &'a Ctx,
    plan: &'a Plan,
    columns_sent: bool,
}

impl Encoder<'_> {
    /// The frame for a store event, after selectors; `None` when the client should not see it.
    fn event(&mut self, event: &store::Event) -> Option<Bytes> {
        if !self.plan.key_matches(&event.key) {
            return None;
        }
        let decode = |value: &Bytes| objects::decode(&store::Versioned { rv: event.rv, value: value.clone() }).ok();
        let new = event.value.as_ref().and_then(decode);
        let old = event.prev.as_ref().and_then(|p| decode(&p.value));
        let matches = |o: &Option<Value>| o.as_ref().is_some_and(|o| self.plan.selectors.matches(&self.ctx.rt, o));
        let (kind, object) = match (event.kind, matches(&old), matches(&new)) {
            (EventKind::Deleted, true, _) => ("DELETED", old?),
            (EventKind::Added, _, true) => ("ADDED", new?),
            (EventKind::Modified, true, true) => ("MODIFIED", new?),
            (EventKind::Modified, false, true) => ("ADDED", new?),
            // kube shows the last state that matched, stamped with this event's version.
            (EventKind::Modified, true, false) => ("DELETED", old?),
            _ => return None,
        };
        Some(self.frame(kind, &object))
    }

    fn frame(&mut self, kind: &str, object: &Value) -> Bytes {
        let presented = self.ctx.present(object);
        let object = &*presented;
        let object = match self.plan.table {
            Some(include) => {
                let list_meta = json!({"resourceVersion": object.pointer("/metadata/resourceVersion").cloned().unwrap_or_default()});
                let with_columns = !std::mem::replace(&mut self.columns_sent, true);
                table::table(&self.ctx.rt, std::slice::from_ref(object), include, list_meta, with_columns)
            }
            None => object.clone(),
        };
        encode(&json!({"type": kind, "object": object}))
    }

    fn bookmark(&self, rv: u64, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = json!({"kind": self.ctx.rt.kind, "apiVersion": self.ctx.rt.api_version(), "metadata": metadata});
        encode(&json!({"type": "BOOKMARK", "object": object}))
    }

    fn error(&self, error: &ApiError) -> Bytes {
        encode(&json!({"type": "ERROR", "object": error.to_status()}))
    }
}

fn encode(event: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(event).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}
