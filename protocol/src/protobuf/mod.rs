//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) turned into the
//! JSON object a kube-apiserver would accept for the same object.
//!
//! kubectl's typed commands (`kubectl create namespace|configmap|secret generic|role|…`) go
//! through client-go's typed clients, which send built-in kinds only as protobuf. Atoll stores
//! and validates JSON, so the server converts such a body at the edge and every later step sees
//! JSON.
//!
//! A body is the magic `k8s\0` followed by a `runtime.Unknown` envelope: its TypeMeta names the
//! kind and its `raw` bytes hold the typed message. Each supported kind has a static schema table
//! ([`Message`]) transcribed from Kubernetes' `generated.proto`; one generic decoder walks the
//! wire format with it. A kind without a table is refused with
//! [`ProtobufError::UnsupportedKind`], so the server can answer 415 and the user can resend as
//! JSON. Field numbers missing from a table are skipped, as Go's decoder skips them.
//!
//! Zero values need care. Go's generated marshallers write every non-pointer field even when it
//! is zero, so a fresh object from kubectl carries `namespace: ""`, `uid: ""`, `generation: 0`
//! and an empty `creationTimestamp`. A JSON client never sends those, because Go's JSON encoder
//! drops them (`omitempty`), and code after this decoder may treat "present but empty"
//! differently from "absent" (a Secret's `type` defaults to `Opaque` only when absent). Each
//! [`Field`] therefore records a [`Presence`]: pointer fields keep a zero value that is on the
//! wire (`immutable: false` means something), `omitempty` value fields drop it. Either way a
//! kube-apiserver decodes the JSON to the same Go struct as the protobuf body.
//!
//! Bounds: the caller bounds the body; the JSON built from it is at most a small multiple of its
//! size. Recursion follows the static tables, which are acyclic (a test checks), so a hostile
//! body cannot nest deeper than the schema.

mod authorization;
mod error;
mod tables;
#[cfg(test)]
mod tests;
mod wire;
mod workloads;

pub use error::ProtobufError;
/// The schema of a top-level kind, or `None` when protobuf bodies of that kind are not supported.
pub fn message_for(api_version: &str, kind: &str) -> Option<&'static Message> {
    tables::KINDS
        .iter()
        .chain(authorization::KINDS)
        .chain(workloads::KINDS)
        .find(|(v, k, _)| *v == api_version && *k == kind)
        .map(|(_, _, message)| *message)
}
pub use wire::{decode_message, Field, FieldKind, Message, Presence};

use serde_json::{Map, Value};
use wire::{bytes_or_empty, last_values, text};

/// The four bytes every Kubernetes protobuf body starts with.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

// Field constructors of the schema tables ([`tables`] and [`authorization`]): here, next
// to the types they build, so neither table module needs the other.

/// A pointer field, or a value field without `omitempty`.
const fn on_wire(tag: u32, json_name: &'static str, kind: FieldKind) -> Field {
    Field { tag, json_name, kind, repeated: false, presence: Presence::OnWire }
}

/// A value field with `omitempty`.
const fn non_zero(tag: u32, json_name: &'static str, kind: FieldKind) -> Field {
    Field { tag, json_name, kind, repeated: false, presence: Presence::NonZero }
}

/// A list field. Presence does not matter: an empty list never reaches the wire.
const fn list(tag: u32, json_name: &'static str, kind: FieldKind) -> Field {
    Field { tag, json_name, kind, repeated: true, presence: Presence::OnWire }
}

/// Decodes a Kubernetes protobuf body into the object's JSON: `kind` and `apiVersion` from the
/// envelope first, then the object's fields.
pub fn decode_object(body: &[u8]) -> Result<Value, ProtobufError> {
    let envelope = body.strip_prefix(MAGIC.as_slice()).ok_or(ProtobufError::BadMagic)?;
    let [type_meta, raw, content_encoding, _content_type] = last_values::<4>(envelope, &tables::UNKNOWN)?;
    let content_encoding = text(content_encoding);
    if !content_encoding.is_empty() {
        return Err(ProtobufError::UnsupportedContentEncoding { encoding: content_encoding });
    }
    let [api_version, kind] = last_values::<2>(bytes_or_empty(type_meta), &tables::TYPE_META)?;
    let (api_version, kind) = (text(api_version), text(kind));
    if api_version.is_empty() || kind.is_empty() {
        return Err(ProtobufError::MissingTypeMeta);
    }
    let Some(message) = message_for(&api_version, &kind) else {
        return Err(ProtobufError::UnsupportedKind { api_version, kind });
    };
    let fields = decode_message(bytes_or_empty(raw), message)?;
    let mut object = Map::with_capacity(fields.len() + 2);
    // Go's TypeMeta puts kind before apiVersion; matching it keeps stored objects familiar.
    object.insert("kind".to_owned(), Value::String(kind));
    object.insert("apiVersion".to_owned(), Value::String(api_version));
    object.extend(fields);
    Ok(Value::Object(object))
}
