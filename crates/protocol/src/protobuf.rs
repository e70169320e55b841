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

use base64::Engine as _;
use prost::encoding::{decode_key, decode_varint, skip_field, DecodeContext, WireType};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The four bytes every Kubernetes protobuf body starts with.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

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

/// The schema of one protobuf message.
#[derive(Debug)]
pub struct Message {
    /// The Go type name, for error messages.
    pub name: &'static str,
    /// The fields in Go struct order, which is the order their JSON keys come out in (as in
    /// kube-apiserver's JSON). Field numbers not listed are skipped.
    pub fields: &'static [Field],
}

impl Message {
    /// The index in `fields` of the field numbered `tag`. A linear scan: tables have at most 17
    /// fields.
    fn position(&self, tag: u32) -> Option<usize> {
        self.fields.iter().position(|field| field.tag == tag)
    }
}

/// One field of a [`Message`].
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// The protobuf field number from `generated.proto`.
    pub tag: u32,
    /// The JSON key kube-apiserver uses: the Go `json:` tag, which is not always the camelCase of
    /// the proto name (`nonResourceURLs`, `reportingComponent`).
    pub json_name: &'static str,
    /// How the wire value becomes JSON.
    pub kind: FieldKind,
    /// A list (`repeated`): each occurrence on the wire adds one element.
    pub repeated: bool,
    /// Whether a zero value on the wire reaches the JSON.
    pub presence: Presence,
}

/// How a field's wire value becomes JSON.
#[derive(Debug, Clone, Copy)]
pub enum FieldKind {
    /// `string` → JSON string. Go's proto2 decoder does not check UTF-8 and its JSON encoder
    /// writes invalid bytes as U+FFFD, so this does the same.
    String,
    /// `bool` → `true`/`false`.
    Bool,
    /// `int32` → JSON number.
    Int32,
    /// `int64` → JSON number.
    Int64,
    /// `bytes` → standard base64 with padding, as Go writes `[]byte`.
    Bytes,
    /// `metav1.Time` (`{1: seconds, 2: nanos}`) → RFC 3339 in UTC with whole seconds, as
    /// `metav1.Time` marshals; the zero time (an empty message) → `null`.
    Time,
    /// `metav1.MicroTime` → RFC 3339 in UTC with six fractional digits; the zero time → `null`.
    MicroTime,
    /// `intstr.IntOrString` (`{1: type, 2: intVal, 3: strVal}`) → JSON number or string.
    IntOrString,
    /// A message whose field 1 holds JSON bytes (`runtime.RawExtension`, `metav1.FieldsV1`) →
    /// that JSON, parsed.
    Json,
    /// `map<string, string>` (entries `{1: key, 2: value}`) → JSON object.
    StringMap,
    /// `map<string, bytes>` → JSON object of base64 strings.
    BytesMap,
    /// A nested message, decoded with its own table.
    Message(&'static Message),
}

impl FieldKind {
    /// The only wire type Go's marshaller uses for this kind.
    fn wire_type(self) -> WireType {
        match self {
            FieldKind::Bool | FieldKind::Int32 | FieldKind::Int64 => WireType::Varint,
            _ => WireType::LengthDelimited,
        }
    }
}

/// Whether a zero value present on the wire reaches the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Emitted whenever it is on the wire: Go pointer fields (`*bool`, `*int32`, `*Time`), where
    /// nil and zero differ, and value fields whose JSON tag lacks `omitempty`
    /// (`OwnerReference.uid`, `RoleRef.name`).
    OnWire,
    /// A Go value field with `omitempty`. Go's marshaller writes it even when zero, so a zero
    /// value (`""`, `0`, `false`, `null`, `{}`) is dropped: a JSON client would not have sent it.
    NonZero,
}

/// The schema tables, transcribed from Kubernetes' `generated.proto` files (field numbers checked
/// against the generated k8s-pb 0.9.0 code) with JSON keys from the Go `json:` tags. Kept in their
/// own module because importing `FieldKind::String` shadows `std::string::String`.
mod tables {
    use super::FieldKind::{self, Bool, Bytes, BytesMap, Int32, Int64, Json, MicroTime, String, StringMap, Time};
    use super::{Field, Message, Presence};

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

    // Wrappers of the wire format itself (k8s.io/apimachinery/pkg/runtime and intstr, and the
    // protobuf map-entry convention). Their tables name fields for errors and fix wire types.

    pub(super) static UNKNOWN: Message = Message {
        name: "Unknown",
        fields: &[
            on_wire(1, "typeMeta", FieldKind::Message(&TYPE_META)),
            on_wire(2, "raw", Bytes),
            on_wire(3, "contentEncoding", String),
            on_wire(4, "contentType", String),
        ],
    };

    pub(super) static TYPE_META: Message =
        Message { name: "TypeMeta", fields: &[on_wire(1, "apiVersion", String), on_wire(2, "kind", String)] };

    pub(super) static TIMESTAMP: Message =
        Message { name: "Timestamp", fields: &[on_wire(1, "seconds", Int64), on_wire(2, "nanos", Int32)] };

    pub(super) static INT_OR_STRING: Message = Message {
        name: "IntOrString",
        fields: &[on_wire(1, "type", Int64), on_wire(2, "intVal", Int32), on_wire(3, "strVal", String)],
    };

    pub(super) static RAW_EXTENSION: Message = Message { name: "RawExtension", fields: &[on_wire(1, "raw", Bytes)] };

    pub(super) static STRING_MAP_ENTRY: Message =
        Message { name: "map entry", fields: &[on_wire(1, "key", String), on_wire(2, "value", String)] };

    pub(super) static BYTES_MAP_ENTRY: Message =
        Message { name: "map entry", fields: &[on_wire(1, "key", String), on_wire(2, "value", Bytes)] };

    // meta/v1 (k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto).

    pub(super) static OBJECT_META: Message = Message {
        name: "ObjectMeta",
        fields: &[
            non_zero(1, "name", String),
            non_zero(2, "generateName", String),
            non_zero(3, "namespace", String),
            non_zero(4, "selfLink", String),
            non_zero(5, "uid", String),
            non_zero(6, "resourceVersion", String),
            non_zero(7, "generation", Int64),
            non_zero(8, "creationTimestamp", Time),
            on_wire(9, "deletionTimestamp", Time),
            on_wire(10, "deletionGracePeriodSeconds", Int64),
            on_wire(11, "labels", StringMap),
            on_wire(12, "annotations", StringMap),
            list(13, "ownerReferences", FieldKind::Message(&OWNER_REFERENCE)),
            list(14, "finalizers", String),
            list(17, "managedFields", FieldKind::Message(&MANAGED_FIELDS_ENTRY)),
        ],
    };

