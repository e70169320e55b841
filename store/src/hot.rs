//! Hot keys: a bounded in-memory copy of the few small objects that nearly every request
//! reads (a request's namespace, its logical cluster's record), so that those reads do not
//! each walk RocksDB's memtables and files.
//!
//! The copy is exact, not eventually consistent: the writer thread updates every cached
//! key of a batch after the batch is durable and before any caller of the batch is
//! answered, so a read that starts after a write was acknowledged sees that write. A miss
//! loads from the database while holding the cache's lock, and the writer takes the same
//! lock after its database write, so a load can never put back a value older than one the
//! writer already applied:
//! - a load before the writer's database write is overwritten by the writer's update;
//! - a load after it reads the new value.
//!
//! Only keys that exist are kept (a miss on an absent key reads the database each time),
//! and nothing is inserted once the cache holds its capacity, so memory stays bounded.

use crate::{Event, StoreError, Versioned};
use bytes::Bytes;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::Arc;

pub(crate) struct HotKeys {
    entries: RwLock<HashMap<Bytes, Versioned>>,
    capacity: usize,
}

impl HotKeys {
    pub(crate) fn new(capacity: usize) -> HotKeys {
        HotKeys { entries: RwLock::new(HashMap::new()), capacity }
    }

    /// The value of `key`: the cached copy, else `load`'s answer (kept when the key
    /// exists and there is room).
    pub(crate) fn get_or_load(
        &self,
        key: &[u8],
        load: impl FnOnce() -> Result<Option<Versioned>, StoreError>,
    ) -> Result<Option<Versioned>, StoreError> {
        if let Some(cached) = self.entries.read().get(key) {
            return Ok(Some(cached.clone()));
        }
        let mut entries = self.entries.write();
        if let Some(cached) = entries.get(key) {
            return Ok(Some(cached.clone()));
        }
        let loaded = load()?;
        if let Some(value) = &loaded {
            if entries.len() < self.capacity {
                entries.insert(Bytes::copy_from_slice(key), value.clone());
            }
        }
        Ok(loaded)
    }

    /// Applies a durable batch to the cached keys it touched. Called by the writer after
    /// the database write and before the batch's callers are answered.
    pub(crate) fn committed(&self, events: &[Arc<Event>]) {
        if self.entries.read().is_empty() {
            return;
        }
        let mut entries = self.entries.write();
        for event in events {
            let Some(cached) = entries.get_mut(&event.key) else { continue };
            match &event.value {
                Some(value) => *cached = Versioned { rv: event.rv, value: value.clone() },
                None => {
                    entries.remove(&event.key);
                }
            }
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.read().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventKind;

    fn at(rv: u64, value: &'static str) -> Versioned {
        Versioned { rv, value: Bytes::from_static(value.as_bytes()) }
    }

    fn event(rv: u64, key: &'static str, value: Option<&'static str>) -> Arc<Event> {
        let kind = if value.is_some() { EventKind::Modified } else { EventKind::Deleted };
        let value = value.map(|v| Bytes::from_static(v.as_bytes()));
        Arc::new(Event { rv, key: Bytes::from_static(key.as_bytes()), kind, value, prev: None, cause: None })
    }

    #[test]
    fn a_loaded_key_is_served_from_memory_until_the_writer_changes_it() {
        let hot = HotKeys::new(8);
        assert_eq!(hot.get_or_load(b"ns/a", || Ok(Some(at(1, "one")))).unwrap(), Some(at(1, "one")));
        let unused = || -> Result<Option<Versioned>, StoreError> { panic!("a cached key is not loaded again") };
        assert_eq!(hot.get_or_load(b"ns/a", unused).unwrap(), Some(at(1, "one")));
        hot.committed(&[event(2, "ns/a", Some("two")), event(3, "ns/b", Some("other"))]);
        assert_eq!(hot.get_or_load(b"ns/a", unused).unwrap(), Some(at(2, "two")));
        assert_eq!(hot.len(), 1, "a key nobody read is not cached by a write");
        hot.committed(&[event(4, "ns/a", None)]);
        assert_eq!(hot.get_or_load(b"ns/a", || Ok(None)).unwrap(), None, "a deleted key is read again");
        assert_eq!(hot.len(), 0);
    }

    #[test]
    fn absent_keys_and_keys_past_the_capacity_are_not_kept() {
        let hot = HotKeys::new(1);
        assert_eq!(hot.get_or_load(b"missing", || Ok(None)).unwrap(), None);
        assert_eq!(hot.len(), 0);
        hot.get_or_load(b"a", || Ok(Some(at(1, "a")))).unwrap();
        assert_eq!(hot.get_or_load(b"b", || Ok(Some(at(2, "b")))).unwrap(), Some(at(2, "b")));
        assert_eq!(hot.len(), 1);
        assert_eq!(hot.get_or_load(b"b", || Ok(Some(at(5, "b5")))).unwrap(), Some(at(5, "b5")), "b was never kept");
    }

    #[test]
    fn a_failed_load_is_an_error_and_caches_nothing() {
        let hot = HotKeys::new(4);
        let failed = hot.get_or_load(b"a", || Err(StoreError::Rocks("disk".into())));
        assert!(failed.is_err());
        assert_eq!(hot.len(), 0);
    }
}
