//! kube's label-selector lexer and recursive-descent parser, turning a `labelSelector=`
//! query value into validated [`Requirement`]s with kube's error texts.

use std::collections::BTreeSet;

use super::requirement::{Operator, Requirement};
use crate::names::{go_quote, qualified_name};

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
pub(super) struct Parser<'a> {
    tokens: Vec<(Kind, &'a str)>,
    position: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(selector: &'a str) -> Self {
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

    pub(super) fn parse(&mut self) -> Result<Vec<Requirement>, String> {
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

#[cfg(test)]
mod tests {
    use crate::selector::{LabelSelector, SelectorError};

    const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

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
}