    pub(super) static OWNER_REFERENCE: Message = Message {
        name: "OwnerReference",
        fields: &[
            on_wire(5, "apiVersion", String),
            on_wire(1, "kind", String),
            on_wire(3, "name", String),
            on_wire(4, "uid", String),
            on_wire(6, "controller", Bool),
            on_wire(7, "blockOwnerDeletion", Bool),
        ],
    };

    pub(super) static MANAGED_FIELDS_ENTRY: Message = Message {
        name: "ManagedFieldsEntry",
        fields: &[
            non_zero(1, "manager", String),
            non_zero(2, "operation", String),
            non_zero(3, "apiVersion", String),
            on_wire(4, "time", Time),
            non_zero(6, "fieldsType", String),
            on_wire(7, "fieldsV1", Json),
            non_zero(8, "subresource", String),
        ],
    };

    pub(super) static LABEL_SELECTOR: Message = Message {
        name: "LabelSelector",
        fields: &[
            on_wire(1, "matchLabels", StringMap),
            list(2, "matchExpressions", FieldKind::Message(&LABEL_SELECTOR_REQUIREMENT)),
        ],
    };

    pub(super) static LABEL_SELECTOR_REQUIREMENT: Message = Message {
        name: "LabelSelectorRequirement",
        fields: &[on_wire(1, "key", String), on_wire(2, "operator", String), list(3, "values", String)],
    };

    // core/v1 (k8s.io/api/core/v1/generated.proto).

    pub(super) static NAMESPACE: Message = Message {
        name: "Namespace",
        fields: &[
            non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
            non_zero(2, "spec", FieldKind::Message(&NAMESPACE_SPEC)),
            non_zero(3, "status", FieldKind::Message(&NAMESPACE_STATUS)),
        ],
    };

    pub(super) static NAMESPACE_SPEC: Message =
        Message { name: "NamespaceSpec", fields: &[list(1, "finalizers", String)] };

    pub(super) static NAMESPACE_STATUS: Message = Message {
        name: "NamespaceStatus",
        fields: &[non_zero(1, "phase", String), list(2, "conditions", FieldKind::Message(&NAMESPACE_CONDITION))],
    };

    pub(super) static NAMESPACE_CONDITION: Message = Message {
        name: "NamespaceCondition",
        fields: &[
            on_wire(1, "type", String),
            on_wire(2, "status", String),
            non_zero(4, "lastTransitionTime", Time),
            non_zero(5, "reason", String),
            non_zero(6, "message", String),
        ],
    };

    pub(super) static CONFIG_MAP: Message = Message {
        name: "ConfigMap",
        fields: &[
            non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
            on_wire(4, "immutable", Bool),
            on_wire(2, "data", StringMap),
            on_wire(3, "binaryData", BytesMap),
        ],
    };

    pub(super) static SECRET: Message = Message {
        name: "Secret",
        fields: &[
            non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
            on_wire(5, "immutable", Bool),
            on_wire(2, "data", BytesMap),
            on_wire(4, "stringData", StringMap),
            non_zero(3, "type", String),
        ],
    };

    pub(super) static SERVICE_ACCOUNT: Message = Message {
        name: "ServiceAccount",
        fields: &[
            non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
            list(2, "secrets", FieldKind::Message(&OBJECT_REFERENCE)),
            list(3, "imagePullSecrets", FieldKind::Message(&LOCAL_OBJECT_REFERENCE)),
            on_wire(4, "automountServiceAccountToken", Bool),
        ],
    };

    pub(super) static OBJECT_REFERENCE: Message = Message {
        name: "ObjectReference",
        fields: &[
            non_zero(1, "kind", String),
            non_zero(2, "namespace", String),
            non_zero(3, "name", String),
            non_zero(4, "uid", String),
            non_zero(5, "apiVersion", String),
            non_zero(6, "resourceVersion", String),
            non_zero(7, "fieldPath", String),
        ],
    };

    pub(super) static LOCAL_OBJECT_REFERENCE: Message =
        Message { name: "LocalObjectReference", fields: &[non_zero(1, "name", String)] };

    pub(super) static EVENT: Message = Message {
        name: "Event",
        fields: &[
            non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
            on_wire(2, "involvedObject", FieldKind::Message(&OBJECT_REFERENCE)),
            non_zero(3, "reason", String),
            non_zero(4, "message", String),
            non_zero(5, "source", FieldKind::Message(&EVENT_SOURCE)),
            non_zero(6, "firstTimestamp", Time),
            non_zero(7, "lastTimestamp", Time),
            non_zero(8, "count", Int32),
            non_zero(9, "type", String),
            non_zero(10, "eventTime", MicroTime),
            on_wire(11, "series", FieldKind::Message(&EVENT_SERIES)),
            non_zero(12, "action", String),
            on_wire(13, "related", FieldKind::Message(&OBJECT_REFERENCE)),
            // Go field ReportingController, JSON key reportingComponent, no omitempty.
            on_wire(14, "reportingComponent", String),
            on_wire(15, "reportingInstance", String),
        ],
    };

    pub(super) static EVENT_SOURCE: Message =
        Message { name: "EventSource", fields: &[non_zero(1, "component", String), non_zero(2, "host", String)] };

    pub(super) static EVENT_SERIES: Message = Message {
        name: "EventSeries",
        fields: &[non_zero(1, "count", Int32), non_zero(2, "lastObservedTime", MicroTime)],
    };

    // rbac.authorization.k8s.io/v1 (k8s.io/api/rbac/v1/generated.proto).

    pub(super) static ROLE: Message = Message {
        name: "Role",
        fields: &[
            non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
            list(2, "rules", FieldKind::Message(&POLICY_RULE)),
        ],
    };

    pub(super) static CLUSTER_ROLE: Message = Message {
        name: "ClusterRole",
        fields: &[
            non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
            list(2, "rules", FieldKind::Message(&POLICY_RULE)),
            on_wire(3, "aggregationRule", FieldKind::Message(&AGGREGATION_RULE)),
        ],
    };

    pub(super) static POLICY_RULE: Message = Message {
        name: "PolicyRule",
        fields: &[
            list(1, "verbs", String),
            list(2, "apiGroups", String),
            list(3, "resources", String),
            list(4, "resourceNames", String),
            list(5, "nonResourceURLs", String),
        ],
    };

    pub(super) static AGGREGATION_RULE: Message = Message {
        name: "AggregationRule",
        fields: &[list(1, "clusterRoleSelectors", FieldKind::Message(&LABEL_SELECTOR))],
    };

    /// RoleBinding and ClusterRoleBinding share one message shape.
    const BINDING_FIELDS: &[Field] = &[
        non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
        list(2, "subjects", FieldKind::Message(&SUBJECT)),
        on_wire(3, "roleRef", FieldKind::Message(&ROLE_REF)),
    ];

    pub(super) static ROLE_BINDING: Message = Message { name: "RoleBinding", fields: BINDING_FIELDS };

    pub(super) static CLUSTER_ROLE_BINDING: Message = Message { name: "ClusterRoleBinding", fields: BINDING_FIELDS };

