//! Object operations over the store, shared by the REST verbs and the controllers.
//!
//! This is kube-apiserver's "registry store": create, read, guaranteed update and the
//! deletion protocol (finalizers, deletionTimestamp, spec finalizers such as namespaces',
//! the garbage collector's finalizers from the cascading policy in [`propagation`]), with
//! resource-specific steps taken from the [`Strategy`](crate::registry::strategy::Strategy) each
//! row carries. It works on the narrow [`Core`] (store and table) and names no feature.
//! HTTP concerns (parameters, bodies, formats) stay in [`crate::verbs`].

use crate::namespace_defaults::IMPLICIT_RV;
use crate::objects;
use crate::registry::Core;
use crate::registry::ResourceType;
use crate::rest::status::{success_status, ApiError, ApiResult};
use crate::strategy::{self, Committed, NAMESPACE_FINALIZER};
use protocol::meta;
use serde_json::{json, Value};
use store::{Precondition, StoreError};

pub mod propagation;

pub use propagation::{Cascade, Propagation};

/// Where an object lives: logical cluster, namespace (for namespaced resources) and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef<'a> {
    /// Logical cluster name.
    pub cluster: &'a str,
    /// Namespace, for namespaced resources.
    pub namespace: Option<&'a str>,
    /// Object name.
    pub name: &'a str,
}

impl ObjectRef<'_> {
    fn key(&self, rt: &ResourceType) -> String {
        objects::key(rt, self.cluster, self.namespace, self.name)
    }
}

/// Options common to writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Validate and compute the result without storing it (`dryRun=All`).
    pub dry_run: bool,
}

/// The outcome of a delete.
#[derive(Debug, Clone)]
pub enum Deleted {
    /// The object is gone; this is what kube answers (the object or a success Status).
    Gone(Value),
    /// The object waits for finalizers; it now carries a deletionTimestamp.
    Pending(Value),
}

/// kube's message for a stale resourceVersion.
const STALE: &str = "the object has been modified; please apply your changes to the latest version and try again";

/// Translates a store error about one object into the Status kube would answer.
pub fn object_error(rt: &ResourceType, name: &str, error: StoreError) -> ApiError {
    match error {
        StoreError::NotFound => ApiError::not_found(&rt.group_resource(), name),
        StoreError::AlreadyExists => ApiError::already_exists(&rt.group_resource(), name),
        StoreError::Conflict { .. } => ApiError::conflict(&rt.group_resource(), name, STALE),
        other => other.into(),
    }
}

/// The current object and its resourceVersion ([`IMPLICIT_RV`] for an object served in
/// every namespace but not stored).
pub fn get(core: &Core, rt: &ResourceType, at: &ObjectRef<'_>) -> ApiResult<(Value, u64)> {
    match core.store.get(at.key(rt).as_bytes()).map_err(ApiError::from)? {
        Some(stored) => Ok((objects::decode(&stored)?, stored.rv)),
        None => match implicit(core, rt, at)? {
            Some(object) => Ok((object, IMPLICIT_RV)),
            None => Err(ApiError::not_found(&rt.group_resource(), at.name)),
        },
    }
}

/// The implicit object at `at` (kube's controllers keep it in every namespace), when the
/// resource has one by that name and the namespace exists and is not terminating.
fn implicit(core: &Core, rt: &ResourceType, at: &ObjectRef<'_>) -> ApiResult<Option<Value>> {
    let Some(namespace) = at.namespace else { return Ok(None) };
    if !rt.strategy.implicit_names().contains(&at.name) {
        return Ok(None);
    }
    let namespaces = core.registry.namespaces();
    let ns_at = ObjectRef { cluster: at.cluster, namespace: None, name: namespace };
    let Some(stored) = core.store.get(ns_at.key(&namespaces).as_bytes()).map_err(ApiError::from)? else {
        return Ok(None);
    };
    let ns = objects::decode(&stored)?;
    if meta::is_deleting(&ns) {
        return Ok(None);
    }
    Ok(rt.strategy.implicit(at.cluster, &ns, at.name))
}

