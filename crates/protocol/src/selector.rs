//! Label and field selectors, parsed from `labelSelector=` / `fieldSelector=` query
//! parameters (and from `metav1.LabelSelector` objects) and matched against objects.
//!
//! The grammar, the validation and the error texts follow kube-apiserver
//! (`k8s.io/apimachinery/pkg/labels` and `pkg/fields`) token for token: clients parse our
//! 400 messages and kubectl prints them verbatim, so "close enough" would show up as
//! diffs in conformance output. Everything here is pure; matching takes the labels or a
//! field getter from the caller.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use crate::names::{go_quote, label_value, qualified_name};

/// Why a selector was rejected. kube answers every variant with 400 BadRequest; the
/// variants exist so callers can tell a label problem from a field problem when they
/// word the surrounding Status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A `labelSelector` string is malformed or names an invalid key or value; the text
    /// is kube's parser message (e.g. `unable to parse requirement: …`).
    #[error("{0}")]
    LabelSyntax(String),
    /// A `metav1.LabelSelector` requirement has an invalid key or values; the text is
    /// kube's aggregated `NewRequirement` message.
    #[error("{0}")]
    LabelRequirement(String),
    /// A `matchExpressions` operator other than In, NotIn, Exists or DoesNotExist.
    #[error("{} is not a valid label selector operator", go_quote(.0))]
    UnknownOperator(String),
    /// A `metav1.LabelSelector` whose JSON does not have the expected shape.
    #[error("invalid label selector: {0}")]
    MalformedLabelSelector(String),
    /// A `fieldSelector` term without `=`, `==` or `!=`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    FieldTerm {
        /// The whole selector as given.
        selector: String,
        /// The term that has no operator.
        term: String,
    },
    /// A backslash in a field value not followed by `\`, `,` or `=`.
    #[error("invalid field selector: invalid escape sequence: {0}")]
    FieldEscapeSequence(String),
    /// A bare `,` or `=` in a field value. kube prints the code point as a number (Go's
    /// `%v` of a rune), and so do we.
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*.0))]
    FieldUnescapedCharacter(char),
}

/// How one label requirement compares a label with its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `k=v` or `k==v`: the label exists and equals the value.
    Equals,
    /// `k!=v`: the label is absent or differs.
    NotEquals,
    /// `k in (a,b)`: the label exists and is one of the values.
    In,
    /// `k notin (a,b)`: the label is absent or none of the values.
    NotIn,
    /// `k`: the label exists.
    Exists,
    /// `!k`: the label is absent.
    DoesNotExist,
    /// `k>n`: the label is an integer greater than n.
    GreaterThan,
    /// `k<n`: the label is an integer less than n.
    LessThan,
}

/// One validated `key operator values` term of a label selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and de-duplicated, which gives Display its canonical order.
    values: Vec<String>,
}

impl Requirement {
    /// Validates like kube's `labels.NewRequirement`: the key is a qualified name, every
    /// value a label value, and the value count fits the operator.
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Requirement, SelectorError> {
        Self::validated(key, operator, values).map_err(SelectorError::LabelRequirement)
    }

    fn validated(key: &str, operator: Operator, values: Vec<String>) -> Result<Requirement, String> {
        let mut errors = Vec::new();
        let key_errors = qualified_name(key);
        if !key_errors.is_empty() {
            errors.push(format!("key: Invalid value: {}: {}", go_quote(key), key_errors.join("; ")));
        }
        errors.extend(operator_arity_errors(operator, &values));
        for (index, value) in values.iter().enumerate() {
            let value_errors = label_value(value);
            if !value_errors.is_empty() {
                let bad = go_quote(value);
                errors.push(format!("values[{index}][{key}]: Invalid value: {bad}: {}", value_errors.join("; ")));
            }
        }
        aggregate(errors)?;
        let values: BTreeSet<String> = values.into_iter().collect();
        Ok(Requirement { key: key.to_string(), operator, values: values.into_iter().collect() })
    }

