//! What field tracking needs to know about an object's schema, behind the [`Shape`] trait:
//! how each list merges ([`ListKind`]), whether an object is replaced whole (atomic), which
//! object keys are declared fields, and key defaults.
//!
//! [`SchemaShape`] reads it from an OpenAPI v3 schema the way kube's structured-merge-diff
//! type converter does; [`BuiltinShape`] knows kube's well-known lists by field name, for
//! objects (or parts of objects) no schema describes.

use std::cell::RefCell;

use serde_json::{Map, Value};

use super::path::PathElement;
use crate::openapi::{composition, lookup_schema, ref_name, OBJECT_META_SCHEMA};

/// How a list merges and how its items are named in field paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// Replaced whole by whoever writes it; owned as one leaf (`x-kubernetes-list-type: atomic`,
    /// and every list a schema says nothing about).
    Atomic,
    /// A set of scalars, merged by value; items are `v:<value>` (`x-kubernetes-list-type: set`).
    Set,
    /// Objects merged by the values of `keys`; items are `k:{…}` (`x-kubernetes-list-type: map`
    /// with `x-kubernetes-list-map-keys`, or a built-in type's patch merge key).
    Map {
        /// The key fields, in the schema's order (paths sort them by name).
        keys: Vec<String>,
    },
}

/// Schema knowledge about the node at `path` (elements from the object's root; list items
/// appear as their `k:`/`v:` elements).
pub trait Shape {
    /// How the list at `path` merges.
    fn list_kind(&self, path: &[PathElement]) -> ListKind;

    /// Whether the object at `path` is replaced whole (`x-kubernetes-map-type: atomic`).
    fn map_is_atomic(&self, path: &[PathElement]) -> bool;

    /// Whether `field` is a declared field (a struct field) of the object at `path`, as
    /// opposed to a key of a map (`additionalProperties`) or an undescribed key. kube owns a
    /// non-empty declared object only through its children, but a map entry also as itself
    /// (the `.` in `fieldsV1`), and keeps declared parents of owned fields when pruning.
    fn is_declared_field(&self, path: &[PathElement], field: &str) -> bool {
        let _ = (path, field);
        true
    }

    /// The default of key field `key` of the map-list at `path`, used for items that omit
    /// it (a container port without `protocol` is keyed as `"TCP"`).
    fn key_default(&self, path: &[PathElement], key: &str) -> Option<Value> {
        let _ = (path, key);
        None
    }
}

/// kube's list semantics by field name, for when no schema is at hand: the associative
/// lists of core types. Lists it does not know are atomic and objects are granular, as kube
/// treats anything its schema leaves unsaid.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuiltinShape;

impl Shape for BuiltinShape {
    fn list_kind(&self, path: &[PathElement]) -> ListKind {
        let map = |keys: &[&str]| ListKind::Map { keys: keys.iter().map(|key| key.to_string()).collect() };
        let Some(name) = path.last().and_then(PathElement::as_field) else {
            return ListKind::Atomic;
        };
        let parent_element = path.len().checked_sub(2).map(|index| &path[index]);
        let parent = parent_element.and_then(PathElement::as_field);
        match name {
            // metadata.finalizers is `+listType=set`; NamespaceSpec.finalizers is atomic.
            "finalizers" if parent == Some("metadata") => ListKind::Set,
            "ownerReferences" if parent == Some("metadata") => map(&["uid"]),
            "containers"
            | "initContainers"
            | "ephemeralContainers"
            | "env"
            | "volumes"
            | "imagePullSecrets"
            | "secrets"
            | "resourceClaims" => map(&["name"]),
            "volumeMounts" => map(&["mountPath"]),
            "volumeDevices" => map(&["devicePath"]),
            "conditions" => map(&["type"]),
            // Container ports sit under a container item; ServiceSpec.ports under `spec`.
            "ports" if matches!(parent_element, Some(PathElement::Key(_))) => map(&["containerPort", "protocol"]),
            "ports" if parent == Some("spec") => map(&["port", "protocol"]),
            "hostAliases" => map(&["ip"]),
            "topologySpreadConstraints" => map(&["topologyKey", "whenUnsatisfiable"]),
            _ => ListKind::Atomic,
        }
    }

    fn map_is_atomic(&self, _path: &[PathElement]) -> bool {
        false
    }

    fn key_default(&self, path: &[PathElement], key: &str) -> Option<Value> {
        let is_ports = path.last().and_then(PathElement::as_field) == Some("ports");
        (is_ports && key == "protocol").then(|| Value::String("TCP".into()))
    }
}

