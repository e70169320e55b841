//! TaintToleration: a candidate's taints against the policy's tolerations, with OCM's or
//! Fleet's rules.
//!
//! OCM (the placement scheduler's taint filter): PreferNoSelect never filters;
//! NoSelectIfNew filters only clusters not already decided; any other effect filters
//! unless a toleration matches (its effect empty or equal, its key empty or equal, and
//! Equal compares values while Exists does not). A toleration with tolerationSeconds holds
//! only while now is before the taint's timeAdded plus those seconds; that deadline is
//! returned so the controller re-decides when it passes. OCM refuses a toleration with an
//! empty key unless its operator is Exists, and one with Exists and a value.
//!
//! Fleet (its scheduler's taint filter): taints are NoSchedule; an Exists toleration
//! matches an empty or equal key, an Equal one needs equal key and value, and an empty
//! toleration effect matches any. NoSchedule keeps new placements away only: a current
//! decision stays on a cluster tainted after it was picked.

use jiff::{SignedDuration, Timestamp};

use super::{Context, Filter, Subject, TaintSemantics, Verdict};
use crate::candidate::{Taint, TaintEffect};
use crate::policy::{Toleration, TolerationOperator};

pub(super) struct TaintToleration<'a> {
    tolerations: &'a [Toleration],
    semantics: TaintSemantics,
    now: Timestamp,
}

pub(super) fn prepare<'a>(context: &Context<'a>, semantics: TaintSemantics) -> Result<TaintToleration<'a>, String> {
    let tolerations = &context.policy.tolerations;
    if semantics == TaintSemantics::Ocm {
        validate_ocm(tolerations)?;
    }
    Ok(TaintToleration { tolerations, semantics, now: context.state.now })
}

/// OCM's own validation, with its messages.
fn validate_ocm(tolerations: &[Toleration]) -> Result<(), String> {
    for toleration in tolerations {
        if toleration.key.is_empty() && toleration.operator != TolerationOperator::Exists {
            return Err("If the key is empty, operator must be Exists.".to_string());
        }
        if toleration.operator == TolerationOperator::Exists && !toleration.value.is_empty() {
            return Err("If the operator is Exists, the value should be empty.".to_string());
        }
    }
    Ok(())
}

/// What one taint comes to.
enum TaintOutcome {
    Tolerated(Option<Timestamp>),
    Untolerated(String),
}

impl Filter for TaintToleration<'_> {
    fn check(&self, subject: Subject<'_>) -> Verdict {
        let mut until: Option<Timestamp> = None;
        for taint in &subject.candidate.taints {
            let outcome = match self.semantics {
                TaintSemantics::Ocm => self.ocm(taint, subject.current),
                TaintSemantics::Fleet => self.fleet(taint, subject.current),
            };
            match outcome {
                TaintOutcome::Untolerated(reason) => return Verdict::reject(reason),
                TaintOutcome::Tolerated(Some(deadline)) => {
                    until = Some(until.map_or(deadline, |u| u.min(deadline)));
                }
                TaintOutcome::Tolerated(None) => {}
            }
        }
        match until {
            Some(deadline) => Verdict::PassUntil(deadline),
            None => Verdict::Pass,
        }
    }
}

impl TaintToleration<'_> {
    fn ocm(&self, taint: &Taint, current: bool) -> TaintOutcome {
        if taint.effect == TaintEffect::PreferNoSelect || (taint.effect == TaintEffect::NoSelectIfNew && current) {
            return TaintOutcome::Tolerated(None);
        }
        // The last expiry seen, for the reason: `Some(None)` when the taint has no
        // timeAdded (OCM then counts from the zero time, long past).
        let mut expired_at: Option<Option<Timestamp>> = None;
        for toleration in self.tolerations.iter().filter(|t| ocm_matches(taint, t)) {
            let Some(seconds) = toleration.toleration_seconds else {
                return TaintOutcome::Tolerated(None);
            };
            let Some(added) = taint.time_added else {
                expired_at = Some(None);
                continue;
            };
            match added.checked_add(SignedDuration::from_secs(seconds)) {
                // Beyond the representable calendar: it never runs out.
                Err(_) => return TaintOutcome::Tolerated(None),
                Ok(deadline) if self.now < deadline => return TaintOutcome::Tolerated(Some(deadline)),
                Ok(deadline) => expired_at = Some(Some(deadline)),
            }
        }
        let taint = describe(taint);
        TaintOutcome::Untolerated(match expired_at {
            Some(Some(deadline)) => {
                format!("taint {taint} was tolerated until {deadline} (tolerationSeconds after timeAdded)")
            }
            Some(None) => format!("taint {taint} has no timeAdded, so its tolerationSeconds have run out"),
            None => format!("taint {taint} is not tolerated"),
        })
    }

    fn fleet(&self, taint: &Taint, current: bool) -> TaintOutcome {
        if current || self.tolerations.iter().any(|t| fleet_matches(taint, t)) {
            TaintOutcome::Tolerated(None)
        } else {
            TaintOutcome::Untolerated(format!("taint {} is not tolerated", describe(taint)))
        }
    }
}

fn ocm_matches(taint: &Taint, toleration: &Toleration) -> bool {
    let effect_ok = toleration.effect.is_none_or(|e| e == taint.effect);
    let key_ok = toleration.key.is_empty() || toleration.key == taint.key;
    let value_ok = match toleration.operator {
        TolerationOperator::Equal => toleration.value == taint.value,
        TolerationOperator::Exists => true,
    };
    effect_ok && key_ok && value_ok
}

fn fleet_matches(taint: &Taint, toleration: &Toleration) -> bool {
    let effect_ok = toleration.effect.is_none_or(|e| e == taint.effect);
    let key_and_value_ok = match toleration.operator {
        TolerationOperator::Exists => toleration.key.is_empty() || toleration.key == taint.key,
        TolerationOperator::Equal => toleration.key == taint.key && toleration.value == taint.value,
    };
    effect_ok && key_and_value_ok
}

/// `key=value:Effect`, or `key:Effect` for an empty value, as kubectl prints taints.
fn describe(taint: &Taint) -> String {
    if taint.value.is_empty() {
        format!("{}:{}", taint.key, taint.effect)
    } else {
        format!("{}={}:{}", taint.key, taint.value, taint.effect)
    }
}
