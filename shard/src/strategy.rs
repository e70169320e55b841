//! Per-resource storage behaviour: defaults on create, what an update may change, and
//! validation. Pure functions over JSON; the verbs call them, the registry picks them.

use crate::http::status::{ApiError, ApiResult};
use crate::registry::{NameRule, ResourceType, Strategy};
use base64::Engine;
use protocol::wellknown::{CLUSTER_ANNOTATION, LOGICAL_CLUSTER_FINALIZER, WORKSPACE_FINALIZER};
use protocol::{meta, names};
use serde_json::{json, Map, Value};

/// The finalizer kube puts in every namespace's `spec.finalizers`.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";
/// The subresource name under which the workspace scheduler writes spec and status in
/// one update (never reachable over HTTP: the request parser knows only real ones).
pub const SCHEDULER_WRITE: &str = "scheduler";
/// Workspace spec fields only the scheduler writes.
const WORKSPACE_SYSTEM_SPEC: [&str; 2] = ["cluster", "URL"];
/// The label kube keeps on every namespace, holding its name.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// ConfigMap and Secret payloads may not exceed 1 MiB, as in kube.
const DATA_BYTES_MAX: usize = 1 << 20;

/// Fills the server-owned metadata of a new object and applies the resource's defaults.
pub fn prepare_create(rt: &ResourceType, object: &mut Value, cluster: &str, now: &str, uid: &str) -> ApiResult<()> {
    let metadata = meta::metadata_mut(object);
    for field in ["resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"] {
        metadata.remove(field);
    }
    metadata.insert("uid".into(), Value::from(uid));
    metadata.insert("creationTimestamp".into(), Value::from(now));
    if tracks_generation(rt) {
        metadata.insert("generation".into(), Value::from(1));
    } else {
        metadata.remove("generation");
    }
    meta::set_annotation(object, CLUSTER_ANNOTATION, cluster);
    match rt.strategy {
        Strategy::Namespace => {
            let name = meta::name(object).unwrap_or_default().to_string();
            set_label(object, NAMESPACE_NAME_LABEL, &name);
            object["spec"] = json!({"finalizers": [NAMESPACE_FINALIZER]});
            object["status"] = json!({"phase": "Active"});
        }
        Strategy::Secret => fold_string_data(object)?,
        Strategy::LogicalCluster => {
            let mut finalizers = meta::finalizers(object);
            if !finalizers.iter().any(|f| f == LOGICAL_CLUSTER_FINALIZER) {
                finalizers.push(LOGICAL_CLUSTER_FINALIZER.to_string());
                meta::set_finalizers(object, &finalizers);
            }
            let initializers = object.pointer("/spec/initializers").cloned().unwrap_or_else(|| json!([]));
            let ready = initializers.as_array().is_none_or(Vec::is_empty);
            object["status"] = json!({
                "phase": if ready { "Ready" } else { "Initializing" },
                "initializers": initializers,
            });
        }
        Strategy::Workspace => {
            let mut finalizers = meta::finalizers(object);
            if !finalizers.iter().any(|f| f == WORKSPACE_FINALIZER) {
                finalizers.push(WORKSPACE_FINALIZER.to_string());
                meta::set_finalizers(object, &finalizers);
            }
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                for field in WORKSPACE_SYSTEM_SPEC {
                    spec.remove(field);
                }
            }
            // Admission fills status.initializers from the workspace type.
            let initializers = object.pointer("/status/initializers").cloned().unwrap_or_else(|| json!([]));
            object["status"] = json!({"phase": "Scheduling", "initializers": initializers});
        }
        Strategy::CustomResourceDefinition => crate::crd::status::prepare_create(object, now),
        Strategy::CustomResource | Strategy::EventsV1 => crate::conversion::to_storage(rt, object),
        Strategy::ApiExport | Strategy::ApiResourceSchema | Strategy::ApiBinding | Strategy::ApiExportEndpointSlice => {
            crate::apis::prepare_create(rt, object)
        }
        Strategy::Generic | Strategy::AccessReview => {}
    }
    Ok(())
}

