//! PUT of one object (or of its `status` / `finalize` subresource).

use super::{read_object, reconcile_name_and_namespace, Ctx};
use crate::http::status::{ApiError, ApiResult};
use crate::http::Response;
use crate::{objects, storage, strategy};
use protocol::meta;

/// Replaces an object. With `metadata.resourceVersion` in the body the write is
/// conditional (409 on a stale version); without it, unconditional, as kube allows for
/// these resources.
pub async fn handle(ctx: &Ctx, body: hyper::body::Incoming) -> ApiResult<Response> {
    let options = ctx.write_options()?;
    let (mut object, warnings) = read_object(ctx, body).await?;
    reconcile_name_and_namespace(ctx, &mut object)?;
    let at = ctx.object_ref()?;
    let (old, old_rv) = storage::get(&ctx.shard, &ctx.rt, &at)?;
    let expected = match meta::meta_str(&object, "resourceVersion").filter(|rv| !rv.is_empty()) {
        Some(rv) => objects::parse_rv(rv)?,
        None => old_rv,
    };
    if expected != old_rv {
        return Err(storage::object_error(&ctx.rt, at.name, store::StoreError::Conflict { expected, actual: old_rv }));
    }
    strategy::prepare_update(&ctx.rt, &old, &mut object, ctx.req.subresource.as_deref())?;
    let updated = storage::replace(&ctx.shard, &ctx.rt, &at, &old, old_rv, object, options).await?;
    if updated.get("kind").is_none() {
        return Err(ApiError::internal("update produced an object without kind"));
    }
    ctx.respond_object(200, &updated, &warnings)
}
