//! Opening the database and the public [`Store`] handle.

use crate::fanout::Fanout;
use crate::hot::HotKeys;
use crate::keys::{self, CF_LOG, CF_META, CF_OBJECTS, CF_SUCCESSORS};
use crate::shared::{Shared, StoreMetrics, StoreOptions};
use crate::writer::{self, Committed, Op, Request};
use crate::{compaction, StoreError, Versioned};
use bytes::Bytes;
use rocksdb::{BlockBasedOptions, Cache, ColumnFamilyDescriptor, DBCompressionType, Options, DB};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use tokio::sync::{oneshot, Semaphore};

/// Table options of every column family: bloom filters, because every create checks that
/// its key is absent and without a filter each such miss probes every level's files.
///
/// The change log is compacted away within minutes, so compressing it (LZ4 showed as a
/// few percent of the shard's CPU under the create benchmark) buys nothing.
fn column_family_options(name: &str, cache: &Cache) -> Options {
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(cache);
    table.set_bloom_filter(10.0, false);
    table.set_cache_index_and_filter_blocks(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    let mut options = Options::default();
    options.set_block_based_table_factory(&table);
    options.set_memtable_whole_key_filtering(true);
    options.set_memtable_prefix_bloom_ratio(0.1);
    if name == CF_OBJECTS {
        // Level 0 (memtable flushes) uncompressed, as RocksDB's tuning guide advises: its
        // files live only until the next compaction rewrites them into a lower, compressed
        // level, so compressing them cost flush CPU and their decompression compaction CPU
        // for no lasting saving on disk. The other levels keep LZ4.
        let mut levels = [DBCompressionType::Lz4; OBJECT_LEVELS];
        levels[0] = DBCompressionType::None;
        options.set_compression_per_level(&levels);
    } else {
        options.set_compression_type(DBCompressionType::None);
    }
    if name == CF_LOG {
        // A memtable large enough for the retention window: most change-log records are
        // covered by compaction's range deletion before their memtable is flushed, and a
        // flush drops covered records, so they never cost an SST write or a compaction.
        options.set_write_buffer_size(LOG_MEMTABLE_BYTES);
    }
    options
}

/// RocksDB's default number of levels.
const OBJECT_LEVELS: usize = 7;

/// Memtable size of the change log (128 MiB ≈ 100k records of 1 KiB objects).
const LOG_MEMTABLE_BYTES: usize = 128 << 20;

/// A handle to an open store; cheap to clone.
///
/// Dropping the last clone closes the write queue and joins the writer and compactor
/// threads before it returns, so the database is never closed by a detached thread racing
/// process exit (RocksDB aborts with "pthread lock: Invalid argument" when its static
/// state is destroyed under a thread still closing it).
#[derive(Clone)]
pub struct Store {
    pub(crate) shared: Arc<Shared>,
    threads: Arc<Threads>,
    slots: Arc<Semaphore>,
}

/// The store's threads and the channels that keep them running.
struct Threads {
    queue: Option<crossbeam_channel::Sender<Request>>,
    writer: Option<JoinHandle<()>>,
    compactor: Option<(crossbeam_channel::Sender<()>, JoinHandle<()>)>,
}

impl Drop for Threads {
    fn drop(&mut self) {
        // The writer commits what is queued, then sees the queue closed and returns.
        drop(self.queue.take());
        if let Some(writer) = self.writer.take() {
            if writer.join().is_err() {
                tracing::error!("store writer thread panicked");
            }
        }
        if let Some((stop, compactor)) = self.compactor.take() {
            drop(stop);
            if compactor.join().is_err() {
                tracing::error!("store compactor thread panicked");
            }
        }
    }
}

impl Store {
    /// Opens (or creates) the store in `dir` and starts its writer and compactor threads.
    pub fn open(dir: &Path, options: StoreOptions) -> Result<Store, StoreError> {
        let mut db_options = Options::default();
        db_options.create_if_missing(true);
        db_options.create_missing_column_families(true);
        db_options.increase_parallelism(2);
        // One cache for every column family, so memory stays bounded however many there are.
        let cache = Cache::new_lru_cache(options.block_cache_bytes);
        let families = [CF_OBJECTS, CF_LOG, CF_SUCCESSORS, CF_META]
            .into_iter()
            .map(|name| ColumnFamilyDescriptor::new(name, column_family_options(name, &cache)));
        let db = DB::open_cf_descriptors(&db_options, dir, families)?;
        let fanout = Arc::new(Fanout::new(options.event_buffer.max(16)));
        let shared = Arc::new(Shared {
            db,
            committed_rv: AtomicU64::new(0),
            compacted_rv: AtomicU64::new(0),
            fanout,
            metrics: StoreMetrics::default(),
            hot: HotKeys::new(options.hot_keys),
            options: options.clone(),
        });
        let committed = shared.read_meta(keys::META_RV)?;
        let compacted = shared.read_meta(keys::META_COMPACTED)?;
        assert!(compacted <= committed, "compaction floor {compacted} above committed rv {committed}");
        shared.committed_rv.store(committed, Ordering::Release);
        shared.compacted_rv.store(compacted, Ordering::Release);
        tracing::info!(dir = %dir.display(), committed, compacted, "store opened");

        let (queue, rx) = crossbeam_channel::unbounded();
        let writer_shared = shared.clone();
        let writer = std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || writer::run(writer_shared, rx))
            .map_err(|e| StoreError::Rocks(format!("spawn writer thread: {e}")))?;
        let mut threads = Threads { queue: Some(queue), writer: Some(writer), compactor: None };
        threads.compactor = Some(compaction::spawn(shared.clone())?);
        let slots = Arc::new(Semaphore::new(options.max_queued_ops.max(1)));
        Ok(Store { shared, threads: Arc::new(threads), slots })
    }

    /// Commits one op durably; returns once it is on disk and published to watchers.
    pub async fn commit(&self, op: Op) -> Result<Committed, StoreError> {
        let permit = self.slots.clone().acquire_owned().await.map_err(|_| StoreError::Closed)?;
        let (reply, response) = oneshot::channel();
        let queue = self.threads.queue.as_ref().ok_or(StoreError::Closed)?;
        queue
            .send(Request { op, reply, cause: telemetry::Cause::current(), _permit: permit })
            .map_err(|_| StoreError::Closed)?;
        response.await.map_err(|_| StoreError::Closed)?
    }

    /// Shorthand for a [`Op::Put`].
    pub async fn put(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        precondition: crate::Precondition,
    ) -> Result<Committed, StoreError> {
        self.commit(Op::Put { key: key.into(), value: value.into(), precondition }).await
    }

    /// Shorthand for a [`Op::Delete`].
    pub async fn delete(
        &self,
        key: impl Into<Bytes>,
        precondition: crate::Precondition,
    ) -> Result<Committed, StoreError> {
        self.commit(Op::Delete { key: key.into(), precondition }).await
    }

    /// The current value of `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Versioned>, StoreError> {
        self.shared.get(key)
    }

    /// The current value of `key`, like [`Store::get`], for the few small keys that most
    /// requests read (a namespace, a logical cluster's record): after the first read it is
    /// served from memory, and it stays exact because the writer updates it before it
    /// answers any write to it. At most [`crate::StoreOptions::hot_keys`] keys are kept;
    /// absent keys are not.
    pub fn get_hot(&self, key: &[u8]) -> Result<Option<Versioned>, StoreError> {
        self.shared.hot.get_or_load(key, || self.shared.get(key))
    }

    /// The last committed resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.shared.committed_rv.load(Ordering::Acquire)
    }

    /// The compaction floor: the oldest resourceVersion a watch or exact list may start from.
    pub fn compacted_rv(&self) -> u64 {
        self.shared.compacted_rv.load(Ordering::Acquire)
    }

    /// Counters for metrics.
    pub fn metrics(&self) -> &StoreMetrics {
        &self.shared.metrics
    }

    /// Trims the change log now so that at most `keep` records remain (tests and operators;
    /// the background compactor does the same on its own schedule).
    pub fn compact_keeping(&self, keep: u64) -> Result<u64, StoreError> {
        compaction::compact_keeping(&self.shared, keep)
    }
}