/// How many `$ref`/`allOf` hops resolving one node may take; a cycle then resolves to
/// "not described" instead of recursing forever.
const MAX_RESOLVE_DEPTH: usize = 32;

/// Schema knowledge read from an OpenAPI v3 schema: the root schema of a kind (a `$ref` into
/// `components`, or a CRD's inline `openAPIV3Schema`) plus the components `$ref`s resolve
/// against (then the built-in components, as [`crate::schema`] does).
///
/// The root's `metadata` is always read as ObjectMeta, as kube does for custom resources,
/// so `metadata.finalizers` is a set and `metadata.ownerReferences` a map-list everywhere.
/// Nodes the schema does not describe (unknown fields under
/// `x-kubernetes-preserve-unknown-fields`, dangling `$ref`s) are answered by the fallback
/// shape when one is set, else as atomic lists and granular objects.
#[derive(Clone)]
pub struct SchemaShape<'s> {
    root: &'s Value,
    components: &'s Map<String, Value>,
    fallback: Option<&'s dyn Shape>,
    /// The nodes along the path asked about last. Field tracking walks objects depth
    /// first and asks about every node on the way, so the next question almost always
    /// shares all but its last element with the one before; resolving from the root each
    /// time made the walk quadratic in depth and cost most of the comparison's time.
    trail: RefCell<Trail<'s>>,
}

/// `nodes[i]` is the resolved node at `path[..i]` (`None`: the schema does not describe
/// it, nor anything below); `nodes` is one longer than `path` once the root is resolved.
#[derive(Clone, Default)]
struct Trail<'s> {
    path: Vec<PathElement>,
    nodes: Vec<Option<Node<'s>>>,
}

impl<'s> SchemaShape<'s> {
    /// Reads `root`, resolving `$ref`s against `components`.
    pub fn new(root: &'s Value, components: &'s Map<String, Value>) -> Self {
        SchemaShape { root, components, fallback: None, trail: RefCell::default() }
    }

    /// Answers for nodes the schema does not describe with `fallback` (e.g. [`BuiltinShape`]).
    pub fn with_fallback(mut self, fallback: &'s dyn Shape) -> Self {
        self.fallback = Some(fallback);
        self
    }

    /// Calls `answer` with the merged schema node at `path`, or `None` when the schema
    /// does not describe it. `answer` must not ask this shape again.
    fn with_node<R>(&self, path: &[PathElement], answer: impl FnOnce(Option<&Node<'s>>) -> R) -> R {
        let mut trail = self.trail.borrow_mut();
        let Trail { path: known, nodes } = &mut *trail;
        if nodes.is_empty() {
            nodes.push(self.resolve(self.root));
        }
        let shared = known.iter().zip(path).take_while(|(known, asked)| known == asked).count();
        known.truncate(shared);
        nodes.truncate(shared + 1);
        for (depth, element) in path.iter().enumerate().skip(shared) {
            let parent = nodes.last().and_then(Option::as_ref);
            let child = parent.and_then(|parent| self.child(parent, depth, element));
            known.push(element.clone());
            nodes.push(child);
        }
        answer(nodes.last().and_then(Option::as_ref))
    }

    /// The node below `parent` (itself at depth `depth`) along `element`.
    fn child(&self, parent: &Node<'s>, depth: usize, element: &PathElement) -> Option<Node<'s>> {
        let next = match element {
            PathElement::Field(name) if depth == 0 && name == "metadata" => {
                lookup_schema(self.components, OBJECT_META_SCHEMA)?
            }
            PathElement::Field(name) => parent.property(name).or(parent.additional_schema())?,
            PathElement::Key(_) | PathElement::Value(_) | PathElement::Index(_) => parent.items?,
        };
        self.resolve(next)
    }

    fn resolve(&self, schema: &'s Value) -> Option<Node<'s>> {
        let mut node = Node::default();
        self.merge_into(&mut node, schema, 0).then_some(node)
    }

    /// Merges what `schema` says into `node`, following `$ref` and `allOf`; false when a
    /// reference dangles or cycles.
    fn merge_into(&self, node: &mut Node<'s>, schema: &'s Value, depth: usize) -> bool {
        let Value::Object(map) = schema else {
            return true;
        };
        if depth > MAX_RESOLVE_DEPTH {
            return false;
        }
        let (reference, parts) = composition(map);
        if let Some(reference) = reference {
            match ref_name(reference).and_then(|name| lookup_schema(self.components, name)) {
                Some(target) if self.merge_into(node, target, depth + 1) => {}
                _ => return false,
            }
        }
        for part in parts {
            if !self.merge_into(node, part, depth + 1) {
                return false;
            }
        }
        node.merge_keywords(map);
        true
    }
}

/// How strategic merge patch treats a list, by the schema's patch extensions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PatchList {
    /// The patch's list replaces the object's (no `merge` strategy).
    Replace,
    /// `x-kubernetes-patch-strategy: merge`: objects merge by the value of `key`
    /// (`x-kubernetes-patch-merge-key`); scalars (no key) merge as a set.
    Merge {
        /// The merge key of object items.
        key: Option<String>,
    },
}

impl SchemaShape<'_> {
    /// How strategic merge patch merges the list at `path` (list items as any non-field
    /// element), or `None` when the schema does not describe the node.
    ///
    /// kube reads only `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` (its
    /// Go struct tags): a list-type without them is replaced. (Custom resources take no
    /// strategic merge patch at all, in kube as here.)
    pub fn patch_list(&self, path: &[PathElement]) -> Option<PatchList> {
        self.with_node(path, |node| node.map(Node::patch_list))
    }
}

impl Shape for SchemaShape<'_> {
    fn list_kind(&self, path: &[PathElement]) -> ListKind {
        match self.with_node(path, |node| node.map(Node::list_kind)) {
            Some(kind) => kind,
            None => self.fallback.map_or(ListKind::Atomic, |fallback| fallback.list_kind(path)),
        }
    }

