//! CustomResourceDefinitions without I/O: validating CRDs, validating and defaulting the
//! custom resources they define, all with kube-apiserver's (apiextensions-apiserver 1.33)
//! rules and message texts.
//!
//! A CRD request meets these functions in this order:
//! - [`default_crd`], then [`prepare_crd_for_create`] / [`prepare_crd_for_update`]: kube's
//!   v1 defaults (singular, listKind, `conversion: None`, webhook port) and what its strategy
//!   does to `status` and `metadata.generation`;
//! - [`validate_crd`] / [`validate_crd_update`]: names, group, scope, versions, subresources,
//!   printer columns, conversion, stored versions and, per schema, the structural-schema
//!   rules, the OpenAPI subset, list/map extensions and the validity of every `default`.
//!
//! A custom-resource request meets:
//! - [`apply_defaults`]: structural defaulting by the version's schema (on reads too);
//! - [`validate_object`]: the schema's value validation, embedded resources and list
//!   uniqueness, reporting every bad field.
//!
//! Every finding is a [`FieldError`] (kube's `field.Error`), which renders as kube does:
//! `spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`.
//!
//! Not covered: `x-kubernetes-validations` (CEL) rules are checked for shape only, never
//! compiled or evaluated; `selectableFields`, webhook `caBundle` contents, ObjectMeta of
//! embedded resources, and the relaxations kube applies to CRDs stored by older versions are
//! not checked either. Schemas are read from JSON as they come; a field of the wrong JSON
//! type counts as absent (kube would have rejected the request while decoding it).
//!
//! Modules, in the order a CRD schema is checked:
//! - `field_error`: [`FieldError`] and Go's value formatting.
//! - `validate`: the whole CRD; `spec_parts`: names, subresources, columns, conversion.
//! - `schema_check`: one schema, in kube's order; `structural`: the structural rules;
//!   `schema_rules`: the per-node OpenAPI rules; `default_check`: defaults and pruning.
//! - `object`: custom resources; `openapi_walk`: kube-openapi's value validation and
//!   `scalar_checks` its type, number and enum checks, both reporting an `outcome`; `formats`: string formats; `listtype`: embedded resources and list uniqueness.
//! - `default`: defaulting; `node`: reading schema JSON.

mod default;
mod default_check;
mod field_error;
mod formats;
mod listtype;
mod node;
mod object;
mod openapi_walk;
mod outcome;
mod scalar_checks;
mod schema_check;
mod schema_rules;
mod spec_parts;
mod structural;
mod validate;

pub use default::{apply_defaults, default_crd, prepare_crd_for_create, prepare_crd_for_update};
pub use field_error::{BadValue, FieldError, FieldErrorKind};
pub use object::validate_object;
pub use validate::{validate_crd, validate_crd_update};

/// `path.name` in kube's field-path syntax (`name` alone at the root).
pub(crate) fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// `path[key]`: a map key, printed without quotes as kube does.
pub(crate) fn key(path: &str, key: &str) -> String {
    format!("{path}[{key}]")
}

/// `path[i]`: a list index.
pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

#[cfg(test)]
mod tests;
