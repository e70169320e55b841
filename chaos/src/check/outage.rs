//! The outage checker: what was started while a shard was down must finish once it is
//! back. Judges the [`OutageRecord`] of the root-down scenario.
//!
//! - **binding-bound**: every APIBinding created during the outage is Bound after
//!   healing. Binding an export of another shard reads the export and its permissions
//!   from the cache, so neither the dead shard nor its return may leave a binding stuck.
//! - **outage-recorded**: the outage itself is on record (its window is not empty and a
//!   request straight to the shard found it down inside it); without that the other
//!   checkers judged a run with no outage.
//!
//! That workspaces became Ready and bindings Bound *during* the outage is what the run
//! must show, not an invariant: the scenario's test asserts it (see the scenario).

use crate::history::{History, OutageRecord};

use super::Violation;

const CHECKER: &str = "outage";

/// Judges `history.outage`, if the run recorded one.
pub fn check(history: &History) -> Vec<Violation> {
    let Some(outage) = &history.outage else { return Vec::new() };
    let mut violations = Vec::new();
    if let Some(problem) = unproven(outage) {
        violations.push(Violation::new(CHECKER, "outage-recorded", problem));
    }
    for binding in &outage.bindings {
        if binding.final_phase != "Bound" {
            let phase = if binding.final_phase.is_empty() { "no phase" } else { binding.final_phase.as_str() };
            violations.push(Violation::new(
                CHECKER,
                "binding-bound",
                format!(
                    "APIBinding of {} in {} (shard {}), created at {} ms, is {phase} after healing",
                    binding.export, binding.workspace, binding.shard, binding.created_ms
                ),
            ));
        }
    }
    violations
}

/// Why the record does not show an outage, if it does not.
fn unproven(outage: &OutageRecord) -> Option<String> {
    if outage.to_ms <= outage.from_ms {
        return Some(format!("shard {}: empty outage {}..{} ms", outage.shard, outage.from_ms, outage.to_ms));
    }
    let inside = outage.down_probes_ms.iter().any(|at| (outage.from_ms..outage.to_ms).contains(at));
    (!inside).then(|| {
        format!(
            "shard {}: no request found it down between {} and {} ms (probes at {:?})",
            outage.shard, outage.from_ms, outage.to_ms, outage.down_probes_ms
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::BindingRecord;

    fn binding(phase: &str) -> BindingRecord {
        BindingRecord {
            workspace: "root:org:bind-0".into(),
            shard: "shard-1".into(),
            export: "root:provider:widgets".into(),
            created_ms: 150,
            bound_ms: None,
            final_phase: phase.into(),
        }
    }

    fn history(bindings: Vec<BindingRecord>, down_probes_ms: Vec<u64>) -> History {
        let outage = OutageRecord {
            shard: "root".into(),
            from_ms: 100,
            to_ms: 900,
            down_probes_ms,
            scheduled: Vec::new(),
            bindings,
        };
        History { outage: Some(outage), ..History::default() }
    }

    fn guarantees(history: &History) -> Vec<String> {
        check(history).into_iter().map(|v| v.guarantee).collect::<Vec<_>>()
    }

    #[test]
    fn bound_bindings_and_a_proven_outage_pass() {
        assert!(check(&history(vec![binding("Bound"), binding("Bound")], vec![120, 880])).is_empty());
        assert!(check(&History::default()).is_empty(), "no outage, nothing to judge");
    }

    #[test]
    fn catches_a_binding_left_unbound() {
        let cases = [("Binding", "Binding"), ("", "no phase")];
        for (phase, said) in cases {
            let found = check(&history(vec![binding("Bound"), binding(phase)], vec![120]));
            assert_eq!(found.len(), 1, "{found:?}");
            assert_eq!(found[0].guarantee, "binding-bound");
            assert!(found[0].detail.contains(said) && found[0].detail.contains("root:org:bind-0"), "{found:?}");
        }
    }

    #[test]
    fn catches_an_outage_nobody_saw() {
        assert_eq!(guarantees(&history(Vec::new(), Vec::new())), ["outage-recorded"]);
        assert_eq!(guarantees(&history(Vec::new(), vec![50, 900])), ["outage-recorded"], "probes outside the window");
        let mut empty = history(Vec::new(), vec![100]);
        empty.outage.as_mut().unwrap().to_ms = 100;
        assert_eq!(guarantees(&empty), ["outage-recorded"]);
    }
}
