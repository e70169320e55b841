//! Protobuf bodies of the `authorization.k8s.io/v1` reviews. `kubectl auth can-i` posts
//! its SelfSubjectAccessReview and SelfSubjectRulesReview as protobuf only, and
//! `protocol::protobuf`'s tables cover the stored kinds, not these; so the review
//! tables live here, decoded with protocol's generic decoder.
//!
//! Transcribed from `k8s.io/api/authorization/v1/generated.proto`. Skipped, as unknown
//! field numbers are: `metadata` (reviews are never stored; kubectl sends it empty),
//! `status` (the server writes it), the access review's `extra` map (a map of messages,
//! which the generic decoder has no kind for; send a SubjectAccessReview with `extra` as
//! JSON), and the 1.31 field and label selector attributes (not used by RBAC).

use crate::http::status::{ApiError, ApiResult};
use base64::Engine;
use protocol::protobuf::{decode_message, Field, FieldKind, Message, Presence, MAGIC};
use serde_json::{Map, Value};

const fn field(tag: u32, json_name: &'static str, kind: FieldKind, presence: Presence) -> Field {
    Field { tag, json_name, kind, repeated: false, presence }
}

const fn text(tag: u32, json_name: &'static str) -> Field {
    field(tag, json_name, FieldKind::String, Presence::NonZero)
}

const fn message(tag: u32, json_name: &'static str, message: &'static Message) -> Field {
    field(tag, json_name, FieldKind::Message(message), Presence::OnWire)
}

/// `runtime.Unknown`, the envelope of every Kubernetes protobuf body.
static UNKNOWN: Message = Message {
    name: "Unknown",
    fields: &[
        message(1, "typeMeta", &TYPE_META),
        field(2, "raw", FieldKind::Bytes, Presence::OnWire),
        text(3, "contentEncoding"),
    ],
};

static TYPE_META: Message = Message { name: "TypeMeta", fields: &[text(1, "apiVersion"), text(2, "kind")] };

static RESOURCE_ATTRIBUTES: Message = Message {
    name: "ResourceAttributes",
    fields: &[
        text(1, "namespace"),
        text(2, "verb"),
        text(3, "group"),
        text(4, "version"),
        text(5, "resource"),
        text(6, "subresource"),
        text(7, "name"),
    ],
};

static NON_RESOURCE_ATTRIBUTES: Message =
    Message { name: "NonResourceAttributes", fields: &[text(1, "path"), text(2, "verb")] };

static SELF_SUBJECT_ACCESS_REVIEW_SPEC: Message = Message {
    name: "SelfSubjectAccessReviewSpec",
    fields: &[
        message(1, "resourceAttributes", &RESOURCE_ATTRIBUTES),
        message(2, "nonResourceAttributes", &NON_RESOURCE_ATTRIBUTES),
    ],
};

static SUBJECT_ACCESS_REVIEW_SPEC: Message = Message {
    name: "SubjectAccessReviewSpec",
    fields: &[
        message(1, "resourceAttributes", &RESOURCE_ATTRIBUTES),
        message(2, "nonResourceAttributes", &NON_RESOURCE_ATTRIBUTES),
        text(3, "user"),
        Field { tag: 4, json_name: "groups", kind: FieldKind::String, repeated: true, presence: Presence::NonZero },
        text(6, "uid"),
    ],
};

static SELF_SUBJECT_RULES_REVIEW_SPEC: Message =
    Message { name: "SelfSubjectRulesReviewSpec", fields: &[text(1, "namespace")] };

/// A review: its spec (field 2) is all the server reads.
macro_rules! review {
    ($name:literal, $spec:expr) => {
        Message { name: $name, fields: &[message(2, "spec", $spec)] }
    };
}

static SELF_SUBJECT_ACCESS_REVIEW: Message = review!("SelfSubjectAccessReview", &SELF_SUBJECT_ACCESS_REVIEW_SPEC);
static SELF_SUBJECT_RULES_REVIEW: Message = review!("SelfSubjectRulesReview", &SELF_SUBJECT_RULES_REVIEW_SPEC);
static SUBJECT_ACCESS_REVIEW: Message = review!("SubjectAccessReview", &SUBJECT_ACCESS_REVIEW_SPEC);
static LOCAL_SUBJECT_ACCESS_REVIEW: Message = review!("LocalSubjectAccessReview", &SUBJECT_ACCESS_REVIEW_SPEC);

