//! The acknowledged-write ledger.
//!
//! Three promises, judged from the history alone:
//!
//! - **lost-write**: the last write of an object that a client saw acknowledged (2xx) is
//!   what the final read finds: the same resourceVersion and value (absence after a
//!   delete), unless a later write with an unknown outcome may have replaced it.
//! - **stale-read**: a GET sees at least the last acknowledged write of the object that
//!   completed before the GET was sent.
//! - **rv-backwards**: per shard, a write acknowledged after another completed carries a
//!   higher resourceVersion, and a list never answers an RV older than a write that
//!   completed before it was sent — across restarts too, since time order alone decides.
//!
//! The workload gives every object one writer that issues its operations one at a time,
//! with resourceVersion preconditions on updates and deletes; the per-object order in
//! the history is therefore the order in which the writes could take effect, and an
//! unknown write can only have landed before the next acknowledged one.

use std::collections::BTreeMap;

use super::Violation;
use crate::history::{History, Operation, OperationKind, Outcome};

const CHECKER: &str = "ledger";

/// Runs the ledger's three checks.
pub fn check(history: &History) -> Vec<Violation> {
    let mut violations = lost_writes(history);
    violations.extend(stale_reads(history));
    violations.extend(rv_backwards(history));
    violations
}

/// What a write left behind: `Some((rv, value))` for a create or update (rv 0 when
/// unknown), `None` for a delete.
type Effect = Option<(u64, Option<String>)>;

fn effect(op: &Operation) -> Option<Effect> {
    match (&op.kind, &op.outcome) {
        (OperationKind::Delete, Outcome::Ok { .. } | Outcome::Unknown { .. }) => Some(None),
        (OperationKind::Create | OperationKind::Update, Outcome::Ok { rv, .. }) => Some(Some((*rv, op.value.clone()))),
        (OperationKind::Create | OperationKind::Update, Outcome::Unknown { .. }) => Some(Some((0, op.value.clone()))),
        _ => None,
    }
}

/// The writes of each object, in the writer's order: (collection, name) → operations.
fn writes_by_object(history: &History) -> BTreeMap<(&str, &str), Vec<&Operation>> {
    let mut objects: BTreeMap<(&str, &str), Vec<&Operation>> = BTreeMap::new();
    for op in history.operations.iter().filter(|op| op.kind.is_write()) {
        objects.entry((op.collection.as_str(), op.name.as_str())).or_default().push(op);
    }
    objects
}

/// The final states the object may be in: the last acknowledged write's effect, or that
/// of any write with an unknown outcome after it. `None` when nothing was acknowledged
/// (then the object may hold whatever an unknown write left, or be absent).
fn allowed_final(writes: &[&Operation]) -> Option<(usize, Vec<Effect>)> {
    let last_ok = writes.iter().rposition(|op| matches!(op.outcome, Outcome::Ok { .. }))?;
    let allowed = writes[last_ok..].iter().filter_map(|op| effect(op)).collect();
    Some((last_ok, allowed))
}

fn matches_effect(effect: &Effect, found: Option<&(u64, Option<String>)>) -> bool {
    match (effect, found) {
        (None, None) => true,
        // An unknown write's RV is unknown (0): its value alone identifies it.
        (Some((0, value)), Some((_, found_value))) => value == found_value,
        (Some((rv, value)), Some((found_rv, found_value))) => rv == found_rv && value == found_value,
        _ => false,
    }
}

fn lost_writes(history: &History) -> Vec<Violation> {
    let mut violations = Vec::new();
    for ((collection, name), writes) in writes_by_object(history) {
        let Some(state) = history.final_states.iter().find(|state| state.collection == collection) else {
            continue;
        };
        let Some((last_ok, allowed)) = allowed_final(&writes) else { continue };
        let found = state.objects.iter().find(|(n, _, _)| n == name).map(|(_, rv, value)| (*rv, value.clone()));
        if !allowed.iter().any(|effect| matches_effect(effect, found.as_ref())) {
            let acknowledged = writes[last_ok];
            violations.push(Violation::new(
                CHECKER,
                "lost-write",
                format!(
                    "{collection}/{name}: last acknowledged {:?} (client {}, {:?}, value {:?}) \
                     but the final list (rv {}) holds {found:?}",
                    acknowledged.kind, acknowledged.client, acknowledged.outcome, acknowledged.value, state.rv
                ),
            ));
        }
    }
    violations
}

