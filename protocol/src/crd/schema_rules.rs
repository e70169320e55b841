//! kube's `ValidateCustomResourceDefinitionOpenAPISchema`: the per-node rules of the OpenAPI
//! subset CRDs may use, walked over every node of a schema (junctors included):
//!
//! - unsupported keywords (`id`, `$ref`, `patternProperties`, `definitions`, `dependencies`,
//!   `additionalItems`, `items` arrays, `type: null`, `uniqueItems: true`) are forbidden;
//! - `properties` and `additionalProperties` exclude each other;
//! - `default` is forbidden in the top-level `metadata`/`apiVersion`/`kind` and in
//!   `additionalProperties` applying to metadata;
//! - the `x-kubernetes-list-type`/`-list-map-keys`/`-map-type` rules (map lists need object
//!   items whose keys are scalar and required or defaulted; set items must be atomic);
//! - the static part of `x-kubernetes-validations` (rules present, messages on one line,
//!   reasons known); the CEL expressions themselves are not compiled.

use serde_json::Value;

use super::field_error::{BadValue, FieldError};
use super::node::Node;
use super::{child, index, key};

/// How deep schemas are followed (see the structural rules).
const MAX_DEPTH: usize = 256;
const OPENAPI_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const VALIDATION_REASONS: [&str; 4] =
    ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];

/// What the walk knows about where it is (kube's `specStandardValidatorV3`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Context {
    /// Why defaults are forbidden here, if they are.
    pub(crate) forbid_defaults: Option<String>,
    /// Inside the schema of a resource's `metadata`, `apiVersion` or `kind`.
    pub(crate) inside_meta: bool,
}

impl Context {
    fn forbidding_defaults(&self, reason: String) -> Self {
        Self { forbid_defaults: Some(reason), ..self.clone() }
    }
}

/// The rules for the schema `s` at `path` and everything below it.
pub(crate) fn schema_rules(s: Node<'_>, path: &str, ctx: &Context, is_root: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    walk(s, path, ctx, is_root, &mut errors, 0);
    errors
}

fn walk(s: Node<'_>, path: &str, ctx: &Context, is_root: bool, errors: &mut Vec<FieldError>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    keyword_rules(s, path, ctx, errors);
    if s.flag("uniqueItems") {
        let detail = "uniqueItems cannot be set to true since the runtime complexity becomes quadratic";
        errors.push(FieldError::forbidden(child(path, "uniqueItems"), detail));
    }
    let has_properties = s.properties().is_some_and(|p| !p.is_empty());
    if s.has("additionalProperties") {
        let restricts = !matches!(s.get("additionalProperties"), Some(Value::Bool(true)));
        if has_properties && restricts {
            let detail = "additionalProperties and properties are mutual exclusive";
            errors.push(FieldError::forbidden(child(path, "additionalProperties"), detail));
        }
        if let Some(additional) = s.additional_schema() {
            let sub = if ctx.inside_meta {
                ctx.forbidding_defaults("inside additionalProperties applying to object metadata".to_string())
            } else {
                ctx.clone()
            };
            walk(additional, &child(path, "additionalProperties"), &sub, false, errors, depth + 1);
        }
    }
    for (name, property) in s.properties().into_iter().flatten() {
        let Some(property) = Node::of(property) else { continue };
        let mut sub = ctx.clone();
        if (is_root || s.embedded()) && matches!(name.as_str(), "metadata" | "kind" | "apiVersion") {
            sub.inside_meta = true;
            if is_root {
                sub.forbid_defaults = Some(format!("in top-level {name}"));
            }
        }
        walk(property, &key(&child(path, "properties"), name), &sub, false, errors, depth + 1);
    }
    if let Some(not) = s.schema("not") {
        walk(not, &child(path, "not"), ctx, false, errors, depth + 1);
    }
    for junctor in ["allOf", "oneOf", "anyOf"] {
        for (i, branch) in s.schemas(junctor).into_iter().enumerate() {
            walk(branch, &index(&child(path, junctor), i), ctx, false, errors, depth + 1);
        }
    }
    for (name, definition) in s.get("definitions").and_then(Value::as_object).into_iter().flatten() {
        if let Some(definition) = Node::of(definition) {
            walk(definition, &key(&child(path, "definitions"), name), ctx, false, errors, depth + 1);
        }
    }
    if let Some(items) = s.items() {
        walk(items, &child(path, "items"), ctx, false, errors, depth + 1);
    }
    for (i, item) in s.list("items").iter().enumerate() {
        if let Some(item) = Node::of(item) {
            walk(item, &index(&child(path, "items"), i), ctx, false, errors, depth + 1);
        }
    }
    for (name, dependency) in s.get("dependencies").and_then(Value::as_object).into_iter().flatten() {
        if let Some(dependency) = Node::of(dependency) {
            walk(dependency, &key(&child(path, "dependencies"), name), ctx, false, errors, depth + 1);
        }
    }
    if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        let field = child(path, "x-kubernetes-preserve-unknown-fields");
        errors.push(FieldError::invalid(field, BadValue::Json(false.into()), "must be true or undefined"));
    }
    list_and_map_rules(s, path, errors);
    validation_rules(s, path, errors);
}

