//! `Watch`: changes to replicas after a cache resourceVersion, from the store's change
//! log and then live, with a bookmark whenever the stream has been idle for a second.

use crate::authz::{self, Caller};
use crate::list::key_prefix;
use crate::replicas;
use crate::replicate::store_unavailable;
use crate::state::State;
use futures::Stream;
use protocol::cache::watch_event::Kind;
use protocol::cache::{WatchEvent, WatchRequest};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use store::{EventKind, StoreError};
use tokio::sync::mpsc;
use tonic::Status;
use tracing::Instrument;

/// The stream a Watch call returns.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<WatchEvent, Status>> + Send>>;

/// Events buffered per watcher; when the watcher reads slower than that, the cache stops
/// reading the store for it and later re-reads the change log (bounded memory either way).
const WATCHER_BUFFER: usize = 1024;
/// A watcher that got no event for this long gets a bookmark.
const BOOKMARK_IDLE: Duration = Duration::from_secs(1);

/// Serves one Watch call.
pub fn watch(state: Arc<State>, caller: &Caller, request: &WatchRequest) -> Result<EventStream, Status> {
    authz::authorize_read(caller).map_err(Status::permission_denied)?;
    let prefix = key_prefix(&request.group, &request.resource)?;
    let current = state.store.current_rv();
    if request.from_rv > current {
        // The caller's resourceVersion comes from another life of this cache (its store was
        // reset): resuming would silently skip changes up to it.
        return Err(Status::out_of_range(format!(
            "resource version {} is newer than this cache's newest ({current}): list again",
            request.from_rv
        )));
    }
    let mut watch = state.store.watch(prefix.clone(), request.from_rv).map_err(|e| watch_status(&e))?;
    let (events, events_rx) = mpsc::channel(WATCHER_BUFFER);
    let span = tracing::info_span!("watch", %caller, prefix, from_rv = request.from_rv);
    let mut shutdown = state.shutdown.clone();
    tokio::spawn(
        async move {
            tokio::select! {
                ended = send_events(&mut watch, &events) => if let Err(status) = ended {
                    tracing::debug!(%status, "watch ended");
                    let _ = events.send(Err(status)).await;
                },
                _ = events.closed() => tracing::debug!("watcher went away"),
                _ = crate::state::stopped(&mut shutdown) => {}
            }
        }
        .instrument(span),
    );
    Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(events_rx)))
}

/// Forwards store events as watch events until the store fails or the watcher leaves.
async fn send_events(
    watch: &mut store::Watch,
    events: &mpsc::Sender<Result<WatchEvent, Status>>,
) -> Result<(), Status> {
    loop {
        let event = match tokio::time::timeout(BOOKMARK_IDLE, watch.next()).await {
            Err(_idle) => WatchEvent { kind: Kind::Bookmark as i32, rv: watch.progress_rv(), replica: None },
            Ok(event) => match to_watch_event(&*event.map_err(|e| watch_status(&e))?) {
                Some(event) => event,
                None => continue,
            },
        };
        if events.send(Ok(event)).await.is_err() {
            return Ok(());
        }
    }
}

/// The watch event of a store event; `None` for a value that does not decode (logged).
pub fn to_watch_event(event: &store::Event) -> Option<WatchEvent> {
    let (kind, bytes) = match (event.kind, &event.value, &event.prev) {
        (EventKind::Added, Some(value), _) => (Kind::Added, value),
        (EventKind::Modified, Some(value), _) => (Kind::Modified, value),
        (EventKind::Deleted, _, Some(prev)) => (Kind::Deleted, &prev.value),
        _ => return None,
    };
    match replicas::decode(bytes) {
        Ok(replica) => Some(WatchEvent { kind: kind as i32, rv: event.rv, replica: Some(replica) }),
        Err(error) => {
            tracing::warn!(rv = event.rv, %error, "skipping an undecodable replica in the change log");
            None
        }
    }
}

/// The status a store error ends a watch with: 410 Gone is OUT_OF_RANGE, so the watcher
/// lists again.
pub fn watch_status(error: &StoreError) -> Status {
    match error {
        StoreError::Gone { requested, oldest } => {
            Status::out_of_range(format!("resource version {requested} is too old (oldest kept {oldest}): list again"))
        }
        other => store_unavailable(other),
    }
}
