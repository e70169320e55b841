//! The uplink's decisions, without I/O: where to resume, what a full sync sends, how
//! changes are cut into batches, and how long to wait before reconnecting.

use protocol::cache::{change, Change, Replica};
use protocol::replication::replica_key;
use std::collections::HashMap;
use std::time::Duration;

/// Changes per batch at most.
pub const BATCH_CHANGES_MAX: usize = 500;
/// Object bytes per batch at most (well under the parent's message limit); a single
/// larger replica still goes, alone.
pub const BATCH_BYTES_MAX: usize = 4 << 20;

/// How to start forwarding after the parent answered the Hello with `parent_position`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Watch the local store from this resourceVersion.
    Resume(u64),
    /// Compare everything with the parent first.
    FullSync,
}

/// Decides how to start. The parent knows nothing (0), or knows a position this store
/// never reached (the store was reset), or one the change log no longer holds: full sync.
pub fn start(parent_position: u64, local_rv: u64, local_compacted_rv: u64) -> Start {
    if parent_position == 0 || parent_position > local_rv || parent_position < local_compacted_rv {
        Start::FullSync
    } else {
        Start::Resume(parent_position)
    }
}

/// What makes the parent equal to this cache, given `parent` (everything the parent holds,
/// from every sender) and `local` (everything held here), for the sender `me`:
/// - a local replica the parent lacks is upserted;
/// - one the parent holds differently is forced back, unless another sender relayed a
///   later source version of it (the origin moved to a sibling cache, so this copy is the
///   stale one, and forcing it would make siblings overwrite each other every repair);
/// - a parent replica from `me` that this cache does not hold gets a tombstone.
pub fn repairs(parent: &[Replica], local: &[Replica], me: &str) -> Vec<Change> {
    let parent_by_key: HashMap<String, &Replica> =
        parent.iter().filter_map(|replica| Some((replica_key(replica.key.as_ref()?), replica))).collect();
    let mut changes = Vec::new();
    let mut local_keys = std::collections::HashSet::with_capacity(local.len());
    for replica in local {
        let Some(key) = replica.key.as_ref() else { continue };
        let store_key = replica_key(key);
        let upsert = |force: bool| Change { change: Some(change::Change::Upsert(replica.clone())), force };
        match parent_by_key.get(&store_key) {
            None => changes.push(upsert(false)),
            Some(held) if same_content(held, replica) => {}
            Some(held) if held.sender != me && held.source_rv > replica.source_rv => {}
            Some(_) => changes.push(upsert(true)),
        }
        local_keys.insert(store_key);
    }
    for replica in parent.iter().filter(|replica| replica.sender == me) {
        let Some(key) = replica.key.as_ref() else { continue };
        if !local_keys.contains(&replica_key(key)) {
            changes.push(Change { change: Some(change::Change::Tombstone(key.clone())), force: false });
        }
    }
    changes
}

fn same_content(a: &Replica, b: &Replica) -> bool {
    a.key == b.key && a.uid == b.uid && a.source_rv == b.source_rv && a.object == b.object
}

/// Accumulates changes into one batch within [`BATCH_CHANGES_MAX`] and [`BATCH_BYTES_MAX`].
#[derive(Debug, Default)]
pub struct Batcher {
    changes: Vec<Change>,
    bytes: usize,
}

impl Batcher {
    /// Adds a change.
    pub fn push(&mut self, change: Change) {
        self.bytes += match &change.change {
            Some(change::Change::Upsert(replica)) => replica.object.len(),
            _ => 0,
        };
        self.changes.push(change);
    }

    /// Whether the batch takes no more changes.
    pub fn is_full(&self) -> bool {
        self.changes.len() >= BATCH_CHANGES_MAX || self.bytes >= BATCH_BYTES_MAX
    }

    /// Whether no change was added since the last [`Batcher::take`].
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The changes so far; the batcher starts over empty.
    pub fn take(&mut self) -> Vec<Change> {
        self.bytes = 0;
        std::mem::take(&mut self.changes)
    }
}

/// Cuts `changes` into batches within the limits.
pub fn into_batches(changes: Vec<Change>) -> Vec<Vec<Change>> {
    let mut batches = Vec::new();
    let mut batcher = Batcher::default();
    for change in changes {
        batcher.push(change);
        if batcher.is_full() {
            batches.push(batcher.take());
        }
    }
    if !batcher.is_empty() {
        batches.push(batcher.take());
    }
    batches
}