/// kube's `specStandardValidatorV3.validate`: keywords CRD schemas may not use.
fn keyword_rules(s: Node<'_>, path: &str, ctx: &Context, errors: &mut Vec<FieldError>) {
    let type_name = s.type_name();
    if !type_name.is_empty() && !OPENAPI_TYPES.contains(&type_name) {
        errors.push(FieldError::not_supported(child(path, "type"), BadValue::string(type_name), &OPENAPI_TYPES));
    }
    if let (true, Some(reason)) = (s.has("default"), &ctx.forbid_defaults) {
        errors.push(FieldError::forbidden(child(path, "default"), format!("must not be set {reason}")));
    }
    if !s.str("id").is_empty() {
        errors.push(FieldError::forbidden(child(path, "id"), "id is not supported"));
    }
    let non_empty_map = |k: &str| s.get(k).and_then(Value::as_object).is_some_and(|m| !m.is_empty());
    let checks = [
        (s.has("additionalItems"), "additionalItems", "additionalItems is not supported"),
        (non_empty_map("patternProperties"), "patternProperties", "patternProperties is not supported"),
        (non_empty_map("definitions"), "definitions", "definitions is not supported"),
        (s.has("dependencies"), "dependencies", "dependencies is not supported"),
        (s.has("$ref"), "$ref", "$ref is not supported"),
        (type_name == "null", "type", "type cannot be set to null, use nullable as an alternative"),
        (
            s.get("items").and_then(Value::as_array).is_some_and(|a| !a.is_empty()),
            "items",
            "items must be a schema object and not an array",
        ),
        (ctx.inside_meta && s.embedded(), "x-kubernetes-embedded-resource", "must not be used inside of resource meta"),
    ];
    for (failed, field, detail) in checks {
        if failed {
            errors.push(FieldError::forbidden(child(path, field), detail));
        }
    }
}

fn required_or_invalid(path: String, value: &str, detail: &str) -> FieldError {
    if value.is_empty() {
        FieldError::required(path, detail)
    } else {
        FieldError::invalid(path, BadValue::string(value), detail)
    }
}

fn list_and_map_rules(s: Node<'_>, path: &str, errors: &mut Vec<FieldError>) {
    let type_name = s.type_name();
    let map_type = s.opt_str("x-kubernetes-map-type");
    let list_type = s.opt_str("x-kubernetes-list-type");
    if map_type.is_some() && type_name != "object" {
        errors.push(required_or_invalid(
            child(path, "type"),
            type_name,
            "must be object if x-kubernetes-map-type is specified",
        ));
    }
    if let Some(map_type) = map_type.filter(|m| !matches!(*m, "atomic" | "granular")) {
        let field = child(path, "x-kubernetes-map-type");
        errors.push(FieldError::not_supported(field, BadValue::string(map_type), &["atomic", "granular"]));
    }
    let items = s.items();
    if list_type.is_some() && type_name != "array" {
        errors.push(required_or_invalid(
            child(path, "type"),
            type_name,
            "must be array if x-kubernetes-list-type is specified",
        ));
    } else if let (Some("set"), Some(items)) = (list_type, items) {
        let detail = "must be atomic as item of a list with x-kubernetes-list-type=set";
        let items_path = child(path, "items");
        // kube reports the items' list type as the value in both cases.
        let items_list_type = BadValue::Json(items.get("x-kubernetes-list-type").cloned().unwrap_or(Value::Null));
        match items.type_name() {
            "array" if items.opt_str("x-kubernetes-list-type").is_some_and(|t| t != "atomic") => {
                errors.push(FieldError::invalid(child(&items_path, "x-kubernetes-list-type"), items_list_type, detail));
            }
            "object" if items.opt_str("x-kubernetes-map-type") != Some("atomic") => {
                errors.push(FieldError::invalid(child(&items_path, "x-kubernetes-map-type"), items_list_type, detail));
            }
            _ => {}
        }
    }
    if let Some(list_type) = list_type.filter(|l| !matches!(*l, "atomic" | "set" | "map")) {
        let field = child(path, "x-kubernetes-list-type");
        errors.push(FieldError::not_supported(field, BadValue::string(list_type), &["atomic", "set", "map"]));
    }
    let map_keys = s.strings("x-kubernetes-list-map-keys");
    if !map_keys.is_empty() && list_type != Some("map") {
        let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
        errors.push(required_or_invalid(child(path, "x-kubernetes-list-type"), list_type.unwrap_or(""), detail));
    }
    if list_type == Some("map") {
        map_list_rules(s, path, &map_keys, errors);
    }
    set_and_map_item_rules(s, path, list_type, &map_keys, errors);
}

