//! Walking an OpenAPI v3 schema over an object to prune the fields it does not declare.
//!
//! This is what `fieldValidation` needs: kube-apiserver drops unknown fields from a
//! request body and, depending on the directive, ignores them, warns about each
//! (`unknown field "spec.foo"`) or rejects the request. [`prune_unknown_fields`] removes them
//! and returns their paths in kube's wording so the caller can do any of the three.
//!
//! The rules are those of kube's structural pruning of custom resources, applied to
//! built-in kinds through their published schemas:
//! - `$ref` and `allOf` are followed and merged; `properties` declares fields.
//! - `additionalProperties` (a schema or `true`) allows any key; a schema is walked into.
//! - `x-kubernetes-preserve-unknown-fields: true` keeps unknown keys of that object, while
//!   its declared properties are still walked (kube: "switches back to normal pruning if
//!   nested properties or additionalProperties are specified").
//! - An object schema with no `properties` and no `additionalProperties` declares an empty
//!   object: everything in it is pruned. A schema with no `type` that declares nothing
//!   (kube's JSON, int-or-string, the JSONSchemaPropsOr* unions) says nothing about fields,
//!   so nothing below it is pruned.
//! - Arrays walk every element with `items`.
//! - `apiVersion`, `kind` and `metadata` are always allowed at the root and in objects
//!   marked `x-kubernetes-embedded-resource`; `metadata` is walked with ObjectMeta's schema
//!   whatever the schema itself says about it, as kube does for custom resources.
//! - `anyOf`, `oneOf` and `not` only validate values; they never declare fields.

use serde_json::{Map, Value};

use crate::openapi::{composition, lookup_schema, ref_name, OBJECT_META_SCHEMA, PRESERVE_UNKNOWN_FIELDS};

/// How many `$ref`/`allOf` hops resolving one schema node may take. Real schemas need a
/// handful; the limit turns a reference cycle (`A: {$ref: A}`) into "declares nothing"
/// (nothing pruned) instead of a stack overflow.
const MAX_RESOLVE_DEPTH: usize = 32;

/// How deep into an object the walk goes. serde_json refuses to parse deeper than 128
/// levels, so real requests never reach this; objects built in code might, and below the
/// limit nothing is pruned rather than recursing without bound.
const MAX_OBJECT_DEPTH: usize = 512;

/// Removes from `object` every field the schema `root` does not declare, and returns the
/// paths of the removed fields in kube-apiserver's wording, in document order:
/// `spec.foo`, `metadata.bar`, `spec.containers[0].bar` (kube reports them as
/// `unknown field "spec.foo"`).
///
/// `root` is either a reference into `components` (see [`crate::openapi::schema_ref`]) or
/// an inline schema such as a CRD's `openAPIV3Schema`. `$ref`s resolve against
/// `components` first and [`crate::openapi::builtin_components`] second; a `$ref` that
/// resolves nowhere declares nothing, so nothing below it is pruned.
pub fn prune_unknown_fields(object: &mut Value, root: &Value, components: &Map<String, Value>) -> Vec<String> {
    let mut walker = Walker { components, path: String::new(), pruned: Vec::new() };
    if let Value::Object(map) = object {
        let node = walker.resolve(root);
        walker.walk_object(map, &node, true, 0);
    }
    walker.pruned
}

/// What a schema node, with its `$ref`s and `allOf`s merged, says about an object.
#[derive(Debug, Default)]
struct Node<'s> {
    /// Every `properties` map met while resolving, in order; the first declaring a key wins.
    properties: Vec<&'s Map<String, Value>>,
    /// `additionalProperties`: `true`, `false` or a schema.
    additional_properties: Option<&'s Value>,
    /// `items` of an array schema.
    items: Option<&'s Value>,
    /// `type: object` was stated.
    typed_object: bool,
    /// Unknown keys are kept (`x-kubernetes-preserve-unknown-fields: true`).
    preserve_unknown: bool,
    /// `x-kubernetes-embedded-resource: true`: apiVersion, kind and metadata are allowed.
    embedded_resource: bool,
    /// The node could not be fully resolved (dangling or cyclic `$ref`): prune nothing.
    unresolved: bool,
}

impl<'s> Node<'s> {
    fn property(&self, key: &str) -> Option<&'s Value> {
        self.properties.iter().find_map(|properties| crate::meta::get(properties, key))
    }

    /// Whether the node declares which fields an object may have; if not, nothing in the
    /// object is unknown.
    fn declares_fields(&self) -> bool {
        !self.unresolved && (self.typed_object || !self.properties.is_empty() || self.additional_properties.is_some())
    }

    /// Whether a key the node does not declare is kept.
    fn keeps_unknown(&self) -> bool {
        self.preserve_unknown
            || !self.declares_fields()
            || matches!(self.additional_properties, Some(Value::Bool(true)))
    }

    /// The schema values of undeclared keys are walked with.
    fn additional_schema(&self) -> Option<&'s Value> {
        self.additional_properties.filter(|schema| schema.is_object())
    }
}