    pub(super) static SUBJECT: Message = Message {
        name: "Subject",
        fields: &[
            on_wire(1, "kind", String),
            non_zero(2, "apiGroup", String),
            on_wire(3, "name", String),
            non_zero(4, "namespace", String),
        ],
    };

    pub(super) static ROLE_REF: Message = Message {
        name: "RoleRef",
        fields: &[on_wire(1, "apiGroup", String), on_wire(2, "kind", String), on_wire(3, "name", String)],
    };

    // coordination.k8s.io/v1 (k8s.io/api/coordination/v1/generated.proto).

    pub(super) static LEASE: Message = Message {
        name: "Lease",
        fields: &[
            non_zero(1, "metadata", FieldKind::Message(&OBJECT_META)),
            non_zero(2, "spec", FieldKind::Message(&LEASE_SPEC)),
        ],
    };

    pub(super) static LEASE_SPEC: Message = Message {
        name: "LeaseSpec",
        fields: &[
            on_wire(1, "holderIdentity", String),
            on_wire(2, "leaseDurationSeconds", Int32),
            on_wire(3, "acquireTime", MicroTime),
            on_wire(4, "renewTime", MicroTime),
            on_wire(5, "leaseTransitions", Int32),
            on_wire(6, "strategy", String),
            on_wire(7, "preferredHolder", String),
        ],
    };

    /// The top-level kinds with a schema: what kubectl v1.32's typed `create` commands send, plus
    /// Lease and core/v1 Event, which client-go components post as protobuf.
    pub(super) static KINDS: &[(&str, &str, &Message)] = &[
        ("v1", "Namespace", &NAMESPACE),
        ("v1", "ConfigMap", &CONFIG_MAP),
        ("v1", "Secret", &SECRET),
        ("v1", "ServiceAccount", &SERVICE_ACCOUNT),
        ("v1", "Event", &EVENT),
        ("rbac.authorization.k8s.io/v1", "Role", &ROLE),
        ("rbac.authorization.k8s.io/v1", "ClusterRole", &CLUSTER_ROLE),
        ("rbac.authorization.k8s.io/v1", "RoleBinding", &ROLE_BINDING),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &CLUSTER_ROLE_BINDING),
        ("coordination.k8s.io/v1", "Lease", &LEASE),
    ];
}

/// The schema of a top-level kind, or `None` when protobuf bodies of that kind are not supported.
pub fn message_for(api_version: &str, kind: &str) -> Option<&'static Message> {
    tables::KINDS.iter().find(|(v, k, _)| *v == api_version && *k == kind).map(|(_, _, message)| *message)
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

/// Decodes one protobuf message with its schema into a JSON object, for callers that know the
/// type without an envelope.
pub fn decode_message(bytes: &[u8], message: &'static Message) -> Result<Map<String, Value>, ProtobufError> {
    let mut decoder = MessageDecoder::new(message);
    decoder.merge(bytes)?;
    decoder.finish()
}

/// One field's value as read off the wire, before the schema gives it meaning.
#[derive(Debug, Clone, Copy)]
enum WireValue<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    /// A 32-bit, 64-bit or group value: no Kubernetes field we decode uses these, so they are
    /// only skipped (or reported as a wire-type mismatch on a known field).
    Skipped(WireType),
}

impl WireValue<'_> {
    fn wire_type(self) -> WireType {
        match self {
            WireValue::Varint(_) => WireType::Varint,
            WireValue::Bytes(_) => WireType::LengthDelimited,
            WireValue::Skipped(wire_type) => wire_type,
        }
    }
}

/// The `(field number, value)` pairs of one encoded message, in wire order. Stops after the first
/// error.
struct WireFields<'a> {
    buf: &'a [u8],
    message: &'static Message,
}

impl<'a> Iterator for WireFields<'a> {
    type Item = Result<(u32, WireValue<'a>), ProtobufError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            return None;
        }
        let item = self.read_field();
        if item.is_err() {
            self.buf = &[];
        }
        Some(item)
    }
}

impl<'a> WireFields<'a> {
    fn read_field(&mut self) -> Result<(u32, WireValue<'a>), ProtobufError> {
        let message = self.message;
        let key_at = || format!("{} (field key)", message.name);
        ensure_varint_complete(self.buf, key_at)?;
        let (tag, wire_type) = decode_key(&mut self.buf).map_err(|e| malformed(key_at(), e))?;
        let at = || location(message, tag);
        let value = match wire_type {
            WireType::Varint => {
                ensure_varint_complete(self.buf, at)?;
                WireValue::Varint(decode_varint(&mut self.buf).map_err(|e| malformed(at(), e))?)
            }
            WireType::LengthDelimited => {
                ensure_varint_complete(self.buf, at)?;
                let len = decode_varint(&mut self.buf).map_err(|e| malformed(at(), e))?;
                let len = usize::try_from(len).ok().filter(|len| *len <= self.buf.len());
                let len = len.ok_or_else(|| ProtobufError::Truncated { at: at() })?;
                let (bytes, rest) = self.buf.split_at(len);
                self.buf = rest;
                WireValue::Bytes(bytes)
            }
            other => {
                let fixed_len = match other {
                    WireType::ThirtyTwoBit => 4,
                    WireType::SixtyFourBit => 8,
                    _ => 0,
                };
                if self.buf.len() < fixed_len {
                    return Err(ProtobufError::Truncated { at: at() });
                }
                skip_field(other, tag, &mut self.buf, DecodeContext::default()).map_err(|e| malformed(at(), e))?;
                WireValue::Skipped(other)
            }
        };
        Ok((tag, value))
    }
}

/// prost reports a varint cut off by the end of the buffer as a generic "invalid varint";
/// looking for its last byte first gives truncated bodies their own error.
fn ensure_varint_complete(buf: &[u8], at: impl Fn() -> String) -> Result<(), ProtobufError> {
    let terminated = buf.iter().take(10).any(|byte| byte & 0x80 == 0);
    if terminated || buf.len() >= 10 {
        Ok(())
    } else {
        Err(ProtobufError::Truncated { at: at() })
    }
}

fn malformed(at: String, error: prost::DecodeError) -> ProtobufError {
    ProtobufError::Malformed { at, reason: error.to_string() }
}

fn location(message: &Message, tag: u32) -> String {
    match message.position(tag) {
        Some(index) => format!("{}.{}", message.name, message.fields[index].json_name),
        None => format!("{} field {tag}", message.name),
    }
}

fn check_wire_type(message: &Message, field: &Field, value: WireValue<'_>) -> Result<(), ProtobufError> {
    let expected = field.kind.wire_type();
    let actual = value.wire_type();
    if expected == actual {
        Ok(())
    } else {
        let at = format!("{}.{}", message.name, field.json_name);
        Err(ProtobufError::WireTypeMismatch { at, expected, actual })
    }
}

