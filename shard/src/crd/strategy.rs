//! The strategies of CustomResourceDefinitions and of the custom resources they define,
//! which the generic storage calls through each row's [`Strategy`].

use apiserver::registry::strategy::{done, Causes, Committed, Hook, Strategy};
use apiserver::registry::Core;
use apiserver::registry::{Registry, ResourceType};
use apiserver::rest::status::{ApiError, ApiResult};
use apiserver::storage::{self, ObjectRef};

use protocol::meta;
use serde_json::Value;
use std::sync::Arc;
use store::{Precondition, StoreError};

/// Gives the `customresourcedefinitions` row its strategy, and the rows CRDs define theirs.
pub fn register(registry: &mut Registry) {
    registry.set_strategy("apiextensions.k8s.io", "customresourcedefinitions", Arc::new(Definition));
    registry.custom().set_row_strategy(Arc::new(CustomResource::default()));
}

/// CustomResourceDefinitions: defaults, the cleanup finalizer, the status kube's
/// apiextensions controllers would write, and the index of custom resources, which learns
/// of every committed CRD write before it answers.
#[derive(Debug, Default)]
pub struct Definition;

impl Strategy for Definition {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_create(&self, _rt: &ResourceType, object: &mut Value, now: &str) -> ApiResult<()> {
        super::status::prepare_create(object, now);
        Ok(())
    }

    fn prepare_update(&self, _rt: &ResourceType, old: &Value, new: &mut Value, sub: Option<&str>) -> ApiResult<()> {
        super::status::prepare_update(old, new, &storage::now(), sub == Some("status"));
        Ok(())
    }

    fn validate(&self, _rt: &ResourceType, old: Option<&Value>, object: &Value) -> Causes {
        super::status::validate(old, object)
    }

    fn validate_create(&self, core: &Core, object: &Value) -> Causes {
        super::status::shadowed_builtin(&core.registry, object)
    }

    fn after_commit<'a>(&'a self, core: &'a Core, committed: Committed<'a>) -> Hook<'a> {
        core.registry.custom().observe(committed.cluster, committed.object);
        done()
    }

    fn after_delete(&self, core: &Core, cluster: &str, removed: &Value, rv: u64) {
        core.registry.custom().forget(cluster, meta::name(removed).unwrap_or_default(), rv);
    }
}

/// Objects of a row defined by a CRD-shaped schema: schema defaulting and validation,
/// the storage version, and, for rows of a CRD object stored in the cluster, no object
/// outliving its definition. Rows a feature defines in code (OCM's kinds) have no such
/// object to outlive.
#[derive(Debug, Default)]
pub struct CustomResource {
    /// The rows come from definitions in code, not from CRD objects.
    pub defined_in_code: bool,
}

impl Strategy for CustomResource {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn converts(&self) -> bool {
        true
    }

    fn to_storage(&self, rt: &ResourceType, object: &mut Value) {
        super::objects::prepare_write(rt, object);
    }

    fn to_version(&self, rt: &ResourceType, object: &mut Value) {
        super::objects::present(rt, object);
    }

    fn admit(&self, _core: &Core, rt: &ResourceType, _cluster: &str, _object: &mut Value) -> ApiResult<()> {
        super::objects::check_creatable(rt)
    }

    fn validate(&self, rt: &ResourceType, _old: Option<&Value>, object: &Value) -> Causes {
        super::objects::validate(rt, object)
    }

    fn after_commit<'a>(&'a self, core: &'a Core, committed: Committed<'a>) -> Hook<'a> {
        Box::pin(async move {
            if !committed.created || self.defined_in_code {
                return Ok(());
            }
            let name = meta::name(committed.object).unwrap_or_default();
            let at = ObjectRef { cluster: committed.cluster, namespace: meta::namespace(committed.object), name };
            withdraw_if_definition_went(core, committed.rt, &at, committed.rv).await
        })
    }
}

/// A custom resource created while its CRD started terminating may have committed after
/// the cleanup listed the CRD's objects; it is taken back (and the create refused, as
/// kube refuses creates of a terminating CRD) so that it cannot outlive its definition.
async fn withdraw_if_definition_went(core: &Core, rt: &ResourceType, at: &ObjectRef<'_>, rv: u64) -> ApiResult<()> {
    let Some(custom) = &rt.custom else { return Ok(()) };
    // Bound resources are defined by the shard's bound CRDs, not by the cluster's own.
    let defined_in = if custom.identity.is_some() { protocol::wellknown::BOUND_CRDS_CLUSTER } else { at.cluster };
    let current = core.registry.custom().storage_row(defined_in, &custom.crd_name);
    if current.as_ref().and_then(|row| row.custom.as_ref()).is_some_and(|c| !c.terminating) {
        return Ok(());
    }
    let key = apiserver::objects::key(rt, at.cluster, at.namespace, at.name);
    match core.store.delete(key, Precondition::ResourceVersion(rv)).await {
        Ok(_) | Err(StoreError::NotFound) | Err(StoreError::Conflict { .. }) => {}
        Err(e) => return Err(storage::object_error(rt, at.name, e)),
    }
    Err(ApiError::method_not_allowed(format!(
        "create not allowed while custom resource definition {} is terminating",
        custom.crd_name
    )))
}
