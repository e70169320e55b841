//! GET of one object.

use super::ctx::Ctx;
use crate::http::status::ApiResult;
use crate::http::Response;
use crate::storage;

/// Answers the current object.
pub fn handle(ctx: &Ctx) -> ApiResult<Response> {
    let (object, _) = storage::get(&ctx.shard, &ctx.rt, &ctx.object_ref()?)?;
    ctx.respond_object(200, &object, &[])
}