    fn map_is_atomic(&self, path: &[PathElement]) -> bool {
        match self.with_node(path, |node| node.map(Node::map_is_atomic)) {
            Some(atomic) => atomic,
            None => self.fallback.is_some_and(|fallback| fallback.map_is_atomic(path)),
        }
    }

    fn is_declared_field(&self, path: &[PathElement], field: &str) -> bool {
        if path.is_empty() && matches!(field, "apiVersion" | "kind" | "metadata") {
            return true;
        }
        match self.with_node(path, |node| node.map(|node| node.property(field).is_some())) {
            Some(declared) => declared,
            None => self.fallback.is_none_or(|fallback| fallback.is_declared_field(path, field)),
        }
    }

    fn key_default(&self, path: &[PathElement], key: &str) -> Option<Value> {
        let described = self.with_node(path, |node| {
            node.map(|node| {
                let item = self.resolve(node.items?)?;
                let property = self.resolve(item.property(key)?)?;
                property.default.cloned()
            })
        });
        match described {
            Some(default) => default,
            None => self.fallback.and_then(|fallback| fallback.key_default(path, key)),
        }
    }
}

/// What a schema node says, with its `$ref`s and `allOf`s merged; the first value met wins.
#[derive(Clone, Default)]
struct Node<'s> {
    properties: Vec<&'s Map<String, Value>>,
    additional_properties: Option<&'s Value>,
    items: Option<&'s Value>,
    default: Option<&'s Value>,
    /// `x-kubernetes-list-type`.
    list_type: Option<&'s Value>,
    /// `x-kubernetes-list-map-keys`.
    list_map_keys: Option<&'s Value>,
    /// `x-kubernetes-map-type`.
    map_type: Option<&'s Value>,
    /// `x-kubernetes-patch-strategy`.
    patch_strategy: Option<&'s Value>,
    /// `x-kubernetes-patch-merge-key`.
    patch_merge_key: Option<&'s Value>,
}

impl<'s> Node<'s> {
    fn merge_keywords(&mut self, map: &'s Map<String, Value>) {
        for (key, value) in map {
            let slot = match key.as_str() {
                "properties" => {
                    if let Value::Object(properties) = value {
                        self.properties.push(properties);
                    }
                    continue;
                }
                "additionalProperties" => &mut self.additional_properties,
                "items" => &mut self.items,
                "default" => &mut self.default,
                "x-kubernetes-list-type" => &mut self.list_type,
                "x-kubernetes-list-map-keys" => &mut self.list_map_keys,
                "x-kubernetes-map-type" => &mut self.map_type,
                "x-kubernetes-patch-strategy" => &mut self.patch_strategy,
                "x-kubernetes-patch-merge-key" => &mut self.patch_merge_key,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
    }

    fn property(&self, name: &str) -> Option<&'s Value> {
        self.properties.iter().find_map(|properties| crate::meta::get(properties, name))
    }

    /// The schema of undeclared keys, when `additionalProperties` is a schema.
    fn additional_schema(&self) -> Option<&'s Value> {
        self.additional_properties.filter(|schema| schema.is_object())
    }