/// Carries server-owned state from `old` into an update and keeps fields the request may
/// not change. `subresource` is `status`, `finalize` or `None` for the main resource.
pub fn prepare_update(rt: &ResourceType, old: &Value, new: &mut Value, subresource: Option<&str>) -> ApiResult<()> {
    check_uid(old, new)?;
    match subresource {
        Some(SCHEDULER_WRITE) => {}
        Some("status") => {
            // The status writer's field ownership is the one thing of metadata it changes.
            let managed = new.pointer("/metadata/managedFields").cloned();
            *new = with_field(old, "status", new.get("status").cloned());
            match managed {
                Some(managed) => meta::metadata_mut(new).insert("managedFields".into(), managed),
                None => meta::metadata_mut(new).remove("managedFields"),
            };
        }
        Some("finalize") => {
            let finalizers = new.pointer("/spec/finalizers").cloned();
            let mut merged = old.clone();
            // Namespace specs hold only finalizers.
            merged["spec"] = json!({"finalizers": finalizers.unwrap_or_else(|| json!([]))});
            *new = merged;
        }
        _ => {
            if rt.has_subresource("status") {
                *new = with_field(new, "status", old.get("status").cloned());
            }
            if rt.strategy == Strategy::Namespace {
                *new = with_field(new, "spec", old.get("spec").cloned());
                // kube keeps this label equal to the name whatever a write says.
                let name = meta::name(old).unwrap_or_default().to_string();
                set_label(new, NAMESPACE_NAME_LABEL, &name);
            }
            if rt.strategy == Strategy::Secret {
                fold_string_data(new)?;
            }
            if rt.strategy == Strategy::Workspace {
                keep_workspace_placement(old, new)?;
                keep_annotation(old, new, protocol::wellknown::SCHEDULED_CLUSTER_ANNOTATION);
                keep_annotation(old, new, protocol::wellknown::SCHEDULED_SHARD_ANNOTATION);
                keep_annotation(old, new, protocol::wellknown::OWNER_ANNOTATION);
            }
        }
    }
    copy_system_metadata(old, new);
    crate::apis::prepare_update(rt, old, new, subresource);
    if rt.strategy == Strategy::LogicalCluster {
        keep_annotation(old, new, protocol::wellknown::PATH_ANNOTATION);
        // The owner is a grant (see `tenancy::owner`): nobody edits themselves into it.
        keep_annotation(old, new, protocol::wellknown::OWNER_ANNOTATION);
    }
    if rt.strategy == Strategy::LogicalCluster && subresource == Some("status") {
        promote_initialized(new);
    }
    if rt.strategy == Strategy::CustomResourceDefinition {
        crate::crd::status::prepare_update(old, new, &crate::storage::now(), subresource == Some("status"));
    }
    if matches!(rt.strategy, Strategy::CustomResource | Strategy::EventsV1) {
        crate::conversion::to_storage(rt, new);
    }
    if tracks_generation(rt) {
        let generation = meta::generation(old).max(1);
        let bumped = if spec_changed(old, new) { generation + 1 } else { generation };
        meta::metadata_mut(new).insert("generation".into(), Value::from(bumped));
    } else {
        meta::metadata_mut(new).remove("generation");
    }
    Ok(())
}

/// A workspace's type cannot change, and where it was scheduled is the scheduler's to say.
fn keep_workspace_placement(old: &Value, new: &mut Value) -> ApiResult<()> {
    let old_type = old.pointer("/spec/type");
    if new.pointer("/spec/type").is_some_and(|t| Some(t) != old_type) {
        let name = meta::name(old).unwrap_or_default();
        let cause = ("spec.type".to_string(), "Invalid value: field is immutable".to_string());
        return Err(ApiError::invalid("Workspace", "tenancy.kcp.io", name, &[cause]));
    }
    let spec = new.as_object_mut().map(|m| m.entry("spec").or_insert_with(|| json!({})));
    if let Some(spec) = spec.and_then(Value::as_object_mut) {
        for field in std::iter::once("type").chain(WORKSPACE_SYSTEM_SPEC) {
            match old.pointer(&format!("/spec/{field}")) {
                Some(value) => spec.insert(field.into(), value.clone()),
                None => spec.remove(field),
            };
        }
    }
    Ok(())
}

/// Keeps an annotation as it was (a LogicalCluster's canonical path is fixed at birth).
fn keep_annotation(old: &Value, new: &mut Value, key: &str) {
    match meta::annotations(old).get(key) {
        Some(value) => meta::set_annotation(new, key, value),
        None => {
            if let Some(annotations) = meta::metadata_mut(new).get_mut("annotations").and_then(Value::as_object_mut) {
                annotations.remove(key);
            }
        }
    }
}

/// A LogicalCluster whose last initializer was removed is Ready.
fn promote_initialized(object: &mut Value) {
    let pending = object.pointer("/status/initializers").and_then(Value::as_array).is_some_and(|i| !i.is_empty());
    let initializing = object.pointer("/status/phase").and_then(Value::as_str) == Some("Initializing");
    if initializing && !pending {
        object["status"]["phase"] = Value::from("Ready");
    }
}

