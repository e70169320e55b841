//! Unknown-field handling per `fieldValidation`, using the published OpenAPI schemas.

use crate::http::status::{ApiError, ApiResult};
use crate::verbs::Ctx;
use serde_json::{json, Value};

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
    if !components.contains_key(ctx.rt.schema_name) {
        return Ok(Vec::new());
    }
    let root = json!({"$ref": format!("#/components/schemas/{}", ctx.rt.schema_name)});
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
