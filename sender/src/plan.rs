//! The sender's decisions, without I/O: how changes are cut into batches (one limit for
//! every sender), which batch carries the position, and which batches are acknowledged.

use protocol::cache::{change, Batch, Change};
use std::collections::VecDeque;

/// Batches sent and not yet acknowledged, at most. When the target is slower, the sender
/// waits for acks and changes accumulate in the local change log (bounded by retention;
/// beyond it the next session starts with a full sync).
pub const IN_FLIGHT_MAX: usize = 64;

/// Changes per batch at most.
pub const BATCH_CHANGES_MAX: usize = 512;
/// Object bytes per batch at most (well under the target's message limit); a single
/// larger replica still goes, alone.
pub const BATCH_BYTES_MAX: usize = 4 << 20;

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

/// The batches that bring the target to `position` with `changes`: only the last one
/// carries the position (the earlier ones alone are not all of it; 0 moves nothing), and
/// without any change one empty batch still moves the position.
pub fn batches(changes: Vec<Change>, position: u64) -> Vec<Batch> {
    let mut batches: Vec<Batch> =
        into_batches(changes).into_iter().map(|changes| Batch { changes, position: 0, ..Batch::default() }).collect();
    match batches.last_mut() {
        Some(last) => last.position = position,
        None => batches.push(Batch { changes: Vec::new(), position, ..Batch::default() }),
    }
    batches
}

/// `changes` as a target takes them: without session announcements (`OriginEpoch`
/// changes) when the target did not say it reads them in its answer to the Hello, since an
/// older cache refuses a whole batch for a change it cannot read.
pub fn for_target(mut changes: Vec<Change>, takes_epochs: bool) -> Vec<Change> {
    if !takes_epochs {
        changes.retain(|change| !matches!(change.change, Some(change::Change::Epoch(_))));
    }
    changes
}

/// The batches of one stream that are sent and not yet acknowledged, in order, and the
/// position the target has made durable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Window {
    /// Each unacknowledged batch's position (0: it moves none).
    unacked: VecDeque<u64>,
    /// Batches acknowledged on this stream.
    acked: u64,
    /// The latest position the target acknowledged as durable.
    durable: u64,
}

impl Window {
    /// Whether another batch may go now (fewer than [`IN_FLIGHT_MAX`] unacknowledged).
    pub fn can_send(&self) -> bool {
        self.unacked.len() < IN_FLIGHT_MAX
    }

    /// A batch moving the target to `position` (0: none) went out.
    pub fn sent(&mut self, position: u64) {
        debug_assert!(self.can_send(), "a batch beyond the in-flight bound");
        self.unacked.push_back(position);
    }

    /// The target acknowledged `batches` batches of this stream so far (acks are
    /// cumulative and in order). Returns false for an ack of batches never sent.
    pub fn acked(&mut self, batches: u64) -> bool {
        while self.acked < batches {
            let Some(position) = self.unacked.pop_front() else { return false };
            self.acked += 1;
            self.durable = self.durable.max(position);
        }
        true
    }

    /// Whether every sent batch is acknowledged.
    pub fn is_drained(&self) -> bool {
        self.unacked.is_empty()
    }

    /// How many batches are unacknowledged.
    pub fn in_flight(&self) -> usize {
        self.unacked.len()
    }

