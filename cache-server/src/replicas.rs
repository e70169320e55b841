//! The store adapter: replicas and senders' positions in RocksDB (the `store` crate).
//!
//! Key layout (from `protocol::replication`): `r/<group>/<resource>/<origin>/<cluster>/
//! <namespace>/<name>` → prost-encoded [`Replica`]; `p/<sender>` → the sender's position,
//! 8 bytes big-endian. Decisions come from [`crate::apply`]; this module only reads what
//! they need and commits what they decide, with optimistic preconditions so that two
//! streams writing one key never lose an update between the read and the write.

use crate::apply::{self, Decision, Held, Skip, Validated};
use bytes::Bytes;
use futures::future::join_all;
use prost::Message;
use protocol::cache::Replica;
use protocol::replication::{self, REPLICA_PREFIX};
use store::{ListOptions, Precondition, Store, StoreError, Versioned};

/// How often one change is re-decided after another writer changed its key in between.
/// Each retry means a concurrent write to the same key; more than a handful means
/// something writes it in a loop, and the stream fails rather than spin.
const CONFLICT_RETRIES: usize = 16;
/// Keys listed and deleted per round of a purge, bounding its memory.
const PURGE_CHUNK: usize = 512;

/// What applying one change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The replica was written.
    Written,
    /// The replica was deleted.
    Deleted,
    /// Nothing was written.
    Skipped(Skip),
}

/// Decodes a stored replica.
pub fn decode(bytes: &[u8]) -> Result<Replica, StoreError> {
    Replica::decode(bytes).map_err(|e| StoreError::Corrupt(format!("stored replica: {e}")))
}

/// Applies one validated change, re-deciding when a concurrent write got in between.
pub async fn apply(store: &Store, change: &Validated) -> Result<Applied, StoreError> {
    let key = change.store_key().as_bytes();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let held = store.get(key)?;
        let result = match change {
            Validated::Upsert { replica, encoded, force, .. } => {
                let decision = decide_upsert(held.as_ref(), replica.source_rv, encoded, *force);
                commit(store, key, held.as_ref(), decision, Some(encoded)).await
            }
            Validated::Tombstone { .. } => {
                commit(store, key, held.as_ref(), apply::decide_tombstone(held.is_some()), None).await
            }
        };
        match result {
            Err(StoreError::Conflict { .. } | StoreError::AlreadyExists | StoreError::NotFound)
                if attempt < CONFLICT_RETRIES =>
            {
                tracing::debug!(key = change.store_key(), attempt, "replica changed concurrently; deciding again");
            }
            other => return other,
        }
    }
}

fn decide_upsert(held: Option<&Versioned>, incoming_rv: u64, incoming: &[u8], force: bool) -> Decision {
    let held_rv = held.map(|held| match decode(&held.value) {
        Ok(replica) => replica.source_rv,
        Err(error) => {
            // Unreadable bytes are replaced by whatever arrives next.
            tracing::warn!(%error, "replacing an undecodable stored replica");
            0
        }
    });
    let held = held.zip(held_rv).map(|(held, source_rv)| Held { source_rv, bytes: &held.value });
    apply::decide_upsert(held, incoming_rv, incoming, force)
}

/// Commits `decision` for `key`, on the condition that the key still is as `held` says.
async fn commit(
    store: &Store,
    key: &[u8],
    held: Option<&Versioned>,
    decision: Decision,
    value: Option<&Bytes>,
) -> Result<Applied, StoreError> {
    let precondition = match held {
        Some(held) => Precondition::ResourceVersion(held.rv),
        None => Precondition::MustNotExist,
    };
    let key = Bytes::copy_from_slice(key);
    match (decision, value) {
        (Decision::Write, Some(value)) => {
            store.put(key, value.clone(), precondition).await?;
            Ok(Applied::Written)
        }
        (Decision::Delete, _) => {
            store.delete(key, precondition).await?;
            Ok(Applied::Deleted)
        }
        (Decision::Skip(skip), _) => Ok(Applied::Skipped(skip)),
        (Decision::Write, None) => Err(StoreError::Corrupt("an upsert decision without a value".to_owned())),
    }
}

/// The position `sender` last had durably recorded; 0 when none.
pub fn read_position(store: &Store, sender: &str) -> Result<u64, StoreError> {
    match store.get(replication::position_key(sender).as_bytes())? {
        None => Ok(0),
        Some(stored) => {
            let bytes: [u8; 8] = stored.value.as_ref().try_into().map_err(|_| {
                StoreError::Corrupt(format!("position of {sender:?} has {} bytes, not 8", stored.value.len()))
            })?;
            Ok(u64::from_be_bytes(bytes))
        }
    }
}

/// Records `position` for `sender`; durable when this returns.
pub async fn write_position(store: &Store, sender: &str, position: u64) -> Result<(), StoreError> {
    let key = replication::position_key(sender);
    store.put(key, Bytes::copy_from_slice(&position.to_be_bytes()), Precondition::None).await?;
    Ok(())
}

