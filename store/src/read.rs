//! Reads: current values, consistent lists and lists as of an older resourceVersion.
//!
//! A list reads one RocksDB snapshot, so its items and its resourceVersion agree. A list
//! at an older resourceVersion (kube's `resourceVersionMatch=Exact`, and every page after
//! the first) starts from the snapshot and rolls back, key by key, the changes the change
//! log records after that version — MVCC without keeping old object versions around.

use crate::keys::{self, CF_LOG, CF_META, CF_OBJECTS};
use crate::record::LogRecord;
use crate::{Store, StoreError, Versioned};
use bytes::Bytes;
use rocksdb::{Direction, IteratorMode, ReadOptions, SnapshotWithThreadMode, DB};
use std::collections::BTreeMap;
use std::iter::Peekable;

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Only keys starting with this prefix.
    pub prefix: Vec<u8>,
    /// Start at this key (inclusive); used to continue a paged list.
    pub start: Option<Vec<u8>>,
    /// Return at most this many items (after filtering).
    pub limit: Option<usize>,
    /// List the state as of this resourceVersion instead of the newest.
    pub at_rv: Option<u64>,
    /// Count the keys after a page cut short by `limit` ([`ListPage::remaining`]), in the
    /// same snapshot: kube's `remainingItemCount`.
    pub count_remaining: bool,
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPage {
    /// The items in key order.
    pub items: Vec<(Bytes, Versioned)>,
    /// The resourceVersion the page reflects.
    pub rv: u64,
    /// Where the next page starts, when the limit cut the list short.
    pub next: Option<Vec<u8>>,
    /// How many keys follow this page (from `next` on), when asked for and cut short.
    pub remaining: Option<u64>,
}

/// Keys whose state at the listed resourceVersion differs from the newest: `None` means
/// the key did not exist then.
type Rollback = BTreeMap<Bytes, Option<Versioned>>;

impl Store {
    /// Lists keys under `options.prefix` whose value `keep` accepts.
    pub fn list(
        &self,
        options: &ListOptions,
        mut keep: impl FnMut(&[u8], &Versioned) -> bool,
    ) -> Result<ListPage, StoreError> {
        let shared = &self.shared;
        let snapshot = shared.db.snapshot();
        let head = snapshot_meta(&snapshot, shared.cf(CF_META), keys::META_RV)?;
        let floor = snapshot_meta(&snapshot, shared.cf(CF_META), keys::META_COMPACTED)?;
        let at = options.at_rv.unwrap_or(head);
        if at > head {
            return Err(StoreError::TooLargeResourceVersion { requested: at, current: head });
        }
        if at < floor {
            return Err(StoreError::Gone { requested: at, oldest: floor });
        }
        let rollback = rollback_since(self, &snapshot, &options.prefix, at, head)?;
        let start = match &options.start {
            Some(start) if start.as_slice() > options.prefix.as_slice() => start.clone(),
            _ => options.prefix.clone(),
        };
        let mut read = ReadOptions::default();
        if let Some(end) = keys::prefix_end(&options.prefix) {
            read.set_iterate_upper_bound(end);
        }
        let current = snapshot
            .iterator_cf_opt(shared.cf(CF_OBJECTS), read, IteratorMode::From(&start, Direction::Forward))
            .map(|entry| -> Result<(Bytes, Versioned), StoreError> {
                let (key, record) = entry?;
                Ok((Bytes::from(key.into_vec()), keys::decode_object(&record)?))
            });
        let overlay = rollback.range(Bytes::from(start.clone())..);
        let limit = options.limit.unwrap_or(usize::MAX);
        let mut items = Vec::new();
        let mut merged = MergeAt { current: current.peekable(), rollback: overlay.peekable() };
        let mut next = None;
        for entry in merged.by_ref() {
            let (key, value) = entry?;
            if items.len() == limit {
                next = Some(key.to_vec());
                break;
            }
            if keep(&key, &value) {
                items.push((key, value));
            }
        }
        let mut remaining = None;
        if options.count_remaining && next.is_some() {
            let mut count = 1;
            for entry in merged {
                entry?;
                count += 1;
            }
            remaining = Some(count);
        }
        Ok(ListPage { items, rv: at, next, remaining })
    }
}

