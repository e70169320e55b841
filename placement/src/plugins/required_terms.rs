//! RequiredTerms: the policy's required terms, ORed; within a term the label, claim and
//! property selectors are ANDed.
//!
//! This one filter is OCM's predicate filter (label and claim selectors per predicate),
//! Fleet's required cluster affinity (label and property selectors per term) and kcp's
//! Location matching (locationSelectors over Location labels; a Location's
//! instanceSelector over SyncTarget labels), so no dialect matches selectors on its own.
//! A rejection names the first requirement each term fails.

use super::{Context, Filter, Subject, Verdict};
use crate::candidate::Candidate;
use crate::policy::SelectorTerm;
use crate::selector::{CompiledPropertySelector, CompiledSelector};

/// How many terms a rejection describes; the rest are counted.
const TERMS_DESCRIBED_MAX: usize = 3;

/// One compiled term.
pub(super) struct CompiledTerm {
    labels: Option<CompiledSelector>,
    claims: Option<CompiledSelector>,
    properties: Option<CompiledPropertySelector>,
}

impl CompiledTerm {
    pub(super) fn compile(term: &SelectorTerm) -> Result<CompiledTerm, String> {
        Ok(CompiledTerm {
            labels: term
                .label_selector
                .as_ref()
                .map(|s| s.compile())
                .transpose()
                .map_err(|e| format!("labelSelector: {e}"))?,
            claims: term
                .claim_selector
                .as_ref()
                .map(|s| s.compile())
                .transpose()
                .map_err(|e| format!("claimSelector: {e}"))?,
            properties: term
                .property_selector
                .as_ref()
                .map(|s| s.compile())
                .transpose()
                .map_err(|e| format!("propertySelector: {e}"))?,
        })
    }

    /// What the candidate fails, or `None` when it matches.
    pub(super) fn mismatch(&self, candidate: &Candidate) -> Option<String> {
        if let Some(requirement) = self.labels.as_ref().and_then(|s| s.first_mismatch(&candidate.labels)) {
            return Some(format!("label {requirement}"));
        }
        if let Some(requirement) = self.claims.as_ref().and_then(|s| s.first_mismatch(&candidate.claims)) {
            return Some(format!("claim {requirement}"));
        }
        self.properties.as_ref().and_then(|s| s.first_mismatch(&candidate.properties)).map(|m| m.to_string())
    }
}

pub(super) struct RequiredTerms {
    /// `None`: the policy requires nothing.
    terms: Option<Vec<CompiledTerm>>,
}

pub(super) fn prepare(context: &Context<'_>) -> Result<RequiredTerms, String> {
    let Some(terms) = &context.policy.required else {
        return Ok(RequiredTerms { terms: None });
    };
    let compiled = terms
        .iter()
        .enumerate()
        .map(|(i, term)| CompiledTerm::compile(term).map_err(|e| format!("required term {}: {e}", i + 1)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RequiredTerms { terms: Some(compiled) })
}

impl Filter for RequiredTerms {
    fn check(&self, subject: Subject<'_>) -> Verdict {
        let Some(terms) = &self.terms else {
            return Verdict::Pass;
        };
        let mut failures = Vec::new();
        for term in terms {
            match term.mismatch(subject.candidate) {
                None => return Verdict::Pass,
                Some(failure) => failures.push(failure),
            }
        }
        Verdict::reject(describe(&failures))
    }
}

fn describe(failures: &[String]) -> String {
    match failures {
        [] => "the policy's list of required terms is empty, so nothing matches".to_string(),
        [only] => format!("does not match the required term: {only}"),
        _ => {
            let described: Vec<String> = failures
                .iter()
                .take(TERMS_DESCRIBED_MAX)
                .enumerate()
                .map(|(i, failure)| format!("term {}: {failure}", i + 1))
                .collect();
            let more = failures.len().saturating_sub(TERMS_DESCRIBED_MAX);
            let tail = if more > 0 { format!("; and {more} more") } else { String::new() };
            format!("matches none of the {} required terms ({}{tail})", failures.len(), described.join("; "))
        }
    }
}
