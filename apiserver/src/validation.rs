//! Unknown-field handling per `fieldValidation`, using the published OpenAPI schemas.

use crate::rest::status::{ApiError, ApiResult};
use crate::verbs::ctx::Ctx;
use protocol::meta;
use serde_json::{Map, Value};

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
    if ctx.rt.custom.is_none() && protocol::openapi::builtin_schema(&ctx.rt.schema_name).is_none() {
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
/// breaks every typed client listing it later. Checked in this order: `metadata`, its
/// fields, then the top-level fields every kind has, then the kind's own.
const METADATA_FIELDS: &[(&str, Shape)] = &[
    ("name", Shape::Str),
    ("generateName", Shape::Str),
    ("namespace", Shape::Str),
    ("resourceVersion", Shape::Str),
    ("uid", Shape::Str),
    ("labels", Shape::StringMap),
    ("annotations", Shape::StringMap),
    ("finalizers", Shape::StringList),
];

/// The top-level fields every kind has, checked first (`metadata` before its own fields).
const COMMON_FIELDS: &[(&str, Shape)] =
    &[("metadata", Shape::Object), ("spec", Shape::Object), ("status", Shape::Object)];

/// The top-level fields of a kind of its own, checked after [`COMMON_FIELDS`].
fn kind_fields(kind: &str) -> &'static [(&'static str, Shape)] {
    match kind {
        "ConfigMap" => &[("data", Shape::StringMap), ("binaryData", Shape::StringMap)],
        "Secret" => &[("data", Shape::StringMap), ("stringData", Shape::StringMap), ("type", Shape::Str)],
        _ => &[],
    }
}

impl Shape {
    /// Whether `value` has this shape; `null` always does (an absent field).
    fn admits(self, value: &Value) -> bool {
        match self {
            _ if value.is_null() => true,
            Shape::Str => value.is_string(),
            Shape::Object => value.is_object(),
            Shape::StringMap => value.as_object().is_some_and(|m| m.values().all(Value::is_string)),
            Shape::StringList => value.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
        }
    }

    fn wanted(self) -> &'static str {
        match self {
            Shape::Str => "a string",
            Shape::Object => "an object",
            Shape::StringMap => "an object of strings",
            Shape::StringList => "a list of strings",
        }
    }
}

/// The index in `fields` of the first (in `fields`' order) field of `map` whose value has
/// the wrong shape. The map's entries are walked once and matched by name, instead of
/// hashing every field name into the map (a SipHash lookup each, on every create).
fn first_wrong(map: &Map<String, Value>, fields: &[(&str, Shape)]) -> Option<usize> {
    map.iter()
        .filter_map(|(key, value)| {
            let index = fields.iter().position(|(name, _)| name == key)?;
            (!fields[index].1.admits(value)).then_some(index)
        })
        .min()
}

/// The first well-known field of a `kind` object that holds the wrong JSON type, as
/// `<field> must be <type>`.
fn wrong_type(kind: &str, object: &Value) -> Option<String> {
    let root = object.as_object()?;
    let message = |prefix: &str, (name, shape): (&str, Shape)| format!("{prefix}{name} must be {}", shape.wanted());
    let wrong_common = first_wrong(root, COMMON_FIELDS);
    // `metadata` itself (index 0) comes before its fields, which come before the rest.
    if wrong_common == Some(0) {
        return Some(message("", COMMON_FIELDS[0]));
    }
    if let Some(Value::Object(metadata)) = meta::get(root, "metadata") {
        if let Some(index) = first_wrong(metadata, METADATA_FIELDS) {
            return Some(message("metadata.", METADATA_FIELDS[index]));
        }
    }
    if let Some(index) = wrong_common {
        return Some(message("", COMMON_FIELDS[index]));
    }
    let own = kind_fields(kind);
    first_wrong(root, own).map(|index| message("", own[index]))
}

/// Rejects objects whose well-known fields have the wrong JSON type.
pub fn check_types(ctx: &Ctx, object: &Value) -> ApiResult<()> {
    let error = wrong_type(&ctx.rt.kind, object).or_else(|| ctx.rt.strategy.decode_error(&ctx.rt, object));
    match error {
        Some(error) => Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {error}",
            ctx.rt.kind, ctx.rt.version, ctx.rt.kind
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::wrong_type;
    use serde_json::json;

    #[test]
    fn well_known_fields_of_the_wrong_type_are_named() {
        let cases = [
            (json!({"metadata": {"name": "a"}, "data": {"k": "v"}}), None),
            (json!({"metadata": {"name": "a", "labels": null}, "data": null}), None),
            (json!({"metadata": "a"}), Some("metadata must be an object")),
            (json!({"metadata": {"name": 1}}), Some("metadata.name must be a string")),
            (json!({"metadata": {"labels": {"a": 1}}}), Some("metadata.labels must be an object of strings")),
            (json!({"metadata": {"finalizers": ["a", 2]}}), Some("metadata.finalizers must be a list of strings")),
            (json!({"metadata": {}, "spec": []}), Some("spec must be an object")),
            (json!({"metadata": {}, "data": {"k": 1}}), Some("data must be an object of strings")),
            // Several wrong: metadata, then its fields in their order, then spec and status,
            // then the kind's own, whatever order the object lists them in.
            (json!({"spec": [], "metadata": "a"}), Some("metadata must be an object")),
            (json!({"spec": [], "metadata": {"uid": 1, "name": 2}}), Some("metadata.name must be a string")),
            (json!({"data": 1, "status": 2, "metadata": {"name": "a"}}), Some("status must be an object")),
            (json!({"binaryData": 1, "data": 2}), Some("data must be an object of strings")),
            (json!("not an object"), None),
        ];
        for (object, expected) in cases {
            assert_eq!(wrong_type("ConfigMap", &object).as_deref(), expected, "{object}");
        }
        // Secrets check their own fields; other kinds only the common ones.
        assert_eq!(wrong_type("Secret", &json!({"type": 1})).as_deref(), Some("type must be a string"));
        assert_eq!(wrong_type("Pod", &json!({"data": 1})), None);
    }
}
