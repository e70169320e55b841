//! `as=Table` responses: the server-side printing `kubectl get` asks for.

use crate::registry::{Cell, Column, ResourceType};
use protocol::meta;
use serde_json::{json, Value};

/// What each row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object.
    None,
    /// The object's metadata as a PartialObjectMetadata (kube's default).
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter.
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// The NAME column every table starts with.
fn name_column() -> &'static Column {
    static NAME: std::sync::OnceLock<Column> = std::sync::OnceLock::new();
    NAME.get_or_init(|| Column {
        name: "Name".into(),
        kind: "string".into(),
        format: "name".into(),
        priority: 0,
        description: "Name must be unique within a namespace. Cannot be updated.".into(),
        cell: Cell::Name,
    })
}

/// Column definitions of a resource's table.
pub fn column_definitions(rt: &ResourceType) -> Vec<Value> {
    std::iter::once(name_column())
        .chain(rt.columns.iter())
        .map(|c| json!({"name": c.name, "type": c.kind, "format": c.format, "description": c.description, "priority": c.priority}))
        .collect()
}

/// One table row for an object.
pub fn row(rt: &ResourceType, object: &Value, include: IncludeObject, now: jiff::Timestamp) -> Value {
    let cells: Vec<Value> =
        std::iter::once(name_column()).chain(rt.columns.iter()).map(|c| cell(c, object, now)).collect();
    let mut row = json!({"cells": cells});
    match include {
        IncludeObject::None => {}
        IncludeObject::Object => row["object"] = object.clone(),
        IncludeObject::Metadata => {
            row["object"] = json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
            })
        }
    }
    row
}

/// A CRD printer column's cell: the first value the path selects (several are joined
/// with commas), typed as the column says; `date` columns show an age, as kube's custom
/// resource table convertor does. Nothing selected is an empty cell (kube shows `<none>`
/// client-side for it).
fn json_path_cell(path: &str, kind: &str, object: &Value, now: jiff::Timestamp) -> Value {
    let Ok(steps) = protocol::jsonpath::parse(path) else { return Value::Null };
    let found = protocol::jsonpath::evaluate(&steps, object);
    match (kind, found.as_slice()) {
        (_, []) => Value::Null,
        ("date", [value, ..]) => Value::from(age(value.as_str(), now)),
        (_, [value]) => (*value).clone(),
        _ => {
            let texts: Vec<String> = found
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            Value::from(texts.join(","))
        }
    }
}

