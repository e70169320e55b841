//! Fencing by replication session, without I/O: which sender may change an origin's
//! replicas here, and when a regional cache must let go of an origin that moved on.
//!
//! Every time a shard opens a replication stream it announces a new session (its Hello's
//! `epoch`, larger than all its earlier ones across restarts). The cache it talks to
//! records, per origin, the newest session it knows and who relays it (the shard itself);
//! that record is a store key like any other, so the uplink relays it to the parent as an
//! `OriginEpoch` change, and the parent records the child as the relay. A relay of an
//! older session (a regional cache the shard failed over from) is then *fenced*: its
//! upserts and tombstones of that origin are refused, however long it was away, so it can
//! never bring back an object deleted through the newer relay. This bounds nothing by
//! time, unlike the remembered deletions of [`crate::apply`], which remain as a second
//! guard.
//!
//! The fenced cache learns it was left when it compares itself with its parent (the
//! uplink's full sync and drift repair): the parent names another relay of a newer
//! session, and the cache drops the origin's replicas ([`moved_on`]).
//!
//! A session is *settled* at a cache once the cache holds the origin's whole state of it:
//! the shard's Hello names its store's resourceVersion (`head`), and the first batch that
//! moves the shard's position there settles it (at once, when the cache's recorded
//! position is already there). A relay announces its settlement upward after the repairs
//! that made its parent equal to it. Until then the cache's copy of the origin may be an
//! older session's leftovers (a shard back from a sibling cache), so the uplink repairs
//! nothing of it; once settled, the relay speaks for the origin at the parent and deletes
//! the parent's copies it lacks whoever relayed them ([`relayed_here`]): a relay of an
//! older session that was cut off from the parent before it relayed a deletion leaves an
//! object nobody else would delete.
//!
//! Without records (senders that keep no sessions), nothing is fenced: the rules before
//! fencing apply unchanged. An operator's stream (a `system:masters` certificate: repairs
//! by hand) is never fenced.

use protocol::cache::{change, Change, OriginEpoch};
use std::collections::{BTreeSet, HashMap};

/// The store key prefix of origin session records.
pub const EPOCH_PREFIX: &str = "o/";

/// The store key of `origin`'s session record.
pub fn epoch_key(origin: &str) -> String {
    format!("{EPOCH_PREFIX}{origin}")
}

/// Whether `sender` is refused changes to the replicas of `origin`, given the origin's
/// session record here. The relay of the newest session may change them, and so may the
/// origin itself (a shard speaks for its own objects; its streams reach only the cache it
/// chose). Without a record nobody is fenced.
pub fn fenced(record: Option<&OriginEpoch>, sender: &str, origin: &str) -> bool {
    record.is_some_and(|record| sender != origin && record.via != sender)
}

/// The record after `via` announced session `epoch` of `origin` (`settled`: `via` holds
/// the origin's whole state of it), or `None` when the record stays: a session below the
/// known one is old news (a relay of an older session stays fenced), the known session
/// changes only when its relay says it settled, and 0 is no session at all.
pub fn announce(
    record: Option<&OriginEpoch>,
    origin: &str,
    epoch: u64,
    settled: bool,
    via: &str,
) -> Option<OriginEpoch> {
    let next = || OriginEpoch { origin: origin.to_owned(), epoch, via: via.to_owned(), settled };
    match record {
        _ if epoch == 0 => None,
        None => Some(next()),
        Some(record) if record.epoch < epoch => Some(next()),
        Some(record) if record.epoch == epoch && record.via == via && settled && !record.settled => Some(next()),
        Some(_) => None,
    }
}

/// The origins this cache (`me`) must drop: the parent names another relay for a session
/// newer than any this cache knows of, and this cache still holds replicas of the origin
/// (`held`). Each comes with the parent's record.
pub fn moved_on(parent: &[OriginEpoch], local: &[OriginEpoch], held: &BTreeSet<&str>, me: &str) -> Vec<OriginEpoch> {
    let local = by_origin(local);
    parent
        .iter()
        .filter(|record| record.via != me && held.contains(record.origin.as_str()))
        .filter(|record| record.epoch > local.get(record.origin.as_str()).map_or(0, |here| here.epoch))
        .cloned()
        .collect()
}

/// The origins whose replicas the parent refuses from this cache (`me`): it names another
/// relay, of a session at least as new as this cache's (a newer one here is announced
/// first and takes the origin back). Repairs of them would be refused every time.
pub fn fenced_at_parent<'a>(parent: &'a [OriginEpoch], local: &[OriginEpoch], me: &str) -> BTreeSet<&'a str> {
    let local = by_origin(local);
    parent
        .iter()
        .filter(|record| record.via != me)
        .filter(|record| record.epoch >= local.get(record.origin.as_str()).map_or(0, |here| here.epoch))
        .map(|record| record.origin.as_str())
        .collect()
}

/// Session records by their origin.
fn by_origin(records: &[OriginEpoch]) -> HashMap<&str, &OriginEpoch> {
    records.iter().map(|record| (record.origin.as_str(), record)).collect()
}

