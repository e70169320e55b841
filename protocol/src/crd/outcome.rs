//! What the schema walk finds: kube-openapi's errors ([`Issue`]) with their codes, the
//! per-value [`Outcome`] of the walk and of the scalar checks, and their mapping to
//! [`FieldError`]s. A leaf below both the walk and the scalar checks, which each produce
//! outcomes and so would otherwise import each other.

use serde_json::Value;

use super::field_error::{BadValue, FieldError};

/// What kind of kube-openapi error an [`Issue`] is; it picks the `FieldError` kind.
#[derive(Debug, Clone)]
pub(crate) enum Code {
    Required,
    Enum(Vec<Value>),
    TooLong(i64),
    TooMany { actual: i64, max: i64 },
    InvalidType,
    Other,
}

/// One kube-openapi error.
#[derive(Debug, Clone)]
pub(crate) enum Issue {
    /// A `*errors.Validation`: a code, the dotted path, the value and the message.
    Validation { code: Code, name: String, value: Value, message: String },
    /// A junctor summary (`"spec.x" must validate at least one schema (anyOf)`), which kube
    /// reports at the root of the validated value.
    Composite(String),
}

/// The result of validating one value: its issues and kube-openapi's `MatchCount`, which
/// picks the branch whose errors are reported when no `anyOf`/`oneOf` branch matches.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) issues: Vec<Issue>,
    pub(crate) matches: u32,
}

impl Outcome {
    pub(super) fn valid(&self) -> bool {
        self.issues.is_empty()
    }

    pub(super) fn merge(&mut self, other: Outcome) {
        self.issues.extend(other.issues);
        self.matches += other.matches;
    }

    pub(crate) fn issue(&mut self, code: Code, name: &str, value: Value, message: String) {
        self.issues.push(Issue::Validation { code, name: name.to_string(), value, message });
    }
}

/// Maps issues to field errors below `base` (`None` validates a whole object, whose
/// path-less errors kube prints as `<nil>`; `Some("…default")` validates a default value).
pub(crate) fn to_field_errors(base: Option<&str>, issues: Vec<Issue>) -> Vec<FieldError> {
    let root = base.unwrap_or("<nil>").to_string();
    issues
        .into_iter()
        .map(|issue| match issue {
            Issue::Composite(message) => FieldError::invalid(root.clone(), BadValue::string(""), message),
            Issue::Validation { code, name, value, message } => {
                let field = match name.strip_prefix('.').unwrap_or(&name) {
                    "" => root.clone(),
                    trimmed => base.map_or_else(|| trimmed.to_string(), |b| super::child(b, trimmed)),
                };
                // kube prints a nil value as "" except for enums, which print "null".
                let loose = if value.is_null() { BadValue::string("") } else { BadValue::Json(value.clone()) };
                match code {
                    Code::Required => FieldError::required(field, ""),
                    Code::Enum(values) => {
                        let supported: Vec<String> = values.iter().map(enum_text).collect();
                        FieldError::not_supported(field, BadValue::Json(value), &supported)
                    }
                    Code::TooLong(max) => FieldError::too_long(field, max),
                    Code::TooMany { actual, max } => FieldError::too_many(field, actual, max),
                    Code::InvalidType => FieldError::type_invalid(field, loose, message),
                    Code::Other => FieldError::invalid(field, loose, message),
                }
            }
        })
        .collect()
}

/// How kube lists an enum entry in `supported values`: strings bare, others as JSON.
pub(super) fn enum_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
