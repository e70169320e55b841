//! Validation of what APIExports, APIBindings and APIExportEndpointSlices say about other
//! objects: export references (`{path, name}`), the schemas an export lists and its
//! permission claims. Pure; whether the referenced objects exist is the binding
//! controller's question, not admission's (they may live on another shard).

use protocol::crd::{BadValue, FieldError};
use protocol::path::ClusterPath;
use serde_json::Value;

/// APIBinding phase after which the export reference is fixed.
const BOUND: &str = protocol::types::BINDING_PHASE_BOUND;

/// An APIBinding: `spec.reference.export` names an export (`path` optional: empty means
/// the binding's own workspace); once Bound, the reference cannot change.
pub fn validate_binding(old: Option<&Value>, binding: &Value) -> Vec<FieldError> {
    let mut errors = match binding.pointer("/spec/reference/export") {
        Some(export) if !export.is_null() => export_reference_errors(export, "spec.reference.export"),
        _ => vec![FieldError::required(
            "spec.reference.export",
            "name the APIExport to bind as {path: <workspace path of the export>, name: <export name>}",
        )],
    };
    errors.extend(claim_errors(binding.pointer("/spec/permissionClaims"), "spec.permissionClaims", true));
    let bound = old.is_some_and(|old| old.pointer("/status/phase").and_then(Value::as_str) == Some(BOUND));
    if bound && old.and_then(|o| o.pointer("/spec/reference")) != binding.pointer("/spec/reference") {
        errors.push(FieldError::invalid(
            "spec.reference",
            BadValue::string("object"),
            "APIExport reference must not be changed once the APIBinding is Bound; create another APIBinding to bind another export",
        ));
    }
    errors
}

/// An APIExportEndpointSlice: `spec.export` names an export and never changes.
pub fn validate_endpoint_slice(old: Option<&Value>, slice: &Value) -> Vec<FieldError> {
    let export = slice.pointer("/spec/export").filter(|e| !e.is_null());
    let mut errors = match export {
        Some(export) => export_reference_errors(export, "spec.export"),
        None => vec![FieldError::required("spec.export.name", "the name of the APIExport whose endpoints to list")],
    };
    if old.is_some_and(|old| old.pointer("/spec/export") != slice.pointer("/spec/export")) {
        errors.push(FieldError::invalid(
            "spec.export",
            BadValue::string("object"),
            "APIExport reference must not be changed; create another APIExportEndpointSlice for another export",
        ));
    }
    errors
}

/// An APIExport: the schemas it lists are APIResourceSchema names, each once; its
/// permission claims name a resource and claim all objects or selected ones.
pub fn validate_export(export: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let schemas = export.pointer("/spec/latestResourceSchemas").and_then(Value::as_array);
    for (i, schema) in schemas.map_or(&[][..], Vec::as_slice).iter().enumerate() {
        let field = format!("spec.latestResourceSchemas[{i}]");
        let name = schema.as_str().unwrap_or_default();
        let problems = protocol::names::dns1123_subdomain(name);
        if !problems.is_empty() {
            let detail = format!("must be the name of an APIResourceSchema of this workspace: {}", problems.join(","));
            errors.push(FieldError::invalid(field, BadValue::string(name), detail));
        } else if schemas.is_some_and(|all| all[..i].contains(schema)) {
            errors.push(FieldError::duplicate(field, BadValue::string(name)));
        }
    }
    errors.extend(claim_errors(export.pointer("/spec/permissionClaims"), "spec.permissionClaims", false));
    errors
}

/// `{path, name}` of an export: a name, and a path that is a workspace path when given.
fn export_reference_errors(reference: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
    if name.is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), "the name of the APIExport"));
    } else {
        let problems = protocol::names::dns1123_subdomain(name);
        if !problems.is_empty() {
            errors.push(FieldError::invalid(format!("{at}.name"), BadValue::string(name), problems.join(",")));
        }
    }
    let path = reference.get("path").and_then(Value::as_str).unwrap_or_default();
    if !path.is_empty() {
        if let Err(problem) = ClusterPath::parse(path) {
            let detail = format!("{problem}; a workspace path is colon-separated workspace names, e.g. root:org:team");
            errors.push(FieldError::invalid(format!("{at}.path"), BadValue::string(path), detail));
        }
    }
    errors
}

