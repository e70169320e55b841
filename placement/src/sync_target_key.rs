//! kcp's SyncTarget key: the short, label-safe name of a SyncTarget that labels
//! (`state.workload.kcp.io/<key>`), annotations and finalizers carry.
//!
//! kcp (before it removed TMC) computes it in `workloadv1alpha1.ToSyncTargetKey`: SHA-224
//! over the SyncTarget's logical-cluster path joined to its name with `:` (the logical
//! cluster path separator; an empty path contributes nothing), the 28-byte digest read as
//! one big-endian unsigned integer and printed in base 62 with Go's `big.Int.Text(62)`
//! digits `0-9a-zA-Z`, without leading zeros. Objects labelled by kcp tooling must carry
//! the same key, so this is reproduced exactly, not approximated.

use sha2::{Digest, Sha224};

/// Go's `big.Int.Text` digit alphabet up to base 62.
const BASE62_DIGITS: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// The key of SyncTarget `name` in logical cluster `workspace` (e.g. `root:org:ws`).
pub fn sync_target_key(workspace: &str, name: &str) -> String {
    let joined = if workspace.is_empty() { name.to_string() } else { format!("{workspace}:{name}") };
    base62(&Sha224::digest(joined.as_bytes()))
}

/// `bytes` as a big-endian unsigned integer in base 62, "0" for zero.
fn base62(bytes: &[u8]) -> String {
    // Long division by 62, most significant byte first; each pass yields one digit
    // (least significant first). 28 bytes need at most 38 passes.
    let mut number: Vec<u8> = bytes.iter().copied().skip_while(|&b| b == 0).collect();
    let mut digits = Vec::with_capacity(40);
    while !number.is_empty() {
        let mut remainder: u32 = 0;
        let mut quotient = Vec::with_capacity(number.len());
        for &byte in &number {
            let accumulator = remainder * 256 + u32::from(byte);
            let digit = accumulator / 62;
            remainder = accumulator % 62;
            if !(quotient.is_empty() && digit == 0) {
                quotient.push(digit as u8);
            }
        }
        digits.push(BASE62_DIGITS[remainder as usize]);
        number = quotient;
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    digits.reverse();
    digits.into_iter().map(char::from).collect()
}

#[cfg(test)]
mod tests {
    use super::{base62, sync_target_key};

    /// kcp v0.11's syncer tests label objects for SyncTarget `us-west1` in `root:org:ws`
    /// with this key (`pkg/syncer/spec/spec_process_test.go`).
    #[test]
    fn matches_kcp_for_a_workspace_path() {
        assert_eq!(sync_target_key("root:org:ws", "us-west1"), "6ohB8yeXhwqTQVuBzJRgqcRJTpRjX7yTZu5g5g");
    }

    /// An empty logical cluster joins to the bare name (kcp's `Path.Join` on an empty
    /// path); kcp's own tests call `ToSyncTargetKey("", name)`.
    #[test]
    fn empty_workspace_hashes_the_bare_name() {
        assert_eq!(sync_target_key("", "us-west1"), "aVNg8htFOMaMpwR0aSUyzJsgZeQgYUDohWwlFs");
        assert_ne!(sync_target_key("", "us-west1"), sync_target_key("root", "us-west1"));
    }

    #[test]
    fn base62_matches_go_big_int_text() {
        assert_eq!(base62(&[]), "0");
        assert_eq!(base62(&[0, 0]), "0");
        assert_eq!(base62(&[61]), "Z");
        assert_eq!(base62(&[62]), "10");
        assert_eq!(base62(&[1, 0]), "48"); // 256 = 4*62 + 8
        assert_eq!(base62(&[0xff, 0xff]), "h31"); // 65535 = 17*3844 + 3*62 + 1
    }
}
