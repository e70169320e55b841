//! Field ownership on the write path: `metadata.managedFields` on every create, update and
//! patch, and server-side apply (`application/apply-patch+yaml`).
//!
//! The set logic lives in [`protocol::managed`]; this module decides who the manager is,
//! which schema gives lists and maps their merge semantics, which fields the endpoint
//! resets, and turns refusals into Statuses.

use crate::registry::ResourceType;
use crate::rest::status::{ApiError, ApiResult};
use crate::verbs::ctx::Ctx;
use protocol::managed::{self, ApplyError, BuiltinShape, SchemaShape, WriteContext};
use protocol::meta;
use serde_json::{json, Value};

/// kube's limit on `fieldManager`.
const FIELD_MANAGER_MAX: usize = 128;

/// The manager of a write: `fieldManager`, else the user agent's program name (kube's
/// default), e.g. `kubectl` for `kubectl/v1.32.0 (linux/amd64)`.
pub fn manager(ctx: &Ctx) -> ApiResult<String> {
    if let Some(manager) = ctx.param("fieldManager").filter(|m| !m.is_empty()) {
        if manager.chars().count() > FIELD_MANAGER_MAX {
            return Err(ApiError::bad_request(format!(
                "fieldManager: Too long: may not be more than {FIELD_MANAGER_MAX} bytes"
            )));
        }
        if manager.chars().any(|c| c.is_control()) {
            return Err(ApiError::bad_request("fieldManager: Invalid value: must only contain printable characters"));
        }
        return Ok(manager.to_string());
    }
    let agent = ctx.header("user-agent").unwrap_or("unknown");
    let program = agent.split('/').next().unwrap_or(agent);
    Ok(program.chars().take(FIELD_MANAGER_MAX).collect())
}

/// The fields an endpoint resets: the main resource of a kind with a status subresource
/// leaves `status` alone; the status subresource leaves everything but `status`.
fn reset_fields(rt: &ResourceType, subresource: Option<&str>) -> &'static [&'static [&'static str]] {
    match subresource {
        Some("status") => &[&["spec"], &["metadata"]],
        Some(_) => &[],
        None if rt.has_subresource("status") => managed::MAIN_RESOURCE_RESET_FIELDS,
        None => &[],
    }
}

/// Runs `f` with the write context and schema shape of a write by `manager` through
/// `ctx`'s endpoint.
fn with_writer<T>(ctx: &Ctx, manager: &str, f: impl FnOnce(&WriteContext<'_>, &dyn managed::Shape) -> T) -> T {
    let subresource = ctx.req.subresource.as_deref();
    let time = crate::storage::now();
    let api_version = ctx.rt.api_version();
    let writer = WriteContext {
        manager,
        api_version: &api_version,
        subresource,
        time: &time,
        reset_fields: reset_fields(&ctx.rt, subresource),
    };
    let root = ctx.rt.schema_root();
    let fallback = BuiltinShape;
    let shape = SchemaShape::new(&root, protocol::openapi::builtin_components()).with_fallback(&fallback);
    f(&writer, &shape)
}

/// Records a non-apply write by `ctx`'s manager in `new`'s `metadata.managedFields`.
pub fn track_update(ctx: &Ctx, old: Option<&Value>, new: &mut Value) -> ApiResult<()> {
    let manager = manager(ctx)?;
    let entries = with_writer(ctx, &manager, |writer, shape| managed::update(old, new, writer, shape));
    set_entries(new, entries);
    Ok(())
}

/// Server-side apply of `config` over `live` (`None`: the apply creates the object).
pub fn apply(ctx: &Ctx, live: Option<&Value>, config: &Value) -> ApiResult<Value> {
    if ctx.param("fieldManager").is_none_or(str::is_empty) {
        return Err(ApiError::invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            &[("fieldManager".into(), "Required value: is required for apply patch".into())],
        ));
    }
    let manager = manager(ctx)?;
    let force = match ctx.param("force") {
        None | Some("") | Some("false") => false,
        Some("true") => true,
        Some(other) => return Err(ApiError::bad_request(format!("force must be true or false, not {other:?}"))),
    };
    match with_writer(ctx, &manager, |writer, shape| managed::apply(live, config, writer, force, shape)) {
        Ok(applied) => Ok(applied.object),
        Err(ApplyError::Conflicts(conflicts)) => {
            let causes: Vec<Value> = conflicts
                .causes()
                .into_iter()
                .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                .collect();
            Err(ApiError::conflict_with_causes(conflicts.to_string(), causes))
        }
        Err(ApplyError::ManagedFieldsInConfig) => Err(ApiError::bad_request("metadata.managedFields must be nil")),
        Err(ApplyError::InvalidConfig(why)) => Err(ApiError::invalid(
            &ctx.rt.kind,
            &ctx.rt.group,
            meta::name(config).unwrap_or_default(),
            &[(
                String::new(),
                format!("failed to create typed patch object ({}, Kind={}): {why}", ctx.rt.api_version(), ctx.rt.kind),
            )],
        )),
        Err(error @ ApplyError::LiveManagedFields(_)) => Err(ApiError::internal(error.to_string())),
    }
}

fn set_entries(object: &mut Value, entries: Vec<Value>) {
    let metadata = meta::metadata_mut(object);
    if entries.is_empty() {
        metadata.remove("managedFields");
    } else {
        metadata.insert("managedFields".into(), Value::Array(entries));
    }
}