/// The origin a change is about.
pub fn origin_of(change: &Change) -> Option<&str> {
    match change.change.as_ref()? {
        change::Change::Upsert(replica) => Some(replica.key.as_ref()?.origin.as_str()),
        change::Change::Tombstone(key) => Some(key.origin.as_str()),
        change::Change::Epoch(epoch) => Some(epoch.origin.as_str()),
    }
}

/// The announcements that bring the parent up to this cache's sessions: every local
/// record newer than the parent's record of its origin (or that the parent lacks), as not
/// settled yet; they go before the repairs, so that the parent takes the origins back
/// before it judges their replicas. [`settlements`] go after the repairs.
pub fn announcements(parent: &[OriginEpoch], local: &[OriginEpoch]) -> Vec<Change> {
    let parent = by_origin(parent);
    local
        .iter()
        .filter(|record| record.epoch > parent.get(record.origin.as_str()).map_or(0, |held| held.epoch))
        .map(|record| announcement(&record.origin, record.epoch, false))
        .collect()
}

/// The announcements that this cache (`me`) settled its origins' sessions, for every
/// settled local record the parent does not know settled through this cache (after
/// [`announcements`] and the repairs, the parent then holds the whole state too).
pub fn settlements(parent: &[OriginEpoch], local: &[OriginEpoch], me: &str) -> Vec<Change> {
    let parent = by_origin(parent);
    local
        .iter()
        .filter(|record| record.settled)
        .filter(|record| match parent.get(record.origin.as_str()) {
            None => true,
            Some(held) if held.epoch < record.epoch => true,
            Some(held) => held.epoch == record.epoch && held.via == me && !held.settled,
        })
        .map(|record| announcement(&record.origin, record.epoch, true))
        .collect()
}

/// The origins whose sessions this cache has not settled: what it holds of them may be an
/// older session's leftovers, so it repairs nothing of them at the parent.
pub fn unsettled(local: &[OriginEpoch]) -> BTreeSet<&str> {
    local.iter().filter(|record| !record.settled).map(|record| record.origin.as_str()).collect()
}

/// The origins this cache (`me`) speaks for at the parent: it settled their newest
/// session, and the parent names it their relay for that session. Every replica of them
/// the parent holds and this cache does not is gone at the origin, whichever cache relayed
/// it (a relay of an older session that lost its parent before it relayed the deletion).
pub fn relayed_here<'a>(parent: &[OriginEpoch], local: &'a [OriginEpoch], me: &str) -> BTreeSet<&'a str> {
    let parent = by_origin(parent);
    local
        .iter()
        .filter(|record| record.settled)
        .filter(|record| {
            parent.get(record.origin.as_str()).is_some_and(|held| held.via == me && held.epoch == record.epoch)
        })
        .map(|record| record.origin.as_str())
        .collect()
}

