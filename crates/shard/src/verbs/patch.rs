//! PATCH of one object: JSON patch, merge patch and strategic merge patch.

use super::Ctx;
use crate::http::status::{ApiError, ApiResult};
use crate::http::{self, negotiate, Response};
use crate::patch::{self, PatchType};
use crate::storage;
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
        return Err(ApiError::unsupported_media_type(&essence, &PatchType::MEDIA_TYPES[..3]));
    }
    let length = ctx.header("content-length").and_then(|l| l.parse().ok());
    let bytes = http::read_body(body, length).await?;
    let patch: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("the patch is not valid JSON: {e}")))?;
    let at = ctx.object_ref()?;
    let mut warnings = Vec::new();
    let updated =
        storage::guaranteed_update(&ctx.shard, &ctx.rt, &at, ctx.req.subresource.as_deref(), options, |current| {
            let mut patched = current.clone();
            let applied = match patch_type {
                PatchType::Json => patch::apply_json_patch(&mut patched, &patch),
                PatchType::Merge => patch::apply_merge_patch(&mut patched, &patch),
                PatchType::Strategic | PatchType::Apply => patch::apply_strategic_merge_patch(&mut patched, &patch),
            };
            applied.map_err(|why| ApiError::invalid(ctx.rt.kind, ctx.rt.group, at.name, &[(String::new(), why)]))?;
            check_identity_unchanged(ctx, current, &patched)?;
            warnings = crate::validation::prune_unknown(ctx, &mut patched)?;
            crate::validation::check_types(ctx, &patched)?;
            Ok(patched)
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
