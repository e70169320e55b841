//! The batch stage: how many the policy wants in all, and how many may be picked in one
//! round. A plugin limits the round when each pick changes what the next should be
//! (topology spread picks one at a time, as Fleet's PostBatch does); the framework then
//! runs rounds until the wanted number is reached or nothing more can be picked.

use std::collections::BTreeSet;

use super::weights::ActiveScorer;
use crate::plugins::{Context, FilterPlugin};
use crate::policy::{Number, Policy};

/// How many the policy wants: `None` for all that pass.
pub(super) fn wanted(policy: &Policy) -> Option<usize> {
    match &policy.number {
        Number::All => None,
        Number::N(n) => Some(usize::try_from(*n).unwrap_or(usize::MAX)),
        Number::Fixed(names) => Some(names.iter().collect::<BTreeSet<_>>().len()),
    }
}

/// The most any one round may pick.
pub(super) fn limit(filters: &[&FilterPlugin], scorers: &[ActiveScorer], context: &Context<'_>) -> usize {
    let from_filters = filters.iter().filter_map(|f| f.batch_limit(context));
    let from_scorers = scorers.iter().filter_map(|s| s.plugin.batch_limit(context));
    from_filters.chain(from_scorers).min().unwrap_or(usize::MAX).max(1)
}
