//! The cache convergence checker: after healing, every cache in the hierarchy holds
//! exactly the replicated objects of every live shard, at the source's
//! resourceVersion, and nothing of a deleted object or of a shard that is gone. It judges
//! the replicas each cache listed against the sources the shards listed, both read once
//! the faults stopped and a bounded wait for convergence was over.
//!
//! - **missing**: a source object has no replica in a cache;
//! - **stale**: a replica's UID or source resourceVersion is not the source's (an older
//!   version, or an older object of the same name);
//! - **resurrected**: a cache holds a replica of an object whose delete was acknowledged
//!   and that its shard no longer has (a tombstone lost or overtaken);
//! - **removed-shard**: a cache holds a replica whose origin is not a live shard;
//! - **not-on-source**: a cache holds a replica its live shard does not have, of an
//!   object nobody saw deleted.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{CacheRecord, History, ReplicaRecord};

use super::Violation;

const CHECKER: &str = "cache";

/// How many violations one cache reports in full; a cache that missed everything does
/// not need a thousand lines to say so.
pub const VIOLATIONS_PER_CACHE_MAX: usize = 20;

/// Judges every cache of `history` against the sources.
pub fn check(history: &History) -> Vec<Violation> {
    let Some(replication) = &history.replication else { return Vec::new() };
    let sources: BTreeMap<&str, &ReplicaRecord> = replication.sources.iter().map(|s| (s.id.as_str(), s)).collect();
    let deleted: BTreeSet<&str> = replication.deleted.iter().map(String::as_str).collect();
    let origins: BTreeSet<&str> = replication.live_shards.iter().map(String::as_str).collect();
    let mut violations = Vec::new();
    for cache in &replication.caches {
        let mut found = cache_violations(cache, &sources, &deleted, &origins);
        if found.len() > VIOLATIONS_PER_CACHE_MAX {
            let more = found.len() - VIOLATIONS_PER_CACHE_MAX;
            found.truncate(VIOLATIONS_PER_CACHE_MAX);
            found.push(Violation::new(CHECKER, "more", format!("cache {}: {more} more violations", cache.cache)));
        }
        violations.extend(found);
    }
    violations
}

fn cache_violations(
    cache: &CacheRecord,
    sources: &BTreeMap<&str, &ReplicaRecord>,
    deleted: &BTreeSet<&str>,
    origins: &BTreeSet<&str>,
) -> Vec<Violation> {
    let name = &cache.cache;
    let mut violations = Vec::new();
    let mut replicas: BTreeMap<&str, &ReplicaRecord> = BTreeMap::new();
    for replica in &cache.replicas {
        replicas.insert(replica.id.as_str(), replica);
    }
    for (id, source) in sources {
        match replicas.get(id) {
            None => violations.push(Violation::new(CHECKER, "missing", format!("cache {name}: no replica of {id}"))),
            Some(replica) if replica.uid != source.uid || replica.source_rv != source.source_rv => {
                violations.push(Violation::new(
                    CHECKER,
                    "stale",
                    format!(
                        "cache {name}: {id} is uid {} at source rv {}, the shard has uid {} at rv {}",
                        replica.uid, replica.source_rv, source.uid, source.source_rv
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    for (id, replica) in replicas.iter().filter(|(id, _)| !sources.contains_key(*id)) {
        let origin = id.split('/').next().unwrap_or_default();
        let guarantee = if !origins.contains(origin) {
            "removed-shard"
        } else if deleted.contains(id) {
            "resurrected"
        } else {
            "not-on-source"
        };
        violations.push(Violation::new(
            CHECKER,
            guarantee,
            format!(
                "cache {name}: holds {id} (uid {}, source rv {}), which its shard does not",
                replica.uid, replica.source_rv
            ),
        ));
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ReplicationRecord;

    fn replica(id: &str, uid: &str, source_rv: u64) -> ReplicaRecord {
        ReplicaRecord { id: id.to_string(), uid: uid.to_string(), source_rv }
    }

    const A: &str = "root/c0/rbac.authorization.k8s.io/clusterroles/a";
    const B: &str = "shard-1/c1/rbac.authorization.k8s.io/clusterroles/b";
    const GONE: &str = "shard-1/c1/rbac.authorization.k8s.io/clusterroles/gone";

    /// Sources a@5 (root) and b@7 (shard-1); `gone` was deleted; two caches holding what
    /// `regional` and `parent` say.
    fn history(regional: Vec<ReplicaRecord>, parent: Vec<ReplicaRecord>) -> History {
        let replication = ReplicationRecord {
            live_shards: vec!["root".to_string(), "shard-1".to_string()],
            sources: vec![replica(A, "ua", 5), replica(B, "ub", 7)],
            deleted: vec![GONE.to_string()],
            caches: vec![
                CacheRecord { cache: "cache-r".to_string(), replicas: regional },
                CacheRecord { cache: "cache-p".to_string(), replicas: parent },
            ],
        };
        History { replication: Some(replication), ..History::default() }
    }

    fn exact() -> Vec<ReplicaRecord> {
        vec![replica(A, "ua", 5), replica(B, "ub", 7)]
    }

    fn guarantees(history: &History) -> Vec<String> {
        check(history).into_iter().map(|v| v.guarantee).collect()
    }

    #[test]
    fn caches_equal_to_the_sources_pass() {
        assert_eq!(guarantees(&history(exact(), exact())), Vec::<String>::new());
        assert_eq!(guarantees(&History::default()), Vec::<String>::new());
    }

    #[test]
    fn catches_a_missing_replica() {
        let found = check(&history(exact(), vec![replica(A, "ua", 5)]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].guarantee, "missing");
        assert!(found[0].detail.contains("cache-p") && found[0].detail.contains(B), "{found:?}");
    }

    #[test]
    fn catches_a_stale_version_and_an_older_object_of_the_same_name() {
        assert_eq!(guarantees(&history(vec![replica(A, "ua", 4), replica(B, "ub", 7)], exact())), ["stale"]);
        assert_eq!(guarantees(&history(exact(), vec![replica(A, "ua", 5), replica(B, "old", 7)])), ["stale"]);
    }

    #[test]
    fn catches_a_resurrected_deleted_object() {
        let mut parent = exact();
        parent.push(replica(GONE, "ug", 3));
        assert_eq!(guarantees(&history(exact(), parent)), ["resurrected"]);
    }

    #[test]
    fn catches_a_replica_of_a_removed_shard_and_one_nobody_deleted() {
        let mut regional = exact();
        regional.push(replica("shard-9/c9/core.kcp.io/shards/shard-9", "u9", 1));
        assert_eq!(guarantees(&history(regional, exact())), ["removed-shard"]);
        let mut parent = exact();
        parent.push(replica("root/c0/rbac.authorization.k8s.io/clusterroles/never", "un", 2));
        assert_eq!(guarantees(&history(exact(), parent)), ["not-on-source"]);
    }

    #[test]
    fn a_cache_that_missed_everything_is_summarized() {
        let many: Vec<ReplicaRecord> =
            (0..50).map(|i| replica(&format!("root/c0/rbac.authorization.k8s.io/clusterroles/x{i}"), "u", 1)).collect();
        let mut h = history(exact(), exact());
        h.replication.as_mut().unwrap().caches[0].replicas.extend(many);
        let found = check(&h);
        assert_eq!(found.len(), VIOLATIONS_PER_CACHE_MAX + 1);
        assert_eq!(found.last().unwrap().guarantee, "more");
    }
}
