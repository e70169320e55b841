//! The storage checker: what clients of a shard whose disk was full were told.
//!
//! For each recorded [`DiskFullSpell`](crate::history::DiskFullSpell) on a shard:
//! - **clear-refusal**: a write refused with a 5xx while the disk was full was refused
//!   with 507 Insufficient Storage and a message naming the disk, never a bare 500 or
//!   a 5xx that sends a person looking elsewhere;
//! - **reads-served**: every read (get, list) invoked and answered within the spell was
//!   answered (2xx or 404): a full disk stops writes, not reads;
//! - **recovers**: after the filler was removed (and the shard restarted, which RocksDB
//!   needs to leave its ENOSPC error state), some write on that shard was acknowledged.
//!
//! Lost or corrupted writes are the ledger's to find; this checker only judges answers.

use crate::history::{DiskFullSpell, History, Operation, Outcome};

use super::Violation;

const CHECKER: &str = "storage";

/// Judges every disk-full spell of `history`.
pub fn check(history: &History) -> Vec<Violation> {
    history.disk_full.iter().flat_map(|spell| check_spell(history, spell)).collect()
}

fn check_spell(history: &History, spell: &DiskFullSpell) -> Vec<Violation> {
    let on_shard = || history.operations.iter().filter(move |op| op.shard == spell.shard);
    let within = |op: &&Operation| op.invoke_ms >= spell.from_ms && op.complete_ms <= spell.to_ms;
    // Writes after the disk was freed and before the restart still meet RocksDB's error;
    // the spell ends when the filler is gone, so those count as neither.
    let mut violations = Vec::new();
    for op in on_shard().filter(within) {
        let Outcome::Unknown { reason } = &op.outcome else { continue };
        let answered_5xx = reason.starts_with("HTTP 5");
        if op.kind.is_write() && answered_5xx && !is_clear_disk_full(reason) {
            violations.push(Violation::new(
                CHECKER,
                "clear-refusal",
                format!("{} {:?} {} at {} ms on a full disk: {reason}", op.shard, op.kind, op.name, op.invoke_ms),
            ));
        }
        if !op.kind.is_write() {
            violations.push(Violation::new(
                CHECKER,
                "reads-served",
                format!("{} {:?} {} at {} ms on a full disk: {reason}", op.shard, op.kind, op.name, op.invoke_ms),
            ));
        }
    }
    let recovered = on_shard()
        .any(|op| op.kind.is_write() && op.invoke_ms >= spell.to_ms && matches!(op.outcome, Outcome::Ok { .. }));
    if !recovered {
        violations.push(Violation::new(
            CHECKER,
            "recovers",
            format!("{}: no write acknowledged after the disk was freed at {} ms", spell.shard, spell.to_ms),
        ));
    }
    violations
}

/// 507 with a message that names the disk.
fn is_clear_disk_full(reason: &str) -> bool {
    reason.starts_with("HTTP 507") && reason.contains("disk")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::OperationKind;

    const FULL_507: &str = "HTTP 507 Insufficient Storage: the shard's disk is full, so it cannot store writes";

    fn op(kind: OperationKind, shard: &str, invoke_ms: u64, outcome: Outcome) -> Operation {
        Operation {
            collection: format!("{shard}/chaos/chaos/configmaps"),
            shard: shard.to_string(),
            client: 0,
            name: "o".to_string(),
            kind,
            value: None,
            invoke_ms,
            complete_ms: invoke_ms + 5,
            outcome,
        }
    }

    fn unknown(reason: &str) -> Outcome {
        Outcome::Unknown { reason: reason.to_string() }
    }

    fn ok() -> Outcome {
        Outcome::Ok { rv: 1, value: None }
    }

    /// shard-1's disk full from 100 to 200 ms.
    fn history(operations: Vec<Operation>) -> History {
        let spell = DiskFullSpell { shard: "shard-1".to_string(), from_ms: 100, to_ms: 200 };
        History { operations, disk_full: vec![spell], ..History::default() }
    }

    fn guarantees(history: &History) -> Vec<String> {
        check(history).into_iter().map(|v| v.guarantee).collect()
    }

    #[test]
    fn clear_refusals_served_reads_and_a_later_write_pass() {
        let h = history(vec![
            op(OperationKind::Create, "shard-1", 50, ok()),
            op(OperationKind::Update, "shard-1", 120, unknown(FULL_507)),
            op(OperationKind::Get, "shard-1", 130, ok()),
            op(OperationKind::List, "shard-1", 140, ok()),
            // Another shard's 500 is not this spell's business.
            op(OperationKind::Create, "root", 150, unknown("HTTP 500 Internal Server Error: x")),
            op(OperationKind::Update, "shard-1", 210, ok()),
        ]);
        assert_eq!(guarantees(&h), Vec::<String>::new());
    }

    #[test]
    fn catches_a_bare_500_and_a_503_on_a_full_disk() {
        for reason in [
            "HTTP 500 Internal Server Error: Internal error occurred: rocksdb: IO error",
            "HTTP 503 Service Unavailable: storage is shutting down",
            "HTTP 507 Insufficient Storage: (no Status message)",
        ] {
            let h = history(vec![
                op(OperationKind::Create, "shard-1", 120, unknown(reason)),
                op(OperationKind::Create, "shard-1", 250, ok()),
            ]);
            assert_eq!(guarantees(&h), ["clear-refusal"], "{reason}");
        }
    }

    #[test]
    fn catches_a_read_that_failed_on_a_full_disk() {
        let h = history(vec![
            op(OperationKind::List, "shard-1", 150, unknown("connection reset")),
            op(OperationKind::Create, "shard-1", 250, ok()),
        ]);
        assert_eq!(guarantees(&h), ["reads-served"]);
    }

    #[test]
    fn catches_a_shard_that_never_takes_writes_again() {
        let h = history(vec![
            op(OperationKind::Create, "shard-1", 120, unknown(FULL_507)),
            op(OperationKind::Create, "shard-1", 250, unknown(FULL_507)),
            // Before the spell ended: it does not count as recovery.
            op(OperationKind::Create, "shard-1", 20, ok()),
        ]);
        assert_eq!(guarantees(&h), ["recovers"]);
    }
}
