//! Which cache servers an installation runs and how shards use them.
//!
//! Pure: a [`CacheTopology`] names the caches (parents before children), and for each
//! shard the caches it replicates to (`--cache-server`, failover in order) and the caches
//! its cache informers read (`--cache-watch-server`). [`CacheTopology::shard_args`] turns
//! that into the shard's flags once the caches' URLs are known.

use std::collections::{BTreeMap, BTreeSet};

/// One cache server of a topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheSpec {
    /// Its `--name`.
    pub name: String,
    /// The caches it pushes to (`--parent`, failover in order); they must come earlier in
    /// [`CacheTopology::caches`].
    pub parents: Vec<String>,
}

impl CacheSpec {
    /// A top-level cache.
    pub fn top(name: &str) -> CacheSpec {
        CacheSpec { name: name.to_string(), parents: Vec::new() }
    }

    /// A cache under `parent`.
    pub fn under(name: &str, parent: &str) -> CacheSpec {
        CacheSpec { name: name.to_string(), parents: vec![parent.to_string()] }
    }
}

/// The caches one shard uses, by cache name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShardCaches {
    /// Where it replicates to (`--cache-server`), failover in order.
    pub write: Vec<String>,
    /// Where its cache informers read (`--cache-watch-server`); empty means the shard's
    /// default, its `write` caches.
    pub watch: Vec<String>,
}

impl ShardCaches {
    fn new(write: &[&str], watch: &[&str]) -> ShardCaches {
        ShardCaches {
            write: write.iter().map(|name| name.to_string()).collect(),
            watch: watch.iter().map(|name| name.to_string()).collect(),
        }
    }
}

/// The caches of an installation and how its shards use them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheTopology {
    /// Every cache, parents before their children (the start order).
    pub caches: Vec<CacheSpec>,
    /// What a shard not named in `per_shard` uses.
    pub default_shard: ShardCaches,
    /// Exceptions, by shard name.
    pub per_shard: BTreeMap<String, ShardCaches>,
    /// `--cache-resync-interval-seconds` for shards and `--resync-interval-seconds` for
    /// caches: short in tests, so drift is repaired within seconds.
    pub resync_interval_seconds: u64,
}

/// The resync interval tests use unless they say otherwise.
pub const TEST_RESYNC_INTERVAL_SECONDS: u64 = 1;

/// The one cache of [`CacheTopology::single`].
pub const SINGLE: &str = "cache";
/// The parent of [`CacheTopology::regional`] and [`CacheTopology::chain`].
pub const PARENT: &str = "cache-p";
/// The regional cache of root and shard-1 in [`CacheTopology::regional`].
pub const REGION_A: &str = "cache-a";
/// The regional cache of the other shards in [`CacheTopology::regional`].
pub const REGION_B: &str = "cache-b";
/// The regional cache of [`CacheTopology::chain`].
pub const REGION: &str = "cache-r";
/// The first cache of [`CacheTopology::failover`].
pub const FIRST: &str = "cache-1";
/// The second cache of [`CacheTopology::failover`].
pub const SECOND: &str = "cache-2";

impl CacheTopology {
    /// One cache that every shard writes to and watches.
    pub fn single() -> CacheTopology {
        CacheTopology {
            caches: vec![CacheSpec::top(SINGLE)],
            default_shard: ShardCaches::new(&[SINGLE], &[]),
            per_shard: BTreeMap::new(),
            resync_interval_seconds: TEST_RESYNC_INTERVAL_SECONDS,
        }
    }

    /// Regional caches A and B under parent P: root and shard-1 write to A, every other
    /// shard to B, and every shard's informers watch P.
    pub fn regional() -> CacheTopology {
        let region_a = ShardCaches::new(&[REGION_A], &[PARENT]);
        CacheTopology {
            caches: vec![
                CacheSpec::top(PARENT),
                CacheSpec::under(REGION_A, PARENT),
                CacheSpec::under(REGION_B, PARENT),
            ],
            default_shard: ShardCaches::new(&[REGION_B], &[PARENT]),
            per_shard: BTreeMap::from([("root".to_string(), region_a.clone()), ("shard-1".to_string(), region_a)]),
            resync_interval_seconds: TEST_RESYNC_INTERVAL_SECONDS,
        }
    }

    /// A two-level chain: every shard writes to regional cache R under parent P, and
    /// watches P.
    pub fn chain() -> CacheTopology {
        CacheTopology {
            caches: vec![CacheSpec::top(PARENT), CacheSpec::under(REGION, PARENT)],
            default_shard: ShardCaches::new(&[REGION], &[PARENT]),
            per_shard: BTreeMap::new(),
            resync_interval_seconds: TEST_RESYNC_INTERVAL_SECONDS,
        }
    }

    /// Two independent caches; every shard writes to the first and fails over to the
    /// second, and watches them in the same order.
    pub fn failover() -> CacheTopology {
        CacheTopology {
            caches: vec![CacheSpec::top(FIRST), CacheSpec::top(SECOND)],
            default_shard: ShardCaches::new(&[FIRST, SECOND], &[FIRST, SECOND]),
            per_shard: BTreeMap::new(),
            resync_interval_seconds: TEST_RESYNC_INTERVAL_SECONDS,
        }
    }

    /// The caches shard `shard` uses.
    pub fn for_shard(&self, shard: &str) -> &ShardCaches {
        self.per_shard.get(shard).unwrap_or(&self.default_shard)
    }

