//! kube's `field.Error`: one bad field, its kind, the offending value and a detail, rendered
//! exactly as `k8s.io/apimachinery/pkg/util/validation/field` renders them.
//!
//! Clients read these texts verbatim (kubectl prints them, conformance tests compare them),
//! so the rendering copies Go's quirks: string values are `%q`-quoted, `null` prints as
//! `"null"` (kube swaps a nil value for the *string* "null" before quoting), numbers use Go's
//! `%v`, and composite values use Go's `%#v` syntax (`map[string]interface {}{"k":"v"}`).

use std::fmt;

use serde_json::Value;

use crate::names::go_quote;

/// What went wrong with a field; each kind is one `StatusCause` reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// A required value is missing (`FieldValueRequired`).
    Required,
    /// A value that must be unique is repeated (`FieldValueDuplicate`).
    Duplicate,
    /// A malformed or out-of-range value (`FieldValueInvalid`).
    Invalid,
    /// A value outside an enumeration (`FieldValueNotSupported`).
    NotSupported,
    /// A value not permitted in this context (`FieldValueForbidden`).
    Forbidden,
    /// A string that is too long; the value itself is never printed (`FieldValueTooLong`).
    TooLong,
    /// A list or map with too many entries (`FieldValueTooMany`).
    TooMany,
    /// A value of the wrong JSON type (`FieldValueTypeInvalid`, printed as "Invalid value").
    TypeInvalid,
    /// A failure that is not the client's fault (`InternalError`).
    Internal,
}

impl FieldErrorKind {
    /// The `StatusCause.reason` kube reports for this kind.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::Internal => "InternalError",
        }
    }

    /// The words that open the message (`ErrorType.String()` in Go).
    pub fn title(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Duplicate => "Duplicate value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::Internal => "Internal error",
        }
    }
}

/// The offending value carried by a [`FieldError`].
#[derive(Debug, Clone, PartialEq)]
pub enum BadValue {
    /// No value is printed (kube's `omitValue`).
    Omitted,
    /// A JSON value, printed the way Go prints the equivalent `interface{}`.
    Json(Value),
    /// Text already in Go's `%#v` syntax, for values that are Go structs or typed slices in
    /// kube (`[]string{"v1"}`); printed as is.
    Go(String),
}

impl BadValue {
    /// A string value (printed `%q`-quoted).
    pub fn string(value: &str) -> Self {
        Self::Json(Value::String(value.to_string()))
    }

    /// A Go `[]string` value, printed `[]string{"a", "b"}` (or `[]string(nil)` when empty).
    pub fn string_slice<S: AsRef<str>>(values: &[S]) -> Self {
        if values.is_empty() {
            return Self::Go("[]string(nil)".to_string());
        }
        let quoted: Vec<String> = values.iter().map(|v| go_quote(v.as_ref())).collect();
        Self::Go(format!("[]string{{{}}}", quoted.join(", ")))
    }

    fn render(&self) -> Option<String> {
        match self {
            Self::Omitted => None,
            Self::Go(text) => Some(text.clone()),
            // kube replaces a nil value by the string "null", which `%q` then quotes.
            Self::Json(Value::Null) => Some("\"null\"".to_string()),
            Self::Json(Value::String(s)) => Some(go_quote(s)),
            Self::Json(value) => Some(go_sharp_v(value)),
        }
    }
}

/// kube's `field.Error`: a field path in kube's syntax (`spec.items[2].name`,
/// `spec.versions[0].schema.openAPIV3Schema.properties[spec].type`), what is wrong, the bad
/// value and a detail. Display renders `<field>: <message>`, like Go's `Error()`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// What went wrong.
    pub kind: FieldErrorKind,
    /// The field path; `<nil>` when kube reports an error without a path (the anyOf/oneOf/
    /// allOf/not summaries of custom-resource validation).
    pub field: String,
    /// The offending value.
    pub value: BadValue,
    /// Free text after the value.
    pub detail: String,
}

impl FieldError {
    fn new(kind: FieldErrorKind, field: impl Into<String>, value: BadValue, detail: impl Into<String>) -> Self {
        Self { kind, field: field.into(), value, detail: detail.into() }
    }

