//! Label, claim and property selectors, compiled once per decision and matched per
//! candidate.
//!
//! Label and claim selectors have Kubernetes `metav1.LabelSelector` semantics: the
//! requirements are ANDed, `matchLabels` entries are equality requirements, `NotIn` and
//! `DoesNotExist` match a missing key, and an empty selector matches everything. OCM's
//! claim selector is the same structure applied to a cluster's ClusterClaims. Property
//! selectors are Fleet's: numeric comparisons (`Gt`, `Ge`, `Eq`, `Ne`, `Lt`, `Le`) of a
//! quantity against exactly one expected value; a cluster without the property does not
//! match. Compiling validates up front so that a bad policy is reported once as a
//! misconfiguration instead of rejecting every candidate.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::quantity::Quantity;

/// A Kubernetes label selector (`matchLabels` and `matchExpressions`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    /// Exact key/value pairs, each an equality requirement.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelRequirement>,
}

/// One set-based requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelRequirement {
    /// The label (or claim) key.
    pub key: String,
    /// How the values are applied.
    pub operator: LabelOperator,
    /// The values; non-empty for `In`/`NotIn`, empty for `Exists`/`DoesNotExist`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// The operators of `metav1.LabelSelector`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LabelOperator {
    /// The key exists and its value is one of the values.
    In,
    /// The key is missing, or its value is none of the values.
    NotIn,
    /// The key exists.
    Exists,
    /// The key is missing.
    DoesNotExist,
}

/// Fleet's property selector: numeric requirements, ANDed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PropertySelector {
    /// The requirements.
    #[serde(default)]
    pub match_expressions: Vec<PropertyRequirement>,
}

/// One numeric requirement of a property selector.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PropertyRequirement {
    /// The property name, e.g. `kubernetes-fleet.io/node-count` or
    /// `resources.kubernetes-fleet.io/allocatable-cpu`.
    pub name: String,
    /// The comparison.
    pub operator: PropertyOperator,
    /// Exactly one quantity to compare against.
    pub values: Vec<String>,
}

/// Fleet's property comparison operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PropertyOperator {
    /// Greater than.
    Gt,
    /// Greater than or equal to.
    Ge,
    /// Equal to.
    Eq,
    /// Not equal to.
    Ne,
    /// Less than.
    Lt,
    /// Less than or equal to.
    Le,
}

/// A compiled label or claim requirement, ready to match.
#[derive(Clone, Debug)]
pub(crate) struct Requirement {
    key: String,
    operator: LabelOperator,
    /// Sorted, so that messages list them in a stable order.
    values: Vec<String>,
    /// Whether it came from `matchLabels`, which prints as `key=value`.
    equality: bool,
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            LabelOperator::In => value.is_some_and(|v| self.values.iter().any(|w| w == v)),
            LabelOperator::NotIn => value.is_none_or(|v| self.values.iter().all(|w| w != v)),
            LabelOperator::Exists => value.is_some(),
            LabelOperator::DoesNotExist => value.is_none(),
        }
    }
}

impl fmt::Display for Requirement {
    /// Kubernetes' selector string syntax: `a=b`, `a in (b,c)`, `a notin (b)`, `a`, `!a`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.operator {
            LabelOperator::In if self.equality => write!(f, "{}={}", self.key, self.values.join(",")),
            LabelOperator::In => write!(f, "{} in ({})", self.key, self.values.join(",")),
            LabelOperator::NotIn => write!(f, "{} notin ({})", self.key, self.values.join(",")),
            LabelOperator::Exists => write!(f, "{}", self.key),
            LabelOperator::DoesNotExist => write!(f, "!{}", self.key),
        }
    }
}

/// A compiled label or claim selector.
#[derive(Clone, Debug, Default)]
pub(crate) struct CompiledSelector {
    requirements: Vec<Requirement>,
}

impl CompiledSelector {
    /// The first requirement the labels fail, or `None` when they match.
    pub(crate) fn first_mismatch(&self, labels: &BTreeMap<String, String>) -> Option<&Requirement> {
        self.requirements.iter().find(|r| !r.matches(labels))
    }

    /// Whether the labels satisfy every requirement.
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.first_mismatch(labels).is_none()
    }
}

