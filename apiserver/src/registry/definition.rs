//! A CustomResourceDefinition object → the table rows of its versions.

use super::strategy::Strategy;
use super::{age_column, Cell, Column, NameRule, ResourceType};
use protocol::meta;
use serde_json::Value;
use std::sync::Arc;

/// What a CRD says about one served version of its resource.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomVersion {
    /// `metadata.name` of the CRD (`<plural>.<group>`).
    pub crd_name: String,
    /// Whether requests may address this version.
    pub served: bool,
    /// The warning every response of a deprecated version carries.
    pub deprecation: Option<String>,
    /// `selectableFields`: field-selector names (`spec.color`) and the paths they read.
    pub selectable_fields: Vec<(String, Vec<protocol::jsonpath::Step>)>,
    /// The version's `openAPIV3Schema` (structural).
    pub schema: Value,
    /// The version objects are stored in.
    pub storage_version: String,
    /// The CRD is being deleted: its objects can be read and deleted, not created.
    pub terminating: bool,
    /// The identity hash of the APIExport this resource is bound from (bound CRDs only):
    /// objects are stored under `<resource>:<identity>`, apart from every other export's
    /// and from CRDs of the same name.
    pub identity: Option<String>,
}

/// JSON paths of the scale subresource (`.spec.replicas`), as the CRD gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// Where the desired replica count lives.
    pub spec_replicas: String,
    /// Where the observed replica count lives.
    pub status_replicas: String,
    /// Where a label selector string lives, if anywhere.
    pub label_selector: Option<String>,
}

/// The registry rows of a CRD: one per version, served or not (an unserved version is
/// never looked up by requests, but its row still finds the stored objects when the CRD,
/// its namespace or its logical cluster is deleted). A CRD without group, plural or kind
/// yields none (the write path rejects such CRDs).
pub fn resource_types(crd: &Value, strategy: &Arc<dyn Strategy>) -> Vec<ResourceType> {
    let Some(spec) = crd.get("spec") else { return Vec::new() };
    let text = |pointer: &str| spec.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string();
    let texts = |pointer: &str| -> Vec<String> {
        spec.pointer(pointer)
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default()
    };
    let group = text("/group");
    let resource = text("/names/plural");
    let kind = text("/names/kind");
    if group.is_empty() || resource.is_empty() || kind.is_empty() {
        return Vec::new();
    }
    let versions = spec.get("versions").and_then(Value::as_array).cloned().unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .unwrap_or_default()
        .to_string();
    let singular = Some(text("/names/singular")).filter(|s| !s.is_empty()).unwrap_or_else(|| kind.to_lowercase());
    let crd_name = meta::name(crd).unwrap_or_default().to_string();
    let terminating = meta::is_deleting(crd);
    versions
        .iter()
        .filter_map(|v| {
            let version = v.get("name").and_then(Value::as_str)?.to_string();
            let mut subresources = Vec::new();
            if v.pointer("/subresources/status").is_some() {
                subresources.push("status".to_string());
            }
            let scale = v.pointer("/subresources/scale").map(|scale| ScalePaths {
                spec_replicas: scale.get("specReplicasPath").and_then(Value::as_str).unwrap_or_default().into(),
                status_replicas: scale.get("statusReplicasPath").and_then(Value::as_str).unwrap_or_default().into(),
                label_selector: scale.get("labelSelectorPath").and_then(Value::as_str).map(str::to_string),
            });
            if scale.is_some() {
                subresources.push("scale".to_string());
            }
            let schema =
                v.pointer("/schema/openAPIV3Schema").cloned().unwrap_or_else(|| Value::Object(Default::default()));
            Some(ResourceType {
                group: group.clone(),
                version: version.clone(),
                resource: resource.clone(),
                singular: singular.clone(),
                kind: kind.clone(),
                short_names: texts("/names/shortNames"),
                categories: texts("/names/categories"),
                namespaced: text("/scope") != "Cluster",
                subresources,
                names: NameRule::Subdomain,
                strategy: strategy.clone(),
                return_deleted_object: true,
                columns: printer_columns(v.get("additionalPrinterColumns")),
                schema_name: schema_name(&group, &version, &kind),
                storage_group: group.clone(),
                custom: Some(Arc::new(CustomVersion {
                    crd_name: crd_name.clone(),
                    served: v.get("served").and_then(Value::as_bool) == Some(true),
                    selectable_fields: selectable_fields(v.get("selectableFields")),
                    deprecation: (v.get("deprecated").and_then(Value::as_bool) == Some(true)).then(|| {
                        v.get("deprecationWarning")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("{group}/{version} {kind} is deprecated"))
                    }),
                    schema,
                    storage_version: storage_version.clone(),
                    terminating,
                    identity: None,
                })),
                scale,
            })
        })
        .collect()
}

