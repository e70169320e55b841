//! Validation of a whole CustomResourceDefinition on create and update, in kube's order:
//! `metadata.name`, then the spec (group, scope, schemas required, each version, unique
//! names, one storage version, names, shared schema/subresources/columns, conversion), then
//! `status.storedVersions`, the API-approval annotation of protected groups and
//! `spec.preserveUnknownFields`.
//!
//! kube validates its *internal* CRD type, into which v1 converts by moving a per-version
//! `schema`, `subresources` or `additionalPrinterColumns` that is identical in every version
//! (always the case with a single version) to the spec. Errors in such shared parts are
//! therefore reported under `spec.validation.openAPIV3Schema…`, `spec.subresources…` and
//! `spec.additionalPrinterColumns[i]…`, and under `spec.versions[i]…` only when versions
//! differ. This module reproduces that.

use serde_json::Value;

use super::field_error::{BadValue, FieldError};
use super::node::Node;
use super::schema_check::{validate_schema, SchemaOptions};
use super::spec_parts::{
    dns1035_label, validate_column, validate_conversion, validate_deprecation_warning, validate_names,
    validate_subresources,
};
use super::{child, index};

const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// Validates a CRD about to be created, after [`super::default_crd`]; `status` is ignored,
/// because kube resets it on create (keeping only the storage version as stored version).
pub fn validate_crd(crd: &Value) -> Vec<FieldError> {
    let view = CrdView::new(crd);
    let mut errors = metadata_name_errors(crd, view.spec);
    errors.extend(spec_errors(&view));
    let stored: Vec<String> = view.storage_version().into_iter().collect();
    errors.extend(stored_versions_errors(&stored, &view.versions));
    errors.extend(approval_errors(crd, None));
    errors.extend(preserve_unknown_fields_errors(crd, None));
    errors
}

/// Validates an update of a CRD from `old` to `new` (both defaulted). Group and plural are
/// immutable; scope and kind too once `old` is `Established`. The status comes from `old`,
/// as kube keeps it on spec updates, plus the new storage version: a version may only leave
/// `spec.versions` once it is no longer in `status.storedVersions`.
pub fn validate_crd_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let view = CrdView::new(new);
    let old_view = CrdView::new(old);
    let mut errors = spec_errors(&view);
    let mut immutable = |path: &str, new_value: &str, old_value: &str| {
        if new_value != old_value {
            errors.push(FieldError::invalid(path, BadValue::string(new_value), "field is immutable"));
        }
    };
    if is_established(old) {
        immutable("spec.scope", view.spec.str("scope"), old_view.spec.str("scope"));
        immutable("spec.names.kind", view.names().str("kind"), old_view.names().str("kind"));
    }
    immutable("spec.group", view.spec.str("group"), old_view.spec.str("group"));
    immutable("spec.names.plural", view.names().str("plural"), old_view.names().str("plural"));
    let old_status = old.get("status").and_then(Node::of);
    errors.extend(validate_names(old_status.and_then(|s| s.schema("acceptedNames")), "status.acceptedNames"));
    let mut stored: Vec<String> =
        old_status.map(|s| s.strings("storedVersions")).unwrap_or_default().into_iter().map(String::from).collect();
    if let Some(storage) = view.storage_version().filter(|s| !stored.contains(s)) {
        stored.push(storage);
    }
    errors.extend(stored_versions_errors(&stored, &view.versions));
    errors.extend(approval_errors(new, Some(old)));
    errors.extend(preserve_unknown_fields_errors(new, Some(old)));
    errors
}

/// The parts of a CRD that validation looks at, with per-version parts shared as kube's
/// conversion shares them.
struct CrdView<'a> {
    spec: Node<'a>,
    versions: Vec<Node<'a>>,
    /// `Some` when every version has the same schema (it is then validated once, at
    /// `spec.validation`); the inner value is that schema, if any.
    shared_schema: Option<Option<Node<'a>>>,
    shared_subresources: Option<Option<Node<'a>>>,
    shared_columns: Option<&'a [Value]>,
}

static EMPTY: std::sync::LazyLock<serde_json::Map<String, Value>> = std::sync::LazyLock::new(serde_json::Map::new);