    /// The label key this requirement looks at.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// How the label is compared.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values compared against, sorted; empty for Exists and DoesNotExist.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Reports whether `labels` satisfy this requirement, with kube's treatment of absent
    /// labels (negative operators match them, positive ones do not).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let label = labels.get(&self.key);
        match self.operator {
            Operator::Equals | Operator::In => label.is_some_and(|value| self.has_value(value)),
            Operator::NotEquals | Operator::NotIn => !label.is_some_and(|value| self.has_value(value)),
            Operator::Exists => label.is_some(),
            Operator::DoesNotExist => label.is_none(),
            Operator::GreaterThan => self.compare_integer(label).is_some_and(|(l, r)| l > r),
            Operator::LessThan => self.compare_integer(label).is_some_and(|(l, r)| l < r),
        }
    }

    fn has_value(&self, value: &str) -> bool {
        self.values.binary_search_by(|candidate| candidate.as_str().cmp(value)).is_ok()
    }

    /// Both sides as integers; a label that is absent or not an integer matches neither
    /// `>` nor `<`, as in kube.
    fn compare_integer(&self, label: Option<&String>) -> Option<(i64, i64)> {
        let label = label?.parse::<i64>().ok()?;
        match self.values.as_slice() {
            [bound] => Some((label, bound.parse::<i64>().ok()?)),
            _ => None,
        }
    }
}

/// kube's per-operator value-count checks, worded and formatted as `NewRequirement` does.
fn operator_arity_errors(operator: Operator, values: &[String]) -> Vec<String> {
    let bad = go_string_slice(values);
    match operator {
        Operator::In | Operator::NotIn if values.is_empty() => {
            vec![format!("values: Invalid value: {bad}: for 'in', 'notin' operators, values set can't be empty")]
        }
        Operator::Equals | Operator::NotEquals if values.len() != 1 => {
            vec![format!("values: Invalid value: {bad}: exact-match compatibility requires one single value")]
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
            vec![format!("values: Invalid value: {bad}: values set must be empty for exists and does not exist")]
        }
        Operator::GreaterThan | Operator::LessThan => integer_bound_errors(values),
        _ => Vec::new(),
    }
}

fn integer_bound_errors(values: &[String]) -> Vec<String> {
    let mut errors = Vec::new();
    if values.len() != 1 {
        let bad = go_string_slice(values);
        errors.push(format!("values: Invalid value: {bad}: for 'Gt', 'Lt' operators, exactly one value is required"));
    }
    for (index, value) in values.iter().enumerate() {
        if value.parse::<i64>().is_err() {
            let bad = go_quote(value);
            errors.push(format!(
                "values[{index}]: Invalid value: {bad}: for 'Gt', 'Lt' operators, the value must be an integer"
            ));
        }
    }
    errors
}

