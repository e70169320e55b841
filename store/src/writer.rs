//! The single writer: group commit with preconditions.
//!
//! All writes go through one thread so that resourceVersions are assigned in commit order
//! without locks, and so that many concurrent ops share one fsync. The thread drains the
//! queue into a batch (bounded by op count and bytes), decides every op against the state
//! it will have after the ops before it in the same batch, writes the batch with
//! `sync = true`, and only then publishes events and answers the callers.

use crate::keys::{self, CF_LOG, CF_META, CF_OBJECTS, CF_SUCCESSORS};
use crate::record::LogRecord;
use crate::shared::Shared;
use crate::{Event, EventKind, StoreError, Versioned};
use bytes::Bytes;
use prost::Message;
use rocksdb::{WriteBatch, WriteOptions};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{oneshot, OwnedSemaphorePermit};

/// What must hold for an op to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// Apply unconditionally.
    None,
    /// The key must be absent (create).
    MustNotExist,
    /// The key must be present (update or delete of an existing object).
    MustExist,
    /// The key must be present at exactly this resourceVersion (optimistic concurrency).
    ResourceVersion(u64),
}

/// One write.
#[derive(Debug, Clone)]
pub enum Op {
    /// Store `value` under `key`.
    Put {
        /// The key.
        key: Bytes,
        /// The value.
        value: Bytes,
        /// What must hold first.
        precondition: Precondition,
    },
    /// Remove `key`.
    Delete {
        /// The key.
        key: Bytes,
        /// What must hold first.
        precondition: Precondition,
    },
}

impl Op {
    fn key(&self) -> &Bytes {
        match self {
            Op::Put { key, .. } | Op::Delete { key, .. } => key,
        }
    }

    fn precondition(&self) -> Precondition {
        match self {
            Op::Put { precondition, .. } | Op::Delete { precondition, .. } => *precondition,
        }
    }

    /// Bytes this op adds to a batch, for the batch size bound.
    pub(crate) fn size(&self) -> usize {
        match self {
            Op::Put { key, value, .. } => key.len() + value.len(),
            Op::Delete { key, .. } => key.len(),
        }
    }
}

/// The outcome of a committed op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The resourceVersion the op was committed at.
    pub rv: u64,
    /// The value the key held before.
    pub prev: Option<Versioned>,
}

/// A queued op with its reply channel and its queue slot.
pub(crate) struct Request {
    pub op: Op,
    pub reply: oneshot::Sender<Result<Committed, StoreError>>,
    /// The caller's span, for the event.
    pub cause: Option<telemetry::Cause>,
    /// Held until the reply is sent: the semaphore bounds ops in flight.
    pub _permit: OwnedSemaphorePermit,
}

/// Decides whether `precondition` holds for a key whose current state is `current`.
pub(crate) fn check_precondition(current: Option<&Versioned>, precondition: Precondition) -> Result<(), StoreError> {
    match (precondition, current) {
        (Precondition::None, _) => Ok(()),
        (Precondition::MustNotExist, None) => Ok(()),
        (Precondition::MustNotExist, Some(_)) => Err(StoreError::AlreadyExists),
        (Precondition::MustExist | Precondition::ResourceVersion(_), None) => Err(StoreError::NotFound),
        (Precondition::MustExist, Some(_)) => Ok(()),
        (Precondition::ResourceVersion(expected), Some(cur)) if cur.rv == expected => Ok(()),
        (Precondition::ResourceVersion(expected), Some(cur)) => Err(StoreError::Conflict { expected, actual: cur.rv }),
    }
}

/// Runs the writer loop until every sender is gone.
pub(crate) fn run(shared: Arc<Shared>, queue: crossbeam_channel::Receiver<Request>) {
    let mut next_rv = shared.committed_rv.load(Ordering::Acquire) + 1;
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        let mut bytes = batch[0].op.size();
        while batch.len() < shared.options.max_batch_ops && bytes < shared.options.max_batch_bytes {
            match queue.try_recv() {
                Ok(req) => {
                    bytes += req.op.size();
                    batch.push(req);
                }
                Err(_) => break,
            }
        }
        next_rv = commit_batch(&shared, batch, next_rv);
    }
    tracing::debug!("store writer stopped");
}

/// An op that passed its precondition and awaits the fsync.
struct Accepted {
    event: Event,
    reply: oneshot::Sender<Result<Committed, StoreError>>,
    /// The op's queue slot, released only once it is answered.
    _permit: OwnedSemaphorePermit,
}

