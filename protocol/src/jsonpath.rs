//! The JSONPath subset CRD printer columns and scale subresource paths use: dotted
//! fields (`.spec.replicas`), indexes (`[0]`), every element (`[*]`), quoted fields
//! (`['a.b']`) and equality filters (`[?(@.type=="Ready")]`).

use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A field of an object.
    Field(String),
    /// An element of an array (negative counts from the end).
    Index(i64),
    /// Every element of an array, or every value of an object.
    All,
    /// The array elements whose field at the relative path equals a value.
    Filter(Vec<String>, Value),
}

/// Parses a path such as `.status.conditions[?(@.type=="Ready")].status`; braces
/// (`{.spec.x}`) as kubectl writes them are accepted.
pub fn parse(path: &str) -> Result<Vec<Step>, String> {
    let text = path.trim();
    let text = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')).unwrap_or(text);
    let text = text.strip_prefix('$').unwrap_or(text);
    let bad = |why: &str| format!("invalid JSONPath {path:?}: {why}");
    let mut steps = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return Err(bad("empty field name"));
            }
            steps.push(Step::Field(after[..end].to_string()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = closing_bracket(after).ok_or_else(|| bad("unclosed ["))?;
            steps.push(bracket(&after[..end]).map_err(|why| bad(&why))?);
            rest = &after[end + 1..];
        } else {
            return Err(bad("expected . or ["));
        }
    }
    Ok(steps)
}

/// The index of the `]` closing a bracket, skipping quoted text.
fn closing_bracket(text: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (None, ']') => return Some(i),
            _ => {}
        }
    }
    None
}

fn bracket(inner: &str) -> Result<Step, String> {
    let inner = inner.trim();
    if inner == "*" {
        return Ok(Step::All);
    }
    if let Some(quoted) = unquote(inner) {
        return Ok(Step::Field(quoted));
    }
    if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        let (left, right) = filter.split_once("==").ok_or("only == filters are supported")?;
        let left = left.trim().strip_prefix("@.").ok_or("a filter starts with @.")?;
        let right = right.trim();
        let value = match unquote(right) {
            Some(text) => Value::from(text),
            None => serde_json::from_str(right).map_err(|_| format!("cannot read filter value {right}"))?,
        };
        return Ok(Step::Filter(left.split('.').map(str::to_string).collect(), value));
    }
    inner.parse().map(Step::Index).map_err(|_| format!("unsupported subscript [{inner}]"))
}

fn unquote(text: &str) -> Option<String> {
    let quoted = |q: char| text.len() >= 2 && text.starts_with(q) && text.ends_with(q);
    (quoted('\'') || quoted('"')).then(|| text[1..text.len() - 1].to_string())
}

/// Every value the path selects, in document order.
pub fn evaluate<'a>(steps: &[Step], root: &'a Value) -> Vec<&'a Value> {
    let mut current = vec![root];
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            match (step, value) {
                (Step::Field(name), Value::Object(map)) => next.extend(map.get(name)),
                (Step::Index(i), Value::Array(items)) => {
                    let index = if *i < 0 { items.len() as i64 + i } else { *i };
                    next.extend(usize::try_from(index).ok().and_then(|i| items.get(i)));
                }
                (Step::All, Value::Array(items)) => next.extend(items),
                (Step::All, Value::Object(map)) => next.extend(map.values()),
                (Step::Filter(field, wanted), Value::Array(items)) => {
                    next.extend(items.iter().filter(|item| {
                        field.iter().try_fold(*item, |v, f| v.get(f)).is_some_and(|found| found == wanted)
                    }))
                }
                _ => {}
            }
        }
        current = next;
    }
    current
}

/// Whether a path is a plain chain of fields (what scale subresource paths must be).
pub fn is_simple_field_path(steps: &[Step]) -> bool {
    !steps.is_empty() && steps.iter().all(|s| matches!(s, Step::Field(_)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_select_values() {
        let object = json!({
            "spec": {"replicas": 3, "a.b": "dotted"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}]}
        });
        let cases: &[(&str, Vec<Value>)] = &[
            (".spec.replicas", vec![json!(3)]),
            ("{.spec.replicas}", vec![json!(3)]),
            (".spec['a.b']", vec![json!("dotted")]),
            (".status.conditions[1].type", vec![json!("Synced")]),
            (".status.conditions[-1].status", vec![json!("False")]),
            (".status.conditions[*].type", vec![json!("Ready"), json!("Synced")]),
            (".status.conditions[?(@.type==\"Ready\")].status", vec![json!("True")]),
            (".spec.missing", vec![]),
        ];
        for (path, want) in cases {
            let steps = parse(path).unwrap();
            let got: Vec<Value> = evaluate(&steps, &object).into_iter().cloned().collect();
            assert_eq!(&got, want, "{path}");
        }
    }

    #[test]
    fn bad_paths_are_errors() {
        for path in ["spec", ".spec[", ".a..b", ".a[?(@.x>1)]", ".a[x]"] {
            assert!(parse(path).is_err(), "{path}");
        }
        assert!(is_simple_field_path(&parse(".spec.replicas").unwrap()));
        assert!(!is_simple_field_path(&parse(".spec.items[0]").unwrap()));
    }
}