impl<'a> CrdView<'a> {
    fn new(crd: &'a Value) -> Self {
        let spec = crd.get("spec").and_then(Node::of).unwrap_or(Node { map: &EMPTY });
        let versions: Vec<Node<'a>> = spec.schemas("versions");
        let shared = |field: &str| -> Option<Option<&'a Value>> {
            let first = versions.first()?.get(field);
            versions.iter().all(|v| semantic_eq(v.get(field), first)).then_some(first)
        };
        let shared_schema = shared("schema").map(|v| v.and_then(Node::of));
        let shared_subresources = shared("subresources").map(|v| v.and_then(Node::of));
        let shared_columns =
            shared("additionalPrinterColumns").map(|v| v.and_then(Value::as_array).map_or(&[][..], Vec::as_slice));
        Self { spec, versions, shared_schema, shared_subresources, shared_columns }
    }

    fn names(&self) -> Node<'a> {
        self.spec.schema("names").unwrap_or(Node { map: &EMPTY })
    }

    /// The first version marked `storage`, which kube records as stored.
    fn storage_version(&self) -> Option<String> {
        self.versions.iter().find(|v| v.flag("storage")).map(|v| v.str("name").to_string())
    }

    fn has_status(subresources: Option<Node<'_>>) -> bool {
        subresources.is_some_and(|s| s.has("status"))
    }

    /// kube's `getSubresourcesForVersion`: the shared subresources, or the version's own.
    fn status_enabled(&self, version: Node<'_>) -> bool {
        match self.shared_subresources {
            Some(shared) => Self::has_status(shared),
            None => Self::has_status(version.schema("subresources")),
        }
    }

    fn any_status_enabled(&self) -> bool {
        self.versions.iter().any(|v| self.status_enabled(*v))
    }

    fn schemas(&self) -> Vec<Node<'a>> {
        self.versions.iter().filter_map(|v| v.schema("schema")).filter_map(|s| s.schema("openAPIV3Schema")).collect()
    }
}

/// `apiequality.Semantic.DeepEqual` on the JSON form: absent, `null`, `[]`, `false` and `""`
/// are all Go zero values.
fn semantic_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    let zero = |v: Option<&Value>| match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => true,
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    };
    match (a, b) {
        _ if zero(a) && zero(b) => true,
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            x.keys().chain(y.keys()).all(|k| semantic_eq(x.get(k), y.get(k)))
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| semantic_eq(Some(p), Some(q)))
        }
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn metadata_name_errors(crd: &Value, spec: Node<'_>) -> Vec<FieldError> {
    let name = crd.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if name.is_empty() {
        return vec![FieldError::required("metadata.name", "name or generateName is required")];
    }
    let mut messages = crate::names::dns1123_subdomain(name);
    let plural = spec.schema("names").map_or("", |n| n.str("plural"));
    if name != format!("{plural}.{}", spec.str("group")) {
        messages.push("must be spec.names.plural+\".\"+spec.group".to_string());
    }
    messages.into_iter().map(|m| FieldError::invalid("metadata.name", BadValue::string(name), m)).collect()
}