fn message_for(kind: &str) -> Option<&'static Message> {
    match kind {
        "SelfSubjectAccessReview" => Some(&SELF_SUBJECT_ACCESS_REVIEW),
        "SelfSubjectRulesReview" => Some(&SELF_SUBJECT_RULES_REVIEW),
        "SubjectAccessReview" => Some(&SUBJECT_ACCESS_REVIEW),
        "LocalSubjectAccessReview" => Some(&LOCAL_SUBJECT_ACCESS_REVIEW),
        _ => None,
    }
}

/// Decodes a protobuf review body into the JSON a client would have sent.
pub fn decode_review(body: &[u8]) -> ApiResult<Value> {
    let bad = |why: String| ApiError::bad_request(format!("the protobuf request body does not decode: {why}"));
    let envelope = body.strip_prefix(MAGIC.as_slice()).ok_or_else(|| bad("it lacks the k8s\\0 prefix".into()))?;
    let envelope = decode_message(envelope, &UNKNOWN).map_err(|e| bad(e.to_string()))?;
    let text_at = |pointer: &str| envelope.get("typeMeta").and_then(|t| t.get(pointer)).and_then(Value::as_str);
    let (api_version, kind) = (text_at("apiVersion").unwrap_or_default(), text_at("kind").unwrap_or_default());
    if envelope.get("contentEncoding").is_some() {
        return Err(bad("content encodings are not supported".into()));
    }
    let message = match (api_version, message_for(kind)) {
        ("authorization.k8s.io/v1", Some(message)) => message,
        _ => {
            return Err(ApiError::unsupported_media_type_because(format!(
                "protobuf bodies of kind {kind:?} in {api_version:?} are not supported here; send this object as application/json or application/yaml"
            )))
        }
    };
    let raw = envelope.get("raw").and_then(Value::as_str).unwrap_or_default();
    let raw = base64::engine::general_purpose::STANDARD.decode(raw).map_err(|e| bad(e.to_string()))?;
    let fields = decode_message(&raw, message).map_err(|e| bad(e.to_string()))?;
    let mut object = Map::with_capacity(fields.len() + 2);
    object.insert("kind".into(), Value::from(kind));
    object.insert("apiVersion".into(), Value::from(api_version));
    object.extend(fields);
    Ok(Value::Object(object))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Protobuf's length-delimited field `tag` holding `bytes`.
    fn delimited(tag: u32, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![((tag << 3) | 2) as u8, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }

    fn envelope(kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = [delimited(1, b"authorization.k8s.io/v1"), delimited(2, kind.as_bytes())].concat();
        let mut body = MAGIC.to_vec();
        body.extend(delimited(1, &type_meta));
        body.extend(delimited(2, raw));
        body
    }

    #[test]
    fn kubectl_can_i_bodies_decode() {
        let attributes = [delimited(1, b"default"), delimited(2, b"get"), delimited(5, b"configmaps")].concat();
        let spec = delimited(1, &attributes);
        let review = [delimited(1, b""), delimited(2, &spec)].concat();
        let decoded = decode_review(&envelope("SelfSubjectAccessReview", &review)).unwrap();
        assert_eq!(
            decoded,
            json!({
                "kind": "SelfSubjectAccessReview",
                "apiVersion": "authorization.k8s.io/v1",
                "spec": {"resourceAttributes": {"namespace": "default", "verb": "get", "resource": "configmaps"}},
            })
        );
        let rules = delimited(2, &delimited(1, b"default"));
        let decoded = decode_review(&envelope("SelfSubjectRulesReview", &rules)).unwrap();
        assert_eq!(decoded["spec"], json!({"namespace": "default"}));
        let groups = [delimited(3, b"alice"), delimited(4, b"a"), delimited(4, b"b")].concat();
        let decoded = decode_review(&envelope("SubjectAccessReview", &delimited(2, &groups))).unwrap();
        assert_eq!(decoded["spec"], json!({"user": "alice", "groups": ["a", "b"]}));
        assert_eq!(decode_review(&envelope("ConfigMap", b"")).unwrap_err().code, 415);
        assert_eq!(decode_review(b"not protobuf").unwrap_err().code, 400);
    }
}
