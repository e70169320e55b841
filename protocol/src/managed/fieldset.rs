//! [`FieldSet`], a set of field paths, and its `fieldsV1` wire form.
//!
//! The set is a tree like structured-merge-diff's: at each level, `members` are the
//! elements whose path is in the set and `children` the elements with paths below them.
//! An element can be both: `f:labels` with `{".":{},"f:app":{}}` means the labels map
//! itself and `labels.app` are owned.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::path::PathElement;
use super::schema::Shape;

/// How deep a `fieldsV1` object may nest. Objects are at most ~128 levels deep (serde_json's
/// parse limit) and each level is one element, so real entries stay far below; the limit
/// turns a hostile value built in code into an error instead of a stack overflow.
const MAX_FIELDS_V1_DEPTH: usize = 256;

/// A set of field paths (each a non-empty list of [`PathElement`]s).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    /// Never holds an empty set: every operation drops children that become empty.
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        FieldSet::default()
    }

    /// A set holding the given paths.
    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a [PathElement]>) -> Self {
        let mut set = FieldSet::new();
        for path in paths {
            set.insert(path);
        }
        set
    }

    /// Adds a path; the empty path (the whole object) is never a member and is ignored.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                if !self.members.contains(last) {
                    self.members.insert(last.clone());
                }
            }
            // Elements are cloned only where the set grows: a comparison inserts every
            // path of an object, most of them under parents already present.
            [first, rest @ ..] => match self.children.get_mut(first) {
                Some(child) => child.insert(rest),
                None => {
                    let mut child = FieldSet::new();
                    child.insert(rest);
                    self.children.insert(first.clone(), child);
                }
            },
        }
    }

    /// Whether the path is in the set.
    pub fn contains(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|child| child.contains(rest)),
        }
    }

    /// Whether the set has no paths.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// How many paths the set holds.
    pub fn len(&self) -> usize {
        self.members.len() + self.children.values().map(FieldSet::len).sum::<usize>()
    }

    /// Whether `element` itself (one level down) is in the set.
    pub fn has_member(&self, element: &PathElement) -> bool {
        self.members.contains(element)
    }

    /// The paths below `element`, relative to it.
    pub fn child(&self, element: &PathElement) -> Option<&FieldSet> {
        self.children.get(element)
    }

    /// The elements one level down that have paths below them.
    pub fn child_elements(&self) -> impl Iterator<Item = &PathElement> {
        self.children.keys()
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (element, child) in &other.children {
            let merged = match out.children.get(element) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(element.clone(), merged);
        }
        out
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(element, child)| {
                let both = child.intersection(other.children.get(element)?);
                (!both.is_empty()).then(|| (element.clone(), both))
            })
            .collect();
        FieldSet { members, children }
    }

    /// Paths in `self` but not in `other`. Only exact paths are removed: removing
    /// `.data` leaves `.data.a`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(element, child)| {
                let rest = match other.children.get(element) {
                    Some(theirs) => child.difference(theirs),
                    None => child.clone(),
                };
                (!rest.is_empty()).then(|| (element.clone(), rest))
            })
            .collect();
        FieldSet { members, children }
    }

    /// [`FieldSet::difference`] in place: removes the exact paths of `other` without copying
    /// what stays (a write takes every changed path out of each other manager's set, and the
    /// server's own fields out of its own).
    pub fn remove_all(&mut self, other: &FieldSet) {
        if other.is_empty() || self.is_empty() {
            return;
        }
        if !other.members.is_empty() {
            self.members.retain(|element| !other.members.contains(element));
        }
        for (element, theirs) in &other.children {
            if let Some(mine) = self.children.get_mut(element) {
                mine.remove_all(theirs);
                if mine.is_empty() {
                    self.children.remove(element);
                }
            }
        }
    }

    /// [`FieldSet::difference`], taking `self`: nothing is copied when `other` is empty.
    pub fn without(self, other: &FieldSet) -> FieldSet {
        if other.is_empty() {
            self
        } else {
            self.difference(other)
        }
    }

    /// Paths in `self` that are neither in `other` nor below a path of `other`:
    /// removing `.status` also removes `.status.phase`.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter(|(element, _)| !other.members.contains(element))
            .filter_map(|(element, child)| {
                let rest = match other.children.get(element) {
                    Some(theirs) => child.recursive_difference(theirs),
                    None => child.clone(),
                };
                (!rest.is_empty()).then(|| (element.clone(), rest))
            })
            .collect();
        FieldSet { members, children }
    }

    /// Only the paths with nothing below them (`.data` is dropped when `.data.a` is in).
    pub fn leaves(&self) -> FieldSet {
        let members = self.members.iter().filter(|element| !self.children.contains_key(element)).cloned().collect();
        let children = self
            .children
            .iter()
            .map(|(element, child)| (element.clone(), child.leaves()))
            .filter(|(_, child)| !child.is_empty())
            .collect();
        FieldSet { members, children }
    }

    /// Every path, in structured-merge-diff's iteration order: at each level the members,
    /// then the paths below each child in element order. Conflict lists use this order.
    pub fn paths(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::with_capacity(self.len());
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        for member in &self.members {
            prefix.push(member.clone());
            out.push(prefix.clone());
            prefix.pop();
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The set with every declared field that has paths below it also a member (kube's
    /// `EnsureNamedFieldsAreMembers`): owning `.data.a` keeps `.data` itself when pruning.
    /// Map entries and list items are not added: owning a field of a list item does not
    /// keep an item its applier dropped.
    pub(super) fn with_declared_parents(&self, shape: &dyn Shape) -> FieldSet {
        let mut out = self.clone();
        out.add_declared_parents(&mut Vec::new(), shape);
        out
    }

    fn add_declared_parents(&mut self, path: &mut Vec<PathElement>, shape: &dyn Shape) {
        for (element, child) in &mut self.children {
            if let PathElement::Field(name) = element {
                if shape.is_declared_field(path, name) {
                    self.members.insert(element.clone());
                }
            }
            path.push(element.clone());
            child.add_declared_parents(path, shape);
            path.pop();
        }
    }

    /// The `fieldsV1` object kube stores in `managedFields[].fieldsV1`, key for key in
    /// kube's order: `.` first when a node is both owned and has owned children, then the
    /// elements in [`PathElement`] order.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.fields_v1_object(false))
    }

    fn fields_v1_object(&self, include_self: bool) -> Map<String, Value> {
        let mut object = Map::with_capacity(usize::from(include_self) + self.members.len() + self.children.len());
        if include_self && !self.is_empty() {
            object.insert(".".into(), Value::Object(Map::new()));
        }
        let mut members = self.members.iter().peekable();
        let mut children = self.children.iter().peekable();
        loop {
            // Merge the two sorted sequences; an element in both is written once, with ".".
            let take_member = match (members.peek(), children.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(member), Some((child, _))) => *member <= *child,
            };
            if take_member {
                let member = members.next().expect("peeked");
                if children.peek().is_some_and(|(child, _)| *child == member) {
                    let (_, set) = children.next().expect("peeked");
                    object.insert(member.to_fields_v1_key(), Value::Object(set.fields_v1_object(true)));
                } else {
                    object.insert(member.to_fields_v1_key(), Value::Object(Map::new()));
                }
            } else {
                let (element, set) = children.next().expect("peeked");
                object.insert(element.to_fields_v1_key(), Value::Object(set.fields_v1_object(false)));
            }
        }
        object
    }

    /// Reads a `fieldsV1` object. Keys of unknown element types are dropped (a newer kube
    /// may know them); malformed keys and non-object values are errors.
    pub fn from_fields_v1(fields: &Value) -> Result<FieldSet, String> {
        let Value::Object(object) = fields else {
            return Err(format!("fieldsV1 must be a JSON object, got {fields}"));
        };
        Ok(read_fields_v1(object, 0)?.0)
    }
}

