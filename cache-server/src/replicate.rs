//! `Replicate`: a sender streams batches of changes; the cache applies them and
//! acknowledges each once it and the sender's new position are durable.
//!
//! One stream runs as a two-stage pipeline, so that a sender that sends many batches
//! without waiting (it should) gets them applied back to back:
//!
//! ```text
//! inbound ──▶ apply stage ──(applied batches, ≤ APPLIED_MAX)──▶ position stage ──▶ acks
//!             validate, commit changes           write position, then ack
//! ```
//!
//! Both stages group commit: the apply stage takes every batch that has already arrived
//! (up to [`COALESCE_CHANGES_MAX`] changes) and commits their changes together, and the
//! position stage writes one position for every batch applied meanwhile. Under load a
//! stream therefore costs two fsyncs per round, not two per batch, and a sender that
//! sends one write per batch still gets a thousand writes a second through.
//!
//! Ordering: the changes of one round are committed only after the previous round's are
//! durable, and changes to one key keep their order within a round, so replicas end as
//! the sender sent them. A position is written only after the changes of its batch are
//! durable, so an ack (and a recorded position) never covers a change a crash could lose.

use crate::apply::{self, Rejected, Skip, Validated};
use crate::authz::{self, Caller, Origins};
use crate::replicas::{self, Applied};
use crate::state::State;
use futures::future::join_all;
use futures::{FutureExt, Stream};
use protocol::cache::{replicate_request, Batch, ReplicateRequest, ReplicateResponse};
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::{Status, Streaming};
use tracing::Instrument;

/// The stream of acknowledgements a Replicate call returns.
pub type AckStream = Pin<Box<dyn Stream<Item = Result<ReplicateResponse, Status>> + Send>>;

/// How long a new stream may take to say Hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Batches applied but not yet positioned; a full queue stops reading the stream, and
/// HTTP/2 flow control then stops the sender.
const APPLIED_MAX: usize = 64;
/// Acks not yet taken by the sender; as above, a full queue pauses the stream.
const ACKS_MAX: usize = 128;
/// Changes committed in one round at most (a single larger batch still goes whole).
pub const COALESCE_CHANGES_MAX: usize = 4096;
/// Batches committed in one round at most.
pub const COALESCE_BATCHES_MAX: usize = 64;

/// What the apply stage hands the position stage.
#[derive(Debug)]
enum Step {
    /// A batch whose changes are durable.
    Applied {
        /// The sender's position after it (0: unchanged).
        position: u64,
    },
    /// The stream must end with this status after the batches before it are acknowledged.
    Failed(Status),
}

/// Serves one Replicate call: reads the Hello, authorizes the sender, answers with its
/// recorded position, and starts the pipeline that applies and acknowledges batches.
pub async fn replicate(
    state: Arc<State>,
    caller: Caller,
    metadata: &tonic::metadata::MetadataMap,
    mut inbound: Streaming<ReplicateRequest>,
) -> Result<AckStream, Status> {
    let first = tokio::time::timeout(HELLO_TIMEOUT, inbound.message())
        .await
        .map_err(|_| Status::deadline_exceeded("send Hello first: the stream sent nothing for 10s"))??;
    let (sender, epoch, head) = match first.and_then(|request| request.request) {
        Some(replicate_request::Request::Hello(hello)) => (hello.sender, hello.epoch, hello.head),
        _ => return Err(Status::invalid_argument("the first message of a Replicate stream must be a Hello")),
    };
    let origins = authz::authorize_sender(&caller, &sender).map_err(Status::permission_denied)?;
    let position = replicas::read_position(&state.store, &sender).map_err(|e| store_unavailable(&e))?;
    let mut settle = None;
    if let Origins::Only(shard) = &origins {
        // A shard's new session, recorded before the answer: whatever this stream sends,
        // the parent learns of the session first (the uplink relays the store's changes in
        // order). Epoch 0 (a shard that keeps no sessions) records nothing. The session is
        // settled once this cache holds everything the shard had written at the Hello:
        // now, when its recorded position is exactly there (a sender that names no head
        // is taken at its word), else when a batch moves the position to it.
        let settled = head == 0 || position == head;
        replicas::announce(&state.store, shard, epoch, settled, shard).await.map_err(|e| store_unavailable(&e))?;
        if epoch > 0 && !settled {
            settle = Some(Settle { origin: shard.clone(), epoch, head });
        }
    }
    let span = tracing::info_span!("replicate", otel.kind = "server", rpc.system = "grpc", rpc.service = "atoll.cache.Cache", rpc.method = "Replicate", %sender, %caller);
    telemetry::propagation::continue_grpc(&span, metadata);
    span.in_scope(|| tracing::info!(position, "replication stream opened"));

    let (acks, acks_rx) = mpsc::channel(ACKS_MAX);
    let (applied, applied_rx) = mpsc::channel(APPLIED_MAX);
    // Cannot fail: the channel is new and has room.
    let _ = acks.try_send(Ok(ReplicateResponse { position, batches: 0, epochs: true }));
    let fencing = !matches!(caller, Caller::Operator(_));
    let session = Session { state, sender, origins, fencing };
    tokio::spawn(session.clone().apply_stage(inbound, applied).instrument(span.clone()));
    tokio::spawn(session.position_stage(position, settle, applied_rx, acks).instrument(span));
    Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(acks_rx)))
}

