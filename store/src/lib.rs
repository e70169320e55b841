//! A versioned object store on RocksDB: the one place Atoll touches disk.
//!
//! The store knows keys, byte values and resourceVersions — nothing about HTTP, gRPC or
//! API groups. A write travels through these modules in this order:
//! - [`Store::commit`] hands an [`Op`] to the single writer thread ([`writer`]), which
//!   batches concurrent ops, checks each op's [`Precondition`] against the current state,
//!   gives every op the next shard-wide resourceVersion, and writes objects, change-log
//!   records and the RV counter in one synced RocksDB `WriteBatch` (group commit: one
//!   fsync acknowledges a whole batch).
//! - Committed changes are published as [`Event`]s to the live watchers of their prefix
//!   ([`fanout`]) and persisted in the
//!   change log ([`record`]) that [`Watch`]es resume from and exact-RV lists roll back with
//!   ([`read`]).
//! - The writer, the compactor and watchers reach the database through one `shared`
//!   state (the handle's inside), never through the handle itself.
//! - [`compaction`] trims the change log to a bounded retention window; reading below it
//!   is [`StoreError::Gone`] (HTTP 410).
//!
//! Key layout ([`keys`]): column family `objects` maps a caller's key to `rv ‖ value`;
//! `log` maps a big-endian RV to a [`record::LogRecord`] (key, kind and the value the change
//! replaced); `successors` maps the RV of a value to the RV of the change that replaced it;
//! `meta` holds the last committed RV and the compaction floor, written in the same batches
//! as the data they describe. Each value is stored once: while current in `objects`, later
//! as the replaced value of its successor's log record, which is how watch replay finds it.

mod compaction;
mod error;
mod fanout;
mod hot;
pub mod keys;
mod read;
pub mod record;
mod shared;
mod store;
mod watch;
mod writer;

pub use error::StoreError;
pub use read::{ListOptions, ListPage};
pub use shared::{StoreMetrics, StoreOptions};
pub use store::Store;
pub use watch::Watch;
pub use writer::{Committed, Op, Precondition};

use bytes::Bytes;

/// A stored value together with the resourceVersion of the write that produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    /// The resourceVersion of the last write of this key.
    pub rv: u64,
    /// The value bytes as the caller wrote them.
    pub value: Bytes,
}

/// What a committed op did to its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The key did not exist before.
    Added,
    /// The key existed and was overwritten.
    Modified,
    /// The key was removed.
    Deleted,
}

/// One committed change, as watchers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The resourceVersion this change was committed at.
    pub rv: u64,
    /// The key changed.
    pub key: Bytes,
    /// Added, modified or deleted.
    pub kind: EventKind,
    /// The new value; `None` for a delete.
    pub value: Option<Bytes>,
    /// The value before this change, if the key existed (watchers with selectors need it
    /// to tell "stopped matching" from "never matched").
    pub prev: Option<Versioned>,
    /// The span that wrote it (the request, or the reconcile), when spans are exported:
    /// work that a watcher queues from this event continues or links to it. Kept in
    /// memory only; an event read back from the change log has none.
    pub cause: Option<telemetry::Cause>,
}