/// Reads one level; returns the set below it and whether the node itself is a member
/// (`.` present, or nothing below it at all).
fn read_fields_v1(object: &Map<String, Value>, depth: usize) -> Result<(FieldSet, bool), String> {
    if depth > MAX_FIELDS_V1_DEPTH {
        return Err(format!("fieldsV1 nests deeper than {MAX_FIELDS_V1_DEPTH} levels"));
    }
    let mut set = FieldSet::new();
    let mut is_member = false;
    for (key, value) in object {
        if key == "." {
            is_member = true;
            continue;
        }
        let Some(element) = PathElement::from_fields_v1_key(key)? else {
            continue;
        };
        let Value::Object(below) = value else {
            return Err(format!("fieldsV1 value at {key:?} must be a JSON object"));
        };
        let (child, child_is_member) = read_fields_v1(below, depth + 1)?;
        if child_is_member {
            set.members.insert(element.clone());
        }
        if !child.is_empty() {
            set.children.insert(element, child);
        }
    }
    // `{}` (or only unknown keys) means the node is owned as a leaf.
    let is_member = is_member || set.is_empty();
    Ok((set, is_member))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(fields: &[&str]) -> Vec<PathElement> {
        fields.iter().map(|name| PathElement::field(*name)).collect()
    }

    fn set(paths: &[&[&str]]) -> FieldSet {
        let paths: Vec<Vec<PathElement>> = paths.iter().map(|p| path(p)).collect();
        FieldSet::from_paths(paths.iter().map(Vec::as_slice))
    }

    #[test]
    fn removing_in_place_is_the_difference() {
        let base = set(&[&["a"], &["a", "x"], &["a", "y"], &["b"], &["c", "d", "e"], &["c", "f"]]);
        let others = [
            set(&[]),
            set(&[&["a"]]),
            set(&[&["a", "x"], &["a", "y"]]),
            set(&[&["c", "d", "e"]]),
            set(&[&["c", "d"], &["b"], &["z"]]),
            base.clone(),
        ];
        for other in others {
            let mut removed = base.clone();
            removed.remove_all(&other);
            assert_eq!(removed, base.difference(&other), "{other:?}");
            // No child is left holding an empty set (equality and `is_empty` rely on it).
            fn no_empty_children(set: &FieldSet) -> bool {
                set.children.values().all(|child| !child.is_empty() && no_empty_children(child))
            }
            assert!(no_empty_children(&removed), "{other:?}");
        }
    }

    #[test]
    fn fields_v1_round_trips_kube_bytes() {
        // The fieldsV1 kube-apiserver writes for the `kubectl-run` manager of `kubectl run nginx --image=nginx`.
        let written = r#"{"f:metadata":{"f:labels":{".":{},"f:run":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}"#;
        let value: Value = serde_json::from_str(written).unwrap();
        let decoded = FieldSet::from_fields_v1(&value).unwrap();
        assert_eq!(serde_json::to_string(&decoded.to_fields_v1()).unwrap(), written);
        let container = [
            PathElement::field("spec"),
            PathElement::field("containers"),
            PathElement::key([("name".into(), json!("nginx"))]),
        ];
        assert!(decoded.contains(&container));
        assert!(decoded.contains(&[container.as_slice(), &[PathElement::field("image")]].concat()));
        assert!(decoded.contains(&path(&["metadata", "labels"])));
        assert!(!decoded.contains(&path(&["metadata"])));
        assert_eq!(decoded.len(), 15);
    }

    #[test]
    fn fields_v1_decoding_tolerates_order_and_unknown_keys_but_not_garbage() {
        let reordered = json!({"f:b": {}, "f:a": {"f:y": {}, ".": {}, "f:x": {}}, "x:future": {"f:z": {}}});
        let decoded = FieldSet::from_fields_v1(&reordered).unwrap();
        assert_eq!(decoded, set(&[&["a"], &["a", "x"], &["a", "y"], &["b"]]));
        assert_eq!(decoded.to_fields_v1().to_string(), r#"{"f:a":{".":{},"f:x":{},"f:y":{}},"f:b":{}}"#);
        for bad in [json!([]), json!({"f:a": 1}), json!({"k:[1]": {}}), json!({"q": {}})] {
            assert!(FieldSet::from_fields_v1(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn set_operations() {
        let a = set(&[&["data"], &["data", "a"], &["data", "b"], &["status", "phase"]]);
        let b = set(&[&["data", "b"], &["data", "c"], &["status"]]);
        assert_eq!(
            a.union(&b),
            set(&[&["data"], &["data", "a"], &["data", "b"], &["data", "c"], &["status"], &["status", "phase"]])
        );
        assert_eq!(a.intersection(&b), set(&[&["data", "b"]]));
        assert_eq!(a.difference(&b), set(&[&["data"], &["data", "a"], &["status", "phase"]]));
        assert_eq!(a.recursive_difference(&b), set(&[&["data"], &["data", "a"]]));
        assert_eq!(a.leaves(), set(&[&["data", "a"], &["data", "b"], &["status", "phase"]]));
        assert!(a.difference(&a).is_empty());
        assert!(FieldSet::new().is_empty());
        let rendered: Vec<String> = a.paths().iter().map(|p| super::super::path::path_string(p)).collect();
        assert_eq!(rendered, [".data", ".data.a", ".data.b", ".status.phase"]);
    }
}
