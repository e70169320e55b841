//! Unknown-field handling per `fieldValidation`, using the published OpenAPI schemas.

use crate::rest::status::{ApiError, ApiResult};
use crate::verbs::ctx::Ctx;
use serde_json::Value;

/// How the request wants unknown fields treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

fn field_validation(ctx: &Ctx) -> ApiResult<FieldValidation> {
    match ctx.param("fieldValidation") {
        // kube's default since 1.27 is Warn.
        None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
        Some("Ignore") => Ok(FieldValidation::Ignore),
        Some("Strict") => Ok(FieldValidation::Strict),
        Some(other) => {
            Err(ApiError::bad_request(format!("fieldValidation must be one of Ignore, Warn or Strict, not {other:?}")))
        }
    }
}

/// Drops fields the resource's schema does not declare; returns warnings for `Warn`, and
/// fails with 400 listing them for `Strict`.
pub fn prune_unknown(ctx: &Ctx, object: &mut Value) -> ApiResult<Vec<String>> {
    let mode = field_validation(ctx)?;
    let components = protocol::openapi::builtin_components();
    // Custom resources are always pruned by their structural schema, as in kube.
    if ctx.rt.custom.is_none() && !components.contains_key(&ctx.rt.schema_name) {
        return Ok(Vec::new());
    }
    let root = ctx.rt.schema_root();
    let unknown = protocol::schema::prune_unknown_fields(object, &root, components);
    let messages: Vec<String> = unknown.iter().map(|path| format!("unknown field \"{path}\"")).collect();
    match mode {
        FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(messages),
        FieldValidation::Strict if messages.is_empty() => Ok(Vec::new()),
        FieldValidation::Strict => {
            let what = format!("{}.{}", ctx.rt.kind, ctx.rt.version);
            Err(ApiError::bad_request(format!("strict decoding error: {}", messages.join(", "))).with_kind_hint(&what))
        }
    }
}

trait KindHint {
    fn with_kind_hint(self, kind: &str) -> Self;
}

impl KindHint for ApiError {
    /// kube prefixes strict decoding errors with the kind being decoded.
    fn with_kind_hint(mut self, kind: &str) -> Self {
        self.message = format!("{kind} in body: {}", self.message);
        self
    }
}

/// What a field must hold.
#[derive(Clone, Copy)]
enum Shape {
    Str,
    Object,
    StringMap,
    StringList,
}

/// Fields whose JSON type kube's typed decoding enforces and that the shard relies on;
/// a wrong type is a 400, as kube's "cannot unmarshal" is, instead of an object that
/// breaks every typed client listing it later.
fn typed_fields(kind: &str) -> &'static [(&'static str, Shape)] {
    const META: &[(&str, Shape)] = &[
        ("/metadata", Shape::Object),
        ("/metadata/name", Shape::Str),
        ("/metadata/generateName", Shape::Str),
        ("/metadata/namespace", Shape::Str),
        ("/metadata/resourceVersion", Shape::Str),
        ("/metadata/uid", Shape::Str),
        ("/metadata/labels", Shape::StringMap),
        ("/metadata/annotations", Shape::StringMap),
        ("/metadata/finalizers", Shape::StringList),
        ("/spec", Shape::Object),
        ("/status", Shape::Object),
    ];
    const CONFIG_MAP: &[(&str, Shape)] = &[("/data", Shape::StringMap), ("/binaryData", Shape::StringMap)];
    const SECRET: &[(&str, Shape)] =
        &[("/data", Shape::StringMap), ("/stringData", Shape::StringMap), ("/type", Shape::Str)];
    match kind {
        "ConfigMap" => CONFIG_MAP,
        "Secret" => SECRET,
        "" => META,
        _ => &[],
    }
}

/// Rejects objects whose well-known fields have the wrong JSON type.
pub fn check_types(ctx: &Ctx, object: &Value) -> ApiResult<()> {
    for (pointer, shape) in typed_fields("").iter().chain(typed_fields(&ctx.rt.kind)) {
        let Some(value) = object.pointer(pointer) else { continue };
        let ok = match shape {
            Shape::Str => value.is_string(),
            Shape::Object => value.is_object(),
            Shape::StringMap => value.as_object().is_some_and(|m| m.values().all(Value::is_string)),
            Shape::StringList => value.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
        };
        if !ok && !value.is_null() {
            let field = pointer.trim_start_matches('/').replace('/', ".");
            let wanted = match shape {
                Shape::Str => "a string",
                Shape::Object => "an object",
                Shape::StringMap => "an object of strings",
                Shape::StringList => "a list of strings",
            };
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: {field} must be {wanted}",
                ctx.rt.kind, ctx.rt.version, ctx.rt.kind
            )));
        }
    }
    if let Some(error) = ctx.rt.strategy.decode_error(&ctx.rt, object) {
        return Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {error}",
            ctx.rt.kind, ctx.rt.version, ctx.rt.kind
        )));
    }
    Ok(())
}
