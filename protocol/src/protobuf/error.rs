//! [`ProtobufError`]: every way a protobuf body can fail to become JSON, each variant naming
//! where in the body it happened.

use prost::encoding::WireType;

/// Why a protobuf body could not be turned into JSON. `at` names the place as
/// `Message.jsonName` (or `Message field N` for a field number the schema does not know).
#[derive(Debug, thiserror::Error)]
pub enum ProtobufError {
    /// The body lacks the `k8s\0` prefix, so it is not Kubernetes protobuf at all.
    #[error("request body is not Kubernetes protobuf: it does not start with the magic bytes \"k8s\\0\"")]
    BadMagic,
    /// The body ends inside a field.
    #[error("protobuf body is truncated in {at}")]
    Truncated {
        /// Where the bytes ran out.
        at: String,
    },
    /// A known field arrived with a wire type its schema does not allow; Go's decoder refuses
    /// this too.
    #[error("protobuf field {at} has wire type {actual:?}, expected {expected:?}")]
    WireTypeMismatch {
        /// The field.
        at: String,
        /// The wire type the schema calls for.
        expected: WireType,
        /// The wire type on the wire.
        actual: WireType,
    },
    /// The bytes are not valid protobuf (an over-long varint, field number 0, a stray end-group).
    #[error("malformed protobuf in {at}: {reason}")]
    Malformed {
        /// Where decoding failed.
        at: String,
        /// What prost reported.
        reason: String,
    },
    /// The envelope's TypeMeta lacks `apiVersion` or `kind`, so there is no schema to pick.
    #[error("protobuf envelope does not name both apiVersion and kind")]
    MissingTypeMeta,
    /// The envelope says `raw` is compressed (`contentEncoding`), which no Kubernetes client does
    /// for requests and this decoder does not undo.
    #[error("protobuf body uses content encoding {encoding:?}; only unencoded bodies are supported")]
    UnsupportedContentEncoding {
        /// The envelope's `contentEncoding`.
        encoding: String,
    },
    /// No schema table exists for the kind; the server answers 415 so the user resends as JSON.
    #[error(
        "protobuf bodies of kind {kind:?} in {api_version:?} are not supported; send the object as application/json"
    )]
    UnsupportedKind {
        /// The envelope's `apiVersion`.
        api_version: String,
        /// The envelope's `kind`.
        kind: String,
    },
    /// A `RawExtension`/`FieldsV1` field does not hold JSON.
    #[error("protobuf field {at} does not hold valid JSON: {source}")]
    InvalidJson {
        /// The field.
        at: String,
        /// Why serde_json refused it.
        source: serde_json::Error,
    },
    /// A time lies outside years 0000–9999, which RFC 3339 (and Go's JSON encoder) cannot write.
    #[error("protobuf field {at} holds a time outside years 0000-9999 ({seconds} seconds since the epoch)")]
    TimeOutOfRange {
        /// The field.
        at: String,
        /// The `seconds` on the wire.
        seconds: i64,
    },
    /// An `IntOrString` whose `type` is neither 0 (int) nor 1 (string); Go cannot marshal it.
    #[error("protobuf field {at} holds an IntOrString of unknown type {int_or_string_type}")]
    InvalidIntOrString {
        /// The field.
        at: String,
        /// The `type` on the wire.
        int_or_string_type: i64,
    },
}
