//! Which shard serves a logical cluster, and random logical-cluster names.
//!
//! Logical clusters are placed on shards with a consistent hash ring: each shard owns
//! [`VIRTUAL_NODES`] points on a 64-bit circle, and a logical cluster belongs to the owner
//! of the first point at or clockwise after the hash of its name. Adding or removing a
//! shard therefore moves only the logical clusters that land on, or leave, that shard.
//!
//! Every process of an installation (front proxies, shards, the scheduler), built by any
//! compiler, must give the same answer, or requests for one logical cluster would be split
//! across shards. So the ring never hashes through std's randomly keyed
//! `RandomState`/`DefaultHasher`, nor through std's `Hash` impls for `str` or integers
//! (their byte layout is an implementation detail: `str` appends `0xff`, integers are
//! native-endian). Both ring keys and virtual nodes hand exactly one byte string to the
//! hasher, and the hasher is xxh3-64 with seed 0 over those bytes: the placement of a name
//! is a function of its bytes and the sorted shard names alone.
//!
//! [`ClusterNames`] makes the random names (`2x5kq9zt7pl`) that get hashed here; its
//! seeded form is a fixed algorithm as well, so tests can replay a sequence of names.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hashring::HashRing;
use xxhash_rust::xxh3::xxh3_64;

/// Virtual nodes per shard.
///
/// A shard's share of the circle is the sum of its arcs, whose relative spread shrinks like
/// `1/sqrt(VIRTUAL_NODES)`. 1024 is the smallest power of two that keeps 10,000 names on
/// 3 shards within a max/min load of 1.15 with margin (measured 1.046; 5 shards 1.110
/// against 1.2). 512 passes the fixed test at 1.107, but 8 of 100 other samples of names
/// on the same shards exceed 1.15, and at 256 all of them do. Changing this re-places most
/// logical clusters of a running installation, so it is fixed, not configurable.
pub const VIRTUAL_NODES: usize = 1024;

/// Length of a generated logical-cluster name: short enough to read in a URL, long enough
/// (26·36¹⁰ ≈ 9.5·10¹⁶ names) that random names practically never collide.
const CLUSTER_NAME_LENGTH: usize = 11;
/// The first character is a letter, so a name never looks like a number.
const NAME_FIRST_ALPHABET: &[u8; 26] = b"abcdefghijklmnopqrstuvwxyz";
const NAME_REST_ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// Builds [`Xxh3BytesHasher`]s; stateless, so every process builds the same hasher.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Xxh3BuildHasher;

impl BuildHasher for Xxh3BuildHasher {
    type Hasher = Xxh3BytesHasher;

    fn build_hasher(&self) -> Xxh3BytesHasher {
        Xxh3BytesHasher::default()
    }
}

/// Collects the bytes given to `write` and returns their xxh3-64 (seed 0) in `finish`.
///
/// Collecting rather than streaming makes the result the hash of one contiguous byte
/// string, however a caller splits its writes. The typed `write_*` methods keep std's
/// native-endian defaults: only [`ClusterKey`] and [`VirtualNode`] reach this hasher, and
/// both call `write` exactly once.
#[derive(Default)]
struct Xxh3BytesHasher {
    bytes: Vec<u8>,
}

impl Hasher for Xxh3BytesHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }

    fn finish(&self) -> u64 {
        xxh3_64(&self.bytes)
    }
}

/// A logical-cluster name as a ring key: hashes to xxh3-64 of the name's bytes, without
/// the `0xff` terminator `str`'s own `Hash` would add.
struct ClusterKey<'a>(&'a str);

impl Hash for ClusterKey<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(self.0.as_bytes());
    }
}

/// One of a shard's points on the ring, placed at xxh3-64 of `"<shard>#<vnode_index>"`.
///
/// The label is injective: the index has no `#`, so splitting at the last `#` recovers
/// shard and index even for a shard name that contains `#`.
#[derive(Clone, Debug)]
struct VirtualNode {
    /// Position of the shard in [`ShardRing::shards`], so lookups return `&str` borrowed
    /// from the ring itself rather than from a node that `get_with_replicas` cloned.
    shard_index: usize,
    /// Shared by all of the shard's virtual nodes; hashing needs it, lookups do not.
    shard: Arc<str>,
    vnode_index: usize,
}