/// Go's `%#v` of a `[]string`, which kube prints for bad value lists.
fn go_string_slice(values: &[String]) -> String {
    if values.is_empty() {
        // The values reach kube as `append([]string(nil), …)`, a nil slice when empty.
        return "[]string(nil)".to_string();
    }
    let quoted: Vec<String> = values.iter().map(|value| go_quote(value)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// kube's error aggregate: one distinct message stands alone, several are bracketed.
fn aggregate(errors: Vec<String>) -> Result<(), String> {
    let mut distinct: Vec<String> = Vec::with_capacity(errors.len());
    for error in errors {
        if !distinct.contains(&error) {
            distinct.push(error);
        }
    }
    match distinct.len() {
        0 => Ok(()),
        1 => Err(distinct.remove(0)),
        _ => Err(format!("[{}]", distinct.join(", "))),
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = self.values.join(",");
        match self.operator {
            Operator::Equals => write!(f, "{}={values}", self.key),
            Operator::NotEquals => write!(f, "{}!={values}", self.key),
            Operator::In => write!(f, "{} in ({values})", self.key),
            Operator::NotIn => write!(f, "{} notin ({values})", self.key),
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::GreaterThan => write!(f, "{}>{values}", self.key),
            Operator::LessThan => write!(f, "{}<{values}", self.key),
        }
    }
}

/// A parsed label selector: all requirements must hold (AND).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct LabelSelector {
    /// Sorted by key (stable), kube's canonical order.
    requirements: Vec<Requirement>,
    /// Set only for a null `metav1.LabelSelector`, which selects nothing rather than
    /// everything; an empty requirement list alone means "everything".
    matches_nothing: bool,
}

impl LabelSelector {
    /// Parses a `labelSelector` query value: `k=v`, `k==v`, `k!=v`, `k in (a,b)`,
    /// `k notin (a,b)`, `k`, `!k`, `k>n`, `k<n`, joined by commas. The empty string (or
    /// only whitespace) selects everything.
    pub fn parse(selector: &str) -> Result<LabelSelector, SelectorError> {
        let requirements = Parser::new(selector).parse().map_err(SelectorError::LabelSyntax)?;
        Ok(LabelSelector::from_requirements(requirements))
    }

    /// Converts a `metav1.LabelSelector` (`matchLabels`, `matchExpressions`) as kube's
    /// `LabelSelectorAsSelector` does: JSON `null` selects nothing, `{}` everything.
    pub fn from_label_selector_json(selector: &Value) -> Result<LabelSelector, SelectorError> {
        let object = match selector {
            Value::Null => return Ok(LabelSelector::nothing()),
            Value::Object(object) => object,
            _ => return Err(malformed("must be an object")),
        };
        let mut requirements = match_labels_requirements(object.get("matchLabels"))?;
        requirements.extend(match_expressions_requirements(object.get("matchExpressions"))?);
        Ok(LabelSelector::from_requirements(requirements))
    }

    /// The selector that matches every object.
    pub fn everything() -> LabelSelector {
        LabelSelector::default()
    }

    /// The selector that matches no object (a null `metav1.LabelSelector`).
    pub fn nothing() -> LabelSelector {
        LabelSelector { requirements: Vec::new(), matches_nothing: true }
    }

    fn from_requirements(mut requirements: Vec<Requirement>) -> LabelSelector {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector { requirements, matches_nothing: false }
    }

    /// Reports whether every requirement holds for `labels`.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        !self.matches_nothing && self.requirements.iter().all(|requirement| requirement.matches(labels))
    }

    /// Reports whether this selects everything, which lets list paths skip matching.
    pub fn is_empty(&self) -> bool {
        !self.matches_nothing && self.requirements.is_empty()
    }

    /// Reports whether this is the select-nothing selector.
    pub fn matches_nothing(&self) -> bool {
        self.matches_nothing
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }
}

/// The canonical string, which parses back to an equal selector. As in kube, the
/// select-nothing selector also prints as the empty string; check
/// [`LabelSelector::matches_nothing`] before round-tripping one.
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, requirement) in self.requirements.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

fn malformed(message: &str) -> SelectorError {
    SelectorError::MalformedLabelSelector(message.to_string())
}

fn match_labels_requirements(match_labels: Option<&Value>) -> Result<Vec<Requirement>, SelectorError> {
    let labels = match match_labels {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(labels)) => labels,
        Some(_) => return Err(malformed("matchLabels must be an object")),
    };
    // Sorted so that the first reported error does not depend on JSON key order.
    let sorted: BTreeMap<&String, &Value> = labels.iter().collect();
    sorted
        .into_iter()
        .map(|(key, value)| {
            let value = value.as_str().ok_or_else(|| malformed("matchLabels values must be strings"))?;
            Requirement::new(key, Operator::Equals, vec![value.to_string()])
        })
        .collect()
}

fn match_expressions_requirements(expressions: Option<&Value>) -> Result<Vec<Requirement>, SelectorError> {
    match expressions {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(expressions)) => expressions.iter().map(match_expression_requirement).collect(),
        Some(_) => Err(malformed("matchExpressions must be a list")),
    }
}

fn match_expression_requirement(expression: &Value) -> Result<Requirement, SelectorError> {
    let expression = expression.as_object().ok_or_else(|| malformed("matchExpressions items must be objects"))?;
    let text = |field: &str| match expression.get(field) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(text)) => Ok(text.as_str()),
        Some(_) => Err(malformed(&format!("matchExpressions {field} must be a string"))),
    };
    let operator = match text("operator")? {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => return Err(SelectorError::UnknownOperator(other.to_string())),
    };
    let values = match expression.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(values)) => values
            .iter()
            .map(|value| value.as_str().map(str::to_string))
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| malformed("matchExpressions values must be strings"))?,
        Some(_) => return Err(malformed("matchExpressions values must be a list")),
    };
    Requirement::new(text("key")?, operator, values)
}