/// The last occurrence of each field of a small fixed message (envelope, time, IntOrString, map
/// entry), by table position. Go's custom `Unmarshal` of times replaces the whole value, and
/// well-formed bodies never repeat a field of the others, so last-wins is enough here.
fn last_values<'a, const N: usize>(
    bytes: &'a [u8],
    message: &'static Message,
) -> Result<[Option<WireValue<'a>>; N], ProtobufError> {
    debug_assert_eq!(message.fields.len(), N, "table {} has {N} fields", message.name);
    let mut values = [None; N];
    for item in (WireFields { buf: bytes, message }) {
        let (tag, value) = item?;
        if let Some(index) = message.position(tag) {
            check_wire_type(message, &message.fields[index], value)?;
            values[index] = Some(value);
        }
    }
    Ok(values)
}

fn varint_or_zero(value: Option<WireValue<'_>>) -> u64 {
    match value {
        Some(WireValue::Varint(v)) => v,
        _ => 0,
    }
}

fn bytes_or_empty(value: Option<WireValue<'_>>) -> &[u8] {
    match value {
        Some(WireValue::Bytes(bytes)) => bytes,
        _ => &[],
    }
}

fn text(value: Option<WireValue<'_>>) -> String {
    String::from_utf8_lossy(bytes_or_empty(value)).into_owned()
}

/// Accumulates one message's fields as they arrive, then builds its JSON in table order.
struct MessageDecoder<'a> {
    message: &'static Message,
    slots: Vec<Slot<'a>>,
}

/// What has arrived so far for one field.
enum Slot<'a> {
    Unset,
    /// A scalar or well-known message (time, IntOrString, JSON): the last occurrence wins, as in
    /// Go, and is converted once at the end.
    Last(WireValue<'a>),
    /// A nested message: occurrences merge, as protobuf (and Go's decoder) merge them.
    Nested(MessageDecoder<'a>),
    List(Vec<Value>),
    /// Sorted like Go's JSON encoder sorts map keys; a repeated key keeps its last value.
    Map(BTreeMap<String, Value>),
}

impl<'a> MessageDecoder<'a> {
    fn new(message: &'static Message) -> Self {
        MessageDecoder { message, slots: message.fields.iter().map(|_| Slot::Unset).collect() }
    }

    fn merge(&mut self, bytes: &'a [u8]) -> Result<(), ProtobufError> {
        let message = self.message;
        for item in (WireFields { buf: bytes, message }) {
            let (tag, value) = item?;
            // Unknown field numbers were already skipped over by the iterator.
            let Some(index) = message.position(tag) else { continue };
            let field = &message.fields[index];
            check_wire_type(message, field, value)?;
            merge_field(message, field, &mut self.slots[index], value)?;
        }
        Ok(())
    }

    fn finish(self) -> Result<Map<String, Value>, ProtobufError> {
        let mut object = Map::new();
        for (field, slot) in self.message.fields.iter().zip(self.slots) {
            let value = match slot {
                Slot::Unset => continue,
                Slot::Last(value) => decode_single(self.message, field, value)?,
                Slot::Nested(decoder) => Value::Object(decoder.finish()?),
                Slot::List(elements) => Value::Array(elements),
                Slot::Map(entries) => Value::Object(entries.into_iter().collect()),
            };
            if field.presence == Presence::NonZero && is_zero(&value) {
                continue;
            }
            object.insert(field.json_name.to_owned(), value);
        }
        Ok(object)
    }
}

/// Folds one occurrence of a field (wire type already checked) into its slot.
fn merge_field<'a>(
    message: &'static Message,
    field: &Field,
    slot: &mut Slot<'a>,
    value: WireValue<'a>,
) -> Result<(), ProtobufError> {
    if field.repeated {
        let element = decode_single(message, field, value)?;
        match slot {
            Slot::List(elements) => elements.push(element),
            _ => *slot = Slot::List(vec![element]),
        }
        return Ok(());
    }
    match field.kind {
        FieldKind::StringMap | FieldKind::BytesMap => {
            let (key, entry_value) = decode_map_entry(field, bytes_or_empty(Some(value)))?;
            match slot {
                Slot::Map(entries) => {
                    entries.insert(key, entry_value);
                }
                _ => *slot = Slot::Map(BTreeMap::from([(key, entry_value)])),
            }
        }
        FieldKind::Message(nested) => {
            if !matches!(slot, Slot::Nested(_)) {
                *slot = Slot::Nested(MessageDecoder::new(nested));
            }
            if let Slot::Nested(decoder) = slot {
                decoder.merge(bytes_or_empty(Some(value)))?;
            }
        }
        _ => *slot = Slot::Last(value),
    }
    Ok(())
}

/// Converts one occurrence of a non-map field to JSON.
fn decode_single(message: &'static Message, field: &Field, value: WireValue<'_>) -> Result<Value, ProtobufError> {
    let at = || format!("{}.{}", message.name, field.json_name);
    let json = match (field.kind, value) {
        (FieldKind::Bool, WireValue::Varint(v)) => Value::Bool(v != 0),
        // int32 travels as a sign-extended 64-bit varint; its low 32 bits are the value.
        (FieldKind::Int32, WireValue::Varint(v)) => Value::from(v as i32),
        (FieldKind::Int64, WireValue::Varint(v)) => Value::from(v as i64),
        (FieldKind::String, WireValue::Bytes(bytes)) => Value::String(String::from_utf8_lossy(bytes).into_owned()),
        (FieldKind::Bytes, WireValue::Bytes(bytes)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
        }
        (FieldKind::Time, WireValue::Bytes(bytes)) => decode_time(bytes, TimePrecision::Seconds, at)?,
        (FieldKind::MicroTime, WireValue::Bytes(bytes)) => decode_time(bytes, TimePrecision::Micros, at)?,
        (FieldKind::IntOrString, WireValue::Bytes(bytes)) => decode_int_or_string(bytes, at)?,
        (FieldKind::Json, WireValue::Bytes(bytes)) => decode_json(bytes, at)?,
        (FieldKind::Message(nested), WireValue::Bytes(bytes)) => Value::Object(decode_message(bytes, nested)?),
        // Maps are never repeated (a table test checks), so only a wire-type mismatch lands here.
        (kind, value) => {
            return Err(ProtobufError::WireTypeMismatch {
                at: at(),
                expected: kind.wire_type(),
                actual: value.wire_type(),
            })
        }
    };
    Ok(json)
}

fn decode_map_entry(field: &Field, bytes: &[u8]) -> Result<(String, Value), ProtobufError> {
    let entry = match field.kind {
        FieldKind::BytesMap => &tables::BYTES_MAP_ENTRY,
        _ => &tables::STRING_MAP_ENTRY,
    };
    let [key, value] = last_values::<2>(bytes, entry)?;
    // An absent value is the empty string or empty bytes, both of which encode to "".
    let value = decode_single(entry, &entry.fields[1], value.unwrap_or(WireValue::Bytes(&[])))?;
    Ok((text(key), value))
}

