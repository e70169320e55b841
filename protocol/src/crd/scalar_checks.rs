//! The scalar checks of kube-openapi's validator — type, format, number bounds and enum —
//! with their Go quirks, used by the schema walk in [`super::openapi_walk`].

use serde_json::{Number, Value};

use super::field_error::go_float;
use super::formats;
use super::node::Node;
use super::outcome::{enum_text, Code, Outcome};
use crate::names::go_quote;

/// A JSON number as kube decodes it: int64 when it fits, float64 otherwise.
#[derive(Debug, Clone, Copy)]
pub(super) enum Num {
    Int(i64),
    Float(f64),
}

pub(super) fn num(number: &Number) -> Num {
    number.as_i64().map_or_else(|| Num::Float(number.as_f64().unwrap_or_default()), Num::Int)
}

/// go-openapi's `IsFloat64AJSONInteger`: a float within ±(2^53-1) with no fraction, up to
/// rounding noise.
fn is_json_integer(value: f64) -> bool {
    const MAX_JSON_FLOAT: f64 = 9_007_199_254_740_991.0;
    if !value.is_finite() || value.abs() > MAX_JSON_FLOAT {
        return false;
    }
    let rounded = value.round();
    value == rounded || (value - rounded).abs() <= 1e-12 * rounded.abs().max(1.0)
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Number(n) => match num(n) {
            Num::Int(_) => "integer",
            Num::Float(_) => "number",
        },
    }
}

pub(super) fn in_body(name: &str, rest: &str) -> String {
    format!("{name} in body {rest}")
}

/// The types a node accepts: `type`, or `integer,string` under `x-kubernetes-int-or-string`.
pub(super) fn types_of(node: Node<'_>) -> Vec<&str> {
    if node.int_or_string() {
        vec!["integer", "string"]
    } else {
        match node.type_name() {
            "" => vec![],
            t => vec![t],
        }
    }
}

/// The node's `format` when kube keeps it (see [`formats`]).
pub(super) fn format_of(node: Node<'_>) -> Option<&str> {
    Some(node.str("format")).filter(|f| formats::is_supported(f))
}

/// kube-openapi's type validator, quirks included: integral floats pass as integers, a
/// supported `format` on a non-numeric type waives the type check for strings and arrays,
/// and a format on other values demands a matching Go type.
pub(super) fn check_type(node: Node<'_>, path: &str, data: &Value) -> Outcome {
    let types = types_of(node);
    let joined = types.join(",");
    let fail = |type_name: &str, got: &str| {
        let mut out = Outcome::default();
        let message = in_body(path, &format!("must be of type {type_name}: {}", go_quote(got)));
        out.issue(Code::InvalidType, path, Value::String(got.to_string()), message);
        out
    };
    let ok = Outcome { issues: vec![], matches: 1 };
    if data.is_null() {
        if !types.is_empty() && !types.contains(&"null") && !node.nullable() {
            return fail(&joined, "null");
        }
        return ok;
    }
    let got = json_type(data);
    let data_format = match data {
        Value::Number(n) => match num(n) {
            Num::Int(_) => "int64",
            Num::Float(_) => "double",
        },
        _ => "",
    };
    let float_int = matches!(data, Value::Number(n) if matches!(num(n), Num::Float(f) if is_json_integer(f)))
        && types.contains(&"integer");
    let int_float = got == "integer" && types.contains(&"number");
    let format = format_of(node).unwrap_or("");
    let string_or_array = matches!(data, Value::String(_) | Value::Array(_));
    let type_fits = types.contains(&got) || float_int || int_float;
    if !string_or_array && !format.is_empty() && !type_fits && data_format != format {
        return fail(format, data_format);
    }
    let numeric = types.contains(&"number") || types.contains(&"integer");
    if !numeric && !format.is_empty() && string_or_array {
        return ok;
    }
    if !type_fits {
        return fail(&joined, got);
    }
    ok
}

pub(super) fn check_format(format: &str, path: &str, s: &str) -> Outcome {
    let mut out = Outcome::default();
    if !formats::is_valid(format, s) {
        let message = in_body(path, &format!("must be of type {format}: {}", go_quote(s)));
        out.issue(Code::InvalidType, path, Value::String(s.to_string()), message);
    }
    out
}

