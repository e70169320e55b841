//! Checkers: pure functions from a recorded [`History`](crate::history::History) to the
//! violations found in it. None does I/O, so each is unit-tested with hand-made histories
//! that plant exactly one violation.

pub mod availability;
pub mod cache;
pub mod index;
pub mod ledger;
pub mod outage;
pub mod placement;
pub mod storage;
pub mod watch;
pub mod workspaces;

use serde::{Deserialize, Serialize};

use crate::history::History;

/// One broken promise, named by the checker and guarantee that caught it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Violation {
    /// The checker (`ledger`, `watch`, `storage`, `workspaces`, `availability`, `index`, `cache`).
    pub checker: String,
    /// The guarantee broken (`lost-write`, `rv-backwards`, `ordered`, `reliable`, …).
    pub guarantee: String,
    /// What was seen, precisely enough to find it in the history.
    pub detail: String,
}

impl Violation {
    pub(crate) fn new(checker: &str, guarantee: &str, detail: String) -> Violation {
        Violation { checker: checker.to_string(), guarantee: guarantee.to_string(), detail }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}/{}] {}", self.checker, self.guarantee, self.detail)
    }
}

/// Runs every checker over `history`.
pub fn check_all(history: &History) -> Vec<Violation> {
    let mut violations = ledger::check(history);
    violations.extend(watch::check(history));
    violations.extend(storage::check(history));
    violations.extend(workspaces::check(history));
    violations.extend(availability::check(history));
    violations.extend(index::check(history));
    violations.extend(cache::check(history));
    violations.extend(outage::check(history));
    violations.extend(placement::check(history));
    violations
}
