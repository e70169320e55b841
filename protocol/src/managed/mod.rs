//! Server-side apply and `metadata.managedFields` tracking, as kube-apiserver's field
//! manager (structured-merge-diff v4) does them, without I/O: objects go in as JSON and
//! merged objects and managedFields entries come out.
//!
//! A write meets these modules in this order:
//! - [`schema`]: what the object's schema says about lists and maps ([`Shape`]).
//! - [`path`] and [`fieldset`]: field paths and sets of them, with the `fieldsV1` encoding.
//! - [`fields`]: the fields an object sets and what changed between two objects.
//! - [`entries`]: decoding, ordering and capping managedFields entries.
//! - [`apply()`] (an apply patch: merge, prune, conflicts) or [`update()`] (any other write:
//!   ownership of what changed), and [`merge`] for the object surgery behind apply.
//!
//! Out of scope: kube's upgrade of client-side-apply ownership
//! (`kubectl.kubernetes.io/last-applied-configuration` → managedFields, the
//! `kubectl-client-side-apply` migration) and converting entries between API versions (all
//! entries are compared in the version being written, which is exact for single-version
//! resources).

pub mod apply;
pub mod conflict;
pub mod entries;
pub mod fields;
pub mod fieldset;
pub mod merge;
pub mod path;
pub mod schema;
pub mod update;

#[cfg(test)]
mod tests;

use serde_json::Value;

pub use apply::{apply, Applied, ApplyError};
pub use conflict::{Conflict, ConflictCause, Conflicts, FIELD_MANAGER_CONFLICT};
pub use entries::{decode_managed_fields, ManagedFieldsEntry, ManagedFieldsError, OperationType};
pub use fields::{compare, object_fields, Comparison};
pub use fieldset::FieldSet;
pub use path::{path_string, PathElement};
pub use schema::{BuiltinShape, ListKind, PatchList, SchemaShape, Shape};
pub use update::update;

/// The fields kube resets on writes to the main resource of most kinds: the status is
/// written through the `status` subresource, so apply and update neither own nor change it.
pub const MAIN_RESOURCE_RESET_FIELDS: &[&[&str]] = &[&["status"]];

/// Who writes, and how: the parts of a write that end up in its managedFields entry.
#[derive(Clone, Copy, Debug)]
pub struct WriteContext<'a> {
    /// The field manager (`fieldManager` query parameter, or the caller's default from the
    /// user agent).
    pub manager: &'a str,
    /// The API version the object is written in (`v1`, `apps/v1`).
    pub api_version: &'a str,
    /// The subresource written through (`Some("status")`), `None` for the main resource.
    pub subresource: Option<&'a str>,
    /// The write's time, RFC 3339 in seconds (`2024-05-01T12:00:00Z`).
    pub time: &'a str,
    /// Fields this endpoint resets (kube's `GetResetFields`): never owned, never in
    /// conflict, never changed by an apply. [`MAIN_RESOURCE_RESET_FIELDS`] for most main
    /// resources; for a status subresource, everything but `status` (e.g. `&[&["spec"]]`).
    pub reset_fields: &'a [&'a [&'a str]],
}

impl WriteContext<'_> {
    fn subresource(&self) -> &str {
        self.subresource.unwrap_or_default()
    }

    fn reset_set(&self) -> FieldSet {
        let paths: Vec<Vec<PathElement>> = self
            .reset_fields
            .iter()
            .map(|fields| fields.iter().map(|name| PathElement::field(*name)).collect())
            .collect();
        FieldSet::from_paths(paths.iter().map(Vec::as_slice))
    }
}

/// Fields no manager ever owns (kube's `stripMeta` set, plus the deletion fields, which
/// only the server sets): the object's identity and server-maintained metadata. Built once:
/// every tracked write subtracts it.
fn stripped_fields() -> &'static FieldSet {
    static STRIPPED: std::sync::LazyLock<FieldSet> = std::sync::LazyLock::new(build_stripped_fields);
    &STRIPPED
}

fn build_stripped_fields() -> FieldSet {
    let metadata = [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ];
    let mut set = FieldSet::from_paths([
        &[PathElement::field("apiVersion")][..],
        &[PathElement::field("kind")],
        &[PathElement::field("metadata")],
    ]);
    for name in metadata {
        set.insert(&[PathElement::field("metadata"), PathElement::field(name)]);
    }
    set
}

/// The object without `metadata.managedFields`, which is never itself tracked or merged;
/// borrowed when it has none (a create's body, usually), so only then is it copied.
/// `metadata.managedFields`, if present (a plain lookup: `Value::pointer` allocates per
/// segment, and every write asks this several times).
fn managed_fields_of(object: &Value) -> Option<&Value> {
    crate::meta::get(crate::meta::metadata(object)?, "managedFields")
}

fn without_managed_fields(object: &Value) -> std::borrow::Cow<'_, Value> {
    if managed_fields_of(object).is_none() {
        return std::borrow::Cow::Borrowed(object);
    }
    let mut object = object.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    std::borrow::Cow::Owned(object)
}

/// Writes `entries` to `metadata.managedFields`, or removes the field when there are none
/// (kube stores no empty list).
fn set_managed_fields(object: &mut Value, entries: &[Value]) {
    if entries.is_empty() {
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("managedFields");
        }
        return;
    }
    crate::meta::metadata_mut(object).insert("managedFields".into(), Value::Array(entries.to_vec()));
}
