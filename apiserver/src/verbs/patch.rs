//! PATCH of one object: JSON patch, merge patch and strategic merge patch.

use super::ctx::Ctx;
use crate::patch::{self, PatchType};
use crate::rest::status::{ApiError, ApiResult};
use crate::rest::{self, negotiate, Response};
use crate::{managed_fields, storage};
use protocol::meta;
use serde_json::Value;

/// Applies the patch to the current object, retrying on conflicts unless the patch
/// itself pins a resourceVersion.
pub async fn handle(ctx: &Ctx, body: hyper::body::Incoming) -> ApiResult<Response> {
    let options = ctx.write_options()?;
    let essence = negotiate::essence(ctx.header("content-type"));
    let patch_type = PatchType::from_media_type(&essence)
        .ok_or_else(|| ApiError::unsupported_media_type(&essence, PatchType::MEDIA_TYPES))?;
    if patch_type == PatchType::Apply {
        return server_side_apply(ctx, body).await;
    }
    if patch_type == PatchType::Strategic && ctx.rt.custom.is_some() {
        // kube: custom resources have no strategic merge metadata.
        return Err(ApiError::unsupported_media_type(
            &essence,
            &[PatchType::MEDIA_TYPES[0], PatchType::MEDIA_TYPES[1]],
        ));
    }
    let length = ctx.header("content-length").and_then(|l| l.parse().ok());
    let bytes = rest::read_body(body, length).await?;
    let patch: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("the patch is not valid JSON: {e}")))?;
    if patch_type == PatchType::Json && !patch.is_array() {
        return Err(ApiError::bad_request(
            "a JSON patch must be an array of operations, e.g. [{\"op\": \"replace\", \"path\": \"/spec/replicas\", \"value\": 3}]",
        ));
    }
    let root = ctx.rt.schema_root();
    let at = ctx.object_ref()?;
    let mut warnings = Vec::new();
    let updated =
        storage::guaranteed_update(&ctx.core, &ctx.rt, &at, ctx.req.subresource.as_deref(), options, |stored| {
            // A custom resource is patched as the addressed version shows it.
            let presented = ctx.present(stored);
            let current: &Value = &presented;
            let mut patched = current.clone();
            let applied = match patch_type {
                PatchType::Json => patch::apply_json_patch(&mut patched, &patch),
                PatchType::Merge => patch::apply_merge_patch(&mut patched, &patch),
                PatchType::Strategic | PatchType::Apply => {
                    patch::apply_strategic_merge_patch(&mut patched, &patch, &patch::schema_lists(&root))
                }
            };
            applied.map_err(|why| ApiError::invalid(&ctx.rt.kind, &ctx.rt.group, at.name, &[(String::new(), why)]))?;
            check_identity_unchanged(ctx, current, &patched)?;
            super::body::admit_caller_update(ctx, current, &mut patched)?;
            warnings = crate::validation::prune_unknown(ctx, &mut patched)?;
            crate::validation::check_types(ctx, &patched)?;
            managed_fields::track_update(ctx, Some(current), &mut patched)?;
            Ok(patched)
        })
        .await?;
    ctx.respond_object(200, &updated, &warnings)
}

/// Server-side apply: the body is the manager's whole intent for the object, in YAML or
/// JSON; the object is created when it does not exist.
async fn server_side_apply(ctx: &Ctx, body: hyper::body::Incoming) -> ApiResult<Response> {
    let options = ctx.write_options()?;
    let length = ctx.header("content-length").and_then(|l| l.parse().ok());
    let bytes = rest::read_body(body, length).await?;
    let mut config: Value =
        serde_yaml_ng::from_slice(&bytes).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !config.is_object() {
        return Err(ApiError::bad_request("the apply configuration must be an object"));
    }
    super::body::check_type_meta(&ctx.rt, &config)?;
    super::body::reconcile_name_and_namespace(ctx, &mut config)?;
    let warnings = crate::validation::prune_unknown(ctx, &mut config)?;
    crate::validation::check_types(ctx, &config)?;
    let at = ctx.object_ref()?;
    match storage::get(&ctx.core, &ctx.rt, &at) {
        Err(e) if e.is_not_found() && ctx.req.subresource.is_none() => {
            let mut object = managed_fields::apply(ctx, None, &config)?;
            super::body::admit_caller(ctx, &mut object)?;
            let created = storage::create(&ctx.core, &ctx.rt, at.cluster, object, options).await?;
            return ctx.respond_object(201, &created, &warnings);
        }
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    let updated =
        storage::guaranteed_update(&ctx.core, &ctx.rt, &at, ctx.req.subresource.as_deref(), options, |stored| {
            let presented = ctx.present(stored);
            let current: &Value = &presented;
            let mut applied = managed_fields::apply(ctx, Some(current), &config)?;
            check_identity_unchanged(ctx, current, &applied)?;
            super::body::admit_caller_update(ctx, current, &mut applied)?;
            Ok(applied)
        })
        .await?;
    ctx.respond_object(200, &updated, &warnings)
}

/// A patch may not rename, move or retype an object, and a resourceVersion it sets is a
/// precondition.
fn check_identity_unchanged(ctx: &Ctx, current: &Value, patched: &Value) -> ApiResult<()> {
    for field in ["name", "namespace"] {
        if meta::meta_str(current, field) != meta::meta_str(patched, field) {
            return Err(ApiError::bad_request(format!("metadata.{field} cannot be changed by a patch")));
        }
    }
    for field in ["kind", "apiVersion"] {
        if current.get(field) != patched.get(field) {
            return Err(ApiError::bad_request(format!("{field} cannot be changed by a patch")));
        }
    }
    let wanted = meta::meta_str(patched, "resourceVersion").unwrap_or_default();
    let actual = meta::meta_str(current, "resourceVersion").unwrap_or_default();
    if !wanted.is_empty() && wanted != actual {
        return Err(storage::object_error(
            &ctx.rt,
            meta::name(current).unwrap_or_default(),
            store::StoreError::Conflict { expected: wanted.parse().unwrap_or(0), actual: actual.parse().unwrap_or(0) },
        ));
    }
    Ok(())
}