    /// The shards among `shards` that write to cache `cache` first (not counting
    /// failover), in the given order.
    pub fn writers_of<'a>(&self, cache: &str, shards: &[&'a str]) -> Vec<&'a str> {
        shards.iter().copied().filter(|shard| self.for_shard(shard).write.first().is_some_and(|c| c == cache)).collect()
    }

    /// Checks that names are unique, every parent is declared before its child, and every
    /// cache a shard names exists.
    pub fn validate(&self) -> anyhow::Result<()> {
        let mut declared = BTreeSet::new();
        for cache in &self.caches {
            for parent in &cache.parents {
                anyhow::ensure!(
                    declared.contains(parent.as_str()),
                    "cache {} names parent {parent}, which is not declared before it",
                    cache.name
                );
            }
            anyhow::ensure!(declared.insert(cache.name.as_str()), "cache {} is declared twice", cache.name);
        }
        let shards = std::iter::once(("(default)", &self.default_shard))
            .chain(self.per_shard.iter().map(|(name, caches)| (name.as_str(), caches)));
        for (shard, caches) in shards {
            anyhow::ensure!(!caches.write.is_empty(), "shard {shard} writes to no cache");
            for name in caches.write.iter().chain(&caches.watch) {
                anyhow::ensure!(declared.contains(name.as_str()), "shard {shard} names unknown cache {name}");
            }
        }
        Ok(())
    }

    /// The flags of shard `shard`, given every cache's URL by name.
    pub fn shard_args(&self, shard: &str, urls: &BTreeMap<String, String>) -> anyhow::Result<Vec<String>> {
        let caches = self.for_shard(shard);
        let join = |names: &[String]| -> anyhow::Result<String> {
            let urls: anyhow::Result<Vec<&str>> = names
                .iter()
                .map(|name| {
                    urls.get(name).map(String::as_str).ok_or_else(|| anyhow::anyhow!("no URL for cache {name}"))
                })
                .collect();
            Ok(urls?.join(","))
        };
        let mut args = vec!["--cache-server".to_string(), join(&caches.write)?];
        if !caches.watch.is_empty() {
            args.extend(["--cache-watch-server".to_string(), join(&caches.watch)?]);
        }
        args.extend(["--cache-resync-interval-seconds".to_string(), self.resync_interval_seconds.to_string()]);
        Ok(args)
    }

    /// The `--parent` URLs of cache `spec`.
    pub fn parent_urls(&self, spec: &CacheSpec, urls: &BTreeMap<String, String>) -> anyhow::Result<Vec<String>> {
        spec.parents
            .iter()
            .map(|parent| urls.get(parent).cloned().ok_or_else(|| anyhow::anyhow!("cache {parent} is not started yet")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(names: &[&str]) -> BTreeMap<String, String> {
        names
            .iter()
            .enumerate()
            .map(|(i, name)| (name.to_string(), format!("https://127.0.0.1:{}", 7000 + i)))
            .collect()
    }

    #[test]
    fn the_named_topologies_are_valid() {
        for topology in
            [CacheTopology::single(), CacheTopology::regional(), CacheTopology::chain(), CacheTopology::failover()]
        {
            topology.validate().unwrap_or_else(|e| panic!("{topology:?}: {e}"));
        }
    }

    #[test]
    fn regional_shards_write_to_their_region_and_watch_the_parent() {
        let topology = CacheTopology::regional();
        let urls = urls(&[PARENT, REGION_A, REGION_B]);
        let (p, a, b) = (&urls[PARENT], &urls[REGION_A], &urls[REGION_B]);
        let cases = [("root", a), ("shard-1", a), ("shard-2", b), ("shard-3", b)];
        for (shard, write) in cases {
            let args = topology.shard_args(shard, &urls).unwrap();
            let expected = ["--cache-server", write, "--cache-watch-server", p, "--cache-resync-interval-seconds", "1"];
            assert_eq!(args, expected, "{shard}");
        }
        assert_eq!(topology.writers_of(REGION_A, &["root", "shard-1", "shard-2"]), ["root", "shard-1"]);
        assert_eq!(topology.writers_of(REGION_B, &["root", "shard-1", "shard-2"]), ["shard-2"]);
        assert_eq!(topology.parent_urls(&topology.caches[1], &urls).unwrap(), std::slice::from_ref(p));
    }

    #[test]
    fn failover_lists_every_cache_in_order() {
        let topology = CacheTopology::failover();
        let both_urls = urls(&[FIRST, SECOND]);
        let args = topology.shard_args("root", &both_urls).unwrap();
        let both = format!("{},{}", both_urls[FIRST], both_urls[SECOND]);
        assert_eq!(args[..4], ["--cache-server", &both, "--cache-watch-server", &both]);
        let single = CacheTopology::single().shard_args("shard-1", &urls(&[SINGLE])).unwrap();
        assert_eq!(single.len(), 4, "no watch flag: the shard defaults to its write caches: {single:?}");
    }

    #[test]
    fn broken_topologies_are_refused() {
        let mut child_first = CacheTopology::chain();
        child_first.caches.reverse();
        assert!(child_first.validate().unwrap_err().to_string().contains("not declared before"));
        let mut unknown = CacheTopology::single();
        unknown.per_shard.insert("root".into(), ShardCaches::new(&["nope"], &[]));
        assert!(unknown.validate().unwrap_err().to_string().contains("unknown cache nope"));
        let mut twice = CacheTopology::single();
        twice.caches.push(CacheSpec::top(SINGLE));
        assert!(twice.validate().is_err());
        assert!(CacheTopology::single().shard_args("root", &BTreeMap::new()).is_err());
    }
}