fn check_uid(old: &Value, new: &Value) -> ApiResult<()> {
    match (meta::meta_str(new, "uid"), meta::meta_str(old, "uid")) {
        (Some(requested), Some(actual)) if !requested.is_empty() && requested != actual => Err(ApiError::conflict(
            &protocol::gvr::GroupResource::new("", "objects"),
            meta::name(old).unwrap_or_default(),
            &format!("Precondition failed: UID in precondition: {requested}, UID in object meta: {actual}"),
        )),
        _ => Ok(()),
    }
}

/// Fields an update can never change, whatever the body says.
fn copy_system_metadata(old: &Value, new: &mut Value) {
    let old_meta = meta::metadata(old).cloned().unwrap_or_default();
    let new_meta = meta::metadata_mut(new);
    for field in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "namespace", "name"] {
        match old_meta.get(field) {
            Some(value) => new_meta.insert(field.into(), value.clone()),
            None => new_meta.remove(field),
        };
    }
    if let Some(cluster) = old_meta.get("annotations").and_then(|a| a.get(CLUSTER_ANNOTATION)).and_then(Value::as_str) {
        meta::set_annotation(new, CLUSTER_ANNOTATION, cluster);
    }
}

/// Whether objects of `rt` carry `metadata.generation`: kube sets it for kinds with a
/// spec that controllers act on (custom resources, CRDs, kcp's kinds), not for ConfigMaps,
/// Secrets, RBAC and the like.
fn tracks_generation(rt: &ResourceType) -> bool {
    rt.custom.is_some() || rt.strategy == Strategy::CustomResourceDefinition || rt.group.ends_with(".kcp.io")
}

/// Whether anything outside `metadata` and `status` differs — kube's rule for bumping
/// `metadata.generation` on custom resources, applied to every resource here.
fn spec_changed(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| -> Map<String, Value> {
        let mut map = v.as_object().cloned().unwrap_or_default();
        map.remove("metadata");
        map.remove("status");
        map
    };
    strip(old) != strip(new)
}

fn with_field(base: &Value, field: &str, value: Option<Value>) -> Value {
    let mut out = base.clone();
    if let Some(map) = out.as_object_mut() {
        match value {
            Some(v) => map.insert(field.into(), v),
            None => map.remove(field),
        };
    }
    out
}

fn set_label(object: &mut Value, key: &str, value: &str) {
    let metadata = meta::metadata_mut(object);
    let labels = metadata.entry("labels").or_insert_with(|| Value::Object(Map::new()));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(key.into(), Value::from(value));
    }
}

/// Secrets: `stringData` is write-only sugar; its entries become base64 `data`.
fn fold_string_data(object: &mut Value) -> ApiResult<()> {
    let Some(map) = object.as_object_mut() else { return Ok(()) };
    if !map.contains_key("type") {
        map.insert("type".into(), Value::from("Opaque"));
    }
    let string_data = map.remove("stringData");
    let data = map.entry("data").or_insert_with(|| Value::Object(Map::new()));
    let Some(data) = data.as_object_mut() else {
        return Err(ApiError::bad_request("Secret.data must be an object of base64 strings"));
    };
    for (key, value) in data.iter() {
        let text = value.as_str().unwrap_or_default();
        if base64::engine::general_purpose::STANDARD.decode(text).is_err() {
            return Err(ApiError::bad_request(format!(
                "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data in data[{key:?}]"
            )));
        }
    }
    if let Some(Value::Object(strings)) = string_data {
        for (key, value) in strings {
            let text = value.as_str().unwrap_or_default();
            data.insert(key, Value::from(base64::engine::general_purpose::STANDARD.encode(text)));
        }
    }
    Ok(())
}

