//! Label selectors: the [`LabelSelector`] that ANDs validated [`Requirement`]s (see
//! `requirement`), matching against an object's labels, and the conversion from a
//! `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`). The query-string
//! grammar lives in `label_parser`.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::error::SelectorError;
use super::label_parser::Parser;
use super::requirement::{Operator, Requirement};

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
        requirements.sort_by(|a, b| a.key().cmp(b.key()));
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
}
