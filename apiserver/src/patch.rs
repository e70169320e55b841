//! Patch application — pure functions over JSON.
//!
//! JSON patch (RFC 6902) and JSON merge patch (RFC 7386) come from the `json-patch`
//! crate. Strategic merge patch is kube's merge patch with directives and merge keys; this
//! module implements the directives kubectl emits (`$patch`, `$retainKeys`,
//! `$setElementOrder/…`, `$deleteFromPrimitiveList/…`) and merges each list as the
//! resource's schema says (`x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`),
//! as kube reads its types' patch tags.

use protocol::managed::{PatchList, PathElement, SchemaShape};
use serde_json::{Map, Value};

/// Which patch format a request body is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchType {
    /// The patch type of a media type.
    pub fn from_media_type(essence: &str) -> Option<Self> {
        match essence {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml" => Some(PatchType::Apply),
            _ => None,
        }
    }

    /// Media types a PATCH accepts.
    pub const MEDIA_TYPES: &'static [&'static str] = &[
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ];
}

/// Operations one JSON patch may hold (kube's limit).
pub const JSON_PATCH_OPERATIONS_MAX: usize = 10_000;
/// Bytes all `copy` operations of one JSON patch may duplicate together (kube bounds this
/// too): without it a few dozen self-copies of a growing array exhaust memory.
pub const JSON_PATCH_COPIED_BYTES_MAX: usize = 1_572_864;