/// kube's controllers recreate a deleted `default` ServiceAccount (or root CA ConfigMap) at
/// once, as a new object with a new uid: clients waiting for the deletion (`kubectl
/// delete` does) see the old one gone. The new one is stored, so it keeps its uid.
async fn recreate_implicit(core: &Core, rt: &ResourceType, at: &ObjectRef<'_>) -> ApiResult<()> {
    let Some(mut fresh) = implicit(core, rt, at)? else { return Ok(()) };
    let uid = uuid::Builder::from_random_bytes(rand::random()).into_uuid().to_string();
    let metadata = meta::metadata_mut(&mut fresh);
    metadata.insert("uid".into(), Value::from(uid));
    metadata.insert("creationTimestamp".into(), Value::from(now()));
    metadata.remove("resourceVersion");
    match core.store.put(at.key(rt), objects::encode(&fresh)?, Precondition::MustNotExist).await {
        // Someone wrote it first: theirs stands.
        Ok(_) | Err(StoreError::AlreadyExists) => Ok(()),
        Err(e) => Err(object_error(rt, at.name, e)),
    }
}

/// The implicit objects of `namespaces` (stored namespace objects)
/// that nothing stored shadows: what a list adds to the stored items.
pub fn implicit_objects(core: &Core, rt: &ResourceType, cluster: &str, namespaces: &[Value]) -> ApiResult<Vec<Value>> {
    let mut objects = Vec::new();
    for ns in namespaces.iter().filter(|ns| !meta::is_deleting(ns)) {
        let namespace = meta::name(ns).unwrap_or_default();
        for name in rt.strategy.implicit_names() {
            let at = ObjectRef { cluster, namespace: Some(namespace), name };
            if core.store.get(at.key(rt).as_bytes()).map_err(ApiError::from)?.is_none() {
                objects.extend(rt.strategy.implicit(cluster, ns, name));
            }
        }
    }
    Ok(objects)
}

/// Now, as kube writes timestamps (RFC 3339, whole seconds, UTC).
pub fn now() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second()).map(|t| t.to_string()).unwrap_or_else(|_| now.to_string())
}

/// Creates an object that has passed body checks; fills server fields, validates, stores.
pub async fn create(
    core: &Core,
    rt: &ResourceType,
    cluster: &str,
    object: Value,
    options: WriteOptions,
) -> ApiResult<Value> {
    create_answered(core, rt, cluster, object, options).await.map(|created| created.object)
}

/// A created object, and its JSON when the write produced it on the way.
#[derive(Debug, Clone)]
pub struct Created {
    /// The object as stored, with its resourceVersion.
    pub object: Value,
    /// `serde_json::to_vec(&object)`, spliced from the stored bytes; `None` for a dry run
    /// or an object without a `metadata` map.
    pub json: Option<bytes::Bytes>,
}

/// [`create`], also giving the created object's JSON, so that the REST create answers
/// without serializing the object a second time.
pub async fn create_answered(
    core: &Core,
    rt: &ResourceType,
    cluster: &str,
    object: Value,
    options: WriteOptions,
) -> ApiResult<Created> {
    let generated = meta::name(&object).is_none()
        && meta::meta_str(&object, "generateName").is_some_and(|prefix| !prefix.is_empty());
    if !generated {
        return create_once(core, rt, cluster, object, options, false).await;
    }
    // A generated name may collide; draw again, as kube-apiserver does since 1.32.
    let mut last_error = None;
    for _ in 0..GENERATE_NAME_ATTEMPTS_MAX {
        match create_once(core, rt, cluster, object.clone(), options, true).await {
            Err(e) if e.reason == "AlreadyExists" => last_error = Some(e),
            other => return other,
        }
    }
    Err(last_error.unwrap_or_else(|| ApiError::internal("no name could be generated")))
}

/// How many names `generateName` draws before giving up with 409.
const GENERATE_NAME_ATTEMPTS_MAX: usize = 8;