/// kube-openapi's number validator: `multipleOf`, then `minimum`, then `maximum`. Integer
/// values compare against the bounds truncated to integers, as Go's `int64(bound)` does.
pub(super) fn check_number(node: Node<'_>, path: &str, n: Num, data: &Value) -> Outcome {
    let mut out = Outcome::default();
    if let Some(factor) = node.number("multipleOf") {
        if let Some(message) = multiple_of_error(path, n, factor) {
            out.issue(Code::Other, path, data.clone(), message);
        }
    }
    let bound = |key: &str| node.number(key).map(|b| (b, node.flag(&format!("exclusive{}", &capitalized(key)))));
    if let Some((min, exclusive)) = bound("minimum") {
        let (below, shown) = match n {
            Num::Int(i) => (if exclusive { i <= min as i64 } else { i < min as i64 }, (min as i64).to_string()),
            Num::Float(f) => (if exclusive { f <= min } else { f < min }, go_float(min)),
        };
        if below {
            let rest = if exclusive {
                format!("should be greater than {shown}")
            } else {
                format!("should be greater than or equal to {shown}")
            };
            out.issue(Code::Other, path, data.clone(), in_body(path, &rest));
        }
    }
    if let Some((max, exclusive)) = bound("maximum") {
        let (above, shown) = match n {
            Num::Int(i) => (if exclusive { i >= max as i64 } else { i > max as i64 }, (max as i64).to_string()),
            Num::Float(f) => (if exclusive { f >= max } else { f > max }, go_float(max)),
        };
        if above {
            let rest = if exclusive {
                format!("should be less than {shown}")
            } else {
                format!("should be less than or equal to {shown}")
            };
            out.issue(Code::Other, path, data.clone(), in_body(path, &rest));
        }
    }
    out.matches += 1;
    out
}

fn capitalized(key: &str) -> String {
    let mut chars = key.chars();
    chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}

fn multiple_of_error(path: &str, n: Num, factor: f64) -> Option<String> {
    // An integer value with a factor that truncates to 0 would divide by zero in Go (a
    // panic there); it is checked as a float here instead.
    match n {
        Num::Int(i) if factor as i64 != 0 => {
            let f = factor as i64;
            if f < 0 {
                return Some(format!("factor MultipleOf declared for {path} must be positive: {f}"));
            }
            (i % f != 0).then(|| in_body(path, &format!("should be a multiple of {f}")))
        }
        _ => {
            let value = match n {
                Num::Int(i) => i as f64,
                Num::Float(f) => f,
            };
            if factor < 0.0 {
                return Some(format!("factor MultipleOf declared for {path} must be positive: {}", go_float(factor)));
            }
            let ratio = if factor < 1.0 { 1.0 / factor * value } else { value / factor };
            (!is_json_integer(ratio)).then(|| in_body(path, &format!("should be a multiple of {}", go_float(factor))))
        }
    }
}

/// kube-openapi's enum check: a value matches an entry after Go's type conversion, so an
/// integer matches an equal float, a float matches the integer it truncates to, and `null`
/// never matches.
pub(super) fn check_enum(node: Node<'_>, path: &str, data: &Value) -> Outcome {
    let mut out = Outcome::default();
    let entries = node.list("enum");
    if entries.is_empty() || entries.iter().any(|entry| enum_matches(data, entry)) {
        out.matches += 1;
        return out;
    }
    let names: Vec<String> = entries.iter().map(enum_text).collect();
    let message = in_body(path, &format!("should be one of [{}]", names.join(" ")));
    out.issue(Code::Enum(entries.to_vec()), path, data.clone(), message);
    out
}

fn enum_matches(data: &Value, entry: &Value) -> bool {
    match (data, entry) {
        (Value::Null, _) => false,
        (Value::Number(a), Value::Number(b)) => match (num(a), num(b)) {
            (Num::Int(x), Num::Int(y)) => x == y,
            (Num::Int(x), Num::Float(y)) => x as f64 == y,
            (Num::Float(x), Num::Int(y)) => x as i64 == y,
            (Num::Float(x), Num::Float(y)) => x == y,
        },
        // Go converts an int64 to a string as a rune.
        (Value::Number(a), Value::String(s)) => match num(a) {
            Num::Int(i) => u32::try_from(i).ok().and_then(char::from_u32).unwrap_or('\u{fffd}').to_string() == *s,
            Num::Float(_) => false,
        },
        _ => data == entry,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_integers() {
        for (value, integral) in
            [(2.0, true), (-3.0, true), (2.5, false), (3.0000000000000004, true), (1e20, false), (f64::NAN, false)]
        {
            assert_eq!(is_json_integer(value), integral, "{value}");
        }
    }

    #[test]
    fn enum_matching_follows_go_conversions() {
        for (data, entry, matches) in [
            (json!(1), json!(1.0), true),
            (json!(1.9), json!(1), true),
            (json!(65), json!("A"), true),
            (json!("1"), json!(1), false),
            (json!(null), json!(null), false),
            (json!({"a": [1]}), json!({"a": [1]}), true),
            (json!({"a": 1}), json!({"a": 1.0}), false),
        ] {
            assert_eq!(enum_matches(&data, &entry), matches, "{data} vs {entry}");
        }
    }
}
