//! Read access to one node of an OpenAPI v3 schema held as JSON (a CRD's `openAPIV3Schema`
//! or anything below it).
//!
//! kube decodes schemas into Go structs first, so a JSON `null` is the same as an absent
//! field and a value of the wrong JSON type never gets this far (decoding fails with a 400).
//! The accessors follow that: `null` and wrongly typed values read as absent.

use serde_json::{Map, Value};

/// What `additionalProperties` says.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Additional<'a> {
    /// Not set.
    Unset,
    /// `true` or `false`.
    Bool(bool),
    /// A schema (which also allows any key).
    Schema(Node<'a>),
}

/// One schema node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node<'a> {
    pub(crate) map: &'a Map<String, Value>,
}

impl<'a> Node<'a> {
    /// The node for a JSON value, if it is an object.
    pub(crate) fn of(value: &'a Value) -> Option<Self> {
        value.as_object().map(|map| Self { map })
    }

    /// A field, `None` when absent or `null`.
    pub(crate) fn get(self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// Whether the field is present and not `null`.
    pub(crate) fn has(self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// A string field, `""` when absent.
    pub(crate) fn str(self, key: &str) -> &'a str {
        self.get(key).and_then(Value::as_str).unwrap_or("")
    }

    /// A string field that is present (possibly empty).
    pub(crate) fn opt_str(self, key: &str) -> Option<&'a str> {
        self.get(key).and_then(Value::as_str)
    }

    /// `type`, `""` when absent.
    pub(crate) fn type_name(self) -> &'a str {
        self.str("type")
    }

    /// A boolean field, `false` when absent.
    pub(crate) fn flag(self, key: &str) -> bool {
        self.get(key).and_then(Value::as_bool).unwrap_or(false)
    }

    /// `nullable`.
    pub(crate) fn nullable(self) -> bool {
        self.flag("nullable")
    }

    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub(crate) fn preserves_unknown(self) -> bool {
        self.flag("x-kubernetes-preserve-unknown-fields")
    }

    /// `x-kubernetes-embedded-resource: true`.
    pub(crate) fn embedded(self) -> bool {
        self.flag("x-kubernetes-embedded-resource")
    }

    /// `x-kubernetes-int-or-string: true`.
    pub(crate) fn int_or_string(self) -> bool {
        self.flag("x-kubernetes-int-or-string")
    }

    /// A number field.
    pub(crate) fn number(self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }

    /// An integer field (`maxLength`, `minItems`, …).
    pub(crate) fn integer(self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
    }

    /// An array field, empty when absent.
    pub(crate) fn list(self, key: &str) -> &'a [Value] {
        self.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
    }

    /// An array-of-strings field (`required`, `x-kubernetes-list-map-keys`).
    pub(crate) fn strings(self, key: &str) -> Vec<&'a str> {
        self.list(key).iter().filter_map(Value::as_str).collect()
    }

    /// The sub-schemas of an array field (`allOf`, `anyOf`, `oneOf`).
    pub(crate) fn schemas(self, key: &str) -> Vec<Node<'a>> {
        self.list(key).iter().filter_map(Node::of).collect()
    }

    /// `properties`, in document order.
    pub(crate) fn properties(self) -> Option<&'a Map<String, Value>> {
        self.get("properties").and_then(Value::as_object)
    }

    /// One property's schema.
    pub(crate) fn property(self, name: &str) -> Option<Node<'a>> {
        self.properties().and_then(|p| p.get(name)).and_then(Node::of)
    }

    /// `items` when it is a single schema (an array of schemas is rejected by CRD validation).
    pub(crate) fn items(self) -> Option<Node<'a>> {
        self.get("items").and_then(Node::of)
    }

    /// A nested single schema such as `not`.
    pub(crate) fn schema(self, key: &str) -> Option<Node<'a>> {
        self.get(key).and_then(Node::of)
    }

    /// `additionalProperties`.
    pub(crate) fn additional(self) -> Additional<'a> {
        match self.get("additionalProperties") {
            Some(Value::Bool(allows)) => Additional::Bool(*allows),
            Some(value @ Value::Object(_)) => Node::of(value).map_or(Additional::Unset, Additional::Schema),
            _ => Additional::Unset,
        }
    }

    /// The `additionalProperties` schema, if it is one.
    pub(crate) fn additional_schema(self) -> Option<Node<'a>> {
        match self.additional() {
            Additional::Schema(node) => Some(node),
            _ => None,
        }
    }

    /// `default`; a `null` default is no default, as in kube.
    pub(crate) fn default_value(self) -> Option<&'a Value> {
        self.get("default")
    }
}