struct Walker<'s> {
    components: &'s Map<String, Value>,
    /// Path of the value being walked, in kube's notation.
    path: String,
    pruned: Vec<String>,
}

impl<'s> Walker<'s> {
    fn resolve(&self, schema: &'s Value) -> Node<'s> {
        let mut node = Node::default();
        self.merge_into(&mut node, schema, 0);
        node
    }

    /// Merges what `schema` says into `node`, following `$ref` and `allOf`.
    fn merge_into(&self, node: &mut Node<'s>, schema: &'s Value, depth: usize) {
        if depth > MAX_RESOLVE_DEPTH {
            node.unresolved = true;
            return;
        }
        let map = match schema {
            Value::Object(map) => map,
            // JSON Schema's `true` allows anything; `false` allows nothing, not even keys.
            Value::Bool(true) => {
                node.preserve_unknown = true;
                return;
            }
            Value::Bool(false) => {
                node.typed_object = true;
                return;
            }
            _ => return,
        };
        let (reference, all_of) = composition(map);
        if let Some(reference) = reference {
            match ref_name(reference).and_then(|name| lookup_schema(self.components, name)) {
                Some(target) => self.merge_into(node, target, depth + 1),
                None => node.unresolved = true,
            }
        }
        for part in all_of {
            self.merge_into(node, part, depth + 1);
        }
        merge_keywords(node, map);
    }

    fn object_meta(&self) -> Node<'s> {
        match lookup_schema(self.components, OBJECT_META_SCHEMA) {
            Some(schema) => self.resolve(schema),
            None => Node { unresolved: true, ..Node::default() },
        }
    }

    fn walk(&mut self, value: &mut Value, schema: &'s Value, depth: usize) {
        match value {
            Value::Object(map) => {
                let node = self.resolve(schema);
                self.walk_object(map, &node, node.embedded_resource, depth);
            }
            Value::Array(elements) => {
                let node = self.resolve(schema);
                let Some(items) = node.items.filter(|items| items.is_object()) else {
                    return;
                };
                for (index, element) in elements.iter_mut().enumerate() {
                    let saved = self.path.len();
                    self.path.push_str(&format!("[{index}]"));
                    self.walk(element, items, depth + 1);
                    self.path.truncate(saved);
                }
            }
            _ => {}
        }
    }

    /// Walks the fields of one object; `is_resource` allows apiVersion, kind and metadata.
    fn walk_object(&mut self, map: &mut Map<String, Value>, node: &Node<'s>, is_resource: bool, depth: usize) {
        if depth >= MAX_OBJECT_DEPTH {
            return;
        }
        // `retain` keeps the order of the remaining keys, so responses keep the user's order.
        map.retain(|key, value| {
            let saved = self.path.len();
            self.push_key(key);
            let keep = self.walk_field(key, value, node, is_resource, depth);
            if !keep {
                self.pruned.push(self.path.clone());
            }
            self.path.truncate(saved);
            keep
        });
    }

    /// Walks one field and says whether it is kept.
    fn walk_field(&mut self, key: &str, value: &mut Value, node: &Node<'s>, is_resource: bool, depth: usize) -> bool {
        if is_resource {
            match key {
                "apiVersion" | "kind" => return true,
                "metadata" => {
                    if let Value::Object(metadata) = value {
                        let object_meta = self.object_meta();
                        self.walk_object(metadata, &object_meta, false, depth + 1);
                    }
                    return true;
                }
                _ => {}
            }
        }
        if let Some(schema) = node.property(key).or_else(|| node.additional_schema()) {
            self.walk(value, schema, depth + 1);
            return true;
        }
        node.keeps_unknown()
    }

    fn push_key(&mut self, key: &str) {
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(key);
    }
}

