//! Scenario tests of apply and update over realistic objects, checked against what
//! kube-apiserver stores (entries compared as JSON text, so key order counts).

use serde_json::{json, Map, Value};

use super::*;

const T1: &str = "2024-05-01T10:00:00Z";
const T2: &str = "2024-05-01T10:00:05Z";
const T3: &str = "2024-05-01T10:00:09Z";

fn writer<'a>(manager: &'a str, time: &'a str) -> WriteContext<'a> {
    WriteContext { manager, api_version: "v1", subresource: None, time, reset_fields: MAIN_RESOURCE_RESET_FIELDS }
}

fn configmap(metadata_extra: Value, data: Value) -> Value {
    let mut metadata = json!({"name": "test-cm", "namespace": "default"});
    metadata.as_object_mut().unwrap().extend(metadata_extra.as_object().cloned().unwrap_or_default());
    let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata});
    if !data.is_null() {
        object["data"] = data;
    }
    object
}

/// `fieldsV1` of `manager`'s entry, as JSON text.
fn fields_of(entries: &[Value], manager: &str) -> String {
    let entry = entries.iter().find(|entry| entry["manager"] == manager).unwrap_or_else(|| panic!("no {manager}"));
    entry["fieldsV1"].to_string()
}

fn managers(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|entry| format!("{}/{}", entry["manager"].as_str().unwrap(), entry["operation"].as_str().unwrap()))
        .collect()
}

fn with_entries(object: &Value, entries: &[Value]) -> Value {
    let mut object = object.clone();
    object["metadata"]["managedFields"] = Value::Array(entries.to_vec());
    object
}

#[test]
fn configmap_apply_then_reapply_without_a_key_removes_it() {
    let config = configmap(json!({"labels": {"test-label": "test"}}), json!({"key": "value", "other": "x"}));
    let created = apply(None, &config, &writer("kubectl", T1), false, &BuiltinShape).unwrap();
    assert_eq!(
        Value::Array(created.managed_fields.clone()).to_string(),
        r#"[{"manager":"kubectl","operation":"Apply","apiVersion":"v1","time":"2024-05-01T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:key":{},"f:other":{}},"f:metadata":{"f:labels":{"f:test-label":{}}}}}]"#
    );
    assert_eq!(created.object["metadata"]["managedFields"], Value::Array(created.managed_fields.clone()));
    assert_eq!(created.object["data"], json!({"key": "value", "other": "x"}));

    let smaller = configmap(json!({"labels": {"test-label": "test"}}), json!({"key": "value"}));
    let reapplied = apply(Some(&created.object), &smaller, &writer("kubectl", T2), false, &BuiltinShape).unwrap();
    assert_eq!(reapplied.object["data"], json!({"key": "value"}));
    assert_eq!(
        fields_of(&reapplied.managed_fields, "kubectl"),
        r#"{"f:data":{"f:key":{}},"f:metadata":{"f:labels":{"f:test-label":{}}}}"#
    );
    assert_eq!(reapplied.managed_fields[0]["time"], T2);

    // The same apply again changes nothing, not even the timestamp.
    let noop = apply(Some(&reapplied.object), &smaller, &writer("kubectl", T3), false, &BuiltinShape).unwrap();
    assert_eq!(noop.object, reapplied.object);

    // Dropping `data` and the label from the configuration removes them from the object.
    let bare = configmap(json!({}), Value::Null);
    let emptied = apply(Some(&noop.object), &bare, &writer("kubectl", T3), false, &BuiltinShape).unwrap();
    assert_eq!(
        emptied.object,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "test-cm", "namespace": "default"}})
    );
    assert!(emptied.managed_fields.is_empty(), "kube drops managers that own nothing");
}

#[test]
fn updater_takes_fields_from_applier_like_kube_test_apply_managed_fields() {
    // kube's TestApplyManagedFields: apply, then two merge patches by "updater".
    let config = configmap(json!({"labels": {"test-label": "test"}}), json!({"key": "value"}));
    let applied = apply(None, &config, &writer("apply_test", T1), false, &BuiltinShape).unwrap();
    let mut patched = applied.object.clone();
    patched["data"]["new-key"] = json!("value");
    let entries = update(Some(&applied.object), &patched, &writer("updater", T2), &BuiltinShape);
    let patched = with_entries(&patched, &entries);
    let mut patched_again = patched.clone();
    patched_again["data"]["key"] = json!("new value");
    let entries = update(Some(&patched), &patched_again, &writer("updater", T3), &BuiltinShape);
    assert_eq!(
        Value::Array(entries).to_string(),
        concat!(
            r#"[{"manager":"apply_test","operation":"Apply","apiVersion":"v1","time":"2024-05-01T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:test-label":{}}}}},"#,
            r#"{"manager":"updater","operation":"Update","apiVersion":"v1","time":"2024-05-01T10:00:09Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:key":{},"f:new-key":{}}}}]"#
        )
    );
}