fn map_list_rules(s: Node<'_>, path: &str, map_keys: &[&str], errors: &mut Vec<FieldError>) {
    let keys_path = child(path, "x-kubernetes-list-map-keys");
    let items_path = child(path, "items");
    if map_keys.is_empty() {
        errors.push(FieldError::required(keys_path.clone(), "must not be empty if x-kubernetes-list-type is map"));
    }
    match s.get("items") {
        None => {
            errors.push(FieldError::required(items_path.clone(), "must have a schema if x-kubernetes-list-type is map"))
        }
        Some(items @ Value::Array(_)) => {
            let detail = "must only have a single schema if x-kubernetes-list-type is map";
            errors.push(FieldError::invalid(items_path.clone(), BadValue::Json(items.clone()), detail));
        }
        _ => {}
    }
    let Some(items) = s.items() else { return };
    if items.type_name() != "object" {
        let detail = "must be object if parent array's x-kubernetes-list-type is map";
        errors.push(FieldError::invalid(child(&items_path, "type"), BadValue::string(items.type_name()), detail));
        return;
    }
    let mut seen = Vec::new();
    for map_key in map_keys {
        match items.property(map_key) {
            Some(property) if matches!(property.type_name(), "array" | "object") => {
                let field = child(&key(&child(&items_path, "properties"), map_key), "type");
                let detail = "must be a scalar type if parent array's x-kubernetes-list-type is map";
                errors.push(FieldError::invalid(field, BadValue::string(items.type_name()), detail));
            }
            Some(_) => {}
            None => {
                let detail = "entries must all be names of item properties";
                errors.push(FieldError::invalid(keys_path.clone(), BadValue::string_slice(map_keys), detail));
            }
        }
        if seen.contains(map_key) {
            let detail = "must not contain duplicate entries";
            errors.push(FieldError::invalid(keys_path.clone(), BadValue::string_slice(map_keys), detail));
        }
        seen.push(map_key);
    }
}

/// `validateMapListKeysMapSet`: set and map list items are not nullable, and map keys are
/// required or defaulted and not nullable.
fn set_and_map_item_rules(
    s: Node<'_>,
    path: &str,
    list_type: Option<&str>,
    map_keys: &[&str],
    errors: &mut Vec<FieldError>,
) {
    let (Some(items), Some(list_type @ ("set" | "map"))) = (s.items(), list_type) else { return };
    let items_path = child(path, "items");
    if items.nullable() {
        let detail = format!("cannot be nullable when x-kubernetes-list-type is {list_type}");
        errors.push(FieldError::forbidden(child(&items_path, "nullable"), detail));
    }
    if list_type != "map" {
        return;
    }
    let required = items.strings("required");
    for map_key in map_keys {
        let Some(property) = items.property(map_key) else { continue };
        let property_path = key(&child(&items_path, "properties"), map_key);
        if !required.contains(map_key) && property.default_value().is_none() {
            let detail =
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property";
            errors.push(FieldError::required(child(&property_path, "default"), detail));
        }
        if property.nullable() {
            let detail = "this property is in x-kubernetes-list-map-keys, so it cannot be nullable";
            errors.push(FieldError::forbidden(child(&property_path, "nullable"), detail));
        }
    }
}

/// The static checks of `x-kubernetes-validations` (no CEL compilation).
fn validation_rules(s: Node<'_>, path: &str, errors: &mut Vec<FieldError>) {
    let has_newline = |text: &str| text.contains(['\n', '\r']);
    for (i, rule) in s.list("x-kubernetes-validations").iter().enumerate() {
        let Some(rule) = Node::of(rule) else { continue };
        let rule_path = index(&child(path, "x-kubernetes-validations"), i);
        let (expression, message) = (rule.str("rule"), rule.str("message"));
        let (trimmed_rule, trimmed_message) = (expression.trim(), message.trim());
        let message_path = child(&rule_path, "message");
        if trimmed_rule.is_empty() {
            errors.push(FieldError::required(child(&rule_path, "rule"), "rule is not specified"));
        } else if !message.is_empty() && trimmed_message.is_empty() {
            errors.push(FieldError::invalid(message_path, BadValue::string(message), "must be non-empty if specified"));
        } else if has_newline(trimmed_message) {
            errors.push(FieldError::invalid(message_path, BadValue::string(message), "must not contain line breaks"));
        } else if has_newline(trimmed_rule) && trimmed_message.is_empty() {
            errors.push(FieldError::required(message_path, "message must be specified if rule contains line breaks"));
        }
        let message_expression = rule.str("messageExpression");
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            let detail = "messageExpression must be non-empty if specified";
            errors.push(FieldError::required(child(&rule_path, "messageExpression"), detail));
        }
        if let Some(reason) = rule.opt_str("reason").filter(|r| !VALIDATION_REASONS.contains(r)) {
            errors.push(FieldError::not_supported(
                child(&rule_path, "reason"),
                BadValue::string(reason),
                &VALIDATION_REASONS,
            ));
        }
        let field_path = rule.str("fieldPath");
        let field_path_field = child(&rule_path, "fieldPath");
        if !field_path.is_empty() && field_path.trim().is_empty() {
            errors.push(FieldError::invalid(
                field_path_field.clone(),
                BadValue::string(field_path),
                "must be non-empty if specified",
            ));
        }
        if has_newline(field_path) {
            errors.push(FieldError::invalid(
                field_path_field,
                BadValue::string(field_path),
                "must not contain line breaks",
            ));
        }
    }
}
