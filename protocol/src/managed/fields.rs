//! Walking objects with a [`Shape`]: naming list items ([`list_elements`]), the set of fields
//! an object sets ([`object_fields`], kube's `ToFieldSet`) and what changed between two
//! objects ([`compare`], kube's `Compare`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::fieldset::FieldSet;
use super::path::{path_string, PathElement};
use super::schema::{ListKind, Shape};

/// The path elements of a granular list's items, in order. Errors carry
/// structured-merge-diff's wording (`element 0: associative list with keys has an element
/// that omits key field "name" (and doesn't have default value)`); duplicates are errors
/// too (`duplicate entries for key [name="a"]`), since an item must be nameable.
pub fn list_elements(
    items: &[Value],
    kind: &ListKind,
    path: &[PathElement],
    shape: &dyn Shape,
) -> Result<Vec<PathElement>, String> {
    name_items(items, kind, path, shape, false)
}

/// [`list_elements`], optionally accepting items that share a key (live objects may hold
/// them: kube's validation never forbade duplicate `env` names, for one).
pub(super) fn name_items(
    items: &[Value],
    kind: &ListKind,
    path: &[PathElement],
    shape: &dyn Shape,
    allow_duplicates: bool,
) -> Result<Vec<PathElement>, String> {
    let mut elements: Vec<PathElement> = Vec::with_capacity(items.len());
    let mut seen = BTreeSet::new();
    for (index, item) in items.iter().enumerate() {
        let element = item_element(item, kind, path, shape)
            .map_err(|error| format!("{}: element {index}: {error}", path_string(path)))?;
        if !seen.insert(element.clone()) && !allow_duplicates {
            return Err(format!("{}: duplicate entries for key {element}", path_string(path)));
        }
        elements.push(element);
    }
    Ok(elements)
}

fn item_element(item: &Value, kind: &ListKind, path: &[PathElement], shape: &dyn Shape) -> Result<PathElement, String> {
    match kind {
        ListKind::Atomic => Err("atomic lists have no item paths".into()),
        ListKind::Set => match item {
            Value::Object(_) => Err("associative list without keys has an element that's a map type".into()),
            Value::Array(_) => Err("associative list without keys has an element that's a list type".into()),
            scalar => Ok(PathElement::Value(scalar.clone())),
        },
        ListKind::Map { keys } => {
            let object = match item {
                Value::Object(object) => object,
                Value::Null => return Err("associative list with keys may not have a null element".into()),
                _ => return Err("associative list with keys may not have non-map elements".into()),
            };
            let mut fields = Vec::with_capacity(keys.len());
            for key in keys {
                let value = match object.get(key) {
                    Some(value) => value.clone(),
                    None => shape.key_default(path, key).ok_or_else(|| {
                        format!(
                            "associative list with keys has an element that omits key field {} (and doesn't have default value)",
                            crate::names::go_quote(key)
                        )
                    })?,
                };
                fields.push((key.clone(), value));
            }
            Ok(PathElement::key(fields))
        }
    }
}

/// The item elements of a list value that is not atomic, or `None` when the list merges
/// atomically — by the schema, or because its items cannot be named (a live object may
/// hold duplicates or items without keys; treating that list as one leaf keeps tracking
/// going instead of failing the write, while the object stays as it is).
pub(super) fn granular_elements(
    items: &[Value],
    path: &[PathElement],
    shape: &dyn Shape,
) -> Option<(ListKind, Vec<PathElement>)> {
    let kind = shape.list_kind(path);
    if kind == ListKind::Atomic {
        return None;
    }
    let elements = list_elements(items, &kind, path, shape).ok()?;
    Some((kind, elements))
}

/// Every field `object` sets, as kube records for an applier: scalars, atomic lists and
/// atomic objects as leaves; list items as themselves (`.`) plus their fields; map entries
/// (undeclared keys) and empty or null values as themselves; declared fields holding a
/// non-empty object only through their children.
pub fn object_fields(object: &Value, shape: &dyn Shape) -> Result<FieldSet, String> {
    let mut set = FieldSet::new();
    let mut path = Vec::new();
    walk_fields(object, &mut path, shape, &mut set, true)?;
    Ok(set)
}

/// Like [`object_fields`] but never fails: lists whose items cannot be named count as atomic.
pub(super) fn object_fields_lenient(object: &Value, shape: &dyn Shape) -> FieldSet {
    let mut set = FieldSet::new();
    let mut path = Vec::new();
    let _ = walk_fields(object, &mut path, shape, &mut set, false);
    set
}