fn stale_reads(history: &History) -> Vec<Violation> {
    let mut violations = Vec::new();
    let gets = history.operations.iter().filter(|op| op.kind == OperationKind::Get);
    for get in gets {
        let floor = history
            .operations
            .iter()
            .filter(|op| op.collection == get.collection && op.name == get.name && op.complete_ms < get.invoke_ms)
            .filter(|op| matches!(op.kind, OperationKind::Create | OperationKind::Update))
            .filter_map(|op| match op.outcome {
                Outcome::Ok { rv, .. } => Some(rv),
                _ => None,
            })
            .max();
        let (Some(floor), Outcome::Ok { rv, .. }) = (floor, &get.outcome) else { continue };
        if *rv < floor {
            violations.push(Violation::new(
                CHECKER,
                "stale-read",
                format!(
                    "{}/{}: GET at {} ms by client {} saw rv {rv}, older than the write acknowledged at rv {floor} \
                     before it",
                    get.collection, get.name, get.invoke_ms, get.client
                ),
            ));
        }
    }
    violations
}

/// An acknowledged operation with an RV that later operations must not go below.
struct Acknowledged<'a> {
    op: &'a Operation,
    rv: u64,
}

fn rv_backwards(history: &History) -> Vec<Violation> {
    let mut by_shard: BTreeMap<&str, Vec<Acknowledged>> = BTreeMap::new();
    for op in &history.operations {
        let ordered = matches!(op.kind, OperationKind::Create | OperationKind::Update | OperationKind::List);
        if let (true, Outcome::Ok { rv, .. }) = (ordered, &op.outcome) {
            by_shard.entry(op.shard.as_str()).or_default().push(Acknowledged { op, rv: *rv });
        }
    }
    let mut violations = Vec::new();
    for (shard, mut acknowledged) in by_shard {
        // Sweep in completion order; `high` is the highest RV a write completed with so far.
        acknowledged.sort_by_key(|a| a.op.complete_ms);
        let mut completed_writes: Vec<(u64, u64, &Operation)> = Vec::new(); // (complete_ms, rv, op)
        let mut running_max: Vec<(u64, &Operation)> = Vec::new();
        for a in &acknowledged {
            if a.op.kind.is_write() {
                let best = match running_max.last() {
                    Some((rv, op)) if *rv >= a.rv => (*rv, *op),
                    _ => (a.rv, a.op),
                };
                completed_writes.push((a.op.complete_ms, a.rv, a.op));
                running_max.push(best);
            }
        }
        for a in &acknowledged {
            let before = completed_writes.partition_point(|(complete_ms, _, _)| *complete_ms < a.op.invoke_ms);
            let Some((high, earlier)) = before.checked_sub(1).map(|i| running_max[i]) else { continue };
            let broken = if a.op.kind.is_write() { a.rv <= high } else { a.rv < high };
            if broken {
                violations.push(Violation::new(
                    CHECKER,
                    "rv-backwards",
                    format!(
                        "shard {shard}: {:?} {} invoked at {} ms answered rv {}, but {:?} {} had completed at {} ms \
                         with rv {high}",
                        a.op.kind, a.op.name, a.op.invoke_ms, a.rv, earlier.kind, earlier.name, earlier.complete_ms
                    ),
                ));
            }
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::FinalState;

    const COLLECTION: &str = "shard-1/chaos/default/configmaps";

    fn op(name: &str, kind: OperationKind, value: Option<&str>, at_ms: u64, outcome: Outcome) -> Operation {
        Operation {
            collection: COLLECTION.to_string(),
            shard: "shard-1".to_string(),
            client: 0,
            name: name.to_string(),
            kind,
            value: value.map(str::to_string),
            invoke_ms: at_ms,
            complete_ms: at_ms + 5,
            outcome,
        }
    }

    fn ok(rv: u64) -> Outcome {
        Outcome::Ok { rv, value: None }
    }

    fn unknown() -> Outcome {
        Outcome::Unknown { reason: "connection reset".to_string() }
    }

    fn history(operations: Vec<Operation>, objects: Vec<(&str, u64, &str)>) -> History {
        let objects = objects.into_iter().map(|(n, rv, v)| (n.to_string(), rv, Some(v.to_string()))).collect();
        History {
            operations,
            final_states: vec![FinalState { collection: COLLECTION.to_string(), rv: 100, objects }],
            ..History::default()
        }
    }

    fn guarantees(history: &History) -> Vec<String> {
        check(history).into_iter().map(|v| v.guarantee).collect()
    }

    #[test]
    fn a_consistent_history_passes() {
        let h = history(
            vec![
                op("a", OperationKind::Create, Some("a1"), 0, ok(10)),
                op("a", OperationKind::Update, Some("a2"), 10, ok(12)),
                op("b", OperationKind::Create, Some("b1"), 20, ok(13)),
                op("b", OperationKind::Delete, None, 30, ok(13)),
                op("a", OperationKind::Get, None, 40, Outcome::Ok { rv: 12, value: Some("a2".into()) }),
                op("", OperationKind::List, None, 50, ok(14)),
            ],
            vec![("a", 12, "a2")],
        );
        assert_eq!(guarantees(&h), Vec::<String>::new());
    }

    #[test]
    fn catches_a_lost_acknowledged_write() {
        let h = history(
            vec![
                op("a", OperationKind::Create, Some("a1"), 0, ok(10)),
                op("a", OperationKind::Update, Some("a2"), 10, ok(12)),
            ],
            vec![("a", 10, "a1")],
        );
        assert_eq!(guarantees(&h), ["lost-write"]);
        let gone = history(vec![op("a", OperationKind::Create, Some("a1"), 0, ok(10))], vec![]);
        assert_eq!(guarantees(&gone), ["lost-write"]);
    }

    #[test]
    fn catches_a_resurrected_delete_but_allows_an_unknown_write_to_win() {
        let resurrected = history(
            vec![
                op("a", OperationKind::Create, Some("a1"), 0, ok(10)),
                op("a", OperationKind::Delete, None, 10, ok(10)),
            ],
            vec![("a", 10, "a1")],
        );
        assert_eq!(guarantees(&resurrected), ["lost-write"]);
        let unknown_update = history(
            vec![
                op("a", OperationKind::Create, Some("a1"), 0, ok(10)),
                op("a", OperationKind::Update, Some("a2"), 10, unknown()),
            ],
            vec![("a", 11, "a2")],
        );
        assert_eq!(guarantees(&unknown_update), Vec::<String>::new());
    }

    #[test]
    fn catches_a_stale_read() {
        let h = history(
            vec![
                op("a", OperationKind::Create, Some("a1"), 0, ok(10)),
                op("a", OperationKind::Update, Some("a2"), 10, ok(12)),
                op("a", OperationKind::Get, None, 20, Outcome::Ok { rv: 10, value: Some("a1".into()) }),
            ],
            vec![("a", 12, "a2")],
        );
        assert_eq!(guarantees(&h), ["stale-read"]);
    }

    #[test]
    fn catches_an_rv_going_backwards_across_a_restart() {
        let h = history(
            vec![
                op("a", OperationKind::Create, Some("a1"), 0, ok(50)),
                // After a restart the shard hands out an RV below one it acknowledged.
                op("b", OperationKind::Create, Some("b1"), 100, ok(40)),
            ],
            vec![("a", 50, "a1"), ("b", 40, "b1")],
        );
        assert_eq!(guarantees(&h), ["rv-backwards"]);
        let list = history(
            vec![op("a", OperationKind::Create, Some("a1"), 0, ok(50)), op("", OperationKind::List, None, 100, ok(49))],
            vec![("a", 50, "a1")],
        );
        assert_eq!(guarantees(&list), ["rv-backwards"]);
    }

    #[test]
    fn concurrent_writes_may_complete_in_any_rv_order() {
        let mut first = op("a", OperationKind::Create, Some("a1"), 0, ok(50));
        first.complete_ms = 100;
        let second = op("b", OperationKind::Create, Some("b1"), 10, ok(40));
        let h = history(vec![first, second], vec![("a", 50, "a1"), ("b", 40, "b1")]);
        assert_eq!(guarantees(&h), Vec::<String>::new());
    }
}