    /// The latest position the target holds durably (0: none on this stream yet).
    pub fn durable(&self) -> u64 {
        self.durable
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::cache::{Replica, ReplicaKey};

    /// (case, changes, position, expected (changes, position) per batch).
    type PositionCase = (&'static str, Vec<Change>, u64, Vec<(usize, u64)>);
    /// (case, positions sent, batches acked, expected (accepted, in flight, durable, drained)).
    type WindowCase = (&'static str, Vec<u64>, u64, (bool, usize, u64, bool));

    fn upsert(name: &str, object_bytes: usize) -> Change {
        let key = ReplicaKey { name: name.into(), ..ReplicaKey::default() };
        let replica = Replica { key: Some(key), object: vec![b' '; object_bytes], ..Replica::default() };
        Change { change: Some(change::Change::Upsert(replica)), force: false }
    }

    fn tombstone(name: &str) -> Change {
        let key = ReplicaKey { name: name.into(), ..ReplicaKey::default() };
        Change { change: Some(change::Change::Tombstone(key)), force: false }
    }

    #[test]
    fn batches_respect_both_limits() {
        let big = BATCH_BYTES_MAX / 2 + 1;
        let cases: Vec<(&str, Vec<Change>, Vec<usize>)> = vec![
            ("nothing", vec![], vec![]),
            ("one", vec![upsert("a", 1)], vec![1]),
            (
                "the change limit",
                (0..2 * BATCH_CHANGES_MAX + 1).map(|i| upsert(&i.to_string(), 1)).collect(),
                vec![BATCH_CHANGES_MAX, BATCH_CHANGES_MAX, 1],
            ),
            ("the byte limit", (0..3).map(|i| upsert(&i.to_string(), big)).collect(), vec![2, 1]),
            (
                "one replica over the byte limit goes alone",
                vec![upsert("huge", BATCH_BYTES_MAX * 2), tombstone("t")],
                vec![1, 1],
            ),
            (
                "tombstones weigh nothing",
                (0..BATCH_CHANGES_MAX).map(|i| tombstone(&i.to_string())).collect(),
                vec![BATCH_CHANGES_MAX],
            ),
        ];
        for (name, changes, expected) in cases {
            let sizes: Vec<usize> = into_batches(changes).iter().map(Vec::len).collect();
            assert_eq!(sizes, expected, "{name}");
        }
    }

    #[test]
    fn only_the_last_batch_moves_the_position() {
        let many: Vec<Change> = (0..BATCH_CHANGES_MAX + 1).map(|i| upsert(&i.to_string(), 1)).collect();
        let cases: Vec<PositionCase> = vec![
            ("no change still moves the position", vec![], 9, vec![(0, 9)]),
            ("one batch", vec![upsert("a", 1)], 9, vec![(1, 9)]),
            ("two batches", many, 9, vec![(BATCH_CHANGES_MAX, 0), (1, 9)]),
            ("repairs move nothing", vec![tombstone("t")], 0, vec![(1, 0)]),
        ];
        for (name, changes, position, expected) in cases {
            let got: Vec<(usize, u64)> =
                batches(changes, position).iter().map(|batch| (batch.changes.len(), batch.position)).collect();
            assert_eq!(got, expected, "{name}");
        }
    }

    /// What a window looks like after `sent` batches (their positions) and an ack of
    /// `acked` batches: (accepted, in flight, durable position, drained).
    #[test]
    fn acks_free_the_window_in_order() {
        let cases: Vec<WindowCase> = vec![
            ("nothing sent", vec![], 0, (true, 0, 0, true)),
            ("sent, not acked", vec![5, 7], 0, (true, 2, 0, false)),
            ("the first acked", vec![5, 7], 1, (true, 1, 5, false)),
            ("all acked", vec![5, 7], 2, (true, 0, 7, true)),
            ("a repair moves no position", vec![5, 0], 2, (true, 0, 5, true)),
            ("an ack of more than was sent", vec![5], 2, (false, 0, 5, true)),
        ];
        for (name, sent, acked, expected) in cases {
            let mut window = Window::default();
            for position in sent {
                window.sent(position);
            }
            let accepted = window.acked(acked);
            assert_eq!((accepted, window.in_flight(), window.durable(), window.is_drained()), expected, "{name}");
        }
    }

    #[test]
    fn an_older_target_gets_no_announcements() {
        let epoch = protocol::cache::OriginEpoch { origin: "s1".into(), epoch: 3, ..Default::default() };
        let announcement = Change { change: Some(change::Change::Epoch(epoch)), force: false };
        let changes = vec![announcement.clone(), upsert("a", 1), tombstone("t")];
        assert_eq!(for_target(changes.clone(), true), changes);
        assert_eq!(for_target(changes, false), [upsert("a", 1), tombstone("t")]);
    }

    #[test]
    fn the_window_closes_at_the_in_flight_bound() {
        let mut window = Window::default();
        for position in 1..=IN_FLIGHT_MAX as u64 {
            assert!(window.can_send(), "batch {position}");
            window.sent(position);
        }
        assert!(!window.can_send());
        assert!(window.acked(1));
        assert!(window.can_send());
        assert!(window.acked(1), "a repeated cumulative count frees nothing more");
        assert_eq!(window.in_flight(), IN_FLIGHT_MAX - 1);
    }
}