    /// `field.Required`: the value is missing.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Required, field, BadValue::string(""), detail)
    }

    /// `field.Invalid`: the value is malformed.
    pub fn invalid(field: impl Into<String>, value: BadValue, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Invalid, field, value, detail)
    }

    /// `field.TypeInvalid`: the value has the wrong JSON type.
    pub fn type_invalid(field: impl Into<String>, value: BadValue, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::TypeInvalid, field, value, detail)
    }

    /// `field.NotSupported`: the value is outside `supported`.
    pub fn not_supported<S: AsRef<str>>(field: impl Into<String>, value: BadValue, supported: &[S]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s.as_ref())).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(FieldErrorKind::NotSupported, field, value, detail)
    }

    /// `field.Forbidden`: the field may not be set here.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Forbidden, field, BadValue::string(""), detail)
    }

    /// `field.Duplicate`: the value repeats an earlier one.
    pub fn duplicate(field: impl Into<String>, value: BadValue) -> Self {
        Self::new(FieldErrorKind::Duplicate, field, value, "")
    }

    /// `field.TooLong` with a maximum in bytes; a negative maximum prints no limit.
    pub fn too_long(field: impl Into<String>, max: i64) -> Self {
        let detail = match max {
            1 => "may not be more than 1 byte".to_string(),
            max if max >= 0 => format!("may not be more than {max} bytes"),
            _ => "value is too long".to_string(),
        };
        Self::new(FieldErrorKind::TooLong, field, BadValue::Omitted, detail)
    }

    /// `field.TooMany`: `actual` entries where at most `max` are allowed; negative numbers
    /// are unknown and left out.
    pub fn too_many(field: impl Into<String>, actual: i64, max: i64) -> Self {
        let detail = match max {
            1 => "must have at most 1 item".to_string(),
            max if max >= 0 => format!("must have at most {max} items"),
            _ => "has too many items".to_string(),
        };
        let value = if actual >= 0 { BadValue::Json(Value::from(actual)) } else { BadValue::Omitted };
        Self::new(FieldErrorKind::TooMany, field, value, detail)
    }

    /// `field.InternalError`.
    pub fn internal(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Internal, field, BadValue::Omitted, detail)
    }

    /// The `StatusCause.reason` (`FieldValueInvalid`, `FieldValueRequired`, …).
    pub fn reason(&self) -> &'static str {
        self.kind.reason()
    }

    /// kube's message without the field prefix (`ErrorBody()` in Go), e.g.
    /// `Invalid value: "string": spec.replicas in body must be of type integer: "string"`.
    pub fn message(&self) -> String {
        let kind = self.kind;
        let value_shown = !matches!(
            kind,
            FieldErrorKind::Required | FieldErrorKind::Forbidden | FieldErrorKind::TooLong | FieldErrorKind::Internal
        );
        let mut text = kind.title().to_string();
        if let (true, Some(value)) = (value_shown, self.value.render()) {
            text.push_str(": ");
            text.push_str(&value);
        }
        if !self.detail.is_empty() {
            text.push_str(": ");
            text.push_str(&self.detail);
        }
        text
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message())
    }
}

impl std::error::Error for FieldError {}

/// Go's `%v` of a JSON number: integers in full, floats in the shortest form that reads back
/// exactly, switching to an exponent below 1e-4 and from 1e6 (`1e+06`, Go's `%g`).
pub(crate) fn go_number(number: &serde_json::Number) -> String {
    if let Some(i) = number.as_i64() {
        return i.to_string();
    }
    if let Some(u) = number.as_u64() {
        // kube decodes integers beyond int64 as float64.
        return go_float(u as f64);
    }
    go_float(number.as_f64().unwrap_or_default())
}

/// Go's `%v` for a float64, i.e. `strconv.FormatFloat(f, 'g', -1, 64)`: shortest digits,
/// exponent form when the exponent is below -4 or at least 6, two exponent digits minimum.
pub(crate) fn go_float(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "+Inf".to_string() } else { "-Inf".to_string() };
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0".to_string() } else { "0".to_string() };
    }
    // `{:e}` gives the shortest round-tripping digits: "1.5e0", "1e21", "-2.5e-7".
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or_default();
    if !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    format!("{value}")
}