/// The key prefix of `group/resource`, or of every replica when `resource` is empty.
pub fn prefix(group: &str, resource: &str) -> String {
    if resource.is_empty() {
        REPLICA_PREFIX.to_owned()
    } else {
        replication::resource_prefix(group, resource)
    }
}

/// Every replica under `prefix` that `keep` accepts, as of one resourceVersion (the
/// newest, or `at_rv`), and that resourceVersion.
pub fn list(
    store: &Store,
    prefix: &str,
    at_rv: Option<u64>,
    mut keep: impl FnMut(&Replica) -> bool,
) -> Result<(Vec<Replica>, u64), StoreError> {
    let options = ListOptions { prefix: prefix.as_bytes().to_vec(), at_rv, ..ListOptions::default() };
    let page = store.list(&options, |_, _| true)?;
    let mut items = Vec::with_capacity(page.items.len());
    for (key, stored) in &page.items {
        match decode(&stored.value) {
            Ok(replica) if keep(&replica) => items.push(replica),
            Ok(_) => {}
            Err(error) => tracing::warn!(key = %String::from_utf8_lossy(key), %error, "skipping a stored replica"),
        }
    }
    Ok((items, page.rv))
}

/// The distinct `r/<group>/<resource>/` prefixes holding at least one replica, found by
/// seeking past each one in turn (one seek per resource, however many replicas).
pub fn resource_prefixes(store: &Store) -> Result<Vec<String>, StoreError> {
    let mut prefixes = Vec::new();
    let mut start = REPLICA_PREFIX.as_bytes().to_vec();
    loop {
        let options = ListOptions {
            prefix: REPLICA_PREFIX.as_bytes().to_vec(),
            start: Some(start),
            limit: Some(1),
            ..ListOptions::default()
        };
        let page = store.list(&options, |_, _| true)?;
        let Some((key, _)) = page.items.first() else { return Ok(prefixes) };
        let key = String::from_utf8_lossy(key);
        // r/<group>/<resource>/...: the prefix ends after the third '/'.
        let Some(end) = key.match_indices('/').nth(2).map(|(at, _)| at + 1) else {
            return Err(StoreError::Corrupt(format!("replica key {key:?} names no resource")));
        };
        let prefix = key[..end].to_owned();
        match store::keys::prefix_end(prefix.as_bytes()) {
            Some(next) => start = next,
            None => return Ok(prefixes),
        }
        prefixes.push(prefix);
    }
}

/// Why a purge stopped before it was complete; it is safe to run again.
#[derive(Debug, thiserror::Error)]
pub enum PurgeError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Replicas of the origin were rewritten faster than the purge could delete them.
    #[error("purge of origin {origin:?}: the replicas under {prefix} keep being rewritten")]
    Contended {
        /// The origin being purged.
        origin: String,
        /// The key prefix whose replicas kept changing.
        prefix: String,
    },
}

/// Deletes every replica whose origin is `origin` and `origin`'s position: the shard is
/// gone, and nothing it replicated may linger. Returns how many replicas went.
pub async fn purge_origin(store: &Store, origin: &str) -> Result<usize, PurgeError> {
    let mut purged = 0;
    for resource in resource_prefixes(store)? {
        let prefix = format!("{resource}{origin}/");
        // Rounds that deleted nothing because every listed key was rewritten meanwhile.
        let mut stalled = 0;
        loop {
            let options =
                ListOptions { prefix: prefix.clone().into_bytes(), limit: Some(PURGE_CHUNK), ..ListOptions::default() };
            let page = store.list(&options, |_, _| true)?;
            if page.items.is_empty() {
                break;
            }
            let deletes = page.items.into_iter().map(|(key, stored)| delete_if_unchanged(store, key, stored.rv));
            let mut round = 0;
            for deleted in join_all(deletes).await {
                round += usize::from(deleted?);
            }
            purged += round;
            stalled = if round == 0 { stalled + 1 } else { 0 };
            if stalled == CONFLICT_RETRIES {
                // Someone keeps writing this origin; the purge gives up rather than spin.
                return Err(PurgeError::Contended { origin: origin.to_owned(), prefix });
            }
        }
    }
    match store.delete(replication::position_key(origin), Precondition::MustExist).await {
        Ok(_) | Err(StoreError::NotFound) => {}
        Err(error) => return Err(error.into()),
    }
    Ok(purged)
}

/// Deletes `key` if it is still at `rv`. A concurrent rewrite is left for the next round
/// of the purge, which lists the key again.
async fn delete_if_unchanged(store: &Store, key: Bytes, rv: u64) -> Result<bool, StoreError> {
    match store.delete(key, Precondition::ResourceVersion(rv)).await {
        Ok(_) => Ok(true),
        Err(StoreError::Conflict { .. } | StoreError::NotFound) => Ok(false),
        Err(error) => Err(error),
    }
}
