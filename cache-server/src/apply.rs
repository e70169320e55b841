//! The replication rules, without I/O: which incoming changes are acceptable, and what
//! each does to the replica the cache holds.
//!
//! - An upsert is written when the cache holds nothing for its key, holds an older
//!   `source_rv`, or the change is forced (a repair); a replay of what is already held
//!   (same `source_rv`, same bytes) writes nothing, so resending after a reconnect is
//!   free and emits no watch event.
//! - A tombstone deletes the replica when there is one, and (unless forced: an admin's
//!   repair, not a deletion on the origin) the cache remembers the deletion for a bounded
//!   time: the deleted replica's `source_rv` and the tombstone's sender
//!   ([`remembered_deletion`]). An upsert at or below a remembered deletion from another
//!   sender is refused, forced or not: it is a copy from before the deletion, relayed late
//!   (say by a cache the origin failed over from), and writing it would resurrect a deleted
//!   object. A recreated object has a later `source_rv`; and the sender of the tombstone
//!   itself sends in order, so its own later upsert is its newer word (a child cache whose
//!   replica an operator deleted and its origin restored) and is decided as usual.
//! - A change of an origin from a sender that does not relay the origin's newest
//!   replication session is skipped ([`crate::fence`]); a session announcement moves the
//!   relay only forward.
//! - Deleting the replica of a Shard (`core.kcp.io/shards`) also purges every replica
//!   whose origin is that shard ([`Validated::purges_origin`]).

use crate::authz::{self, Origins};
use bytes::Bytes;
use prost::Message;
use protocol::cache::{change, Change, Replica, ReplicaKey};
use protocol::replication;
use protocol::types::{CORE_KCP_GROUP, SHARD_RESOURCE};

/// What to do with one change given what the cache holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Store the incoming replica.
    Write,
    /// Remove the held replica.
    Delete,
    /// Leave the cache as it is.
    Skip(Skip),
}

/// Why a change writes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// The cache already holds exactly this replica.
    Unchanged,
    /// The cache holds a later (or the same, with other bytes) version of the object.
    Stale {
        /// `source_rv` of the held replica.
        held: u64,
        /// `source_rv` of the change.
        incoming: u64,
    },
    /// A tombstone for a replica the cache does not hold.
    Absent,
    /// A change of an origin from a sender that no longer relays its newest replication
    /// session here ([`crate::fence::fenced`]).
    Fenced,
    /// A session announcement at or below the session already recorded for its origin.
    OldSession {
        /// The session recorded.
        held: u64,
        /// The session announced.
        incoming: u64,
    },
    /// An upsert of an object the cache saw deleted at or after its version.
    Deleted {
        /// `source_rv` of the replica whose deletion the cache remembers.
        deleted: u64,
        /// `source_rv` of the change.
        incoming: u64,
    },
}

/// The replica the cache holds for a key, as far as the rules need it.
#[derive(Debug, Clone, Copy)]
pub struct Held<'a> {
    /// Its `source_rv`.
    pub source_rv: u64,
    /// Its stored bytes.
    pub bytes: &'a [u8],
}

/// A deletion the cache remembers for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remembered<'a> {
    /// `source_rv` of the replica deleted.
    pub source_rv: u64,
    /// Who sent the tombstone.
    pub sender: &'a str,
}

/// Decides an upsert of `incoming` (the encoded replica, with `incoming_rv`, from
/// `sender`), given the replica held and the deletion of the key the cache remembers.
pub fn decide_upsert(
    held: Option<Held<'_>>,
    deleted: Option<Remembered<'_>>,
    sender: &str,
    incoming_rv: u64,
    incoming: &[u8],
    force: bool,
) -> Decision {
    if let Some(deleted) = deleted.filter(|deleted| deleted.sender != sender && incoming_rv <= deleted.source_rv) {
        return Decision::Skip(Skip::Deleted { deleted: deleted.source_rv, incoming: incoming_rv });
    }
    let Some(held) = held else { return Decision::Write };
    if held.bytes == incoming {
        return Decision::Skip(Skip::Unchanged);
    }
    if force || held.source_rv < incoming_rv {
        return Decision::Write;
    }
    Decision::Skip(Skip::Stale { held: held.source_rv, incoming: incoming_rv })
}

/// Decides a tombstone.
pub fn decide_tombstone(held: bool) -> Decision {
    if held {
        Decision::Delete
    } else {
        Decision::Skip(Skip::Absent)
    }
}