async fn create_once(
    core: &Core,
    rt: &ResourceType,
    cluster: &str,
    mut object: Value,
    options: WriteOptions,
    generate_name: bool,
) -> ApiResult<Created> {
    if generate_name {
        let prefix = meta::meta_str(&object, "generateName").unwrap_or_default().to_string();
        let name = protocol::names::generated_name(&prefix, rand::random());
        meta::set_meta_str(&mut object, "name", Some(&name));
    }
    // From the thread-local generator: `new_v4` would cost a getrandom syscall per create.
    let uid = uuid::Builder::from_random_bytes(rand::random()).into_uuid().to_string();
    rt.strategy.admit(core, rt, cluster, &mut object)?;
    strategy::prepare_create(rt, &mut object, cluster, &now(), &uid)?;
    let name = meta::name(&object).unwrap_or_default().to_string();
    let mut causes = strategy::validate(rt, None, &object);
    causes.extend(rt.strategy.validate_create(core, &object));
    if !causes.is_empty() {
        return Err(ApiError::invalid(&rt.kind, &rt.group, &name, &causes));
    }
    let namespace = meta::namespace(&object).map(str::to_string);
    if let Some(ns) = namespace.as_deref() {
        check_namespace_accepts_content(core, cluster, ns)?;
    }
    let at = ObjectRef { cluster, namespace: namespace.as_deref(), name: &name };
    if implicit(core, rt, &at)?.is_some() {
        return Err(ApiError::already_exists(&rt.group_resource(), &name));
    }
    rt.strategy.before_create(core, cluster, &mut object, options.dry_run).await?;
    if options.dry_run {
        // A dry run answers what the write would: 409 when the name is taken.
        if core.store.get(at.key(rt).as_bytes()).map_err(ApiError::from)?.is_some() {
            return Err(ApiError::already_exists(&rt.group_resource(), &name));
        }
        return Ok(Created { object, json: None });
    }
    let encoded = objects::encode_marked(&object)?;
    let committed = core
        .store
        .put(at.key(rt), encoded.bytes.clone(), Precondition::MustNotExist)
        .await
        .map_err(|e| object_error(rt, &name, e))?;
    meta::set_meta_str(&mut object, "resourceVersion", Some(&committed.rv.to_string()));
    let done = Committed { rt, cluster, object: &object, rv: committed.rv, created: true };
    rt.strategy.after_commit(core, done).await?;
    Ok(Created { object, json: encoded.with_resource_version(committed.rv) })
}

/// New objects in a namespace need the namespace, and it must not be terminating.
fn check_namespace_accepts_content(core: &Core, cluster: &str, namespace: &str) -> ApiResult<()> {
    let namespaces = core.registry.namespaces();
    let at = ObjectRef { cluster, namespace: None, name: namespace };
    // Read by every namespaced create: kept in memory, exact (see `Store::get_hot`).
    let stored = core.store.get_hot(at.key(&namespaces).as_bytes()).map_err(ApiError::from)?;
    let stored = stored.ok_or_else(|| ApiError::not_found(&namespaces.group_resource(), namespace))?;
    if objects::is_marked_for_deletion(&stored.value)? {
        return Err(ApiError::forbidden(format!(
            "unable to create new content in namespace {namespace} because it is being terminated"
        )));
    }
    Ok(())
}

/// Writes `new` over the object currently at `old_rv`: updates, or completes a deletion
/// whose last finalizer the update removed. A no-op update writes nothing.
pub async fn replace(
    core: &Core,
    rt: &ResourceType,
    at: &ObjectRef<'_>,
    old: &Value,
    old_rv: u64,
    mut new: Value,
    options: WriteOptions,
) -> ApiResult<Value> {
    let mut unchanged = new.clone();
    meta::set_meta_str(&mut unchanged, "resourceVersion", meta::meta_str(old, "resourceVersion"));
    if &unchanged == old {
        return Ok(unchanged);
    }
    let causes = strategy::validate(rt, Some(old), &new);
    if !causes.is_empty() {
        return Err(ApiError::invalid(&rt.kind, &rt.group, at.name, &causes));
    }
    if options.dry_run {
        return Ok(unchanged);
    }
    let key = at.key(rt);
    if meta::is_deleting(&new) && deletion_unblocked(rt, &new) {
        let committed = core
            .store
            .delete(key, Precondition::ResourceVersion(old_rv))
            .await
            .map_err(|e| object_error(rt, at.name, e))?;
        meta::set_meta_str(&mut new, "resourceVersion", Some(&committed.rv.to_string()));
        rt.strategy.after_delete(core, at.cluster, &new, committed.rv);
        return Ok(new);
    }
    // The first write of an implicit object stores it; a concurrent first write is a
    // conflict to retry on, as a changed stored object is.
    let (precondition, created) = match old_rv {
        IMPLICIT_RV => (Precondition::MustNotExist, true),
        rv => (Precondition::ResourceVersion(rv), false),
    };
    let committed = core.store.put(key, objects::encode(&new)?, precondition).await.map_err(|e| match e {
        StoreError::AlreadyExists => ApiError::conflict(&rt.group_resource(), at.name, STALE),
        e => object_error(rt, at.name, e),
    })?;
    meta::set_meta_str(&mut new, "resourceVersion", Some(&committed.rv.to_string()));
    let done = Committed { rt, cluster: at.cluster, object: &new, rv: committed.rv, created };
    rt.strategy.after_commit(core, done).await?;
    Ok(new)
}