/// Token kinds of kube's label-selector lexer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Identifier,
    In,
    NotIn,
    Equals,
    DoubleEquals,
    NotEquals,
    Bang,
    GreaterThan,
    LessThan,
    OpenParen,
    CloseParen,
    Comma,
    End,
}

/// kube's whitespace set; other Unicode spaces become part of identifiers (and then fail
/// validation), exactly as there.
fn is_selector_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

/// Splits a selector into tokens, ending with one `End` token.
fn lex(selector: &str) -> Vec<(Kind, &str)> {
    let mut tokens = Vec::new();
    let mut rest = selector.trim_start_matches(is_selector_whitespace);
    while let Some(first) = rest.chars().next() {
        let (kind, length) = if is_special(first) { lex_special(rest) } else { lex_word(rest) };
        tokens.push((kind, &rest[..length]));
        rest = rest[length..].trim_start_matches(is_selector_whitespace);
    }
    tokens.push((Kind::End, ""));
    tokens
}

/// The longest operator at the start of `rest`; only `==` and `!=` span two characters.
fn lex_special(rest: &str) -> (Kind, usize) {
    if rest.starts_with("==") {
        return (Kind::DoubleEquals, 2);
    }
    if rest.starts_with("!=") {
        return (Kind::NotEquals, 2);
    }
    let kind = match rest.as_bytes()[0] {
        b'=' => Kind::Equals,
        b'!' => Kind::Bang,
        b'(' => Kind::OpenParen,
        b')' => Kind::CloseParen,
        b',' => Kind::Comma,
        b'>' => Kind::GreaterThan,
        _ => Kind::LessThan,
    };
    (kind, 1)
}

fn lex_word(rest: &str) -> (Kind, usize) {
    let length = rest.find(|c| is_special(c) || is_selector_whitespace(c)).unwrap_or(rest.len());
    let kind = match &rest[..length] {
        "in" => Kind::In,
        "notin" => Kind::NotIn,
        _ => Kind::Identifier,
    };
    (kind, length)
}

/// A port of kube's recursive-descent `labels.Parser`; each method mirrors one Go method
/// so that error texts stay attached to the same grammar positions. Errors are kube's
/// message strings.
struct Parser<'a> {
    tokens: Vec<(Kind, &'a str)>,
    position: usize,
}

impl<'a> Parser<'a> {
    fn new(selector: &'a str) -> Self {
        Parser { tokens: lex(selector), position: 0 }
    }

    /// The next token with `in`/`notin` read as identifiers, which is how kube lets them
    /// appear as keys and values.
    fn peek(&self) -> (Kind, &'a str) {
        let (kind, literal) = self.peek_raw();
        match kind {
            Kind::In | Kind::NotIn => (Kind::Identifier, literal),
            _ => (kind, literal),
        }
    }

    fn peek_raw(&self) -> (Kind, &'a str) {
        // The lexer always ends with `End`, and the grammar never reads past it.
        self.tokens.get(self.position).copied().unwrap_or((Kind::End, ""))
    }

    fn next(&mut self) -> (Kind, &'a str) {
        let token = self.peek();
        self.position += 1;
        token
    }

