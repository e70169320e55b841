//! DELETE of one object and of a collection.

use super::Ctx;
use crate::http::status::{ApiError, ApiResult};
use crate::http::{self, Response};
use crate::storage::{self, DeletePreconditions, Deleted, ObjectRef};
use protocol::meta;
use serde_json::{json, Value};

/// Deletes an object: 200 with a Status (or the object) when it is gone, 200 with the
/// object when finalizers hold it (kube answers 202 only for `orphanDependents=false`).
pub async fn handle(ctx: &Ctx, body: hyper::body::Incoming) -> ApiResult<Response> {
    let length = ctx.header("content-length").and_then(|l| l.parse().ok());
    let bytes = http::read_body(body, length).await?;
    let delete_options = parse_delete_options(&bytes)?;
    let mut options = ctx.write_options()?;
    if delete_options.pointer("/dryRun/0").and_then(Value::as_str) == Some("All") {
        options.dry_run = true;
    }
    let preconditions = DeletePreconditions {
        uid: delete_options.pointer("/preconditions/uid").and_then(Value::as_str).map(str::to_string),
        resource_version: delete_options
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    match storage::delete(&ctx.shard, &ctx.rt, &ctx.object_ref()?, &preconditions, options).await? {
        Deleted::Gone(answer) => ctx.respond_object(200, &answer, &[]),
        Deleted::Pending(object) => ctx.respond_object(200, &object, &[]),
    }
}

fn parse_delete_options(bytes: &[u8]) -> ApiResult<Value> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("the DeleteOptions body is not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::bad_request("the DeleteOptions body must be an object"));
    }
    Ok(value)
}

/// Deletes every object the list selectors match; answers the list of what was deleted.
pub async fn handle_collection(ctx: &Ctx) -> ApiResult<Response> {
    let options = ctx.write_options()?;
    let listed = super::list::collect(ctx, None).await?;
    let cluster = ctx.cluster()?;
    let mut deleted = Vec::new();
    for object in listed.items {
        let name = meta::name(&object).unwrap_or_default().to_string();
        let at = ObjectRef { cluster, namespace: meta::namespace(&object), name: &name };
        match storage::delete(&ctx.shard, &ctx.rt, &at, &DeletePreconditions::default(), options).await {
            Ok(Deleted::Gone(_)) => deleted.push(object),
            Ok(Deleted::Pending(pending)) => deleted.push(pending),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let list = json!({
        "kind": ctx.rt.list_kind(),
        "apiVersion": ctx.rt.api_version(),
        "metadata": {"resourceVersion": ctx.shard.store.current_rv().to_string()},
        "items": deleted,
    });
    ctx.respond_list(200, &list, &[])
}
