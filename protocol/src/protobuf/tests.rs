//! Tests of [`decode_object`](super::decode_object) against kubectl's own bodies and the
//! envelope's errors, and the tiny protobuf writer the other protobuf tests share.

use super::*;
use prost::encoding::{encode_key, encode_varint, WireType};

/// A tiny protobuf writer, so tests need no generated Kubernetes types.
#[derive(Default, Clone)]
pub(super) struct Enc(pub(super) Vec<u8>);

impl Enc {
    pub(super) fn new() -> Self {
        Enc::default()
    }
    pub(super) fn bytes(mut self, tag: u32, value: &[u8]) -> Self {
        encode_key(tag, WireType::LengthDelimited, &mut self.0);
        encode_varint(value.len() as u64, &mut self.0);
        self.0.extend_from_slice(value);
        self
    }
    pub(super) fn string(self, tag: u32, value: &str) -> Self {
        self.bytes(tag, value.as_bytes())
    }
    pub(super) fn message(self, tag: u32, message: Enc) -> Self {
        self.bytes(tag, &message.0)
    }
    pub(super) fn entry(self, tag: u32, key: &str, value: &[u8]) -> Self {
        self.message(tag, Enc::new().string(1, key).bytes(2, value))
    }
    pub(super) fn int64(mut self, tag: u32, value: i64) -> Self {
        prost::encoding::int64::encode(tag, &value, &mut self.0);
        self
    }
    pub(super) fn int32(mut self, tag: u32, value: i32) -> Self {
        prost::encoding::int32::encode(tag, &value, &mut self.0);
        self
    }
    pub(super) fn bool(mut self, tag: u32, value: bool) -> Self {
        prost::encoding::bool::encode(tag, &value, &mut self.0);
        self
    }
    pub(super) fn raw(mut self, bytes: &[u8]) -> Self {
        self.0.extend_from_slice(bytes);
        self
    }
}

pub(super) fn envelope(api_version: &str, kind: &str, object: Enc) -> Vec<u8> {
    let unknown = Enc::new()
        .message(1, Enc::new().string(1, api_version).string(2, kind))
        .message(2, object)
        .string(3, "")
        .string(4, "");
    [MAGIC.as_slice(), &unknown.0].concat()
}

pub(super) fn time(seconds: i64, nanos: i32) -> Enc {
    Enc::new().int64(1, seconds).int32(2, nanos)
}

/// ObjectMeta as Go marshals a fresh object: every value field written, zero or not.
pub(super) fn fresh_meta(name: &str) -> Enc {
    Enc::new()
        .string(1, name)
        .string(2, "")
        .string(3, "")
        .string(4, "")
        .string(5, "")
        .string(6, "")
        .int64(7, 0)
        .message(8, Enc::new())
}

/// Picks out the expected error in table tests.
pub(super) type ErrorCheck = fn(&ProtobufError) -> bool;

pub(super) fn decode(api_version: &str, kind: &str, object: Enc) -> Value {
    decode_object(&envelope(api_version, kind, object)).expect("decodes")
}

/// Bodies kubectl v1.32.4 really sent (captured with `-v=10`), each next to the JSON that
/// `kubectl … --dry-run=client -o json` prints for the same object, minus the `null`s and
/// `{}`s Go's JSON encoder writes for empty struct fields. Compared as text, so key order
/// must match Go's too.
#[test]
fn kubectl_fixtures_decode_to_kubectls_own_json() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/protobuf");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("read testdata/protobuf")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "hex"))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "expected the kubectl fixtures, found {names:?}");
    for hex_path in names {
        let hex = std::fs::read_to_string(&hex_path).expect("read .hex");
        let body: Vec<u8> = hex
            .lines()
            .filter(|line| !line.starts_with('#'))
            .flat_map(str::split_whitespace)
            .map(|byte| u8::from_str_radix(byte, 16).expect("hex byte"))
            .collect();
        let expected = std::fs::read_to_string(hex_path.with_extension("json")).expect("read .json");
        let decoded = decode_object(&body).unwrap_or_else(|e| panic!("{}: {e}", hex_path.display()));
        let actual = serde_json::to_string_pretty(&decoded).expect("serialize") + "\n";
        assert_eq!(actual, expected, "{}", hex_path.display());
    }
}

#[test]
fn envelope_errors() {
    let cm = || Enc::new().message(1, fresh_meta("cm"));
    let cases: Vec<(&str, Vec<u8>, ErrorCheck)> = vec![
        ("no magic", b"{\"kind\":\"ConfigMap\"}".to_vec(), |e| matches!(e, ProtobufError::BadMagic)),
        ("short magic", b"k8s".to_vec(), |e| matches!(e, ProtobufError::BadMagic)),
        ("magic only", MAGIC.to_vec(), |e| matches!(e, ProtobufError::MissingTypeMeta)),
        ("no kind", envelope("v1", "", cm()), |e| matches!(e, ProtobufError::MissingTypeMeta)),
        (
            "deployment",
            envelope("apps/v1", "StatefulSet", Enc::new()),
            |e| matches!(e, ProtobufError::UnsupportedKind { api_version, kind } if api_version == "apps/v1" && kind == "StatefulSet"),
        ),
        ("wrong group", envelope("v1", "Role", Enc::new()), |e| matches!(e, ProtobufError::UnsupportedKind { .. })),
        (
            "gzip",
            [
                MAGIC.as_slice(),
                &Enc::new().message(1, Enc::new().string(1, "v1").string(2, "ConfigMap")).string(3, "gzip").0,
            ]
            .concat(),
            |e| matches!(e, ProtobufError::UnsupportedContentEncoding { encoding } if encoding == "gzip"),
        ),
    ];
    for (name, body, expected) in cases {
        let err = decode_object(&body).expect_err(name);
        assert!(expected(&err), "{name}: {err:?}");
    }
    let unsupported = decode_object(&envelope("apps/v1", "StatefulSet", Enc::new())).unwrap_err().to_string();
    assert!(unsupported.contains("application/json"), "{unsupported}");
}