/// Whether nothing holds a deleting object back any more.
fn deletion_unblocked(rt: &ResourceType, object: &Value) -> bool {
    meta::finalizers(object).is_empty() && !rt.strategy.deletion_held(object)
}

/// How many times a guaranteed update retries on conflicts before giving up with 409.
const UPDATE_ATTEMPTS_MAX: usize = 16;

/// Reads the object, applies `mutate`, and writes the result, retrying on conflicts —
/// kube's GuaranteedUpdate. `mutate` gets the current object and returns the new one.
pub async fn guaranteed_update<F>(
    core: &Core,
    rt: &ResourceType,
    at: &ObjectRef<'_>,
    subresource: Option<&str>,
    options: WriteOptions,
    mut mutate: F,
) -> ApiResult<Value>
where
    F: FnMut(&Value) -> ApiResult<Value>,
{
    let mut last_error = None;
    for _ in 0..UPDATE_ATTEMPTS_MAX {
        let (old, old_rv) = get(core, rt, at)?;
        let mut new = mutate(&old)?;
        strategy::prepare_update(rt, &old, &mut new, subresource)?;
        match replace(core, rt, at, &old, old_rv, new, options).await {
            Err(e) if e.reason == "Conflict" => last_error = Some(e),
            other => return other,
        }
    }
    Err(last_error.unwrap_or_else(|| ApiError::internal("guaranteed update gave up")))
}

/// Preconditions a delete may carry (`DeleteOptions.preconditions`).
#[derive(Debug, Clone, Default)]
pub struct DeletePreconditions {
    /// The object's UID must be this.
    pub uid: Option<String>,
    /// The object's resourceVersion must be this.
    pub resource_version: Option<String>,
}

impl DeletePreconditions {
    /// Whether the caller pinned the object (then conflicts are final).
    pub fn given(&self) -> bool {
        self.uid.is_some() || self.resource_version.is_some()
    }
}

/// Deletes an object as a request without cascading options does: see
/// [`delete_cascading`].
pub async fn delete(
    core: &Core,
    rt: &ResourceType,
    at: &ObjectRef<'_>,
    preconditions: &DeletePreconditions,
    options: WriteOptions,
) -> ApiResult<Deleted> {
    delete_cascading(core, rt, at, preconditions, Cascade::default(), options).await
}

/// Deletes an object, honouring finalizers and the cascading policy. The policy becomes
/// the garbage collector's `orphan` or `foregroundDeletion` finalizer (background sets
/// none); an object with finalizers (or a namespace with spec finalizers) then gets a
/// deletionTimestamp and stays until they are removed. A dry run writes nothing.
pub async fn delete_cascading(
    core: &Core,
    rt: &ResourceType,
    at: &ObjectRef<'_>,
    preconditions: &DeletePreconditions,
    cascade: Cascade,
    options: WriteOptions,
) -> ApiResult<Deleted> {
    // Without caller preconditions a conflict only means the object changed between our
    // read and our write: read again and retry, as kube-apiserver does.
    let mut last_error = None;
    for _ in 0..UPDATE_ATTEMPTS_MAX {
        match delete_once(core, rt, at, preconditions, cascade, options).await {
            Err(e) if e.reason == "Conflict" && !preconditions.given() => last_error = Some(e),
            other => return other,
        }
    }
    Err(last_error.unwrap_or_else(|| ApiError::internal("delete gave up")))
}

async fn delete_once(
    core: &Core,
    rt: &ResourceType,
    at: &ObjectRef<'_>,
    preconditions: &DeletePreconditions,
    cascade: Cascade,
    options: WriteOptions,
) -> ApiResult<Deleted> {
    let (object, rv) = get(core, rt, at)?;
    check_delete_preconditions(rt, at.name, &object, preconditions)?;
    let deleting = meta::is_deleting(&object);
    rt.strategy.check_delete(rt, &object, deleting)?;
    let mut marked = object.clone();
    let finalizers = cascade.finalizers(&meta::finalizers(&object));
    if let Some(finalizers) = &finalizers {
        meta::set_finalizers(&mut marked, finalizers);
    }
    if deletion_unblocked(rt, &marked) {
        // Also when this request dropped the last (garbage-collector) finalizer, as kube
        // deletes at once then.
        return remove_now(core, rt, at, object, rv, options).await;
    }
    if deleting {
        // Nothing here deletes gracefully, so a repeated delete may still change the
        // cascading policy (kube allows that until a grace period is pending).
        if finalizers.is_none() {
            return Ok(Deleted::Pending(object));
        }
        let updated = replace(core, rt, at, &object, rv, marked, options).await?;
        return Ok(Deleted::Pending(updated));
    }
    let metadata = meta::metadata_mut(&mut marked);
    metadata.insert("deletionTimestamp".into(), Value::from(now()));
    metadata.insert("deletionGracePeriodSeconds".into(), Value::from(0));
    rt.strategy.mark_deleting(&mut marked);
    let updated = replace(core, rt, at, &object, rv, marked, options).await?;
    Ok(Deleted::Pending(updated))
}