impl LabelSelector {
    /// Validates the selector as `metav1.LabelSelectorAsSelector` does and compiles it.
    pub(crate) fn compile(&self) -> Result<CompiledSelector, String> {
        let mut requirements = Vec::with_capacity(self.match_labels.len() + self.match_expressions.len());
        for (key, value) in &self.match_labels {
            check_key(key)?;
            requirements.push(Requirement {
                key: key.clone(),
                operator: LabelOperator::In,
                values: vec![value.clone()],
                equality: true,
            });
        }
        for expression in &self.match_expressions {
            check_key(&expression.key)?;
            let needs_values = matches!(expression.operator, LabelOperator::In | LabelOperator::NotIn);
            if needs_values && expression.values.is_empty() {
                return Err(format!(
                    "key {:?}: values must be non-empty for operator {:?}",
                    expression.key, expression.operator
                ));
            }
            if !needs_values && !expression.values.is_empty() {
                return Err(format!(
                    "key {:?}: values must be empty for operator {:?}",
                    expression.key, expression.operator
                ));
            }
            let mut values = expression.values.clone();
            values.sort();
            values.dedup();
            requirements.push(Requirement {
                key: expression.key.clone(),
                operator: expression.operator,
                values,
                equality: false,
            });
        }
        Ok(CompiledSelector { requirements })
    }
}

fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("a selector key must not be empty".to_string());
    }
    Ok(())
}

/// A compiled property requirement.
#[derive(Clone, Debug)]
pub(crate) struct CompiledProperty {
    name: String,
    operator: PropertyOperator,
    expected: f64,
    expected_text: String,
}

/// Why a candidate fails a property requirement.
pub(crate) enum PropertyMismatch<'a> {
    /// The candidate does not report the property.
    Missing(&'a CompiledProperty),
    /// The observed value fails the comparison.
    Failed(&'a CompiledProperty, f64),
}

impl fmt::Display for PropertyMismatch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropertyMismatch::Missing(p) => write!(f, "property {} is not reported", p.name),
            PropertyMismatch::Failed(p, observed) => {
                write!(f, "{} {} {} (observed {})", p.name, operator_symbol(p.operator), p.expected_text, observed)
            }
        }
    }
}

fn operator_symbol(operator: PropertyOperator) -> &'static str {
    match operator {
        PropertyOperator::Gt => ">",
        PropertyOperator::Ge => ">=",
        PropertyOperator::Eq => "==",
        PropertyOperator::Ne => "!=",
        PropertyOperator::Lt => "<",
        PropertyOperator::Le => "<=",
    }
}

impl CompiledProperty {
    fn satisfied_by(&self, observed: f64) -> bool {
        match self.operator {
            PropertyOperator::Gt => observed > self.expected,
            PropertyOperator::Ge => observed >= self.expected,
            PropertyOperator::Eq => observed == self.expected,
            PropertyOperator::Ne => observed != self.expected,
            PropertyOperator::Lt => observed < self.expected,
            PropertyOperator::Le => observed <= self.expected,
        }
    }
}

/// A compiled property selector.
#[derive(Clone, Debug, Default)]
pub(crate) struct CompiledPropertySelector {
    requirements: Vec<CompiledProperty>,
}

impl CompiledPropertySelector {
    /// The first requirement the properties fail, or `None` when they match.
    pub(crate) fn first_mismatch<'a>(
        &'a self,
        properties: &BTreeMap<String, Quantity>,
    ) -> Option<PropertyMismatch<'a>> {
        self.requirements.iter().find_map(|requirement| match properties.get(&requirement.name) {
            None => Some(PropertyMismatch::Missing(requirement)),
            Some(observed) if !requirement.satisfied_by(observed.0) => {
                Some(PropertyMismatch::Failed(requirement, observed.0))
            }
            Some(_) => None,
        })
    }
}

