//! Workspace types: defaulting a workspace's type, the allowed parent/child rules and the
//! initializers a type brings. Pure: the caller supplies a lookup for type objects.

use serde_json::{json, Value};

/// The type every workspace gets when neither it nor its parent's type says otherwise.
pub const DEFAULT_TYPE: TypeRef<'static> = TypeRef { path: "root", name: "universal" };

/// `{name, path}` of a WorkspaceType, `path` being the canonical path of the logical
/// cluster that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeRef<'a> {
    /// Canonical path of the logical cluster holding the type.
    pub path: &'a str,
    /// The WorkspaceType's name.
    pub name: &'a str,
}

impl TypeRef<'_> {
    /// `path:name`, the form initializers and the type annotation use.
    pub fn qualified(&self) -> String {
        format!("{}:{}", self.path, self.name)
    }

    /// The JSON form stored in `spec.type`.
    pub fn to_json(self) -> Value {
        json!({"name": self.name, "path": self.path})
    }
}

/// Splits `path:name` (the last segment is the name).
pub fn parse_qualified(qualified: &str) -> Option<TypeRef<'_>> {
    let (path, name) = qualified.rsplit_once(':')?;
    (!path.is_empty() && !name.is_empty()).then_some(TypeRef { path, name })
}

/// A `{name, path}` object (as in `spec.type` or `limitAllowedChildren.types`), with an
/// empty path read as `default_path`.
pub fn reference<'a>(value: &'a Value, default_path: &'a str) -> Option<TypeRef<'a>> {
    let name = value.get("name").and_then(Value::as_str).filter(|n| !n.is_empty())?;
    let path = value.get("path").and_then(Value::as_str).filter(|p| !p.is_empty()).unwrap_or(default_path);
    Some(TypeRef { path, name })
}

/// Why a workspace may not have a type under a parent.
pub fn placement_errors(child: TypeRef<'_>, child_type: &Value, parent: Option<(TypeRef<'_>, &Value)>) -> Vec<String> {
    let mut errors = Vec::new();
    let allowed = |limit: Option<&Value>, candidate: TypeRef<'_>, default_path: &str| -> bool {
        let Some(limit) = limit else { return true };
        if limit.get("none").and_then(Value::as_bool) == Some(true) {
            return false;
        }
        match limit.get("types").and_then(Value::as_array) {
            Some(types) if !types.is_empty() => types.iter().any(|t| reference(t, default_path) == Some(candidate)),
            _ => true,
        }
    };
    if let Some((parent_ref, parent_type)) = parent {
        if !allowed(parent_type.pointer("/spec/limitAllowedChildren"), child, parent_ref.path) {
            errors.push(format!(
                "workspace type {} does not allow children of type {}",
                parent_ref.qualified(),
                child.qualified()
            ));
        }
        if !allowed(child_type.pointer("/spec/limitAllowedParents"), parent_ref, child.path) {
            errors.push(format!(
                "workspace type {} only allows parents of the types it lists in spec.limitAllowedParents, not {}",
                child.qualified(),
                parent_ref.qualified()
            ));
        }
    } else if child_type
        .pointer("/spec/limitAllowedParents/types")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
    {
        errors.push(format!(
            "workspace type {} limits its parents, and the parent workspace's type is not known",
            child.qualified()
        ));
    }
    errors
}

/// The type a new child of a workspace of type `parent_type` gets by default.
pub fn default_child<'a>(parent_type: Option<(TypeRef<'a>, &'a Value)>) -> TypeRef<'a> {
    parent_type
        .and_then(|(parent, object)| {
            object.pointer("/spec/defaultChildWorkspaceType").and_then(|r| reference(r, parent.path))
        })
        .unwrap_or(DEFAULT_TYPE)
}

