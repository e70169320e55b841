//! Request bodies: decoding an object, checking its type meta, name and namespace against
//! the URL, and the admission that needs the caller.

use super::ctx::Ctx;
use crate::registry::ResourceType;
use crate::rest::negotiate;
use crate::rest::status::{ApiError, ApiResult};
use hyper::body::Incoming;
use serde_json::Value;

/// Admission that needs the caller (storage's own admission does not know who asks), for
/// an object about to be created: the resource's strategy decides (a Workspace records its
/// creator as owner, an APIBinding needs `bind` permission on its export).
pub fn admit_caller(ctx: &Ctx, object: &mut Value) -> ApiResult<()> {
    admit_write(ctx, None, object)?;
    ctx.rt.strategy.admit_caller(&ctx.identity, ctx.cluster()?, object)
}

/// Admission that needs the caller, for an update of `old` to `new` (which the write
/// admissions may amend).
pub fn admit_caller_update(ctx: &Ctx, old: &Value, new: &mut Value) -> ApiResult<()> {
    admit_write(ctx, Some(old), new)?;
    let sub = ctx.req.subresource.as_deref();
    ctx.rt.strategy.admit_caller_update(&ctx.identity, ctx.cluster()?, old, new, sub)
}

/// The write admissions: the virtual workspace's that admitted the request, else the
/// registry's. `system:masters` skip the registry's.
fn admit_write(ctx: &Ctx, old: Option<&Value>, new: &mut Value) -> ApiResult<()> {
    let sub = ctx.req.subresource.as_deref();
    match &ctx.writes {
        Some(writes) => writes.admit(old, new, sub),
        None if ctx.identity.is_master() => Ok(()),
        None => ctx.core.registry.write_admissions().iter().try_for_each(|admission| admission.admit(old, new, sub)),
    }
}

/// Reads and decodes an object body, checks its kind and apiVersion, and prunes unknown
/// fields per `fieldValidation` (Strict → 400, Warn → warnings, Ignore → silent).
pub async fn read_object(ctx: &Ctx, body: Incoming) -> ApiResult<(Value, Vec<String>)> {
    let length = ctx.header("content-length").and_then(|l| l.parse().ok());
    let bytes = crate::rest::read_body(body, length).await?;
    let mut object = negotiate::decode_object(ctx.header("content-type"), &bytes)?;
    default_type_meta(&ctx.rt, &mut object);
    check_type_meta(&ctx.rt, &object)?;
    let warnings = crate::validation::prune_unknown(ctx, &mut object)?;
    crate::validation::check_types(ctx, &object)?;
    Ok((object, warnings))
}

/// A create or update body of a built-in kind may leave out `kind` and `apiVersion`: kube
/// decodes it into the type the URL names (clients such as the Python one rely on that).
/// Custom resources are decoded as unstructured objects, which must say what they are.
fn default_type_meta(rt: &ResourceType, object: &mut Value) {
    if rt.custom.is_some() {
        return;
    }
    let Some(map) = object.as_object_mut() else { return };
    for (field, value) in [("kind", rt.kind.clone()), ("apiVersion", rt.api_version())] {
        if protocol::meta::get(map, field).is_none_or(|v| v.as_str().is_some_and(str::is_empty) || v.is_null()) {
            map.insert(field.into(), Value::from(value));
        }
    }
}

/// The body's kind and apiVersion must be the URL's resource.
pub fn check_type_meta(rt: &ResourceType, object: &Value) -> ApiResult<()> {
    let top = |key: &str| protocol::meta::field(object, key).and_then(Value::as_str).unwrap_or_default();
    let kind = top("kind");
    let api_version = top("apiVersion");
    if kind.is_empty() {
        return Err(ApiError::bad_request("Object 'Kind' is missing in the request body"));
    }
    if api_version.is_empty() {
        return Err(ApiError::bad_request("Object 'apiVersion' is missing in the request body"));
    }
    if kind != rt.kind || api_version != rt.api_version() {
        return Err(ApiError::bad_request(format!(
            "the body's {api_version}, Kind={kind} does not match the URL's resource {} ({}, Kind={})",
            rt.resource,
            rt.api_version(),
            rt.kind
        )));
    }
    Ok(())
}

/// Checks that the body's namespace and name agree with the URL's, filling them when absent.
pub fn reconcile_name_and_namespace(ctx: &Ctx, object: &mut Value) -> ApiResult<()> {
    use protocol::meta;
    match (ctx.namespace(), meta::namespace(object).map(str::to_string)) {
        (Some(url), Some(body)) if url != body => {
            return Err(ApiError::bad_request(format!(
                "the namespace of the provided object ({body}) does not match the namespace sent on the request ({url})"
            )))
        }
        (Some(url), None) => meta::set_meta_str(object, "namespace", Some(url)),
        (None, Some(_)) if !ctx.rt.namespaced => meta::set_meta_str(object, "namespace", None),
        (None, _) if ctx.rt.namespaced => {
            return Err(ApiError::bad_request(format!(
                "{} is namespaced: use /namespaces/<namespace>/{} in the path",
                ctx.rt.resource, ctx.rt.resource
            )))
        }
        _ => {}
    }
    if let Some(url_name) = ctx.req.name.as_deref() {
        match meta::name(object) {
            Some(body) if body != url_name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({body}) does not match the name on the URL ({url_name})"
                )))
            }
            None => meta::set_meta_str(object, "name", Some(url_name)),
            _ => {}
        }
    }
    Ok(())
}
