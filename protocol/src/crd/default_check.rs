//! kube's `ValidateDefaults`: every `default` in a CRD schema must survive pruning unchanged
//! (`must not have unknown fields`), satisfy the embedded-resource rules when it defaults a
//! whole embedded object, and validate against the schema it sits in, with errors reported
//! below `…default` (`…properties[replicas].default: Invalid value: …`).
//!
//! Defaults below `additionalProperties` are not followed, as in kube (they are forbidden
//! where they would matter, and pruning them is ambiguous).

use serde_json::Value;

use super::field_error::{BadValue, FieldError};
use super::listtype::validate_embedded;
use super::node::{Additional, Node};
use super::openapi_walk::Walker;
use super::outcome::to_field_errors;
use super::{child, key};

/// How deep schemas and values are followed (see the structural rules).
const MAX_DEPTH: usize = 256;

/// The default errors of the schema `root` at `path`; the root counts as a resource.
pub(crate) fn validate_defaults(root: Node<'_>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    walk(root, path, true, false, &mut errors, 0);
    errors
}

fn walk(s: Node<'_>, path: &str, is_resource: bool, inside_meta: bool, errors: &mut Vec<FieldError>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let embedded = is_resource || s.embedded();
    let inside_meta = inside_meta && !embedded;
    if let Some(default) = s.default_value() {
        let default_path = child(path, "default");
        if !inside_meta {
            let mut pruned = default.clone();
            prune(&mut pruned, Some(s), embedded, 0);
            if pruned != *default {
                errors.push(FieldError::invalid(
                    default_path.clone(),
                    BadValue::Json(default.clone()),
                    "must not have unknown fields",
                ));
            }
        }
        let meta_errors =
            if inside_meta { Vec::new() } else { embedded_default_errors(&default_path, default, s, embedded) };
        if meta_errors.is_empty() {
            let outcome = Walker::default().validate(s, "", default);
            errors.extend(to_field_errors(Some(&default_path), outcome.issues));
        } else {
            errors.extend(meta_errors);
        }
    }
    if let Some(items) = s.items() {
        walk(items, &child(path, "items"), false, inside_meta, errors, depth + 1);
    }
    for (name, property) in s.properties().into_iter().flatten() {
        let Some(property) = Node::of(property) else { continue };
        let sub_inside_meta = inside_meta || (embedded && matches!(name.as_str(), "metadata" | "apiVersion" | "kind"));
        walk(property, &key(&child(path, "properties"), name), false, sub_inside_meta, errors, depth + 1);
    }
}

fn embedded_default_errors(path: &str, default: &Value, s: Node<'_>, is_resource: bool) -> Vec<FieldError> {
    validate_embedded(path, default, s, is_resource)
}

/// kube's `pruning.Prune`: drops the fields the schema does not declare. Under
/// `x-kubernetes-preserve-unknown-fields` unknown fields stay but declared ones are still
/// pruned; `additionalProperties: true` keeps a key but prunes everything inside its value;
/// a resource's `apiVersion`, `kind` (strings) and `metadata` are kept as they are.
pub(crate) fn prune(value: &mut Value, s: Option<Node<'_>>, is_resource: bool, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(s) = s.filter(|s| s.preserves_unknown()) {
        skip_prune(value, s, depth);
        return;
    }
    match value {
        Value::Object(map) => {
            let Some(s) = s else {
                map.clear();
                return;
            };
            let embedded = is_resource || s.embedded();
            map.retain(|k, v| {
                if embedded && keeps_meta_field(k, v) {
                    return true;
                }
                if let Some(property) = s.property(k) {
                    prune(v, Some(property), false, depth + 1);
                    return true;
                }
                match s.additional() {
                    Additional::Unset => false,
                    additional => {
                        let schema = if let Additional::Schema(schema) = additional { Some(schema) } else { None };
                        prune(v, schema, false, depth + 1);
                        true
                    }
                }
            });
        }
        Value::Array(items) => {
            for item in items {
                prune(item, s.and_then(Node::items), false, depth + 1);
            }
        }
        _ => {}
    }
}

fn keeps_meta_field(key: &str, value: &Value) -> bool {
    match key {
        "apiVersion" | "kind" => value.is_string(),
        "metadata" => true,
        _ => false,
    }
}

fn skip_prune(value: &mut Value, s: Node<'_>, depth: usize) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if s.embedded() && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(property) = s.property(k) {
                    prune(v, Some(property), false, depth + 1);
                } else if let Additional::Bool(_) | Additional::Schema(_) = s.additional() {
                    prune(v, s.additional_schema(), false, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items() {
                for item in items {
                    skip_prune(item, item_schema, depth + 1);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn prune_table() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {"a": {"type": "string"}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"known": {"type": "object"}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "any": {"type": "object", "additionalProperties": true}
            }
        });
        let node = Node::of(&schema);
        let mut value = json!({
            "apiVersion": "v1", "kind": "K", "metadata": {"name": "x"},
            "spec": {"a": "1", "b": 2},
            "free": {"x": 1, "known": {"y": 2}},
            "labels": {"k": "v"},
            "any": {"k": {"nested": 1}, "s": "x"},
            "gone": true
        });
        prune(&mut value, node, true, 0);
        assert_eq!(
            value,
            json!({
                "apiVersion": "v1", "kind": "K", "metadata": {"name": "x"},
                "spec": {"a": "1"},
                "free": {"x": 1, "known": {}},
                "labels": {"k": "v"},
                "any": {"k": {}, "s": "x"}
            })
        );
    }

    #[test]
    fn defaults_table() {
        let path = "spec.validation.openAPIV3Schema";
        let cases = [
            (json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer", "default": 1}}}}}), vec![]),
            (
                json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1, "default": "one"}}}}}),
                vec![format!("{path}.properties[spec].properties[replicas].default: Invalid value: \"string\":  in body must be of type integer: \"string\"")],
            ),
            (
                json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1, "default": 0}}}}}),
                vec![format!("{path}.properties[spec].properties[replicas].default: Invalid value: 0:  in body should be greater than or equal to 1")],
            ),
            (
                json!({"type": "object", "properties": {"spec": {"type": "object", "default": {"a": 1, "extra": true}, "properties": {"a": {"type": "string"}}}}}),
                vec![
                    format!("{path}.properties[spec].default: Invalid value: map[string]interface {{}}{{\"a\":1, \"extra\":true}}: must not have unknown fields"),
                    format!("{path}.properties[spec].default.a: Invalid value: \"integer\": a in body must be of type string: \"integer\""),
                ],
            ),
            (
                json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"tpl": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true, "default": {"kind": "Pod"}}}}}}),
                vec![format!("{path}.properties[spec].properties[tpl].default.apiVersion: Required value: must not be empty")],
            ),
        ];
        for (schema, expected) in cases {
            let got: Vec<String> =
                validate_defaults(Node::of(&schema).unwrap(), path).iter().map(ToString::to_string).collect();
            assert_eq!(got, expected, "{schema}");
        }
    }
}
