//! PUT of one object (or of its `status` / `finalize` subresource).

use super::body::{read_object, reconcile_name_and_namespace};
use super::ctx::Ctx;
use crate::rest::status::ApiResult;
use crate::rest::Response;
use crate::{managed_fields, objects, storage, strategy};
use protocol::meta;

/// Replaces an object. With `metadata.resourceVersion` in the body the write is
/// conditional (409 on a stale version); without it, unconditional, as kube allows for
/// these resources.
pub async fn handle(ctx: &Ctx, body: hyper::body::Incoming) -> ApiResult<Response> {
    let options = ctx.write_options()?;
    let (mut object, warnings) = read_object(ctx, body).await?;
    reconcile_name_and_namespace(ctx, &mut object)?;
    let at = ctx.object_ref()?;
    let subresource = ctx.req.subresource.as_deref();
    let pinned = meta::meta_str(&object, "resourceVersion").filter(|rv| !rv.is_empty()).map(objects::parse_rv);
    let updated = match pinned {
        // Without a resourceVersion the update is unconditional: retry over concurrent writers.
        None => {
            storage::guaranteed_update(&ctx.core, &ctx.rt, &at, subresource, options, |current| {
                let mut new = object.clone();
                super::body::admit_caller_update(ctx, current, &mut new)?;
                managed_fields::track_update(ctx, Some(&ctx.present(current)), &mut new)?;
                Ok(new)
            })
            .await?
        }
        Some(expected) => {
            let expected = expected?;
            let (old, old_rv) = storage::get(&ctx.core, &ctx.rt, &at)?;
            if expected != old_rv {
                let stale = store::StoreError::Conflict { expected, actual: old_rv };
                return Err(storage::object_error(&ctx.rt, at.name, stale));
            }
            super::body::admit_caller_update(ctx, &old, &mut object)?;
            managed_fields::track_update(ctx, Some(&ctx.present(&old)), &mut object)?;
            strategy::prepare_update(&ctx.rt, &old, &mut object, subresource)?;
            storage::replace(&ctx.core, &ctx.rt, &at, &old, old_rv, object, options).await?
        }
    };
    ctx.respond_object(200, &updated, &warnings)
}