impl PropertySelector {
    /// Validates (one quantity per requirement, as Fleet's validator demands) and compiles.
    pub(crate) fn compile(&self) -> Result<CompiledPropertySelector, String> {
        let mut requirements = Vec::with_capacity(self.match_expressions.len());
        for expression in &self.match_expressions {
            if expression.name.is_empty() {
                return Err("a property name must not be empty".to_string());
            }
            let [value] = expression.values.as_slice() else {
                return Err(format!(
                    "property {:?}: operator {:?} takes exactly one value, got {}",
                    expression.name,
                    expression.operator,
                    expression.values.len()
                ));
            };
            let expected = Quantity::parse(value).map_err(|e| format!("property {:?}: {e}", expression.name))?;
            requirements.push(CompiledProperty {
                name: expression.name.clone(),
                operator: expression.operator,
                expected: expected.0,
                expected_text: value.clone(),
            });
        }
        Ok(CompiledPropertySelector { requirements })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn expression(key: &str, operator: LabelOperator, values: &[&str]) -> LabelRequirement {
        LabelRequirement { key: key.to_string(), operator, values: values.iter().map(|v| v.to_string()).collect() }
    }

    #[test]
    fn label_operators_follow_kubernetes() {
        let cloud_aws = labels(&[("cloud", "aws")]);
        let none = labels(&[]);
        let cases = [
            (expression("cloud", LabelOperator::In, &["aws", "gce"]), true, false),
            (expression("cloud", LabelOperator::In, &["gce"]), false, false),
            (expression("cloud", LabelOperator::NotIn, &["gce"]), true, true),
            (expression("cloud", LabelOperator::NotIn, &["aws"]), false, true),
            (expression("cloud", LabelOperator::Exists, &[]), true, false),
            (expression("cloud", LabelOperator::DoesNotExist, &[]), false, true),
        ];
        for (requirement, on_aws, on_none) in cases {
            let selector = LabelSelector { match_expressions: vec![requirement.clone()], ..Default::default() };
            let compiled = selector.compile().expect("valid selector");
            assert_eq!(compiled.matches(&cloud_aws), on_aws, "{requirement:?} on cloud=aws");
            assert_eq!(compiled.matches(&none), on_none, "{requirement:?} on no labels");
        }
    }

    #[test]
    fn empty_selector_matches_everything_and_match_labels_are_anded() {
        assert!(LabelSelector::default().compile().expect("valid").matches(&labels(&[])));
        let selector = LabelSelector {
            match_labels: labels(&[("cloud", "aws"), ("env", "prod")]),
            match_expressions: vec![expression("region", LabelOperator::Exists, &[])],
        };
        let compiled = selector.compile().expect("valid");
        assert!(compiled.matches(&labels(&[("cloud", "aws"), ("env", "prod"), ("region", "eu")])));
        let mismatch = compiled.first_mismatch(&labels(&[("cloud", "aws"), ("env", "dev")])).map(|r| r.to_string());
        assert_eq!(mismatch.as_deref(), Some("env=prod"));
    }

    #[test]
    fn invalid_selectors_are_refused() {
        let bad = [
            expression("a", LabelOperator::In, &[]),
            expression("a", LabelOperator::NotIn, &[]),
            expression("a", LabelOperator::Exists, &["x"]),
            expression("", LabelOperator::Exists, &[]),
        ];
        for requirement in bad {
            let selector = LabelSelector { match_expressions: vec![requirement.clone()], ..Default::default() };
            assert!(selector.compile().is_err(), "{requirement:?}");
        }
    }

    #[test]
    fn property_operators_compare_quantities() {
        let properties: BTreeMap<String, Quantity> =
            [("cpu".to_string(), Quantity(4.0)), ("memory".to_string(), Quantity(16.0 * 1024.0 * 1024.0 * 1024.0))]
                .into_iter()
                .collect();
        let cases = [
            ("cpu", PropertyOperator::Gt, "3", true),
            ("cpu", PropertyOperator::Gt, "4", false),
            ("cpu", PropertyOperator::Ge, "4000m", true),
            ("cpu", PropertyOperator::Eq, "4", true),
            ("cpu", PropertyOperator::Ne, "4", false),
            ("cpu", PropertyOperator::Lt, "5", true),
            ("cpu", PropertyOperator::Le, "3", false),
            ("memory", PropertyOperator::Ge, "16Gi", true),
            ("gpu", PropertyOperator::Ge, "0", false),
        ];
        for (name, operator, value, want) in cases {
            let selector = PropertySelector {
                match_expressions: vec![PropertyRequirement {
                    name: name.to_string(),
                    operator,
                    values: vec![value.to_string()],
                }],
            };
            let compiled = selector.compile().expect("valid property selector");
            assert_eq!(compiled.first_mismatch(&properties).is_none(), want, "{name} {operator:?} {value}");
        }
    }

    #[test]
    fn property_requirements_need_exactly_one_quantity() {
        for values in [vec![], vec!["1".to_string(), "2".to_string()], vec!["lots".to_string()]] {
            let selector = PropertySelector {
                match_expressions: vec![PropertyRequirement {
                    name: "cpu".to_string(),
                    operator: PropertyOperator::Gt,
                    values,
                }],
            };
            assert!(selector.compile().is_err());
        }
    }
}
