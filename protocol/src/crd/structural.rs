//! kube's structural-schema rules (`ValidateStructural`), which every v1 CRD schema must pass:
//!
//! - every node specifies a `type` (`must not be empty …`), except under
//!   `x-kubernetes-int-or-string` or `x-kubernetes-preserve-unknown-fields`; arrays specify
//!   `items`; the root is an `object` without `additionalProperties`;
//! - `allOf`/`anyOf`/`oneOf`/`not` only validate values: no `type`, `description`,
//!   `default`, `nullable`, `additionalProperties`, extensions or `metadata` inside them (the
//!   int-or-string pattern `anyOf: [{type: integer}, {type: string}]` excepted), and the
//!   fields and items they mention at the root must be specified outside them too;
//! - `metadata` at the root may only restrict `name` and `generateName`;
//! - `x-kubernetes-embedded-resource` needs `type: object` and properties or
//!   `x-kubernetes-preserve-unknown-fields`.
//!
//! kube sorts these errors by their text, and so does [`validate_structural`]. It also
//! provides [`new_structural_error`], the conversion failure kube reports only when nothing
//! else is wrong.

use serde_json::Value;

use super::field_error::{BadValue, FieldError};
use super::node::Node;
use super::openapi_walk::compile_pattern;
use super::{child, index, key};

/// How deep schemas are followed; real CRD schemas are a few dozen levels at most.
const MAX_DEPTH: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// `ValidateStructural` for a schema at `path` (`spec.validation.openAPIV3Schema`).
pub(crate) fn validate_structural(root: Node<'_>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    invariants(root, Level::Root, path, &mut errors, 0);
    value_completeness(root, Some(root), path, path, &mut errors, 0);
    errors.sort_by_cached_key(ToString::to_string);
    errors
}

fn invariants(s: Node<'_>, level: Level, path: &str, errors: &mut Vec<FieldError>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let type_name = s.type_name();
    if type_name == "array" && s.items().is_none() {
        errors.push(FieldError::required(child(path, "items"), "must be specified"));
    }
    if let Some(items) = s.items() {
        invariants(items, Level::Item, &child(path, "items"), errors, depth + 1);
    }
    for (name, property) in s.properties().into_iter().flatten() {
        if let Some(property) = Node::of(property) {
            invariants(property, Level::Field, &key(&child(path, "properties"), name), errors, depth + 1);
        }
    }
    let has_additional = s.has("additionalProperties");
    if has_additional && level == Level::Root {
        errors.push(FieldError::forbidden(child(path, "additionalProperties"), "must not be used at the root"));
    }
    if let Some(additional) = s.additional_schema() {
        invariants(additional, Level::Field, &child(path, "additionalProperties"), errors, depth + 1);
    }
    let (int_or_string, preserve, embedded) = (s.int_or_string(), s.preserves_unknown(), s.embedded());
    if int_or_string && preserve {
        let detail = "must be false if x-kubernetes-int-or-string is true";
        errors.push(FieldError::invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            BadValue::Json(true.into()),
            detail,
        ));
    }
    if int_or_string && embedded {
        let detail = "must be false if x-kubernetes-int-or-string is true";
        errors.push(FieldError::invalid(
            child(path, "x-kubernetes-embedded-resource"),
            BadValue::Json(true.into()),
            detail,
        ));
    }
    let skip_any_of = is_int_or_string_pattern(s.list("anyOf"));
    let skip_first_all_of_any_of =
        s.schemas("allOf").first().is_some_and(|first| is_int_or_string_pattern(first.list("anyOf")));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, level, path, errors, depth);

    let type_path = child(path, "type");
    if embedded && type_name != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        errors.push(required_or_invalid(type_path.clone(), type_name, detail));
    } else if type_name.is_empty() && !int_or_string && !preserve {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errors.push(FieldError::required(type_path.clone(), detail));
    }
    if embedded && has_additional {
        let detail = "must not be used if x-kubernetes-embedded-resource is set";
        errors.push(FieldError::forbidden(child(path, "additionalProperties"), detail));
    }
    if level == Level::Root && !type_name.is_empty() && type_name != "object" {
        errors.push(FieldError::invalid(type_path, BadValue::string(type_name), "must be object at the root"));
    }
    let check_metadata = level == Level::Root || embedded;
    let properties_path = child(path, "properties");
    for meta_field in ["kind", "apiVersion"] {
        if let Some(property) = s.property(meta_field).filter(|p| check_metadata && p.type_name() != "string") {
            let field = child(&key(&properties_path, meta_field), "type");
            errors.push(FieldError::invalid(field, BadValue::string(property.type_name()), "must be string"));
        }
    }
    if let Some(metadata) = s.property("metadata") {
        metadata_invariants(metadata, check_metadata, level, &key(&properties_path, "metadata"), errors);
    }
    if embedded && !preserve && s.properties().is_none_or(|p| p.is_empty()) {
        let detail =
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields";
        errors.push(FieldError::required(properties_path, detail));
    }
}

