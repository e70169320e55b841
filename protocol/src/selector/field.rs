//! Field selectors: parsing `fieldSelector=` query values (with kube's `\,`, `\=` and
//! `\\` escapes), matching them through a caller-supplied field getter, and printing the
//! canonical form.

use std::fmt;

use super::error::SelectorError;

/// One `field=value` or `field!=value` term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FieldTerm {
    field: String,
    /// Unescaped.
    value: String,
    negated: bool,
}

/// A parsed field selector: all terms must hold (AND).
///
/// Field names are not checked here, because which fields exist depends on the resource;
/// callers check [`FieldSelector::fields`] and answer 400 `field label not supported: x`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct FieldSelector {
    /// In kube's order: sorted by the raw term text.
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses a `fieldSelector` query value: `f=v`, `f==v`, `f!=v` joined by commas, with
    /// `\,`, `\=` and `\\` escapes in values. The empty string selects everything. Unlike
    /// label selectors, whitespace is significant (kube does not trim it either).
    pub fn parse(selector: &str) -> Result<FieldSelector, SelectorError> {
        let mut raw_terms = split_field_terms(selector);
        raw_terms.sort_unstable();
        let mut terms = Vec::with_capacity(raw_terms.len());
        for raw in raw_terms.into_iter().filter(|raw| !raw.is_empty()) {
            let Some((field, operator, raw_value)) = split_field_term(raw) else {
                return Err(SelectorError::FieldTerm { selector: selector.to_string(), term: raw.to_string() });
            };
            let value = unescape_field_value(raw_value)?;
            terms.push(FieldTerm { field: field.to_string(), value, negated: operator == "!=" });
        }
        Ok(FieldSelector { terms })
    }

    /// Reports whether every term holds. `get` returns a field's value; a field it does
    /// not know compares as the empty string, as kube's `fields.Set` does.
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|term| {
            let actual = get(&term.field).unwrap_or_default();
            (actual == term.value) != term.negated
        })
    }

    /// The field names used, so the caller can reject ones its resource does not support.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|term| term.field.as_str())
    }

    /// The value `field` must equal, if some term pins it (`metadata.name=x`), which lets
    /// a list turn into a point lookup. Like kube, the first such term wins.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms.iter().find(|term| !term.negated && term.field == field).map(|term| term.value.as_str())
    }

    /// Reports whether this selects everything.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// The canonical string: terms in kube's order, `==` written as `=`, values re-escaped.
impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, term) in self.terms.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            let operator = if term.negated { "!=" } else { "=" };
            write!(f, "{}{operator}{}", term.field, escape_field_value(&term.value))?;
        }
        Ok(())
    }
}

/// Splits on commas not preceded by a backslash escape; escapes stay in the terms.
fn split_field_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (index, c) in selector.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&selector[start..index]);
            start = index + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// Splits at the first operator; field names cannot be escaped, so `a\=b=c` has field
/// `a\` (kube's behaviour). At each position `!=` and `==` win over `=`.
fn split_field_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (index, _) in term.char_indices() {
        let rest = &term[index..];
        for operator in ["!=", "==", "="] {
            if let Some(value) = rest.strip_prefix(operator) {
                return Some((&term[..index], operator, value));
            }
        }
    }
    None
}

fn unescape_field_value(raw: &str) -> Result<String, SelectorError> {
    let mut value = String::with_capacity(raw.len());
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(SelectorError::FieldEscapeSequence(format!("\\{c}")));
            }
            value.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            ',' | '=' => return Err(SelectorError::FieldUnescapedCharacter(c)),
            _ => value.push(c),
        }
    }
    if escaped {
        return Err(SelectorError::FieldEscapeSequence("\\".to_string()));
    }
    Ok(value)
}

fn escape_field_value(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_parse_table() {
        // (input, canonical, fields in order)
        for (input, canonical, fields) in [
            ("", "", vec![]),
            (",", "", vec![]),
            ("metadata.name=foo", "metadata.name=foo", vec!["metadata.name"]),
            ("metadata.name==foo", "metadata.name=foo", vec!["metadata.name"]),
            ("status.phase!=Running", "status.phase!=Running", vec!["status.phase"]),
            ("b=1,a=2", "a=2,b=1", vec!["a", "b"]),
            ("a=1,,b=2", "a=1,b=2", vec!["a", "b"]),
            ("a=", "a=", vec!["a"]),
            ("a=x\\,y", "a=x\\,y", vec!["a"]),
            ("a=x\\=y\\\\z", "a=x\\=y\\\\z", vec!["a"]),
            (" a = b", " a = b", vec![" a "]),
            ("=x", "=x", vec![""]),
        ] {
            let selector = FieldSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(selector.to_string(), canonical, "input {input:?}");
            assert_eq!(selector.fields().collect::<Vec<_>>(), fields, "input {input:?}");
            assert_eq!(selector.is_empty(), fields.is_empty(), "input {input:?}");
        }
    }

    #[test]
    fn field_parse_error_table() {
        for (input, expected) in [
            ("abc", SelectorError::FieldTerm { selector: "abc".to_string(), term: "abc".to_string() }),
            ("a=b,c", SelectorError::FieldTerm { selector: "a=b,c".to_string(), term: "c".to_string() }),
            ("a=b=c", SelectorError::FieldUnescapedCharacter('=')),
            // Field names cannot be escaped: this splits at the first `=`, as in kube.
            ("a\\=b=c", SelectorError::FieldUnescapedCharacter('=')),
            ("a=\\x", SelectorError::FieldEscapeSequence("\\x".to_string())),
            ("a=x\\", SelectorError::FieldEscapeSequence("\\".to_string())),
        ] {
            assert_eq!(FieldSelector::parse(input), Err(expected), "input {input:?}");
        }
        for (input, message) in [
            ("abc", "invalid selector: 'abc'; can't understand 'abc'"),
            ("a=b=c", "invalid field selector: unescaped character in value: 61"),
            ("a=\\x", "invalid field selector: invalid escape sequence: \\x"),
        ] {
            assert_eq!(FieldSelector::parse(input).unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn field_matches_table() {
        let object = |field: &str| match field {
            "metadata.name" => Some("web-1".to_string()),
            "metadata.namespace" => Some("default".to_string()),
            "spec.data" => Some("a,b=c".to_string()),
            _ => None,
        };
        for (selector, expected) in [
            ("", true),
            ("metadata.name=web-1", true),
            ("metadata.name==web-1", true),
            ("metadata.name=web-2", false),
            ("metadata.name!=web-2", true),
            ("metadata.name!=web-1", false),
            ("metadata.name=web-1,metadata.namespace=default", true),
            ("metadata.name=web-1,metadata.namespace=other", false),
            ("spec.nodeName=", true),
            ("spec.nodeName!=", false),
            ("spec.nodeName!=x", true),
            ("spec.data=a\\,b\\=c", true),
        ] {
            assert_eq!(FieldSelector::parse(selector).unwrap().matches(object), expected, "selector {selector:?}");
        }
    }

    #[test]
    fn field_requires_exact_match_table() {
        for (selector, field, expected) in [
            ("metadata.name=a", "metadata.name", Some("a")),
            ("metadata.name==a,x=b", "metadata.name", Some("a")),
            ("metadata.name!=a", "metadata.name", None),
            ("x=a", "metadata.name", None),
            ("", "metadata.name", None),
        ] {
            let parsed = FieldSelector::parse(selector).unwrap();
            assert_eq!(parsed.requires_exact_match(field), expected, "selector {selector:?}");
        }
    }
}