/// How reading a stream ended.
#[derive(Debug)]
enum End {
    /// The sender closed it.
    Closed,
    /// It broke (the connection went away); nothing can be answered.
    Broke(Status),
    /// The sender broke the protocol; the stream ends with this status.
    Refused(Status),
}

/// The batches read for one round, and how the stream ended if it did.
#[derive(Debug, Default)]
struct Round {
    batches: Vec<Batch>,
    changes: usize,
    end: Option<End>,
}

impl Round {
    /// Takes one read from the stream.
    fn take(&mut self, read: Result<Option<ReplicateRequest>, Status>) {
        match read {
            Ok(Some(ReplicateRequest { request: Some(replicate_request::Request::Batch(batch)) })) => {
                self.changes += batch.changes.len();
                self.batches.push(batch);
            }
            Ok(Some(_)) => {
                let why = "after the Hello, every message of a Replicate stream must be a Batch";
                self.end = Some(End::Refused(Status::invalid_argument(why)));
            }
            Ok(None) => self.end = Some(End::Closed),
            Err(status) => self.end = Some(End::Broke(status)),
        }
    }

    /// Whether another batch may join this round.
    fn has_room(&self) -> bool {
        self.end.is_none() && self.batches.len() < COALESCE_BATCHES_MAX && self.changes < COALESCE_CHANGES_MAX
    }
}

/// A shard's session this stream has yet to settle: once a batch moves the shard's
/// position to `head` (its store's resourceVersion at the Hello), this cache holds the
/// shard's whole state.
#[derive(Debug)]
struct Settle {
    origin: String,
    epoch: u64,
    head: u64,
}

/// One authorized replication stream.
#[derive(Clone)]
struct Session {
    state: Arc<State>,
    sender: String,
    origins: Origins,
    /// Whether the sender's changes are fenced by origin sessions: a shard's or a cache's
    /// are, an operator's (a repair by hand) are not.
    fencing: bool,
}

/// The span of one round: when its batches come from sampled writes, it continues the one
/// batch's trace or, a root, links to each batch's span, so the trace of a write shows it
/// arriving here (and, through the writes this round commits, leaving for a parent cache).
fn round_span(batches: &[Batch], sender: &str, first: u64) -> tracing::Span {
    // Only sampled batches: an unsampled sender's context names a span no backend has.
    let traced: Vec<telemetry::Cause> = batches
        .iter()
        .filter_map(|b| telemetry::propagation::cause_of(&b.traceparent))
        .filter(telemetry::Cause::is_sampled)
        .collect();
    if traced.is_empty() {
        return tracing::debug_span!("round", batches = batches.len(), first);
    }
    let span = tracing::info_span!(
        "replication.apply",
        otel.kind = "consumer",
        messaging.operation.type = "process",
        messaging.batch.message_count = batches.iter().map(|b| b.changes.len()).sum::<usize>(),
        atoll.replication.sender = sender,
        batches = batches.len(),
        first,
    );
    match traced.as_slice() {
        [one] => one.adopt(&span),
        many => telemetry::Cause::follow_all(&span, many.iter().copied()),
    }
    span
}

