//! Which scorers run, with which weights: the profile's scorers, re-weighted by an OCM
//! prioritizerPolicy when the profile takes one, minus those with weight 0 or nothing to
//! say under this policy.
//!
//! OCM's rules: Additive (the default) starts from the profile's defaults and lets the
//! configurations override or add; Exact starts from nothing. A configuration with
//! weight 0 disables its prioritizer, and an unknown prioritizer is a misconfiguration
//! only when it would run (weight ≠ 0), as in OCM. Weights are −10..10.

use crate::error::Error;
use crate::plugins::{Context, ScorerPlugin};
use crate::policy::PrioritizerMode;
use crate::profile::{Profile, ScorerEntry};

/// OCM's bound on a prioritizer weight.
const PRIORITIZER_WEIGHT_MAX: i32 = 10;

/// A scorer that runs in this decision.
#[derive(Clone, Debug)]
pub(super) struct ActiveScorer {
    pub plugin: ScorerPlugin,
    pub name: String,
    pub weight: i64,
    pub tier: usize,
}

pub(super) fn resolve(profile: &Profile, context: &Context<'_>) -> Result<Vec<ActiveScorer>, Error> {
    let mut entries: Vec<ScorerEntry> = profile.scorers.clone();
    if let (Some(tier), Some(prioritizers)) = (profile.prioritizer_tier, &context.policy.prioritizers) {
        if prioritizers.mode == PrioritizerMode::Exact {
            entries.retain(|entry| !entry.plugin.is_ocm_prioritizer());
        }
        for config in &prioritizers.configurations {
            if !(-PRIORITIZER_WEIGHT_MAX..=PRIORITIZER_WEIGHT_MAX).contains(&config.weight) {
                return Err(Error::misconfigured(
                    "prioritizerPolicy",
                    format!("weight {} is outside -10..10", config.weight),
                ));
            }
            let plugin = match ScorerPlugin::from_coordinate(&config.score_coordinate) {
                Ok(plugin) => plugin,
                Err(_) if config.weight == 0 => continue,
                Err(message) => return Err(Error::misconfigured("prioritizerPolicy", message)),
            };
            let weight = i64::from(config.weight);
            match entries.iter_mut().find(|entry| entry.plugin == plugin) {
                Some(entry) => entry.weight = weight,
                None => entries.push(ScorerEntry { plugin, weight, tier }),
            }
        }
    }
    Ok(entries
        .into_iter()
        .filter(|entry| entry.weight != 0 && entry.plugin.active(context))
        .map(|entry| ActiveScorer {
            name: entry.plugin.name(),
            plugin: entry.plugin,
            weight: entry.weight,
            tier: entry.tier,
        })
        .collect())
}
