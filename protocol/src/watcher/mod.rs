//! One watcher for every loop that follows a list/watch source: list, watch from the
//! list's resourceVersion, list again on 410 Gone, fail over between endpoints with one
//! back-off policy.
//!
//! The decisions are pure and live here: [`State`] is where a watcher is, [`step`] moves
//! it on from what the last action produced ([`Outcome`]), and [`Failover`] (with its
//! [`Backoff`]) says which endpoint is next and how long to wait first. Replication
//! senders use [`Failover`] too. The async driver ([`drive::run`]) only performs what the
//! state says, against a [`drive::Source`]: the local store in the shard, or a cache
//! server's gRPC list/watch ([`cache::CacheSource`]).
//!
//! It lives in `protocol` because both the shard and the cache server follow sources and
//! `protocol` is the one crate both depend on that sits below both; the store adapter
//! lives in the shard, so that `store` stays free of the wire.

#[cfg(feature = "grpc")]
pub mod cache;
pub mod drive;

use std::time::Duration;

/// Reconnect delays: doubling from `min` to `max`, back to `min` after a success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Remote endpoints' delays: 100 ms, doubling up to 5 s.
    pub fn reconnect() -> Self {
        Backoff::new(Duration::from_millis(100), Duration::from_secs(5))
    }

    /// Delays from `min` to `max`.
    pub fn new(min: Duration, max: Duration) -> Self {
        Backoff { min, max, next: min }
    }

    /// The delay before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        delay
    }

    /// Something worked: the next failure waits `min` again.
    pub fn reset(&mut self) {
        self.next = self.min;
    }
}

/// Which of several endpoints (in failover order) to use, and how long to wait first.
///
/// A failure moves to the next endpoint at once; only when every endpoint has failed in a
/// row does the next attempt wait, and that wait doubles up to the back-off's cap. Only a
/// success ([`Failover::succeeded`]) resets it: moving to another endpoint does not, or a
/// list of endpoints that are all down would be retried at the shortest delay forever.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failover {
    endpoints: usize,
    current: usize,
    failures_in_row: usize,
    backoff: Backoff,
}

impl Failover {
    /// Starts at the first of `endpoints` endpoints (at least one is assumed).
    pub fn new(endpoints: usize, backoff: Backoff) -> Self {
        Failover { endpoints: endpoints.max(1), current: 0, failures_in_row: 0, backoff }
    }

    /// The endpoint to use now.
    pub fn endpoint(&self) -> usize {
        self.current
    }

    /// The endpoint worked (a list, or a replication stream answered its Hello).
    pub fn succeeded(&mut self) {
        self.failures_in_row = 0;
        self.backoff.reset();
    }

    /// The endpoint failed: moves to the next one and returns how long to wait before
    /// trying it (zero while a round of the endpoints is not complete).
    pub fn failed(&mut self) -> Duration {
        self.current = (self.current + 1) % self.endpoints;
        self.failures_in_row += 1;
        if self.failures_in_row.is_multiple_of(self.endpoints) {
            self.backoff.next_delay()
        } else {
            Duration::ZERO
        }
    }
}

/// Where to start following a source for a receiver that holds everything up to
/// `position` (a replication target's recorded position, a resuming client's
/// resourceVersion).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Watch the source from this resourceVersion.
    Resume(u64),
    /// List (or compare) everything first.
    List,
}

/// Decides where to start: a receiver that knows nothing (0), one at a position the source
/// never reached (the source's data was replaced), or one the change log no longer holds
/// must list first.
pub fn start(position: u64, current_rv: u64, compacted_rv: u64) -> Start {
    if position == 0 || position > current_rv || position < compacted_rv {
        Start::List
    } else {
        Start::Resume(position)
    }
}

/// Where a watcher is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// List the current endpoint (first, after a 410, or after a failover).
    Listing,
    /// Watch the current endpoint from this resourceVersion.
    Watching {
        /// The resourceVersion to watch from (everything up to it is applied).
        from_rv: u64,
    },
    /// Wait, then list.
    Waiting {
        /// How long.
        delay: Duration,
    },
    /// The source closed for good (the process is stopping).
    Stopped,
}

/// What the last action of a watcher produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The list is applied; it reflects this resourceVersion.
    Listed {
        /// The list's resourceVersion.
        rv: u64,
    },
    /// The watch ended cleanly (the server is restarting) after applying everything up to
    /// this resourceVersion.
    WatchEnded {
        /// The last applied resourceVersion.
        rv: u64,
    },
    /// 410 Gone: the source no longer holds changes from where the watcher is.
    Gone,
    /// Anything else went wrong.
    Failed,
    /// The wait is over.
    Waited,
    /// The source closed for good.
    Closed,
}

