//! Label and field selectors, parsed from `labelSelector=` / `fieldSelector=` query
//! parameters (and from `metav1.LabelSelector` objects) and matched against objects.
//!
//! The grammar, the validation and the error texts follow kube-apiserver
//! (`k8s.io/apimachinery/pkg/labels` and `pkg/fields`) token for token: clients parse our
//! 400 messages and kubectl prints them verbatim, so "close enough" would show up as
//! diffs in conformance output. Everything here is pure; matching takes the labels or a
//! field getter from the caller.
//!
//! Files: `error` holds the error type both kinds of selector share, `label` the label
//! selector model, its matching and the `metav1.LabelSelector` conversion, `label_parser`
//! kube's label-selector lexer and parser, `requirement` one validated term of a label
//! selector, and `field` field selectors.

mod error;
mod field;
mod label;
mod label_parser;
mod requirement;

pub use error::SelectorError;
pub use field::FieldSelector;
pub use label::LabelSelector;
pub use requirement::{Operator, Requirement};