/// Merges the keywords of one schema object (not its `$ref` or `allOf`) into `node`.
fn merge_keywords<'s>(node: &mut Node<'s>, map: &'s Map<String, Value>) {
    for (key, value) in map {
        match key.as_str() {
            "properties" => node.properties.extend(value.as_object()),
            "additionalProperties" => _ = node.additional_properties.get_or_insert(value),
            "items" => _ = node.items.get_or_insert(value),
            "type" => node.typed_object |= value.as_str() == Some("object"),
            PRESERVE_UNKNOWN_FIELDS => node.preserve_unknown |= value == &Value::Bool(true),
            "x-kubernetes-embedded-resource" => node.embedded_resource |= value == &Value::Bool(true),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openapi::{builtin_components, schema_ref};
    use serde_json::json;

    /// A root schema with the given spec schema, as a CRD's openAPIV3Schema looks.
    fn with_spec(spec: Value) -> Value {
        json!({"type": "object", "properties": {"spec": spec}})
    }

    #[test]
    fn prunes_what_inline_schemas_do_not_declare() {
        let string = json!({"type": "string"});
        let cases: Vec<(&str, Value, Value, Vec<&str>, Value)> = vec![
            (
                "unknown property",
                with_spec(json!({"type": "object", "properties": {"a": string}})),
                json!({"spec": {"a": "x", "foo": 1}}),
                vec!["spec.foo"],
                json!({"spec": {"a": "x"}}),
            ),
            (
                "unknown top-level field; apiVersion and kind always allowed",
                with_spec(json!({"type": "object"})),
                json!({"apiVersion": "v1", "kind": "K", "spec": {}, "foo": 1}),
                vec!["foo"],
                json!({"apiVersion": "v1", "kind": "K", "spec": {}}),
            ),
            (
                "object without properties is empty",
                with_spec(json!({"type": "object"})),
                json!({"spec": {"x": 1}}),
                vec!["spec.x"],
                json!({"spec": {}}),
            ),
            (
                "additionalProperties schema is walked into",
                with_spec(
                    json!({"type": "object", "additionalProperties": {"type": "object", "properties": {"x": string}}}),
                ),
                json!({"spec": {"one": {"x": "a", "y": "b"}, "two": {"x": "c"}}}),
                vec!["spec.one.y"],
                json!({"spec": {"one": {"x": "a"}, "two": {"x": "c"}}}),
            ),
            (
                "additionalProperties true keeps everything",
                with_spec(json!({"type": "object", "additionalProperties": true})),
                json!({"spec": {"anything": {"deep": [1]}}}),
                vec![],
                json!({"spec": {"anything": {"deep": [1]}}}),
            ),
            (
                "preserve-unknown-fields keeps everything below",
                with_spec(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})),
                json!({"spec": {"free": {"form": true}}}),
                vec![],
                json!({"spec": {"free": {"form": true}}}),
            ),
            (
                "preserve-unknown-fields still walks declared properties",
                with_spec(json!({
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"strict": {"type": "object", "properties": {"a": string}}}
                })),
                json!({"spec": {"free": 1, "strict": {"a": "x", "b": "y"}}}),
                vec!["spec.strict.b"],
                json!({"spec": {"free": 1, "strict": {"a": "x"}}}),
            ),
            (
                "array items, kube's index notation",
                with_spec(json!({"type": "object", "properties": {"containers": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"name": string}}
                }}})),
                json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "bar": 1}]}}),
                vec!["spec.containers[1].bar"],
                json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
            ),
            (
                "nested arrays",
                with_spec(json!({"type": "object", "properties": {"matrix": {
                    "type": "array",
                    "items": {"type": "array", "items": {"type": "object", "properties": {"v": string}}}
                }}})),
                json!({"spec": {"matrix": [[{"v": "a"}, {"v": "b", "w": 1}]]}}),
                vec!["spec.matrix[0][1].w"],
                json!({"spec": {"matrix": [[{"v": "a"}, {"v": "b"}]]}}),
            ),
            (
                "allOf merges properties",
                with_spec(json!({"allOf": [
                    {"type": "object", "properties": {"a": string}},
                    {"properties": {"b": string}}
                ]})),
                json!({"spec": {"a": "1", "b": "2", "c": "3"}}),
                vec!["spec.c"],
                json!({"spec": {"a": "1", "b": "2"}}),
            ),
            (
                "typeless schema declares nothing",
                with_spec(json!({"description": "anything"})),
                json!({"spec": {"x": {"y": 1}}}),
                vec![],
                json!({"spec": {"x": {"y": 1}}}),
            ),
            (
                "int-or-string and scalars are left alone",
                with_spec(json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true}}})),
                json!({"spec": {"port": "http"}}),
                vec![],
                json!({"spec": {"port": "http"}}),
            ),
            (
                "embedded resources allow type and object meta",
                with_spec(json!({"type": "object", "properties": {"template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": true,
                    "properties": {"data": string}
                }}})),
                json!({"spec": {"template": {
                    "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "bogus": 1}, "data": "d", "extra": 1
                }}}),
                vec!["spec.template.metadata.bogus", "spec.template.extra"],
                json!({"spec": {"template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": "d"}}}),
            ),
            (
                "metadata walked with ObjectMeta even if the schema says otherwise",
                json!({"type": "object", "properties": {"metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}),
                json!({"metadata": {"name": "a", "labels": {"k": "v"}, "bar": 1}}),
                vec!["metadata.bar"],
                json!({"metadata": {"name": "a", "labels": {"k": "v"}}}),
            ),
            (
                "root preserving unknown fields still prunes metadata",
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
                json!({"metadata": {"name": "a", "bar": 1}, "spec": {"x": 1}}),
                vec!["metadata.bar"],
                json!({"metadata": {"name": "a"}, "spec": {"x": 1}}),
            ),
            (
                "dotted keys are joined as kube joins them",
                with_spec(json!({"type": "object", "properties": {}})),
                json!({"spec": {"example.com/key": 1}}),
                vec!["spec.example.com/key"],
                json!({"spec": {}}),
            ),
        ];
        for (name, schema, mut object, expected_paths, expected_object) in cases {
            let pruned = prune_unknown_fields(&mut object, &schema, &Map::new());
            assert_eq!(pruned, expected_paths, "{name}");
            assert_eq!(object, expected_object, "{name}");
        }
    }

    #[test]
    fn follows_refs_into_components_and_survives_cycles() {
        let mut components = Map::new();
        components.insert(
            "Spec".into(),
            json!({"type": "object", "properties": {"child": schema_ref("Spec"), "n": {"type": "integer"}}}),
        );
        components.insert("Loop".into(), schema_ref("Loop"));
        let root = json!({"type": "object", "properties": {
            "spec": {"allOf": [schema_ref("Spec")], "description": "recursive"},
            "loop": schema_ref("Loop"),
            "dangling": schema_ref("Nowhere")
        }});
        let mut object = json!({
            "spec": {"n": 1, "child": {"n": 2, "x": 3, "child": {"y": 4}}},
            "loop": {"kept": 1},
            "dangling": {"kept": 2}
        });
        let pruned = prune_unknown_fields(&mut object, &root, &components);
        assert_eq!(pruned, ["spec.child.x", "spec.child.child.y"]);
        assert_eq!(object["loop"], json!({"kept": 1}));
        assert_eq!(object["dangling"], json!({"kept": 2}));
    }

    #[test]
    fn prunes_builtin_kinds_by_their_published_schemas() {
        let cases: Vec<(&str, Value, Vec<&str>)> = vec![
            (
                "io.k8s.api.core.v1.ConfigMap",
                json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "c", "namespace": "default", "bar": true, "labels": {"a": "b"}},
                    "data": {"key": "value"},
                    "foo": 1
                }),
                vec!["metadata.bar", "foo"],
            ),
            (
                "io.k8s.api.core.v1.ConfigMap",
                json!({
                    "metadata": {"name": "c", "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:data": {"f:key": {}}}, "oops": 1}]},
                    "binaryData": {"b": "AAAA"}
                }),
                vec!["metadata.managedFields[0].oops"],
            ),
            (
                "io.k8s.api.rbac.v1.Role",
                json!({"metadata": {"name": "r"}, "rules": [{"verbs": ["get"], "resources": ["pods"], "apiGroups": [""], "verb": "typo"}]}),
                vec!["rules[0].verb"],
            ),
            (
                "io.k8s.api.coordination.v1.Lease",
                json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "me", "renewTime": "2024-01-01T00:00:00.000000Z", "holder": "x"}}),
                vec!["spec.holder"],
            ),
            (
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
                json!({"metadata": {"name": "widgets.example.com"}, "spec": {
                    "group": "example.com",
                    "names": {"plural": "widgets", "kind": "Widget"},
                    "scope": "Namespaced",
                    "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer", "default": 3}}}},
                        "additionalProperties": false,
                        "x-kubernetes-bogus": true
                    }}}]
                }}),
                vec!["spec.versions[0].schema.openAPIV3Schema.x-kubernetes-bogus"],
            ),
            (
                "io.kcp.core.v1alpha1.LogicalCluster",
                json!({"metadata": {"name": "cluster"}, "spec": {"owner": {"name": "w", "uid": "u", "oops": 1}}, "status": {"URL": "https://x", "url": "typo"}}),
                vec!["spec.owner.oops", "status.url"],
            ),
        ];
        for (schema_name, mut object, expected) in cases {
            let before = object.clone();
            let pruned = prune_unknown_fields(&mut object, &schema_ref(schema_name), builtin_components());
            assert_eq!(pruned, expected, "{schema_name}: {before}");
            let again = prune_unknown_fields(&mut object, &schema_ref(schema_name), builtin_components());
            assert!(again.is_empty(), "pruning is idempotent: {schema_name} {again:?}");
        }
    }

    #[test]
    fn non_objects_are_left_alone() {
        for mut value in [json!(null), json!("text"), json!([{"a": 1}])] {
            let before = value.clone();
            assert!(prune_unknown_fields(&mut value, &json!({"type": "object"}), &Map::new()).is_empty());
            assert_eq!(value, before);
        }
    }
}