/// A whole table.
pub fn table(
    rt: &ResourceType,
    objects: &[Value],
    include: IncludeObject,
    list_meta: Value,
    with_columns: bool,
) -> Value {
    let now = jiff::Timestamp::now();
    let rows: Vec<Value> = objects.iter().map(|o| row(rt, o, include, now)).collect();
    let columns = if with_columns { column_definitions(rt) } else { Vec::new() };
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

fn cell(column: &Column, object: &Value, now: jiff::Timestamp) -> Value {
    match &column.cell {
        Cell::Name => Value::from(meta::name(object).unwrap_or_default()),
        Cell::Age => Value::from(age(meta::meta_str(object, "creationTimestamp"), now)),
        Cell::CreatedAt => Value::from(meta::meta_str(object, "creationTimestamp").unwrap_or_default()),
        Cell::Pointer(p) => object.pointer(p).cloned().filter(|v| !v.is_null()).unwrap_or_else(|| Value::from("")),
        Cell::CountKeys(pointers) => {
            Value::from(pointers.iter().filter_map(|p| object.pointer(p)?.as_object().map(|m| m.len())).sum::<usize>())
        }
        Cell::CountItems(p) => Value::from(object.pointer(p).and_then(Value::as_array).map_or(0, Vec::len)),
        Cell::KindSlashName(p) => Value::from(kind_slash_name(object.pointer(p), false)),
        Cell::LowerKindSlashName(p) => Value::from(kind_slash_name(object.pointer(p), true)),
        Cell::AgeOf(pointers) => {
            let stamp =
                pointers.iter().find_map(|p| object.pointer(p).and_then(Value::as_str).filter(|s| !s.is_empty()));
            Value::from(age(stamp, now))
        }
        Cell::JsonPath(path) => json_path_cell(path, &column.kind, object, now),
        Cell::Computed(computed) => (computed.1)(object, now),
        Cell::SubjectsOfKind(kind) => {
            let subjects = object.get("subjects").and_then(Value::as_array).cloned().unwrap_or_default();
            let names: Vec<String> = subjects
                .iter()
                .filter(|s| s.get("kind").and_then(Value::as_str) == Some(*kind))
                .map(|s| {
                    let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
                    match s.get("namespace").and_then(Value::as_str) {
                        Some(ns) if *kind == "ServiceAccount" => format!("{ns}/{name}"),
                        _ => name.to_string(),
                    }
                })
                .collect();
            Value::from(names.join(", "))
        }
    }
}

fn kind_slash_name(reference: Option<&Value>, lower: bool) -> String {
    let get = |f: &str| reference.and_then(|r| r.get(f)).and_then(Value::as_str).unwrap_or_default();
    let kind = if lower { get("kind").to_lowercase() } else { get("kind").to_string() };
    format!("{kind}/{}", get("name"))
}

fn age(stamp: Option<&str>, now: jiff::Timestamp) -> String {
    let Some(then) = stamp.and_then(|s| s.parse::<jiff::Timestamp>().ok()) else {
        return "<unknown>".into();
    };
    let seconds = now.as_second() - then.as_second();
    human_duration(seconds)
}

/// Formats an age the way kubectl and kube-apiserver do (k8s.io/apimachinery duration.HumanDuration).
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    let seconds = seconds.max(0);
    let minutes = seconds / 60;
    let hours = seconds / 3600;
    let days = hours / 24;
    let with_rest = |major: i64, unit: &str, minor: i64, minor_unit: &str| {
        if minor == 0 {
            format!("{major}{unit}")
        } else {
            format!("{major}{unit}{minor}{minor_unit}")
        }
    };
    if seconds < 120 {
        format!("{seconds}s")
    } else if minutes < 10 {
        with_rest(minutes, "m", seconds % 60, "s")
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        with_rest(hours, "h", minutes % 60, "m")
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        with_rest(days, "d", hours % 24, "h")
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        with_rest(days / 365, "y", days % 365, "d")
    } else {
        format!("{}y", days / 365)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn durations_print_like_kubectl() {
        let h = 3600;
        let d = 24 * h;
        for (seconds, text) in [
            (-5, "<invalid>"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (600, "10m"),
            (3 * h, "3h"),
            (3 * h + 120, "3h2m"),
            (9 * h, "9h"),
            (50 * h, "2d2h"),
            (30 * d, "30d"),
            (3 * 365 * d + 4 * d, "3y4d"),
            (9 * 365 * d, "9y"),
        ] {
            assert_eq!(human_duration(seconds), text, "{seconds}");
        }
    }

    #[test]
    fn rows_compute_cells_from_the_registry() {
        let registry = Registry::builtin();
        let cm = registry.get("", "v1", "configmaps").unwrap();
        let object = serde_json::json!({"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z"}, "data": {"x": "1", "y": "2"}, "binaryData": {"z": ""}});
        let now: jiff::Timestamp = "2026-01-01T00:05:00Z".parse().unwrap();
        let cm_row = row(&cm, &object, IncludeObject::Metadata, now);
        assert_eq!(cm_row["cells"], serde_json::json!(["a", 3, "5m"]));
        assert_eq!(cm_row["object"]["kind"], "PartialObjectMetadata");
        let rb = registry.get("rbac.authorization.k8s.io", "v1", "rolebindings").unwrap();
        let binding = serde_json::json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [{"kind": "User", "name": "al"}, {"kind": "ServiceAccount", "name": "s", "namespace": "n"}]});
        let cells = row(&rb, &binding, IncludeObject::None, now)["cells"].clone();
        assert_eq!(cells[1], "ClusterRole/view");
        assert_eq!(cells[3], "al");
        assert_eq!(cells[5], "n/s");
    }
}
