//! The two custom-resource checks kube runs after schema validation, each in its own pass:
//! embedded resources (`x-kubernetes-embedded-resource`: `apiVersion` and `kind` present and
//! well formed) and list semantics (`x-kubernetes-list-type: set` items and `map` keys must be
//! unique).
//!
//! Both passes follow `properties` as `.field`, `additionalProperties` as `[key]` and array
//! items as `[i]`, as kube's `objectmeta.Validate` and `listtype.ValidateListSetsAndMaps` do.

use serde_json::{Map, Value};

use super::field_error::{BadValue, FieldError};
use super::node::Node;
use super::spec_parts::dns1035_label;
use super::{child, index, key};

/// How deep the passes follow an object (see the walk's limit).
const MAX_DEPTH: usize = 256;

/// kube's `objectmeta.Validate` without its metadata part: every object whose schema sets
/// `x-kubernetes-embedded-resource` needs a string `apiVersion` and `kind`. With
/// `is_resource_root`, `value` itself is checked as such an object.
pub(crate) fn validate_embedded(path: &str, value: &Value, node: Node<'_>, is_resource_root: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    embedded_walk(path, value, Some(node), is_resource_root, &mut errors, 0);
    errors
}

fn embedded_walk(
    path: &str,
    value: &Value,
    node: Option<Node<'_>>,
    force_embedded: bool,
    errors: &mut Vec<FieldError>,
    depth: usize,
) {
    let Some(node) = node else { return };
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            if force_embedded || node.embedded() {
                errors.extend(embedded_resource_errors(path, map));
            }
            for (k, v) in map {
                if let Some(property) = node.property(k) {
                    embedded_walk(&child(path, k), v, Some(property), false, errors, depth + 1);
                } else if let Some(additional) = node.additional_schema() {
                    embedded_walk(&key(path, k), v, Some(additional), false, errors, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                embedded_walk(&index(path, i), item, node.items(), false, errors, depth + 1);
            }
        }
        _ => {}
    }
}

fn embedded_resource_errors(path: &str, map: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for field in ["apiVersion", "kind"] {
        if !map.contains_key(field) {
            errors.push(FieldError::required(child(path, field), "must not be empty"));
        }
    }
    for (k, v) in map {
        let field = child(path, k);
        match (k.as_str(), v) {
            ("apiVersion" | "kind", Value::String(s)) if s.is_empty() => {
                errors.push(FieldError::invalid(field, BadValue::string(s), "must not be empty"));
            }
            ("apiVersion" | "kind", value) if !value.is_string() => {
                errors.push(FieldError::invalid(field, BadValue::Json(value.clone()), "must be a string"));
            }
            ("apiVersion", Value::String(s)) if s.matches('/').count() > 1 => {
                let detail = format!("unexpected GroupVersion string: {s}");
                errors.push(FieldError::invalid(field, BadValue::string(s), detail));
            }
            ("kind", Value::String(s)) => {
                let problems = dns1035_label(&s.to_lowercase());
                if !problems.is_empty() {
                    let detail = format!("may have mixed case, but should otherwise match: {}", problems.join(","));
                    errors.push(FieldError::invalid(field, BadValue::string(s), detail));
                }
            }
            _ => {}
        }
    }
    errors
}

/// kube's `ValidateListSetsAndMaps`: duplicates in `x-kubernetes-list-type: set` lists and
/// duplicate keys in `map` lists, each reported once at its second occurrence.
pub(crate) fn validate_list_types(path: &str, value: &Value, node: Node<'_>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    list_walk(path, value, node, &mut errors, 0);
    errors
}

fn list_walk(path: &str, value: &Value, node: Node<'_>, errors: &mut Vec<FieldError>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(additional) = node.additional_schema() {
                for (k, v) in map {
                    list_walk(&key(path, k), v, additional, errors, depth + 1);
                }
            }
            for (k, v) in map {
                if let Some(property) = node.property(k) {
                    list_walk(&child(path, k), v, property, errors, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            match node.str("x-kubernetes-list-type") {
                "set" => {
                    for i in duplicate_indices(items) {
                        errors.push(FieldError::duplicate(index(path, i), BadValue::Json(items[i].clone())));
                    }
                }
                "map" => errors.extend(list_map_errors(path, node, items)),
                _ => {}
            }
            if let Some(item_schema) = node.items() {
                for (i, item) in items.iter().enumerate() {
                    list_walk(&index(path, i), item, item_schema, errors, depth + 1);
                }
            }
        }
        _ => {}
    }
}

