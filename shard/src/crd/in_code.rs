//! Kinds a feature defines in code (OCM's, Fleet's), written as CustomResourceDefinitions
//! from which the registry builds their rows: groups, versions, names, scopes,
//! subresources and printer columns as the upstream project serves them, so its
//! manifests apply unchanged. Schemas spell out the fields the feature reads and keep
//! the rest free-form, so nothing a newer upstream release adds is pruned.

use apiserver::registry::definition::resource_types;
use apiserver::registry::strategy::Strategy;
use apiserver::registry::Registry;
use serde_json::{json, Value};
use std::sync::Arc;

/// The names of one kind.
pub struct Names<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub plural: &'a str,
    pub namespaced: bool,
    pub short_names: &'a [&'a str],
    pub categories: &'a [&'a str],
}

/// One definition of `names`, with its printer columns and the schemas of `spec` and
/// `status` (either may be absent: free-form).
pub fn definition(names: &Names, columns: Value, schema: Value) -> Value {
    let Names { group, version, kind, plural, namespaced, short_names, categories } = names;
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {
                "kind": kind,
                "listKind": format!("{kind}List"),
                "plural": plural,
                "singular": kind.to_lowercase(),
                "shortNames": short_names,
                "categories": categories,
            },
            "scope": if *namespaced { "Namespaced" } else { "Cluster" },
            "versions": [{
                "name": version,
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "apiVersion": string(),
                        "kind": string(),
                        "metadata": {"type": "object"},
                        "spec": schema.get("spec").cloned().unwrap_or_else(free),
                        "status": schema.get("status").cloned().unwrap_or_else(free),
                    },
                }},
            }],
        },
    })
}

/// Adds the rows of `definitions`, treated as a CRD's objects are (schema defaulting and
/// validation, generations) without a CRD object behind them.
pub fn register(registry: &mut Registry, definitions: &[Value]) {
    let strategy: Arc<dyn Strategy> = Arc::new(super::strategy::CustomResource { defined_in_code: true });
    let rows = definitions.iter().flat_map(|definition| resource_types(definition, &strategy)).collect();
    registry.add_rows(rows);
}

/// An object that keeps whatever it is given.
pub fn free() -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

pub fn list_of(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

pub fn string() -> Value {
    json!({"type": "string"})
}

/// A list of conditions, each kept as given.
pub fn conditions() -> Value {
    list_of(free())
}

pub fn column(name: &str, kind: &str, path: &str) -> Value {
    json!({"name": name, "type": kind, "jsonPath": path})
}

/// A column with the status of one condition.
pub fn condition_column(name: &str, condition: &str) -> Value {
    column(name, "string", &format!(".status.conditions[?(@.type==\"{condition}\")].status"))
}

pub fn age() -> Value {
    column("Age", "date", ".metadata.creationTimestamp")
}
