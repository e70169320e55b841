//! The sending half of one replication stream: the Hello, batches bounded by how many are
//! unacknowledged ([`Window`]), and the acknowledgements coming back.

use crate::metrics::LagMetrics;
use crate::plan::{self, Window};
use anyhow::Context;
use parking_lot::Mutex;
use protocol::cache::cache_client::CacheClient;
use protocol::cache::{replicate_request, Batch, Change, Hello, ReplicateRequest, ReplicateResponse};
use security::grpc::GrpcClient;
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};
use tonic::Streaming;

/// Requests queued towards the HTTP/2 stream; the in-flight bound does the real limiting.
const REQUESTS_BUFFER: usize = 8;

/// How long a target may take to answer the Hello. TCP connect has its own timeout, but a
/// target that accepts connections and never answers (a frozen process, a blackhole) would
/// hold the TLS handshake or the Hello forever, and the sender would never fail over to
/// the next target; HTTP/2 keep-alive only watches streams already open.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// The sending half of a replication stream, with its window of unacknowledged batches.
pub(crate) struct Link {
    requests: mpsc::Sender<ReplicateRequest>,
    /// Whether the target reads session announcements (it said so answering the Hello).
    takes_epochs: bool,
    window: watch::Sender<Window>,
    lag: Lag,
}

/// When the changes of each unacknowledged batch were first seen committed, for the lag.
struct Lag {
    metrics: LagMetrics,
    to: String,
    pending: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    /// Batches acknowledged on this stream.
    acked: u64,
    /// Per unacknowledged batch, in order: when its oldest change was seen, if it is
    /// measured.
    since: VecDeque<Option<Instant>>,
}

impl Lag {
    fn sent(&self, since: Option<Instant>) {
        self.pending.lock().since.push_back(since);
    }

    fn acked(&self, batches: u64) {
        let now = Instant::now();
        let mut pending = self.pending.lock();
        while pending.acked < batches {
            let Some(since) = pending.since.pop_front() else { return };
            pending.acked += 1;
            if let Some(since) = since {
                self.metrics.observe(&self.to, now.saturating_duration_since(since));
            }
        }
    }
}

/// An open stream: where to send, where acks arrive, and the target's recorded position.
pub(crate) struct Opened {
    pub link: Link,
    pub acks: Streaming<ReplicateResponse>,
    pub position: u64,
}

impl Link {
    /// Opens a stream to `target` as `sender` in replication session `epoch` (0: none),
    /// begun when the local store was at `head`, and waits for the answer to the Hello.
    pub async fn open(
        target: &mut CacheClient<GrpcClient>,
        sender: &str,
        (epoch, head): (u64, u64),
        lag: (LagMetrics, String),
    ) -> anyhow::Result<Opened> {
        let (requests, requests_rx) = mpsc::channel(REQUESTS_BUFFER);
        let hello = Hello { sender: sender.to_owned(), epoch, head };
        let hello = ReplicateRequest { request: Some(replicate_request::Request::Hello(hello)) };
        requests.send(hello).await.context("queue the Hello")?;
        let stream = tokio_stream::wrappers::ReceiverStream::new(requests_rx);
        // The session's span travels in the stream's metadata; each batch carries its own.
        let mut request = tonic::Request::new(stream);
        telemetry::propagation::inject_grpc(&tracing::Span::current(), request.metadata_mut());
        let opened = async {
            let mut acks = target.replicate(request).await.context("open a replication stream")?.into_inner();
            let answer = acks.message().await?.context("the target ended the stream without answering the Hello")?;
            anyhow::Ok((acks, answer))
        };
        let (acks, answer) = tokio::time::timeout(HELLO_TIMEOUT, opened)
            .await
            .map_err(|_| anyhow::anyhow!("the target did not answer the Hello within {HELLO_TIMEOUT:?}"))??;
        let (metrics, to) = lag;
        let lag = Lag { metrics, to, pending: Mutex::default() };
        let link = Link { requests, takes_epochs: answer.epochs, window: watch::Sender::new(Window::default()), lag };
        Ok(Opened { link, acks, position: answer.position })
    }

    /// Sends one batch once the window has room; `traceparent` names the span it
    /// belongs to (empty: none), `since` when its oldest change was seen committed (for the
    /// lag; none for changes not fresh from the store's stream).
    pub async fn send(
        &self,
        changes: Vec<Change>,
        position: u64,
        traceparent: String,
        since: Option<Instant>,
    ) -> anyhow::Result<()> {
        self.send_batch(Batch { changes, position, traceparent }, since).await
    }

    /// Sends `changes` in as many batches as the limits need, the last one moving the
    /// target to `position` ([`plan::batches`]).
    pub async fn send_all(&self, changes: Vec<Change>, position: u64) -> anyhow::Result<()> {
        for batch in plan::batches(changes, position) {
            self.send_batch(batch, None).await?;
        }
        Ok(())
    }

    async fn send_batch(&self, mut batch: Batch, since: Option<Instant>) -> anyhow::Result<()> {
        batch.changes = plan::for_target(std::mem::take(&mut batch.changes), self.takes_epochs);
        self.wait_until(Window::can_send).await?;
        // One task sends, so the room just seen is still there.
        self.window.send_modify(|window| window.sent(batch.position));
        self.lag.sent(since);
        self.requests
            .send(ReplicateRequest { request: Some(replicate_request::Request::Batch(batch)) })
            .await
            .map_err(|_| anyhow::anyhow!("the replication stream closed"))
    }

    /// Waits until every sent batch is acknowledged.
    pub async fn drained(&self) -> anyhow::Result<()> {
        self.wait_until(Window::is_drained).await
    }

    async fn wait_until(&self, ready: fn(&Window) -> bool) -> anyhow::Result<()> {
        let mut window = self.window.subscribe();
        // The guard `wait_for` returns is not Send; it must not live across an await.
        window.wait_for(ready).await.map(drop).context("the window closed")
    }

    /// Records every ack in the window, until the stream fails.
    pub async fn read_acks(&self, acks: &mut Streaming<ReplicateResponse>) -> anyhow::Error {
        loop {
            let ack = match acks.message().await {
                Ok(Some(ack)) => ack,
                Ok(None) => return anyhow::anyhow!("the target ended the replication stream"),
                Err(status) => return anyhow::Error::new(status).context("the target ended the replication stream"),
            };
            tracing::trace!(position = ack.position, batches = ack.batches, "ack");
            let mut known = true;
            self.window.send_modify(|window| known = window.acked(ack.batches));
            if !known {
                return anyhow::anyhow!("the target acknowledged {} batches, more than were sent", ack.batches);
            }
            self.lag.acked(ack.batches);
        }
    }
}