fn walk_fields(
    value: &Value,
    path: &mut Vec<PathElement>,
    shape: &dyn Shape,
    set: &mut FieldSet,
    strict: bool,
) -> Result<(), String> {
    match value {
        Value::Object(map) if path.is_empty() || !shape.map_is_atomic(path) => {
            for (key, child) in map {
                let declared = shape.is_declared_field(path, key);
                path.push(PathElement::Field(key.clone()));
                walk_fields(child, path, shape, set, strict)?;
                let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                if empty || !declared {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let kind = shape.list_kind(path);
            if kind == ListKind::Atomic {
                set.insert(path);
                return Ok(());
            }
            let elements = match list_elements(items, &kind, path, shape) {
                Ok(elements) => elements,
                Err(error) if strict => return Err(error),
                Err(_) => {
                    set.insert(path);
                    return Ok(());
                }
            };
            for (item, element) in items.iter().zip(elements) {
                path.push(element);
                walk_fields(item, path, shape, set, strict)?;
                set.insert(path);
                path.pop();
            }
        }
        _ => set.insert(path),
    }
    Ok(())
}

/// The fields a create sets, as kube's `fieldsV1` object: what [`compare`] of an empty
/// object with `new` finds added (every node down to leaves, atomic objects and lists, and
/// list items), less every path in or below `excluded` (the endpoint's reset fields) and
/// less the exact paths of `unowned` (fields no manager owns). It equals
/// `compare(&{}, new).excluding(excluded).added.difference(unowned).to_fields_v1()`, key
/// order included, written in one walk from the leaves up: a create's field tracking needs
/// nothing but this object, so no [`FieldSet`] is built only to be turned into one.
pub fn created_fields_v1(new: &Value, shape: &dyn Shape, excluded: &FieldSet, unowned: &FieldSet) -> Value {
    Value::Object(created_below(new, &mut Vec::new(), shape, Some(excluded), Some(unowned), false))
}

/// One node's entry of [`created_fields_v1`]: its element and the entries below it.
type CreatedEntry = (PathElement, Map<String, Value>);

/// The `fieldsV1` entries below the node `value` at `path` (see [`created_fields_v1`]),
/// preceded by `"."` when the node is a member (`member`) with entries below it, as
/// [`FieldSet::to_fields_v1`] writes a set's children. `excluded` and `unowned` are those
/// sets' parts below `path`.
fn created_below(
    value: &Value,
    path: &mut Vec<PathElement>,
    shape: &dyn Shape,
    excluded: Option<&FieldSet>,
    unowned: Option<&FieldSet>,
    member: bool,
) -> Map<String, Value> {
    let mut entries: Vec<CreatedEntry> = Vec::new();
    let add = |path: &mut Vec<PathElement>, child: &Value, entries: &mut Vec<CreatedEntry>| {
        let element = path.last().expect("the caller pushed the child's element");
        if excluded.is_some_and(|excluded| excluded.has_member(element)) {
            path.pop();
            return;
        }
        let member = !unowned.is_some_and(|unowned| unowned.has_member(element));
        let excluded_below = excluded.and_then(|excluded| excluded.child(element));
        let unowned_below = unowned.and_then(|unowned| unowned.child(element));
        let below = created_below(child, path, shape, excluded_below, unowned_below, member);
        let element = path.pop().expect("the caller pushed the child's element");
        if member || !below.is_empty() {
            entries.push((element, below));
        }
    };
    match value {
        Value::Object(map) if !map.is_empty() && (path.is_empty() || !shape.map_is_atomic(path)) => {
            for (key, child) in map {
                path.push(PathElement::Field(key.clone()));
                add(path, child, &mut entries);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let Some((_, elements)) = granular_elements(items, path, shape) else {
                return Map::new();
            };
            for (item, element) in items.iter().zip(elements) {
                path.push(element);
                add(path, item, &mut entries);
            }
        }
        _ => {}
    }
    if entries.is_empty() {
        return Map::new();
    }
    // A set keeps its elements in order. Items sharing a key (live lists may hold them) are
    // one element there, with the entries of the last that has any (whether an element is
    // a member depends on the element alone, so theirs agree).
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same && !later.1.is_empty() {
            kept.1 = std::mem::take(&mut later.1);
        }
        same
    });
    let mut fields = Map::with_capacity(entries.len() + usize::from(member));
    if member {
        fields.insert(".".into(), Value::Object(Map::new()));
    }
    for (element, below) in entries {
        fields.insert(element.to_fields_v1_key(), Value::Object(below));
    }
    fields
}

/// What changed from one object to the next, path by path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Paths only the new object has (objects and list items that appeared count too).
    pub added: FieldSet,
    /// Leaves present in both with different values.
    pub modified: FieldSet,
    /// Paths only the old object has.
    pub removed: FieldSet,
}

impl Comparison {
    /// Drops every path in or below `excluded` (kube's ignored "reset" fields). Most
    /// endpoints reset nothing, and then the comparison is returned as it is.
    pub fn excluding(self, excluded: &FieldSet) -> Comparison {
        if excluded.is_empty() {
            return self;
        }
        Comparison {
            added: self.added.recursive_difference(excluded),
            modified: self.modified.recursive_difference(excluded),
            removed: self.removed.recursive_difference(excluded),
        }
    }

