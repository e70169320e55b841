//! The `authorization.k8s.io/v1` reviews: `kubectl auth can-i` posts its
//! SelfSubjectAccessReview and SelfSubjectRulesReview as protobuf only; and
//! `authentication.k8s.io/v1` SelfSubjectReview, which `kubectl auth whoami` posts.
//!
//! Transcribed from `k8s.io/api/authorization/v1/generated.proto`. Left out, as unknown
//! field numbers are: `metadata` (reviews are never stored; kubectl sends it empty),
//! `status` (the server writes it), the access review's `extra` map (a map of messages,
//! which the decoder has no kind for; send a SubjectAccessReview with `extra` as JSON),
//! and the 1.31 field and label selector attributes (not used by RBAC).

use super::FieldKind::{self, String};
use super::Message;
use super::{list, non_zero, on_wire};

const fn message(tag: u32, json_name: &'static str, message: &'static Message) -> super::Field {
    on_wire(tag, json_name, FieldKind::Message(message))
}

static RESOURCE_ATTRIBUTES: Message = Message {
    name: "ResourceAttributes",
    fields: &[
        non_zero(1, "namespace", String),
        non_zero(2, "verb", String),
        non_zero(3, "group", String),
        non_zero(4, "version", String),
        non_zero(5, "resource", String),
        non_zero(6, "subresource", String),
        non_zero(7, "name", String),
    ],
};

static NON_RESOURCE_ATTRIBUTES: Message =
    Message { name: "NonResourceAttributes", fields: &[non_zero(1, "path", String), non_zero(2, "verb", String)] };

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
        non_zero(3, "user", String),
        list(4, "groups", String),
        non_zero(6, "uid", String),
    ],
};

static SELF_SUBJECT_RULES_REVIEW_SPEC: Message =
    Message { name: "SelfSubjectRulesReviewSpec", fields: &[non_zero(1, "namespace", String)] };

// Reviews: their spec (field 2) is all the server reads.

static SELF_SUBJECT_ACCESS_REVIEW: Message =
    Message { name: "SelfSubjectAccessReview", fields: &[message(2, "spec", &SELF_SUBJECT_ACCESS_REVIEW_SPEC)] };
static SELF_SUBJECT_RULES_REVIEW: Message =
    Message { name: "SelfSubjectRulesReview", fields: &[message(2, "spec", &SELF_SUBJECT_RULES_REVIEW_SPEC)] };
static SUBJECT_ACCESS_REVIEW: Message =
    Message { name: "SubjectAccessReview", fields: &[message(2, "spec", &SUBJECT_ACCESS_REVIEW_SPEC)] };
static LOCAL_SUBJECT_ACCESS_REVIEW: Message =
    Message { name: "LocalSubjectAccessReview", fields: &[message(2, "spec", &SUBJECT_ACCESS_REVIEW_SPEC)] };

/// `kubectl auth whoami`'s SelfSubjectReview carries nothing the server reads: who asks
/// is the answer.
static SELF_SUBJECT_REVIEW: Message = Message { name: "SelfSubjectReview", fields: &[] };

/// The review kinds, for [`super::message_for`].
pub(super) static KINDS: &[(&str, &str, &Message)] = &[
    ("authentication.k8s.io/v1", "SelfSubjectReview", &SELF_SUBJECT_REVIEW),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview", &SELF_SUBJECT_ACCESS_REVIEW),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview", &SELF_SUBJECT_RULES_REVIEW),
    ("authorization.k8s.io/v1", "SubjectAccessReview", &SUBJECT_ACCESS_REVIEW),
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview", &LOCAL_SUBJECT_ACCESS_REVIEW),
];

#[cfg(test)]
mod tests {
    use crate::protobuf::{decode_object, MAGIC};
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
        let decoded = decode_object(&envelope("SelfSubjectAccessReview", &review)).unwrap();
        assert_eq!(
            decoded,
            json!({
                "kind": "SelfSubjectAccessReview",
                "apiVersion": "authorization.k8s.io/v1",
                "spec": {"resourceAttributes": {"namespace": "default", "verb": "get", "resource": "configmaps"}},
            })
        );
        let rules = delimited(2, &delimited(1, b"default"));
        let decoded = decode_object(&envelope("SelfSubjectRulesReview", &rules)).unwrap();
        assert_eq!(decoded["spec"], json!({"namespace": "default"}));
        let groups = [delimited(3, b"alice"), delimited(4, b"a"), delimited(4, b"b")].concat();
        let decoded = decode_object(&envelope("SubjectAccessReview", &delimited(2, &groups))).unwrap();
        assert_eq!(decoded["spec"], json!({"user": "alice", "groups": ["a", "b"]}));
    }
}