fn spec_errors(view: &CrdView<'_>) -> Vec<FieldError> {
    let spec = view.spec;
    let mut errors = group_errors(spec.str("group"));
    match spec.str("scope") {
        "" => errors.push(FieldError::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => {
            errors.push(FieldError::not_supported("spec.scope", BadValue::string(other), &["Cluster", "Namespaced"]))
        }
    }
    let preserve_unknown = spec.flag("preserveUnknownFields");
    let shared_root = view.shared_schema.flatten().and_then(|s| s.schema("openAPIV3Schema"));
    if shared_root.is_none() {
        for (i, version) in view.versions.iter().enumerate() {
            let per_version = view.shared_schema.is_none().then(|| version.schema("schema")).flatten();
            if per_version.and_then(|s| s.schema("openAPIV3Schema")).is_none() {
                errors.push(FieldError::required(format!("spec.versions[{i}].schema.openAPIV3Schema"), ""));
            }
        }
    }
    let schemas = view.schemas();
    let has_defaults = schemas.iter().any(|s| schema_has(*s, &|n| n.has("default"), 0));
    if has_defaults && preserve_unknown {
        let detail = "must be false in order to use defaults in the schema";
        errors.push(FieldError::invalid("spec.preserveUnknownFields", BadValue::Json(true.into()), detail));
    }
    let options = |status_enabled| SchemaOptions {
        status_enabled,
        require_structural: !preserve_unknown
            || has_defaults
            || schemas.iter().any(|s| schema_has(*s, &has_extension, 0)),
    };
    errors.extend(version_errors(view, &options));
    let mut names = Vec::new();
    for version in &view.versions {
        names.push(version.str("name"));
    }
    if names.iter().enumerate().any(|(i, name)| names[..i].contains(name)) {
        errors.push(FieldError::invalid("spec.versions", versions_value(spec), "must contain unique version names"));
    }
    if view.versions.iter().filter(|v| v.flag("storage")).count() != 1 {
        let detail = "must have exactly one version marked as storage version";
        errors.push(FieldError::invalid("spec.versions", versions_value(spec), detail));
    }
    if let Some(first) = names.first().filter(|n| !n.is_empty()) {
        let problems = dns1035_label(first);
        if !problems.is_empty() {
            errors.push(FieldError::invalid("spec.version", BadValue::string(first), problems.join(",")));
        }
    }
    let names_node = view.names();
    for field in ["plural", "singular", "kind", "listKind"] {
        if names_node.str(field).is_empty() {
            errors.push(FieldError::required(format!("spec.names.{field}"), ""));
        }
    }
    errors.extend(validate_names(Some(names_node), "spec.names"));
    if let Some(shared) = view.shared_schema.flatten() {
        errors.extend(validate_schema(Some(shared), "spec.validation", options(view.any_status_enabled())));
    }
    if let Some(shared) = view.shared_subresources.flatten() {
        errors.extend(validate_subresources(Some(shared), "spec.subresources"));
    }
    for (j, column) in view.shared_columns.unwrap_or(&[]).iter().enumerate() {
        if let Some(column) = Node::of(column) {
            errors.extend(validate_column(column, &format!("spec.additionalPrinterColumns[{j}]")));
        }
    }
    errors.extend(validate_conversion(spec.schema("conversion"), preserve_unknown));
    errors
}

fn group_errors(group: &str) -> Vec<FieldError> {
    if group.is_empty() {
        return vec![FieldError::required("spec.group", "")];
    }
    let problems = crate::names::dns1123_subdomain(group);
    if !problems.is_empty() {
        return vec![FieldError::invalid("spec.group", BadValue::string(group), problems.join(","))];
    }
    if !group.contains('.') {
        return vec![FieldError::invalid(
            "spec.group",
            BadValue::string(group),
            "should be a domain with at least one dot",
        )];
    }
    Vec::new()
}

/// Each version's name and, when not shared, its schema, subresources and columns.
fn version_errors(view: &CrdView<'_>, options: &dyn Fn(bool) -> SchemaOptions) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, version) in view.versions.iter().enumerate() {
        let path = index("spec.versions", i);
        let name = version.str("name");
        let problems = dns1035_label(name);
        if !problems.is_empty() {
            errors.push(FieldError::invalid(child(&path, "name"), BadValue::string(name), problems.join(",")));
        }
        errors.extend(validate_deprecation_warning(*version, &path));
        if view.shared_schema.is_none() {
            let schema_options = options(view.status_enabled(*version));
            errors.extend(validate_schema(version.schema("schema"), &child(&path, "schema"), schema_options));
        }
        if view.shared_subresources.is_none() {
            errors.extend(validate_subresources(version.schema("subresources"), &child(&path, "subresources")));
        }
        if view.shared_columns.is_none() {
            for (j, column) in version.list("additionalPrinterColumns").iter().enumerate() {
                if let Some(column) = Node::of(column) {
                    errors.extend(validate_column(column, &index(&child(&path, "additionalPrinterColumns"), j)));
                }
            }
        }
    }
    errors
}

/// kube prints the whole `[]CustomResourceDefinitionVersion` with Go's `%#v`; this is an
/// abbreviated rendering of it (names and flags only).
fn versions_value(spec: Node<'_>) -> BadValue {
    const TYPE: &str = "[]apiextensions.CustomResourceDefinitionVersion";
    match spec.get("versions").and_then(Value::as_array) {
        None => BadValue::Go(format!("{TYPE}(nil)")),
        Some(versions) => {
            let items: Vec<String> = versions
                .iter()
                .filter_map(Node::of)
                .map(|v| {
                    let name = crate::names::go_quote(v.str("name"));
                    format!(
                        "apiextensions.CustomResourceDefinitionVersion{{Name:{name}, Served:{}, Storage:{}, ...}}",
                        v.flag("served"),
                        v.flag("storage")
                    )
                })
                .collect();
            BadValue::Go(format!("{TYPE}{{{}}}", items.join(", ")))
        }
    }
}

fn has_extension(node: Node<'_>) -> bool {
    node.embedded()
        || node.has("x-kubernetes-preserve-unknown-fields")
        || node.int_or_string()
        || !node.list("x-kubernetes-list-map-keys").is_empty()
        || node.has("x-kubernetes-list-type")
        || !node.list("x-kubernetes-validations").is_empty()
}

