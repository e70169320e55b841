//! The state the store's handle, its writer thread, its compactor and its watchers share,
//! and the options and counters it carries. A leaf below all of them, so that the writer
//! and the compactor reach the database without importing the handle that starts them.

use crate::fanout::Fanout;
use crate::keys::{self, CF_META, CF_OBJECTS};
use crate::{StoreError, Versioned};
use rocksdb::{ColumnFamily, DB};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Tuning of a store. Every queue and window here is bounded.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// How many change-log records are kept; watches and exact-RV lists older than that
    /// get [`StoreError::Gone`].
    pub retention_events: u64,
    /// How often the compactor trims the change log.
    pub compaction_interval: Duration,
    /// Ops committed in one batch (one fsync) at most.
    pub max_batch_ops: usize,
    /// Key and value bytes in one batch at most (a single larger op still goes alone).
    pub max_batch_bytes: usize,
    /// Ops queued or in the writer at once; further callers wait for a slot.
    pub max_queued_ops: usize,
    /// Events queued per live watcher; a watcher that falls further behind re-reads
    /// the change log.
    pub event_buffer: usize,
    /// RocksDB block cache shared by all column families.
    pub block_cache_bytes: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            retention_events: 100_000,
            compaction_interval: Duration::from_secs(5),
            max_batch_ops: 1024,
            max_batch_bytes: 8 << 20,
            max_queued_ops: 8192,
            event_buffer: 4_096,
            block_cache_bytes: 256 << 20,
        }
    }
}

/// Counters the shard exports as Prometheus metrics.
#[derive(Debug, Default)]
pub struct StoreMetrics {
    /// Ops committed.
    pub ops_committed: AtomicU64,
    /// Batches (fsyncs) written.
    pub batches: AtomicU64,
    /// Total time spent in synced batch writes, in microseconds.
    pub write_micros: AtomicU64,
}

impl StoreMetrics {
    pub(crate) fn record_batch(&self, ops: usize, took: Duration) {
        self.ops_committed.fetch_add(ops as u64, Ordering::Relaxed);
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.write_micros.fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }
}

/// State shared by the handle, the writer thread, the compactor and watchers.
pub(crate) struct Shared {
    pub db: DB,
    pub options: StoreOptions,
    /// The last resourceVersion whose batch is durable and published.
    pub committed_rv: AtomicU64,
    /// Log records at or below this resourceVersion have been removed.
    pub compacted_rv: AtomicU64,
    pub fanout: Arc<Fanout>,
    pub metrics: StoreMetrics,
}

impl Shared {
    pub fn cf(&self, name: &str) -> &ColumnFamily {
        self.db.cf_handle(name).expect("column families are created at open")
    }

    /// The current value of `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Versioned>, StoreError> {
        match self.db.get_pinned_cf(self.cf(CF_OBJECTS), key)? {
            Some(record) => keys::decode_object(&record).map(Some),
            None => Ok(None),
        }
    }

    pub fn read_meta(&self, key: &[u8]) -> Result<u64, StoreError> {
        match self.db.get_pinned_cf(self.cf(CF_META), key)? {
            Some(bytes) => keys::decode_u64(&bytes),
            None => Ok(0),
        }
    }
}
