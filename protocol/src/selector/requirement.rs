//! One term of a label selector: a validated [`Requirement`] (`key operator values`), its
//! [`Operator`], and how it matches a label set. Both the query-string parser and
//! [`super::LabelSelector`] build requirements, so they live below both.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::error::SelectorError;
use crate::names::{go_quote, label_value, qualified_name};

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

    pub(super) fn validated(key: &str, operator: Operator, values: Vec<String>) -> Result<Requirement, String> {
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
