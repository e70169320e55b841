//! [`apply`]: a server-side apply patch merged into the live object, with pruning,
//! conflict detection and the applier's managedFields entry.

use serde_json::Value;
use std::borrow::Cow;

use super::conflict::{Conflict, Conflicts};
use super::entries::{
    cap_update_managers, decode_managed_fields, encode, identifier, index, ManagedFieldsEntry, ManagedFieldsError,
    Managers, OperationType, MAX_UPDATE_MANAGERS,
};
use super::fields::{compare, object_fields, object_fields_lenient};
use super::fieldset::FieldSet;
use super::merge::{merge, remove_paths};
use super::path::path_string;
use super::schema::Shape;
use super::{set_managed_fields, stripped_fields, without_managed_fields, WriteContext};

/// The manager kube gives the fields of an object nobody tracked before its first apply.
pub const BEFORE_FIRST_APPLY_MANAGER: &str = "before-first-apply";

/// The result of an apply.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// The object to store, with `metadata.managedFields` set to `managed_fields` (or
    /// removed when empty).
    pub object: Value,
    /// The managedFields entries, in kube's order.
    pub managed_fields: Vec<Value>,
}

/// Why an apply was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApplyError {
    /// Fields the apply would change are owned by other managers; answer 409 Conflict.
    #[error("{0}")]
    Conflicts(Conflicts),
    /// The configuration sets `metadata.managedFields`; kube answers 400 BadRequest.
    #[error("metadata.managedFields must be nil")]
    ManagedFieldsInConfig,
    /// The configuration does not fit its schema (an associative list item without its key,
    /// a duplicate key, an object in a set); kube answers with this reason after
    /// `failed to create typed patch object (<gvk>): `.
    #[error("{0}")]
    InvalidConfig(String),
    /// The live object's managedFields do not decode; kube answers 500.
    #[error("failed to decode managed fields: {0}")]
    LiveManagedFields(ManagedFieldsError),
}

/// Applies `config` as `writer.manager` to `live` (`None` when the apply creates the object):
///
/// - The result is `live` merged with `config` (see [`super::merge::merge`]); reset fields
///   (`writer.reset_fields`, e.g. `status`) are taken from `live`, not `config`.
/// - Fields the manager applied last time and no longer applies are removed, unless
///   another manager (applier or updater) still owns them.
/// - A field whose value the apply adds or changes and that another manager owns is a
///   conflict; with `force` its ownership moves to the applier instead.
/// - The applier's entry owns exactly the fields of `config` (minus the object's identity
///   and server-set metadata); managers left owning nothing are dropped. The entry's time
///   is `writer.time` when the object changed, else it keeps its previous time (kube does
///   not touch timestamps on no-op applies).
/// - An object nobody tracked gets a `before-first-apply` Update entry owning what it held,
///   so a first apply conflicts with values it would overwrite.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    writer: &WriteContext<'_>,
    force: bool,
    shape: &dyn Shape,
) -> Result<Applied, ApplyError> {
    if super::managed_fields_of(config).is_some_and(|fields| !fields.is_null()) {
        return Err(ApplyError::ManagedFieldsInConfig);
    }
    let reset = writer.reset_set();
    let live_object = live.map_or_else(|| Cow::Owned(Value::Object(Default::default())), without_managed_fields);
    let mut managers = match live {
        Some(live) => {
            index(decode_managed_fields(super::managed_fields_of(live)).map_err(ApplyError::LiveManagedFields)?)
        }
        None => Managers::new(),
    };
    if live.is_some() && managers.is_empty() {
        track_untracked(&live_object, writer, &reset, shape, &mut managers);
    }

    let mut config = config.clone();
    remove_paths(&mut config, &reset, shape);
    let mut object = merge(Some(&*live_object), &config, shape).map_err(ApplyError::InvalidConfig)?;
    let applied_fields = object_fields(&config, shape)
        .map_err(ApplyError::InvalidConfig)?
        .recursive_difference(&reset)
        .difference(stripped_fields());

    let applier_id = identifier(writer.manager, OperationType::Apply, writer.api_version, writer.subresource());
    let previous = managers.remove(&applier_id);
    let applier = ManagedFieldsEntry {
        manager: writer.manager.into(),
        operation: OperationType::Apply,
        api_version: writer.api_version.into(),
        time: previous.as_ref().and_then(|entry| entry.time.clone()),
        subresource: writer.subresource().into(),
        fields: applied_fields,
    };
    managers.insert(applier_id.clone(), applier);
    if let Some(previous) = previous.filter(|entry| !entry.fields.is_empty()) {
        prune(&mut object, &previous.fields, &managers, shape);
    }

    let comparison = compare(&live_object, &object, shape).excluding(&reset);
    let changed = comparison.changed();
    let conflicts: Vec<Conflict> = managers
        .iter()
        .filter(|(id, _)| **id != applier_id)
        .flat_map(|(id, entry)| {
            entry.fields.intersection(&changed).paths().into_iter().map(move |path| Conflict {
                manager: entry.display_name(),
                field: path_string(&path),
                manager_identifier: id.clone(),
            })
        })
        .collect();
    if !force && !conflicts.is_empty() {
        return Err(ApplyError::Conflicts(Conflicts::new(conflicts)));
    }
    for (id, entry) in managers.iter_mut() {
        if *id != applier_id {
            entry.fields = entry.fields.difference(&changed).difference(&comparison.removed);
        }
    }
    managers.retain(|_, entry| !entry.fields.is_empty());
    if object != *live_object {
        if let Some(applier) = managers.get_mut(&applier_id) {
            applier.time = Some(writer.time.into());
        }
    }
    cap_update_managers(&mut managers, MAX_UPDATE_MANAGERS);
    let managed_fields = encode(&managers);
    set_managed_fields(&mut object, &managed_fields);
    Ok(Applied { object, managed_fields })
}

/// kube's `skipNonAppliedManager`: before the first apply to an object without
/// managedFields, everything it holds is recorded as written by `before-first-apply`.
fn track_untracked(
    live: &Value,
    writer: &WriteContext<'_>,
    reset: &FieldSet,
    shape: &dyn Shape,
    managers: &mut Managers,
) {
    let empty = Value::Object(Default::default());
    let fields = compare(&empty, live, shape).excluding(reset).changed().difference(stripped_fields());
    if fields.is_empty() {
        return;
    }
    let entry = ManagedFieldsEntry {
        manager: BEFORE_FIRST_APPLY_MANAGER.into(),
        operation: OperationType::Update,
        api_version: writer.api_version.into(),
        time: Some(writer.time.into()),
        subresource: writer.subresource().into(),
        fields,
    };
    managers.insert(entry.identifier(), entry);
}

/// Removes from `object` what the applier owned last time (`previous`) and no manager owns
/// now (the applier's new set included). Declared parents of owned fields count as owned,
/// so dropping `.data.a` keeps `.data` while someone owns `.data.b`; the object's identity
/// and server-set metadata are never removed.
fn prune(object: &mut Value, previous: &FieldSet, managers: &Managers, shape: &dyn Shape) {
    let owned = managers.values().fold(FieldSet::new(), |owned, entry| owned.union(&entry.fields));
    let present = object_fields_lenient(object, shape).with_declared_parents(shape);
    // The identity is never owned, so without the last difference an applier dropping its
    // last label would take `metadata` (name and all) with it.
    let stale = present
        .intersection(&previous.with_declared_parents(shape))
        .difference(&owned.with_declared_parents(shape))
        .difference(stripped_fields());
    remove_paths(object, &stale, shape);
}
