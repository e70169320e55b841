//! Downstream names: where an upstream namespace's objects live in the member cluster.
//!
//! Two workspaces' `default` namespaces must not collide in one member, so each upstream
//! (logical cluster, namespace) gets its own downstream namespace, named as kcp's syncer
//! names it: `kcp-` and 12 base-36 digits of a SHA-224 over the namespace locator (the
//! SyncTarget, the logical cluster, the namespace). The locator itself is recorded on the
//! downstream namespace ([`LOCATOR_ANNOTATION`]), so the mapping can be read back. Pure.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha224};

/// The annotation on a downstream namespace that holds its [`Locator`] as JSON (kcp's).
pub const LOCATOR_ANNOTATION: &str = "kcp.io/namespace-locator";

/// The label on every downstream object and namespace: the key of the SyncTarget that
/// owns it (kcp's `internal.workload.kcp.io/cluster`).
pub const OWNER_LABEL: &str = "internal.workload.kcp.io/cluster";

/// The annotation on a downstream object naming its upstream logical cluster (not
/// `kcp.io/cluster`: a member that is itself a kcp-like server keeps its own there).
pub const UPSTREAM_CLUSTER_ANNOTATION: &str = "workload.kcp.io/upstream-cluster";

/// The SyncTarget an agent serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// Its logical cluster.
    pub cluster: String,
    /// Its name.
    pub name: String,
    /// Its UID.
    #[serde(default)]
    pub uid: String,
}

/// Where a downstream namespace's objects come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Locator {
    /// The SyncTarget.
    pub sync_target: Target,
    /// The upstream logical cluster.
    pub cluster: String,
    /// The upstream namespace.
    pub namespace: String,
}

impl Locator {
    /// The downstream namespace's name.
    pub fn downstream_namespace(&self) -> String {
        let json = serde_json::to_vec(self).expect("a locator serializes");
        let digest = Sha224::digest(&json);
        let digits = base36(&digest);
        format!("kcp-{}", &digits[..12.min(digits.len())])
    }

    /// The locator as the annotation holds it.
    pub fn annotation(&self) -> String {
        serde_json::to_string(self).expect("a locator serializes")
    }
}

/// `bytes` as a big-endian number in base 36 (lower case), most significant digit first,
/// padded so that a 28-byte digest always gives the same number of digits.
fn base36(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut number = bytes.to_vec();
    let mut digits = Vec::new();
    // 36^44 > 2^224: 44 digits always suffice.
    for _ in 0..44 {
        let mut remainder = 0u32;
        for byte in number.iter_mut() {
            let accumulator = remainder * 256 + u32::from(*byte);
            *byte = (accumulator / 36) as u8;
            remainder = accumulator % 36;
        }
        digits.push(DIGITS[remainder as usize]);
    }
    digits.reverse();
    String::from_utf8(digits).expect("ascii digits")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locator(cluster: &str, namespace: &str) -> Locator {
        let sync_target = Target { cluster: "inv".into(), name: "aws-1".into(), uid: "u".into() };
        Locator { sync_target, cluster: cluster.into(), namespace: namespace.into() }
    }

    #[test]
    fn namespaces_of_two_workspaces_do_not_collide() {
        let a = locator("ws-a", "default").downstream_namespace();
        let b = locator("ws-b", "default").downstream_namespace();
        assert_ne!(a, b);
        assert_eq!(a, locator("ws-a", "default").downstream_namespace(), "stable");
        assert!(a.starts_with("kcp-") && a.len() == 16, "{a}");
        assert!(a[4..].chars().all(|c| c.is_ascii_digit() || c.is_ascii_lowercase()), "{a}");
        let back: Locator = serde_json::from_str(&locator("ws-a", "default").annotation()).unwrap();
        assert_eq!(back, locator("ws-a", "default"));
    }

    #[test]
    fn base36_reads_big_endian() {
        assert!(base36(&[0, 0, 1]).ends_with("01"));
        assert!(base36(&[1, 0]).ends_with("74"), "256 = 7*36 + 4");
    }
}
