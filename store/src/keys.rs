//! Byte layouts of the store's column families, kept in one place so that writer, reader
//! and watcher can never disagree.

use crate::{StoreError, Versioned};
use bytes::{BufMut, Bytes, BytesMut};

/// Column family of current objects: caller key → `rv (8 bytes, big-endian) ‖ value`.
pub const CF_OBJECTS: &str = "objects";
/// Column family of the change log: big-endian rv → `LogRecord`.
pub const CF_LOG: &str = "log";
/// Column family of successors: big-endian rv N → big-endian rv M of the change that
/// replaced or deleted the value written at N. The change log stores each value once (as
/// the `prev_value` of the change that replaced it); this index finds that change.
pub const CF_SUCCESSORS: &str = "successors";
/// Column family of store metadata.
pub const CF_META: &str = "meta";
/// `meta` key of the last committed resourceVersion.
pub const META_RV: &[u8] = b"rv";
/// `meta` key of the compaction floor: log records at or below it are gone.
pub const META_COMPACTED: &[u8] = b"compacted";

/// Encodes a resourceVersion so that byte order equals numeric order.
pub fn rv_key(rv: u64) -> [u8; 8] {
    rv.to_be_bytes()
}

/// Decodes an 8-byte big-endian number.
pub fn decode_u64(bytes: &[u8]) -> Result<u64, StoreError> {
    let arr: [u8; 8] =
        bytes.try_into().map_err(|_| StoreError::Corrupt(format!("expected 8 bytes, found {}", bytes.len())))?;
    Ok(u64::from_be_bytes(arr))
}

/// Encodes an object record: its resourceVersion, then the value.
pub fn encode_object(rv: u64, value: &[u8]) -> Vec<u8> {
    let mut buf = BytesMut::with_capacity(8 + value.len());
    buf.put_u64(rv);
    buf.put_slice(value);
    buf.to_vec()
}

/// Decodes an object record written by [`encode_object`].
pub fn decode_object(record: &[u8]) -> Result<Versioned, StoreError> {
    if record.len() < 8 {
        return Err(StoreError::Corrupt(format!("object record of {} bytes", record.len())));
    }
    let rv = decode_u64(&record[..8])?;
    debug_assert!(rv > 0, "stored objects always carry a committed rv");
    Ok(Versioned { rv, value: Bytes::copy_from_slice(&record[8..]) })
}

/// The smallest key greater than every key starting with `prefix`, or `None` when the
/// prefix is all `0xff` (no upper bound needed).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rv_keys_sort_numerically() {
        let rvs = [0u64, 1, 255, 256, 65_535, 1 << 40, u64::MAX];
        for pair in rvs.windows(2) {
            assert!(rv_key(pair[0]) < rv_key(pair[1]), "{pair:?}");
            assert_eq!(decode_u64(&rv_key(pair[1])).unwrap(), pair[1]);
        }
    }

    #[test]
    fn object_records_round_trip() {
        for (rv, value) in [(1u64, &b""[..]), (42, b"{\"a\":1}"), (u64::MAX, b"x")] {
            let decoded = decode_object(&encode_object(rv, value)).unwrap();
            assert_eq!((decoded.rv, &decoded.value[..]), (rv, value));
        }
        assert!(matches!(decode_object(b"short"), Err(StoreError::Corrupt(_))));
    }

    #[test]
    fn prefix_end_bounds_exactly_the_prefix() {
        for (prefix, end) in
            [(&b"a/"[..], Some(b"a0".to_vec())), (b"a\xff", Some(b"b".to_vec())), (b"\xff\xff", None), (b"", None)]
        {
            assert_eq!(prefix_end(prefix), end, "{prefix:?}");
        }
    }
}
