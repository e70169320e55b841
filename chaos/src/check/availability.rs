//! The availability checker: one frozen or dead shard takes down only what it hosts.
//! While a shard is faulted, requests to logical clusters on the other, healthy, shards
//! keep succeeding.
//!
//! Each operation is placed by its invoke time into the fault window it falls in (see
//! [`FaultWindow`]): a front-proxy window (every request through the proxy may fail),
//! a window of a fault on its own shard, a window of a fault on another shard or on a
//! cache server (the operation's shard is *healthy* then), or none (calm). An operation *succeeds* when its
//! shard gave a definite answer: a 2xx, a 404 read, or 409 (a precondition that no longer
//! holds, still an answer from a working shard). No answer, a 5xx, 429 and any other
//! refusal count as failures.
//!
//! - **healthy-shard-available**: a healthy shard's success rate over every window of a
//!   fault on another shard is at least [`HEALTHY_SUCCESS_MIN`], judged once it saw at
//!   least [`SAMPLES_MIN`] requests there.
//!
//! Why 0.95 and not 1: nothing on the healthy shard's path waits for the faulted one, so
//! failures there are bugs, but a two-core machine shared with other builds can stall a
//! client past its 5 s timeout now and then; the bound tolerates one such request in
//! twenty, and a proxy that queues a healthy shard's requests behind a frozen one (every
//! request during the freeze fails) is far below it.

use std::collections::BTreeSet;

use crate::history::{FaultTarget, FaultWindow, History, Operation, Outcome};

use super::Violation;

const CHECKER: &str = "availability";

/// The lowest success rate a healthy shard may show during faults on other shards.
pub const HEALTHY_SUCCESS_MIN: f64 = 0.95;

/// The fewest requests to a healthy shard during faults that the rate is judged on.
pub const SAMPLES_MIN: usize = 10;

/// Successes out of requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rate {
    /// Requests that got a definite answer.
    pub ok: usize,
    /// Every request counted.
    pub total: usize,
}

impl Rate {
    fn add(&mut self, ok: bool) {
        self.total += 1;
        self.ok += usize::from(ok);
    }

    /// The success rate, if anything was counted.
    pub fn ratio(&self) -> Option<f64> {
        (self.total > 0).then(|| self.ok as f64 / self.total as f64)
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.ratio() {
            Some(ratio) => write!(f, "{}/{} ({:.1}%)", self.ok, self.total, ratio * 100.0),
            None => write!(f, "-"),
        }
    }
}

/// One shard's success rates, by what was going on when each request left.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShardRates {
    /// The shard.
    pub shard: String,
    /// No fault at all.
    pub calm: Rate,
    /// A fault on another shard: this one was healthy (the judged rate).
    pub healthy_during_faults: Rate,
    /// A fault on this shard.
    pub own_faults: Rate,
    /// The front-proxy was down or restarting.
    pub proxy_down: Rate,
}

/// Whether `op` got a definite answer from its shard.
fn succeeded(op: &Operation) -> bool {
    match &op.outcome {
        Outcome::Ok { .. } | Outcome::NotFound => true,
        Outcome::Fail { status } => *status == 409,
        Outcome::Unknown { .. } => false,
    }
}

/// The window `at_ms` falls in, the front-proxy's first (it takes everything down).
fn window_at(windows: &[FaultWindow], at_ms: u64) -> Option<&FaultWindow> {
    let inside = |w: &&FaultWindow| w.from_ms <= at_ms && at_ms < w.to_ms;
    windows.iter().filter(inside).find(|w| w.target == FaultTarget::FrontProxy).or_else(|| windows.iter().find(inside))
}

/// Every shard's rates, shards in name order.
pub fn rates(history: &History) -> Vec<ShardRates> {
    let shards: BTreeSet<&str> = history.operations.iter().map(|op| op.shard.as_str()).collect();
    shards
        .into_iter()
        .map(|shard| {
            let mut rates = ShardRates { shard: shard.to_string(), ..ShardRates::default() };
            for op in history.operations.iter().filter(|op| op.shard == shard) {
                let rate = match window_at(&history.fault_windows, op.invoke_ms).map(|w| &w.target) {
                    None => &mut rates.calm,
                    Some(FaultTarget::FrontProxy) => &mut rates.proxy_down,
                    Some(FaultTarget::Shard(faulted)) if faulted == shard => &mut rates.own_faults,
                    Some(FaultTarget::Shard(_) | FaultTarget::Cache(_)) => &mut rates.healthy_during_faults,
                };
                rate.add(succeeded(op));
            }
            rates
        })
        .collect()
}

