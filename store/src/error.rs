//! Errors callers branch on; each maps to exactly one Kubernetes Status in the shard.

use thiserror::Error;

/// Why a store operation failed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// A create found the key already present.
    #[error("key already exists")]
    AlreadyExists,
    /// The key is absent (an update or delete that requires it).
    #[error("key not found")]
    NotFound,
    /// The key's current resourceVersion differs from the precondition's.
    #[error("resourceVersion precondition failed: expected {expected}, current {actual}")]
    Conflict {
        /// The resourceVersion the caller expected.
        expected: u64,
        /// The resourceVersion the key has.
        actual: u64,
    },
    /// The requested resourceVersion is older than the retained change log.
    #[error("resourceVersion {requested} is older than the oldest retained ({oldest})")]
    Gone {
        /// The resourceVersion asked for.
        requested: u64,
        /// The oldest resourceVersion still served.
        oldest: u64,
    },
    /// The requested resourceVersion has not been reached yet.
    #[error("resourceVersion {requested} is newer than the current {current}")]
    TooLargeResourceVersion {
        /// The resourceVersion asked for.
        requested: u64,
        /// The newest committed resourceVersion.
        current: u64,
    },
    /// The store's writer has stopped (shutdown or a fatal disk error).
    #[error("store is closed")]
    Closed,
    /// RocksDB reported an error; the operation had no effect.
    #[error("rocksdb: {0}")]
    Rocks(String),
    /// The disk under the store is full (RocksDB's ENOSPC): the write had no effect and
    /// reads still work. RocksDB then holds a hard background error and refuses every
    /// write, even after space is freed, until the store is opened again (a restart).
    #[error("no space left on the store's disk: {0}")]
    NoSpace(String),
    /// Stored bytes failed to decode: a corrupted record.
    #[error("corrupt record: {0}")]
    Corrupt(String),
}

impl From<rocksdb::Error> for StoreError {
    fn from(e: rocksdb::Error) -> Self {
        let message = e.into_string();
        // RocksDB reports ENOSPC only as text (an IOError whose subcode the C API drops),
        // and keeps answering writes with the same background error until it recovers.
        if message.contains("No space left on device") {
            StoreError::NoSpace(message)
        } else {
            StoreError::Rocks(message)
        }
    }
}
