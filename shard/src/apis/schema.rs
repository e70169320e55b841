//! APIResourceSchemas: defaults, kcp's naming rule and validation of each version's schema
//! with the CustomResourceDefinition rules of [`protocol::crd`]. Pure.
//!
//! An APIResourceSchema is a CRD spec in all but two respects: it is named
//! `<prefix>.<plural>.<group>` (so that a changed schema gets a new name) and a version's
//! `schema` is the OpenAPI v3 schema itself rather than `{openAPIV3Schema: …}`. Each
//! version is therefore checked by building a one-version CRD around it and mapping the
//! CRD's field paths back onto the APIResourceSchema (`spec.validation.openAPIV3Schema…`
//! → `spec.versions[i].schema…`), so users see paths into what they wrote.

use protocol::crd::{validate_crd, BadValue, FieldError};
use protocol::meta;
use serde_json::{json, Map, Value};

/// Groups of a single segment that kube's own APIs use and kcp therefore accepts.
const SINGLE_SEGMENT_GROUPS: [&str; 5] = ["apps", "batch", "extensions", "policy", "autoscaling"];

/// What kube defaults in a CRD's names, and kcp's default for `served`:
/// `names.singular` (the lower-cased kind), `names.listKind` (`<kind>List`) and
/// `versions[].served` (true).
pub fn apply_defaults(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
        let missing = |names: &Map<String, Value>, field: &str| {
            names.get(field).and_then(Value::as_str).is_none_or(str::is_empty)
        };
        if missing(names, "singular") && !kind.is_empty() {
            names.insert("singular".into(), Value::from(kind.to_lowercase()));
        }
        if missing(names, "listKind") && !kind.is_empty() {
            names.insert("listKind".into(), Value::from(format!("{kind}List")));
        }
    }
    if let Some(versions) = spec.get_mut("versions").and_then(Value::as_array_mut) {
        for version in versions.iter_mut().filter_map(Value::as_object_mut) {
            if version.get("served").is_none_or(Value::is_null) {
                version.insert("served".into(), Value::from(true));
            }
        }
    }
}

/// Validates a new APIResourceSchema (after [`apply_defaults`]).
pub fn validate(object: &Value) -> Vec<FieldError> {
    let spec = object.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut errors = name_errors(meta::name(object).unwrap_or_default(), &spec);
    errors.extend(group_errors(text(&spec, "/group")));
    errors.extend(version_list_errors(&spec));
    errors.extend(crd_errors(object, &spec));
    errors
}

/// Validates an update: the whole spec is immutable (a changed API is a new schema).
pub fn validate_update(old: &Value, new: &Value) -> Vec<FieldError> {
    if old.get("spec") == new.get("spec") {
        return Vec::new();
    }
    let name = meta::name(old).unwrap_or_default();
    let detail = format!(
        "spec is immutable: an APIResourceSchema never changes once created; create one under a new name \
         (e.g. v2.{}) and list it in the APIExport's spec.latestResourceSchemas instead",
        name.split_once('.').map_or(name, |(_, rest)| rest)
    );
    vec![FieldError::forbidden("spec", detail)]
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// kcp's rule: the name is `<prefix>.<plural>.<group>`, the group `core` when empty, and
/// the prefix a DNS-1035-like label (`v1`, `today`, `rev-3`).
fn name_errors(name: &str, spec: &Value) -> Vec<FieldError> {
    let plural = text(spec, "/names/plural");
    if plural.is_empty() || name.is_empty() {
        // spec.names.plural is reported as required; metadata.name by the generic checks.
        return Vec::new();
    }
    let group = match text(spec, "/group") {
        "" => "core",
        group => group,
    };
    let suffix = format!(".{plural}.{group}");
    let invalid = |detail: String| vec![FieldError::invalid("metadata.name", BadValue::string(name), detail)];
    let Some(prefix) = name.strip_suffix(&suffix) else {
        return invalid(format!(
            "must end in {suffix}: APIResourceSchemas are named <prefix>.<plural>.<group>, e.g. v1{suffix}"
        ));
    };
    if !is_name_prefix(prefix) {
        return invalid(format!(
            "must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of {suffix}: start the name with a lower-case letter, e.g. v1{suffix}"
        ));
    }
    Vec::new()
}

fn is_name_prefix(prefix: &str) -> bool {
    let bytes = prefix.as_bytes();
    let inner = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-';
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_lowercase()
                && (last.is_ascii_lowercase() || last.is_ascii_digit())
                && bytes.iter().all(inner)
        }
        _ => false,
    }
}