/// The deletion to remember when a tombstone arrives, given the `source_rv` of the held
/// replica (`None`: nothing held) and the deletion already remembered; `None` when nothing
/// new is to be remembered. A forced tombstone (an admin's repair) is no deletion on the
/// origin and leaves nothing behind, so the replica's sender may restore it.
pub fn remembered_deletion(held_rv: Option<u64>, remembered: Option<u64>, force: bool) -> Option<u64> {
    if force {
        return None;
    }
    let held_rv = held_rv?;
    match remembered {
        Some(remembered) if remembered >= held_rv => None,
        _ => Some(held_rv),
    }
}

/// A change that passed validation and authorization, with its store key.
#[derive(Debug, Clone, PartialEq)]
pub enum Validated {
    /// Store `replica` (its `sender` already set to the authenticated sender).
    Upsert {
        /// `replication::replica_key` of the replica.
        store_key: String,
        /// The replica as it will be stored.
        replica: Replica,
        /// Its prost encoding, the stored value.
        encoded: Bytes,
        /// Apply even over a later version.
        force: bool,
    },
    /// Remove the replica of `key`.
    Tombstone {
        /// `replication::replica_key` of `key`.
        store_key: String,
        /// The replica's key.
        key: ReplicaKey,
        /// A repair: delete without remembering the deletion.
        force: bool,
        /// The authenticated sender.
        sender: String,
    },
    /// The sender now relays session `epoch` of `origin`.
    Epoch {
        /// `fence::epoch_key` of the origin.
        store_key: String,
        /// The origin shard.
        origin: String,
        /// Its session.
        epoch: u64,
        /// Whether the relay holds the origin's whole state of the session.
        settled: bool,
        /// The authenticated sender (the relay).
        sender: String,
    },
}

impl Validated {
    /// The store key the change is about.
    pub fn store_key(&self) -> &str {
        match self {
            Validated::Upsert { store_key, .. }
            | Validated::Tombstone { store_key, .. }
            | Validated::Epoch { store_key, .. } => store_key,
        }
    }

    /// The origin shard and the sender of a change to replicas (not of an announcement),
    /// for fencing.
    pub fn origin_and_sender(&self) -> Option<(&str, &str)> {
        match self {
            Validated::Upsert { replica, .. } => Some((replica.key.as_ref()?.origin.as_str(), &replica.sender)),
            Validated::Tombstone { key, sender, .. } => Some((&key.origin, sender)),
            Validated::Epoch { .. } => None,
        }
    }

    /// The shard whose replicas go when this change deletes its Shard replica.
    pub fn purges_origin(&self) -> Option<&str> {
        match self {
            Validated::Tombstone { key, .. } if is_shard_replica(key) => Some(&key.name),
            _ => None,
        }
    }
}

/// Whether `key` is the replica of a Shard object.
pub fn is_shard_replica(key: &ReplicaKey) -> bool {
    key.group == CORE_KCP_GROUP && key.resource == SHARD_RESOURCE
}

/// Why a change was refused; each ends the replication stream with the matching status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejected {
    /// Malformed: gRPC INVALID_ARGUMENT.
    Invalid(String),
    /// Not this sender's to write: gRPC PERMISSION_DENIED.
    Denied(String),
}

/// Checks one incoming change and prepares it for the store: the key is well formed, the
/// object is JSON, the sender may write its origin; `sender` is stamped on upserts.
pub fn validate(change: Change, sender: &str, origins: &Origins) -> Result<Validated, Rejected> {
    let force = change.force;
    match change.change {
        None => Err(Rejected::Invalid("a change must be an upsert or a tombstone; this one is neither".to_owned())),
        Some(change::Change::Upsert(mut replica)) => {
            let key = replica
                .key
                .clone()
                .ok_or_else(|| Rejected::Invalid(format!("an upsert (uid {:?}) has no replica key", replica.uid)))?;
            let store_key = checked_key(&key, sender, origins)?;
            if serde_json::from_slice::<serde::de::IgnoredAny>(&replica.object).is_err() {
                return Err(Rejected::Invalid(format!("replica {}: object is not JSON", describe(&key))));
            }
            replica.sender = sender.to_owned();
            let encoded = Bytes::from(replica.encode_to_vec());
            Ok(Validated::Upsert { store_key, replica, encoded, force })
        }
        Some(change::Change::Tombstone(key)) => {
            let store_key = checked_key(&key, sender, origins)?;
            Ok(Validated::Tombstone { store_key, key, force, sender: sender.to_owned() })
        }
        Some(change::Change::Epoch(epoch)) => {
            if epoch.origin.is_empty() || epoch.origin.contains('/') || epoch.epoch == 0 {
                return Err(Rejected::Invalid(format!(
                    "a session announcement needs an origin without '/' and an epoch above 0: {epoch:?}"
                )));
            }
            authz::authorize_origin(origins, sender, &epoch.origin)
                .map_err(|why| Rejected::Denied(format!("session of {}: {why}", epoch.origin)))?;
            let store_key = crate::fence::epoch_key(&epoch.origin);
            Ok(Validated::Epoch {
                store_key,
                origin: epoch.origin,
                epoch: epoch.epoch,
                settled: epoch.settled,
                sender: sender.to_owned(),
            })
        }
    }
}

