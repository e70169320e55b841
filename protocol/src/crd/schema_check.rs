//! kube's `ValidateCustomResourceDefinitionValidation`: everything checked about one
//! `schema` (`{openAPIV3Schema: …}`) of a CRD, in kube's order:
//!
//! 1. with the status subresource, the root may only use a fixed set of keywords and must be
//!    `type: object`;
//! 2. the root may not be `nullable`;
//! 3. the structural rules ([`super::structural`]), and only when they pass, the defaults
//!    ([`super::default_check`]);
//! 4. the per-node OpenAPI rules ([`super::schema_rules`]);
//! 5. only when nothing else failed, the structural conversion error (e.g. `$schema`).

use serde_json::Value;

use super::child;
use super::default_check::validate_defaults;
use super::field_error::{BadValue, FieldError};
use super::node::Node;
use super::schema_rules::{schema_rules, Context};
use super::structural::{is_set_field, new_structural_error, validate_structural};

/// The root keywords allowed with the status subresource, by Go field name, and the JSON
/// keys of all keywords in Go field order (kube reports the first offending field).
const ALLOWED_AT_ROOT: &str = "Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations";
const FIELD_ORDER: &[(&str, &str)] = &[
    ("id", "ID"),
    ("$schema", "Schema"),
    ("$ref", "Ref"),
    ("description", "Description"),
    ("type", "Type"),
    ("nullable", "Nullable"),
    ("format", "Format"),
    ("title", "Title"),
    ("default", "Default"),
    ("maximum", "Maximum"),
    ("exclusiveMaximum", "ExclusiveMaximum"),
    ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"),
    ("maxLength", "MaxLength"),
    ("minLength", "MinLength"),
    ("pattern", "Pattern"),
    ("maxItems", "MaxItems"),
    ("minItems", "MinItems"),
    ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"),
    ("enum", "Enum"),
    ("maxProperties", "MaxProperties"),
    ("minProperties", "MinProperties"),
    ("required", "Required"),
    ("items", "Items"),
    ("allOf", "AllOf"),
    ("oneOf", "OneOf"),
    ("anyOf", "AnyOf"),
    ("not", "Not"),
    ("properties", "Properties"),
    ("additionalProperties", "AdditionalProperties"),
    ("patternProperties", "PatternProperties"),
    ("dependencies", "Dependencies"),
    ("additionalItems", "AdditionalItems"),
    ("definitions", "Definitions"),
    ("externalDocs", "ExternalDocs"),
    ("example", "Example"),
    ("x-kubernetes-preserve-unknown-fields", "XPreserveUnknownFields"),
    ("x-kubernetes-embedded-resource", "XEmbeddedResource"),
    ("x-kubernetes-int-or-string", "XIntOrString"),
    ("x-kubernetes-list-map-keys", "XListMapKeys"),
    ("x-kubernetes-list-type", "XListType"),
    ("x-kubernetes-map-type", "XMapType"),
    ("x-kubernetes-validations", "XValidations"),
];

/// Options that depend on the rest of the CRD.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SchemaOptions {
    /// The version (or any version, for a shared schema) enables the status subresource.
    pub(crate) status_enabled: bool,
    /// The schema must be structural (always, unless `spec.preserveUnknownFields` is set
    /// and the CRD uses neither defaults nor Kubernetes extensions).
    pub(crate) require_structural: bool,
}

