//! The generic steps every object takes on its way to storage ([`prepare_create`],
//! [`prepare_update`], [`validate`]), around the row's
//! [`Strategy`](crate::registry::strategy::Strategy), and the strategies of the plain
//! Kubernetes kinds (namespaces, ConfigMaps, Secrets, events.k8s.io Events), which
//! [`register`] puts into the table. The features (tenancy, CRDs, APIs, bindings,
//! authorization) implement the trait in their own modules and register at start-up:
//! this module imports none of them.

use crate::namespace_defaults;
use crate::registry::strategy::Strategy;
use crate::registry::{NameRule, Registry, ResourceType};
use crate::rest::status::{ApiError, ApiResult};
use base64::Engine;
use protocol::wellknown::CLUSTER_ANNOTATION;
use protocol::{meta, names};
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub use crate::registry::strategy::{Causes, Committed};

/// Gives the plain Kubernetes kinds of the table their strategies.
pub fn register(registry: &mut Registry) {
    registry.set_strategy("", "namespaces", Arc::new(Namespace));
    registry.set_strategy("", "configmaps", Arc::new(ConfigMap { root_ca: None }));
    registry.set_strategy("", "serviceaccounts", Arc::new(ServiceAccount));
    registry.set_strategy("", "secrets", Arc::new(Secret));
    registry.set_strategy("events.k8s.io", "events", Arc::new(EventsV1));
}

/// The built-in table with the plain Kubernetes kinds' strategies and no feature's: what
/// the storage layer alone serves (its in-process tests use it).
pub fn kube_registry() -> Registry {
    let mut registry = Registry::builtin();
    register(&mut registry);
    registry
}

/// The finalizer kube puts in every namespace's `spec.finalizers`.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";
/// A write through this pseudo-subresource skips the main resource's and the status
/// subresource's field rules (never reachable over HTTP: the request parser knows only
/// real subresources). Controllers that own both spec and status of an object use it.
pub const UNRESTRICTED_WRITE: &str = "unrestricted";
/// The label kube keeps on every namespace, holding its name.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// ConfigMap and Secret payloads may not exceed 1 MiB, as in kube.
const DATA_BYTES_MAX: usize = 1 << 20;
/// Namespaces kube refuses to delete (the whole logical cluster still goes at once).
const PROTECTED_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// Fills the server-owned metadata of a new object and applies the resource's defaults.
pub fn prepare_create(rt: &ResourceType, object: &mut Value, cluster: &str, now: &str, uid: &str) -> ApiResult<()> {
    let metadata = meta::metadata_mut(object);
    // A new object rarely carries any of these; scanning its few keys once is cheaper than
    // hashing four names for removals that find nothing.
    let server_set = ["resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"];
    if metadata.keys().any(|key| server_set.contains(&key.as_str())) {
        for field in server_set {
            metadata.remove(field);
        }
    }
    metadata.insert("uid".into(), Value::from(uid));
    metadata.insert("creationTimestamp".into(), Value::from(now));
    if tracks_generation(rt) {
        metadata.insert("generation".into(), Value::from(1));
    } else {
        metadata.remove("generation");
    }
    meta::set_annotation(object, CLUSTER_ANNOTATION, cluster);
    rt.strategy.prepare_create(rt, object, now)?;
    rt.strategy.to_storage(rt, object);
    Ok(())
}

/// Carries server-owned state from `old` into an update and keeps fields the request may
/// not change. `subresource` is `status`, `finalize`, [`UNRESTRICTED_WRITE`] or `None`
/// for the main resource.
pub fn prepare_update(rt: &ResourceType, old: &Value, new: &mut Value, subresource: Option<&str>) -> ApiResult<()> {
    check_uid(old, new)?;
    match subresource {
        Some(UNRESTRICTED_WRITE) => {}
        Some("status") => {
            // The status writer's field ownership is the one thing of metadata it changes.
            let managed = new.get("metadata").and_then(|m| m.get("managedFields")).cloned();
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
        }
    }
    copy_system_metadata(old, new);
    rt.strategy.prepare_update(rt, old, new, subresource)?;
    rt.strategy.to_storage(rt, new);
    if tracks_generation(rt) {
        let generation = meta::generation(old).max(1);
        let bumped = if spec_changed(old, new) { generation + 1 } else { generation };
        meta::metadata_mut(new).insert("generation".into(), Value::from(bumped));
    } else {
        meta::metadata_mut(new).remove("generation");
    }
    Ok(())
}