    /// Paths that now hold a value they did not hold before.
    pub fn changed(&self) -> FieldSet {
        self.added.union(&self.modified)
    }

    /// [`Comparison::changed`] and the removed paths, taking the comparison apart instead
    /// of copying it (a create adds every field and modifies none).
    pub fn into_changed_and_removed(self) -> (FieldSet, FieldSet) {
        let changed = if self.modified.is_empty() { self.added } else { self.added.union(&self.modified) };
        (changed, self.removed)
    }
}

/// Compares `old` with `new` like structured-merge-diff: granular objects and lists are
/// walked; atomic ones, scalars and nodes empty on both sides are leaves; a node that
/// appears or disappears is added or removed together with everything below it.
pub fn compare(old: &Value, new: &Value, shape: &dyn Shape) -> Comparison {
    let mut comparison = Comparison::default();
    compare_node(Some(old), Some(new), &mut Vec::new(), shape, &mut comparison);
    comparison
}

fn compare_node(
    old: Option<&Value>,
    new: Option<&Value>,
    path: &mut Vec<PathElement>,
    shape: &dyn Shape,
    out: &mut Comparison,
) {
    let walked = match (old, new) {
        (Some(Value::Object(_)) | None, Some(Value::Object(_)) | None) => compare_objects(old, new, path, shape, out),
        (Some(Value::Array(_)) | None, Some(Value::Array(_)) | None) => compare_lists(old, new, path, shape, out),
        (Some(old), Some(new)) if std::mem::discriminant(old) != std::mem::discriminant(new) => {
            // A value changed kind (`"x"` → `{…}`): what was below is gone, what is below is
            // new, and the node itself was modified rather than added or removed.
            compare_node(Some(old), None, path, shape, out);
            compare_node(None, Some(new), path, shape, out);
            let itself = FieldSet::from_paths([path.as_slice()]);
            out.added = out.added.difference(&itself);
            out.removed = out.removed.difference(&itself);
            out.modified.insert(path);
            return;
        }
        _ => false,
    };
    if walked {
        match (old, new) {
            (None, Some(_)) => out.added.insert(path),
            (Some(_), None) => out.removed.insert(path),
            _ => {}
        }
    } else {
        compare_leaf(old, new, path, out);
    }
}

fn compare_leaf(old: Option<&Value>, new: Option<&Value>, path: &[PathElement], out: &mut Comparison) {
    match (old, new) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(old), Some(new)) if old != new => out.modified.insert(path),
        _ => {}
    }
}

/// Walks two objects key by key; false when they are to be compared as one leaf.
fn compare_objects(
    old: Option<&Value>,
    new: Option<&Value>,
    path: &mut Vec<PathElement>,
    shape: &dyn Shape,
    out: &mut Comparison,
) -> bool {
    let old = old.and_then(Value::as_object);
    let new = new.and_then(Value::as_object);
    let empty = |map: Option<&Map<String, Value>>| map.is_none_or(Map::is_empty);
    if (!path.is_empty() && shape.map_is_atomic(path)) || (empty(old) && empty(new)) {
        return false;
    }
    let keys = new
        .into_iter()
        .flat_map(Map::keys)
        .chain(old.into_iter().flat_map(Map::keys).filter(|key| new.is_none_or(|new| !new.contains_key(*key))));
    for key in keys {
        path.push(PathElement::Field(key.clone()));
        compare_node(old.and_then(|map| map.get(key)), new.and_then(|map| map.get(key)), path, shape, out);
        path.pop();
    }
    true
}

/// Walks two granular lists item by item; false when they are to be compared as one leaf.
fn compare_lists(
    old: Option<&Value>,
    new: Option<&Value>,
    path: &mut Vec<PathElement>,
    shape: &dyn Shape,
    out: &mut Comparison,
) -> bool {
    let no_items: &[Value] = &[];
    let old_items = old.and_then(Value::as_array).map_or(no_items, Vec::as_slice);
    let new_items = new.and_then(Value::as_array).map_or(no_items, Vec::as_slice);
    if old_items.is_empty() && new_items.is_empty() {
        return false;
    }
    let (Some((_, old_elements)), Some((_, new_elements))) =
        (granular_elements(old_items, path, shape), granular_elements(new_items, path, shape))
    else {
        return false;
    };
    let old_by_element: BTreeMap<&PathElement, &Value> = old_elements.iter().zip(old_items).collect();
    let in_new: BTreeSet<&PathElement> = new_elements.iter().collect();
    for (element, item) in new_elements.iter().zip(new_items) {
        path.push(element.clone());
        compare_node(old_by_element.get(element).copied(), Some(item), path, shape, out);
        path.pop();
    }
    for (element, item) in old_elements.iter().zip(old_items) {
        if !in_new.contains(element) {
            path.push(element.clone());
            compare_node(Some(item), None, path, shape, out);
            path.pop();
        }
    }
    true
}