fn required_or_invalid(path: String, type_name: &str, detail: &str) -> FieldError {
    if type_name.is_empty() {
        FieldError::required(path, detail)
    } else {
        FieldError::invalid(path, BadValue::string(type_name), detail)
    }
}

/// `anyOf: [{type: integer}, {type: string}]` with nothing else in either branch.
fn is_int_or_string_pattern(any_of: &[Value]) -> bool {
    let only_type = |branch: &Value, wanted: &str| {
        branch.as_object().is_some_and(|map| {
            map.iter().all(|(k, v)| v.is_null() || k == "example" || (k == "type" && v == wanted))
                && map.get("type").and_then(Value::as_str) == Some(wanted)
        })
    };
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

/// Whether schema field `key` holds something other than its Go zero value: `false` and
/// `""` are zero for plain Go fields, but not for the pointer or interface fields
/// (`additionalProperties`, `default`, `$ref`, the list and map types).
pub(crate) fn is_set_field(key: &str, value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(false) => matches!(key, "additionalProperties" | "default"),
        Value::String(s) if s.is_empty() => {
            matches!(key, "default" | "$ref" | "x-kubernetes-list-type" | "x-kubernetes-map-type")
        }
        _ => true,
    }
}

fn metadata_invariants(s: Node<'_>, check_metadata: bool, level: Level, path: &str, errors: &mut Vec<FieldError>) {
    if check_metadata && s.type_name() != "object" {
        errors.push(FieldError::invalid(child(path, "type"), BadValue::string(s.type_name()), "must be object"));
    }
    if level != Level::Root {
        return;
    }
    let properties = s.properties();
    let count = properties.map_or(0, |p| p.len());
    let has = |name: &str| properties.is_some_and(|p| p.contains_key(name));
    let (name, generate_name) = (has("name"), has("generateName"));
    let only_names = (name && generate_name && count == 2) || ((name || generate_name) && count == 1);
    // Dropped when converting to a structural schema, or cleared by kube before comparing.
    let ignored = |k: &str| matches!(k, "type" | "default" | "example") || (k == "properties" && only_names);
    if s.map.iter().any(|(k, v)| !ignored(k) && is_set_field(k, v)) {
        let detail = "must not specify anything other than name and generateName, but metadata is implicitly specified";
        errors.push(FieldError::forbidden(path, detail));
    }
}

#[allow(clippy::too_many_arguments)]
fn value_validation(
    s: Node<'_>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    level: Level,
    path: &str,
    errors: &mut Vec<FieldError>,
    depth: usize,
) {
    if !skip_any_of {
        for (i, branch) in s.schemas("anyOf").into_iter().enumerate() {
            nested(branch, false, level, &index(&child(path, "anyOf"), i), errors, depth + 1);
        }
    }
    for (i, branch) in s.schemas("allOf").into_iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(branch, skip, level, &index(&child(path, "allOf"), i), errors, depth + 1);
    }
    for (i, branch) in s.schemas("oneOf").into_iter().enumerate() {
        nested(branch, false, level, &index(&child(path, "oneOf"), i), errors, depth + 1);
    }
    if let Some(not) = s.schema("not") {
        nested(not, false, level, &child(path, "not"), errors, depth + 1);
    }
    let pattern = s.str("pattern");
    if !pattern.is_empty() {
        if let Err(why) = compile_pattern(pattern) {
            let detail = format!("must be a valid regular expression, but isn't: error parsing regexp: {why}");
            errors.push(FieldError::invalid(child(path, "pattern"), BadValue::string(pattern), detail));
        }
    }
}