/// The change announcing session `epoch` of `origin` (`settled`: this relay holds its
/// whole state).
pub fn announcement(origin: &str, epoch: u64, settled: bool) -> Change {
    let epoch = OriginEpoch { origin: origin.to_owned(), epoch, via: String::new(), settled };
    Change { change: Some(change::Change::Epoch(epoch)), force: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(origin: &str, epoch: u64, via: &str) -> OriginEpoch {
        OriginEpoch { origin: origin.into(), epoch, via: via.into(), settled: true }
    }

    fn unsettled_record(origin: &str, epoch: u64, via: &str) -> OriginEpoch {
        OriginEpoch { settled: false, ..record(origin, epoch, via) }
    }

    #[test]
    fn only_the_newest_relay_and_the_origin_change_replicas() {
        let b = record("s1", 7, "cache-b");
        let cases = [
            ("no record: nothing is fenced", None, "cache-a", "s1", false),
            ("the newest relay", Some(&b), "cache-b", "s1", false),
            ("a relay of an older session", Some(&b), "cache-a", "s1", true),
            ("an operator under another name", Some(&b), "admin", "s1", true),
            ("the origin itself", Some(&b), "s1", "s1", false),
            ("another origin's record says nothing", None, "cache-a", "s2", false),
        ];
        for (name, record, sender, origin, expected) in cases {
            assert_eq!(fenced(record, sender, origin), expected, "{name}");
        }
    }

    #[test]
    fn only_a_newer_session_moves_the_relay() {
        let held = unsettled_record("s1", 7, "cache-a");
        let cases = [
            ("first session", None, 3, false, "cache-a", Some(unsettled_record("s1", 3, "cache-a"))),
            (
                "newer, through another relay",
                Some(&held),
                9,
                false,
                "cache-b",
                Some(unsettled_record("s1", 9, "cache-b")),
            ),
            ("newer, same relay, settled", Some(&held), 8, true, "cache-a", Some(record("s1", 8, "cache-a"))),
            (
                "the same session, settled by its relay",
                Some(&held),
                7,
                true,
                "cache-a",
                Some(record("s1", 7, "cache-a")),
            ),
            ("the same session, settled by another", Some(&held), 7, true, "cache-b", None),
            ("the same session again, not settled", Some(&held), 7, false, "cache-a", None),
            ("an older session relayed late", Some(&held), 5, true, "cache-b", None),
            ("no session (an older sender)", None, 0, true, "s1", None),
        ];
        for (name, record, epoch, settled, via, expected) in cases {
            assert_eq!(announce(record, "s1", epoch, settled, via), expected, "{name}");
        }
        let settled = record("s1", 7, "cache-a");
        assert_eq!(announce(Some(&settled), "s1", 7, false, "cache-a"), None, "settled stays settled");
    }

    #[test]
    fn a_cache_drops_an_origin_the_parent_says_moved_on() {
        let parent = [record("s1", 9, "cache-b"), record("s2", 4, "cache-a"), record("s3", 5, "cache-b")];
        let held = BTreeSet::from(["s1", "s2"]);
        let origins = |moved: Vec<OriginEpoch>| moved.into_iter().map(|r| r.origin).collect::<Vec<_>>();
        // s1 moved to cache-b after the session this cache knew; s2 is relayed by this
        // cache; s3 is not held here.
        assert_eq!(origins(moved_on(&parent, &[record("s1", 7, "s1")], &held, "cache-a")), ["s1"]);
        assert_eq!(origins(moved_on(&parent, &[], &held, "cache-a")), ["s1"], "no record here: the parent decides");
        // The shard came back here with a newer session than the parent knows yet.
        assert!(moved_on(&parent, &[record("s1", 11, "s1")], &held, "cache-a").is_empty());
        // The same session: the parent's record is this cache's relay of it.
        assert!(moved_on(&parent, &[record("s1", 9, "s1")], &held, "cache-a").is_empty());
        assert!(moved_on(&parent, &[], &BTreeSet::new(), "cache-a").is_empty(), "nothing held, nothing to drop");
    }

    #[test]
    fn the_parent_fences_origins_another_relay_holds() {
        let parent = [record("s1", 9, "cache-b"), record("s2", 4, "cache-a"), record("s3", 5, "cache-b")];
        let local = [record("s1", 7, "s1"), record("s3", 6, "s3")];
        let fenced: Vec<&str> = fenced_at_parent(&parent, &local, "cache-a").into_iter().collect();
        // s2 is relayed by this cache; s3 came back here in a newer session.
        assert_eq!(fenced, ["s1"]);
        let fenced: Vec<&str> = fenced_at_parent(&parent, &[], "cache-a").into_iter().collect();
        assert_eq!(fenced, ["s1", "s3"]);
    }

    fn announced(changes: Vec<Change>) -> Vec<(String, u64, bool)> {
        changes
            .into_iter()
            .map(|change| match change.change {
                Some(change::Change::Epoch(epoch)) => (epoch.origin, epoch.epoch, epoch.settled),
                other => panic!("not an announcement: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn announcements_bring_the_parent_up_to_date() {
        let parent = [record("s1", 9, "cache-b"), record("s2", 4, "cache-a")];
        let local = [record("s1", 7, "s1"), record("s2", 6, "s2"), record("s3", 2, "s3")];
        assert_eq!(
            announced(announcements(&parent, &local)),
            [("s2".to_string(), 6, false), ("s3".to_string(), 2, false)],
            "an older session is not announced, and newer ones go first as not settled"
        );
    }

    #[test]
    fn settlements_follow_the_repairs() {
        let parent = [
            record("s1", 9, "cache-b"),
            unsettled_record("s2", 6, "cache-a"),
            record("s4", 3, "cache-a"),
            unsettled_record("s5", 5, "cache-a"),
        ];
        let local = [
            record("s1", 7, "s1"),
            record("s2", 6, "s2"),
            record("s3", 2, "s3"),
            record("s4", 3, "s4"),
            unsettled_record("s5", 5, "s5"),
        ];
        // s1 moved on; s4 is settled at the parent already; s5 is not settled here.
        assert_eq!(
            announced(settlements(&parent, &local, "cache-a")),
            [("s2".to_string(), 6, true), ("s3".to_string(), 2, true)]
        );
    }

    #[test]
    fn a_cache_speaks_for_the_settled_origins_it_relays() {
        let parent = [record("s1", 9, "cache-b"), record("s2", 6, "cache-a"), record("s3", 2, "cache-a")];
        let local =
            [record("s1", 9, "s1"), record("s2", 6, "s2"), unsettled_record("s3", 2, "s3"), record("s4", 1, "s4")];
        // s1's session is relayed by cache-b at the parent; s3 is not settled here; the
        // parent does not know s4's session yet.
        assert_eq!(relayed_here(&parent, &local, "cache-a").into_iter().collect::<Vec<_>>(), ["s2"]);
        assert_eq!(unsettled(&local).into_iter().collect::<Vec<_>>(), ["s3"]);
    }
}
