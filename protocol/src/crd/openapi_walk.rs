//! The schema walk of kube-openapi's `SchemaValidator`, which kube runs over every custom
//! resource: each schema node applies its type, junctor (`allOf`/`anyOf`/`oneOf`/`not`),
//! string, format, number, array, enum and object checks in that order, and *all* of them run
//! even after one failed, so a value can collect several errors.
//!
//! Findings are kept as [`Issue`]s in kube-openapi's terms (a dotted `name` such as
//! `spec.list[1].port` and a message with `in body`); `outcome::to_field_errors` turns them
//! into field errors the way kube's `kubeOpenAPIResultToFieldErrors` does.

use std::collections::HashMap;

use regex::Regex;
use serde_json::Value;

use super::node::{Additional, Node};
use super::outcome::{Code, Issue, Outcome};
use super::scalar_checks::{check_enum, check_format, check_number, check_type, format_of, in_body, num, types_of};
use crate::names::go_quote;

/// How deep the walk follows an object; serde_json stops parsing at 128 levels, so only
/// objects built in code get near it, and below the limit nothing more is checked.
const MAX_DEPTH: usize = 256;

/// The walker; it caches compiled `pattern`s across the values of one object.
/// Patterns compiled by earlier walks, shared by every walk of the process: a CRD's
/// patterns are the same for every object written, and compiling them per object would
/// dominate validation. Bounded: past [`PATTERN_CACHE_MAX`] entries it starts over.
fn shared_pattern(pattern: &str) -> Result<Regex, String> {
    static CACHE: std::sync::LazyLock<std::sync::Mutex<HashMap<String, Result<Regex, String>>>> =
        std::sync::LazyLock::new(Default::default);
    let mut cache = CACHE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(compiled) = cache.get(pattern) {
        return compiled.clone();
    }
    if cache.len() >= PATTERN_CACHE_MAX {
        cache.clear();
    }
    let compiled = compile_pattern(pattern);
    cache.insert(pattern.to_string(), compiled.clone());
    compiled
}

/// Distinct patterns kept compiled at most.
const PATTERN_CACHE_MAX: usize = 4096;

#[derive(Default)]
pub(crate) struct Walker {
    patterns: HashMap<String, Result<Regex, String>>,
}

impl Walker {
    /// Validates `data` at kube-openapi path `path` (`""` for the root) against `node`.
    pub(crate) fn validate(&mut self, node: Node<'_>, path: &str, data: &Value) -> Outcome {
        self.walk(node, path, data, 0)
    }

    fn walk(&mut self, node: Node<'_>, path: &str, data: &Value, depth: usize) -> Outcome {
        let mut out = Outcome::default();
        if depth > MAX_DEPTH {
            return out;
        }
        if data.is_null() {
            out.merge(check_type(node, path, data));
            out.merge(check_enum(node, path, data));
            return out;
        }
        if !types_of(node).is_empty() || format_of(node).is_some() {
            out.merge(check_type(node, path, data));
            out.matches += 1;
        }
        out.merge(self.check_junctors(node, path, data, depth));
        out.matches += 1;
        match data {
            Value::String(s) => {
                out.merge(self.check_string(node, path, s));
                if let Some(format) = format_of(node) {
                    out.merge(check_format(format, path, s));
                }
            }
            Value::Number(n) => out.merge(check_number(node, path, num(n), data)),
            Value::Array(items) => out.merge(self.check_array(node, path, items, depth)),
            _ => {}
        }
        out.merge(check_enum(node, path, data));
        if let Value::Object(map) = data {
            out.merge(self.check_object(node, path, map, depth));
        }
        out.matches += 2;
        out
    }

    fn check_junctors(&mut self, node: Node<'_>, path: &str, data: &Value, depth: usize) -> Outcome {
        let mut out = Outcome::default();
        let any_of = node.schemas("anyOf");
        if !any_of.is_empty() {
            let mut best: Option<Outcome> = None;
            let mut succeeded = false;
            for branch in any_of {
                let result = self.walk(branch, path, data, depth + 1);
                if result.valid() {
                    succeeded = true;
                    best = Some(result);
                    break;
                }
                if best.as_ref().is_none_or(|b| result.matches > b.matches) {
                    best = Some(result);
                }
            }
            if !succeeded {
                out.issues
                    .push(Issue::Composite(format!("{} must validate at least one schema (anyOf)", go_quote(path))));
            }
            out.merge(best.unwrap_or_default());
        }
        let one_of = node.schemas("oneOf");
        if !one_of.is_empty() {
            let (mut best, mut first_success, mut validated) = (None::<Outcome>, None::<Outcome>, 0);
            for branch in one_of {
                let result = self.walk(branch, path, data, depth + 1);
                if result.valid() {
                    validated += 1;
                    best = None;
                    first_success.get_or_insert(result);
                } else if validated == 0 && best.as_ref().is_none_or(|b| result.matches > b.matches) {
                    best = Some(result);
                }
            }
            if validated != 1 {
                let found = if validated == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                out.issues.push(Issue::Composite(format!(
                    "{} must validate one and only one schema (oneOf). {found}",
                    go_quote(path)
                )));
                out.merge(best.unwrap_or_default());
            } else {
                out.merge(first_success.unwrap_or_default());
            }
        }
        let all_of = node.schemas("allOf");
        if !all_of.is_empty() {
            let total = all_of.len();
            let mut validated = 0;
            for branch in all_of {
                let result = self.walk(branch, path, data, depth + 1);
                validated += usize::from(result.valid());
                out.merge(result);
            }
            if validated != total {
                let none = if validated == 0 { ". None validated" } else { "" };
                out.issues
                    .push(Issue::Composite(format!("{} must validate all the schemas (allOf){none}", go_quote(path))));
            }
        }
        if let Some(not) = node.schema("not") {
            if self.walk(not, path, data, depth + 1).valid() {
                out.issues.push(Issue::Composite(format!("{} must not validate the schema (not)", go_quote(path))));
            }
        }
        out
    }