/// Applies a JSON patch document, bounded by [`JSON_PATCH_OPERATIONS_MAX`] and
/// [`JSON_PATCH_COPIED_BYTES_MAX`]. On error the target may be partly patched; callers
/// patch a copy.
pub fn apply_json_patch(target: &mut Value, patch: &Value) -> Result<(), String> {
    let patch: json_patch::Patch =
        serde_json::from_value(patch.clone()).map_err(|e| format!("invalid JSON patch: {e}"))?;
    if patch.0.len() > JSON_PATCH_OPERATIONS_MAX {
        return Err(format!(
            "the JSON patch has {} operations; at most {JSON_PATCH_OPERATIONS_MAX} are allowed",
            patch.0.len()
        ));
    }
    let mut copied = 0usize;
    for operation in &patch.0 {
        if let json_patch::PatchOperation::Copy(copy) = operation {
            let source = target.pointer(copy.from.as_str());
            copied += source.map_or(0, |v| serde_json::to_vec(v).map_or(0, |b| b.len()));
            if copied > JSON_PATCH_COPIED_BYTES_MAX {
                return Err(format!(
                    "the JSON patch copies more than {JSON_PATCH_COPIED_BYTES_MAX} bytes; split the change"
                ));
            }
        }
        json_patch::patch(target, std::slice::from_ref(operation)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Applies a JSON merge patch.
pub fn apply_merge_patch(target: &mut Value, patch: &Value) -> Result<(), String> {
    if !patch.is_object() {
        return Err("a merge patch must be a JSON object".into());
    }
    json_patch::merge(target, patch);
    Ok(())
}

/// How a strategic merge patch treats the list at a path (fields, with list items as
/// [`PathElement::Index`]): from the resource's schema.
pub type ListStrategy<'a> = &'a dyn Fn(&[PathElement]) -> PatchList;

/// The list strategies of a resource's schema, `root` (a `$ref` into the built-in
/// components). A node the schema does not describe is replaced, as kube replaces every
/// list its types do not tag.
pub fn schema_lists(root: &Value) -> impl Fn(&[PathElement]) -> PatchList + '_ {
    let shape = SchemaShape::new(root, protocol::openapi::builtin_components());
    move |path: &[PathElement]| shape.patch_list(path).unwrap_or(PatchList::Replace)
}

/// Applies a strategic merge patch to an object; each list merges or is replaced as
/// `lists` says its schema wants.
pub fn apply_strategic_merge_patch(target: &mut Value, patch: &Value, lists: ListStrategy<'_>) -> Result<(), String> {
    let Value::Object(patch) = patch else {
        return Err("a strategic merge patch must be a JSON object".into());
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let mut merger = Merger { lists, path: Vec::new() };
    merger.merge_map(target.as_object_mut().expect("object"), patch)
}

struct Merger<'a> {
    lists: ListStrategy<'a>,
    path: Vec<PathElement>,
}

impl Merger<'_> {
    fn merge_map(&mut self, target: &mut Map<String, Value>, patch: &Map<String, Value>) -> Result<(), String> {
        match patch.get("$patch").and_then(Value::as_str) {
            Some("replace") => {
                *target =
                    patch.iter().filter(|(k, _)| !k.starts_with('$')).map(|(k, v)| (k.clone(), v.clone())).collect();
                return Ok(());
            }
            Some("delete") => {
                target.clear();
                return Ok(());
            }
            Some(other) if other != "merge" => return Err(format!("unknown patch directive $patch: {other}")),
            _ => {}
        }
        if let Some(Value::Array(keep)) = patch.get("$retainKeys") {
            let keep: Vec<&str> = keep.iter().filter_map(Value::as_str).collect();
            target.retain(|k, _| keep.contains(&k.as_str()) || patch.contains_key(k));
        }
        for (key, value) in patch {
            if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
                let remove: Vec<&Value> = value.as_array().map(|a| a.iter().collect()).unwrap_or_default();
                if let Some(Value::Array(list)) = target.get_mut(field) {
                    list.retain(|item| !remove.contains(&item));
                }
                continue;
            }
            if key.starts_with('$') {
                continue;
            }
            self.path.push(PathElement::field(key.as_str()));
            let merged = self.merge_field(target, key, value);
            self.path.pop();
            merged?;
        }
        Ok(())
    }

    fn merge_field(&mut self, target: &mut Map<String, Value>, key: &str, value: &Value) -> Result<(), String> {
        match value {
            Value::Null => {
                target.remove(key);
            }
            Value::Object(patch_map) => {
                let entry = target.entry(key.to_string()).or_insert_with(|| Value::Object(Map::new()));
                if !entry.is_object() {
                    *entry = Value::Object(Map::new());
                }
                self.merge_map(entry.as_object_mut().expect("object"), patch_map)?;
            }
            Value::Array(items) => {
                let replace_all =
                    items.iter().any(|item| item.get("$patch").and_then(Value::as_str) == Some("replace"));
                match ((self.lists)(&self.path), target.get_mut(key)) {
                    (PatchList::Merge { .. }, _) if replace_all => {
                        target.insert(key.to_string(), Value::Array(strip_directives(items)));
                    }
                    (PatchList::Merge { key: Some(merge_key) }, Some(Value::Array(existing)))
                        if items.iter().all(Value::is_object) =>
                    {
                        self.merge_list(existing, items, &merge_key)?;
                    }
                    (PatchList::Merge { key: None }, Some(Value::Array(existing)))
                        if !items.iter().any(Value::is_object) =>
                    {
                        for item in items {
                            if !existing.contains(item) {
                                existing.push(item.clone());
                            }
                        }
                    }
                    _ => {
                        target.insert(key.to_string(), Value::Array(strip_directives(items)));
                    }
                }
            }
            scalar => {
                target.insert(key.to_string(), scalar.clone());
            }
        }
        Ok(())
    }

    fn merge_list(&mut self, existing: &mut Vec<Value>, patch: &[Value], merge_key: &str) -> Result<(), String> {
        self.path.push(PathElement::Index(0));
        let merged = (|| {
            for item in patch {
                let key_value = item.get(merge_key).cloned();
                let position =
                    key_value.as_ref().and_then(|kv| existing.iter().position(|e| e.get(merge_key) == Some(kv)));
                let deleting = item.get("$patch").and_then(Value::as_str) == Some("delete");
                match (position, deleting) {
                    (Some(i), true) => {
                        existing.remove(i);
                    }
                    (None, true) => {}
                    (Some(i), false) => self.merge_map(
                        existing[i].as_object_mut().ok_or("list item is not an object")?,
                        item.as_object().expect("checked"),
                    )?,
                    (None, false) => {
                        let mut fresh = Map::new();
                        self.merge_map(&mut fresh, item.as_object().expect("checked"))?;
                        existing.push(Value::Object(fresh));
                    }
                }
            }
            Ok(())
        })();
        self.path.pop();
        merged
    }
}