impl Hash for VirtualNode {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Only runs while a ring is built, so the allocation is off the lookup path.
        state.write(format!("{}#{}", self.shard, self.vnode_index).as_bytes());
    }
}

/// A consistent hash ring mapping logical-cluster names to shards.
///
/// Built once from the full shard list; a change of shards builds a new ring. The mapping
/// depends only on the set of shard names, not on the order or duplicates they came in.
#[derive(Clone)]
pub struct ShardRing {
    /// Sorted and unique; [`VirtualNode::shard_index`] points into it.
    shards: Vec<String>,
    ring: HashRing<VirtualNode, Xxh3BuildHasher>,
}

impl fmt::Debug for ShardRing {
    // The thousands of virtual nodes would drown the shard list.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardRing").field("shards", &self.shards).field("virtual_nodes", &self.ring.len()).finish()
    }
}

impl ShardRing {
    /// Builds the ring for `shards`; duplicate names are ignored.
    pub fn new<I, S>(shards: I) -> ShardRing
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut shards: Vec<String> = shards.into_iter().map(Into::into).collect();
        shards.sort();
        shards.dedup();
        let nodes = shards
            .iter()
            .enumerate()
            .flat_map(|(shard_index, shard)| {
                let shard: Arc<str> = Arc::from(shard.as_str());
                (0..VIRTUAL_NODES).map(move |vnode_index| VirtualNode {
                    shard_index,
                    shard: Arc::clone(&shard),
                    vnode_index,
                })
            })
            .collect();
        // `batch_add` sorts once (stably, by hash only). Adding in (shard name, index)
        // order makes even a 64-bit hash tie between two virtual nodes order the same way
        // in every process.
        let mut ring = HashRing::with_hasher(Xxh3BuildHasher);
        ring.batch_add(nodes);
        ShardRing { shards, ring }
    }

    /// The shard that serves `cluster_name`, or `None` when the ring has no shards.
    pub fn shard_for(&self, cluster_name: &str) -> Option<&str> {
        let node = self.ring.get(&ClusterKey(cluster_name))?;
        Some(&self.shards[node.shard_index])
    }

    /// The shard for `cluster_name` skipping shards for which `exclude` returns true: the
    /// ring is walked clockwise from the name's position to the next virtual node of an
    /// acceptable shard. `None` if every shard is excluded (or there are none).
    ///
    /// This is a true clockwise walk, not re-hashing with suffixes, so excluding a shard
    /// places every name exactly where a ring without that shard would, and names the
    /// excluded shard did not own keep their shard. `exclude` is called once per shard.
    ///
    /// Cost: one binary search when the owner is acceptable. Otherwise O(virtual nodes),
    /// because hashring 0.3 exposes the clockwise order only through `get_with_replicas`,
    /// which clones the whole ring (about 0.2 ms with 5 shards). To re-place many names
    /// away from a shard, build a [`ShardRing`] without it: same answers, one binary search
    /// per name.
    pub fn shard_for_excluding(&self, cluster_name: &str, exclude: impl Fn(&str) -> bool) -> Option<&str> {
        let excluded: Vec<bool> = self.shards.iter().map(|shard| exclude(shard)).collect();
        if excluded.iter().all(|&is_excluded| is_excluded) {
            return None;
        }
        let key = ClusterKey(cluster_name);
        let owner = self.ring.get(&key)?;
        if !excluded[owner.shard_index] {
            return Some(&self.shards[owner.shard_index]);
        }
        // The owner plus `len - 1` successors: every virtual node once, in clockwise order.
        let clockwise = self.ring.get_with_replicas(&key, self.ring.len() - 1)?;
        let node = clockwise.iter().find(|node| !excluded[node.shard_index])?;
        Some(&self.shards[node.shard_index])
    }

    /// The shard names, sorted and unique.
    pub fn shards(&self) -> &[String] {
        &self.shards
    }

    /// The number of shards (not virtual nodes).
    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// True when the ring has no shards, so [`ShardRing::shard_for`] returns `None`.
    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }
}