fn list_map_errors(path: &str, node: Node<'_>, items: &[Value]) -> Vec<FieldError> {
    if let Some(i) = items.iter().position(|item| !item.is_null() && !item.is_object()) {
        let detail = "must be an object for an array of list-type map";
        return vec![FieldError::invalid(index(path, i), BadValue::Json(items[i].clone()), detail)];
    }
    let key_fields = node.strings("x-kubernetes-list-map-keys");
    let keys: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut key = Map::new();
            if let Value::Object(map) = item {
                for field in &key_fields {
                    if let Some(v) = map.get(*field) {
                        key.insert((*field).to_string(), v.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    duplicate_indices(&keys)
        .into_iter()
        .map(|i| FieldError::duplicate(index(path, i), BadValue::Json(keys[i].clone())))
        .collect()
}

/// Indexes of the second occurrence of each repeated value (kube compares compound values by
/// their JSON text and scalars by Go type and value, so `1` and `1.0` differ).
fn duplicate_indices(items: &[Value]) -> Vec<usize> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut duplicates = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let count = seen.entry(canonical(item)).or_insert(0);
        *count += 1;
        if *count == 2 {
            duplicates.push(i);
        }
    }
    duplicates
}

/// A key-order-independent text for a JSON value, keeping integers and floats apart.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let parts: Vec<String> = entries.iter().map(|(k, v)| format!("{k:?}:{}", canonical(v))).collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        Value::Number(n) if n.is_f64() => format!("f{n}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}
                        },
                        "routes": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["host", "port"],
                            "items": {"type": "object", "properties": {"host": {"type": "string"}, "port": {"type": "integer"}}}
                        },
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                        "byName": {"type": "object", "additionalProperties": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}
                    }
                }
            }
        })
    }

    #[test]
    fn list_type_table() {
        let schema = schema();
        let node = Node::of(&schema).unwrap();
        let cases = [
            (json!({"spec": {"tags": ["a", "b"]}}), vec![]),
            (
                json!({"spec": {"tags": ["a", "b", "a", "a", "b"]}}),
                vec!["spec.tags[2]: Duplicate value: \"a\"", "spec.tags[4]: Duplicate value: \"b\""],
            ),
            (
                json!({"spec": {"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 8080}]}}),
                vec!["spec.ports[1]: Duplicate value: map[string]interface {}{\"name\":\"http\"}"],
            ),
            (
                json!({"spec": {"routes": [{"host": "a", "port": 1}, {"port": 1, "host": "a"}, {"host": "a", "port": 2}]}}),
                vec!["spec.routes[1]: Duplicate value: map[string]interface {}{\"host\":\"a\", \"port\":1}"],
            ),
            (
                json!({"spec": {"ports": [{"name": "a"}, "oops"]}}),
                vec!["spec.ports[1]: Invalid value: \"oops\": must be an object for an array of list-type map"],
            ),
        ];
        for (object, expected) in cases {
            let got: Vec<String> = validate_list_types("", &object, node).iter().map(ToString::to_string).collect();
            assert_eq!(got, expected, "{object}");
        }
    }

    #[test]
    fn embedded_table() {
        let schema = schema();
        let node = Node::of(&schema).unwrap();
        let cases = [
            (json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod"}}}), vec![]),
            (
                json!({"spec": {"template": {"metadata": {}}}}),
                vec!["spec.template.apiVersion: Required value: must not be empty", "spec.template.kind: Required value: must not be empty"],
            ),
            (
                json!({"spec": {"template": {"apiVersion": "a/b/c", "kind": "my_kind"}}}),
                vec![
                    "spec.template.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
                    "spec.template.kind: Invalid value: \"my_kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                ],
            ),
            (
                json!({"spec": {"byName": {"x": {"apiVersion": 1, "kind": ""}}}}),
                vec![
                    "spec.byName[x].apiVersion: Invalid value: 1: must be a string",
                    "spec.byName[x].kind: Invalid value: \"\": must not be empty",
                ],
            ),
        ];
        for (object, expected) in cases {
            let got: Vec<String> =
                validate_embedded("", &object, node, false).iter().map(ToString::to_string).collect();
            assert_eq!(got, expected, "{object}");
        }
    }
}