/// The initializers of a type and of every type it extends (transitively, each once):
/// `path:name` of each that sets `spec.initializer`. `lookup` finds a type object;
/// a missing extended type is an error naming it.
pub fn initializers<'a, F>(root: TypeRef<'a>, root_object: &'a Value, lookup: F) -> Result<Vec<String>, String>
where
    F: Fn(TypeRef<'_>) -> Option<Value>,
{
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut pending: Vec<(String, Value)> = vec![(root.qualified(), root_object.clone())];
    while let Some((qualified, object)) = pending.pop() {
        if seen.contains(&qualified) {
            continue;
        }
        seen.push(qualified.clone());
        if object.pointer("/spec/initializer").and_then(Value::as_bool) == Some(true) {
            out.push(qualified.clone());
        }
        let own_path = parse_qualified(&qualified).map(|r| r.path.to_string()).unwrap_or_default();
        for extended in object.pointer("/spec/extend/with").and_then(Value::as_array).into_iter().flatten() {
            let Some(reference) = reference(extended, &own_path) else { continue };
            let found = lookup(reference).ok_or_else(|| {
                format!("workspace type {} extends {}, which does not exist", qualified, reference.qualified())
            })?;
            pending.push((reference.qualified(), found));
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_default_their_path() {
        let r = json!({"name": "team"});
        assert_eq!(reference(&r, "root:org"), Some(TypeRef { path: "root:org", name: "team" }));
        assert_eq!(reference(&json!({"path": "root"}), "x"), None);
        assert_eq!(parse_qualified("root:org:team"), Some(TypeRef { path: "root:org", name: "team" }));
        assert_eq!(parse_qualified("team"), None);
    }

    #[test]
    fn children_and_parents_are_limited() {
        let org = TypeRef { path: "root", name: "org" };
        let team = TypeRef { path: "root", name: "team" };
        let plain = json!({"spec": {}});
        let no_children = json!({"spec": {"limitAllowedChildren": {"none": true}}});
        let only_team = json!({"spec": {"limitAllowedChildren": {"types": [{"name": "team", "path": "root"}]}}});
        let only_under_org = json!({"spec": {"limitAllowedParents": {"types": [{"name": "org"}]}}});
        assert!(placement_errors(team, &plain, Some((org, &plain))).is_empty());
        assert_eq!(placement_errors(team, &plain, Some((org, &no_children))).len(), 1);
        assert!(placement_errors(team, &plain, Some((org, &only_team))).is_empty());
        assert_eq!(placement_errors(org, &plain, Some((org, &only_team))).len(), 1);
        assert!(placement_errors(team, &only_under_org, Some((org, &plain))).is_empty());
        assert_eq!(placement_errors(team, &only_under_org, Some((team, &plain))).len(), 1);
        assert_eq!(placement_errors(team, &only_under_org, None).len(), 1);
    }

    #[test]
    fn default_child_comes_from_the_parent_type() {
        let parent = json!({"spec": {"defaultChildWorkspaceType": {"name": "team"}}});
        let org = TypeRef { path: "root", name: "org" };
        assert_eq!(default_child(Some((org, &parent))), TypeRef { path: "root", name: "team" });
        assert_eq!(default_child(None), DEFAULT_TYPE);
    }

    #[test]
    fn initializers_follow_extensions_once() {
        let a = json!({"spec": {"initializer": true, "extend": {"with": [{"name": "b"}, {"name": "c"}]}}});
        let b = json!({"spec": {"initializer": true, "extend": {"with": [{"name": "a"}]}}});
        let c = json!({"spec": {}});
        let lookup = |r: TypeRef<'_>| match r.name {
            "a" => Some(a.clone()),
            "b" => Some(b.clone()),
            "c" => Some(c.clone()),
            _ => None,
        };
        let got = initializers(TypeRef { path: "root", name: "a" }, &a, lookup).unwrap();
        assert_eq!(got, vec!["root:a", "root:b"]);
        let broken = json!({"spec": {"extend": {"with": [{"name": "missing"}]}}});
        let error = initializers(TypeRef { path: "root", name: "x" }, &broken, lookup).unwrap_err();
        assert!(error.contains("root:missing"), "{error}");
    }
}