/// Reconnect delays: doubling from `min` to `max`, back to `min` after a success.
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// The uplink's: 100 ms, doubling up to 5 s.
    pub fn reconnect() -> Self {
        Backoff::new(Duration::from_millis(100), Duration::from_secs(5))
    }

    /// Delays from `min` to `max`.
    pub fn new(min: Duration, max: Duration) -> Self {
        Backoff { min, max, next: min }
    }

    /// The delay before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        delay
    }

    /// A connection worked: the next failure waits `min` again.
    pub fn reset(&mut self) {
        self.next = self.min;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::cache::ReplicaKey;

    fn replica(name: &str, source_rv: u64, sender: &str) -> Replica {
        Replica {
            key: Some(ReplicaKey {
                origin: "s1".into(),
                cluster: "c".into(),
                group: "apis.kcp.io".into(),
                resource: "apiexports".into(),
                namespace: String::new(),
                name: name.into(),
            }),
            uid: format!("uid-{name}"),
            source_rv,
            object: format!("{{\"rv\":{source_rv}}}").into_bytes(),
            sender: sender.into(),
        }
    }

    fn summary(changes: &[Change]) -> Vec<String> {
        changes
            .iter()
            .map(|change| match &change.change {
                Some(change::Change::Upsert(r)) => {
                    format!("upsert {} @{} force={}", r.key.as_ref().unwrap().name, r.source_rv, change.force)
                }
                Some(change::Change::Tombstone(k)) => format!("tombstone {}", k.name),
                None => "none".into(),
            })
            .collect()
    }

    #[test]
    fn where_to_start() {
        let cases = [
            (0, 100, 0, Start::FullSync),
            (50, 100, 0, Start::Resume(50)),
            (100, 100, 90, Start::Resume(100)),
            (90, 100, 90, Start::Resume(90)),
            (89, 100, 90, Start::FullSync),
            (101, 100, 0, Start::FullSync),
        ];
        for (parent, local, compacted, expected) in cases {
            assert_eq!(
                start(parent, local, compacted),
                expected,
                "parent {parent} local {local} compacted {compacted}"
            );
        }
    }

    #[test]
    fn repairs_make_the_parent_equal_to_the_local_replicas() {
        // The parent stamped its own sender ("child"); locally the shard's is kept.
        let parent = vec![
            replica("same", 1, "child"),
            replica("stale", 1, "child"),
            replica("extra", 1, "child"),
            replica("siblings", 1, "sibling"),
        ];
        let local = vec![replica("same", 1, "s1"), replica("stale", 2, "s1"), replica("missing", 4, "s1")];
        assert_eq!(
            summary(&repairs(&parent, &local, "child")),
            ["upsert stale @2 force=true", "upsert missing @4 force=false", "tombstone extra"],
            "what another sender relayed is not this cache's to delete"
        );
        assert!(repairs(&local, &local, "s1").is_empty());
        assert_eq!(summary(&repairs(&[], &local[..1], "child")), ["upsert same @1 force=false"]);
        // Tampered with at the parent, under this sender: forced back, even to an older version.
        let tampered = [replica("same", 9, "child")];
        assert_eq!(summary(&repairs(&tampered, &local[..1], "child")), ["upsert same @1 force=true"]);
        // Altered by someone else at the same version: forced back.
        let altered = Replica { object: b"{}".to_vec(), ..replica("same", 1, "admin") };
        assert_eq!(summary(&repairs(&[altered], &local[..1], "child")), ["upsert same @1 force=true"]);
        // A sibling relayed a later version: this copy is stale and is left alone.
        assert!(repairs(&[replica("same", 5, "sibling")], &local[..1], "child").is_empty());
    }

    #[test]
    fn batches_respect_both_limits() {
        let small: Vec<Change> = (0..1001)
            .map(|i| Change { change: Some(change::Change::Upsert(replica(&i.to_string(), 1, ""))), force: false })
            .collect();
        let sizes: Vec<usize> = into_batches(small).iter().map(Vec::len).collect();
        assert_eq!(sizes, [500, 500, 1]);

        let mut big = replica("big", 1, "");
        big.object = vec![b' '; BATCH_BYTES_MAX / 2 + 1];
        let big: Vec<Change> =
            (0..3).map(|_| Change { change: Some(change::Change::Upsert(big.clone())), force: false }).collect();
        let sizes: Vec<usize> = into_batches(big).iter().map(Vec::len).collect();
        assert_eq!(sizes, [2, 1]);
        assert!(into_batches(Vec::new()).is_empty());
    }

    #[test]
    fn backoff_doubles_to_its_cap_and_resets() {
        let mut backoff = Backoff::reconnect();
        let delays: Vec<u64> = (0..8).map(|_| backoff.next_delay().as_millis() as u64).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        backoff.reset();
        assert_eq!(backoff.next_delay(), Duration::from_millis(100));
    }
}
