//! The store adapter: replicas and senders' positions in RocksDB (the `store` crate).
//!
//! Key layout (from `protocol::replication`): `r/<group>/<resource>/<origin>/<cluster>/
//! <namespace>/<name>` → prost-encoded [`Replica`]; `p/<sender>` → the sender's position,
//! 8 bytes big-endian; `t/<group>/<resource>/<origin>/<cluster>/<namespace>/<name>` → a
//! remembered deletion ([`Deletion`]), written before the replica is deleted and collected
//! after the retention ([`collect_deletions`]); `o/<origin>` → the origin's newest
//! replication session and its relay (a prost-encoded `OriginEpoch`, [`crate::fence`]).
//! Decisions come from [`crate::apply`]; this
//! module only reads what they need and commits what they decide, with optimistic
//! preconditions so that two streams writing one key never lose an update between the
//! read and the write.

use crate::apply::{self, Decision, Held, Remembered, Skip, Validated};
use crate::fence;
use bytes::Bytes;
use futures::future::join_all;
use prost::Message;
use protocol::cache::{OriginEpoch, Replica};
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

/// Whether `change` comes from a sender fenced off its origin ([`fence::fenced`]): it must
/// write nothing.
pub fn is_fenced(store: &Store, change: &Validated) -> Result<bool, StoreError> {
    let Some((origin, sender)) = change.origin_and_sender() else { return Ok(false) };
    Ok(fence::fenced(read_epoch(store, origin)?.as_ref(), sender, origin))
}

/// Applies one validated change, re-deciding when a concurrent write got in between.
pub async fn apply(store: &Store, change: &Validated) -> Result<Applied, StoreError> {
    if let Validated::Epoch { origin, epoch, settled, sender, .. } = change {
        return announce(store, origin, *epoch, *settled, sender).await;
    }
    let key = change.store_key().as_bytes();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let held = store.get(key)?;
        let deletion = read_deletion(store, change.store_key())?;
        let deleted = deletion.as_ref().map(|d| Remembered { source_rv: d.source_rv, sender: &d.sender });
        let result = match change {
            Validated::Upsert { replica, encoded, force, .. } => {
                let held_now = held.as_ref().map(|held| Held { source_rv: held_source_rv(held), bytes: &held.value });
                let decision =
                    apply::decide_upsert(held_now, deleted, &replica.sender, replica.source_rv, encoded, *force);
                if let (Decision::Skip(Skip::Deleted { .. }), Some(deletion)) = (decision, &deletion) {
                    refresh_deletion(store, change.store_key(), deletion).await?;
                }
                commit(store, key, held.as_ref(), decision, Some(encoded)).await
            }
            Validated::Tombstone { force, sender, .. } => {
                let held_rv = held.as_ref().map(held_source_rv);
                let remembered = deleted.map(|d| d.source_rv);
                if let Some(source_rv) = apply::remembered_deletion(held_rv, remembered, *force) {
                    // Remembered first: a crash between the two writes leaves the replica
                    // and its deletion, and the resent tombstone deletes it.
                    let deletion = Deletion { source_rv, at_unix: now_unix(), sender: sender.clone() };
                    write_deletion(store, change.store_key(), &deletion).await?;
                }
                commit(store, key, held.as_ref(), apply::decide_tombstone(held.is_some()), None).await
            }
            Validated::Epoch { .. } => return Err(StoreError::Corrupt("an announcement among replica changes".into())),
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

/// Records that `via` relays session `epoch` of `origin` (`settled`: and holds its whole
/// state), unless the record already says as much ([`fence::announce`]); durable when this
/// returns.
pub async fn announce(
    store: &Store,
    origin: &str,
    epoch: u64,
    settled: bool,
    via: &str,
) -> Result<Applied, StoreError> {
    let key = fence::epoch_key(origin);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let held = store.get(key.as_bytes())?;
        let record = held.as_ref().map(|held| decode_epoch(&held.value)).transpose()?;
        let Some(next) = fence::announce(record.as_ref(), origin, epoch, settled, via) else {
            let held = record.map_or(0, |record| record.epoch);
            return Ok(Applied::Skipped(Skip::OldSession { held, incoming: epoch }));
        };
        let precondition = match &held {
            Some(held) => Precondition::ResourceVersion(held.rv),
            None => Precondition::MustNotExist,
        };
        match store.put(key.clone(), Bytes::from(next.encode_to_vec()), precondition).await {
            Ok(_) => {
                let same_session = record.is_some_and(|record| record.epoch == epoch);
                tracing::info!(
                    origin,
                    epoch,
                    via,
                    settled,
                    same_session,
                    "recorded an origin's newest replication session"
                );
                return Ok(Applied::Written);
            }
            Err(StoreError::Conflict { .. } | StoreError::AlreadyExists | StoreError::NotFound)
                if attempt < CONFLICT_RETRIES => {}
            Err(error) => return Err(error),
        }
    }
}

fn decode_epoch(bytes: &[u8]) -> Result<OriginEpoch, StoreError> {
    OriginEpoch::decode(bytes).map_err(|e| StoreError::Corrupt(format!("stored origin session: {e}")))
}

/// The session recorded for `origin`, if any.
pub fn read_epoch(store: &Store, origin: &str) -> Result<Option<OriginEpoch>, StoreError> {
    store.get(fence::epoch_key(origin).as_bytes())?.map(|stored| decode_epoch(&stored.value)).transpose()
}

/// Every origin's recorded session (only `origin`'s when not empty), as of `at_rv` (the
/// newest when `None`).
pub fn list_epochs(store: &Store, origin: &str, at_rv: Option<u64>) -> Result<Vec<OriginEpoch>, StoreError> {
    let prefix = if origin.is_empty() { fence::EPOCH_PREFIX.to_owned() } else { fence::epoch_key(origin) };
    let options = ListOptions { prefix: prefix.into_bytes(), at_rv, ..ListOptions::default() };
    let page = store.list(&options, |_, _| true)?;
    let records = page.items.iter().map(|(_, stored)| decode_epoch(&stored.value));
    // An exact prefix also matches longer origin names: keep only the one asked for.
    Ok(records
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|r| origin.is_empty() || r.origin == origin)
        .collect())
}

