//! One step of a field path ([`PathElement`]), its total order, its FieldsV1 key form
//! (`f:name`, `k:{"name":"nginx"}`, `v:"x"`, `i:3`) and kube's human form (`.spec`,
//! `[name="nginx"]`, `[="x"]`, `[3]`) used in conflict messages.
//!
//! The order is structured-merge-diff's: field names first, then list keys, then set
//! values, then indices; values compare numbers < strings < booleans < lists < maps < null.
//! kube writes `fieldsV1` in this order, so following it makes our bytes match theirs.

use std::cmp::Ordering;
use std::fmt;

use serde_json::{Map, Value};

use crate::names::go_quote;

/// A step from a value to one of its children.
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A field of an object (a struct field or a map key): `f:<name>`.
    Field(String),
    /// An item of an associative list, named by its key fields sorted by name:
    /// `k:{"name":"nginx"}`. Build it with [`PathElement::key`] to keep the order.
    Key(Vec<(String, Value)>),
    /// An item of a set list, named by its (scalar) value: `v:"example.com/x"`.
    Value(Value),
    /// An item of a list by position: `i:3`. kube no longer produces these (non-associative
    /// lists are atomic), but they decode and encode so old entries survive.
    Index(usize),
}

impl PathElement {
    /// A field element.
    pub fn field(name: impl Into<String>) -> Self {
        PathElement::Field(name.into())
    }

