//! Defaulting: of CRDs themselves (kube's v1 `SetDefaults_*` and the create/update strategy)
//! and of custom resources by their schema (kube's structural defaulting).

use serde_json::{json, Map, Value};

use super::node::{Additional, Node};

/// kube's v1 CRD defaults: `spec.names.singular` (the lower-cased kind),
/// `spec.names.listKind` (`<Kind>List`), `spec.conversion` (`{strategy: None}`) and a
/// conversion webhook service's `port` (443). Status is left alone (see
/// [`prepare_crd_for_create`]).
pub fn default_crd(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
        let empty = |names: &Map<String, Value>, field: &str| {
            names.get(field).and_then(Value::as_str).is_none_or(str::is_empty)
        };
        if empty(names, "singular") {
            names.insert("singular".to_string(), Value::String(kind.to_lowercase()));
        }
        if empty(names, "listKind") && !kind.is_empty() {
            names.insert("listKind".to_string(), Value::String(format!("{kind}List")));
        }
    }
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".to_string(), json!({"strategy": "None"}));
    }
    if let Some(service) =
        crd.pointer_mut("/spec/conversion/webhook/clientConfig/service").and_then(Value::as_object_mut)
    {
        if service.get("port").is_none_or(Value::is_null) {
            service.insert("port".to_string(), Value::from(443));
        }
    }
}

/// What kube's strategy does before validating a create: a fresh `status` whose only stored
/// version is the storage version, and `metadata.generation` 1.
pub fn prepare_crd_for_create(crd: &mut Value) {
    let storage = storage_version(crd);
    let Some(object) = crd.as_object_mut() else { return };
    let stored: Vec<Value> = storage.into_iter().map(Value::String).collect();
    object.insert("status".to_string(), json!({"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": stored}));
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.insert("generation".to_string(), Value::from(1));
    }
}

/// What kube's strategy does before validating a spec update: `status` is kept from `old`,
/// the new storage version joins `status.storedVersions`, and `metadata.generation` grows by
/// one when the spec changed.
pub fn prepare_crd_for_update(old: &Value, new: &mut Value) {
    let mut status = old.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    if let Some(storage) = storage_version(new) {
        let stored = status.as_object_mut().map(|s| s.entry("storedVersions").or_insert_with(|| json!([])));
        if let Some(Value::Array(stored)) = stored {
            if !stored.iter().any(|s| s.as_str() == Some(storage.as_str())) {
                stored.push(Value::String(storage));
            }
        }
    }
    let old_generation = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
    let generation = if old.get("spec") == new.get("spec") { old_generation } else { old_generation + 1 };
    let Some(object) = new.as_object_mut() else { return };
    object.insert("status".to_string(), status);
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.insert("generation".to_string(), Value::from(generation));
    }
}

fn storage_version(crd: &Value) -> Option<String> {
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array)?;
    let storage = versions.iter().find(|v| v.get("storage") == Some(&Value::Bool(true)))?;
    storage.get("name").and_then(Value::as_str).map(String::from)
}

/// kube's structural defaulting of a custom resource by its version's `openAPIV3Schema`,
/// applied on every read and write: first `null`s in non-nullable fields without a default
/// are dropped, then every absent property with a `default` gets a deep copy of it, and so
/// does a `null` in a non-nullable property, map value or list item that has one. The walk
/// follows `properties`, `additionalProperties` and `items`, including into values it just
/// defaulted (a default's nested defaults apply too).
pub fn apply_defaults(object: &mut Value, schema: &Value) {
    let node = Node::of(schema);
    prune_non_nullable_nulls(object, node, 0);
    default(object, node, 0);
}

/// How deep defaulting follows an object (see the validation walk's limit).
const MAX_DEPTH: usize = 256;

fn field_schema<'a>(node: Option<Node<'a>>, field: &str) -> Option<Node<'a>> {
    let node = node?;
    node.property(field).or_else(|| node.additional_schema())
}

fn prune_non_nullable_nulls(value: &mut Value, node: Option<Node<'_>>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => map.retain(|field, v| {
            let schema = field_schema(node, field);
            let droppable = v.is_null() && schema.is_some_and(|s| !s.nullable() && s.default_value().is_none());
            if !droppable {
                prune_non_nullable_nulls(v, schema, depth + 1);
            }
            !droppable
        }),
        Value::Array(items) => {
            let item_schema = node.and_then(Node::items);
            for item in items {
                prune_non_nullable_nulls(item, item_schema, depth + 1);
            }
        }
        _ => {}
    }
}

/// A non-nullable `null` (kube's `isNonNullableNull`).
fn non_nullable_null(value: &Value, node: Option<Node<'_>>) -> bool {
    value.is_null() && node.is_some_and(|n| !n.nullable())
}

