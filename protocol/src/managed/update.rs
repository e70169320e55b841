//! [`update`]: the managedFields of a write that is not an apply (create, update, or a
//! JSON/merge/strategic patch), computed from the object before and after.

use serde_json::Value;
use std::borrow::Cow;

use super::entries::{
    cap_update_managers, decode_managed_fields, encode, entry_value, identifier, index, is_reset, ManagedFieldsEntry,
    Managers, OperationType, MAX_UPDATE_MANAGERS,
};
use super::fields::{compare, created_fields_v1};
use super::schema::Shape;
use super::{managed_fields_of, stripped_fields, without_managed_fields, WriteContext};

/// The managedFields entries to store with `new`, written by `writer.manager` over `old`
/// (`None` for a create).
///
/// Which entries the write starts from follows kube's `decodeManagedFields`:
/// - through a subresource, always the stored ones (`old`'s);
/// - `metadata.managedFields: []` or `[{}]` in `new` clears tracking;
/// - other valid, non-empty `metadata.managedFields` in `new` are taken as the request says
///   (that is how clients repair ownership);
/// - absent or malformed ones fall back to `old`'s (so clients that drop the field do not
///   erase ownership), and undecodable stored entries to none. The write never fails;
///   [`decode_managed_fields`] tells callers that want to validate why a value is bad.
///
/// Then every field the write added or changed moves to the manager's `Update` entry for
/// this API version and subresource (created, or merged into, with `writer.time`), and
/// removed fields leave every entry; reset fields and the object's identity are never
/// owned. Managers left owning nothing are dropped, and past
/// [`super::entries::MAX_UPDATE_MANAGERS`] updaters the oldest merge into `ancient-changes`.
/// When neither the object nor the ownership changed, the stored entries are returned as
/// they were, timestamps included.
pub fn update(old: Option<&Value>, new: &Value, writer: &WriteContext<'_>, shape: &dyn Shape) -> Vec<Value> {
    let mut managers = starting_managers(old, new, writer.subresource.is_some());
    let empty = Value::Object(Default::default());
    let old_object = old.map_or(Cow::Borrowed(&empty), without_managed_fields);
    let new_object = without_managed_fields(new);

    if old.is_none() && managers.is_empty() && new_object.is_object() {
        // A create that names no other owner: everything it sets is the writer's, and its
        // entry, the only one, is written straight from the object.
        let fields = created_fields_v1(&new_object, shape, &writer.reset_set(), stripped_fields());
        if fields.as_object().is_some_and(serde_json::Map::is_empty) {
            return Vec::new();
        }
        let (manager, api_version, subresource) = (writer.manager, writer.api_version, writer.subresource());
        return vec![entry_value(manager, OperationType::Update, api_version, Some(writer.time), subresource, fields)];
    }
    let comparison = compare(&old_object, &new_object, shape).excluding(&writer.reset_set());
    let (changed, removed) = comparison.into_changed_and_removed();
    for entry in managers.values_mut() {
        entry.fields.remove_all(&changed);
        entry.fields.remove_all(&removed);
    }
    let mut taken = changed;
    taken.remove_all(&removed);
    taken.remove_all(stripped_fields());
    if !taken.is_empty() {
        let id = identifier(writer.manager, OperationType::Update, writer.api_version, writer.subresource());
        let entry = managers.entry(id).or_insert_with(|| ManagedFieldsEntry {
            manager: writer.manager.into(),
            operation: OperationType::Update,
            api_version: writer.api_version.into(),
            time: None,
            subresource: writer.subresource().into(),
            fields: Default::default(),
        });
        entry.fields = if entry.fields.is_empty() { taken } else { entry.fields.union(&taken) };
        entry.time = Some(writer.time.into());
    }
    managers.retain(|_, entry| !entry.fields.is_empty());
    cap_update_managers(&mut managers, MAX_UPDATE_MANAGERS);
    let entries = encode(&managers);
    match old.and_then(managed_fields_of).and_then(Value::as_array) {
        Some(stored) if old_object == new_object && same_but_times(stored, &entries) => stored.clone(),
        _ => entries,
    }
}

/// The entries a write starts from (kube's `decodeManagedFields`).
fn starting_managers(old: Option<&Value>, new: &Value, through_subresource: bool) -> Managers {
    let stored = || {
        let stored = old.and_then(managed_fields_of);
        decode_managed_fields(stored).map(index).unwrap_or_default()
    };
    if through_subresource {
        return stored();
    }
    let requested = managed_fields_of(new);
    if is_reset(requested) {
        return Managers::new();
    }
    match decode_managed_fields(requested) {
        Ok(entries) if !entries.is_empty() => index(entries),
        _ => stored(),
    }
}

/// Whether two entry lists differ at most in their `time`s (kube's
/// `IgnoreManagedFieldsTimestampsTransformer`: a no-op write must not bump timestamps, or it
/// would change the object and its resourceVersion).
fn same_but_times(stored: &[Value], entries: &[Value]) -> bool {
    let without_time = |entry: &Value| {
        let mut entry = entry.clone();
        if let Some(map) = entry.as_object_mut() {
            map.remove("time");
        }
        entry
    };
    stored.len() == entries.len() && stored.iter().zip(entries).all(|(a, b)| without_time(a) == without_time(b))
}
