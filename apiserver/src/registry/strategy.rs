//! The per-resource hooks every row of the table carries, in the spirit of kube's
//! `RESTCreateStrategy` / `RESTUpdateStrategy` plus after-commit hooks. The generic
//! storage ([`crate::storage`]) calls them at fixed points of every write; the features
//! implement them in their own modules and register them at start-up.

use super::{Core, ResourceType, VERBS};
use crate::rest::status::ApiResult;
use futures::future::BoxFuture;
use security::authn::Identity;
use serde_json::Value;
use std::sync::Arc;

/// (field path, message) pairs of a 422.
pub type Causes = Vec<(String, String)>;

/// What a hook that may read or write other objects returns.
pub type Hook<'a> = BoxFuture<'a, ApiResult<()>>;

/// The hook result of a hook with nothing (more) to do.
pub fn done<'a>() -> Hook<'a> {
    Box::pin(std::future::ready(Ok(())))
}

/// Where a committed write happened, for after-commit hooks.
#[derive(Debug, Clone, Copy)]
pub struct Committed<'a> {
    /// The resource written.
    pub rt: &'a ResourceType,
    /// Logical cluster of the object.
    pub cluster: &'a str,
    /// The object as written, with its new resourceVersion.
    pub object: &'a Value,
    /// The store resourceVersion of the write.
    pub rv: u64,
    /// Whether the write created the object.
    pub created: bool,
}

/// Behaviour of one resource. Every method has the plain-object default, so a strategy
/// states only what differs. Pure methods take no [`Core`]; the ones that may read or
/// write other objects get it.
pub trait Strategy: Send + Sync + std::fmt::Debug {
    /// The verbs the resource serves, in discovery order.
    fn verbs(&self) -> &'static [&'static str] {
        VERBS
    }

    /// Whether objects are stored at all (access reviews are answered, never stored).
    fn stored(&self) -> bool {
        true
    }

    /// Whether objects carry `metadata.generation` (kinds with a spec controllers act on).
    fn tracks_generation(&self) -> bool {
        false
    }

    /// Whether stored objects have another shape than requests address ([`Self::to_storage`]).
    fn converts(&self) -> bool {
        false
    }

    /// Moves a written object into its stored shape.
    fn to_storage(&self, _rt: &ResourceType, _object: &mut Value) {}

    /// Shows a stored object as the request's version has it.
    fn to_version(&self, _rt: &ResourceType, _object: &mut Value) {}

    /// Admission of a new object before defaults are filled: may read other objects, and
    /// refuse the create.
    fn admit(&self, _core: &Core, _rt: &ResourceType, _cluster: &str, _object: &mut Value) -> ApiResult<()> {
        Ok(())
    }

    /// Admission that needs the caller, for a create.
    fn admit_caller(&self, _caller: &Identity, _cluster: &str, _object: &mut Value) -> ApiResult<()> {
        Ok(())
    }

    /// Admission that needs the caller, for an update of `old` to `new` through
    /// `subresource` (`None`: the main resource).
    fn admit_caller_update(
        &self,
        _caller: &Identity,
        _cluster: &str,
        _old: &Value,
        _new: &Value,
        _subresource: Option<&str>,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// Admission that needs the caller, for a DELETE of the stored `object` (kcp's
    /// LogicalCluster rule: only `spec.directlyDeletable` ones go by a user's DELETE).
    /// Controllers delete through [`crate::storage`] and are not asked.
    fn admit_caller_delete(&self, _caller: &Identity, _cluster: &str, _object: &Value) -> ApiResult<()> {
        Ok(())
    }

    /// Why a request body cannot be read as this resource's kind (kube's typed decoding:
    /// a string where an integer belongs is a 400, not a stored object typed clients
    /// cannot read); `None` when it can. Runs before any defaulting. Pure.
    fn decode_error(&self, _rt: &ResourceType, _object: &Value) -> Option<String> {
        None
    }

    /// Names of the objects this resource serves in every namespace without storing them
    /// (a `default` ServiceAccount): see [`crate::namespace_defaults`].
    fn implicit_names(&self) -> &'static [&'static str] {
        &[]
    }

    /// The implicit object `name` of `namespace` (its stored form) in `cluster`, served
    /// while nothing is stored under its name. Pure.
    fn implicit(&self, _cluster: &str, _namespace: &Value, _name: &str) -> Option<Value> {
        None
    }

    /// Defaults of a new object, after the generic metadata is filled. Pure.
    fn prepare_create(&self, _rt: &ResourceType, _object: &mut Value, _now: &str) -> ApiResult<()> {
        Ok(())
    }

    /// What an update may not change, after the generic rules ran; `subresource` is
    /// `status`, `finalize`, [`UNRESTRICTED_WRITE`] or `None` for the main resource. Pure.
    fn prepare_update(
        &self,
        _rt: &ResourceType,
        _old: &Value,
        _new: &mut Value,
        _subresource: Option<&str>,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// Kind-specific validation causes; `old` is the stored object of an update. Pure.
    fn validate(&self, _rt: &ResourceType, _old: Option<&Value>, _object: &Value) -> Causes {
        Vec::new()
    }

    /// Validation of a new object against the rest of the table (a CRD may not shadow a
    /// built-in).
    fn validate_create(&self, _core: &Core, _object: &Value) -> Causes {
        Vec::new()
    }

    /// Admission after validation, just before the create is stored (an APIExport's
    /// identity is stored first, so an export never exists without one).
    fn before_create<'a>(
        &'a self,
        _core: &'a Core,
        _cluster: &'a str,
        _object: &'a mut Value,
        _dry_run: bool,
    ) -> Hook<'a> {
        done()
    }

    /// Runs after a create or update committed, before it is answered: indexes learn of
    /// the write and follow-up work is queued. An error fails the request although the
    /// write stays (a hook that must undo it does so itself).
    fn after_commit<'a>(&'a self, _core: &'a Core, _committed: Committed<'a>) -> Hook<'a> {
        done()
    }

    /// Runs after an object was removed from the store.
    fn after_delete(&self, _core: &Core, _cluster: &str, _removed: &Value, _rv: u64) {}

    /// Refuses a delete before anything is written (`deleting`: the object already has a
    /// deletionTimestamp).
    fn check_delete(&self, _rt: &ResourceType, _object: &Value, _deleting: bool) -> ApiResult<()> {
        Ok(())
    }

    /// Whether something besides `metadata.finalizers` still holds a deleting object.
    fn deletion_held(&self, _object: &Value) -> bool {
        false
    }

    /// Marks an object whose deletion starts (a namespace goes Terminating).
    fn mark_deleting(&self, _object: &mut Value) {}
}

/// A resource with no behaviour beyond the generic.
#[derive(Debug, Default)]
pub struct Generic;

impl Strategy for Generic {}

/// A kind whose objects carry `metadata.generation`, and nothing else special.
#[derive(Debug, Default)]
pub struct WithGeneration;

impl Strategy for WithGeneration {
    fn tracks_generation(&self) -> bool {
        true
    }
}

/// The shared default strategy.
pub fn generic() -> Arc<dyn Strategy> {
    Arc::new(Generic)
}