/// kcp's group rule: empty is the core group, `core` itself is refused, and other groups
/// are DNS subdomains with a dot (but for kube's own single-word groups).
fn group_errors(group: &str) -> Vec<FieldError> {
    let invalid = |detail: String| vec![FieldError::invalid("spec.group", BadValue::string(group), detail)];
    if group.is_empty() {
        return Vec::new();
    }
    if group == "core" {
        return invalid("must be empty string for the core group".into());
    }
    let problems = protocol::names::dns1123_subdomain(group);
    if !problems.is_empty() {
        return invalid(problems.join(","));
    }
    if !group.contains('.') && !SINGLE_SEGMENT_GROUPS.contains(&group) {
        return invalid("should be a domain with at least one dot".into());
    }
    Vec::new()
}

/// The versions as a whole: present, unique names, exactly one storage version.
fn version_list_errors(spec: &Value) -> Vec<FieldError> {
    let versions = spec.get("versions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if versions.is_empty() {
        return vec![FieldError::required("spec.versions", "list at least one version, with storage: true")];
    }
    let mut errors = Vec::new();
    let names: Vec<&str> = versions.iter().map(|v| text(v, "/name")).collect();
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            errors.push(FieldError::duplicate(format!("spec.versions[{i}].name"), BadValue::string(name)));
        }
    }
    let storage = versions.iter().filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true)).count();
    if storage != 1 {
        let detail = format!("must have exactly one version marked as storage version, not {storage}");
        errors.push(FieldError::invalid("spec.versions", BadValue::string(&names.join(",")), detail));
    }
    errors
}

/// Names, scope and conversion once, then each version, as a CRD would be checked.
fn crd_errors(object: &Value, spec: &Value) -> Vec<FieldError> {
    let versions = spec.get("versions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if versions.is_empty() {
        let crd = crd_shaped(object, spec, None);
        return validate_crd(&crd).into_iter().filter_map(|e| map_field(e, None, true)).collect();
    }
    let mut errors = Vec::new();
    for (i, version) in versions.iter().enumerate() {
        let schema_problem = schema_shape_error(version, i);
        let crd = crd_shaped(object, spec, Some(version));
        let found = validate_crd(&crd).into_iter();
        // Without a usable schema, the CRD's complaints about it would only repeat ours.
        let found = found.filter(|e| schema_problem.is_none() || !e.field.starts_with("spec.validation"));
        errors.extend(found.filter_map(|e| map_field(e, Some(i), i == 0)));
        errors.extend(schema_problem);
    }
    errors
}

/// A version's `schema` must be the OpenAPI schema object itself.
fn schema_shape_error(version: &Value, i: usize) -> Option<FieldError> {
    let field = format!("spec.versions[{i}].schema");
    match version.get("schema") {
        None | Some(Value::Null) => Some(FieldError::required(field, "the version's OpenAPI v3 schema")),
        Some(Value::Object(map)) if map.len() == 1 && map.contains_key("openAPIV3Schema") => Some(FieldError::invalid(
            field,
            BadValue::string("object"),
            "holds the OpenAPI v3 schema itself, not {openAPIV3Schema: ...} as a CustomResourceDefinition does: move the schema up one level",
        )),
        Some(Value::Object(_)) => None,
        Some(other) => Some(FieldError::invalid(
            field,
            BadValue::Json(other.clone()),
            "must be an object: the version's OpenAPI v3 schema",
        )),
    }
}