impl Session {
    /// Reads batches and commits their changes, round by round, until the stream or the
    /// server ends or a batch is refused.
    async fn apply_stage(self, mut inbound: Streaming<ReplicateRequest>, applied: mpsc::Sender<Step>) {
        let mut shutdown = self.state.shutdown.clone();
        let mut batches = 0u64;
        loop {
            let mut round = Round::default();
            tokio::select! {
                read = inbound.message() => round.take(read),
                _ = crate::state::stopped(&mut shutdown) => return,
            }
            // Streaming::message is cancel-safe: polling once takes what already arrived.
            while round.has_room() {
                match inbound.message().now_or_never() {
                    Some(read) => round.take(read),
                    None => break,
                }
            }
            let first = batches + 1;
            batches += round.batches.len() as u64;
            for step in self.apply_round(round.batches, first).await {
                let failed = matches!(step, Step::Failed(_));
                if applied.send(step).await.is_err() || failed {
                    return;
                }
            }
            match round.end {
                None => continue,
                Some(End::Closed) => tracing::info!(batches, "replication stream closed by the sender"),
                Some(End::Broke(status)) => tracing::info!(%status, batches, "replication stream broke"),
                Some(End::Refused(status)) => {
                    let _ = applied.send(self.refuse(status)).await;
                }
            }
            return;
        }
    }

    /// Validates the batches of a round, then commits the changes of every batch before
    /// the first refused one together. Returns one step per batch up to that one.
    async fn apply_round(&self, batches: Vec<Batch>, first: u64) -> Vec<Step> {
        let count = batches.len();
        let span = round_span(&batches, &self.sender, first);
        async {
            let mut changes = Vec::new();
            let mut positions = Vec::with_capacity(count);
            let mut refused = None;
            for batch in batches {
                match self.validate(batch.changes) {
                    Ok(valid) => {
                        changes.extend(valid);
                        positions.push(batch.position);
                    }
                    Err(status) => {
                        refused = Some(self.refuse(status));
                        break;
                    }
                }
            }
            let total = changes.len();
            let mut steps: Vec<Step> = match commit_changes(&self.state, changes, self.fencing).await {
                Ok(counts) => {
                    if counts.fenced > 0 {
                        tracing::info!(
                            changes = total,
                            ?counts,
                            "round applied; changes of origins this sender no longer relays were refused"
                        );
                    } else {
                        tracing::debug!(changes = total, ?counts, "round applied");
                    }
                    let sender = crate::metrics::SenderLabels { sender: self.sender.clone() };
                    self.state.metrics.batches_applied.get_or_create(&sender).inc_by(positions.len() as u64);
                    self.state.metrics.changes_applied.get_or_create(&sender).inc_by(total as u64);
                    positions.into_iter().map(|position| Step::Applied { position }).collect()
                }
                Err(status) => {
                    tracing::warn!(%status, "round failed");
                    return vec![Step::Failed(status)];
                }
            };
            steps.extend(refused);
            steps
        }
        .instrument(span)
        .await
    }

    /// Validates a whole batch: one bad change refuses it all.
    fn validate(&self, changes: Vec<protocol::cache::Change>) -> Result<Vec<Validated>, Status> {
        changes
            .into_iter()
            .map(|change| match apply::validate(change, &self.sender, &self.origins) {
                Ok(change) => Ok(change),
                Err(Rejected::Invalid(why)) => Err(Status::invalid_argument(why)),
                Err(Rejected::Denied(why)) => Err(Status::permission_denied(why)),
            })
            .collect()
    }

    fn refuse(&self, status: Status) -> Step {
        tracing::warn!(reason = status.message(), "batch refused");
        Step::Failed(status)
    }