fn checked_key(key: &ReplicaKey, sender: &str, origins: &Origins) -> Result<String, Rejected> {
    replication::check_key(key).map_err(|why| Rejected::Invalid(format!("replica {}: {why}", describe(key))))?;
    authz::authorize_origin(origins, sender, &key.origin)
        .map_err(|why| Rejected::Denied(format!("replica {}: {why}", describe(key))))?;
    Ok(replication::replica_key(key))
}

/// A replica key as people read it: `group/resource origin/cluster/namespace/name`.
pub fn describe(key: &ReplicaKey) -> String {
    let group = if key.group.is_empty() { "core" } else { &key.group };
    let namespace = if key.namespace.is_empty() { "-" } else { &key.namespace };
    format!("{group}/{} {}/{}/{namespace}/{}", key.resource, key.origin, key.cluster, key.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(origin: &str, group: &str, resource: &str, name: &str) -> ReplicaKey {
        ReplicaKey {
            origin: origin.into(),
            cluster: "c1".into(),
            group: group.into(),
            resource: resource.into(),
            namespace: String::new(),
            name: name.into(),
        }
    }

    fn upsert(key: ReplicaKey, object: &str) -> Change {
        let replica =
            Replica { key: Some(key), uid: "u".into(), source_rv: 3, object: object.into(), sender: "forged".into() };
        Change { change: Some(change::Change::Upsert(replica)), force: false }
    }

    #[test]
    fn upserts_follow_the_source_resource_version() {
        let held = |source_rv, bytes: &'static [u8]| Some(Held { source_rv, bytes });
        let cases = [
            ("absent", None, 5, &b"a"[..], false, Decision::Write),
            ("newer", held(4, b"a"), 5, b"b", false, Decision::Write),
            ("replay", held(5, b"b"), 5, b"b", false, Decision::Skip(Skip::Unchanged)),
            (
                "same rv, other bytes",
                held(5, b"a"),
                5,
                b"b",
                false,
                Decision::Skip(Skip::Stale { held: 5, incoming: 5 }),
            ),
            ("older", held(6, b"a"), 5, b"b", false, Decision::Skip(Skip::Stale { held: 6, incoming: 5 })),
            ("forced older", held(6, b"a"), 5, b"b", true, Decision::Write),
            ("forced replay", held(5, b"b"), 5, b"b", true, Decision::Skip(Skip::Unchanged)),
        ];
        for (name, held, incoming_rv, incoming, force, expected) in cases {
            assert_eq!(decide_upsert(held, None, "s1", incoming_rv, incoming, force), expected, "{name}");
        }
        assert_eq!(decide_tombstone(true), Decision::Delete);
        assert_eq!(decide_tombstone(false), Decision::Skip(Skip::Absent));
    }

    #[test]
    fn remembered_deletions_refuse_older_copies() {
        let held = |source_rv, bytes: &'static [u8]| Some(Held { source_rv, bytes });
        let deleted = |incoming| Decision::Skip(Skip::Deleted { deleted: 5, incoming });
        let cases = [
            ("late copy of the deleted version", None, 5, false, deleted(5)),
            ("older copy", None, 3, false, deleted(3)),
            ("forced late copy (a child's repair)", None, 5, true, deleted(5)),
            ("recreated later", None, 6, false, Decision::Write),
            ("held recreation, late copy", held(7, b"a"), 4, true, deleted(4)),
            ("held recreation, newer", held(7, b"a"), 8, false, Decision::Write),
            ("held recreation, replay", held(7, b"a"), 7, false, Decision::Skip(Skip::Unchanged)),
        ];
        for (name, held, incoming_rv, force, expected) in cases {
            let incoming: &[u8] = if incoming_rv == 7 { b"a" } else { b"b" };
            let remembered = Some(Remembered { source_rv: 5, sender: "cache-b" });
            assert_eq!(decide_upsert(held, remembered, "cache-a", incoming_rv, incoming, force), expected, "{name}");
        }
        // The tombstone's own sender is decided as usual: its later word.
        let own = Some(Remembered { source_rv: 5, sender: "cache-a" });
        assert_eq!(decide_upsert(None, own, "cache-a", 5, b"b", false), Decision::Write);
        assert_eq!(
            decide_upsert(held(7, b"a"), own, "cache-a", 5, b"b", false),
            Decision::Skip(Skip::Stale { held: 7, incoming: 5 })
        );

        assert_eq!(remembered_deletion(Some(5), None, false), Some(5), "a deletion is remembered");
        assert_eq!(remembered_deletion(Some(5), Some(3), false), Some(5), "a later deletion replaces");
        assert_eq!(remembered_deletion(Some(5), Some(5), false), None, "already remembered");
        assert_eq!(remembered_deletion(Some(5), Some(9), false), None, "a later one is kept");
        assert_eq!(remembered_deletion(None, None, false), None, "nothing held, no version to remember");
        assert_eq!(remembered_deletion(Some(5), None, true), None, "a forced repair leaves nothing");
    }

    #[test]
    fn session_announcements_are_validated_and_authorized() {
        let announce = |origin: &str, epoch| {
            let epoch =
                protocol::cache::OriginEpoch { origin: origin.into(), epoch, via: "forged".into(), settled: true };
            Change { change: Some(change::Change::Epoch(epoch)), force: false }
        };
        let valid = validate(announce("s1", 7), "cache-a", &Origins::Any).expect("a cache relays any origin");
        assert_eq!(
            valid,
            Validated::Epoch {
                store_key: "o/s1".into(),
                origin: "s1".into(),
                epoch: 7,
                settled: true,
                sender: "cache-a".into()
            },
            "the relay is the stream's sender, whatever the change says"
        );
        assert_eq!(valid.origin_and_sender(), None);
        let own = Origins::Only("s1".into());
        assert!(matches!(validate(announce("s2", 7), "s1", &own), Err(Rejected::Denied(_))));
        assert!(matches!(validate(announce("s1", 0), "cache-a", &Origins::Any), Err(Rejected::Invalid(_))));
        assert!(matches!(validate(announce("a/b", 1), "cache-a", &Origins::Any), Err(Rejected::Invalid(_))));
    }

    #[test]
    fn validation_stamps_the_sender_and_refuses_bad_changes() {
        let own = Origins::Only("s1".into());
        let valid = validate(upsert(key("s1", "apis.kcp.io", "apiexports", "e"), "{}"), "s1", &own).expect("valid");
        let Validated::Upsert { store_key, replica, encoded, force } = &valid else { panic!("{valid:?}") };
        assert_eq!(store_key, "r/apis.kcp.io/apiexports/s1/c1//e");
        assert_eq!(replica.sender, "s1");
        assert_eq!(Replica::decode(encoded.as_ref()).expect("decode"), *replica);
        assert!(!force);
        assert_eq!(valid.purges_origin(), None);

        let cases: Vec<(Change, Rejected)> = vec![
            (
                upsert(key("s2", "apis.kcp.io", "apiexports", "e"), "{}"),
                Rejected::Denied(
                    r#"replica apis.kcp.io/apiexports s2/c1/-/e: sender "s1" may only replicate objects of its own shard "s1", not of origin "s2""#
                        .into(),
                ),
            ),
            (
                upsert(key("s1", "", "configmaps", "x"), "not json"),
                Rejected::Invalid("replica core/configmaps s1/c1/-/x: object is not JSON".into()),
            ),
            (
                upsert(key("s1", "", "configmaps", "a/b"), "{}"),
                Rejected::Invalid(format!(
                    "replica core/configmaps s1/c1/-/a/b: {}",
                    replication::check_key(&key("s1", "", "configmaps", "a/b")).expect_err("slash")
                )),
            ),
            (
                Change { change: None, force: true },
                Rejected::Invalid("a change must be an upsert or a tombstone; this one is neither".into()),
            ),
            (
                Change {
                    change: Some(change::Change::Upsert(Replica { uid: "u9".into(), ..Replica::default() })),
                    force: false,
                },
                Rejected::Invalid(r#"an upsert (uid "u9") has no replica key"#.into()),
            ),
        ];
        for (change, expected) in cases {
            assert_eq!(validate(change, "s1", &own), Err(expected));
        }
    }

    #[test]
    fn deleting_a_shard_replica_purges_its_origin() {
        let shard = key("root", CORE_KCP_GROUP, SHARD_RESOURCE, "s7");
        let tombstone = Change { change: Some(change::Change::Tombstone(shard.clone())), force: false };
        let validated = validate(tombstone, "root", &Origins::Any).expect("valid");
        assert_eq!(validated.purges_origin(), Some("s7"));
        assert_eq!(validated.store_key(), "r/core.kcp.io/shards/root/c1//s7");
        let update = validate(upsert(shard, "{}"), "root", &Origins::Any).expect("valid");
        assert_eq!(update.purges_origin(), None);
    }
}