fn strip_directives(items: &[Value]) -> Vec<Value> {
    items.iter().filter(|item| item.get("$patch").is_none()).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config_map_lists() -> impl Fn(&[PathElement]) -> PatchList {
        let root: &'static Value = Box::leak(Box::new(protocol::openapi::schema_ref("io.k8s.api.core.v1.ConfigMap")));
        schema_lists(root)
    }

    #[test]
    fn strategic_merge_patch_cases() {
        let cases = [
            // plain merge; null deletes
            (
                json!({"a": 1, "b": {"c": 2, "d": 3}}),
                json!({"b": {"c": null, "e": 4}}),
                json!({"a": 1, "b": {"d": 3, "e": 4}}),
            ),
            // kubectl's $setElementOrder directives are dropped
            (
                json!({"metadata": {"labels": {"x": "1"}}}),
                json!({"metadata": {"labels": {"y": "2"}}, "$setElementOrder/data": []}),
                json!({"metadata": {"labels": {"x": "1", "y": "2"}}}),
            ),
            // $patch: replace on a map
            (
                json!({"data": {"a": "1", "b": "2"}}),
                json!({"data": {"$patch": "replace", "c": "3"}}),
                json!({"data": {"c": "3"}}),
            ),
            // lists the schema does not tag are replaced
            (json!({"finalizers": ["a", "b"]}), json!({"finalizers": ["c"]}), json!({"finalizers": ["c"]})),
            // metadata.finalizers is a merged set: a controller adding its finalizer keeps the others
            (
                json!({"metadata": {"finalizers": ["a", "b"]}}),
                json!({"metadata": {"finalizers": ["c", "a"]}}),
                json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            ),
            // $deleteFromPrimitiveList
            (
                json!({"metadata": {"finalizers": ["a", "b"]}}),
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
                json!({"metadata": {"finalizers": ["b"]}}),
            ),
            // lists with a merge key merge by it, and $patch: delete removes an item
            (
                json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "2", "name": "B"}, {"uid": "1", "$patch": "delete"}, {"uid": "3", "name": "c"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "2", "name": "B"}, {"uid": "3", "name": "c"}]}}),
            ),
            // a $patch: replace item replaces a merged list whole
            (
                json!({"metadata": {"ownerReferences": [{"uid": "1"}]}}),
                json!({"metadata": {"ownerReferences": [{"$patch": "replace"}, {"uid": "9"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "9"}]}}),
            ),
        ];
        let lists = config_map_lists();
        for (mut target, patch, expected) in cases {
            apply_strategic_merge_patch(&mut target, &patch, &lists).unwrap();
            assert_eq!(target, expected, "patch {patch}");
        }
    }

    #[test]
    fn deployment_lists_follow_their_schema() {
        let root = protocol::openapi::schema_ref("io.k8s.api.apps.v1.Deployment");
        let lists = schema_lists(&root);
        let mut deployment = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "web", "image": "nginx:1", "args": ["a", "b"], "env": [{"name": "A", "value": "1"}]},
            {"name": "side", "image": "busybox"}]}}}});
        let patch = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "web", "image": "nginx:2", "args": ["c"], "env": [{"name": "B", "value": "2"}]}]}}}});
        apply_strategic_merge_patch(&mut deployment, &patch, &lists).unwrap();
        let containers = &deployment["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers.as_array().unwrap().len(), 2, "containers merge by name");
        assert_eq!(containers[0]["image"], "nginx:2");
        assert_eq!(containers[0]["args"], json!(["c"]), "args are replaced, as kube does");
        assert_eq!(containers[0]["env"], json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]));
    }

    #[test]
    fn json_and_merge_patches() {
        let mut doc = json!({"a": {"b": 1}});
        apply_json_patch(&mut doc, &json!([{"op": "add", "path": "/a/c", "value": 2}])).unwrap();
        assert_eq!(doc, json!({"a": {"b": 1, "c": 2}}));
        assert!(apply_json_patch(&mut doc, &json!([{"op": "test", "path": "/a/b", "value": 9}])).is_err());
        assert!(apply_json_patch(&mut doc, &json!({"not": "a list"})).is_err());
        // Self-copies that double an array are stopped by the copy budget.
        let mut grow = vec![json!({"op": "add", "path": "/x", "value": ["0123456789".repeat(100)]})];
        grow.extend((0..40).map(|_| json!({"op": "copy", "from": "/x", "path": "/x/-"})));
        let error = apply_json_patch(&mut json!({}), &Value::Array(grow)).unwrap_err();
        assert!(error.contains("copies more than"), "{error}");
        apply_merge_patch(&mut doc, &json!({"a": {"b": null}})).unwrap();
        assert_eq!(doc, json!({"a": {"c": 2}}));
        assert!(apply_merge_patch(&mut doc, &json!([1])).is_err());
    }
}