    /// Writes the positions of applied batches, one write for all those waiting, and
    /// acknowledges each batch in order.
    async fn position_stage(
        self,
        mut recorded: u64,
        mut settle: Option<Settle>,
        mut applied: mpsc::Receiver<Step>,
        acks: mpsc::Sender<Result<ReplicateResponse, Status>>,
    ) {
        let mut batches = 0;
        let mut steps = Vec::with_capacity(APPLIED_MAX);
        while applied.recv_many(&mut steps, APPLIED_MAX).await > 0 {
            let (positions, failure) = ack_positions(recorded, &steps);
            // Only a batch that names a position says the sender sent everything up to
            // it (the others of a full sync inherit the old, possibly larger, one).
            let reached = steps.iter().any(|step| {
                matches!(step, Step::Applied { position } if *position > 0
                    && settle.as_ref().is_some_and(|settle| *position >= settle.head))
            });
            steps.clear();
            if let Some(&last) = positions.last() {
                if last != recorded {
                    if last < recorded {
                        // The sender's log restarted (or it resynced from an older list):
                        // it is the authority on its own positions.
                        tracing::info!(from = recorded, to = last, "sender moved its position back");
                    }
                    if let Err(error) = replicas::write_position(&self.state.store, &self.sender, last).await {
                        let _ = acks.send(Err(store_unavailable(&error))).await;
                        return;
                    }
                    recorded = last;
                }
            }
            if let Some(Settle { origin, epoch, head }) = settle.take_if(|_| reached) {
                // After the position: a crash in between leaves the session unsettled,
                // and the shard's next session settles anew.
                if let Err(error) = replicas::announce(&self.state.store, &origin, epoch, true, &origin).await {
                    let _ = acks.send(Err(store_unavailable(&error))).await;
                    return;
                }
                tracing::info!(origin, epoch, head, "this cache holds the shard's whole state of the session");
            }
            for position in positions {
                batches += 1;
                if acks.send(Ok(ReplicateResponse { position, batches, epochs: true })).await.is_err() {
                    return;
                }
            }
            if let Some(status) = failure {
                let _ = acks.send(Err(status)).await;
                return;
            }
        }
    }
}

/// The position each applied step is acknowledged with, given the position recorded
/// before them (a batch without a position keeps the one before it), up to the first
/// failure, which is returned too. The last position is the one to write.
fn ack_positions(recorded: u64, steps: &[Step]) -> (Vec<u64>, Option<Status>) {
    let mut position = recorded;
    let mut positions = Vec::with_capacity(steps.len());
    for step in steps {
        match step {
            Step::Applied { position: 0 } => positions.push(position),
            Step::Applied { position: moved } => {
                position = *moved;
                positions.push(position);
            }
            Step::Failed(status) => return (positions, Some(status.clone())),
        }
    }
    (positions, None)
}

/// How many changes of a batch did what.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Replicas written.
    pub written: usize,
    /// Replicas deleted.
    pub deleted: usize,
    /// Changes that wrote nothing.
    pub skipped: usize,
    /// Changes refused from a sender fenced off their origin (counted apart from `skipped`).
    pub fenced: usize,
    /// Replicas removed because their origin's Shard replica was deleted.
    pub purged: usize,
}

impl Counts {
    fn add(&mut self, applied: Applied) {
        match applied {
            Applied::Written => self.written += 1,
            Applied::Deleted => self.deleted += 1,
            Applied::Skipped(Skip::Fenced) => self.fenced += 1,
            Applied::Skipped(_) => self.skipped += 1,
        }
    }
}

/// Commits validated changes: session announcements first, in order; then, unless
/// `fencing` is off (an operator's stream: repairs by hand), every change from a sender
/// fenced off its origin is refused; changes to distinct keys concurrently (the store commits
/// concurrent ops with one fsync), changes to one key in their order, and the keys of
/// Shard replicas that get deleted last, each deletion after purging its origin.
///
/// Purging before deleting the Shard replica makes the purge crash-safe: until the Shard
/// replica is gone, a resent tombstone finds it and purges again.
pub async fn commit_changes(state: &State, changes: Vec<Validated>, fencing: bool) -> Result<Counts, Status> {
    let (announcements, changes): (Vec<_>, Vec<_>) =
        changes.into_iter().partition(|change| matches!(change, Validated::Epoch { .. }));
    let mut counts = Counts::default();
    // Session announcements first: the relay they name decides whether the round's changes
    // of their origins are fenced.
    for announcement in &announcements {
        counts.add(replicas::apply(&state.store, announcement).await.map_err(|e| store_unavailable(&e))?);
    }
    let mut admitted = Vec::with_capacity(changes.len());
    for change in changes {
        if fencing && replicas::is_fenced(&state.store, &change).map_err(|e| store_unavailable(&e))? {
            counts.add(Applied::Skipped(Skip::Fenced));
        } else {
            admitted.push(change);
        }
    }
    let (shard_deletions, ordinary): (Vec<_>, Vec<_>) = group_by_key(admitted)
        .into_iter()
        .partition(|changes| changes.iter().any(|change| change.purges_origin().is_some()));
    let per_key = ordinary.into_iter().map(|changes| async move {
        let mut applied = Vec::with_capacity(changes.len());
        for change in &changes {
            applied.push(replicas::apply(&state.store, change).await?);
        }
        Ok::<_, store::StoreError>(applied)
    });
    for result in join_all(per_key).await {
        result.map_err(|e| store_unavailable(&e))?.into_iter().for_each(|applied| counts.add(applied));
    }
    for change in shard_deletions.into_iter().flatten() {
        if let Some(origin) = change.purges_origin() {
            let held = state.store.get(change.store_key().as_bytes()).map_err(|e| store_unavailable(&e))?;
            if held.is_some() {
                let purged = replicas::purge_origin(&state.store, origin)
                    .await
                    .map_err(|e| Status::unavailable(format!("purge the replicas of deleted shard {origin:?}: {e}")))?;
                tracing::info!(origin, purged, "shard replica deleted: purged its replicas and position");
                counts.purged += purged;
            }
        }
        counts.add(replicas::apply(&state.store, &change).await.map_err(|e| store_unavailable(&e))?);
    }
    Ok(counts)
}