/// Validates an object for its resource (an update also gets the stored object); returns
/// (field path, message) pairs.
pub fn validate(rt: &ResourceType, old: Option<&Value>, object: &Value) -> Vec<(String, String)> {
    let mut causes = Vec::new();
    let name = meta::name(object).unwrap_or_default();
    for message in name_errors(rt.names, name) {
        causes.push(("metadata.name".into(), invalid(name, &message)));
    }
    if let Some(ns) = meta::namespace(object) {
        for message in names::dns1123_label(ns) {
            causes.push(("metadata.namespace".into(), invalid(ns, &message)));
        }
    }
    for (field, message) in names::validate_labels(&meta::labels(object)) {
        causes.push((format!("metadata.labels{field}"), message));
    }
    for (field, message) in names::validate_annotations(&meta::annotations(object)) {
        causes.push((format!("metadata.annotations{field}"), message));
    }
    validate_owner_references(object, &mut causes);
    if let Some(old) = old {
        validate_immutable(rt, old, object, &mut causes);
    }
    if rt.custom.is_none() {
        causes.extend(crate::kinds::validate(&rt.group, &rt.kind, object));
    }
    match rt.strategy {
        Strategy::Generic if rt.kind == "ConfigMap" => validate_data(object, &["data", "binaryData"], &mut causes),
        Strategy::Secret => validate_data(object, &["data"], &mut causes),
        Strategy::LogicalCluster if name != protocol::types::LOGICAL_CLUSTER_NAME => causes.push((
            "metadata.name".into(),
            invalid(
                name,
                "a LogicalCluster object must be named \"cluster\": it describes the logical cluster it is stored in",
            ),
        )),
        Strategy::CustomResourceDefinition => causes.extend(crate::crd::status::validate(old, object)),
        Strategy::CustomResource => causes.extend(crate::crd::objects::validate(rt, object)),
        Strategy::ApiExport | Strategy::ApiResourceSchema | Strategy::ApiBinding | Strategy::ApiExportEndpointSlice => {
            causes.extend(crate::apis::validate(rt, old, object))
        }
        _ => {}
    }
    causes
}

/// Fields an update may not change: the payload of an `immutable` ConfigMap or Secret (and
/// the flag itself), a Secret's type, a binding's roleRef.
fn validate_immutable(rt: &ResourceType, old: &Value, new: &Value, causes: &mut Vec<(String, String)>) {
    let immutable_payload = match rt.kind.as_str() {
        "ConfigMap" if rt.group.is_empty() => &["data", "binaryData"][..],
        "Secret" if rt.group.is_empty() => &["data"][..],
        _ => &[][..],
    };
    if !immutable_payload.is_empty() && old.get("immutable").and_then(Value::as_bool) == Some(true) {
        for field in immutable_payload {
            if old.get(*field) != new.get(*field) {
                causes.push(((*field).into(), "Forbidden: field is immutable when `immutable` is set".into()));
            }
        }
        if new.get("immutable").and_then(Value::as_bool) != Some(true) {
            causes.push(("immutable".into(), "Forbidden: field is immutable when `immutable` is set".into()));
        }
    }
    if rt.kind == "Secret" && rt.group.is_empty() && old.get("type") != new.get("type") {
        let value = new.get("type").and_then(Value::as_str).unwrap_or_default();
        causes.push(("type".into(), invalid(value, "field is immutable")));
    }
    if matches!(rt.kind.as_str(), "RoleBinding" | "ClusterRoleBinding") && old.get("roleRef") != new.get("roleRef") {
        causes.push(("roleRef".into(), "Invalid value: the roleRef: cannot change roleRef".into()));
    }
}

/// kube's `ValidateOwnerReferences`: every reference names apiVersion, kind, name and uid,
/// and at most one is the controller.
fn validate_owner_references(object: &Value, causes: &mut Vec<(String, String)>) {
    let Some(references) = object.pointer("/metadata/ownerReferences").and_then(Value::as_array) else { return };
    let mut controllers = 0;
    for reference in references {
        let text = |field: &str| reference.get(field).and_then(Value::as_str).unwrap_or_default();
        for (field, what) in [("apiVersion", "version"), ("kind", "kind"), ("name", "name"), ("uid", "uid")] {
            if text(field).is_empty() {
                causes.push((
                    format!("metadata.ownerReferences.{field}"),
                    invalid("", &format!("{what} must not be empty")),
                ));
            }
        }
        if reference.get("controller").and_then(Value::as_bool) == Some(true) {
            controllers += 1;
        }
    }
    if controllers > 1 {
        causes.push((
            "metadata.ownerReferences".into(),
            format!("Invalid value: {controllers}: Only one reference can have Controller set to true"),
        ));
    }
}

fn invalid(value: &str, message: &str) -> String {
    format!("Invalid value: {value:?}: {message}")
}

/// Messages for an invalid object name under a naming rule.
pub fn name_errors(rule: NameRule, name: &str) -> Vec<String> {
    if name.is_empty() {
        return vec!["name or generateName is required".into()];
    }
    match rule {
        NameRule::Subdomain => names::dns1123_subdomain(name),
        NameRule::Label => names::dns1123_label(name),
        NameRule::PathSegment => path_segment_errors(name),
    }
}

