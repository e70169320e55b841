//! The controllers' work queue: client-go's workqueue semantics in a few lines.
//!
//! - An item is queued at most once however often it is added, so the queue never holds
//!   more entries than the index holds objects: that is its bound.
//! - An item is worked on by one worker at a time; added while in work, it runs once
//!   more afterwards (the change that added it may have come too late for the running
//!   attempt).
//! - A failed item is retried after an exponential back-off per item, capped at
//!   [`RETRY_DELAY_MAX`], with at most one retry pending per item.
//! - An item may carry the span that queued it (the first one, while it waits), so its
//!   work can continue that trace.

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::time::Duration;
use telemetry::Cause;
use tokio::sync::Notify;

/// First retry delay of a failed item; doubles per consecutive failure.
pub const RETRY_DELAY_START: Duration = Duration::from_millis(100);
/// Longest retry delay: an item that keeps failing (say, a resource nobody serves any
/// more) costs one attempt per this period.
pub const RETRY_DELAY_MAX: Duration = Duration::from_secs(30);

#[derive(Debug)]
struct State<T> {
    ready: VecDeque<T>,
    queued: HashSet<T>,
    active: HashSet<T>,
    /// Added while active: queue again when done.
    again: HashSet<T>,
    /// A retry is scheduled.
    delayed: HashSet<T>,
    /// Consecutive failures, for the back-off.
    failures: HashMap<T, u32>,
    /// The span that queued a waiting item, when traces are exported.
    causes: HashMap<T, Cause>,
}

impl<T> Default for State<T> {
    fn default() -> Self {
        State {
            ready: VecDeque::new(),
            queued: HashSet::new(),
            active: HashSet::new(),
            again: HashSet::new(),
            delayed: HashSet::new(),
            failures: HashMap::new(),
            causes: HashMap::new(),
        }
    }
}

/// A deduplicating work queue shared by a controller's workers.
#[derive(Debug)]
pub struct WorkQueue<T> {
    state: Mutex<State<T>>,
    ready: Notify,
}

impl<T> Default for WorkQueue<T> {
    fn default() -> Self {
        WorkQueue { state: Mutex::new(State::default()), ready: Notify::new() }
    }
}

impl<T: Clone + Eq + Hash> WorkQueue<T> {
    /// Queues an item (once), or marks an active one to run again.
    pub fn add(&self, item: T) {
        self.add_caused(item, None);
    }

    /// [`WorkQueue::add`], remembering the span that queued it (the first such while it
    /// waits, preferring a sampled one: [`Cause::keep`]) for [`WorkQueue::take_cause`].
    pub fn add_caused(&self, item: T, cause: Option<Cause>) {
        let mut state = self.state.lock();
        if cause.is_some() {
            let kept = state.causes.get(&item).copied();
            if let Some(keep) = Cause::keep(kept, cause) {
                state.causes.insert(item.clone(), keep);
            }
        }
        if state.active.contains(&item) {
            state.again.insert(item);
            return;
        }
        if state.queued.insert(item.clone()) {
            state.ready.push_back(item);
            drop(state);
            self.ready.notify_one();
        }
    }

    /// Takes the next item, if any is ready; it is active until [`WorkQueue::done`].
    pub fn pop(&self) -> Option<T> {
        let mut state = self.state.lock();
        let item = state.ready.pop_front()?;
        state.queued.remove(&item);
        state.active.insert(item.clone());
        Some(item)
    }

    /// The span that queued `item`, once: call when its work starts.
    pub fn take_cause(&self, item: &T) -> Option<Cause> {
        self.state.lock().causes.remove(item)
    }

    /// Waits for the next item.
    pub async fn next(&self) -> T {
        loop {
            // Registered before the check, so an add between check and wait is not missed.
            let notified = self.ready.notified();
            if let Some(item) = self.pop() {
                return item;
            }
            notified.await;
        }
    }

    /// Ends work on an item; queues it again if it was added meanwhile.
    pub fn done(&self, item: &T) {
        let again = {
            let mut state = self.state.lock();
            state.active.remove(item);
            state.again.remove(item)
        };
        if again {
            self.add(item.clone());
        }
    }

    /// Records that an item's attempt succeeded: its back-off starts over.
    pub fn forget(&self, item: &T) {
        self.state.lock().failures.remove(item);
    }

    /// Records a failed attempt; returns how long to wait before [`WorkQueue::retry`], or
    /// `None` when a retry is already scheduled.
    pub fn schedule_retry(&self, item: &T) -> Option<Duration> {
        let mut state = self.state.lock();
        let failures = state.failures.entry(item.clone()).or_insert(0);
        let delay = RETRY_DELAY_START.saturating_mul(1 << (*failures).min(16)).min(RETRY_DELAY_MAX);
        *failures = failures.saturating_add(1);
        state.delayed.insert(item.clone()).then_some(delay)
    }

    /// The scheduled retry of an item is due.
    pub fn retry(&self, item: T) {
        self.state.lock().delayed.remove(&item);
        self.add(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl<T> WorkQueue<T> {
        fn len(&self) -> usize {
            self.state.lock().ready.len()
        }
    }

    #[test]
    fn items_are_queued_once_and_rerun_when_added_during_work() {
        let queue = WorkQueue::default();
        queue.add("a");
        queue.add("b");
        queue.add("a");
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.pop(), Some("a"));
        queue.add("a");
        assert_eq!(queue.pop(), Some("b"), "an active item is not handed out twice");
        assert_eq!(queue.pop(), None);
        queue.done(&"a");
        assert_eq!(queue.pop(), Some("a"), "added while active: runs again");
        queue.done(&"a");
        queue.done(&"b");
        assert_eq!(queue.len(), 0);
    }

    #[test]
    fn retries_back_off_and_are_scheduled_once() {
        let queue = WorkQueue::default();
        assert_eq!(queue.schedule_retry(&"a"), Some(RETRY_DELAY_START));
        assert_eq!(queue.schedule_retry(&"a"), None, "one pending retry per item");
        queue.retry("a");
        assert_eq!(queue.pop(), Some("a"));
        assert_eq!(queue.schedule_retry(&"a"), Some(RETRY_DELAY_START * 4));
        queue.retry("a");
        for _ in 0..40 {
            queue.schedule_retry(&"a");
            queue.retry("a");
        }
        assert_eq!(queue.schedule_retry(&"a"), Some(RETRY_DELAY_MAX));
        queue.forget(&"a");
        queue.retry("a");
        assert_eq!(queue.schedule_retry(&"a"), Some(RETRY_DELAY_START));
    }

    #[tokio::test]
    async fn next_waits_for_an_add() {
        let queue = std::sync::Arc::new(WorkQueue::default());
        let waiter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.next().await }
        });
        tokio::task::yield_now().await;
        queue.add(7);
        assert_eq!(waiter.await.unwrap(), 7);
    }
}
