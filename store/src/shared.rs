//! The state the store's handle, its writer thread, its compactor and its watchers share,
//! and the options and counters it carries. A leaf below all of them, so that the writer
//! and the compactor reach the database without importing the handle that starts them.

use crate::fanout::Fanout;
use crate::hot::HotKeys;
use crate::keys::{self, CF_META, CF_OBJECTS};
use crate::{StoreError, Versioned};
use bytes::Bytes;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use rocksdb::{ColumnFamily, DB};
use std::sync::atomic::AtomicU64;
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
    /// Keys [`crate::Store::get_hot`] keeps in memory at most.
    pub hot_keys: usize,
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
            hot_keys: 16_384,
        }
    }
}

/// What the store measures of its group commit; the process that opened it registers
/// them with [`StoreMetrics::register`] and serves them at `/metrics`.
#[derive(Debug)]
pub struct StoreMetrics {
    /// Ops committed.
    pub ops_committed: Counter,
    /// Batches (fsyncs) written.
    pub batches: Counter,
    /// Ops per committed batch: how much one fsync carries.
    pub batch_ops: Histogram,
    /// Time of each synced batch write (the fsync and RocksDB's write).
    pub write_seconds: Histogram,
}

impl Default for StoreMetrics {
    fn default() -> Self {
        StoreMetrics {
            ops_committed: Counter::default(),
            batches: Counter::default(),
            // 1 to 8192 ops, doubling (a batch holds at most `max_batch_ops`).
            batch_ops: Histogram::new(exponential_buckets(1.0, 2.0, 14)),
            // 50 µs to 3.3 s, doubling.
            write_seconds: Histogram::new(exponential_buckets(0.000_05, 2.0, 17)),
        }
    }
}

impl StoreMetrics {
    pub(crate) fn record_batch(&self, ops: usize, took: Duration) {
        self.ops_committed.inc_by(ops as u64);
        self.batches.inc();
        self.batch_ops.observe(ops as f64);
        self.write_seconds.observe(took.as_secs_f64());
    }

    /// Adds these metrics to `registry` as `atoll_store_*`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register("atoll_store_ops_committed", "Store ops committed", self.ops_committed.clone());
        registry.register("atoll_store_batches", "Store batches (fsyncs) written", self.batches.clone());
        registry.register("atoll_store_batch_ops", "Ops per committed store batch (one fsync)", self.batch_ops.clone());
        registry.register(
            "atoll_store_write_seconds",
            "Time of each synced store batch write (RocksDB write with fsync)",
            self.write_seconds.clone(),
        );
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
    /// The keys read through [`crate::Store::get_hot`], kept exact by the writer.
    pub hot: HotKeys,
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

    /// The current values of `keys`, in one batched read: the writer reads every key of a
    /// batch before deciding its ops, and RocksDB probes memtables and filters for a
    /// batch at a time more cheaply than key by key.
    pub fn get_many(&self, keys: &[&Bytes]) -> Vec<Result<Option<Versioned>, StoreError>> {
        self.db
            .batched_multi_get_cf(self.cf(CF_OBJECTS), keys.iter().map(|key| key.as_ref()), false)
            .into_iter()
            .map(|read| match read? {
                Some(record) => keys::decode_object(&record).map(Some),
                None => Ok(None),
            })
            .collect()
    }

    pub fn read_meta(&self, key: &[u8]) -> Result<u64, StoreError> {
        match self.db.get_pinned_cf(self.cf(CF_META), key)? {
            Some(bytes) => keys::decode_u64(&bytes),
            None => Ok(0),
        }
    }
}