fn snapshot_meta(
    snapshot: &SnapshotWithThreadMode<'_, DB>,
    cf: &rocksdb::ColumnFamily,
    key: &[u8],
) -> Result<u64, StoreError> {
    match snapshot.get_cf(cf, key)? {
        Some(bytes) => keys::decode_u64(&bytes),
        None => Ok(0),
    }
}

/// Collects, for every key under `prefix` changed after `at`, its value as of `at`.
fn rollback_since(
    store: &Store,
    snapshot: &SnapshotWithThreadMode<'_, DB>,
    prefix: &[u8],
    at: u64,
    head: u64,
) -> Result<Rollback, StoreError> {
    let mut rollback = Rollback::new();
    if at == head {
        return Ok(rollback);
    }
    let mut read = ReadOptions::default();
    read.set_iterate_upper_bound(keys::rv_key(head + 1).to_vec());
    let from = keys::rv_key(at + 1);
    let log = snapshot.iterator_cf_opt(store.shared.cf(CF_LOG), read, IteratorMode::From(&from, Direction::Forward));
    for (expected, entry) in (at + 1..).zip(log) {
        let (rv_bytes, record) = entry?;
        let rv = keys::decode_u64(&rv_bytes)?;
        if rv != expected {
            // The log is contiguous; a hole means compaction raced this read.
            return Err(StoreError::Gone { requested: at, oldest: rv.saturating_sub(1) });
        }
        let record = LogRecord::decode_bytes(&record)?;
        if record.key.starts_with(prefix) && !rollback.contains_key(&record.key) {
            let prev = record.prev_value.map(|value| Versioned { rv: record.prev_rv, value });
            rollback.insert(record.key, prev);
        }
    }
    Ok(rollback)
}

/// Merges the newest state with rollback entries into the state as of an older version.
struct MergeAt<C: Iterator, R: Iterator> {
    current: Peekable<C>,
    rollback: Peekable<R>,
}

impl<'a, C, R> Iterator for MergeAt<C, R>
where
    C: Iterator<Item = Result<(Bytes, Versioned), StoreError>>,
    R: Iterator<Item = (&'a Bytes, &'a Option<Versioned>)>,
{
    type Item = Result<(Bytes, Versioned), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let current_key = match self.current.peek() {
                Some(Ok((key, _))) => Some(key.clone()),
                Some(Err(_)) => return self.current.next(),
                None => None,
            };
            let rollback_key = self.rollback.peek().map(|(key, _)| (*key).clone());
            match (current_key, rollback_key) {
                (None, None) => return None,
                (Some(_), None) => return self.current.next(),
                (current, Some(rolled)) => {
                    if current.as_ref().is_some_and(|c| c < &rolled) {
                        return self.current.next();
                    }
                    if current.as_ref() == Some(&rolled) {
                        self.current.next();
                    }
                    let (key, old) = self.rollback.next().expect("peeked");
                    match old {
                        Some(value) => return Some(Ok((key.clone(), value.clone()))),
                        None => continue,
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(rv: u64, value: &'static str) -> Versioned {
        Versioned { rv, value: Bytes::from_static(value.as_bytes()) }
    }

    #[test]
    fn merge_rolls_back_updates_creates_and_deletes() {
        // Newest state: a@5 (updated from a@1), c@6 (created after), no b (deleted after).
        let current = vec![
            Ok((Bytes::from_static(b"a"), v(5, "a2"))),
            Ok((Bytes::from_static(b"c"), v(6, "c1"))),
            Ok((Bytes::from_static(b"d"), v(2, "d1"))),
        ];
        let mut rollback = Rollback::new();
        rollback.insert(Bytes::from_static(b"a"), Some(v(1, "a1")));
        rollback.insert(Bytes::from_static(b"b"), Some(v(2, "b1")));
        rollback.insert(Bytes::from_static(b"c"), None);
        let merged: Vec<_> = MergeAt { current: current.into_iter().peekable(), rollback: rollback.iter().peekable() }
            .map(Result::unwrap)
            .collect();
        let expected = vec![
            (Bytes::from_static(b"a"), v(1, "a1")),
            (Bytes::from_static(b"b"), v(2, "b1")),
            (Bytes::from_static(b"d"), v(2, "d1")),
        ];
        assert_eq!(merged, expected);
    }
}