fn path_segment_errors(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"].iter().filter(|bad| name.contains(*bad)).map(|bad| format!("may not contain '{bad}'")).collect()
}

fn validate_data(object: &Value, fields: &[&str], causes: &mut Vec<(String, String)>) {
    let mut total = 0;
    for field in fields {
        let Some(map) = object.get(*field).and_then(Value::as_object) else { continue };
        for (key, value) in map {
            total += key.len() + value.as_str().map_or(0, str::len);
            for message in names::config_map_key(key) {
                causes.push((format!("{field}[{key}]"), invalid(key, &message)));
            }
        }
    }
    if total > DATA_BYTES_MAX {
        causes.push((fields[0].into(), format!("Too long: must have at most {DATA_BYTES_MAX} bytes")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn rt(resource: &str) -> std::sync::Arc<ResourceType> {
        let registry = Registry::builtin();
        let row = registry.all().iter().find(|r| r.resource == resource).cloned();
        row.expect("row exists")
    }

    #[test]
    fn namespace_create_sets_phase_finalizer_and_label() {
        let mut ns = json!({"metadata": {"name": "a", "resourceVersion": "4"}});
        prepare_create(&rt("namespaces"), &mut ns, "c1", "2026-01-01T00:00:00Z", "u1").unwrap();
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(ns["spec"]["finalizers"][0], "kubernetes");
        assert_eq!(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "a");
        assert_eq!(ns["metadata"]["annotations"][CLUSTER_ANNOTATION], "c1");
        assert!(ns["metadata"].get("resourceVersion").is_none());
    }

    #[test]
    fn secrets_fold_string_data_and_reject_bad_base64() {
        let mut secret = json!({"metadata": {"name": "s"}, "stringData": {"k": "hi"}});
        prepare_create(&rt("secrets"), &mut secret, "c", "t", "u").unwrap();
        assert_eq!(secret["data"]["k"], "aGk=");
        assert_eq!(secret["type"], "Opaque");
        assert!(secret.get("stringData").is_none());
        let mut bad = json!({"metadata": {"name": "s"}, "data": {"k": "%%%"}});
        assert_eq!(prepare_create(&rt("secrets"), &mut bad, "c", "t", "u").unwrap_err().code, 400);
    }

    #[test]
    fn updates_keep_system_fields_and_bump_generation_on_spec_changes() {
        let old = json!({"metadata": {"name": "l", "uid": "u", "creationTimestamp": "t", "generation": 3}, "spec": {"a": 1}, "status": {"s": 1}});
        let cases = [
            (json!({"metadata": {"name": "l"}, "spec": {"a": 2}, "status": {"s": 9}}), None, 4, json!({"s": 1})),
            (json!({"metadata": {"name": "l", "labels": {"x": "y"}}, "spec": {"a": 1}}), None, 3, json!({"s": 1})),
            (
                json!({"metadata": {"name": "l"}, "spec": {"a": 7}, "status": {"s": 2}}),
                Some("status"),
                3,
                json!({"s": 2}),
            ),
        ];
        for (mut new, sub, generation, status) in cases {
            prepare_update(&rt("logicalclusters"), &old, &mut new, sub).unwrap();
            assert_eq!(new["metadata"]["uid"], "u");
            assert_eq!(new["metadata"]["generation"], generation, "{new}");
            assert_eq!(new["status"], status);
        }
        let mut other_uid = json!({"metadata": {"name": "l", "uid": "zzz"}});
        assert_eq!(prepare_update(&rt("logicalclusters"), &old, &mut other_uid, None).unwrap_err().code, 409);
    }

    #[test]
    fn validation_reports_field_paths() {
        let cases = [
            ("configmaps", json!({"metadata": {"name": "Bad_Name"}}), vec!["metadata.name"]),
            ("configmaps", json!({"metadata": {"name": "ok"}, "data": {"bad key": "v"}}), vec!["data[bad key]"]),
            ("namespaces", json!({"metadata": {"name": "a.b"}}), vec!["metadata.name"]),
            ("roles", json!({"metadata": {"name": "system:x"}}), vec![]),
            ("logicalclusters", json!({"metadata": {"name": "other"}}), vec!["metadata.name"]),
        ];
        for (resource, object, fields) in cases {
            let got: Vec<String> = validate(&rt(resource), None, &object).into_iter().map(|(f, _)| f).collect();
            assert_eq!(got, fields, "{resource} {object}");
        }
    }
}