    /// `x-kubernetes-map-type: atomic`.
    fn map_is_atomic(&self) -> bool {
        self.map_type.and_then(Value::as_str) == Some("atomic")
    }

    /// structured-merge-diff's reading: `x-kubernetes-list-type` first, then (for built-in
    /// types) the strategic-merge-patch strategy: `merge` with a merge key is a map-list,
    /// `merge` without one a set; anything else is atomic.
    fn list_kind(&self) -> ListKind {
        match self.list_type.and_then(Value::as_str) {
            Some("set") => return ListKind::Set,
            Some("map") => {
                let keys: Vec<String> = self
                    .list_map_keys
                    .and_then(Value::as_array)
                    .map(|keys| keys.iter().filter_map(Value::as_str).map(String::from).collect())
                    .unwrap_or_default();
                return if keys.is_empty() { ListKind::Atomic } else { ListKind::Map { keys } };
            }
            Some(_) => return ListKind::Atomic,
            None => {}
        }
        match (self.patch_merges(), self.patch_merge_key.and_then(Value::as_str)) {
            (true, Some(key)) => ListKind::Map { keys: vec![key.to_string()] },
            (true, None) => ListKind::Set,
            (false, _) => ListKind::Atomic,
        }
    }

    /// Whether `x-kubernetes-patch-strategy` includes `merge`.
    fn patch_merges(&self) -> bool {
        self.patch_strategy
            .and_then(Value::as_str)
            .is_some_and(|strategy| strategy.split(',').any(|part| part.trim() == "merge"))
    }

