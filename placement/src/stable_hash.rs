//! A stable per-key preference among equally scored candidates.
//!
//! kcp picked a Location and a SyncTarget at random among the matching ones, so a
//! restart, or a second controller, could pick differently. Breaking ties by
//! rendezvous hashing instead (the candidate with the highest hash of `key` and its
//! name wins) is deterministic, spreads different placements (or namespaces) over the
//! candidates evenly, and moves only the keys whose winner disappeared when a candidate
//! is added or removed. SHA-256 is used because its output is fixed across platforms,
//! releases and processes, which `std`'s hashers do not promise.

use sha2::{Digest, Sha256};

/// The rendezvous weight of `name` for `key`; higher wins.
pub(crate) fn rendezvous_weight(key: &str, name: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(key.as_bytes());
    // A separator that cannot occur in Kubernetes names keeps ("a", "bc") and ("ab", "c")
    // apart.
    hasher.update([0u8]);
    hasher.update(name.as_bytes());
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::rendezvous_weight;

    #[test]
    fn weight_is_a_pure_function_of_key_and_name() {
        assert_eq!(rendezvous_weight("ws|placement", "aws"), rendezvous_weight("ws|placement", "aws"));
        assert_ne!(rendezvous_weight("a", "bc"), rendezvous_weight("ab", "c"));
    }

    /// Different keys should not all prefer the same candidate; over 200 keys each of
    /// three candidates must win a fair share.
    #[test]
    fn different_keys_spread_over_candidates() {
        let names = ["aws", "gce", "azure"];
        let mut wins = [0usize; 3];
        for key in 0..200 {
            let key = format!("workspace|placement-{key}");
            let winner = (0..names.len()).max_by_key(|&i| rendezvous_weight(&key, names[i])).unwrap_or(0);
            wins[winner] += 1;
        }
        assert!(wins.iter().all(|&w| w > 40), "wins {wins:?}");
    }
}
