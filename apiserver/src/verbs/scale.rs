//! The `scale` subresource: an `autoscaling/v1` Scale view of the replica count at a
//! row's spec-replicas path (a CRD's `specReplicasPath`, a Deployment's `.spec.replicas`),
//! which `kubectl scale` and autoscalers read and write.

use super::ctx::Ctx;
use crate::patch::{self, PatchType};
use crate::registry::definition::ScalePaths;
use crate::rest::status::{ApiError, ApiResult};
use crate::rest::{self, negotiate, Response};
use crate::storage;
use protocol::meta;
use serde_json::{json, Map, Value};

fn paths(ctx: &Ctx) -> ApiResult<&ScalePaths> {
    ctx.rt
        .scale
        .as_ref()
        .ok_or_else(|| ApiError::not_found_message(format!("{} has no scale subresource", ctx.rt.resource)))
}

/// GET: the object's Scale.
pub fn get(ctx: &Ctx) -> ApiResult<Response> {
    let (object, _) = storage::get(&ctx.core, &ctx.rt, &ctx.object_ref()?)?;
    ctx.respond_object(200, &scale_of(paths(ctx)?, &object), &[])
}

/// PUT and PATCH: a new Scale (the body, or the current Scale patched); only
/// `spec.replicas` is written back.
pub async fn write(ctx: &Ctx, body: hyper::body::Incoming) -> ApiResult<Response> {
    let paths = paths(ctx)?.clone();
    let options = ctx.write_options()?;
    let length = ctx.header("content-length").and_then(|l| l.parse().ok());
    let bytes = rest::read_body(body, length).await?;
    let patch_type = match ctx.req.verb {
        crate::rest::request_info::Verb::Patch => {
            let essence = negotiate::essence(ctx.header("content-type"));
            Some(
                PatchType::from_media_type(&essence)
                    .ok_or_else(|| ApiError::unsupported_media_type(&essence, PatchType::MEDIA_TYPES))?,
            )
        }
        _ => None,
    };
    let body: Value = match patch_type {
        Some(_) => serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::bad_request(format!("the patch is not valid JSON: {e}")))?,
        None => negotiate::decode_object(ctx.header("content-type"), &bytes)?,
    };
    let at = ctx.object_ref()?;
    let updated = storage::guaranteed_update(&ctx.core, &ctx.rt, &at, None, options, |current| {
        let mut scale = scale_of(&paths, current);
        match patch_type {
            None => scale = body.clone(),
            Some(PatchType::Json) => patch::apply_json_patch(&mut scale, &body).map_err(ApiError::bad_request)?,
            Some(_) => patch::apply_merge_patch(&mut scale, &body).map_err(ApiError::bad_request)?,
        }
        let wanted = meta::meta_str(&scale, "resourceVersion").unwrap_or_default();
        let actual = meta::meta_str(current, "resourceVersion").unwrap_or_default();
        if !wanted.is_empty() && wanted != actual {
            let conflict = store::StoreError::Conflict {
                expected: wanted.parse().unwrap_or(0),
                actual: actual.parse().unwrap_or(0),
            };
            return Err(storage::object_error(&ctx.rt, at.name, conflict));
        }
        let replicas = match scale.pointer("/spec/replicas") {
            Some(Value::Number(n)) if n.as_i64().is_some_and(|r| r >= 0) => n.clone(),
            Some(other) => {
                return Err(ApiError::invalid(
                    "Scale",
                    "autoscaling",
                    at.name,
                    &[("spec.replicas".into(), format!("Invalid value: {other}: must be greater than or equal to 0"))],
                ))
            }
            None => 0.into(),
        };
        let mut new = current.clone();
        set_path(&mut new, &paths.spec_replicas, Value::Number(replicas));
        crate::managed_fields::track_update(ctx, Some(current), &mut new)?;
        Ok(new)
    })
    .await?;
    ctx.respond_object(200, &scale_of(&paths, &updated), &[])
}

/// The Scale of an object.
fn scale_of(paths: &ScalePaths, object: &Value) -> Value {
    let read = |path: &str| {
        protocol::jsonpath::parse(path)
            .ok()
            .and_then(|steps| protocol::jsonpath::evaluate(&steps, object).first().cloned().cloned())
    };
    let mut status = json!({"replicas": read(&paths.status_replicas).unwrap_or_else(|| json!(0))});
    if let Some(selector) = paths.label_selector.as_deref().and_then(read) {
        status["selector"] = selector_text(selector);
    }
    let mut metadata = Map::new();
    for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(value) = object.pointer(&format!("/metadata/{field}")) {
            metadata.insert(field.into(), value.clone());
        }
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": read(&paths.spec_replicas).unwrap_or_else(|| json!(0))},
        "status": status,
    })
}

/// A Scale's `status.selector` is text: a CRD's labelSelectorPath names a string, kept as
/// it is; a built-in kind's names its `spec.selector` LabelSelector, rendered as kube does
/// (`app=web,tier in (a,b)`).
fn selector_text(selector: Value) -> Value {
    match &selector {
        Value::Object(_) => protocol::selector::LabelSelector::from_label_selector_json(&selector)
            .map(|parsed| Value::from(parsed.to_string()))
            .unwrap_or(selector),
        _ => selector,
    }
}

/// Sets a value at a simple `.a.b.c` path, creating objects on the way.
fn set_path(object: &mut Value, path: &str, value: Value) {
    let fields: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let mut current = object;
    for field in &fields[..fields.len() - 1] {
        if !current.get(*field).is_some_and(Value::is_object) {
            current[*field] = json!({});
        }
        current = &mut current[*field];
    }
    current[fields[fields.len() - 1]] = value;
}