fn deployment(containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": containers}}}
    })
}

#[test]
fn containers_merge_by_name_across_two_appliers() {
    let ctx = |manager| WriteContext { api_version: "apps/v1", ..writer(manager, T1) };
    let mut app = deployment(json!([{"name": "app", "image": "app:v1", "ports": [{"containerPort": 8080}]}]));
    app["spec"]["replicas"] = json!(3);
    let first = apply(None, &app, &ctx("deployer"), false, &BuiltinShape).unwrap();
    assert_eq!(
        fields_of(&first.managed_fields, "deployer"),
        r#"{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}"#
    );

    let sidecar = deployment(json!([{"name": "proxy", "image": "proxy:v1"}]));
    let second = apply(Some(&first.object), &sidecar, &ctx("injector"), false, &BuiltinShape).unwrap();
    let containers = &second.object["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        containers,
        &json!([{"name": "app", "image": "app:v1", "ports": [{"containerPort": 8080}]}, {"name": "proxy", "image": "proxy:v1"}])
    );
    assert_eq!(
        fields_of(&second.managed_fields, "injector"),
        r#"{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"proxy\"}":{".":{},"f:image":{},"f:name":{}}}}}}}"#
    );

    // The deployer's next apply changes its image and drops its port; the sidecar stays.
    let mut app_v2 = deployment(json!([{"name": "app", "image": "app:v2"}]));
    app_v2["spec"]["replicas"] = json!(3);
    let third = apply(Some(&second.object), &app_v2, &ctx("deployer"), false, &BuiltinShape).unwrap();
    assert_eq!(
        third.object["spec"]["template"]["spec"]["containers"],
        json!([{"name": "app", "image": "app:v2"}, {"name": "proxy", "image": "proxy:v1"}])
    );

    // The injector co-owns the app image by applying the same value; then the deployer can
    // no longer change it without a conflict.
    let shared = deployment(json!([{"name": "proxy", "image": "proxy:v1"}, {"name": "app", "image": "app:v2"}]));
    let fourth = apply(Some(&third.object), &shared, &ctx("injector"), false, &BuiltinShape).unwrap();
    let mut app_v3 = deployment(json!([{"name": "app", "image": "app:v3"}]));
    app_v3["spec"]["replicas"] = json!(3);
    let error = apply(Some(&fourth.object), &app_v3, &ctx("deployer"), false, &BuiltinShape).unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"Apply failed with 1 conflict: conflict with "injector": .spec.template.spec.containers[name="app"].image"#
    );
}