#[derive(Clone, Copy)]
enum TimePrecision {
    /// `metav1.Time`: Go drops nanoseconds when decoding and formats whole seconds.
    Seconds,
    /// `metav1.MicroTime`: `RFC3339Micro`, nanoseconds truncated to microseconds.
    Micros,
}

/// `time.Time{}.Unix()` in Go: the zero time, which Go's JSON encoder writes as `null`.
const GO_ZERO_TIME_UNIX_SECONDS: i64 = -62_135_596_800;

fn decode_time(bytes: &[u8], precision: TimePrecision, at: impl Fn() -> String) -> Result<Value, ProtobufError> {
    let [seconds, nanos] = last_values::<2>(bytes, &tables::TIMESTAMP)?;
    // Go's Time.Unmarshal reads an empty message as the zero time.
    if seconds.is_none() && nanos.is_none() {
        return Ok(Value::Null);
    }
    let seconds = varint_or_zero(seconds) as i64;
    let nanos = match precision {
        TimePrecision::Seconds => 0,
        TimePrecision::Micros => i128::from(varint_or_zero(nanos) as i32),
    };
    // Go's time.Unix normalises nanoseconds outside [0, 1e9), so add rather than validate.
    let total_nanos = i128::from(seconds) * 1_000_000_000 + nanos;
    if total_nanos == i128::from(GO_ZERO_TIME_UNIX_SECONDS) * 1_000_000_000 {
        return Ok(Value::Null);
    }
    let whole_seconds = total_nanos.div_euclid(1_000_000_000);
    let subsec_nanos = total_nanos.rem_euclid(1_000_000_000);
    if !(i128::from(RFC3339_MIN_UNIX_SECONDS)..=i128::from(RFC3339_MAX_UNIX_SECONDS)).contains(&whole_seconds) {
        return Err(ProtobufError::TimeOutOfRange { at: at(), seconds });
    }
    // In range, so it fits an i64 with room to spare.
    let whole_seconds = whole_seconds as i64;
    let (year, month, day) = civil_from_days(whole_seconds.div_euclid(86_400));
    let second_of_day = whole_seconds.rem_euclid(86_400);
    let (hour, minute, second) = (second_of_day / 3600, second_of_day / 60 % 60, second_of_day % 60);
    let whole = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}");
    Ok(Value::String(match precision {
        TimePrecision::Seconds => format!("{whole}Z"),
        // Go's RFC3339Micro layout truncates, it does not round.
        TimePrecision::Micros => format!("{whole}.{:06}Z", subsec_nanos / 1000),
    }))
}

/// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z in seconds since the epoch: the span RFC 3339
/// (and so Go's JSON encoder) can write. jiff's `Timestamp` stops a day short of the upper end.
const RFC3339_MIN_UNIX_SECONDS: i64 = -62_167_219_200;
const RFC3339_MAX_UNIX_SECONDS: i64 = 253_402_300_799;

/// The proleptic Gregorian `(year, month, day)` of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`; exact for every day in the RFC 3339 range).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + 719_468; // days since 0000-03-01, so leap days fall at the end of a year
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn decode_int_or_string(bytes: &[u8], at: impl Fn() -> String) -> Result<Value, ProtobufError> {
    let [kind, int_val, str_val] = last_values::<3>(bytes, &tables::INT_OR_STRING)?;
    match varint_or_zero(kind) as i64 {
        0 => Ok(Value::from(varint_or_zero(int_val) as i32)),
        1 => Ok(Value::String(text(str_val))),
        other => Err(ProtobufError::InvalidIntOrString { at: at(), int_or_string_type: other }),
    }
}

fn decode_json(bytes: &[u8], at: impl Fn() -> String) -> Result<Value, ProtobufError> {
    let [raw] = last_values::<1>(bytes, &tables::RAW_EXTENSION)?;
    let raw = bytes_or_empty(raw);
    // Go marshals a RawExtension or FieldsV1 without bytes as null.
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(raw).map_err(|source| ProtobufError::InvalidJson { at: at(), source })
}

