//! The async driver of a watcher: performs what [`super::State`] says against a
//! [`Source`] and feeds the result to [`super::step`]. It decides nothing itself.

use super::{step, Backoff, Failover, Outcome, State};
use std::future::Future;

/// Why a list or watch ended without result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// 410 Gone (`OUT_OF_RANGE` over gRPC): list again.
    Gone(String),
    /// The source closed for good: stop.
    Closed,
    /// Anything else: fail over.
    Failed(String),
}

/// Something to list and watch, at one or more endpoints (in failover order). It hands
/// what it lists and every event it sees to its consumer itself.
pub trait Source: Send {
    /// How many endpoints there are.
    fn endpoints(&self) -> usize;

    /// Endpoint `endpoint`'s name, for logs.
    fn name(&self, endpoint: usize) -> String;

    /// Lists everything from `endpoint` and applies it; returns the resourceVersion the
    /// list reflects.
    fn list(&mut self, endpoint: usize) -> impl Future<Output = Result<u64, Failure>> + Send;

    /// Watches `endpoint` from `from_rv`, applying every event, until the watch ends;
    /// returns the last resourceVersion applied when it ended cleanly.
    fn watch(&mut self, endpoint: usize, from_rv: u64) -> impl Future<Output = Result<u64, Failure>> + Send;
}

/// Follows `source` until it closes for good, with `backoff` between failed rounds of its
/// endpoints. `task` names the loop in logs. Returns at once when there is no endpoint.
pub async fn run<S: Source>(task: &str, source: &mut S, backoff: Backoff) {
    if source.endpoints() == 0 {
        return;
    }
    let mut failover = Failover::new(source.endpoints(), backoff);
    let mut state = State::Listing;
    loop {
        let endpoint = failover.endpoint();
        let outcome = match state {
            State::Listing => {
                let listed = source.list(endpoint).await;
                outcome(task, source, endpoint, listed, |rv| Outcome::Listed { rv })
            }
            State::Watching { from_rv } => {
                let ended = source.watch(endpoint, from_rv).await;
                outcome(task, source, endpoint, ended, |rv| Outcome::WatchEnded { rv })
            }
            State::Waiting { delay } => {
                tokio::time::sleep(delay).await;
                Outcome::Waited
            }
            State::Stopped => return,
        };
        state = step(state, outcome, &mut failover);
    }
}

/// The outcome of a list or watch, logged where it went wrong.
fn outcome<S: Source>(
    task: &str,
    source: &S,
    endpoint: usize,
    result: Result<u64, Failure>,
    ok: impl FnOnce(u64) -> Outcome,
) -> Outcome {
    match result {
        Ok(rv) => ok(rv),
        Err(Failure::Gone(reason)) => {
            tracing::info!(task, endpoint = %source.name(endpoint), %reason, "watch expired; listing again");
            Outcome::Gone
        }
        Err(Failure::Failed(error)) => {
            tracing::warn!(task, endpoint = %source.name(endpoint), %error, "list/watch failed; failing over");
            Outcome::Failed
        }
        Err(Failure::Closed) => Outcome::Closed,
    }
}

/// How one session with an endpoint (a replication stream) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session {
    /// The process is stopping: no more sessions.
    Stopped,
    /// It failed (the caller logged why); `established` says whether the endpoint had
    /// answered first, which starts the back-off over.
    Failed {
        /// The endpoint answered before the failure.
        established: bool,
    },
}

/// Runs `session(endpoint)` over `endpoints` endpoints, one at a time and forever (until a
/// session says [`Session::Stopped`]), failing over with the shared [`Failover`] policy.
pub async fn sessions<F, Fut>(endpoints: usize, backoff: Backoff, mut session: F)
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Session>,
{
    if endpoints == 0 {
        return;
    }
    let mut failover = Failover::new(endpoints, backoff);
    while let Session::Failed { established } = session(failover.endpoint()).await {
        if established {
            failover.succeeded();
        }
        tokio::time::sleep(failover.failed()).await;
    }
}