    /// A key element with its fields sorted by name, as structured-merge-diff keeps them.
    pub fn key(fields: impl IntoIterator<Item = (String, Value)>) -> Self {
        let mut fields: Vec<(String, Value)> = fields.into_iter().collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    /// The field name, if this is a field element.
    pub fn as_field(&self) -> Option<&str> {
        match self {
            PathElement::Field(name) => Some(name),
            _ => None,
        }
    }

    /// The key of this element inside a `fieldsV1` object: `f:name`, `k:{…}`, `v:…`, `i:3`.
    pub fn to_fields_v1_key(&self) -> String {
        match self {
            PathElement::Field(name) => {
                let mut key = String::with_capacity(name.len() + 2);
                key.push_str("f:");
                key.push_str(name);
                key
            }
            PathElement::Key(fields) => {
                let object: Map<String, Value> = fields.iter().cloned().collect();
                format!("k:{}", go_json(&Value::Object(object)))
            }
            PathElement::Value(value) => format!("v:{}", go_json(value)),
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    /// Parses a `fieldsV1` key. `Ok(None)` is a well-formed key of a type this version does
    /// not know (`x:…`): kube drops those rather than failing, and so do we.
    pub fn from_fields_v1_key(key: &str) -> Result<Option<PathElement>, String> {
        let bytes = key.as_bytes();
        if bytes.len() < 2 {
            return Err(format!("path element {} must be at least 2 characters long", go_quote(key)));
        }
        if bytes[1] != b':' {
            return Err(format!("missing colon: {key}"));
        }
        let body = &key[2..];
        let element = match bytes[0] {
            b'f' => PathElement::Field(body.to_string()),
            b'v' => PathElement::Value(parse_json(key, body)?),
            b'k' => match parse_json(key, body)? {
                Value::Object(fields) => PathElement::key(fields),
                _ => return Err(format!("key {} is not a JSON object", go_quote(key))),
            },
            b'i' => PathElement::Index(body.parse().map_err(|_| format!("invalid index in {}", go_quote(key)))?),
            _ => return Ok(None),
        };
        Ok(Some(element))
    }
}

fn parse_json(key: &str, body: &str) -> Result<Value, String> {
    serde_json::from_str(body).map_err(|error| format!("invalid JSON in {}: {error}", go_quote(key)))
}

/// Compact JSON as Go's encoder writes it: `<`, `>`, `&`, U+2028 and U+2029 are escaped.
/// Those characters only occur inside JSON strings, so replacing them in the text is safe;
/// without it a key holding `&` would differ byte-wise from the one kube stored.
pub(super) fn go_json(value: &Value) -> String {
    go_escaped(value.to_string())
}

/// A string as Go's `json.Marshal` writes it (see [`go_json`]).
pub(super) fn go_json_string(value: &str) -> String {
    // Manager names and API versions are plain printable ASCII: quoted as they are.
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b) && !matches!(b, b'"' | b'\\' | b'<' | b'>' | b'&'));
    if plain {
        let mut quoted = String::with_capacity(value.len() + 2);
        quoted.push('"');
        quoted.push_str(value);
        quoted.push('"');
        return quoted;
    }
    go_escaped(serde_json::to_string(value).unwrap_or_default())
}

/// serde_json's text with the characters Go's encoder also escapes escaped.
fn go_escaped(text: String) -> String {
    if !text.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return text;
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '<' => escaped.push_str("\\u003c"),
            '>' => escaped.push_str("\\u003e"),
            '&' => escaped.push_str("\\u0026"),
            '\u{2028}' => escaped.push_str("\\u2028"),
            '\u{2029}' => escaped.push_str("\\u2029"),
            c => escaped.push(c),
        }
    }
    escaped
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        fn rank(element: &PathElement) -> u8 {
            match element {
                PathElement::Field(_) => 0,
                PathElement::Key(_) => 1,
                PathElement::Value(_) => 2,
                PathElement::Index(_) => 3,
            }
        }
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_fields(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => rank(self).cmp(&rank(other)),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Equality follows the order, so `1` and `1.0` name the same set item, as in kube.
impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

/// Sorted key lists compare name by name, then value by value, then by length.
fn compare_fields(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((name_a, value_a), (name_b, value_b)) in a.iter().zip(b) {
        let order = name_a.cmp(name_b).then_with(|| compare_values(value_a, value_b));
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// structured-merge-diff's total order of values: numbers (compared numerically, integers
/// and floats alike) < strings < booleans < lists < maps < null.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(value: &Value) -> u8 {
        match value {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => x.as_f64().partial_cmp(&y.as_f64()).unwrap_or(Ordering::Equal),
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (item_x, item_y) in x.iter().zip(y) {
                let order = compare_values(item_x, item_y);
                if order != Ordering::Equal {
                    return order;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let sorted = |map: &Map<String, Value>| {
                let mut fields: Vec<(String, Value)> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                fields
            };
            compare_fields(&sorted(x), &sorted(y))
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// kube's human form of one element, as conflict messages and causes print it.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> =
                    fields.iter().map(|(name, value)| format!("{name}={}", value_to_string(value))).collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(value) => write!(f, "[={}]", value_to_string(value)),
            PathElement::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// kube's human form of a whole path: `.spec.containers[name="nginx"].image`.
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// structured-merge-diff's `value.ToString`: strings Go-quoted, the rest as written.
fn value_to_string(value: &Value) -> String {
    match value {
        Value::String(text) => go_quote(text),
        Value::Array(items) => format!("[{}]", items.iter().map(value_to_string).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => {
            let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k}={}", value_to_string(v))).collect();
            format!("{{{}}}", parts.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_json_string_quotes_plain_text_as_serde_does_and_escapes_the_rest_as_go() {
        for plain in ["", "kubectl", "kube-controller-manager", "apps/v1", "a b ~!#$%()*+,-./:;=?@[]^_`{|}"] {
            assert_eq!(go_json_string(plain), serde_json::to_string(plain).unwrap(), "{plain}");
        }
        assert_eq!(go_json_string("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_json_string("<x>&"), r#""\u003cx\u003e\u0026""#);
        assert_eq!(go_json_string("tab\tnew\nline"), r#""tab\tnew\nline""#);
        assert_eq!(go_json_string("ünï\u{2028}"), "\"ünï\\u2028\"");
    }

    #[test]
    fn fields_v1_keys_round_trip() {
        let cases = [
            (PathElement::field("image"), "f:image"),
            (PathElement::field("example.com/key"), "f:example.com/key"),
            (
                PathElement::key([("protocol".into(), json!("TCP")), ("containerPort".into(), json!(80))]),
                r#"k:{"containerPort":80,"protocol":"TCP"}"#,
            ),
            (PathElement::Value(json!("kubernetes.io/pv-protection")), r#"v:"kubernetes.io/pv-protection""#),
            (PathElement::Value(json!("a&b<c>")), r#"v:"a\u0026b\u003cc\u003e""#),
            (PathElement::Index(3), "i:3"),
        ];
        for (element, key) in cases {
            assert_eq!(element.to_fields_v1_key(), key);
            assert_eq!(PathElement::from_fields_v1_key(key).unwrap(), Some(element));
        }
        assert_eq!(PathElement::from_fields_v1_key("x:future").unwrap(), None);
        for bad in ["f", "fx", r#"k:["a"]"#, "v:{", "i:-1"] {
            assert!(PathElement::from_fields_v1_key(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn order_and_human_form_follow_structured_merge_diff() {
        let mut elements = vec![
            PathElement::Index(0),
            PathElement::Value(json!(null)),
            PathElement::Value(json!(true)),
            PathElement::Value(json!("a")),
            PathElement::Value(json!(2.5)),
            PathElement::Value(json!(2)),
            PathElement::key([("name".into(), json!("b"))]),
            PathElement::key([("name".into(), json!("a"))]),
            PathElement::field("b"),
            PathElement::field("a"),
        ];
        elements.sort();
        let rendered: Vec<String> = elements.iter().map(ToString::to_string).collect();
        assert_eq!(
            rendered,
            [".a", ".b", r#"[name="a"]"#, r#"[name="b"]"#, "[=2]", "[=2.5]", r#"[="a"]"#, "[=true]", "[=null]", "[0]"]
        );
        assert_eq!(PathElement::Value(json!(1)), PathElement::Value(json!(1.0)));
        let path = [
            PathElement::field("spec"),
            PathElement::field("containers"),
            PathElement::key([("name".into(), json!("nginx"))]),
            PathElement::field("image"),
        ];
        assert_eq!(path_string(&path), r#".spec.containers[name="nginx"].image"#);
    }
}