/// The values a Go `omitempty` field leaves out, plus `null` and `{}` (zero times and empty
/// structs), which decode to the same Go value as an absent key.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0) || n.as_u64() == Some(0) || n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::encoding::{encode_key, encode_varint};
    use serde_json::json;

    /// A tiny protobuf writer, so tests need no generated Kubernetes types.
    #[derive(Default, Clone)]
    struct Enc(Vec<u8>);

    impl Enc {
        fn new() -> Self {
            Enc::default()
        }
        fn bytes(mut self, tag: u32, value: &[u8]) -> Self {
            encode_key(tag, WireType::LengthDelimited, &mut self.0);
            encode_varint(value.len() as u64, &mut self.0);
            self.0.extend_from_slice(value);
            self
        }
        fn string(self, tag: u32, value: &str) -> Self {
            self.bytes(tag, value.as_bytes())
        }
        fn message(self, tag: u32, message: Enc) -> Self {
            self.bytes(tag, &message.0)
        }
        fn entry(self, tag: u32, key: &str, value: &[u8]) -> Self {
            self.message(tag, Enc::new().string(1, key).bytes(2, value))
        }
        fn int64(mut self, tag: u32, value: i64) -> Self {
            prost::encoding::int64::encode(tag, &value, &mut self.0);
            self
        }
        fn int32(mut self, tag: u32, value: i32) -> Self {
            prost::encoding::int32::encode(tag, &value, &mut self.0);
            self
        }
        fn bool(mut self, tag: u32, value: bool) -> Self {
            prost::encoding::bool::encode(tag, &value, &mut self.0);
            self
        }
        fn raw(mut self, bytes: &[u8]) -> Self {
            self.0.extend_from_slice(bytes);
            self
        }
    }

    fn envelope(api_version: &str, kind: &str, object: Enc) -> Vec<u8> {
        let unknown = Enc::new()
            .message(1, Enc::new().string(1, api_version).string(2, kind))
            .message(2, object)
            .string(3, "")
            .string(4, "");
        [MAGIC.as_slice(), &unknown.0].concat()
    }

    fn time(seconds: i64, nanos: i32) -> Enc {
        Enc::new().int64(1, seconds).int32(2, nanos)
    }

    /// ObjectMeta as Go marshals a fresh object: every value field written, zero or not.
    fn fresh_meta(name: &str) -> Enc {
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
    type ErrorCheck = fn(&ProtobufError) -> bool;

    /// A time on the wire (`None`: an empty message), then the expected Time and MicroTime JSON.
    type TimeCase = (Option<(i64, i32)>, Value, Value);

    fn decode(api_version: &str, kind: &str, object: Enc) -> Value {
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
    fn config_map_keeps_pointer_zeros_and_drops_value_zeros() {
        let object = Enc::new()
            .message(1, fresh_meta("cm").entry(11, "app", b"web").entry(11, "tier", b"front").entry(12, "note", b""))
            .entry(2, "b", b"2")
            .entry(2, "a", b"1")
            .entry(3, "blob", &[0, 0xff, 1])
            .bool(4, false);
        assert_eq!(
            decode("v1", "ConfigMap", object),
            json!({
                "kind": "ConfigMap",
                "apiVersion": "v1",
                "metadata": {"name": "cm", "labels": {"app": "web", "tier": "front"}, "annotations": {"note": ""}},
                "immutable": false,
                "data": {"a": "1", "b": "2"},
                "binaryData": {"blob": "AP8B"},
            })
        );
    }

    #[test]
    fn secret_data_is_base64_and_empty_type_is_dropped() {
        let object = Enc::new()
            .message(1, fresh_meta("s").string(3, "ns1"))
            .entry(2, "token", b"\x00secret")
            .string(3, "")
            .entry(4, "plain", b"text")
            .bool(5, true);
        let decoded = decode("v1", "Secret", object);
        assert_eq!(
            decoded,
            json!({
                "kind": "Secret",
                "apiVersion": "v1",
                "metadata": {"name": "s", "namespace": "ns1"},
                "immutable": true,
                "data": {"token": "AHNlY3JldA=="},
                "stringData": {"plain": "text"},
            })
        );
        let typed = decode("v1", "Secret", Enc::new().message(1, fresh_meta("s")).string(3, "kubernetes.io/tls"));
        assert_eq!(typed["type"], "kubernetes.io/tls");
    }

    #[test]
    fn namespace_with_spec_and_status() {
        let condition = Enc::new()
            .string(1, "NamespaceDeletionContentFailure")
            .string(2, "False")
            .message(4, time(1_704_164_645, 0))
            .string(5, "")
            .string(6, "");
        let object = Enc::new()
            .message(1, fresh_meta("ns1"))
            .message(2, Enc::new().string(1, "kubernetes"))
            .message(3, Enc::new().string(1, "Active").message(2, condition));
        assert_eq!(
            decode("v1", "Namespace", object),
            json!({
                "kind": "Namespace",
                "apiVersion": "v1",
                "metadata": {"name": "ns1"},
                "spec": {"finalizers": ["kubernetes"]},
                "status": {
                    "phase": "Active",
                    "conditions": [{
                        "type": "NamespaceDeletionContentFailure",
                        "status": "False",
                        "lastTransitionTime": "2024-01-02T03:04:05Z",
                    }],
                },
            })
        );
    }

    #[test]
    fn cluster_role_binding_subjects_and_role_ref() {
        let rbac = "rbac.authorization.k8s.io";
        let object = Enc::new()
            .message(1, fresh_meta("crb"))
            .message(2, Enc::new().string(1, "User").string(2, rbac).string(3, "alice").string(4, ""))
            .message(2, Enc::new().string(1, "ServiceAccount").string(2, "").string(3, "sa").string(4, "kube-system"))
            .message(3, Enc::new().string(1, rbac).string(2, "ClusterRole").string(3, "view"));
        assert_eq!(
            decode("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", object),
            json!({
                "kind": "ClusterRoleBinding",
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "metadata": {"name": "crb"},
                "subjects": [
                    {"kind": "User", "apiGroup": rbac, "name": "alice"},
                    {"kind": "ServiceAccount", "name": "sa", "namespace": "kube-system"},
                ],
                "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "view"},
            })
        );
    }

    #[test]
    fn object_meta_every_field() {
        let owner = Enc::new()
            .string(1, "ReplicaSet")
            .string(3, "rs")
            .string(4, "uid-1")
            .string(5, "apps/v1")
            .bool(6, true)
            .bool(7, false);
        let managed = Enc::new()
            .string(1, "kubectl")
            .string(2, "Update")
            .string(3, "v1")
            .message(4, time(0, 0))
            .string(6, "FieldsV1")
            .message(7, Enc::new().string(1, r#"{"f:data":{}}"#))
            .string(8, "");
        let meta = Enc::new()
            .string(1, "n")
            .string(2, "gen-")
            .string(3, "ns")
            .string(4, "/self")
            .string(5, "uid-2")
            .string(6, "42")
            .int64(7, 3)
            .message(8, time(1_704_164_645, 0))
            .message(9, time(1_704_164_646, 0))
            .int64(10, 0)
            .entry(11, "l", b"1")
            .entry(12, "a", b"2")
            .message(13, owner)
            .string(14, "example.com/f")
            .message(17, managed);
        let decoded = decode("v1", "ConfigMap", Enc::new().message(1, meta));
        assert_eq!(
            decoded["metadata"],
            json!({
                "name": "n",
                "generateName": "gen-",
                "namespace": "ns",
                "selfLink": "/self",
                "uid": "uid-2",
                "resourceVersion": "42",
                "generation": 3,
                "creationTimestamp": "2024-01-02T03:04:05Z",
                "deletionTimestamp": "2024-01-02T03:04:06Z",
                "deletionGracePeriodSeconds": 0,
                "labels": {"l": "1"},
                "annotations": {"a": "2"},
                "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "uid-1",
                    "controller": true, "blockOwnerDeletion": false,
                }],
                "finalizers": ["example.com/f"],
                "managedFields": [{
                    "manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                    "time": "1970-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}},
                }],
            })
        );
    }

    #[test]
    fn service_account_references() {
        let object = Enc::new()
            .message(1, fresh_meta("sa"))
            .message(2, Enc::new().string(1, "Secret").string(2, "").string(3, "tok").string(7, ""))
            .message(3, Enc::new().string(1, "regcred"))
            .bool(4, false);
        assert_eq!(
            decode("v1", "ServiceAccount", object),
            json!({
                "kind": "ServiceAccount",
                "apiVersion": "v1",
                "metadata": {"name": "sa"},
                "secrets": [{"kind": "Secret", "name": "tok"}],
                "imagePullSecrets": [{"name": "regcred"}],
                "automountServiceAccountToken": false,
            })
        );
    }

    #[test]
    fn cluster_role_rules_and_aggregation() {
        let rule = Enc::new().string(1, "get").string(2, "").string(3, "pods").string(4, "p1").string(5, "/healthz");
        let selector = Enc::new()
            .entry(1, "agg", b"true")
            .message(2, Enc::new().string(1, "tier").string(2, "In").string(3, "a").string(3, "b"));
        let object =
            Enc::new().message(1, fresh_meta("cr")).message(2, rule).message(3, Enc::new().message(1, selector));
        let decoded = decode("rbac.authorization.k8s.io/v1", "ClusterRole", object);
        assert_eq!(
            decoded["rules"],
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["p1"], "nonResourceURLs": ["/healthz"]}])
        );
        assert_eq!(
            decoded["aggregationRule"],
            json!({"clusterRoleSelectors": [{
                "matchLabels": {"agg": "true"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
            }]})
        );
    }

    #[test]
    fn lease_spec_pointers_and_micro_times() {
        let spec = Enc::new()
            .string(1, "node-a")
            .int32(2, 0)
            .message(3, time(1_704_164_645, 123_456_789))
            .message(4, time(1_704_164_646, 0))
            .int32(5, -1)
            .string(6, "")
            .string(7, "node-b");
        let decoded =
            decode("coordination.k8s.io/v1", "Lease", Enc::new().message(1, fresh_meta("l")).message(2, spec));
        assert_eq!(
            decoded["spec"],
            json!({
                "holderIdentity": "node-a",
                "leaseDurationSeconds": 0,
                "acquireTime": "2024-01-02T03:04:05.123456Z",
                "renewTime": "2024-01-02T03:04:06.000000Z",
                "leaseTransitions": -1,
                "strategy": "",
                "preferredHolder": "node-b",
            })
        );
    }

    #[test]
    fn core_event() {
        let involved = Enc::new().string(1, "Pod").string(2, "default").string(3, "p").string(4, "").string(7, "");
        let object = Enc::new()
            .message(1, fresh_meta("p.1"))
            .message(2, involved)
            .string(3, "Started")
            .string(4, "Started container")
            .message(5, Enc::new().string(1, "kubelet").string(2, "node-a"))
            .message(6, time(1_704_164_645, 0))
            .message(7, Enc::new())
            .int32(8, 2)
            .string(9, "Normal")
            .message(10, Enc::new())
            .message(11, Enc::new().int32(1, 3).message(2, time(1_704_164_647, 5_000)))
            .string(12, "")
            .message(13, Enc::new().string(1, "Node").string(3, "node-a"))
            .string(14, "")
            .string(15, "");
        assert_eq!(
            decode("v1", "Event", object),
            json!({
                "kind": "Event",
                "apiVersion": "v1",
                "metadata": {"name": "p.1"},
                "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
                "reason": "Started",
                "message": "Started container",
                "source": {"component": "kubelet", "host": "node-a"},
                "firstTimestamp": "2024-01-02T03:04:05Z",
                "count": 2,
                "type": "Normal",
                "series": {"count": 3, "lastObservedTime": "2024-01-02T03:04:07.000005Z"},
                "related": {"kind": "Node", "name": "node-a"},
                "reportingComponent": "",
                "reportingInstance": "",
            })
        );
    }

    #[test]
    fn time_conversion_table() {
        // (seconds, nanos) → Time (deletionTimestamp: a pointer, so null is kept), MicroTime.
        let go_zero = GO_ZERO_TIME_UNIX_SECONDS;
        let cases: &[TimeCase] = &[
            (None, Value::Null, Value::Null),
            (Some((go_zero, 0)), Value::Null, Value::Null),
            (Some((0, 0)), json!("1970-01-01T00:00:00Z"), json!("1970-01-01T00:00:00.000000Z")),
            (Some((1_704_164_645, 999_999_999)), json!("2024-01-02T03:04:05Z"), json!("2024-01-02T03:04:05.999999Z")),
            (Some((-1, 0)), json!("1969-12-31T23:59:59Z"), json!("1969-12-31T23:59:59.000000Z")),
            (Some((253_402_300_799, 0)), json!("9999-12-31T23:59:59Z"), json!("9999-12-31T23:59:59.000000Z")),
            (Some((-62_167_219_200, 0)), json!("0000-01-01T00:00:00Z"), json!("0000-01-01T00:00:00.000000Z")),
            (Some((951_782_400, 0)), json!("2000-02-29T00:00:00Z"), json!("2000-02-29T00:00:00.000000Z")),
            (Some((-2_203_891_200, 0)), json!("1900-03-01T00:00:00Z"), json!("1900-03-01T00:00:00.000000Z")),
            (Some((1_709_164_800, 1_000)), json!("2024-02-29T00:00:00Z"), json!("2024-02-29T00:00:00.000001Z")),
            // Negative nanos borrow from the seconds, as Go's time.Unix does.
            (Some((10, -1)), json!("1970-01-01T00:00:10Z"), json!("1970-01-01T00:00:09.999999Z")),
        ];
        for (wire, want_time, want_micro) in cases {
            let encoded = wire.map_or_else(Enc::new, |(seconds, nanos)| time(seconds, nanos));
            let meta = decode_message(&Enc::new().message(9, encoded.clone()).0, &tables::OBJECT_META).expect("time");
            assert_eq!(&meta["deletionTimestamp"], want_time, "Time {wire:?}");
            let spec = decode_message(&Enc::new().message(3, encoded).0, &tables::LEASE_SPEC).expect("micro");
            assert_eq!(&spec["acquireTime"], want_micro, "MicroTime {wire:?}");
        }
        for seconds in [253_402_300_800, -62_167_219_201, i64::MAX, i64::MIN] {
            let out_of_range = Enc::new().message(9, time(seconds, 0));
            let err = decode_message(&out_of_range.0, &tables::OBJECT_META).unwrap_err();
            assert!(
                matches!(err, ProtobufError::TimeOutOfRange { ref at, .. } if at == "ObjectMeta.deletionTimestamp")
            );
        }
    }

    #[test]
    fn civil_from_days_matches_jiffs_calendar() {
        let epoch = jiff::civil::date(1970, 1, 1);
        let first = RFC3339_MIN_UNIX_SECONDS.div_euclid(86_400);
        let last = RFC3339_MAX_UNIX_SECONDS.div_euclid(86_400);
        for days in (first..=last).step_by(7).chain([first, last, -1, 0, 1]) {
            let date = epoch.checked_add(jiff::Span::new().days(days)).expect("in jiff's range");
            let want = (i64::from(date.year()), i64::from(date.month()), i64::from(date.day()));
            assert_eq!(civil_from_days(days), want, "day {days}");
        }
    }

    #[test]
    fn int_or_string_conversion_table() {
        static PORT: Message = Message {
            name: "Port",
            fields: &[Field {
                tag: 1,
                json_name: "port",
                kind: FieldKind::IntOrString,
                repeated: false,
                presence: Presence::OnWire,
            }],
        };
        let cases: &[(Enc, Option<Value>)] = &[
            (Enc::new().int64(1, 0).int32(2, 8080).string(3, ""), Some(json!(8080))),
            (Enc::new().int64(1, 1).int32(2, 0).string(3, "http"), Some(json!("http"))),
            (Enc::new().int32(2, -1), Some(json!(-1))),
            (Enc::new().int64(1, 1), Some(json!(""))),
            (Enc::new(), Some(json!(0))),
            (Enc::new().int64(1, 7), None),
        ];
        for (wire, want) in cases {
            let result = decode_message(&Enc::new().message(1, wire.clone()).0, &PORT);
            match want {
                Some(want) => assert_eq!(&result.expect("decodes")["port"], want),
                None => assert!(matches!(result, Err(ProtobufError::InvalidIntOrString { int_or_string_type: 7, .. }))),
            }
        }
    }

    #[test]
    fn unknown_fields_are_skipped_at_every_level() {
        let plain = Enc::new().message(1, fresh_meta("cm")).entry(2, "a", b"b");
        let noisy_meta = fresh_meta("cm")
            .int64(99, 5)
            .raw(&[0x85, 0x06, 1, 2, 3, 4]) // field 96, 32-bit
            .raw(&[0x81, 0x06, 1, 2, 3, 4, 5, 6, 7, 8]) // field 96, 64-bit
            .raw(&[0x83, 0x06, 0x08, 0x01, 0x84, 0x06]) // field 96, group holding a varint
            .string(16, "removed clusterName");
        let noisy = Enc::new()
            .string(50, "future field")
            .message(1, noisy_meta)
            .entry(2, "a", b"b")
            .message(2, Enc::new().string(1, "c").string(2, "d").int32(3, 9))
            .int64(77, -3);
        let mut want = decode("v1", "ConfigMap", plain);
        want["data"]["c"] = json!("d");
        assert_eq!(decode("v1", "ConfigMap", noisy), want);
    }

    #[test]
    fn duplicate_fields_follow_protobuf_rules() {
        // Scalars: last wins. Nested messages: merge. Map keys: last wins. Lists: append.
        let object = Enc::new()
            .message(1, Enc::new().string(1, "first").entry(11, "k", b"1"))
            .message(1, Enc::new().string(1, "second").entry(11, "k", b"2").string(14, "f"))
            .message(1, Enc::new().string(14, "g"))
            .bool(4, true)
            .bool(4, false);
        let decoded = decode("v1", "ConfigMap", object);
        assert_eq!(decoded["metadata"], json!({"name": "second", "labels": {"k": "2"}, "finalizers": ["f", "g"]}));
        assert_eq!(decoded["immutable"], json!(false));
    }

    #[test]
    fn invalid_utf8_becomes_replacement_character_like_go() {
        let decoded = decode("v1", "ConfigMap", Enc::new().entry(2, "k", b"a\xffb"));
        assert_eq!(decoded["data"]["k"], "a\u{fffd}b");
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
                envelope("apps/v1", "Deployment", Enc::new()),
                |e| matches!(e, ProtobufError::UnsupportedKind { api_version, kind } if api_version == "apps/v1" && kind == "Deployment"),
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
        let unsupported = decode_object(&envelope("apps/v1", "Deployment", Enc::new())).unwrap_err().to_string();
        assert!(unsupported.contains("application/json"), "{unsupported}");
    }

    #[test]
    fn truncated_input_is_reported_where_it_ends() {
        let body = envelope("v1", "ConfigMap", Enc::new().message(1, fresh_meta("cm")).entry(2, "a", b"b"));
        // Cut anywhere inside the envelope's raw field: its declared length overruns the body.
        let raw_end = body.len() - 4; // contentEncoding and contentType (2 bytes each) follow raw
        let raw_start = raw_end - (Enc::new().message(1, fresh_meta("cm")).entry(2, "a", b"b").0.len());
        for cut in raw_start..raw_end {
            let err = decode_object(&body[..cut]).expect_err("truncated");
            assert!(matches!(err, ProtobufError::Truncated { .. }), "cut at {cut}: {err:?}");
        }
        let cases: &[(&[u8], &str)] = &[
            (&[0x0a, 0x05, 0x0a, 0x03, b'a'], "ConfigMap.metadata"),
            (&[0x0a, 0x02, 0x38, 0x80], "ObjectMeta.generation"),
            (&[0x0a, 0x01, 0x88], "ObjectMeta (field key)"),
            (&[0x0a, 0x03, 0x85, 0x06, 0x01], "ObjectMeta field 96"),
            (&[0x12, 0x04, 0x0a, 0x05, b'a', b'b'], "map entry.key"),
        ];
        for (raw, want_at) in cases {
            let err = decode_message(raw, &tables::CONFIG_MAP).expect_err("truncated");
            assert!(matches!(&err, ProtobufError::Truncated { at } if at == want_at), "{raw:02x?}: {err:?}");
        }
    }

    #[test]
    fn malformed_input_is_rejected() {
        let cases: &[(&[u8], ErrorCheck)] = &[
            // data (a map) sent as a varint.
            (
                &[0x10, 0x01],
                |e| matches!(e, ProtobufError::WireTypeMismatch { at, expected: WireType::LengthDelimited, actual: WireType::Varint } if at == "ConfigMap.data"),
            ),
            // immutable (a bool) sent as a string.
            (&[0x22, 0x00], |e| matches!(e, ProtobufError::WireTypeMismatch { at, .. } if at == "ConfigMap.immutable")),
            // field number 0.
            (&[0x00, 0x00], |e| matches!(e, ProtobufError::Malformed { .. })),
            // wire type 7 does not exist.
            (&[0x0f], |e| matches!(e, ProtobufError::Malformed { .. })),
            // a varint longer than ten bytes.
            (&[0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], |e| {
                matches!(e, ProtobufError::Malformed { .. })
            }),
        ];
        for (raw, expected) in cases {
            let err = decode_message(raw, &tables::CONFIG_MAP).expect_err("malformed");
            assert!(expected(&err), "{raw:02x?}: {err:?}");
        }
        let not_json = Enc::new().message(1, Enc::new().message(17, Enc::new().message(7, Enc::new().string(1, "{"))));
        let err = decode_message(&not_json.0, &tables::CONFIG_MAP).unwrap_err();
        assert!(
            matches!(&err, ProtobufError::InvalidJson { at, .. } if at == "ManagedFieldsEntry.fieldsV1"),
            "{err:?}"
        );
    }

    /// Tags and JSON keys unique per message, maps never repeated, and no cycles (the decoder's
    /// recursion depth is the schema's depth).
    #[test]
    fn tables_are_well_formed() {
        fn check(message: &'static Message, depth: usize) {
            assert!(depth < 8, "{} nests too deep (a cycle?)", message.name);
            for (i, field) in message.fields.iter().enumerate() {
                assert!(field.tag >= 1, "{}.{}", message.name, field.json_name);
                for other in &message.fields[i + 1..] {
                    assert_ne!(field.tag, other.tag, "{}: duplicate tag", message.name);
                    assert_ne!(field.json_name, other.json_name, "{}: duplicate key", message.name);
                }
                let is_map = matches!(field.kind, FieldKind::StringMap | FieldKind::BytesMap);
                assert!(!(is_map && field.repeated), "{}.{}: repeated map", message.name, field.json_name);
                if let FieldKind::Message(nested) = field.kind {
                    check(nested, depth + 1);
                }
            }
        }
        check(&tables::UNKNOWN, 0);
        for (api_version, kind, message) in tables::KINDS {
            assert_eq!(message_for(api_version, kind).map(|m| m.name), Some(message.name));
            check(message, 0);
        }
    }
}