/// Permission claims: each names a resource, and claims either all objects or selected
/// ones; a consumer's decision (`with_state`) is Accepted or Rejected.
fn claim_errors(claims: Option<&Value>, at: &str, with_state: bool) -> Vec<FieldError> {
    let claims = claims.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut errors = Vec::new();
    for (i, claim) in claims.iter().enumerate() {
        let field = format!("{at}[{i}]");
        if claim.get("resource").and_then(Value::as_str).is_none_or(str::is_empty) {
            errors.push(FieldError::required(format!("{field}.resource"), "the plural name of the claimed resource"));
        }
        let all = claim.get("all").and_then(Value::as_bool) == Some(true);
        let selected = claim.get("resourceSelector").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
        if all == selected {
            let detail = "either \"all\" or \"resourceSelector\" must be set";
            errors.push(FieldError::invalid(field.clone(), BadValue::string("object"), detail));
        }
        let state = claim.get("state").and_then(Value::as_str).unwrap_or_default();
        if with_state && !protocol::types::CLAIM_STATES.contains(&state) {
            let supported = &protocol::types::CLAIM_STATES;
            errors.push(FieldError::not_supported(format!("{field}.state"), BadValue::string(state), supported));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(|e| e.field.clone()).collect()
    }

    fn binding(reference: Value, phase: &str) -> Value {
        json!({"metadata": {"name": "b"}, "spec": {"reference": reference}, "status": {"phase": phase}})
    }

    #[test]
    fn binding_references_need_a_name_and_a_valid_path() {
        let cases = [
            (json!({"export": {"name": "widgets"}}), vec![]),
            (json!({"export": {"path": "root:org", "name": "widgets"}}), vec![]),
            (json!({}), vec!["spec.reference.export"]),
            (json!({"export": {"path": "root"}}), vec!["spec.reference.export.name"]),
            (json!({"export": {"path": "root::x", "name": "w"}}), vec!["spec.reference.export.path"]),
            (json!({"export": {"name": "Widgets"}}), vec!["spec.reference.export.name"]),
        ];
        for (reference, expected) in cases {
            let errors = validate_binding(None, &binding(reference.clone(), ""));
            assert_eq!(fields(&errors), expected, "{reference}");
        }
        let missing = validate_binding(None, &binding(json!({}), ""));
        assert!(missing[0].message().starts_with("Required value: name the APIExport"), "{}", missing[0].message());
    }

    #[test]
    fn the_reference_is_fixed_once_bound() {
        let before = json!({"export": {"path": "root:org", "name": "widgets"}});
        let after = json!({"export": {"path": "root:org", "name": "gadgets"}});
        for (phase, expected) in [("", vec![]), ("Binding", vec![]), ("Bound", vec!["spec.reference"])] {
            let old = binding(before.clone(), phase);
            let errors = validate_binding(Some(&old), &binding(after.clone(), phase));
            assert_eq!(fields(&errors), expected, "phase {phase:?}");
            assert!(validate_binding(Some(&old), &old).is_empty(), "an unchanged reference is always fine");
        }
    }

    #[test]
    fn claims_name_a_resource_and_what_is_claimed() {
        let claims = json!([
            {"resource": "configmaps", "all": true, "state": "Accepted"},
            {"all": true, "state": "Accepted"},
            {"resource": "secrets", "state": "Rejected"},
            {"resource": "secrets", "all": true, "state": "Maybe"},
        ]);
        let mut object = binding(json!({"export": {"name": "w"}}), "");
        object["spec"]["permissionClaims"] = claims.clone();
        let expected =
            ["spec.permissionClaims[1].resource", "spec.permissionClaims[2]", "spec.permissionClaims[3].state"];
        assert_eq!(fields(&validate_binding(None, &object)), expected);
        let export = json!({"spec": {"permissionClaims": claims}});
        assert_eq!(fields(&validate_export(&export)), expected[..2], "exports carry no state");
    }

    #[test]
    fn exports_list_schema_names_once() {
        let export = json!({"spec": {"latestResourceSchemas": ["v1.widgets.example.io", "v1.widgets.example.io", ""]}});
        let errors = validate_export(&export);
        assert_eq!(fields(&errors), ["spec.latestResourceSchemas[1]", "spec.latestResourceSchemas[2]"]);
        assert!(errors[0].message().starts_with("Duplicate value"), "{}", errors[0].message());
    }

    #[test]
    fn endpoint_slices_need_a_fixed_export() {
        let slice = |name: &str| json!({"spec": {"export": {"name": name}}});
        assert!(validate_endpoint_slice(None, &slice("widgets")).is_empty());
        assert_eq!(fields(&validate_endpoint_slice(None, &json!({"spec": {}}))), ["spec.export.name"]);
        assert_eq!(fields(&validate_endpoint_slice(None, &slice(""))), ["spec.export.name"]);
        assert_eq!(fields(&validate_endpoint_slice(Some(&slice("a")), &slice("b"))), ["spec.export"]);
    }
}
