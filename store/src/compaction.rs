//! Bounded change-log retention.
//!
//! Without compaction the log would grow forever; with it, a watch or exact-RV list that
//! asks for history below the floor gets [`StoreError::Gone`] and re-lists, as clients of
//! kube-apiserver already do after etcd compacts.

use crate::keys::{self, CF_LOG, CF_META, CF_SUCCESSORS};
use crate::shared::Shared;
use crate::StoreError;
use crossbeam_channel::{RecvTimeoutError, Sender};
use rocksdb::WriteBatch;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Starts the background compactor. It runs until the returned sender is dropped; the
/// caller then joins the returned thread.
pub(crate) fn spawn(shared: Arc<Shared>) -> Result<(Sender<()>, JoinHandle<()>), StoreError> {
    let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
    let thread = std::thread::Builder::new()
        .name("store-compactor".into())
        .spawn(move || loop {
            match stopped.recv_timeout(shared.options.compaction_interval) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
            if let Err(error) = compact_keeping(&shared, shared.options.retention_events) {
                tracing::warn!(%error, "change-log compaction failed; will retry");
            }
        })
        .map_err(|e| StoreError::Rocks(format!("spawn compactor thread: {e}")))?;
    Ok((stop, thread))
}

/// Removes log records so that at most `keep` remain; returns the new floor.
pub(crate) fn compact_keeping(shared: &Shared, keep: u64) -> Result<u64, StoreError> {
    let committed = shared.committed_rv.load(Ordering::Acquire);
    let floor = shared.compacted_rv.load(Ordering::Acquire);
    let target = committed.saturating_sub(keep);
    if target <= floor {
        return Ok(floor);
    }
    let mut batch = WriteBatch::default();
    batch.delete_range_cf(shared.cf(CF_LOG), keys::rv_key(floor + 1), keys::rv_key(target + 1));
    // Values written at or below the floor are never replayed again.
    batch.delete_range_cf(shared.cf(CF_SUCCESSORS), keys::rv_key(floor + 1), keys::rv_key(target + 1));
    batch.put_cf(shared.cf(CF_META), keys::META_COMPACTED, keys::rv_key(target));
    // Raise the floor before the records go: a watcher that finds the log empty then
    // sees the new floor and answers 410, instead of going live past a gap. If the write
    // fails, clients merely get 410 a little early.
    shared.compacted_rv.store(target, Ordering::Release);
    shared.db.write(batch)?;
    tracing::debug!(from = floor, to = target, "change log compacted");
    Ok(target)
}