/// Groups changes by store key, keeping the order of keys' first appearance and of the
/// changes of each key.
fn group_by_key(changes: Vec<Validated>) -> Vec<Vec<Validated>> {
    let mut index: HashMap<String, usize> = HashMap::with_capacity(changes.len());
    let mut groups: Vec<Vec<Validated>> = Vec::with_capacity(changes.len());
    for change in changes {
        match index.get(change.store_key()) {
            Some(&at) => groups[at].push(change),
            None => {
                index.insert(change.store_key().to_owned(), groups.len());
                groups.push(vec![change]);
            }
        }
    }
    groups
}

/// The status of a store failure: the sender retries after reconnecting.
pub fn store_unavailable(error: &store::StoreError) -> Status {
    Status::unavailable(format!("the cache's store failed: {error}; retry"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::cache::ReplicaKey;

    fn tombstone(name: &str) -> Validated {
        let key = ReplicaKey { name: name.into(), ..ReplicaKey::default() };
        Validated::Tombstone { store_key: name.into(), key, force: false, sender: "s".into() }
    }

    #[test]
    fn acks_carry_the_latest_position_and_stop_at_a_failure() {
        let applied = |position| Step::Applied { position };
        let cases: Vec<(u64, Vec<Step>, Vec<u64>, bool)> = vec![
            (5, vec![applied(6), applied(0), applied(9)], vec![6, 6, 9], false),
            (5, vec![applied(0)], vec![5], false),
            (5, vec![applied(3)], vec![3], false),
            (5, vec![applied(7), Step::Failed(Status::internal("x")), applied(8)], vec![7], true),
            (5, vec![Step::Failed(Status::internal("x"))], vec![], true),
        ];
        for (recorded, steps, expected, failed) in cases {
            let (positions, failure) = ack_positions(recorded, &steps);
            assert_eq!((positions, failure.is_some()), (expected, failed), "{steps:?}");
        }
    }

    #[test]
    fn rounds_take_batches_until_the_stream_ends_or_they_are_full() {
        let batch = |changes: usize| {
            let change = protocol::cache::Change::default();
            let batch = Batch { changes: vec![change; changes], position: 1, ..Batch::default() };
            Ok(Some(ReplicateRequest { request: Some(replicate_request::Request::Batch(batch)) }))
        };
        let mut round = Round::default();
        round.take(batch(1));
        round.take(batch(2));
        assert!(round.has_room());
        round.take(Ok(None));
        assert!(!round.has_room());
        assert!(matches!(round.end, Some(End::Closed)));
        assert_eq!((round.batches.len(), round.changes), (2, 3));

        let mut round = Round::default();
        round.take(batch(COALESCE_CHANGES_MAX));
        assert!(!round.has_room(), "a full round commits before reading more");
        let mut round = Round::default();
        round.take(Ok(Some(ReplicateRequest { request: None })));
        assert!(matches!(round.end, Some(End::Refused(_))));
    }

    #[test]
    fn changes_group_by_key_in_order() {
        let groups = group_by_key(vec![tombstone("a"), tombstone("b"), tombstone("a"), tombstone("c")]);
        let keys: Vec<Vec<&str>> = groups.iter().map(|g| g.iter().map(Validated::store_key).collect()).collect();
        assert_eq!(keys, vec![vec!["a", "a"], vec!["b"], vec!["c"]]);
    }
}