/// Validates `validation` (a version's `schema`, or the shared one) at `path`
/// (`spec.versions[0].schema` or `spec.validation`).
pub(crate) fn validate_schema(validation: Option<Node<'_>>, path: &str, options: SchemaOptions) -> Vec<FieldError> {
    let Some(root) = validation.and_then(|v| v.schema("openAPIV3Schema")) else { return Vec::new() };
    let schema_path = child(path, "openAPIV3Schema");
    let mut errors = Vec::new();
    if options.status_enabled {
        errors.extend(status_root_error(root, path));
    }
    if root.nullable() {
        errors.push(FieldError::forbidden(
            child(path, "openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let mut deferred = Vec::new();
    if options.require_structural {
        if let Some(message) = new_structural_error(root, 0) {
            deferred.push(FieldError::invalid(schema_path.clone(), BadValue::string(""), message));
        } else {
            let structural = validate_structural(root, &schema_path);
            if structural.is_empty() {
                errors.extend(validate_defaults(root, &schema_path));
            } else {
                errors.extend(structural);
            }
        }
    }
    errors.extend(schema_rules(root, &schema_path, &Context::default(), true));
    if errors.is_empty() {
        errors.extend(deferred);
    }
    errors
}

/// With the status subresource, `status` is validated with `properties[status]` alone, so
/// root keywords that would constrain it are rejected.
fn status_root_error(root: Node<'_>, path: &str) -> Option<FieldError> {
    for (json_key, go_field) in FIELD_ORDER {
        let Some(value) = root.get(json_key).filter(|v| is_set_field(json_key, v)) else { continue };
        if *go_field == "Type" {
            if value.as_str() != Some("object") {
                let detail = "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled";
                return Some(FieldError::invalid(
                    child(path, "openAPIV3Schema.type"),
                    BadValue::Json(value.clone()),
                    detail,
                ));
            }
            continue;
        }
        if !ALLOWED_AT_ROOT.split(' ').any(|allowed| allowed == *go_field) {
            let detail =
                format!("only [{ALLOWED_AT_ROOT}] fields are allowed at the root of the schema if the status subresource is enabled");
            return Some(FieldError::invalid(
                child(path, "openAPIV3Schema"),
                BadValue::Json(Value::Object(root.map.clone())),
                detail,
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const STRICT: SchemaOptions = SchemaOptions { status_enabled: true, require_structural: true };

    fn check(schema: Value) -> Vec<String> {
        let validation = json!({ "openAPIV3Schema": schema });
        validate_schema(Node::of(&validation), "spec.validation", STRICT).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn schema_table() {
        let p = "spec.validation.openAPIV3Schema";
        let cases: Vec<(Value, Vec<String>)> = vec![
            (json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}), vec![]),
            (
                json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}),
                vec![format!("{p}.properties[spec].type: Required value: must not be empty for specified object fields")],
            ),
            (
                json!({"type": "array", "items": {"type": "string"}}),
                vec![
                    "spec.validation.openAPIV3Schema.type: Invalid value: \"array\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled".to_string(),
                    format!("{p}.type: Invalid value: \"array\": must be object at the root"),
                ],
            ),
            (
                json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}}}}),
                vec![],
            ),
            (
                json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
                vec![format!("{p}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified")],
            ),
            (
                json!({"type": "object", "properties": {"spec": {"type": "object", "anyOf": [{"type": "object", "description": "d", "properties": {"x": {"nullable": true}}}]}}}),
                vec![
                    format!("{p}.properties[spec].anyOf[0].description: Forbidden: must be empty to be structural"),
                    format!("{p}.properties[spec].anyOf[0].properties[x].nullable: Forbidden: must be false to be structural"),
                    format!("{p}.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural"),
                ],
            ),
            (
                json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}}),
                vec![],
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"properties": {"b": {"minLength": 1}}}]}),
                vec![
                    "spec.validation.openAPIV3Schema: Invalid value: map[string]interface {}{\"anyOf\":[]interface {}{map[string]interface {}{\"properties\":map[string]interface {}{\"b\":map[string]interface {}{\"minLength\":1}}}}, \"properties\":map[string]interface {}{\"a\":map[string]interface {}{\"type\":\"string\"}}, \"type\":\"object\"}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled".to_string(),
                    format!("{p}.properties[b]: Required value: because it is defined in {p}.anyOf[0].properties[b]"),
                ],
            ),
            (
                json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"ports": {
                    "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"],
                    "items": {"type": "object", "required": ["port"], "properties": {"name": {"type": "string"}, "port": {"type": "object"}}}
                }}}}}),
                vec![
                    format!("{p}.properties[spec].properties[ports].items.properties[port].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"),
                    format!("{p}.properties[spec].properties[ports].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"),
                ],
            ),
            (
                json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {}}, "spec": {"type": "object", "uniqueItems": true, "$ref": "#/x"}}}),
                vec![
                    format!("{p}.properties[metadata].default: Forbidden: must not be set in top-level metadata"),
                    format!("{p}.properties[spec].$ref: Forbidden: $ref is not supported"),
                    format!("{p}.properties[spec].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"),
                ],
            ),
            (
                json!({"type": "object", "properties": {"spec": {"type": "object", "$schema": "x"}}}),
                vec![format!("{p}: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported")],
            ),
            (
                json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string", "pattern": "(", "x-kubernetes-validations": [{"rule": " "}, {"rule": "self.a", "reason": "Nope"}]}}}}}),
                vec![
                    format!("{p}.properties[spec].properties[a].pattern: Invalid value: \"(\": must be a valid regular expression, but isn't: error parsing regexp: unclosed group"),
                    format!("{p}.properties[spec].properties[a].x-kubernetes-validations[0].rule: Required value: rule is not specified"),
                    format!("{p}.properties[spec].properties[a].x-kubernetes-validations[1].reason: Unsupported value: \"Nope\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""),
                ],
            ),
        ];
        for (schema, expected) in cases {
            assert_eq!(check(schema.clone()), expected, "{schema}");
        }
    }
}