fn held_source_rv(held: &Versioned) -> u64 {
    match decode(&held.value) {
        Ok(replica) => replica.source_rv,
        Err(error) => {
            // Unreadable bytes are replaced by whatever arrives next.
            tracing::warn!(%error, "replacing an undecodable stored replica");
            0
        }
    }
}

/// The key prefix of remembered deletions.
pub const DELETION_PREFIX: &str = "t/";

/// A remembered deletion: the `source_rv` of the deleted replica, when (Unix seconds) the
/// cache deleted it, and who sent the tombstone. Stored as both numbers big-endian (16
/// bytes) followed by the sender's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deletion {
    /// `source_rv` of the replica deleted.
    pub source_rv: u64,
    /// When it was deleted here, in seconds since the Unix epoch.
    pub at_unix: u64,
    /// The sender of the tombstone.
    pub sender: String,
}

impl Deletion {
    fn encode(&self) -> Bytes {
        let mut bytes = Vec::with_capacity(16 + self.sender.len());
        bytes.extend_from_slice(&self.source_rv.to_be_bytes());
        bytes.extend_from_slice(&self.at_unix.to_be_bytes());
        bytes.extend_from_slice(self.sender.as_bytes());
        Bytes::from(bytes)
    }

    fn decode(bytes: &[u8]) -> Result<Deletion, StoreError> {
        let corrupt = || StoreError::Corrupt(format!("remembered deletion of {} bytes is malformed", bytes.len()));
        let (rv, rest) = bytes.split_at_checked(8).ok_or_else(corrupt)?;
        let (at, sender) = rest.split_at_checked(8).ok_or_else(corrupt)?;
        let source_rv = u64::from_be_bytes(rv.try_into().map_err(|_| corrupt())?);
        let at_unix = u64::from_be_bytes(at.try_into().map_err(|_| corrupt())?);
        let sender = String::from_utf8(sender.to_vec()).map_err(|_| corrupt())?;
        Ok(Deletion { source_rv, at_unix, sender })
    }
}

/// The store key of the deletion remembered for the replica stored at `store_key`.
pub fn deletion_key(store_key: &str) -> String {
    format!("{DELETION_PREFIX}{}", store_key.strip_prefix(REPLICA_PREFIX).unwrap_or(store_key))
}

fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_secs())
}

/// The deletion remembered for the replica stored at `store_key`.
pub fn read_deletion(store: &Store, store_key: &str) -> Result<Option<Deletion>, StoreError> {
    store.get(deletion_key(store_key).as_bytes())?.map(|stored| Deletion::decode(&stored.value)).transpose()
}

async fn write_deletion(store: &Store, store_key: &str, deletion: &Deletion) -> Result<(), StoreError> {
    store.put(deletion_key(store_key), deletion.encode(), Precondition::None).await?;
    Ok(())
}

/// Restarts the retention of `deletion` (at most once a second): a late copy of the
/// deleted object still arrives, and the deletion must outlive the last one.
async fn refresh_deletion(store: &Store, store_key: &str, deletion: &Deletion) -> Result<(), StoreError> {
    let now = now_unix();
    if deletion.at_unix < now {
        write_deletion(store, store_key, &Deletion { at_unix: now, ..deletion.clone() }).await?;
    }
    Ok(())
}

/// Forgets the deletions remembered longer than `retention` (as of `now_unix`, or now)
/// since the deletion or the last late copy refused; returns how many went. After that a
/// late copy of a deleted object is accepted again, so the retention must outlast any
/// cache's outage that should not resurrect it.
pub async fn collect_deletions(
    store: &Store,
    retention: std::time::Duration,
    now: Option<u64>,
) -> Result<usize, StoreError> {
    let now = now.unwrap_or_else(now_unix);
    let mut forgotten = 0;
    let mut start = None;
    loop {
        let options = ListOptions {
            prefix: DELETION_PREFIX.as_bytes().to_vec(),
            start: start.take(),
            limit: Some(PURGE_CHUNK),
            ..ListOptions::default()
        };
        let page = store.list(&options, |_, _| true)?;
        let Some((last, _)) = page.items.last() else { return Ok(forgotten) };
        let mut next = last.to_vec();
        next.push(0);
        let full = page.items.len() == PURGE_CHUNK;
        for (key, stored) in page.items {
            let expired = match Deletion::decode(&stored.value) {
                Ok(deletion) => deletion.at_unix.saturating_add(retention.as_secs()) <= now,
                Err(error) => {
                    tracing::warn!(key = %String::from_utf8_lossy(&key), %error, "forgetting a corrupt deletion");
                    true
                }
            };
            if expired {
                forgotten += usize::from(delete_if_unchanged(store, key, stored.rv).await?);
            }
        }
        if !full {
            return Ok(forgotten);
        }
        start = Some(next);
    }
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

/// Deletes every replica whose origin is `origin`, `origin`'s position and its session
/// record: the shard is gone (or replicates elsewhere now), and nothing it replicated may
/// linger; should it come back, it starts over with a full sync. Returns how many replicas went.
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
    for key in [replication::position_key(origin), fence::epoch_key(origin)] {
        match store.delete(key, Precondition::MustExist).await {
            Ok(_) | Err(StoreError::NotFound) => {}
            Err(error) => return Err(error.into()),
        }
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