/// Go's `%#v` of a decoded JSON value (`map[string]interface {}`, `[]interface {}`, …).
pub(crate) fn go_sharp_v(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", parts.join(", "))
        }
        Value::Object(map) => {
            // Go's fmt prints map keys sorted.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys.iter().map(|k| format!("{}:{}", go_quote(k), go_sharp_v(&map[*k]))).collect();
            format!("map[string]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn messages_match_kube() {
        let cases = [
            (
                FieldError::type_invalid(
                    "spec.replicas",
                    BadValue::string("string"),
                    "spec.replicas in body must be of type integer: \"string\"",
                ),
                "FieldValueTypeInvalid",
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
            ),
            (FieldError::required("spec.cronSpec", ""), "FieldValueRequired", "spec.cronSpec: Required value"),
            (
                FieldError::required("spec.names.listKind", "must not be empty"),
                "FieldValueRequired",
                "spec.names.listKind: Required value: must not be empty",
            ),
            (
                FieldError::not_supported("spec.scope", BadValue::string("x"), &["Cluster", "Namespaced"]),
                "FieldValueNotSupported",
                "spec.scope: Unsupported value: \"x\": supported values: \"Cluster\", \"Namespaced\"",
            ),
            (
                FieldError::invalid("spec.replicas", BadValue::Json(json!(0)), "should be at least 1"),
                "FieldValueInvalid",
                "spec.replicas: Invalid value: 0: should be at least 1",
            ),
            (
                FieldError::invalid("spec.x", BadValue::Json(Value::Null), "bad"),
                "FieldValueInvalid",
                "spec.x: Invalid value: \"null\": bad",
            ),
            (
                FieldError::too_long("spec.name", 5),
                "FieldValueTooLong",
                "spec.name: Too long: may not be more than 5 bytes",
            ),
            (
                FieldError::too_long("spec.name", 1),
                "FieldValueTooLong",
                "spec.name: Too long: may not be more than 1 byte",
            ),
            (
                FieldError::too_many("spec.list", 4, 3),
                "FieldValueTooMany",
                "spec.list: Too many: 4: must have at most 3 items",
            ),
            (
                FieldError::too_many("spec.list", -1, 1),
                "FieldValueTooMany",
                "spec.list: Too many: must have at most 1 item",
            ),
            (
                FieldError::forbidden("spec.x.default", "must not be set"),
                "FieldValueForbidden",
                "spec.x.default: Forbidden: must not be set",
            ),
            (
                FieldError::duplicate("spec.ports[1]", BadValue::Json(json!({"name": "a", "port": 1}))),
                "FieldValueDuplicate",
                "spec.ports[1]: Duplicate value: map[string]interface {}{\"name\":\"a\", \"port\":1}",
            ),
            (
                FieldError::invalid("status.storedVersions", BadValue::string_slice(&["v1", "v2"]), "bad"),
                "FieldValueInvalid",
                "status.storedVersions: Invalid value: []string{\"v1\", \"v2\"}: bad",
            ),
        ];
        for (error, reason, text) in cases {
            assert_eq!(error.reason(), reason, "{text}");
            assert_eq!(error.to_string(), text);
        }
    }

    #[test]
    fn go_float_formatting() {
        for (value, text) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (100000.0, "100000"),
            (123456.5, "123456.5"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (1e21, "1e+21"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e300, "1.5e+300"),
            (0.1, "0.1"),
        ] {
            assert_eq!(go_float(value), text, "{value}");
        }
    }

    #[test]
    fn go_sharp_v_formatting() {
        assert_eq!(
            go_sharp_v(&json!(["a", 1, 1.5, true, null])),
            "[]interface {}{\"a\", 1, 1.5, true, interface {}(nil)}"
        );
        assert_eq!(
            go_sharp_v(&json!({"b": 1, "a": {"c": "d"}})),
            "map[string]interface {}{\"a\":map[string]interface {}{\"c\":\"d\"}, \"b\":1}"
        );
        assert_eq!(BadValue::string_slice::<&str>(&[]).render().as_deref(), Some("[]string(nil)"));
    }
}
