//! [`SelectorError`], the one error type of label and field selectors, with kube-apiserver's
//! message texts.

use crate::names::go_quote;

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
