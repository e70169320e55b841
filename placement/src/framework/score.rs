//! The score and normalise stages: each active scorer gives the candidates scored
//! together their raw values, normalises them as a set (OCM's −100..100 scales depend on
//! the extremes among them), and the weighted normalised scores are summed per tier.
//!
//! The first round scores everything feasible, kept decisions included, so that kept
//! and new candidates are comparable. Later rounds (topology spread picks one per round)
//! rescore only with the scorers that depend on picks; the others keep their first-round
//! normalisation, so a candidate's resource score does not drift as the pool shrinks.

use super::ledger::Entry;
use super::weights::ActiveScorer;
use crate::candidate::Candidate;
use crate::decision::PluginScore;
use crate::error::Error;
use crate::plugins::{Context, Scorer, Subject};
use crate::profile::TIERS;

/// Which scorers a round runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rescore {
    /// Every scorer (the first round).
    All,
    /// Only scorers that depend on earlier picks.
    DependingOnPicks,
}

/// The active scorers, prepared once per decision over the candidates the first round
/// scores.
pub(super) fn prepare<'a>(
    scorers: &'a [ActiveScorer],
    context: &Context<'a>,
    scored: &[usize],
) -> Result<Vec<Box<dyn Scorer + 'a>>, Error> {
    let scored: Vec<&Candidate> = scored.iter().map(|&i| &context.candidates[i]).collect();
    scorers.iter().map(|scorer| scorer.plugin.prepare(context, &scored)).collect()
}

/// What a round scores with.
pub(super) struct Scoring<'s, 'a> {
    pub scorers: &'s [ActiveScorer],
    pub prepared: &'s mut [Box<dyn Scorer + 'a>],
    pub rescore: Rescore,
    pub placed: &'s [bool],
    pub candidates: &'s [Candidate],
}

pub(super) fn run(scoring: Scoring<'_, '_>, indices: &[usize], entries: &mut [Entry]) {
    let Scoring { scorers, prepared, rescore, placed, candidates } = scoring;
    for (position, (scorer, plugin)) in scorers.iter().zip(prepared.iter_mut()).enumerate() {
        let depends_on_picks = scorer.plugin.depends_on_picks();
        if rescore == Rescore::DependingOnPicks && !depends_on_picks {
            continue;
        }
        if depends_on_picks {
            plugin.begin_round(placed);
        }
        let raw: Vec<Option<f64>> = indices
            .iter()
            .map(|&index| {
                // A score that depends on picks says what one more pick would do; a
                // candidate already placed gets none, rather than a what-if about itself.
                if depends_on_picks && placed[index] {
                    return None;
                }
                plugin.raw(Subject { index, candidate: &candidates[index], current: entries[index].current })
            })
            .collect();
        let normalised = plugin.normalise(&raw);
        debug_assert_eq!(normalised.len(), raw.len(), "{} normalised a different number of scores", scorer.name);
        for ((&index, raw), normalised) in indices.iter().zip(raw).zip(normalised) {
            let scores = &mut entries[index].scores;
            if scores.len() != scorers.len() {
                *scores = vec![PluginScore { raw: None, normalised: 0 }; scorers.len()];
            }
            scores[position] = PluginScore { raw, normalised };
        }
    }
    for &index in indices {
        entries[index].total = totals(scorers, &entries[index].scores);
    }
}

fn totals(scorers: &[ActiveScorer], scores: &[PluginScore]) -> [i64; TIERS] {
    let mut total = [0i64; TIERS];
    for (scorer, score) in scorers.iter().zip(scores) {
        // Tiers were validated against TIERS before any round ran.
        if let Some(slot) = total.get_mut(scorer.tier) {
            *slot = slot.saturating_add(scorer.weight.saturating_mul(score.normalised));
        }
    }
    total
}
