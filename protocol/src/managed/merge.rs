//! Changing objects with a [`Shape`]: merging an apply configuration into the live object
//! ([`merge`]) and removing owned paths from it ([`remove_paths`]).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::fields::{granular_elements, list_elements, name_items};
use super::fieldset::FieldSet;
use super::path::PathElement;
use super::schema::{ListKind, Shape};

/// Merges `config` into `live` the way server-side apply does: values `config` sets win;
/// granular objects merge key by key; associative lists merge item by item (by key or by
/// value), keeping live items the configuration does not mention where they were; atomic
/// lists and objects are replaced whole. A `null` in `config` removes the field (kube stores
/// no nulls: typed objects drop them and structural schemas prune them).
///
/// Fails, with structured-merge-diff's wording, when an item of a granular list in `config`
/// cannot be named (missing key field, duplicate key, object in a set).
pub fn merge(live: Option<&Value>, config: &Value, shape: &dyn Shape) -> Result<Value, String> {
    merge_node(live, config, &mut Vec::new(), shape)
}

fn merge_node(
    live: Option<&Value>,
    config: &Value,
    path: &mut Vec<PathElement>,
    shape: &dyn Shape,
) -> Result<Value, String> {
    match config {
        Value::Object(config_map) if path.is_empty() || !shape.map_is_atomic(path) => {
            let live_map = live.and_then(Value::as_object);
            let mut out = live_map.cloned().unwrap_or_default();
            for (key, value) in config_map {
                if value.is_null() {
                    out.remove(key);
                    continue;
                }
                path.push(PathElement::Field(key.clone()));
                let merged = merge_node(live_map.and_then(|map| map.get(key)), value, path, shape)?;
                path.pop();
                out.insert(key.clone(), merged);
            }
            Ok(Value::Object(out))
        }
        Value::Array(config_items) => merge_list(live, config_items, path, shape),
        Value::Object(atomic) => Ok(Value::Object(without_nulls(atomic))),
        scalar => Ok(scalar.clone()),
    }
}

/// An atomic object replaces the live one; its nulls still mean "not set".
fn without_nulls(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter().filter(|(_, value)| !value.is_null()).map(|(key, value)| (key.clone(), value.clone())).collect()
}

fn merge_list(
    live: Option<&Value>,
    config_items: &[Value],
    path: &mut Vec<PathElement>,
    shape: &dyn Shape,
) -> Result<Value, String> {
    let kind = shape.list_kind(path);
    let live_items = live.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if kind == ListKind::Atomic || (live_items.is_empty() && config_items.is_empty()) {
        return Ok(Value::Array(config_items.to_vec()));
    }
    let config_elements = list_elements(config_items, &kind, path, shape)?;
    let Ok(live_elements) = name_items(live_items, &kind, path, shape, true) else {
        // A live list whose items cannot be named is replaced, as if it were atomic.
        let mut out = Vec::with_capacity(config_items.len());
        for (item, element) in config_items.iter().zip(config_elements) {
            path.push(element);
            out.push(merge_node(None, item, path, shape)?);
            path.pop();
        }
        return Ok(Value::Array(out));
    };
    let order = merged_order(&live_elements, &config_elements);
    // A live key held by several items names none of them: the applied item replaces them.
    let mut live_by_element: BTreeMap<&PathElement, Option<&Value>> = BTreeMap::new();
    for (element, item) in live_elements.iter().zip(live_items) {
        live_by_element.entry(element).and_modify(|seen| *seen = None).or_insert(Some(item));
    }
    let mut out = Vec::with_capacity(order.len());
    for source in order {
        match source {
            Source::Live(index) => out.push(live_items[index].clone()),
            Source::Config(index) => {
                let element = &config_elements[index];
                let live_item = live_by_element.get(element).copied().flatten();
                path.push(element.clone());
                out.push(merge_node(live_item, &config_items[index], path, shape)?);
                path.pop();
            }
        }
    }
    Ok(Value::Array(out))
}

/// Where an item of a merged list comes from.
#[derive(Debug, PartialEq, Eq)]
enum Source {
    /// A live item the configuration does not mention, kept as it is.
    Live(usize),
    /// A configured item (merged with its live namesake, if any).
    Config(usize),
}

/// structured-merge-diff's item order: configured items in the configuration's order, live
/// items the configuration does not mention where they were relative to the configured
/// items they follow. Live items that the configuration moves are skipped until the
/// configuration reaches them.
fn merged_order(live: &[PathElement], config: &[PathElement]) -> Vec<Source> {
    let in_config: BTreeSet<&PathElement> = config.iter().collect();
    let in_live: BTreeSet<&PathElement> = live.iter().collect();
    let mut shared = config.iter().filter(|element| in_live.contains(element)).peekable();
    let mut emitted: BTreeSet<&PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(live.len() + config.len());
    let (mut live_index, mut config_index) = (0, 0);
    while live_index < live.len() || config_index < config.len() {
        if let (Some(live_element), Some(config_element)) = (live.get(live_index), config.get(config_index)) {
            if live_element == config_element {
                emitted.insert(config_element);
                out.push(Source::Config(config_index));
                live_index += 1;
                config_index += 1;
                if shared.peek() == Some(&config_element) {
                    shared.next();
                }
                continue;
            }
            if in_config.contains(live_element) && shared.peek().is_some_and(|next| *next != live_element) {
                live_index += 1;
                continue;
            }
        }
        if let Some(live_element) = live.get(live_index) {
            if !in_config.contains(live_element) {
                out.push(Source::Live(live_index));
                live_index += 1;
                continue;
            }
            if emitted.contains(live_element) {
                live_index += 1;
                continue;
            }
        }
        if let Some(config_element) = config.get(config_index) {
            emitted.insert(config_element);
            out.push(Source::Config(config_index));
            config_index += 1;
            if shared.peek() == Some(&config_element) {
                shared.next();
            }
        }
    }
    out
}

