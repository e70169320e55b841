//! DELETE of one object and of a collection.
//!
//! Both read `DeleteOptions` from the body or, when the body is empty, from the query
//! (`?propagationPolicy=Foreground`), as kube-apiserver does, validate it, and hand the
//! cascading policy to [`storage::delete_cascading`], which turns it into the garbage
//! collector's finalizers.

use super::ctx::Ctx;
use crate::rest::status::{ApiError, ApiResult};
use crate::rest::{self, Response};
use crate::storage::{self, Cascade, DeletePreconditions, Deleted, ObjectRef, Propagation, WriteOptions};
use protocol::meta;
use serde_json::{json, Map, Value};

/// What one DELETE asks for, once parsed and validated.
#[derive(Debug, Clone, Default)]
struct DeleteRequest {
    preconditions: DeletePreconditions,
    cascade: Cascade,
    options: WriteOptions,
}

/// Deletes an object: 200 with a Status (or the object) when it is gone, 200 with the
/// object when finalizers hold it — 202 instead when the caller set the legacy
/// `orphanDependents=false`, the one case where kube answers Accepted.
pub async fn handle(ctx: &Ctx, body: hyper::body::Incoming) -> ApiResult<Response> {
    let request = read_delete_options(ctx, body).await?;
    let at = ctx.object_ref()?;
    let (object, _) = storage::get(&ctx.core, &ctx.rt, &at)?;
    ctx.rt.strategy.admit_caller_delete(&ctx.identity, at.cluster, &object)?;
    let deleted =
        storage::delete_cascading(&ctx.core, &ctx.rt, &at, &request.preconditions, request.cascade, request.options)
            .await?;
    match deleted {
        Deleted::Gone(answer) => ctx.respond_object(200, &answer, &[]),
        Deleted::Pending(object) if request.cascade.orphan_dependents == Some(false) => {
            ctx.respond_object(202, &object, &[])
        }
        Deleted::Pending(object) => ctx.respond_object(200, &object, &[]),
    }
}

/// Deletes every object the list selectors match, each with the request's DeleteOptions;
/// answers the list of what was deleted or is now deleting.
pub async fn handle_collection(ctx: &Ctx, body: hyper::body::Incoming) -> ApiResult<Response> {
    let request = read_delete_options(ctx, body).await?;
    let listed = super::list::collect(ctx, None).await?;
    let cluster = ctx.cluster()?;
    let mut deleted = Vec::new();
    for object in listed.items {
        let name = meta::name(&object).unwrap_or_default().to_string();
        let at = ObjectRef { cluster, namespace: meta::namespace(&object), name: &name };
        ctx.rt.strategy.admit_caller_delete(&ctx.identity, cluster, &object)?;
        let outcome = storage::delete_cascading(
            &ctx.core,
            &ctx.rt,
            &at,
            &request.preconditions,
            request.cascade,
            request.options,
        )
        .await;
        match outcome {
            Ok(Deleted::Gone(_)) => deleted.push(object),
            Ok(Deleted::Pending(pending)) => deleted.push(pending),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    let list = json!({
        "kind": ctx.rt.list_kind(),
        "apiVersion": ctx.rt.api_version(),
        "metadata": {"resourceVersion": ctx.core.store.current_rv().to_string()},
        "items": deleted,
    });
    ctx.respond_list(200, &list, &[])
}

/// Reads DeleteOptions from the body, or from the query when the body is empty.
async fn read_delete_options(ctx: &Ctx, body: hyper::body::Incoming) -> ApiResult<DeleteRequest> {
    let length = ctx.header("content-length").and_then(|l| l.parse().ok());
    let bytes = rest::read_body(body, length).await?;
    let options = ctx.write_options()?;
    let fields = if bytes.iter().all(u8::is_ascii_whitespace) { options_from_query(ctx) } else { parse_body(&bytes)? };
    parse_delete_options(&fields, options)
}

fn parse_body(bytes: &[u8]) -> ApiResult<Map<String, Value>> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("the DeleteOptions body is not valid JSON: {e}")))?;
    match value {
        Value::Object(fields) => Ok(fields),
        _ => Err(ApiError::bad_request("the DeleteOptions body must be an object")),
    }
}

/// The DeleteOptions fields a query may carry, shaped like a body.
fn options_from_query(ctx: &Ctx) -> Map<String, Value> {
    let mut fields = Map::new();
    if let Some(policy) = ctx.param("propagationPolicy").filter(|p| !p.is_empty()) {
        fields.insert("propagationPolicy".into(), Value::from(policy));
    }
    if let Some(orphan) = ctx.param("orphanDependents").filter(|o| !o.is_empty()) {
        // kube's parameter codec reads booleans leniently; anything but "true" is false.
        fields.insert("orphanDependents".into(), Value::from(orphan == "true"));
    }
    fields
}