/// kube's `SchemaHas`: whether any node of the schema satisfies `predicate`.
fn schema_has(node: Node<'_>, predicate: &dyn Fn(Node<'_>) -> bool, depth: usize) -> bool {
    if depth > 256 {
        return false;
    }
    if predicate(node) {
        return true;
    }
    let singles =
        ["items", "not", "additionalProperties", "additionalItems"].into_iter().filter_map(|k| node.schema(k));
    let lists = ["items", "allOf", "anyOf", "oneOf"].into_iter().flat_map(|k| node.schemas(k));
    let maps = ["properties", "patternProperties", "definitions", "dependencies"]
        .into_iter()
        .filter_map(|k| node.get(k).and_then(Value::as_object))
        .flat_map(|m| m.values().filter_map(Node::of));
    singles.chain(lists).chain(maps).any(|sub| schema_has(sub, predicate, depth + 1))
}

fn is_established(crd: &Value) -> bool {
    let conditions = crd.pointer("/status/conditions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    conditions
        .iter()
        .any(|c| c.get("type") == Some(&Value::from("Established")) && c.get("status") == Some(&Value::from("True")))
}

/// kube's `ValidateCustomResourceDefinitionStoredVersions`.
fn stored_versions_errors(stored: &[String], versions: &[Node<'_>]) -> Vec<FieldError> {
    let path = "status.storedVersions";
    if stored.is_empty() {
        return vec![FieldError::invalid(
            path,
            BadValue::string_slice(stored),
            "must have at least one stored version",
        )];
    }
    let names: Vec<&str> = versions.iter().map(|v| v.str("name")).collect();
    let mut errors = Vec::new();
    for version in versions {
        let name = version.str("name");
        if version.flag("storage") && !stored.iter().any(|s| s == name) {
            errors.push(FieldError::invalid(
                path,
                BadValue::string_slice(stored),
                format!("must have the storage version {name}"),
            ));
        }
    }
    for (i, stored_version) in stored.iter().enumerate() {
        let last = stored.iter().rposition(|s| s == stored_version) == Some(i);
        if last && !names.contains(&stored_version.as_str()) {
            let v = stored_version;
            let detail = format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions");
            errors.push(FieldError::invalid(index(path, i), BadValue::string(v), detail));
        }
    }
    errors
}

#[derive(Debug, PartialEq, Eq)]
enum Approval {
    Missing,
    Invalid,
    Fine,
}

fn approval_state(crd: &Value) -> Approval {
    let path = format!("/metadata/annotations/{}", APPROVAL_ANNOTATION.replace('/', "~1"));
    match crd.pointer(&path).and_then(Value::as_str) {
        None => Approval::Missing,
        Some(value) if value.starts_with("unapproved") => Approval::Fine,
        Some(value) => {
            let host = value.split_once("://").map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or_default());
            if host.is_some_and(|h| !h.is_empty()) {
                Approval::Fine
            } else {
                Approval::Invalid
            }
        }
    }
}

/// Groups `k8s.io` and `kubernetes.io` (and their subdomains) need the API-approval
/// annotation, unless it is unchanged since `old`.
fn approval_errors(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let group = crd.pointer("/spec/group").and_then(Value::as_str).unwrap_or("");
    let protected = ["k8s.io", "kubernetes.io"].iter().any(|g| group == *g || group.ends_with(&format!(".{g}")));
    if !protected {
        return Vec::new();
    }
    let state = approval_state(crd);
    if old.is_some_and(|old| approval_state(old) == state) {
        return Vec::new();
    }
    let path = format!("metadata.annotations[{APPROVAL_ANNOTATION}]");
    match state {
        Approval::Fine => Vec::new(),
        Approval::Missing => vec![FieldError::required(
            path,
            format!("protected groups must have approval annotation {APPROVAL_ANNOTATION:?}, see https://github.com/kubernetes/enhancements/pull/1111"),
        )],
        Approval::Invalid => {
            let value = crd.pointer(&format!("/metadata/annotations/{APPROVAL_ANNOTATION}")).and_then(Value::as_str).unwrap_or("");
            vec![FieldError::invalid(
                path,
                BadValue::string(value),
                format!("protected groups must have approval annotation {APPROVAL_ANNOTATION:?} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
            )]
        }
    }
}

/// v1 forbids turning `spec.preserveUnknownFields` on (kept only if it already was).
fn preserve_unknown_fields_errors(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let on = |v: &Value| v.pointer("/spec/preserveUnknownFields") == Some(&Value::Bool(true));
    if old.is_some_and(on) || !on(crd) {
        return Vec::new();
    }
    let detail =
        "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead";
    vec![FieldError::invalid("spec.preserveUnknownFields", BadValue::Json(true.into()), detail)]
}
