//! Validating a custom resource against its version's `openAPIV3Schema`, as kube's
//! custom-resource strategy does it, in three passes whose errors come in this order:
//!
//! 1. the schema walk ([`super::openapi_walk`]): types, formats, bounds, lengths, patterns,
//!    enums, required fields, property and item counts, `additionalProperties` and the
//!    junctors, reporting every bad field;
//! 2. embedded resources: `apiVersion` and `kind` of objects marked
//!    `x-kubernetes-embedded-resource`;
//! 3. list semantics: duplicate items of `set` lists and duplicate keys of `map` lists.
//!
//! Within a pass, errors follow the object's key order (kube walks Go maps, whose order is
//! random, so any order is faithful; document order is the readable one).

use serde_json::Value;

use super::field_error::FieldError;
use super::listtype::{validate_embedded, validate_list_types};
use super::node::Node;
use super::openapi_walk::Walker;
use super::outcome::to_field_errors;

/// Validates `object`, a whole custom resource, against `schema`, one version's
/// `openAPIV3Schema`, and returns every error, with paths rooted at the object
/// (`spec.replicas`, `spec.ports[1]`).
///
/// `metadata` is only checked against what the schema declares for it (at most
/// `name`/`generateName` constraints); the caller validates ObjectMeta itself. The object
/// should already be pruned and defaulted ([`super::apply_defaults`]), as kube validates after
/// both. A schema that is not a JSON object validates nothing.
pub fn validate_object(object: &Value, schema: &Value) -> Vec<FieldError> {
    let Some(root) = Node::of(schema) else { return Vec::new() };
    let outcome = Walker::default().validate(root, "", object);
    let mut errors = to_field_errors(None, outcome.issues);
    errors.extend(validate_embedded("", object, root, false));
    errors.extend(validate_list_types("", object, root));
    errors
}

#[cfg(test)]
#[path = "object_tests.rs"]
mod tests;