/// Decides, writes and publishes one batch; returns the next free resourceVersion.
fn commit_batch(shared: &Shared, batch: Vec<Request>, mut next_rv: u64) -> u64 {
    let span = tracing::debug_span!("store.commit_batch", ops = batch.len());
    let _enter = span.enter();
    let first_rv = next_rv;
    // Every key as the batch finds it, read at once; then each op sees the ops before it.
    let keys: Vec<&Bytes> = batch.iter().map(|req| req.op.key()).collect();
    let stored = shared.get_many(&keys);
    let mut overlay: HashMap<Bytes, Option<Versioned>> = HashMap::new();
    let mut write = WriteBatch::default();
    let mut accepted = Vec::with_capacity(batch.len());
    for (req, stored) in batch.into_iter().zip(stored) {
        let current = match overlay.get(req.op.key()) {
            Some(staged) => Ok(staged.clone()),
            None => stored,
        };
        let current = match current {
            Ok(current) => current,
            Err(e) => {
                let _ = req.reply.send(Err(e));
                continue;
            }
        };
        if let Err(e) = check_precondition(current.as_ref(), req.op.precondition()) {
            let _ = req.reply.send(Err(e));
            continue;
        }
        let Request { op, reply, cause, _permit } = req;
        let mut event = stage(shared, &mut write, op, current, next_rv);
        event.cause = cause;
        overlay.insert(event.key.clone(), event.value.clone().map(|value| Versioned { rv: next_rv, value }));
        next_rv += 1;
        accepted.push(Accepted { event, reply, _permit });
    }
    if accepted.is_empty() {
        return next_rv;
    }
    write.put_cf(shared.cf(CF_META), keys::META_RV, keys::rv_key(next_rv - 1));
    let mut options = WriteOptions::default();
    options.set_sync(true);
    let started = Instant::now();
    if let Err(e) = shared.db.write_opt(write, &options) {
        let error = StoreError::from(e);
        tracing::error!(%error, "store batch write failed; no op of the batch was applied");
        for a in accepted {
            let _ = a.reply.send(Err(error.clone()));
        }
        return first_rv;
    }
    shared.metrics.record_batch(accepted.len(), started.elapsed());
    publish(shared, accepted, next_rv - 1);
    next_rv
}

/// Adds the op's object and log writes to the batch and returns its event.
fn stage(shared: &Shared, write: &mut WriteBatch, op: Op, prev: Option<Versioned>, rv: u64) -> Event {
    let event = match op {
        Op::Put { key, value, .. } => {
            write.put_cf(shared.cf(CF_OBJECTS), &key, keys::encode_object(rv, &value));
            let kind = if prev.is_some() { EventKind::Modified } else { EventKind::Added };
            Event { rv, key, kind, value: Some(value), prev, cause: None }
        }
        Op::Delete { key, .. } => {
            write.delete_cf(shared.cf(CF_OBJECTS), &key);
            Event { rv, key, kind: EventKind::Deleted, value: None, prev, cause: None }
        }
    };
    write.put_cf(shared.cf(CF_LOG), keys::rv_key(rv), LogRecord::from_event(&event).encode_to_vec());
    if let Some(prev) = &event.prev {
        write.put_cf(shared.cf(CF_SUCCESSORS), keys::rv_key(prev.rv), keys::rv_key(rv));
    }
    event
}

/// Publishes durable events to the hot keys and watchers, then answers the callers.
///
/// Events go out before `committed_rv` moves so that a watcher which sees
/// `committed_rv = X` with an empty queue knows it has received everything up to X.
fn publish(shared: &Shared, accepted: Vec<Accepted>, last_rv: u64) {
    let events: Vec<Arc<Event>> = accepted.iter().map(|a| Arc::new(a.event.clone())).collect();
    shared.hot.committed(&events);
    shared.fanout.publish(&events);
    let previous = shared.committed_rv.swap(last_rv, Ordering::AcqRel);
    debug_assert!(previous < last_rv, "resourceVersions must increase: {previous} -> {last_rv}");
    for a in accepted {
        let committed = Committed { rv: a.event.rv, prev: a.event.prev };
        let _ = a.reply.send(Ok(committed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preconditions_decide_like_etcd_transactions() {
        let at = |rv| Some(Versioned { rv, value: Bytes::new() });
        let cases: Vec<(Option<Versioned>, Precondition, Result<(), StoreError>)> = vec![
            (None, Precondition::None, Ok(())),
            (at(3), Precondition::None, Ok(())),
            (None, Precondition::MustNotExist, Ok(())),
            (at(3), Precondition::MustNotExist, Err(StoreError::AlreadyExists)),
            (None, Precondition::MustExist, Err(StoreError::NotFound)),
            (at(3), Precondition::MustExist, Ok(())),
            (at(3), Precondition::ResourceVersion(3), Ok(())),
            (at(4), Precondition::ResourceVersion(3), Err(StoreError::Conflict { expected: 3, actual: 4 })),
            (None, Precondition::ResourceVersion(3), Err(StoreError::NotFound)),
        ];
        for (current, precondition, expected) in cases {
            assert_eq!(check_precondition(current.as_ref(), precondition), expected, "{current:?} {precondition:?}");
        }
    }
}
