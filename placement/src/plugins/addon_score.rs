//! AddOn scores (OCM prioritizer `AddOn/<resourceName>/<scoreName>`): the value an add-on
//! published for the cluster in an AddOnPlacementScore, used as the score as it is.
//!
//! As in OCM, a cluster without the object or the score scores 0, and so does one whose
//! scores are past `validUntil`; stale scores are reported as a warning so the controller
//! can surface them, the way OCM's scheduler returns a Warning status.

use jiff::Timestamp;

use super::{Context, Scorer, Subject};
use crate::candidate::Candidate;
use crate::policy::AddOnCoordinate;

pub(super) struct AddOnScore<'a> {
    coordinate: &'a AddOnCoordinate,
    now: Timestamp,
    warnings: Vec<String>,
}

pub(super) fn prepare<'a>(
    context: &Context<'a>,
    coordinate: &'a AddOnCoordinate,
    scored: &[&Candidate],
) -> AddOnScore<'a> {
    let now = context.state.now;
    let stale: Vec<&str> = scored
        .iter()
        .filter(|c| {
            c.addon_scores
                .get(&coordinate.resource_name)
                .and_then(|scores| scores.valid_until)
                .is_some_and(|until| now > until)
        })
        .map(|c| c.name.as_str())
        .collect();
    let warnings = if stale.is_empty() { Vec::new() } else { vec![stale_warning(&stale, &coordinate.resource_name)] };
    AddOnScore { coordinate, now, warnings }
}

impl Scorer for AddOnScore<'_> {
    fn raw(&self, subject: Subject<'_>) -> Option<f64> {
        let scores = subject.candidate.addon_scores.get(&self.coordinate.resource_name)?;
        if scores.valid_until.is_some_and(|until| self.now > until) {
            return None;
        }
        scores.scores.get(&self.coordinate.score_name).map(|&v| v as f64)
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
}

/// How many stale clusters a warning names; the rest are counted, so a fleet of stale
/// scores cannot produce a megabyte of status.
const STALE_NAMED_MAX: usize = 10;

fn stale_warning(stale: &[&str], resource_name: &str) -> String {
    let named: Vec<String> =
        stale.iter().take(STALE_NAMED_MAX).map(|cluster| format!("{cluster}/{resource_name}")).collect();
    let more = stale.len().saturating_sub(STALE_NAMED_MAX);
    let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
    format!("AddOnPlacementScores {}{tail} expired", named.join(" "))
}