    fn patch_list(&self) -> PatchList {
        match self.patch_merges() {
            true => PatchList::Merge { key: self.patch_merge_key.and_then(Value::as_str).map(String::from) },
            false => PatchList::Replace,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openapi::{builtin_components, schema_ref};
    use serde_json::json;

    fn fields(names: &[&str]) -> Vec<PathElement> {
        names.iter().map(|name| PathElement::field(*name)).collect()
    }

    #[test]
    fn schema_shape_reads_list_and_map_extensions() {
        let mut components = Map::new();
        components.insert(
            "Port".into(),
            json!({"type": "object", "properties": {
                "port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}
            }}),
        );
        let root = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "ports": {"type": "array", "items": schema_ref("Port"),
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"]},
            "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "args": {"type": "array", "items": {"type": "string"}},
            "merged": {"allOf": [{"type": "array", "x-kubernetes-patch-strategy": "merge,retainKeys",
                "x-kubernetes-patch-merge-key": "name"}]},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }}}});
        let shape = SchemaShape::new(&root, &components);
        let map = |keys: &[&str]| ListKind::Map { keys: keys.iter().map(|k| k.to_string()).collect() };
        assert_eq!(shape.list_kind(&fields(&["spec", "ports"])), map(&["port", "protocol"]));
        assert_eq!(shape.list_kind(&fields(&["spec", "tags"])), ListKind::Set);
        assert_eq!(shape.list_kind(&fields(&["spec", "args"])), ListKind::Atomic);
        assert_eq!(shape.list_kind(&fields(&["spec", "merged"])), map(&["name"]));
        assert_eq!(shape.key_default(&fields(&["spec", "ports"]), "protocol"), Some(json!("TCP")));
        assert!(shape.map_is_atomic(&fields(&["spec", "selector"])));
        assert!(!shape.map_is_atomic(&fields(&["spec", "labels"])));
        assert!(shape.is_declared_field(&fields(&["spec"]), "labels"));
        assert!(!shape.is_declared_field(&fields(&["spec", "labels"]), "app"));
        assert!(!shape.is_declared_field(&fields(&["spec", "free"]), "anything"));
        // metadata is ObjectMeta whatever the root says; undescribed nodes use the fallback.
        assert_eq!(shape.list_kind(&fields(&["metadata", "finalizers"])), ListKind::Set);
        assert!(shape.is_declared_field(&fields(&["metadata"]), "labels"));
        assert_eq!(shape.list_kind(&fields(&["spec", "free", "containers"])), ListKind::Atomic);
        let with_fallback = shape.with_fallback(&BuiltinShape);
        assert_eq!(with_fallback.list_kind(&fields(&["spec", "free", "containers"])), map(&["name"]));
    }

    #[test]
    fn answers_do_not_depend_on_what_was_asked_before() {
        // Deployment: refs into components, lists of keyed items, ObjectMeta, maps.
        let root = schema_ref("io.k8s.api.apps.v1.Deployment");
        let components = builtin_components();
        let container = |rest: &[&str]| {
            let mut path = fields(&["spec", "template", "spec", "containers"]);
            path.push(PathElement::key([("name".into(), json!("app"))]));
            path.extend(fields(rest));
            path
        };
        let paths = [
            container(&["ports"]),
            fields(&["metadata", "labels"]),
            container(&["env"]),
            fields(&["spec"]),
            container(&["ports"]),
            fields(&["spec", "template", "metadata", "finalizers"]),
            fields(&["spec", "nonexistent", "deeper"]),
            fields(&["spec", "nonexistent"]),
            container(&["resources", "limits"]),
            vec![],
            fields(&["metadata", "ownerReferences"]),
            container(&[]),
        ];
        let asked = SchemaShape::new(&root, components).with_fallback(&BuiltinShape);
        for path in &paths {
            let fresh = || SchemaShape::new(&root, components).with_fallback(&BuiltinShape);
            assert_eq!(asked.list_kind(path), fresh().list_kind(path), "{path:?}");
            assert_eq!(asked.map_is_atomic(path), fresh().map_is_atomic(path), "{path:?}");
            for field in ["name", "limits", "app", "containers"] {
                assert_eq!(asked.is_declared_field(path, field), fresh().is_declared_field(path, field), "{path:?}");
            }
            assert_eq!(asked.key_default(path, "protocol"), fresh().key_default(path, "protocol"), "{path:?}");
            assert_eq!(asked.patch_list(path), fresh().patch_list(path), "{path:?}");
        }
        assert_eq!(
            asked.list_kind(&container(&["ports"])),
            ListKind::Map { keys: vec!["containerPort".into(), "protocol".into()] }
        );
        assert_eq!(asked.list_kind(&container(&["env"])), ListKind::Map { keys: vec!["name".into()] });
        assert!(!asked.is_declared_field(&fields(&["metadata", "labels"]), "app"));
    }

    #[test]
    fn builtin_components_carry_metadata_list_semantics() {
        let root = schema_ref("io.k8s.api.core.v1.ServiceAccount");
        let shape = SchemaShape::new(&root, builtin_components());
        assert_eq!(
            shape.list_kind(&fields(&["metadata", "ownerReferences"])),
            ListKind::Map { keys: vec!["uid".into()] }
        );
        assert_eq!(shape.list_kind(&fields(&["secrets"])), ListKind::Map { keys: vec!["name".into()] });
        assert!(shape.is_declared_field(&[], "secrets"));
        assert!(!shape.is_declared_field(&fields(&["metadata", "labels"]), "app"));
    }

    #[test]
    fn builtin_shape_knows_core_lists_by_name() {
        let container = |rest: &[&str]| {
            let mut path = fields(&["spec", "template", "spec", "containers"]);
            path.push(PathElement::key([("name".into(), json!("app"))]));
            path.extend(fields(rest));
            path
        };
        let map = |keys: &[&str]| ListKind::Map { keys: keys.iter().map(|k| k.to_string()).collect() };
        let shape = BuiltinShape;
        assert_eq!(shape.list_kind(&fields(&["spec", "template", "spec", "containers"])), map(&["name"]));
        assert_eq!(shape.list_kind(&container(&["ports"])), map(&["containerPort", "protocol"]));
        assert_eq!(shape.key_default(&container(&["ports"]), "protocol"), Some(json!("TCP")));
        assert_eq!(shape.list_kind(&container(&["env"])), map(&["name"]));
        assert_eq!(shape.list_kind(&container(&["volumeMounts"])), map(&["mountPath"]));
        assert_eq!(shape.list_kind(&container(&["args"])), ListKind::Atomic);
        assert_eq!(shape.list_kind(&fields(&["metadata", "finalizers"])), ListKind::Set);
        assert_eq!(shape.list_kind(&fields(&["spec", "finalizers"])), ListKind::Atomic);
        assert_eq!(shape.list_kind(&fields(&["status", "conditions"])), map(&["type"]));
        assert_eq!(shape.list_kind(&fields(&["spec", "ports"])), map(&["port", "protocol"]));
        assert!(!shape.map_is_atomic(&fields(&["data"])));
    }
}