/// A CustomResourceDefinition with this schema's spec and (at most) one of its versions,
/// marked served and storage so that only per-version rules can fail on it.
fn crd_shaped(object: &Value, spec: &Value, version: Option<&Value>) -> Value {
    let mut crd_spec = Map::new();
    for field in ["group", "names", "scope", "conversion"] {
        if let Some(value) = spec.get(field).filter(|v| !v.is_null()) {
            crd_spec.insert(field.into(), value.clone());
        }
    }
    let versions: Vec<Value> = version.into_iter().map(crd_version).collect();
    crd_spec.insert("versions".into(), Value::Array(versions));
    let mut metadata = Map::new();
    if let Some(annotations) = object.pointer("/metadata/annotations") {
        // The API-approval annotation of protected groups is checked like a CRD's.
        metadata.insert("annotations".into(), annotations.clone());
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": crd_spec,
    })
}

fn crd_version(version: &Value) -> Value {
    let mut out = Map::new();
    for field in ["name", "deprecated", "deprecationWarning", "subresources", "additionalPrinterColumns"] {
        if let Some(value) = version.get(field).filter(|v| !v.is_null()) {
            out.insert(field.into(), value.clone());
        }
    }
    out.insert("served".into(), Value::from(true));
    out.insert("storage".into(), Value::from(true));
    if let Some(schema) = version.get("schema").filter(|s| s.is_object()) {
        out.insert("schema".into(), json!({"openAPIV3Schema": schema}));
    }
    Value::Object(out)
}

/// Moves a CRD finding onto the APIResourceSchema: version findings to
/// `spec.versions[i]`, the spec-wide ones (names, scope, conversion, approval) kept when
/// `general`; findings about what the CRD form invented (its name, group, stored
/// versions, the storage flags) are dropped, since they are checked here in kcp's terms.
fn map_field(mut error: FieldError, version: Option<usize>, general: bool) -> Option<FieldError> {
    let field = error.field.clone();
    if let Some(i) = version {
        let at = format!("spec.versions[{i}]");
        let moves = [
            ("spec.validation.openAPIV3Schema", format!("{at}.schema")),
            ("spec.subresources", format!("{at}.subresources")),
            ("spec.additionalPrinterColumns", format!("{at}.additionalPrinterColumns")),
            ("spec.versions[0]", at.clone()),
        ];
        for (from, to) in moves {
            if let Some(rest) = strip_path_prefix(&field, from) {
                if from == "spec.versions[0]" && rest.starts_with(".schema") {
                    // The schema's absence is reported in kcp's terms by `schema_shape_error`.
                    return None;
                }
                error.field = format!("{to}{rest}");
                return Some(error);
            }
        }
    }
    let general_fields = ["spec.names", "spec.scope", "spec.conversion", "metadata.annotations"];
    let keep = general && general_fields.iter().any(|prefix| strip_path_prefix(&field, prefix).is_some());
    keep.then_some(error)
}