#[test]
fn conflict_with_client_side_apply_then_force() {
    let object = configmap(json!({}), json!({"a": "1", "b": "2", "c": "3"}));
    let created_entries = update(None, &object, &writer("kubectl-client-side-apply", T1), &BuiltinShape);
    assert_eq!(
        fields_of(&created_entries, "kubectl-client-side-apply"),
        r#"{"f:data":{".":{},"f:a":{},"f:b":{},"f:c":{}}}"#
    );
    let live = with_entries(&object, &created_entries);

    let config = configmap(json!({}), json!({"a": "one", "b": "two", "c": "3"}));
    let Err(ApplyError::Conflicts(conflicts)) =
        apply(Some(&live), &config, &writer("kubectl", T2), false, &BuiltinShape)
    else {
        panic!("expected conflicts");
    };
    assert_eq!(
        conflicts.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using v1:\n- .data.a\n- .data.b"
    );
    let causes: Vec<(&str, String, String)> =
        conflicts.causes().into_iter().map(|cause| (cause.reason, cause.message, cause.field)).collect();
    let message = r#"conflict with "kubectl-client-side-apply" using v1"#.to_string();
    assert_eq!(
        causes,
        [
            ("FieldManagerConflict", message.clone(), ".data.a".to_string()),
            ("FieldManagerConflict", message, ".data.b".to_string())
        ]
    );

    let forced = apply(Some(&live), &config, &writer("kubectl", T2), true, &BuiltinShape).unwrap();
    assert_eq!(forced.object["data"], json!({"a": "one", "b": "two", "c": "3"}));
    assert_eq!(managers(&forced.managed_fields), ["kubectl/Apply", "kubectl-client-side-apply/Update"]);
    assert_eq!(fields_of(&forced.managed_fields, "kubectl"), r#"{"f:data":{"f:a":{},"f:b":{},"f:c":{}}}"#);
    assert_eq!(fields_of(&forced.managed_fields, "kubectl-client-side-apply"), r#"{"f:data":{".":{},"f:c":{}}}"#);
}

#[test]
fn finalizers_are_a_set_shared_by_appliers() {
    let with_finalizers = |finalizers: Value| configmap(json!({"finalizers": finalizers}), Value::Null);
    let a =
        apply(None, &with_finalizers(json!(["example.com/a"])), &writer("ctrl-a", T1), false, &BuiltinShape).unwrap();
    let b =
        apply(Some(&a.object), &with_finalizers(json!(["example.com/b"])), &writer("ctrl-b", T2), false, &BuiltinShape)
            .unwrap();
    assert_eq!(b.object["metadata"]["finalizers"], json!(["example.com/a", "example.com/b"]));
    assert_eq!(fields_of(&b.managed_fields, "ctrl-b"), r#"{"f:metadata":{"f:finalizers":{"v:\"example.com/b\"":{}}}}"#);

    let a_gone =
        apply(Some(&b.object), &configmap(json!({}), Value::Null), &writer("ctrl-a", T3), false, &BuiltinShape)
            .unwrap();
    assert_eq!(a_gone.object["metadata"]["finalizers"], json!(["example.com/b"]));
    assert_eq!(managers(&a_gone.managed_fields), ["ctrl-b/Apply"]);

    let b_gone =
        apply(Some(&a_gone.object), &configmap(json!({}), Value::Null), &writer("ctrl-b", T3), false, &BuiltinShape)
            .unwrap();
    assert_eq!(b_gone.object["metadata"], json!({"name": "test-cm", "namespace": "default"}));
}

#[test]
fn update_moves_changed_fields_and_drops_removed_ones() {
    let created = configmap(json!({"labels": {"app": "web"}}), json!({"a": "1"}));
    let entries = update(None, &created, &writer("kubectl-create", T1), &BuiltinShape);
    assert_eq!(
        fields_of(&entries, "kubectl-create"),
        r#"{"f:data":{".":{},"f:a":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}}"#
    );
    let stored = with_entries(&created, &entries);

    let edited = configmap(json!({}), json!({"a": "2", "b": "3"}));
    let entries = update(Some(&stored), &edited, &writer("editor", T2), &BuiltinShape);
    assert_eq!(managers(&entries), ["kubectl-create/Update", "editor/Update"]);
    // Only the map itself is left: a member without children is written as `{}`.
    assert_eq!(fields_of(&entries, "kubectl-create"), r#"{"f:data":{}}"#);
    assert_eq!(fields_of(&entries, "editor"), r#"{"f:data":{"f:a":{},"f:b":{}}}"#);
    let stored = with_entries(&edited, &entries);

    // The same manager and version merges into its entry and refreshes its time; another
    // version is another entry.
    let mut again = stored.clone();
    again["data"]["c"] = json!("4");
    let entries = update(Some(&stored), &again, &writer("editor", T3), &BuiltinShape);
    assert_eq!(fields_of(&entries, "editor"), r#"{"f:data":{"f:a":{},"f:b":{},"f:c":{}}}"#);
    assert_eq!(entries[1]["time"], T3);
    let v2 = WriteContext { api_version: "v2", ..writer("editor", T3) };
    let mut other_version = stored.clone();
    other_version["data"]["d"] = json!("5");
    assert_eq!(update(Some(&stored), &other_version, &v2, &BuiltinShape).len(), 3);

    // A write that changes nothing keeps the stored entries, timestamps included.
    assert_eq!(update(Some(&stored), &stored, &writer("editor", T3), &BuiltinShape), entries_of(&stored));
}

fn entries_of(object: &Value) -> Vec<Value> {
    object["metadata"]["managedFields"].as_array().cloned().unwrap_or_default()
}

#[test]
fn update_honours_explicit_managed_fields() {
    let object = configmap(json!({}), json!({"a": "1"}));
    let stored = with_entries(&object, &update(None, &object, &writer("creator", T1), &BuiltinShape));

    for reset in [json!([]), json!([{}])] {
        let mut request = stored.clone();
        request["metadata"]["managedFields"] = reset.clone();
        assert!(update(Some(&stored), &request, &writer("x", T2), &BuiltinShape).is_empty(), "{reset}");
    }

    let mut malformed = stored.clone();
    malformed["metadata"]["managedFields"] = json!([{"manager": "m", "operation": "Bogus"}]);
    assert_eq!(update(Some(&stored), &malformed, &writer("x", T2), &BuiltinShape), entries_of(&stored));

    let explicit = json!([{"manager": "owner", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:a": {}}}}]);
    let mut repaired = stored.clone();
    repaired["metadata"]["managedFields"] = explicit.clone();
    assert_eq!(Value::Array(update(Some(&stored), &repaired, &writer("x", T2), &BuiltinShape)), explicit);

    // Through a subresource the request's managedFields are ignored.
    let status = WriteContext { subresource: Some("status"), reset_fields: &[&["data"]], ..writer("x", T2) };
    assert_eq!(update(Some(&stored), &repaired, &status, &BuiltinShape), entries_of(&stored));
}

#[test]
fn first_apply_to_an_untracked_object_conflicts_with_before_first_apply() {
    let live = configmap(json!({}), json!({"a": "1", "b": "2"}));
    let config = configmap(json!({}), json!({"a": "changed"}));
    let error = apply(Some(&live), &config, &writer("kubectl", T1), false, &BuiltinShape).unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a"#
    );
    let forced = apply(Some(&live), &config, &writer("kubectl", T1), true, &BuiltinShape).unwrap();
    assert_eq!(fields_of(&forced.managed_fields, "before-first-apply"), r#"{"f:data":{".":{},"f:b":{}}}"#);
    assert_eq!(forced.object["data"], json!({"a": "changed", "b": "2"}));
}

#[test]
fn apply_resets_status_and_never_owns_identity() {
    let mut config = configmap(json!({"uid": "u-1", "resourceVersion": "7"}), json!({"k": "v"}));
    config["status"] = json!({"phase": "Ready"});
    let applied = apply(None, &config, &writer("kubectl", T1), false, &BuiltinShape).unwrap();
    assert!(applied.object.get("status").is_none());
    assert_eq!(fields_of(&applied.managed_fields, "kubectl"), r#"{"f:data":{"f:k":{}}}"#);

    let mut live = applied.object.clone();
    live["status"] = json!({"phase": "Old"});
    let again = apply(Some(&live), &config, &writer("kubectl", T2), false, &BuiltinShape).unwrap();
    assert_eq!(again.object["status"], json!({"phase": "Old"}));
}

#[test]
fn removing_a_container_port_like_kube_test_apply_remove_container_port() {
    let ctx = WriteContext { api_version: "apps/v1", ..writer("apply_test", T1) };
    let with_port = deployment(
        json!([{"name": "nginx", "image": "nginx:latest", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]),
    );
    let first = apply(None, &with_port, &ctx, false, &BuiltinShape).unwrap();
    let without_port = deployment(json!([{"name": "nginx", "image": "nginx:latest"}]));
    let second = apply(Some(&first.object), &without_port, &ctx, false, &BuiltinShape).unwrap();
    assert_eq!(
        second.object["spec"]["template"]["spec"]["containers"],
        json!([{"name": "nginx", "image": "nginx:latest"}])
    );
}

#[test]
fn apply_rejects_managed_fields_and_unkeyable_items() {
    let mut config = configmap(json!({}), json!({}));
    config["metadata"]["managedFields"] = json!([]);
    assert_eq!(
        apply(None, &config, &writer("m", T1), false, &BuiltinShape).unwrap_err(),
        ApplyError::ManagedFieldsInConfig
    );
    let pod =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"image": "x"}]}});
    let error = apply(None, &pod, &writer("m", T1), false, &BuiltinShape).unwrap_err();
    assert!(matches!(error, ApplyError::InvalidConfig(_)), "{error}");
    let mut broken = configmap(json!({}), json!({"a": "1"}));
    broken["metadata"]["managedFields"] = json!([{"operation": "Apply"}]);
    let error = apply(Some(&broken), &configmap(json!({}), Value::Null), &writer("m", T1), false, &BuiltinShape);
    assert!(matches!(error, Err(ApplyError::LiveManagedFields(_))));
}

#[test]
fn schema_shape_drives_custom_resource_apply() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "nodes": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
            "items": {"type": "object", "properties": {"id": {"type": "integer"}, "role": {"type": "string"}}}},
        "settings": {"type": "object", "additionalProperties": {"type": "object",
            "properties": {"value": {"type": "string"}}}}
    }}}});
    let components = Map::new();
    let shape = SchemaShape::new(&schema, &components).with_fallback(&BuiltinShape);
    let widget = |spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec});
    let ctx = WriteContext { api_version: "example.com/v1", ..writer("ops", T1) };
    let first = apply(
        None,
        &widget(json!({"nodes": [{"id": 1, "role": "leader"}], "settings": {"mode": {"value": "fast"}}})),
        &ctx,
        false,
        &shape,
    )
    .unwrap();
    assert_eq!(
        fields_of(&first.managed_fields, "ops"),
        r#"{"f:spec":{"f:nodes":{"k:{\"id\":1}":{".":{},"f:id":{},"f:role":{}}},"f:settings":{"f:mode":{".":{},"f:value":{}}}}}"#
    );
    let other = WriteContext { api_version: "example.com/v1", ..writer("scaler", T2) };
    let second =
        apply(Some(&first.object), &widget(json!({"nodes": [{"id": 2, "role": "follower"}]})), &other, false, &shape)
            .unwrap();
    assert_eq!(second.object["spec"]["nodes"], json!([{"id": 1, "role": "leader"}, {"id": 2, "role": "follower"}]));
}