/// The next state after `outcome`; updates `failover` (which endpoint, how long to wait).
pub fn step(state: State, outcome: Outcome, failover: &mut Failover) -> State {
    match (state, outcome) {
        (State::Stopped, _) | (_, Outcome::Closed) => State::Stopped,
        (State::Listing, Outcome::Listed { rv }) => {
            failover.succeeded();
            State::Watching { from_rv: rv }
        }
        (State::Watching { .. }, Outcome::WatchEnded { rv }) => State::Watching { from_rv: rv },
        // 410 → relist is an edge of its own: the endpoint works, it only moved on.
        (State::Listing | State::Watching { .. }, Outcome::Gone) => State::Listing,
        (State::Listing | State::Watching { .. }, Outcome::Failed) => match failover.failed() {
            delay if delay.is_zero() => State::Listing,
            delay => State::Waiting { delay },
        },
        (State::Waiting { .. }, Outcome::Waited) => State::Listing,
        (state, outcome) => {
            debug_assert!(false, "outcome {outcome:?} cannot follow {state:?}");
            State::Listing
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn where_to_start() {
        let cases = [
            (0, 100, 0, Start::List),
            (50, 100, 0, Start::Resume(50)),
            (100, 100, 90, Start::Resume(100)),
            (90, 100, 90, Start::Resume(90)),
            (89, 100, 90, Start::List),
            (101, 100, 0, Start::List),
        ];
        for (position, current, compacted, expected) in cases {
            assert_eq!(start(position, current, compacted), expected, "at {position} of {current} from {compacted}");
        }
    }

    #[test]
    fn backoff_doubles_to_its_cap_and_resets() {
        let mut backoff = Backoff::reconnect();
        let delays: Vec<u128> = (0..8).map(|_| backoff.next_delay().as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        backoff.reset();
        assert_eq!(backoff.next_delay(), ms(100));
    }

    #[test]
    fn endpoints_that_all_fail_wait_longer_each_round_up_to_the_cap() {
        // Two caches down: failing over is immediate, each full round waits twice as
        // long, and moving to the other endpoint never starts the delays over.
        let mut failover = Failover::new(2, Backoff::reconnect());
        let rounds: Vec<(usize, u128)> = (0..16)
            .map(|_| {
                let delay = failover.failed();
                (failover.endpoint(), delay.as_millis())
            })
            .collect();
        let expected = [
            (1, 0),
            (0, 100),
            (1, 0),
            (0, 200),
            (1, 0),
            (0, 400),
            (1, 0),
            (0, 800),
            (1, 0),
            (0, 1600),
            (1, 0),
            (0, 3200),
            (1, 0),
            (0, 5000),
            (1, 0),
            (0, 5000),
        ];
        assert_eq!(rounds, expected);
    }

    #[test]
    fn only_a_success_starts_the_delays_over() {
        let mut failover = Failover::new(3, Backoff::reconnect());
        let delays: Vec<u128> = (0..6).map(|_| failover.failed().as_millis()).collect();
        assert_eq!(delays, [0, 0, 100, 0, 0, 200]);
        failover.succeeded();
        let delays: Vec<u128> = (0..3).map(|_| failover.failed().as_millis()).collect();
        assert_eq!(delays, [0, 0, 100], "a round after a success starts at the shortest delay");
        let mut single = Failover::new(1, Backoff::new(ms(500), ms(500)));
        assert_eq!((single.failed(), single.failed(), single.endpoint()), (ms(500), ms(500), 0));
    }

    #[test]
    fn transitions() {
        let watching = State::Watching { from_rv: 7 };
        let cases = [
            (State::Listing, Outcome::Listed { rv: 7 }, watching),
            (watching, Outcome::WatchEnded { rv: 9 }, State::Watching { from_rv: 9 }),
            (watching, Outcome::Gone, State::Listing),
            (State::Listing, Outcome::Gone, State::Listing),
            (watching, Outcome::Failed, State::Waiting { delay: ms(100) }),
            (State::Listing, Outcome::Failed, State::Waiting { delay: ms(100) }),
            (State::Waiting { delay: ms(100) }, Outcome::Waited, State::Listing),
            (watching, Outcome::Closed, State::Stopped),
            (State::Listing, Outcome::Closed, State::Stopped),
        ];
        for (state, outcome, expected) in cases {
            let mut failover = Failover::new(1, Backoff::reconnect());
            assert_eq!(step(state, outcome, &mut failover), expected, "{state:?} + {outcome:?}");
        }
    }

    #[test]
    fn a_list_resets_the_back_off_and_a_gone_does_not_fail_over() {
        let mut failover = Failover::new(2, Backoff::reconnect());
        let mut state = State::Listing;
        for outcome in [Outcome::Failed, Outcome::Failed, Outcome::Waited, Outcome::Failed, Outcome::Failed] {
            state = step(state, outcome, &mut failover);
        }
        assert_eq!(state, State::Waiting { delay: ms(200) });
        state = step(state, Outcome::Waited, &mut failover);
        state = step(state, Outcome::Listed { rv: 3 }, &mut failover);
        state = step(state, Outcome::Gone, &mut failover);
        assert_eq!((state, failover.endpoint()), (State::Listing, 0), "a 410 relists the same endpoint");
        state = step(state, Outcome::Listed { rv: 4 }, &mut failover);
        state = step(state, Outcome::Failed, &mut failover);
        assert_eq!((state, failover.endpoint()), (State::Listing, 1));
        assert_eq!(step(state, Outcome::Failed, &mut failover), State::Waiting { delay: ms(100) });
    }
}