/// The OpenAPI components key of a custom kind, as kube names it: the group's labels
/// reversed, then version and kind (`com.example.stable.v1.CronTab`).
pub fn schema_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// A version's `selectableFields`: each `jsonPath` (`.spec.color`) becomes the field
/// selector name `spec.color`; paths that do not parse are left out (validation refuses
/// them on write).
fn selectable_fields(fields: Option<&Value>) -> Vec<(String, Vec<protocol::jsonpath::Step>)> {
    let paths = fields.and_then(Value::as_array).into_iter().flatten();
    paths
        .filter_map(|field| {
            let path = field.get("jsonPath").and_then(Value::as_str)?;
            let steps = protocol::jsonpath::parse(path).ok()?;
            Some((path.trim_start_matches('.').to_string(), steps))
        })
        .collect()
}

/// The printer columns of a version; without any, kube shows AGE alone.
fn printer_columns(columns: Option<&Value>) -> Vec<Column> {
    let Some(columns) = columns.and_then(Value::as_array).filter(|c| !c.is_empty()) else {
        return vec![age_column()];
    };
    columns
        .iter()
        .map(|c| {
            let text = |field: &str| c.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
            Column {
                name: text("name"),
                kind: text("type"),
                format: text("format"),
                priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0) as i32,
                description: text("description"),
                cell: Cell::JsonPath(text("jsonPath")),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crontab() -> Value {
        json!({
            "metadata": {"name": "crontabs.stable.example.com", "resourceVersion": "7"},
            "spec": {
                "group": "stable.example.com",
                "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object"}},
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                     "additionalPrinterColumns": [{"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}]},
                    {"name": "v1beta1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v0", "served": false, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}}
                ]
            }
        })
    }

    #[test]
    fn every_version_becomes_a_row() {
        let rows = resource_types(&crontab(), &super::super::strategy::generic());
        assert_eq!(rows.iter().map(|r| r.version.as_str()).collect::<Vec<_>>(), ["v1", "v1beta1", "v0"]);
        let served: Vec<bool> = rows.iter().map(|r| r.custom.as_ref().unwrap().served).collect();
        assert_eq!(served, [true, true, false]);
        let v1 = &rows[0];
        assert!(v1.namespaced);
        assert_eq!(v1.short_names, ["ct"]);
        assert_eq!(v1.subresources, ["status", "scale"]);
        assert_eq!(v1.schema_name, "com.example.stable.v1.CronTab");
        assert_eq!(v1.columns[0].cell, Cell::JsonPath(".spec.cronSpec".into()));
        assert_eq!(v1.custom.as_ref().unwrap().storage_version, "v1");
        assert!(rows[1].subresources.is_empty());
        assert_eq!(rows[1].columns[0].cell, Cell::Age);
    }

    #[test]
    fn incomplete_definitions_define_nothing() {
        assert!(resource_types(&json!({"spec": {"group": "g.io"}}), &super::super::strategy::generic()).is_empty());
    }
}