/// The rules for a schema under `allOf`/`anyOf`/`oneOf`/`not`.
fn nested(v: Node<'_>, skip_any_of: bool, level: Level, path: &str, errors: &mut Vec<FieldError>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    value_validation(v, skip_any_of, false, level, path, errors, depth);
    if let Some(items) = v.items() {
        nested(items, false, level, &child(path, "items"), errors, depth + 1);
    }
    for (name, property) in v.properties().into_iter().flatten() {
        if let Some(property) = Node::of(property) {
            nested(property, false, Level::Field, &key(&child(path, "properties"), name), errors, depth + 1);
        }
    }
    const FORBIDDEN: &[(&str, &str)] = &[
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        ("externalDocs", "must be undefined to be structural"),
        ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
        ("x-kubernetes-embedded-resource", "must be false to be structural"),
        ("x-kubernetes-int-or-string", "must be false to be structural"),
        ("x-kubernetes-list-map-keys", "must be empty to be structural"),
        ("x-kubernetes-list-type", "must be undefined to be structural"),
        ("x-kubernetes-map-type", "must be undefined to be structural"),
        ("x-kubernetes-validations", "must be empty to be structural"),
    ];
    for (field, detail) in FORBIDDEN {
        let set = match v.get(field) {
            Some(Value::Array(items)) => !items.is_empty(),
            Some(value) => is_set_field(field, value),
            None => false,
        };
        if set {
            errors.push(FieldError::forbidden(child(path, field), *detail));
        }
    }
    if v.property("metadata").is_some() {
        let field = key(&child(path, "properties"), "metadata");
        errors.push(FieldError::forbidden(field, "must not be specified in a nested context"));
    }
}

/// `validateStructuralCompleteness`: what the root's junctors mention must also be
/// specified outside them. kube checks only the root's junctors (and what they nest).
fn value_completeness(
    v: Node<'_>,
    s: Option<Node<'_>>,
    s_path: &str,
    v_path: &str,
    errors: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let Some(s) = s else {
        errors.push(FieldError::required(s_path, format!("because it is defined in {v_path}")));
        return;
    };
    if let Some(not) = v.schema("not") {
        nested_completeness(not, Some(s), s_path, &child(v_path, "not"), errors, depth + 1);
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        for (i, branch) in v.schemas(junctor).into_iter().enumerate() {
            nested_completeness(branch, Some(s), s_path, &index(&child(v_path, junctor), i), errors, depth + 1);
        }
    }
}

fn nested_completeness(
    v: Node<'_>,
    s: Option<Node<'_>>,
    s_path: &str,
    v_path: &str,
    errors: &mut Vec<FieldError>,
    depth: usize,
) {
    let Some(s) = s else {
        errors.push(FieldError::required(s_path, format!("because it is defined in {v_path}")));
        return;
    };
    value_completeness(v, Some(s), s_path, v_path, errors, depth);
    if let Some(items) = v.items() {
        nested_completeness(items, s.items(), &child(s_path, "items"), &child(v_path, "items"), errors, depth + 1);
    }
    for (name, property) in v.properties().into_iter().flatten() {
        let Some(property) = Node::of(property) else { continue };
        let s_field = key(&child(s_path, "properties"), name);
        let v_field = key(&child(v_path, "properties"), name);
        match s.property(name) {
            Some(declared) => nested_completeness(property, Some(declared), &s_field, &v_field, errors, depth + 1),
            None => errors.push(FieldError::required(s_field, format!("because it is defined in {v_field}"))),
        }
    }
}

/// The error kube's `NewStructural` conversion gives for fields CRD schemas may not use
/// (reported, as `openAPIV3Schema: Invalid value: ""`, only when nothing else is wrong).
pub(crate) fn new_structural_error(s: Node<'_>, depth: usize) -> Option<String> {
    if depth > MAX_DEPTH {
        return None;
    }
    let non_empty = |k: &str| match s.get(k) {
        Some(Value::String(text)) => !text.is_empty(),
        Some(Value::Object(map)) => !map.is_empty(),
        Some(_) => true,
        None => false,
    };
    for (field, name) in [
        ("id", "id"),
        ("$schema", "schema"),
        ("$ref", "$ref"),
        ("patternProperties", "patternProperties"),
        ("dependencies", "dependencies"),
    ] {
        if non_empty(field) {
            return Some(format!("OpenAPIV3Schema '{name}' is not supported"));
        }
    }
    if s.has("additionalItems") {
        return Some("OpenAPIV3Schema 'additionalItems' is not supported".to_string());
    }
    if non_empty("definitions") {
        return Some("OpenAPIV3Schema 'definitions' is not supported".to_string());
    }
    let nested = [s.schema("not")]
        .into_iter()
        .flatten()
        .chain(s.schemas("allOf"))
        .chain(s.schemas("anyOf"))
        .chain(s.schemas("oneOf"))
        .chain(s.additional_schema());
    for sub in nested {
        if let Some(error) = new_structural_error(sub, depth + 1) {
            return Some(error);
        }
    }
    if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        return Some("internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined".to_string());
    }
    if s.get("items").is_some_and(|items| items.as_array().is_some_and(|a| !a.is_empty())) {
        return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".to_string());
    }
    s.items()
        .into_iter()
        .chain(s.properties().into_iter().flatten().filter_map(|(_, p)| Node::of(p)))
        .find_map(|sub| new_structural_error(sub, depth + 1))
}
