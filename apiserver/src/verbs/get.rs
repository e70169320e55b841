//! GET of one object.

use super::ctx::Ctx;
use crate::rest::status::ApiResult;
use crate::rest::Response;
use crate::storage;

/// Answers the current object.
pub fn handle(ctx: &Ctx) -> ApiResult<Response> {
    let (object, _) = storage::get(&ctx.core, &ctx.rt, &ctx.object_ref()?)?;
    ctx.respond_object(200, &object, &[])
}