/// Removes every path of `paths` from `value`, with everything below it. Atomic lists and
/// objects are never entered; an object or list emptied by the removal is removed too, as
/// kube's typed objects drop an emptied map.
pub fn remove_paths(value: &mut Value, paths: &FieldSet, shape: &dyn Shape) {
    remove_node(value, paths, &mut Vec::new(), shape);
}

fn remove_node(value: &mut Value, paths: &FieldSet, path: &mut Vec<PathElement>, shape: &dyn Shape) {
    match value {
        Value::Object(map) if path.is_empty() || !shape.map_is_atomic(path) => {
            map.retain(|key, child| {
                let element = PathElement::Field(key.clone());
                if paths.has_member(&element) {
                    return false;
                }
                let Some(below) = paths.child(&element) else {
                    return true;
                };
                let was_empty = is_empty_container(child);
                path.push(element);
                remove_node(child, below, path, shape);
                path.pop();
                was_empty || !is_empty_container(child)
            });
        }
        Value::Array(items) => {
            let Some((_, elements)) = granular_elements(items, path, shape) else {
                return;
            };
            let mut kept = Vec::with_capacity(items.len());
            for (mut item, element) in std::mem::take(items).into_iter().zip(elements) {
                if paths.has_member(&element) {
                    continue;
                }
                if let Some(below) = paths.child(&element) {
                    path.push(element);
                    remove_node(&mut item, below, path, shape);
                    path.pop();
                }
                kept.push(item);
            }
            *items = kept;
        }
        _ => {}
    }
}

fn is_empty_container(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::managed::schema::BuiltinShape;
    use serde_json::json;

    fn names(list: &Value) -> Vec<&str> {
        list.as_array().unwrap().iter().map(|item| item["name"].as_str().unwrap()).collect()
    }

    #[test]
    fn keyed_lists_keep_live_items_in_place_and_follow_the_configuration_order() {
        let cases: [(&[&str], &[&str], &[&str]); 6] = [
            (&["a", "b"], &["b", "c"], &["a", "b", "c"]),
            (&["a"], &["b", "a"], &["b", "a"]),
            (&["a", "b", "c"], &["c", "a"], &["b", "c", "a"]),
            (&["x", "a", "y"], &["a", "z"], &["x", "a", "y", "z"]),
            (&[], &["a", "b"], &["a", "b"]),
            (&["a", "b"], &[], &["a", "b"]),
        ];
        for (live, config, expected) in cases {
            let list = |items: &[&str]| json!({"spec": {"containers": items.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}});
            let merged = merge(Some(&list(live)), &list(config), &BuiltinShape).unwrap();
            assert_eq!(names(&merged["spec"]["containers"]), expected, "{live:?} + {config:?}");
        }
    }

    #[test]
    fn merge_combines_granular_and_replaces_atomic() {
        let live = json!({
            "metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
            "spec": {"args": ["--old"], "containers": [{"name": "app", "image": "v1", "env": [{"name": "A", "value": "1"}]}]}
        });
        let config = json!({
            "metadata": {"labels": {"b": "3", "a": null}, "finalizers": ["y", "x"]},
            "spec": {"args": ["--new"], "containers": [{"name": "app", "env": [{"name": "B", "value": "2"}]}]}
        });
        let merged = merge(Some(&live), &config, &BuiltinShape).unwrap();
        assert_eq!(
            merged,
            json!({
                "metadata": {"labels": {"b": "3"}, "finalizers": ["y", "x"]},
                "spec": {"args": ["--new"], "containers": [{"name": "app", "image": "v1",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]}
            })
        );
        let missing_key = json!({"spec": {"containers": [{"image": "x"}]}});
        assert_eq!(
            merge(Some(&live), &missing_key, &BuiltinShape).unwrap_err(),
            r#".spec.containers: element 0: associative list with keys has an element that omits key field "name" (and doesn't have default value)"#
        );
        let duplicate = json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}});
        assert_eq!(
            merge(None, &duplicate, &BuiltinShape).unwrap_err(),
            r#".spec.containers: duplicate entries for key [name="a"]"#
        );
    }

    #[test]
    fn remove_paths_drops_subtrees_and_emptied_parents() {
        let mut object = json!({
            "data": {"a": "1", "b": "2"},
            "metadata": {"labels": {"only": "x"}, "finalizers": ["f1", "f2"]},
            "spec": {"containers": [{"name": "app", "image": "v1"}, {"name": "side", "image": "v2"}]}
        });
        let paths = FieldSet::from_paths([
            &[PathElement::field("data"), PathElement::field("a")][..],
            &[PathElement::field("metadata"), PathElement::field("labels"), PathElement::field("only")],
            &[PathElement::field("metadata"), PathElement::field("finalizers"), PathElement::Value(json!("f1"))],
            &[
                PathElement::field("spec"),
                PathElement::field("containers"),
                PathElement::key([("name".into(), json!("side"))]),
            ],
        ]);
        remove_paths(&mut object, &paths, &BuiltinShape);
        assert_eq!(
            object,
            json!({"data": {"b": "2"}, "metadata": {"finalizers": ["f2"]}, "spec": {"containers": [{"name": "app", "image": "v1"}]}})
        );
    }
}