/// The rest of `field` after `prefix`, if `prefix` is a whole leading part of the path.
fn strip_path_prefix<'a>(field: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = field.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(name: &str, spec: Value) -> Value {
        let mut object = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema", "metadata": {"name": name}, "spec": spec});
        apply_defaults(&mut object);
        object
    }

    fn widgets_spec() -> Value {
        json!({
            "group": "example.io",
            "names": {"plural": "widgets", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1",
                "storage": true,
                "schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}
                },
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]
            }]
        })
    }

    fn fields(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(|e| e.field.clone()).collect()
    }

    #[test]
    fn defaults_fill_singular_list_kind_and_served() {
        let object = schema("v1.widgets.example.io", widgets_spec());
        assert_eq!(object["spec"]["names"]["singular"], "widget");
        assert_eq!(object["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(object["spec"]["versions"][0]["served"], true);
        let mut explicit = widgets_spec();
        explicit["versions"][0]["served"] = json!(false);
        explicit["names"]["singular"] = json!("gadget");
        let object = schema("v1.widgets.example.io", explicit);
        assert_eq!(object["spec"]["versions"][0]["served"], false, "an explicit value stays");
        assert_eq!(object["spec"]["names"]["singular"], "gadget");
    }

    #[test]
    fn a_good_schema_passes() {
        let errors = validate(&schema("v1.widgets.example.io", widgets_spec()));
        assert!(errors.is_empty(), "{errors:?}");
        let mut core = widgets_spec();
        core["group"] = json!("");
        let errors = validate(&schema("today.widgets.core", core));
        assert!(errors.is_empty(), "core group: {errors:?}");
    }

    #[test]
    fn names_follow_prefix_plural_group() {
        let cases = [
            ("widgets.example.io", "must end in .widgets.example.io"),
            ("v1.gadgets.example.io", "must end in .widgets.example.io"),
            ("1v.widgets.example.io", "must match ^[a-z]"),
            ("v1-.widgets.example.io", "must match ^[a-z]"),
        ];
        for (name, expected) in cases {
            let errors = validate(&schema(name, widgets_spec()));
            assert_eq!(fields(&errors), ["metadata.name"], "{name}");
            assert!(errors[0].message().contains(expected), "{name}: {}", errors[0].message());
        }
    }

    #[test]
    fn spec_errors_are_reported_at_their_fields() {
        // (JSON pointer into the spec, value put there, fields reported)
        let cases = [
            ("/group", json!("core"), vec!["metadata.name", "spec.group"]),
            ("/group", json!("example"), vec!["metadata.name", "spec.group"]),
            ("/scope", json!("Global"), vec!["spec.scope"]),
            ("/versions/0/storage", json!(false), vec!["spec.versions"]),
            ("/versions", json!([]), vec!["spec.versions"]),
            // Without a kind, singular and listKind cannot be defaulted either.
            ("/names/kind", json!(""), vec!["spec.names.singular", "spec.names.kind", "spec.names.listKind"]),
            ("/versions/0/name", json!("V1"), vec!["spec.versions[0].name"]),
            (
                "/versions/0/schema/properties/spec/type",
                json!("banana"),
                vec!["spec.versions[0].schema.properties[spec].type"],
            ),
            ("/versions/0/schema", json!(null), vec!["spec.versions[0].schema"]),
            ("/versions/0/schema", json!({"openAPIV3Schema": {"type": "object"}}), vec!["spec.versions[0].schema"]),
            (
                "/versions/0/additionalPrinterColumns/0/type",
                json!("bogus"),
                vec!["spec.versions[0].additionalPrinterColumns[0].type"],
            ),
        ];
        for (pointer, value, expected) in cases {
            let mut spec = widgets_spec();
            *spec.pointer_mut(pointer).expect("the pointer exists") = value.clone();
            let got = fields(&validate(&schema("v1.widgets.example.io", spec)));
            assert_eq!(got, expected, "{pointer} = {value}");
        }
    }

    #[test]
    fn each_version_is_checked_and_named_by_its_index() {
        let mut spec = widgets_spec();
        let mut second = spec["versions"][0].clone();
        second["name"] = json!("v2");
        second["storage"] = json!(false);
        second["schema"]["properties"]["spec"]["type"] = json!(7);
        spec["versions"].as_array_mut().unwrap().push(second);
        let errors = validate(&schema("v1.widgets.example.io", spec.clone()));
        assert_eq!(fields(&errors), ["spec.versions[1].schema.properties[spec].type"], "{errors:?}");
        spec["versions"][1]["name"] = json!("v1");
        spec["versions"][1]["schema"] = spec["versions"][0]["schema"].clone();
        assert_eq!(fields(&validate(&schema("v1.widgets.example.io", spec))), ["spec.versions[1].name"]);
    }

    #[test]
    fn the_spec_is_immutable() {
        let old = schema("v1.widgets.example.io", widgets_spec());
        let mut relabelled = old.clone();
        relabelled["metadata"]["labels"] = json!({"a": "b"});
        assert!(validate_update(&old, &relabelled).is_empty());
        let mut changed = old.clone();
        changed["spec"]["scope"] = json!("Cluster");
        let errors = validate_update(&old, &changed);
        assert_eq!(fields(&errors), ["spec"]);
        let message = errors[0].message();
        assert!(message.contains("spec is immutable") && message.contains("v2.widgets.example.io"), "{message}");
    }
}
