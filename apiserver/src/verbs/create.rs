//! POST to a collection.

use super::body::{admit_caller, read_object, reconcile_name_and_namespace};
use super::ctx::Ctx;
use crate::rest::status::ApiResult;
use crate::rest::Response;
use crate::storage;

/// Creates an object from the body.
pub async fn handle(ctx: &Ctx, body: hyper::body::Incoming) -> ApiResult<Response> {
    let options = ctx.write_options()?;
    let (mut object, warnings) = read_object(ctx, body).await?;
    reconcile_name_and_namespace(ctx, &mut object)?;
    admit_caller(ctx, &mut object)?;
    crate::managed_fields::track_update(ctx, None, &mut object)?;
    let created = storage::create_answered(&ctx.core, &ctx.rt, ctx.cluster()?, object, options).await?;
    ctx.respond_created(&created, &warnings)
}