/// What the requests to a faulted shard were told while its fault held and after it was
/// lifted: the proof that a fault took effect and that the shard came back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowEffect {
    /// The window of a fault on a shard.
    pub window: FaultWindow,
    /// Requests to the shard invoked inside the window that got no definite answer.
    pub failed_during: usize,
    /// Requests to the shard invoked inside the window that got one (late, for a fault
    /// that lets nothing through: after the heal).
    pub answered_during: usize,
    /// Requests to the shard invoked after the window (before the next one began) that
    /// got a definite answer.
    pub answered_after: usize,
    /// Requests to the shard in flight from the window's first half (or earlier) until it
    /// closed: a request takes milliseconds, so one held
    /// across a window of seconds is one the fault stalled (a disconnected host drops
    /// packets without a reset, and a request shorter than the client's timeout waits).
    pub held_across: usize,
}

impl WindowEffect {
    /// Whether the fault visibly took hold of requests to its shard: some failed, or
    /// were held until it was lifted.
    pub fn took_hold(&self) -> bool {
        self.failed_during > 0 || self.held_across > 0
    }
}

/// For every window of a fault on a shard the workload sent requests to, in order, what
/// those requests were told during it and after it.
pub fn window_effects(history: &History) -> Vec<WindowEffect> {
    let windows = &history.fault_windows;
    let mut effects = Vec::new();
    for (index, window) in windows.iter().enumerate() {
        let FaultTarget::Shard(shard) = &window.target else { continue };
        let next_ms = windows.get(index + 1).map_or(u64::MAX, |next| next.from_ms);
        let ops: Vec<&Operation> = history.operations.iter().filter(|op| &op.shard == shard).collect();
        if ops.is_empty() {
            continue;
        }
        let during = ops.iter().filter(|op| window.from_ms <= op.invoke_ms && op.invoke_ms < window.to_ms);
        let (mut answered, mut failed) = (0, 0);
        for op in during {
            if succeeded(op) {
                answered += 1;
            } else {
                failed += 1;
            }
        }
        let after = ops.iter().filter(|op| window.to_ms <= op.invoke_ms && op.invoke_ms < next_ms);
        // Held across at least the second half of the window: a request that merely
        // began just before the heal is no evidence.
        let half = window.from_ms + (window.to_ms.saturating_sub(window.from_ms)) / 2;
        let held_across = ops.iter().filter(|op| op.invoke_ms <= half && op.complete_ms >= window.to_ms).count();
        effects.push(WindowEffect {
            window: window.clone(),
            failed_during: failed,
            answered_during: answered,
            answered_after: after.filter(|op| succeeded(op)).count(),
            held_across,
        });
    }
    effects
}