/// Random logical-cluster names: 11 chars, first a lowercase letter, rest `[a-z0-9]`
/// (a valid DNS-1123 label).
///
/// Either random ([`ClusterNames::random`]) or seeded ([`ClusterNames::seeded`]: the same
/// seed gives the same sequence in every build, for replayable tests). Name `n` of a
/// generator is a fixed function of its seed and `n`: xxh3-64 (seed 0) of the seed's and
/// then `n`'s little-endian bytes, spelled out as mixed-radix digits. Names are unique with
/// overwhelming probability, not certainly, so whoever creates a logical cluster must still
/// handle a name that already exists.
#[derive(Debug)]
pub struct ClusterNames {
    seed: u64,
    /// How many names were handed out; wraps after 2⁶⁴ names, which no process reaches.
    next_index: AtomicU64,
}

impl ClusterNames {
    /// A generator whose sequence differs per call and per process.
    ///
    /// The seed comes from std's `RandomState`, which is keyed from the operating system's
    /// random source: the one std-only entropy source, since this crate does no I/O and has
    /// no `rand` dependency. Names need unpredictability, not cryptographic strength.
    pub fn random() -> ClusterNames {
        ClusterNames::seeded(RandomState::new().hash_one(0u64))
    }

    /// A generator whose sequence is fixed by `seed`, in every build (unlike `rand`'s
    /// `StdRng`, whose algorithm may change between versions).
    pub fn seeded(seed: u64) -> ClusterNames {
        ClusterNames { seed, next_index: AtomicU64::new(0) }
    }

    /// The next name of the sequence. Safe to call from many threads; each call gets its
    /// own index, so only single-threaded use reproduces a seeded sequence in order.
    pub fn next_name(&self) -> String {
        let index = self.next_index.fetch_add(1, Ordering::Relaxed);
        let mut input = [0u8; 16];
        input[..8].copy_from_slice(&self.seed.to_le_bytes());
        input[8..].copy_from_slice(&index.to_le_bytes());
        name_from_bits(xxh3_64(&input))
    }
}

/// A logical-cluster name that is a fixed function of `key` (xxh3-64 of its bytes, spelled
/// as [`ClusterNames`] spells names): whoever creates the cluster for the same key, and
/// however often, names it the same, so concurrent creators collide instead of
/// duplicating it (home workspaces use this).
pub fn name_for_key(key: &str) -> String {
    name_from_bits(xxh3_64(key.as_bytes()))
}