/// Removes an object that nothing holds back any more, if it is still at `rv`.
async fn remove_now(
    core: &Core,
    rt: &ResourceType,
    at: &ObjectRef<'_>,
    object: Value,
    rv: u64,
    options: WriteOptions,
) -> ApiResult<Deleted> {
    // An implicit object was never stored: there is nothing to remove.
    if !options.dry_run && rv != IMPLICIT_RV {
        let committed = core
            .store
            .delete(at.key(rt), Precondition::ResourceVersion(rv))
            .await
            .map_err(|e| object_error(rt, at.name, e))?;
        rt.strategy.after_delete(core, at.cluster, &object, committed.rv);
    }
    if !options.dry_run {
        recreate_implicit(core, rt, at).await?;
    }
    Ok(Deleted::Gone(if rt.return_deleted_object {
        object
    } else {
        success_status(&rt.group_resource(), at.name, meta::meta_str(&object, "uid"))
    }))
}

fn check_delete_preconditions(
    rt: &ResourceType,
    name: &str,
    object: &Value,
    pre: &DeletePreconditions,
) -> ApiResult<()> {
    let conflict = |what: &str, want: &str, have: &str| {
        ApiError::conflict(
            &rt.group_resource(),
            name,
            &format!("Precondition failed: {what} in precondition: {want}, {what} in object meta: {have}"),
        )
    };
    if let Some(uid) = pre.uid.as_deref() {
        let have = meta::meta_str(object, "uid").unwrap_or_default();
        if uid != have {
            return Err(conflict("UID", uid, have));
        }
    }
    if let Some(rv) = pre.resource_version.as_deref() {
        let have = meta::meta_str(object, "resourceVersion").unwrap_or_default();
        if rv != have {
            return Err(conflict("ResourceVersion", rv, have));
        }
    }
    Ok(())
}

/// Removes one finalizer from an object (controllers), completing its deletion if it was
/// the last thing holding it.
pub async fn remove_finalizer(core: &Core, rt: &ResourceType, at: &ObjectRef<'_>, finalizer: &str) -> ApiResult<Value> {
    guaranteed_update(core, rt, at, None, WriteOptions::default(), |old| {
        let mut new = old.clone();
        let kept: Vec<String> = meta::finalizers(old).into_iter().filter(|f| f != finalizer).collect();
        meta::set_finalizers(&mut new, &kept);
        Ok(new)
    })
    .await
}

/// Edits the object whose UID is `uid` (controllers that identified an object by UID, like
/// the garbage collector): 404 when it is gone or a namesake replaced it, no write when
/// `edit` changes nothing, and the deletion completes when the edit removed the last
/// finalizer of a deleting object.
pub async fn update_object_of_uid<F>(
    core: &Core,
    rt: &ResourceType,
    at: &ObjectRef<'_>,
    uid: &str,
    mut edit: F,
) -> ApiResult<Value>
where
    F: FnMut(&mut Value),
{
    guaranteed_update(core, rt, at, None, WriteOptions::default(), |old| {
        if meta::meta_str(old, "uid") != Some(uid) {
            return Err(ApiError::not_found(&rt.group_resource(), at.name));
        }
        let mut new = old.clone();
        edit(&mut new);
        Ok(new)
    })
    .await
}

/// Removes the `kubernetes` spec finalizer of a namespace (its `finalize` subresource).
pub async fn finalize_namespace(core: &Core, cluster: &str, name: &str) -> ApiResult<Value> {
    let rt = core.registry.namespaces();
    let at = ObjectRef { cluster, namespace: None, name };
    guaranteed_update(core, &rt, &at, Some("finalize"), WriteOptions::default(), |old| {
        let mut new = old.clone();
        let kept: Vec<Value> = old
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .map(|f| f.iter().filter(|v| v.as_str() != Some(NAMESPACE_FINALIZER)).cloned().collect())
            .unwrap_or_default();
        new["spec"] = json!({"finalizers": kept});
        Ok(new)
    })
    .await
}

#[cfg(test)]
mod tests;
