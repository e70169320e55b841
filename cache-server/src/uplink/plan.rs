//! The uplink's decision without I/O: what makes the parent equal to this cache (where to
//! resume is [`protocol::watcher::start`], batching is the shared sender's).

use protocol::cache::{change, Change, Replica};
use protocol::replication::replica_key;
use std::collections::{BTreeSet, HashMap};

/// What makes the parent equal to this cache, given `parent` (everything the parent holds,
/// from every sender) and `local` (everything held here), for the sender `me`:
/// - a local replica the parent lacks is upserted;
/// - one the parent holds differently is forced back, unless another sender relayed a
///   later source version of it (the origin moved to a sibling cache, so this copy is the
///   stale one, and forcing it would make siblings overwrite each other every repair);
/// - a parent replica that this cache does not hold gets a tombstone when `me` relayed it,
///   or when its origin is one this cache speaks for (`owned`: it relays the origin's
///   newest session and holds its whole state, [`crate::fence::relayed_here`]), whoever
///   relayed it.
pub fn repairs(parent: &[Replica], local: &[Replica], me: &str, owned: &BTreeSet<&str>) -> Vec<Change> {
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
    for replica in parent {
        let Some(key) = replica.key.as_ref() else { continue };
        if replica.sender != me && !owned.contains(key.origin.as_str()) {
            continue;
        }
        if !local_keys.contains(&replica_key(key)) {
            changes.push(Change { change: Some(change::Change::Tombstone(key.clone())), force: false });
        }
    }
    changes
}

fn same_content(a: &Replica, b: &Replica) -> bool {
    a.key == b.key && a.uid == b.uid && a.source_rv == b.source_rv && a.object == b.object
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
                Some(change::Change::Epoch(e)) => format!("epoch {} {}", e.origin, e.epoch),
                None => "none".into(),
            })
            .collect()
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
            summary(&repairs(&parent, &local, "child", &BTreeSet::new())),
            ["upsert stale @2 force=true", "upsert missing @4 force=false", "tombstone extra"],
            "what another sender relayed is not this cache's to delete"
        );
        assert!(repairs(&local, &local, "s1", &BTreeSet::new()).is_empty());
        assert_eq!(summary(&repairs(&[], &local[..1], "child", &BTreeSet::new())), ["upsert same @1 force=false"]);
        // Tampered with at the parent, under this sender: forced back, even to an older version.
        let tampered = [replica("same", 9, "child")];
        assert_eq!(summary(&repairs(&tampered, &local[..1], "child", &BTreeSet::new())), ["upsert same @1 force=true"]);
        // Altered by someone else at the same version: forced back.
        let altered = Replica { object: b"{}".to_vec(), ..replica("same", 1, "admin") };
        assert_eq!(
            summary(&repairs(&[altered], &local[..1], "child", &BTreeSet::new())),
            ["upsert same @1 force=true"]
        );
        // A sibling relayed a later version: this copy is stale and is left alone.
        assert!(repairs(&[replica("same", 5, "sibling")], &local[..1], "child", &BTreeSet::new()).is_empty());
    }

    #[test]
    fn the_settled_relay_deletes_what_an_older_relay_left_behind() {
        // A sibling relayed "left" in an older session of s1 and lost its parent before it
        // relayed the deletion; this cache holds s1's whole newest session.
        let parent = vec![replica("left", 3, "sibling"), replica("same", 1, "sibling")];
        let local = vec![replica("same", 1, "child")];
        assert!(repairs(&parent, &local, "child", &BTreeSet::new()).is_empty(), "not this cache's to judge");
        assert_eq!(summary(&repairs(&parent, &local, "child", &BTreeSet::from(["s1"]))), ["tombstone left"]);
    }
}
