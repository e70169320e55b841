//! Watches: the change log first, then live events, as one ordered stream.
//!
//! The states are explicit: `Backlog` reads change-log records from `next` in bounded
//! chunks; when the log has nothing more the watch goes `Live` on its mailbox, which the
//! writer fills with the events under its prefix ([`crate::fanout`]). The live subscription
//! is taken *before* the backlog is read, so every event is either in the log when read or
//! arrives live; duplicates are dropped by resourceVersion. A watcher whose mailbox
//! overflowed goes back to `Backlog`, and one that needs records compaction removed ends
//! with [`StoreError::Gone`].

use crate::fanout::{Delivery, Subscription};
use crate::keys::{self, CF_LOG, CF_OBJECTS, CF_SUCCESSORS};
use crate::record::LogRecord;
use crate::shared::Shared;
use crate::{Event, Store, StoreError};
use bytes::Bytes;
use rocksdb::{Direction, IteratorMode, ReadOptions};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Change-log records read per chunk, bounding a slow watcher's memory.
const BACKLOG_CHUNK: usize = 1024;

enum State {
    /// Reading the change log from `next`.
    Backlog { next: u64 },
    /// Receiving live events.
    Live,
}

/// A stream of events for keys under one prefix, after a starting resourceVersion.
pub struct Watch {
    shared: Arc<Shared>,
    live: Subscription,
    /// Events read from the log (in `Backlog`) or taken from the mailbox (in `Live`).
    buffered: VecDeque<Arc<Event>>,
    state: State,
    /// Every event up to here has been delivered or filtered out.
    seen_rv: u64,
}

impl Store {
    /// Watches keys under `prefix` for changes after `from_rv`.
    pub fn watch(&self, prefix: impl Into<Bytes>, from_rv: u64) -> Result<Watch, StoreError> {
        let live = self.shared.fanout.subscribe(prefix.into());
        let floor = self.compacted_rv();
        if from_rv < floor {
            return Err(StoreError::Gone { requested: from_rv, oldest: floor });
        }
        Ok(Watch {
            shared: self.shared.clone(),
            live,
            buffered: VecDeque::new(),
            state: State::Backlog { next: from_rv + 1 },
            seen_rv: from_rv,
        })
    }
}

impl Watch {
    /// The next event under the prefix. Cancel-safe.
    pub async fn next(&mut self) -> Result<Arc<Event>, StoreError> {
        loop {
            let event = match self.buffered.pop_front() {
                Some(event) => event,
                None => {
                    match self.state {
                        State::Backlog { next } => self.fill_backlog(next)?,
                        State::Live => match self.live.receive().await {
                            Delivery::Events(events) => self.buffered = events,
                            Delivery::Lagged => {
                                tracing::debug!(seen = self.seen_rv, "watcher lagged; re-reading the change log");
                                self.state = State::Backlog { next: self.seen_rv + 1 };
                            }
                        },
                    }
                    continue;
                }
            };
            if event.rv <= self.seen_rv {
                continue;
            }
            self.seen_rv = event.rv;
            // The log holds every key; the mailbox only this watcher's.
            if event.key.starts_with(self.live.prefix()) {
                return Ok(event);
            }
        }
    }

    /// The resourceVersion up to which this watcher has seen every change, for bookmarks.
    pub fn progress_rv(&mut self) -> u64 {
        // Read the committed RV first: every event at or below it was in its mailbox before
        // it was stored, so an empty mailbox afterwards means all of them were consumed.
        let committed = self.shared.committed_rv.load(Ordering::Acquire);
        if matches!(self.state, State::Live) && self.buffered.is_empty() && self.live.is_empty() {
            self.seen_rv = self.seen_rv.max(committed);
        }
        self.seen_rv
    }

    /// Reads the next chunk of the change log from `next`, or switches to live when the log
    /// has nothing further.
    fn fill_backlog(&mut self, next: u64) -> Result<(), StoreError> {
        // One snapshot for the records and the values they wrote, so that a value is
        // either still current or already recorded as its successor's previous value.
        let snapshot = self.shared.db.snapshot();
        let mut read = ReadOptions::default();
        read.fill_cache(false);
        let from = keys::rv_key(next);
        let iter =
            snapshot.iterator_cf_opt(self.shared.cf(CF_LOG), read, IteratorMode::From(&from, Direction::Forward));
        let mut expected = next;
        for entry in iter.take(BACKLOG_CHUNK) {
            let (rv_bytes, record) = entry?;
            let rv = keys::decode_u64(&rv_bytes)?;
            if rv != expected {
                return Err(self.gone());
            }
            expected += 1;
            let record = LogRecord::decode_bytes(&record)?;
            let value = match record.writes_value() {
                true => Some(value_written_at(&self.shared, &snapshot, &record.key, rv)?),
                false => None,
            };
            self.buffered.push_back(Arc::new(record.into_event(rv, value)?));
        }
        if expected == next {
            if next <= self.shared.compacted_rv.load(Ordering::Acquire) {
                return Err(self.gone());
            }
            self.state = State::Live;
        } else {
            self.state = State::Backlog { next: expected };
        }
        Ok(())
    }

    fn gone(&self) -> StoreError {
        StoreError::Gone { requested: self.seen_rv, oldest: self.shared.compacted_rv.load(Ordering::Acquire) }
    }
}

/// The value the change at `rv` wrote to `key`: the current value if nothing changed the
/// key since, else the previous value recorded by the change that replaced it.
fn value_written_at(
    shared: &Shared,
    snapshot: &rocksdb::SnapshotWithThreadMode<'_, rocksdb::DB>,
    key: &[u8],
    rv: u64,
) -> Result<Bytes, StoreError> {
    let corrupt = |why: &str| StoreError::Corrupt(format!("value written at rv {rv}: {why}"));
    match snapshot.get_cf(shared.cf(CF_SUCCESSORS), keys::rv_key(rv))? {
        Some(successor) => {
            let successor = keys::decode_u64(&successor)?;
            let record = snapshot.get_cf(shared.cf(CF_LOG), keys::rv_key(successor))?;
            let record = LogRecord::decode_bytes(&record.ok_or_else(|| corrupt("successor record missing"))?)?;
            debug_assert_eq!(record.prev_rv, rv, "a successor replaces exactly the value written at rv");
            record.prev_value.ok_or_else(|| corrupt("successor without a previous value"))
        }
        None => {
            let current = snapshot
                .get_cf(shared.cf(CF_OBJECTS), key)?
                .ok_or_else(|| corrupt("no successor and no current value"))?;
            let current = keys::decode_object(&current)?;
            if current.rv != rv {
                return Err(corrupt("the current value is of another version"));
            }
            Ok(current.value)
        }
    }
}