/// Decodes and validates DeleteOptions fields: 400 for wrong types, 422 (kube's
/// `ValidateDeleteOptions`) for values it refuses.
fn parse_delete_options(fields: &Map<String, Value>, mut options: WriteOptions) -> ApiResult<DeleteRequest> {
    let wrong_type = |field: &str, want: &str| {
        ApiError::bad_request(format!("DeleteOptions.{field} must be {want}, as in kube's meta/v1 DeleteOptions"))
    };
    let policy = match fields.get("propagationPolicy") {
        None | Some(Value::Null) => None,
        Some(Value::String(policy)) => Some(policy.as_str()),
        Some(_) => return Err(wrong_type("propagationPolicy", "a string")),
    };
    let orphan_dependents = match fields.get("orphanDependents") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(orphan)) => Some(*orphan),
        Some(_) => return Err(wrong_type("orphanDependents", "a boolean")),
    };
    let mut causes = Vec::new();
    if let (Some(policy), Some(_)) = (policy, orphan_dependents) {
        causes.push((
            "propagationPolicy".to_string(),
            format!("Invalid value: {policy:?}: orphanDependents and deletionPropagation cannot be both set"),
        ));
    }
    let parsed_policy = policy.and_then(Propagation::parse);
    if let (Some(policy), None) = (policy, parsed_policy) {
        let supported: Vec<String> =
            Propagation::VALUES.iter().chain(&["nil"]).map(|value| format!("{value:?}")).collect();
        causes.push((
            "propagationPolicy".to_string(),
            format!("Unsupported value: {policy:?}: supported values: {}", supported.join(", ")),
        ));
    }
    match fields.get("dryRun") {
        None | Some(Value::Null) => {}
        Some(Value::Array(values)) => {
            for value in values {
                match value.as_str() {
                    Some("All") => options.dry_run = true,
                    _ => causes
                        .push(("dryRun".to_string(), format!("Unsupported value: {value}: supported values: \"All\""))),
                }
            }
        }
        Some(_) => return Err(wrong_type("dryRun", "a list of strings")),
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid("DeleteOptions", "meta.k8s.io", "", &causes));
    }
    let precondition = |field: &str| fields.get("preconditions")?.get(field)?.as_str().map(str::to_string);
    Ok(DeleteRequest {
        preconditions: DeletePreconditions {
            uid: precondition("uid"),
            resource_version: precondition("resourceVersion"),
        },
        cascade: Cascade { policy: parsed_policy, orphan_dependents },
        options,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: Value) -> ApiResult<DeleteRequest> {
        let Value::Object(fields) = body else { panic!("test bodies are objects") };
        parse_delete_options(&fields, WriteOptions::default())
    }

    #[test]
    fn kubectl_cascade_flags_become_policies() {
        for (body, policy, orphan) in [
            (json!({}), None, None),
            (json!({"propagationPolicy": "Background"}), Some(Propagation::Background), None),
            (json!({"propagationPolicy": "Foreground"}), Some(Propagation::Foreground), None),
            (json!({"propagationPolicy": "Orphan"}), Some(Propagation::Orphan), None),
            (json!({"propagationPolicy": null, "orphanDependents": true}), None, Some(true)),
            (json!({"orphanDependents": false}), None, Some(false)),
        ] {
            let request = parse(body.clone()).unwrap();
            assert_eq!(request.cascade, Cascade { policy, orphan_dependents: orphan }, "{body}");
        }
    }

    #[test]
    fn invalid_options_are_refused_like_kube() {
        for (body, code, needle) in [
            (json!({"propagationPolicy": "Orphan", "orphanDependents": true}), 422, "cannot be both set"),
            (json!({"propagationPolicy": "orphan"}), 422, "Unsupported value: \"orphan\""),
            (json!({"dryRun": ["Some"]}), 422, "supported values: \"All\""),
            (json!({"propagationPolicy": 3}), 400, "propagationPolicy"),
            (json!({"orphanDependents": "yes"}), 400, "orphanDependents"),
        ] {
            let error = parse(body.clone()).unwrap_err();
            assert_eq!(error.code, code, "{body}: {error:?}");
            assert!(error.message.contains(needle), "{body}: {}", error.message);
        }
    }

    #[test]
    fn dry_run_and_preconditions_are_read() {
        let body = json!({"dryRun": ["All"], "preconditions": {"uid": "u1", "resourceVersion": "7"}});
        let request = parse(body).unwrap();
        assert!(request.options.dry_run);
        assert_eq!(request.preconditions.uid.as_deref(), Some("u1"));
        assert_eq!(request.preconditions.resource_version.as_deref(), Some("7"));
    }
}