    fn next_raw(&mut self) -> (Kind, &'a str) {
        let token = self.peek_raw();
        self.position += 1;
        token
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (kind, literal) = self.peek();
            match kind {
                Kind::Identifier | Kind::Bang => {}
                Kind::End => return Ok(requirements),
                _ => return Err(format!("found '{literal}', expected: !, identifier, or 'end of string'")),
            }
            let requirement = self.parse_requirement().map_err(|e| format!("unable to parse requirement: {e}"))?;
            requirements.push(requirement);
            match self.next() {
                (Kind::End, _) => return Ok(requirements),
                (Kind::Comma, _) => self.expect_requirement_after_comma()?,
                (_, literal) => return Err(format!("found '{literal}', expected: ',' or 'end of string'")),
            }
        }
    }

    fn expect_requirement_after_comma(&self) -> Result<(), String> {
        match self.peek() {
            (Kind::Identifier | Kind::Bang, _) => Ok(()),
            (_, literal) => Err(format!("found '{literal}', expected: identifier after ','")),
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, unary) = self.parse_key_and_infer_operator()?;
        if let Some(operator) = unary {
            return Requirement::validated(key, operator, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::validated(key, operator, values.into_iter().collect())
    }

    /// Reads `[!]key` and returns the operator when it is unary (`!k`, or `k` followed by
    /// `,` or the end).
    fn parse_key_and_infer_operator(&mut self) -> Result<(&'a str, Option<Operator>), String> {
        let (mut kind, mut literal) = self.next();
        let mut unary = None;
        if kind == Kind::Bang {
            unary = Some(Operator::DoesNotExist);
            (kind, literal) = self.next();
        }
        if kind != Kind::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let key_errors = qualified_name(literal);
        if !key_errors.is_empty() {
            // kube validates against a nil field path here, hence the literal `<nil>`.
            return Err(format!("<nil>: Invalid value: {}: {}", go_quote(literal), key_errors.join("; ")));
        }
        if unary.is_none() && matches!(self.peek().0, Kind::End | Kind::Comma) {
            unary = Some(Operator::Exists);
        }
        Ok((literal, unary))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        match self.next_raw() {
            (Kind::In, _) => Ok(Operator::In),
            (Kind::NotIn, _) => Ok(Operator::NotIn),
            (Kind::Equals | Kind::DoubleEquals, _) => Ok(Operator::Equals),
            (Kind::NotEquals, _) => Ok(Operator::NotEquals),
            (Kind::GreaterThan, _) => Ok(Operator::GreaterThan),
            (Kind::LessThan, _) => Ok(Operator::LessThan),
            (_, literal) => Err(format!("found '{literal}', expected: in, notin, =, ==, !=, gt, lt")),
        }
    }

    fn parse_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (kind, literal) = self.next();
        if kind != Kind::OpenParen {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (kind, literal) = self.peek();
        match kind {
            Kind::Identifier | Kind::Comma => {
                let values = self.parse_identifiers_list()?;
                if self.next().0 != Kind::CloseParen {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Kind::CloseParen => {
                self.next();
                // `k in ()` means "k is the empty string", as in kube.
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{literal}', expected: ',', ')' or identifier")),
        }
    }

    /// Reads values up to (not including) `)`. Empty slots (`(,a)`, `(a,,b)`, `(a,)`)
    /// stand for the empty string, as in kube.
    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut values = BTreeSet::new();
        loop {
            match self.next() {
                (Kind::Identifier, literal) => {
                    values.insert(literal.to_string());
                    match self.peek() {
                        (Kind::Comma, _) => continue,
                        (Kind::CloseParen, _) => return Ok(values),
                        (_, next) => return Err(format!("found '{next}', expected: ',' or ')'")),
                    }
                }
                (Kind::Comma, _) => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    match self.peek().0 {
                        Kind::CloseParen => {
                            values.insert(String::new());
                            return Ok(values);
                        }
                        Kind::Comma => {
                            self.next();
                            values.insert(String::new());
                        }
                        _ => {}
                    }
                }
                (_, literal) => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    /// Reads the single value after `=`, `!=`, `>` or `<`; nothing before `,` or the end
    /// means the empty string.
    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        if matches!(self.peek().0, Kind::End | Kind::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        match self.next() {
            (Kind::Identifier, literal) => Ok(BTreeSet::from([literal.to_string()])),
            (_, literal) => Err(format!("found '{literal}', expected: identifier")),
        }
    }
}

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
    use serde_json::json;

    const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn label_parse_canonical_table() {
        for (input, canonical) in [
            ("", ""),
            (" \t\n ", ""),
            ("x=a", "x=a"),
            ("x==a", "x=a"),
            ("x!=a", "x!=a"),
            ("x=", "x="),
            ("x in (b,a)", "x in (a,b)"),
            ("x in(a)", "x in (a)"),
            ("x notin (a, a)", "x notin (a)"),
            ("x", "x"),
            ("!x", "!x"),
            (" x = a , y in ( c , d ) ", "x=a,y in (c,d)"),
            ("z=1,a=2", "a=2,z=1"),
            ("x=a,x!=b", "x=a,x!=b"),
            ("x in ()", "x in ()"),
            ("x in (,a)", "x in (,a)"),
            ("x in (a,)", "x in (,a)"),
            ("x in (a,,b)", "x in (,a,b)"),
            ("x>1", "x>1"),
            ("x<10", "x<10"),
            ("in in (in),notin notin (notin)", "in in (in),notin notin (notin)"),
            ("example.com/app=web,!kcp.io/cluster", "example.com/app=web,!kcp.io/cluster"),
        ] {
            let selector = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(selector.to_string(), canonical, "input {input:?}");
            assert_eq!(LabelSelector::parse(canonical).unwrap(), selector, "round trip {input:?}");
            assert_eq!(selector.is_empty(), canonical.is_empty(), "input {input:?}");
        }
    }

    #[test]
    fn label_parse_error_table() {
        let unable = |rest: &str| format!("unable to parse requirement: {rest}");
        for (input, expected) in [
            ("x=a=b", "found '=', expected: ',' or 'end of string'".to_string()),
            ("x=a b", "found 'b', expected: ',' or 'end of string'".to_string()),
            ("!x=a", "found '=', expected: ',' or 'end of string'".to_string()),
            ("x=a,", "found '', expected: identifier after ','".to_string()),
            ("x=a,,y", "found ',', expected: identifier after ','".to_string()),
            (",x", "found ',', expected: !, identifier, or 'end of string'".to_string()),
            ("=x", "found '=', expected: !, identifier, or 'end of string'".to_string()),
            ("!", unable("found '', expected: identifier")),
            ("!!x", unable("found '!', expected: identifier")),
            ("x in a", unable("found 'a' expected: '('")),
            ("x in (a", unable("found '', expected: ',' or ')'")),
            ("x in (a b)", unable("found 'b', expected: ',' or ')'")),
            ("x in (=)", unable("found '=', expected: ',', ')' or identifier")),
            ("x in (a,=)", unable("found '=', expected: ',', or identifier")),
            ("x (a)", unable("found '(', expected: in, notin, =, ==, !=, gt, lt")),
            ("x!", unable("found '!', expected: in, notin, =, ==, !=, gt, lt")),
            ("x=(a)", unable("found '(', expected: identifier")),
            ("app:monolith", unable(&format!("<nil>: Invalid value: \"app:monolith\": {NAME_PART_MSG}"))),
            ("x=a@", unable(&format!("values[0][x]: Invalid value: \"a@\": {VALUE_MSG}"))),
            (
                "x in (b@,a@)",
                unable(&format!(
                    "[values[0][x]: Invalid value: \"a@\": {VALUE_MSG}, values[1][x]: Invalid value: \"b@\": {VALUE_MSG}]"
                )),
            ),
            (
                "x>a",
                unable("values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"),
            ),
        ] {
            let error = LabelSelector::parse(input).expect_err(input);
            assert!(matches!(error, SelectorError::LabelSyntax(_)), "input {input:?}");
            assert_eq!(error.to_string(), expected, "input {input:?}");
        }
    }

    #[test]
    fn label_matches_table() {
        let web = labels(&[("app", "web"), ("tier", "frontend"), ("replicas", "3")]);
        let none = labels(&[]);
        for (selector, target, expected) in [
            ("", &web, true),
            ("", &none, true),
            ("app=web", &web, true),
            ("app==web", &web, true),
            ("app=db", &web, false),
            ("app=web", &none, false),
            ("app!=db", &web, true),
            ("app!=web", &web, false),
            ("app!=web", &none, true),
            ("app in (db,web)", &web, true),
            ("app in (db)", &web, false),
            ("app in (web)", &none, false),
            ("app notin (db)", &web, true),
            ("app notin (web)", &web, false),
            ("app notin (web)", &none, true),
            ("app", &web, true),
            ("app", &none, false),
            ("!app", &web, false),
            ("!app", &none, true),
            ("app=web,tier=frontend", &web, true),
            ("app=web,tier=backend", &web, false),
            ("replicas>2", &web, true),
            ("replicas>3", &web, false),
            ("replicas<4", &web, true),
            ("replicas<3", &web, false),
            ("app>1", &web, false),
            ("missing<1", &web, false),
            ("tier=", &web, false),
        ] {
            let parsed = LabelSelector::parse(selector).unwrap();
            assert_eq!(parsed.matches(target), expected, "selector {selector:?} on {target:?}");
        }
        let empty_value = labels(&[("x", "")]);
        for (selector, expected) in [("x=", true), ("x in ()", true), ("x in (a,)", true), ("x in (a)", false)] {
            assert_eq!(LabelSelector::parse(selector).unwrap().matches(&empty_value), expected, "{selector}");
        }
    }

    #[test]
    fn label_selector_json_table() {
        for (input, canonical) in [
            (json!({}), ""),
            (json!({"matchLabels": null, "matchExpressions": null}), ""),
            (json!({"matchLabels": {"b": "2", "a": "1"}}), "a=1,b=2"),
            (
                json!({"matchExpressions": [
                    {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                    {"key": "zone", "operator": "NotIn", "values": ["x"]},
                    {"key": "gpu", "operator": "Exists"},
                    {"key": "spot", "operator": "DoesNotExist", "values": []},
                ]}),
                "env in (dev,prod),gpu,!spot,zone notin (x)",
            ),
            (
                json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "app", "operator": "Exists"}]}),
                "app=web,app",
            ),
        ] {
            let selector = LabelSelector::from_label_selector_json(&input).unwrap();
            assert_eq!(selector.to_string(), canonical, "input {input}");
            assert!(!selector.matches_nothing());
        }
    }

    #[test]
    fn label_selector_json_error_table() {
        for (input, expected) in [
            (json!([]), "invalid label selector: must be an object".to_string()),
            (json!({"matchLabels": []}), "invalid label selector: matchLabels must be an object".to_string()),
            (json!({"matchLabels": {"a": 1}}), "invalid label selector: matchLabels values must be strings".to_string()),
            (json!({"matchExpressions": {}}), "invalid label selector: matchExpressions must be a list".to_string()),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}),
                "invalid label selector: matchExpressions values must be strings".to_string(),
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
                "\"Gt\" is not a valid label selector operator".to_string(),
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
                "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty".to_string(),
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x", "y"]}]}),
                "values: Invalid value: []string{\"x\", \"y\"}: values set must be empty for exists and does not exist".to_string(),
            ),
            (
                json!({"matchLabels": {"a b": "c"}}),
                format!("key: Invalid value: \"a b\": {NAME_PART_MSG}"),
            ),
            (
                json!({"matchLabels": {"a": "c d"}}),
                format!("values[0][a]: Invalid value: \"c d\": {VALUE_MSG}"),
            ),
            (
                json!({"matchLabels": {"a b": "c d"}}),
                format!(
                    "[key: Invalid value: \"a b\": {NAME_PART_MSG}, values[0][a b]: Invalid value: \"c d\": {VALUE_MSG}]"
                ),
            ),
        ] {
            let error = LabelSelector::from_label_selector_json(&input).expect_err(&input.to_string());
            assert_eq!(error.to_string(), expected, "input {input}");
        }
    }

    #[test]
    fn nothing_and_everything() {
        let some = labels(&[("a", "b")]);
        let nothing = LabelSelector::from_label_selector_json(&Value::Null).unwrap();
        assert_eq!(nothing, LabelSelector::nothing());
        for (selector, matches, is_empty) in
            [(LabelSelector::nothing(), false, false), (LabelSelector::everything(), true, true)]
        {
            assert_eq!(selector.matches(&some), matches);
            assert_eq!(selector.matches(&labels(&[])), matches);
            assert_eq!(selector.is_empty(), is_empty);
        }
    }

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
