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
//!   object nobody saw deleted;
//! - **stalled**: a write never reached the healthy cache of a shard whose other cache
//!   accepted connections and never answered (the shard must not wait on it forever).
//!
//! A cache whose record names the origins it is judged for (a regional cache, judged for
//! the shards replicating to it at the end) is judged for those only; copies of another
//! live shard's objects in it were left behind when that shard failed over, and are
//! counted ([`left_behind`]), not judged.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{CacheRecord, History, ReplicaRecord, ReplicationRecord};

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
    for silent in replication.silent_failovers.iter().filter(|s| !s.delivered) {
        violations.push(Violation::new(
            CHECKER,
            "stalled",
            format!(
                "{} never reached {}: its shard kept waiting on {}, which accepted connections and never answered",
                silent.id, silent.healthy_cache, silent.silent_cache
            ),
        ));
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
    for replica in
        cache.replicas.iter().filter(|r| in_scope(cache, origin_of(&r.id)) || !origins.contains(origin_of(&r.id)))
    {
        replicas.insert(replica.id.as_str(), replica);
    }
    for (id, source) in sources.iter().filter(|(id, _)| in_scope(cache, origin_of(id))) {
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
        let origin = origin_of(id);
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

/// The shard a replica id names (ids are `origin/cluster/…`).
fn origin_of(id: &str) -> &str {
    id.split('/').next().unwrap_or_default()
}

/// Whether `cache` is judged for the objects of `origin`.
fn in_scope(cache: &CacheRecord, origin: &str) -> bool {
    cache.origins.as_ref().is_none_or(|origins| origins.iter().any(|o| o == origin))
}

/// How many source objects `cache` was compared against: those of the origins it is
/// judged for. Zero means the cache was judged for nothing, so a run that must compare a
/// cache asserts this is above zero.
pub fn compared(cache: &CacheRecord, replication: &ReplicationRecord) -> usize {
    replication.sources.iter().filter(|s| in_scope(cache, origin_of(&s.id))).count()
}

/// The replicas in `cache` of live shards it is not judged for: copies left behind by a
/// shard that failed over to a sibling cache.
pub fn left_behind<'a>(cache: &'a CacheRecord, live_shards: &[String]) -> Vec<&'a ReplicaRecord> {
    cache
        .replicas
        .iter()
        .filter(|r| {
            let origin = origin_of(&r.id);
            !in_scope(cache, origin) && live_shards.iter().any(|s| s == origin)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::SilentFailover;

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
            created: 3,
            updated: 1,
            caches: vec![
                CacheRecord { cache: "cache-r".to_string(), replicas: regional, ..CacheRecord::default() },
                CacheRecord { cache: "cache-p".to_string(), replicas: parent, ..CacheRecord::default() },
            ],
            failover_deletes: Vec::new(),
            silent_failovers: Vec::new(),
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
    fn a_scoped_cache_is_judged_for_its_origins_only() {
        // The regional cache of shard-1 still holds root's a at an old version and root's
        // deleted object: left behind when root failed over, not judged; a replica of a
        // removed shard is still caught.
        let old_root = "root/c0/rbac.authorization.k8s.io/clusterroles/old";
        let regional = vec![replica(A, "ua", 4), replica(old_root, "uo", 2), replica(B, "ub", 7)];
        let mut h = history(regional, exact());
        h.replication.as_mut().unwrap().deleted.push(old_root.to_string());
        h.replication.as_mut().unwrap().caches[0].origins = Some(vec!["shard-1".to_string()]);
        assert_eq!(guarantees(&h), Vec::<String>::new());
        let cache = &h.replication.as_ref().unwrap().caches[0];
        assert_eq!(left_behind(cache, &["root".to_string(), "shard-1".to_string()]).len(), 2);
        h.replication.as_mut().unwrap().caches[0].replicas.push(replica("shard-9/c/g/r/x", "u9", 1));
        assert_eq!(guarantees(&h), ["removed-shard"]);
        // In scope, its own shard's objects are judged as ever: missing, resurrected.
        let mut h = history(vec![replica(A, "ua", 5), replica(GONE, "ug", 3)], exact());
        h.replication.as_mut().unwrap().caches[0].origins = Some(vec!["shard-1".to_string()]);
        assert_eq!(guarantees(&h), ["missing", "resurrected"]);
        // The unscoped parent is judged for every shard.
        let h = history(exact(), vec![replica(B, "ub", 7)]);
        assert_eq!(guarantees(&h), ["missing"]);
    }

    #[test]
    fn a_cache_is_compared_against_the_sources_of_its_origins() {
        let mut h = history(exact(), exact());
        let replication = h.replication.as_mut().unwrap();
        replication.caches[0].origins = Some(vec!["shard-1".to_string()]);
        replication.caches[1].origins = Some(vec!["shard-9".to_string()]);
        let replication = h.replication.as_ref().unwrap();
        assert_eq!(compared(&replication.caches[0], replication), 1);
        // Judged for a shard with nothing replicated: compared against nothing, which a
        // caller asserting comparisons sees.
        assert_eq!(compared(&replication.caches[1], replication), 0);
        let unscoped = CacheRecord { cache: "p".to_string(), ..CacheRecord::default() };
        assert_eq!(compared(&unscoped, replication), 2);
    }

    #[test]
    fn catches_a_write_stalled_behind_a_silent_cache() {
        let mut h = history(exact(), exact());
        let silent = |delivered| SilentFailover {
            id: A.to_string(),
            silent_cache: "cache-a".to_string(),
            healthy_cache: "cache-b".to_string(),
            delivered,
        };
        h.replication.as_mut().unwrap().silent_failovers = vec![silent(true)];
        assert_eq!(guarantees(&h), Vec::<String>::new());
        h.replication.as_mut().unwrap().silent_failovers.push(silent(false));
        assert_eq!(guarantees(&h), ["stalled"]);
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
