//! FixedNames: Fleet's PickFixed. Only the names the policy lists pass; which of them
//! are missing from the candidates altogether is reported by the framework, because a
//! filter only ever sees candidates that exist.

use std::collections::BTreeSet;

use super::{Context, Filter, Subject, Verdict};
use crate::policy::Number;

pub(super) struct FixedNames<'a> {
    /// `None` when the policy does not pick fixed names: everything passes.
    names: Option<BTreeSet<&'a str>>,
}

pub(super) fn prepare<'a>(context: &Context<'a>) -> FixedNames<'a> {
    let names = match &context.policy.number {
        Number::Fixed(names) => Some(names.iter().map(String::as_str).collect()),
        Number::All | Number::N(_) => None,
    };
    FixedNames { names }
}

impl Filter for FixedNames<'_> {
    fn check(&self, subject: Subject<'_>) -> Verdict {
        match &self.names {
            Some(names) if !names.contains(subject.candidate.name.as_str()) => {
                Verdict::reject("not among the placement's fixed cluster names")
            }
            _ => Verdict::Pass,
        }
    }
}