fn default(value: &mut Value, node: Option<Node<'_>>, depth: usize) {
    let Some(node) = node else { return };
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            for (field, property) in node.properties().into_iter().flatten() {
                let Some(property) = Node::of(property) else { continue };
                let Some(default_value) = property.default_value() else { continue };
                let absent_or_null = map.get(field).is_none_or(|v| non_nullable_null(v, Some(property)));
                if absent_or_null {
                    map.insert(field.clone(), default_value.clone());
                }
            }
            let additional = node.additional();
            for (field, v) in map.iter_mut() {
                if let Some(property) = node.property(field) {
                    default(v, Some(property), depth + 1);
                } else if !matches!(additional, Additional::Unset) {
                    let schema = node.additional_schema();
                    if non_nullable_null(v, schema) {
                        *v = schema.and_then(Node::default_value).cloned().unwrap_or(Value::Null);
                    }
                    default(v, schema, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            let item_schema = node.items();
            for item in items {
                if non_nullable_null(item, item_schema) {
                    *item = item_schema.and_then(Node::default_value).cloned().unwrap_or(Value::Null);
                }
                default(item, item_schema, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crd_defaults() {
        let mut crd = json!({
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com",
                "names": {"plural": "crontabs", "kind": "CronTab"},
                "versions": [{"name": "v1", "served": true, "storage": true}]
            }
        });
        default_crd(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "crontab");
        assert_eq!(crd["spec"]["names"]["listKind"], "CronTabList");
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
        assert!(crd.get("status").is_none());

        let mut webhook = json!({"spec": {"names": {"kind": "A", "singular": "x", "listKind": "AItems"}, "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}}}});
        default_crd(&mut webhook);
        assert_eq!(webhook["spec"]["names"]["singular"], "x");
        assert_eq!(webhook["spec"]["names"]["listKind"], "AItems");
        assert_eq!(webhook["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"], 443);

        prepare_crd_for_create(&mut crd);
        assert_eq!(crd["status"], json!({"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]}));
        assert_eq!(crd["metadata"]["generation"], 1);

        let old = crd.clone();
        let mut new = crd.clone();
        new["spec"]["versions"] =
            json!([{"name": "v1", "served": true, "storage": false}, {"name": "v2", "served": true, "storage": true}]);
        new["status"] = json!({"storedVersions": ["bogus"]});
        prepare_crd_for_update(&old, &mut new);
        assert_eq!(new["status"]["storedVersions"], json!(["v1", "v2"]));
        assert_eq!(new["metadata"]["generation"], 2);
        let mut same = old.clone();
        prepare_crd_for_update(&old, &mut same);
        assert_eq!(same["metadata"]["generation"], 1);
    }

    fn cron_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "cronSpec": {"type": "string"},
                        "replicas": {"type": "integer", "default": 1},
                        "suspend": {"type": "boolean", "nullable": true, "default": false},
                        "image": {"type": "string"},
                        "ports": {
                            "type": "array",
                            "items": {"type": "object", "properties": {"protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}}}
                        },
                        "limits": {"type": "object", "additionalProperties": {"type": "string", "default": "1"}},
                        "nested": {"type": "object", "default": {"inner": {}}, "properties": {"inner": {"type": "object", "properties": {"level": {"type": "string", "default": "info"}}}}}
                    }
                }
            }
        })
    }

    #[test]
    fn apply_defaults_table() {
        let cases = [
            (json!({}), json!({"spec": {"replicas": 1, "suspend": false, "nested": {"inner": {"level": "info"}}}})),
            (
                json!({"spec": {"replicas": 3, "suspend": null, "image": null, "cronSpec": "* * * * */5"}}),
                json!({"spec": {"replicas": 3, "suspend": null, "cronSpec": "* * * * */5", "nested": {"inner": {"level": "info"}}}}),
            ),
            (
                json!({"spec": {"replicas": null, "ports": [{"port": 80}, {"port": 443, "protocol": "UDP"}]}}),
                json!({"spec": {"replicas": 1, "ports": [{"port": 80, "protocol": "TCP"}, {"port": 443, "protocol": "UDP"}], "suspend": false, "nested": {"inner": {"level": "info"}}}}),
            ),
            (
                json!({"spec": {"limits": {"cpu": null, "memory": "2Gi"}, "nested": {}}}),
                json!({"spec": {"limits": {"cpu": "1", "memory": "2Gi"}, "nested": {}, "replicas": 1, "suspend": false}}),
            ),
        ];
        for (mut object, expected) in cases {
            let input = object.clone();
            apply_defaults(&mut object, &cron_schema());
            assert_eq!(object, expected, "{input}");
        }
    }
}