/// Keeps an annotation as it was (a LogicalCluster's canonical path is fixed at birth).
pub fn keep_annotation(old: &Value, new: &mut Value, key: &str) {
    match meta::annotations(old).get(key) {
        Some(value) => meta::set_annotation(new, key, value),
        None => {
            if let Some(annotations) = meta::metadata_mut(new).get_mut("annotations").and_then(Value::as_object_mut) {
                annotations.remove(key);
            }
        }
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
    rt.strategy.tracks_generation()
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

pub fn set_label(object: &mut Value, key: &str, value: &str) {
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
/// (field path, message) pairs: the generic rules, then the strategy's.
pub fn validate(rt: &ResourceType, old: Option<&Value>, object: &Value) -> Causes {
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
    for (field, message) in names::validate_labels(&meta::string_map_ref(object, "labels")) {
        causes.push((format!("metadata.labels{field}"), message));
    }
    for (field, message) in names::validate_annotations(&meta::string_map_ref(object, "annotations")) {
        causes.push((format!("metadata.annotations{field}"), message));
    }
    validate_owner_references(object, &mut causes);
    if let Some(old) = old {
        validate_immutable(rt, old, object, &mut causes);
    }
    if rt.custom.is_none() {
        causes.extend(crate::kinds::validate(&rt.group, &rt.kind, object));
    }
    causes.extend(rt.strategy.validate(rt, old, object));
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
    let Some(references) =
        meta::metadata(object).and_then(|m| meta::get(m, "ownerReferences")).and_then(Value::as_array)
    else {
        return;
    };
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

/// kube's `Invalid value: "x": message`.
pub fn invalid(value: &str, message: &str) -> String {
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
        let Some(map) = meta::field(object, field).and_then(Value::as_object) else { continue };
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

/// ConfigMaps: `data` and `binaryData` keys and size are checked.
#[derive(Debug, Default)]
pub struct ConfigMap {
    /// The installation's CA, served in every namespace as `kube-root-ca.crt` (kube's
    /// root-CA publisher); `None` serves no such ConfigMap.
    pub root_ca: Option<Arc<str>>,
}

impl Strategy for ConfigMap {
    fn validate(&self, _rt: &ResourceType, _old: Option<&Value>, object: &Value) -> Causes {
        let mut causes = Vec::new();
        validate_data(object, &["data", "binaryData"], &mut causes);
        causes
    }

    fn implicit_names(&self) -> &'static [&'static str] {
        match self.root_ca {
            Some(_) => &[namespace_defaults::ROOT_CA_CONFIG_MAP],
            None => &[],
        }
    }

    fn implicit(&self, cluster: &str, namespace: &Value, name: &str) -> Option<Value> {
        let ca = self.root_ca.as_deref().filter(|_| name == namespace_defaults::ROOT_CA_CONFIG_MAP)?;
        Some(namespace_defaults::root_ca_config_map(cluster, namespace, ca))
    }
}

/// ServiceAccounts: every namespace has a `default` one (kube's service-account
/// controller).
#[derive(Debug, Default)]
pub struct ServiceAccount;

impl Strategy for ServiceAccount {
    fn implicit_names(&self) -> &'static [&'static str] {
        &[namespace_defaults::DEFAULT_SERVICE_ACCOUNT]
    }

    fn implicit(&self, cluster: &str, namespace: &Value, name: &str) -> Option<Value> {
        (name == namespace_defaults::DEFAULT_SERVICE_ACCOUNT)
            .then(|| namespace_defaults::default_service_account(cluster, namespace))
    }
}

/// Secrets: `stringData` folds into `data`, whose keys and size are checked.
#[derive(Debug, Default)]
pub struct Secret;

impl Strategy for Secret {
    fn prepare_create(&self, _rt: &ResourceType, object: &mut Value, _now: &str) -> ApiResult<()> {
        fold_string_data(object)
    }

    fn prepare_update(&self, _rt: &ResourceType, _old: &Value, new: &mut Value, sub: Option<&str>) -> ApiResult<()> {
        match sub {
            None => fold_string_data(new),
            Some(_) => Ok(()),
        }
    }

    fn validate(&self, _rt: &ResourceType, _old: Option<&Value>, object: &Value) -> Causes {
        let mut causes = Vec::new();
        validate_data(object, &["data"], &mut causes);
        causes
    }
}

/// Namespaces: phase, the `kubernetes` spec finalizer that holds a deletion until the
/// content is gone, the name label, and the namespaces that may not be deleted.
#[derive(Debug, Default)]
pub struct Namespace;

impl Strategy for Namespace {
    fn verbs(&self) -> &'static [&'static str] {
        // kube's namespace storage has no deletecollection either.
        &["create", "delete", "get", "list", "patch", "update", "watch"]
    }

    fn prepare_create(&self, _rt: &ResourceType, object: &mut Value, _now: &str) -> ApiResult<()> {
        let name = meta::name(object).unwrap_or_default().to_string();
        set_label(object, NAMESPACE_NAME_LABEL, &name);
        object["spec"] = json!({"finalizers": [NAMESPACE_FINALIZER]});
        object["status"] = json!({"phase": "Active"});
        Ok(())
    }

    fn prepare_update(&self, _rt: &ResourceType, old: &Value, new: &mut Value, sub: Option<&str>) -> ApiResult<()> {
        if sub.is_none() {
            *new = with_field(new, "spec", old.get("spec").cloned());
            // kube keeps this label equal to the name whatever a write says.
            let name = meta::name(old).unwrap_or_default().to_string();
            set_label(new, NAMESPACE_NAME_LABEL, &name);
        }
        Ok(())
    }

    fn check_delete(&self, rt: &ResourceType, object: &Value, deleting: bool) -> ApiResult<()> {
        let name = meta::name(object).unwrap_or_default();
        if PROTECTED_NAMESPACES.contains(&name) {
            return Err(ApiError::forbidden(format!(
                "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
            )));
        }
        if deleting && self.deletion_held(object) {
            return Err(ApiError::conflict(
                &rt.group_resource(),
                name,
                "The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.",
            ));
        }
        Ok(())
    }

    fn deletion_held(&self, object: &Value) -> bool {
        object.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
    }

    fn mark_deleting(&self, object: &mut Value) {
        // A status that is not an object (stored through the status subresource) is
        // replaced rather than indexed into.
        let Some(map) = object.as_object_mut() else { return };
        let status = map.entry("status").or_insert_with(|| json!({}));
        if !status.is_object() {
            *status = json!({});
        }
        status["phase"] = Value::from("Terminating");
    }
}

/// events.k8s.io/v1 Events: stored as the core/v1 Events they are (one object, two APIs).
#[derive(Debug, Default)]
pub struct EventsV1;

impl Strategy for EventsV1 {
    fn converts(&self) -> bool {
        true
    }

    fn to_storage(&self, _rt: &ResourceType, object: &mut Value) {
        if object.get("apiVersion").and_then(Value::as_str) != Some("v1") {
            *object = protocol::events::core_from_v1(object);
        }
    }

    fn to_version(&self, _rt: &ResourceType, object: &mut Value) {
        let kind = object.get("kind").and_then(Value::as_str);
        if kind == Some("Event") && object.get("apiVersion").and_then(Value::as_str) == Some("v1") {
            *object = protocol::events::v1_from_core(object);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(resource: &str) -> std::sync::Arc<ResourceType> {
        let mut registry = kube_registry();
        // A kind with a status subresource that tracks generations, as kcp's do.
        let widgets = crate::registry::builtin("example.com", "v1", "widgets", "widget", "Widget", false, "");
        registry.add_rows(vec![ResourceType { subresources: vec!["status".into()], ..widgets }]);
        registry.set_strategy("example.com", "widgets", Arc::new(crate::registry::strategy::WithGeneration));
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
            prepare_update(&rt("widgets"), &old, &mut new, sub).unwrap();
            assert_eq!(new["metadata"]["uid"], "u");
            assert_eq!(new["metadata"]["generation"], generation, "{new}");
            assert_eq!(new["status"], status);
        }
        let mut other_uid = json!({"metadata": {"name": "l", "uid": "zzz"}});
        assert_eq!(prepare_update(&rt("widgets"), &old, &mut other_uid, None).unwrap_err().code, 409);
    }

    #[test]
    fn validation_reports_field_paths() {
        let cases = [
            ("configmaps", json!({"metadata": {"name": "Bad_Name"}}), vec!["metadata.name"]),
            ("configmaps", json!({"metadata": {"name": "ok"}, "data": {"bad key": "v"}}), vec!["data[bad key]"]),
            ("namespaces", json!({"metadata": {"name": "a.b"}}), vec!["metadata.name"]),
            ("roles", json!({"metadata": {"name": "system:x"}}), vec![]),
        ];
        for (resource, object, fields) in cases {
            let got: Vec<String> = validate(&rt(resource), None, &object).into_iter().map(|(f, _)| f).collect();
            assert_eq!(got, fields, "{resource} {object}");
        }
    }
}
