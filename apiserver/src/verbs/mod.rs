//! The REST verbs, one module each, and the thin dispatcher that routes to them.

pub mod body;
mod create;
pub mod ctx;
mod delete;
mod get;
mod list;
mod patch;
mod scale;
mod update;
mod watch;

use crate::rest::request_info::Verb;
use crate::rest::status::{ApiError, ApiResult};
use crate::rest::Response;
use hyper::body::Incoming;

pub use ctx::{Ctx, Scope};

/// Refuses a request for a subresource the row does not have, or a verb other than list
/// and watch across every cluster.
pub fn check_request(ctx: &Ctx) -> ApiResult<()> {
    if let Some(sub) = ctx.req.subresource.as_deref() {
        if !ctx.rt.has_subresource(sub) {
            return Err(ApiError::not_found_message(format!(
                "the server could not find the requested resource ({} {}/{})",
                ctx.req.verb.as_str(),
                ctx.rt.resource,
                sub
            )));
        }
    }
    if matches!(ctx.scope, Scope::Wildcard) && !matches!(ctx.req.verb, Verb::List | Verb::Watch) {
        ctx.cluster()?;
    }
    Ok(())
}

/// Routes a resource request to its verb.
pub async fn dispatch(ctx: Ctx, body: Incoming) -> ApiResult<Response> {
    check_request(&ctx)?;
    let sub = ctx.req.subresource.clone();
    // Resources that are never stored (access reviews) are questions the serving binary
    // answers before it dispatches here.
    if !ctx.rt.strategy.stored() {
        return Err(ApiError::method_not_allowed(format!(
            "{} are answered, not stored: only create is served",
            ctx.rt.resource
        )));
    }
    match (ctx.req.verb, sub.as_deref()) {
        (Verb::Get, Some("scale")) => scale::get(&ctx),
        (Verb::Update | Verb::Patch, Some("scale")) => scale::write(&ctx, body).await,
        (Verb::Get, _) => get::handle(&ctx),
        (Verb::List, None) => list::handle(&ctx).await,
        (Verb::Watch, None) => watch::handle(ctx),
        (Verb::Create, None) => create::handle(&ctx, body).await,
        (Verb::Update, _) => update::handle(&ctx, body).await,
        (Verb::Patch, _) => patch::handle(&ctx, body).await,
        (Verb::Delete, None) => delete::handle(&ctx, body).await,
        (Verb::DeleteCollection, None) if !ctx.rt.verbs().contains(&"deletecollection") => {
            Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({} cannot be deleted as a collection)",
                ctx.rt.resource
            )))
        }
        (Verb::DeleteCollection, None) => delete::handle_collection(&ctx, body).await,
        (Verb::Unsupported, _) => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({})",
            ctx.rt.resource
        ))),
        (verb, Some(sub)) => Err(ApiError::method_not_allowed(format!(
            "{} is not supported on {}/{sub}",
            verb.as_str(),
            ctx.rt.resource
        ))),
    }
}