/// Spells `bits` as a name: the lowest base-26 digit picks the letter, then ten base-36
/// digits follow. 26·36¹⁰ < 2⁶⁴, so one hash covers the name; each digit's bias from the
/// unused high part is below 1%, irrelevant for names.
fn name_from_bits(mut bits: u64) -> String {
    let mut name = String::with_capacity(CLUSTER_NAME_LENGTH);
    name.push(char::from(NAME_FIRST_ALPHABET[(bits % 26) as usize]));
    bits /= 26;
    for _ in 1..CLUSTER_NAME_LENGTH {
        name.push(char::from(NAME_REST_ALPHABET[(bits % 36) as usize]));
        bits /= 36;
    }
    name
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};

    use super::*;

    const THREE_SHARDS: [&str; 3] = ["root", "shard-1", "shard-2"];
    const FIVE_SHARDS: [&str; 5] = ["root", "shard-1", "shard-2", "shard-3", "shard-4"];
    const NAME_COUNT: usize = 10_000;
    const NAMES_SEED: u64 = 1;

    fn seeded_names(count: usize) -> Vec<String> {
        let names = ClusterNames::seeded(NAMES_SEED);
        (0..count).map(|_| names.next_name()).collect()
    }

    fn placements<'a>(ring: &'a ShardRing, names: &[String]) -> Vec<&'a str> {
        names.iter().map(|name| ring.shard_for(name).unwrap()).collect()
    }

    /// Max load divided by min load over all shards of `ring`.
    fn balance_ratio(ring: &ShardRing, names: &[String]) -> f64 {
        let mut loads: BTreeMap<&str, usize> = ring.shards().iter().map(|shard| (shard.as_str(), 0)).collect();
        for shard in placements(ring, names) {
            *loads.get_mut(shard).unwrap() += 1;
        }
        let max = *loads.values().max().unwrap();
        let min = *loads.values().min().unwrap();
        println!("loads over {} shards: {loads:?}, max/min = {:.4}", ring.len(), max as f64 / min as f64);
        max as f64 / min as f64
    }

    #[test]
    fn balance_three_shards() {
        let ratio = balance_ratio(&ShardRing::new(THREE_SHARDS), &seeded_names(NAME_COUNT));
        assert!(ratio <= 1.15, "3 shards: max/min load {ratio:.4} > 1.15");
    }

    #[test]
    fn balance_five_shards() {
        let ratio = balance_ratio(&ShardRing::new(FIVE_SHARDS), &seeded_names(NAME_COUNT));
        assert!(ratio <= 1.2, "5 shards: max/min load {ratio:.4} > 1.2");
    }

    #[test]
    fn adding_a_shard_moves_only_keys_to_it() {
        let names = seeded_names(NAME_COUNT);
        let before = ShardRing::new(THREE_SHARDS);
        let after = ShardRing::new(THREE_SHARDS.into_iter().chain(["shard-3"]));
        let mut moved = 0;
        let (old_shards, new_shards) = (placements(&before, &names), placements(&after, &names));
        for ((name, old), new) in names.iter().zip(old_shards).zip(new_shards) {
            if old != new {
                assert_eq!(new, "shard-3", "{name} moved from {old} to an old shard");
                moved += 1;
            }
        }
        let moved_share = moved as f64 / NAME_COUNT as f64;
        println!("adding a 4th shard moved {moved} of {NAME_COUNT} names ({moved_share:.4})");
        assert!((0.18..=0.32).contains(&moved_share), "moved share {moved_share:.4} not near 1/4");
    }

    #[test]
    fn removing_a_shard_moves_only_its_keys() {
        let names = seeded_names(NAME_COUNT);
        let before = ShardRing::new(THREE_SHARDS);
        let after = ShardRing::new(["root", "shard-2"]);
        let mut moved = 0;
        let (old_shards, new_shards) = (placements(&before, &names), placements(&after, &names));
        for ((name, old), new) in names.iter().zip(old_shards).zip(new_shards) {
            if old == "shard-1" {
                moved += 1;
            } else {
                assert_eq!(old, new, "{name} moved although its shard stayed");
            }
        }
        println!("removing shard-1 moved {moved} of {NAME_COUNT} names ({:.4})", moved as f64 / NAME_COUNT as f64);
    }

    /// Pinned outputs: a failure here means the placement algorithm changed, which would
    /// re-place logical clusters of running installations. Do not just update the values.
    #[test]
    fn golden_placements() {
        let ring = ShardRing::new(THREE_SHARDS);
        let cases = [
            ("2x5kq9zt7pl", "shard-1"),
            ("root", "shard-2"),
            ("a", "root"),
            ("abcdefghijk", "root"),
            ("zzzzzzzzzzz", "root"),
        ];
        for (name, shard) in cases {
            assert_eq!(ring.shard_for(name), Some(shard), "{name}");
        }
    }

    #[test]
    fn golden_seeded_names() {
        let ring = ShardRing::new(THREE_SHARDS);
        let names = ClusterNames::seeded(42);
        let expected = [("zgmahnjcg4a", "root"), ("n1ipf3jif54", "shard-1"), ("hxreavxvqda", "root")];
        for (name, shard) in expected {
            let next = names.next_name();
            assert_eq!(next, name);
            assert_eq!(ring.shard_for(&next), Some(shard), "{next}");
        }
    }

    /// The hash contract itself, with xxh3-64 (seed 0) values from the reference
    /// implementation (Python `xxhash.xxh3_64_intdigest`), not from this crate.
    #[test]
    fn hashes_are_xxh3_of_exact_bytes() {
        assert_eq!(Xxh3BuildHasher.hash_one(ClusterKey("")), 0x2d06_8005_38d3_94c2);
        assert_eq!(Xxh3BuildHasher.hash_one(ClusterKey("2x5kq9zt7pl")), 0xdaa5_a727_f7d5_7a9b);
        let node = VirtualNode { shard_index: 0, shard: Arc::from("shard-1"), vnode_index: 17 };
        assert_eq!(Xxh3BuildHasher.hash_one(&node), 0xabbe_6b15_ebf7_14b7);
    }

    #[test]
    fn shards_are_sorted_unique_and_order_does_not_matter() {
        let shuffled = ShardRing::new(["shard-2", "root", "shard-1", "root"]);
        let sorted = ShardRing::new(THREE_SHARDS);
        assert_eq!(shuffled.shards(), ["root", "shard-1", "shard-2"]);
        assert_eq!(shuffled.len(), 3);
        let names = seeded_names(1_000);
        assert_eq!(placements(&shuffled, &names), placements(&sorted, &names));
    }

    #[test]
    fn empty_ring_has_no_shard() {
        let ring = ShardRing::new(Vec::<String>::new());
        assert!(ring.is_empty());
        assert_eq!(ring.len(), 0);
        assert_eq!(ring.shard_for("2x5kq9zt7pl"), None);
        assert_eq!(ring.shard_for_excluding("2x5kq9zt7pl", |_| false), None);
    }

    #[test]
    fn excluding_a_shard_behaves_like_removing_it() {
        let names = seeded_names(NAME_COUNT);
        let ring = ShardRing::new(THREE_SHARDS);
        let without = ShardRing::new(["root", "shard-2"]);
        for name in &names {
            let owner = ring.shard_for(name).unwrap();
            let chosen = ring.shard_for_excluding(name, |shard| shard == "shard-1").unwrap();
            assert_ne!(chosen, "shard-1", "{name}");
            if owner != "shard-1" {
                assert_eq!(chosen, owner, "{name} changed shard although its owner is acceptable");
            }
            assert_eq!(Some(chosen), without.shard_for(name), "{name}");
        }
    }

    #[test]
    fn excluding_all_but_one_or_all_shards() {
        let ring = ShardRing::new(THREE_SHARDS);
        for name in seeded_names(100) {
            assert_eq!(ring.shard_for_excluding(&name, |shard| shard != "shard-2"), Some("shard-2"));
            assert_eq!(ring.shard_for_excluding(&name, |_| true), None);
            assert_eq!(ring.shard_for_excluding(&name, |_| false), ring.shard_for(&name));
        }
    }

    #[test]
    fn names_are_dns1123_labels_of_eleven_chars() {
        let names = seeded_names(NAME_COUNT);
        for name in names.iter().chain([ClusterNames::random().next_name()].iter()) {
            assert_eq!(name.len(), CLUSTER_NAME_LENGTH, "{name}");
            assert!(name.as_bytes()[0].is_ascii_lowercase(), "{name}");
            assert!(name.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit()), "{name}");
            assert!(crate::names::dns1123_label(name).is_empty(), "{name}");
        }
        let unique: HashSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), NAME_COUNT, "duplicate seeded names");
    }

    #[test]
    fn same_seed_same_sequence() {
        let (first, second, other) = (ClusterNames::seeded(7), ClusterNames::seeded(7), ClusterNames::seeded(8));
        let first: Vec<String> = (0..100).map(|_| first.next_name()).collect();
        let second: Vec<String> = (0..100).map(|_| second.next_name()).collect();
        let other: Vec<String> = (0..100).map(|_| other.next_name()).collect();
        assert_eq!(first, second);
        assert_ne!(first, other);
        assert_ne!(ClusterNames::random().next_name(), ClusterNames::random().next_name());
    }

    #[test]
    fn cluster_names_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ClusterNames>();
        assert_send_sync::<ShardRing>();
    }
}