/// Judges every healthy shard's rate during faults on the others.
pub fn check(history: &History) -> Vec<Violation> {
    rates(history)
        .into_iter()
        .filter_map(|rates| {
            let rate = rates.healthy_during_faults;
            let ratio = rate.ratio()?;
            (rate.total >= SAMPLES_MIN && ratio < HEALTHY_SUCCESS_MIN).then(|| {
                Violation::new(
                    CHECKER,
                    "healthy-shard-available",
                    format!(
                        "shard {} answered {rate} of its requests while another shard was faulted (bound {:.0}%)",
                        rates.shard,
                        HEALTHY_SUCCESS_MIN * 100.0
                    ),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::OperationKind;

    fn op(shard: &str, invoke_ms: u64, outcome: Outcome) -> Operation {
        Operation {
            collection: format!("{shard}/chaos/chaos/configmaps"),
            shard: shard.to_string(),
            client: 0,
            name: "a".to_string(),
            kind: OperationKind::Get,
            value: None,
            invoke_ms,
            complete_ms: invoke_ms + 1,
            outcome,
        }
    }

    fn ok() -> Outcome {
        Outcome::Ok { rv: 1, value: None }
    }

    fn unknown() -> Outcome {
        Outcome::Unknown { reason: "timed out".to_string() }
    }

    fn window(target: FaultTarget, from_ms: u64, to_ms: u64) -> FaultWindow {
        FaultWindow { target, what: "SIGSTOP".to_string(), from_ms, to_ms }
    }

    fn shard(name: &str) -> FaultTarget {
        FaultTarget::Shard(name.to_string())
    }

    /// `count` operations on `shard` invoked from `from_ms` on, one per ms, the first
    /// `failed` of them unanswered.
    fn ops(shard: &str, from_ms: u64, count: u64, failed: u64) -> Vec<Operation> {
        (0..count).map(|i| op(shard, from_ms + i, if i < failed { unknown() } else { ok() })).collect()
    }

    fn history(operations: Vec<Operation>, fault_windows: Vec<FaultWindow>) -> History {
        History { operations, fault_windows, ..History::default() }
    }

    fn guarantees(history: &History) -> Vec<String> {
        check(history).into_iter().map(|v| v.guarantee).collect()
    }

    #[test]
    fn the_faulted_shard_may_fail_while_the_healthy_one_answers() {
        let mut operations = ops("shard-1", 100, 20, 20);
        operations.extend(ops("root", 100, 20, 0));
        let h = history(operations, vec![window(shard("shard-1"), 100, 200)]);
        assert_eq!(guarantees(&h), Vec::<String>::new());
        let rates = rates(&h);
        assert_eq!(rates[0].shard, "root");
        assert_eq!(rates[0].healthy_during_faults, Rate { ok: 20, total: 20 });
        assert_eq!(rates[1].own_faults, Rate { ok: 0, total: 20 });
    }

    #[test]
    fn catches_a_healthy_shard_that_fails_with_the_faulted_one() {
        // root is healthy during shard-1's freeze but answers only 15 of 20.
        let h = history(ops("root", 100, 20, 5), vec![window(shard("shard-1"), 100, 200)]);
        assert_eq!(guarantees(&h), ["healthy-shard-available"]);
        assert!(check(&h)[0].detail.contains("15/20"), "{:?}", check(&h));
    }

    #[test]
    fn one_failure_in_twenty_is_within_the_bound() {
        let h = history(ops("root", 100, 20, 1), vec![window(shard("shard-1"), 100, 200)]);
        assert_eq!(guarantees(&h), Vec::<String>::new());
    }

    #[test]
    fn front_proxy_windows_and_calm_spells_are_not_judged() {
        let mut operations = ops("root", 100, 20, 20);
        operations.extend(ops("root", 500, 20, 20));
        let h = history(operations, vec![window(FaultTarget::FrontProxy, 100, 200)]);
        assert_eq!(guarantees(&h), Vec::<String>::new());
        let rates = rates(&h);
        assert_eq!(rates[0].proxy_down, Rate { ok: 0, total: 20 });
        assert_eq!(rates[0].calm, Rate { ok: 0, total: 20 });
    }

    #[test]
    fn the_front_proxy_window_wins_where_windows_overlap() {
        let windows = vec![window(shard("shard-1"), 100, 300), window(FaultTarget::FrontProxy, 150, 200)];
        let h = history(ops("root", 150, 20, 20), windows);
        assert_eq!(guarantees(&h), Vec::<String>::new());
        assert_eq!(rates(&h)[0].proxy_down.total, 20);
    }

    #[test]
    fn a_shard_is_healthy_while_a_cache_is_faulted() {
        let h = history(ops("root", 100, 20, 5), vec![window(FaultTarget::Cache("cache-r".to_string()), 100, 200)]);
        assert_eq!(guarantees(&h), ["healthy-shard-available"]);
    }

    #[test]
    fn window_effects_count_the_faulted_shards_requests_during_and_after() {
        let mut operations = ops("shard-1", 50, 1, 0);
        operations.extend(ops("shard-1", 100, 3, 2));
        operations.extend(ops("root", 100, 5, 0));
        operations.extend(ops("shard-1", 250, 1, 0));
        operations.extend(ops("shard-1", 550, 1, 1));
        operations.push(op("shard-1", 650, Outcome::Fail { status: 403 }));
        let windows = vec![
            window(shard("shard-1"), 100, 200),
            window(FaultTarget::Cache("cache-a".to_string()), 300, 400),
            window(shard("shard-1"), 500, 600),
        ];
        let effects = window_effects(&history(operations, windows));
        assert_eq!(effects.len(), 2, "a cache's window has no requests of its own: {effects:?}");
        let counts = |e: &WindowEffect| (e.failed_during, e.answered_during, e.answered_after);
        assert_eq!(counts(&effects[0]), (2, 1, 1));
        assert_eq!(counts(&effects[1]), (1, 0, 0), "a 403 after the window is no answer");
        assert!(effects.iter().all(|e| e.held_across == 0), "every request here took 1 ms: {effects:?}");
    }

    #[test]
    fn a_request_stalled_across_a_window_shows_the_fault_took_hold() {
        let mut stalled = op("root", 90, ok());
        stalled.complete_ms = 230;
        let mut late_start = op("root", 190, ok());
        late_start.complete_ms = 205;
        let effects =
            window_effects(&history(vec![stalled.clone(), late_start.clone()], vec![window(shard("root"), 100, 200)]));
        assert_eq!(effects[0].held_across, 1, "{effects:?}");
        assert!(effects[0].took_hold());
        let effects = window_effects(&history(vec![late_start], vec![window(shard("root"), 100, 200)]));
        assert_eq!(effects[0].held_across, 0, "begun just before the heal: {effects:?}");
        assert!(!effects[0].took_hold(), "{effects:?}");
    }

    #[test]
    fn too_few_requests_are_not_judged() {
        let h = history(ops("root", 100, 5, 5), vec![window(shard("shard-1"), 100, 200)]);
        assert_eq!(guarantees(&h), Vec::<String>::new());
    }

    #[test]
    fn a_conflict_is_an_answer_and_a_forbidden_unknown_path_is_not() {
        let mut operations: Vec<Operation> =
            (0..10).map(|i| op("root", 100 + i, Outcome::Fail { status: 409 })).collect();
        operations.push(op("root", 120, Outcome::Fail { status: 403 }));
        let h = history(operations, vec![window(shard("shard-1"), 100, 200)]);
        assert_eq!(rates(&h)[0].healthy_during_faults, Rate { ok: 10, total: 11 });
    }
}
