//! PreferredTerms: Fleet's preferred cluster affinity, the sum of the weights of the
//! terms a candidate matches.
//!
//! Fleet's rules: a term's label selector decides whether the candidate earns anything;
//! without a property sorter a match earns the whole weight; with one, the weight is
//! scaled by where the candidate's value of the property lies between the smallest and
//! largest value among all candidates (not only the feasible ones, as Fleet reads every
//! cluster), `round(ratio × weight)` for Descending and `round((1 − ratio) × weight)` for
//! Ascending. A candidate without the property, or a property equal everywhere, earns
//! 0. Weights are −100..100.

use super::{Context, Scorer, Subject};
use crate::policy::{PreferredTerm, SortOrder};
use crate::selector::CompiledSelector;

/// Fleet's bound on a preferred term's weight.
const WEIGHT_MAX: i32 = 100;

struct CompiledPreference<'a> {
    weight: f64,
    labels: Option<CompiledSelector>,
    sorter: Option<Sorter<'a>>,
}

struct Sorter<'a> {
    property: &'a str,
    order: SortOrder,
    /// The smallest and largest value among all candidates; `None` when none has it.
    range: Option<(f64, f64)>,
}

pub(super) struct PreferredTerms<'a> {
    terms: Vec<CompiledPreference<'a>>,
}

pub(super) fn prepare<'a>(context: &Context<'a>) -> Result<PreferredTerms<'a>, String> {
    let mut terms = Vec::with_capacity(context.policy.preferred.len());
    for (i, term) in context.policy.preferred.iter().enumerate() {
        if !(-WEIGHT_MAX..=WEIGHT_MAX).contains(&term.weight) {
            return Err(format!("preferred term {}: weight {} is outside -100..100", i + 1, term.weight));
        }
        if term.weight == 0 {
            continue;
        }
        terms.push(compile(context, term).map_err(|e| format!("preferred term {}: {e}", i + 1))?);
    }
    Ok(PreferredTerms { terms })
}

fn compile<'a>(context: &Context<'a>, term: &'a PreferredTerm) -> Result<CompiledPreference<'a>, String> {
    let labels = term.preference.label_selector.as_ref().map(|s| s.compile()).transpose()?;
    let sorter = term.preference.property_sorter.as_ref().map(|sorter| Sorter {
        property: &sorter.name,
        order: sorter.sort_order,
        range: range_of(context, &sorter.name),
    });
    Ok(CompiledPreference { weight: f64::from(term.weight), labels, sorter })
}

fn range_of(context: &Context<'_>, property: &str) -> Option<(f64, f64)> {
    context.candidates.iter().filter_map(|c| c.properties.get(property)).fold(None, |range, value| {
        Some(match range {
            None => (value.0, value.0),
            Some((low, high)) => (f64::min(low, value.0), f64::max(high, value.0)),
        })
    })
}

impl Scorer for PreferredTerms<'_> {
    fn raw(&self, subject: Subject<'_>) -> Option<f64> {
        let candidate = subject.candidate;
        let mut total = 0.0;
        for term in &self.terms {
            if term.labels.as_ref().is_some_and(|s| !s.matches(&candidate.labels)) {
                continue;
            }
            total += match &term.sorter {
                None => term.weight,
                Some(sorter) => {
                    sorted_weight(sorter, candidate.properties.get(sorter.property).map(|q| q.0), term.weight)
                }
            };
        }
        Some(total)
    }
}

fn sorted_weight(sorter: &Sorter<'_>, value: Option<f64>, weight: f64) -> f64 {
    let (Some(value), Some((low, high))) = (value, sorter.range) else {
        return 0.0;
    };
    if high == low {
        return 0.0;
    }
    let ratio = (value - low) / (high - low);
    let scaled = match sorter.order {
        SortOrder::Descending => ratio * weight,
        SortOrder::Ascending => (1.0 - ratio) * weight,
    };
    // Fleet rounds each term's interpolated weight (half away from zero, like Go's
    // math.Context) before summing.
    scaled.round()
}