    fn check_string(&mut self, node: Node<'_>, path: &str, s: &str) -> Outcome {
        let mut out = Outcome::default();
        let length = i64::try_from(s.chars().count()).unwrap_or(i64::MAX);
        let value = Value::String(s.to_string());
        if let Some(max) = node.integer("maxLength").filter(|max| length > *max) {
            out.issue(
                Code::TooLong(max),
                path,
                value.clone(),
                in_body(path, &format!("should be at most {max} chars long")),
            );
        }
        if let Some(min) = node.integer("minLength").filter(|min| length < *min) {
            out.issue(Code::Other, path, value.clone(), in_body(path, &format!("should be at least {min} chars long")));
        }
        let pattern = node.str("pattern");
        if !pattern.is_empty() {
            let compiled = self.patterns.entry(pattern.to_string()).or_insert_with(|| shared_pattern(pattern));
            match compiled {
                Ok(re) if re.is_match(s) => {}
                Ok(_) => out.issue(Code::Other, path, value, in_body(path, &format!("should match '{pattern}'"))),
                Err(why) => {
                    let message = in_body(path, &format!("should match '{pattern}, but pattern is invalid: {why}'"));
                    out.issue(Code::Other, path, value, message);
                }
            }
        }
        out.matches += 1;
        out
    }

    fn check_array(&mut self, node: Node<'_>, path: &str, items: &[Value], depth: usize) -> Outcome {
        let mut out = Outcome::default();
        if let Some(item_schema) = node.items() {
            for (i, item) in items.iter().enumerate() {
                out.merge(self.walk(item_schema, &format!("{path}[{i}]"), item, depth + 1));
            }
        }
        let size = i64::try_from(items.len()).unwrap_or(i64::MAX);
        if let Some(min) = node.integer("minItems").filter(|min| size < *min) {
            out.issue(
                Code::Other,
                path,
                Value::from(size),
                in_body(path, &format!("should have at least {min} items")),
            );
        }
        if let Some(max) = node.integer("maxItems").filter(|max| size > *max) {
            let message = in_body(path, &format!("should have at most {max} items"));
            out.issue(Code::TooMany { actual: size, max }, path, Value::from(size), message);
        }
        if node.flag("uniqueItems") && items.iter().enumerate().any(|(i, a)| items[..i].contains(a)) {
            out.issue(Code::Other, path, Value::Null, in_body(path, "shouldn't contain duplicates"));
        }
        out.matches += 1;
        out
    }

    fn check_object(
        &mut self,
        node: Node<'_>,
        path: &str,
        map: &serde_json::Map<String, Value>,
        depth: usize,
    ) -> Outcome {
        let mut out = Outcome::default();
        let size = i64::try_from(map.len()).unwrap_or(i64::MAX);
        // kube-openapi stops at a property-count error: nothing below is validated.
        if let Some(min) = node.integer("minProperties").filter(|min| size < *min) {
            out.issue(
                Code::Other,
                path,
                Value::from(size),
                in_body(path, &format!("should have at least {min} properties")),
            );
            return out;
        }
        if let Some(max) = node.integer("maxProperties").filter(|max| size > *max) {
            let message = in_body(path, &format!("should have at most {max} properties"));
            out.issue(Code::TooMany { actual: size, max }, path, Value::from(size), message);
            return out;
        }
        let additional = node.additional();
        for (key, value) in map {
            if let Some(property) = node.property(key) {
                let name = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                out.merge(self.walk(property, &name, value, depth + 1));
                continue;
            }
            match additional {
                Additional::Bool(false) => {
                    let message = format!("{path}.{key} in body is a forbidden property");
                    out.issue(Code::Other, path, Value::String(key.clone()), message);
                }
                Additional::Schema(schema) => out.merge(self.walk(schema, &format!("{path}.{key}"), value, depth + 1)),
                Additional::Bool(true) | Additional::Unset => {}
            }
        }
        for required in node.strings("required") {
            if !map.contains_key(required) {
                let name = format!("{path}.{required}");
                out.issue(Code::Required, &name, Value::Null, in_body(&name, "is required"));
            }
        }
        out.matches += 1;
        out
    }
}

/// Compiles a `pattern` the way Go's `regexp` reads it (both are RE2 dialects).
pub(crate) fn compile_pattern(pattern: &str) -> Result<Regex, String> {
    Regex::new(pattern).map_err(|e| {
        let text = e.to_string();
        let last = text.lines().last().unwrap_or_default().trim();
        last.strip_prefix("error: ").unwrap_or(last).to_string()
    })
}