#[test]
fn object_fields_and_compare_follow_kube() {
    let object = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"empty": {}, "list": [1, 2], "nothing": null}});
    let fields = object_fields(&object, &BuiltinShape).unwrap();
    assert_eq!(
        fields.to_fields_v1().to_string(),
        r#"{"f:metadata":{"f:labels":{"f:a":{}}},"f:spec":{"f:empty":{},"f:list":{},"f:nothing":{}}}"#
    );
    let comparison = compare(
        &json!({"data": {"a": "1", "b": "2"}}),
        &json!({"data": {"a": "9", "c": "3"}, "x": {"y": 1}}),
        &BuiltinShape,
    );
    assert_eq!(comparison.modified.to_fields_v1().to_string(), r#"{"f:data":{"f:a":{}}}"#);
    assert_eq!(comparison.added.to_fields_v1().to_string(), r#"{"f:data":{"f:c":{}},"f:x":{".":{},"f:y":{}}}"#);
    assert_eq!(comparison.removed.to_fields_v1().to_string(), r#"{"f:data":{"f:b":{}}}"#);
}

#[test]
fn created_fields_v1_is_what_compare_finds_added_less_reset_and_stripped() {
    let schema = json!({"type": "object", "properties": {
        "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": {
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic"},
            "nodes": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
                "items": {"type": "object", "properties": {"id": {"type": "integer"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
        }},
        "status": {"type": "object"}
    }});
    let components = Map::new();
    let schema_shape = SchemaShape::new(&schema, &components).with_fallback(&BuiltinShape);
    let objects = [
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"value": "x"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "a", "namespace": "default", "uid": "u", "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app": "web"}, "annotations": {}, "finalizers": ["example.com/a", "example.com/b"],
            "ownerReferences": [{"uid": "1", "name": "o", "kind": "K", "apiVersion": "v1"}],
            "generateName": "a-"
        }, "data": {}, "binaryData": null}),
        json!({"metadata": {}, "status": {"phase": "Active"}, "x": []}),
        deployment(json!([
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}, {"containerPort": 81, "protocol": "UDP"}],
             "env": [{"name": "A", "value": "1"}]},
            {"name": "b", "args": ["x", "y"], "env": [{"name": "D"}, {"name": "D"}]}
        ])),
        deployment(json!([{"image": "no-name"}])),
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "finalizers": []},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "nodes": [{"id": 1, "role": "r"}, {"id": 2}],
                     "tags": ["t1", "t2"], "free": {"deep": {"er": [1, {"a": 1}]}}},
            "status": {"ready": true}}),
    ];
    let resets: [&[&[&str]]; 3] = [&[], MAIN_RESOURCE_RESET_FIELDS, &[&["spec"], &["metadata"]]];
    for object in &objects {
        for shape in [&BuiltinShape as &dyn Shape, &schema_shape] {
            for reset_fields in resets {
                let reset = WriteContext { reset_fields, ..writer("m", T1) }.reset_set();
                let empty = json!({});
                let expected = compare(&empty, object, shape).excluding(&reset).added.difference(stripped_fields());
                let created = fields::created_fields_v1(object, shape, &reset, stripped_fields());
                // As text: the key order is kube's too.
                assert_eq!(
                    created.to_string(),
                    expected.to_fields_v1().to_string(),
                    "{object} with reset {reset_fields:?}"
                );
            }
        }
    }
}
