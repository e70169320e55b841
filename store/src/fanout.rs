//! Watch fan-out: a committed event goes only to the watchers whose prefix it matches.
//!
//! Every watcher has a mailbox (its prefix, a bounded queue and a wake-up). The writer
//! hands each durable batch to [`Fanout::publish`], which appends to the queues of the
//! matching mailboxes and wakes only those. A write therefore costs the watchers of other
//! prefixes one byte comparison each, not a task wake-up and a receive as a shared
//! broadcast channel did; the shard keeps a dozen store watchers of its own (controllers,
//! index feeds) besides its clients' watches, and most of them never match a given write.
//!
//! A mailbox that holds more than its capacity is emptied and marked lagged; its watcher
//! then re-reads the change log from where it was, as it did when it fell behind the
//! broadcast buffer.

use crate::Event;
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::Notify;

/// The registry of live watchers' mailboxes.
pub(crate) struct Fanout {
    capacity: usize,
    mailboxes: RwLock<Vec<Arc<Mailbox>>>,
}

/// One watcher's share of the live events.
pub(crate) struct Mailbox {
    prefix: Bytes,
    capacity: usize,
    queue: Mutex<Queue>,
    wake: Notify,
}

#[derive(Default)]
struct Queue {
    events: VecDeque<Arc<Event>>,
    lagged: bool,
}

/// What a watcher finds in its mailbox.
pub(crate) enum Delivery {
    /// Events in commit order, at least one.
    Events(VecDeque<Arc<Event>>),
    /// Events were dropped because the watcher fell behind: re-read the change log.
    Lagged,
}

/// A registered mailbox; unregisters itself when dropped.
pub(crate) struct Subscription {
    fanout: Arc<Fanout>,
    mailbox: Arc<Mailbox>,
}

impl Fanout {
    pub fn new(capacity: usize) -> Fanout {
        Fanout { capacity: capacity.max(1), mailboxes: RwLock::new(Vec::new()) }
    }

    /// Registers a mailbox for keys under `prefix`; it receives every event published
    /// after this returns.
    pub fn subscribe(self: &Arc<Self>, prefix: Bytes) -> Subscription {
        let mailbox =
            Arc::new(Mailbox { prefix, capacity: self.capacity, queue: Mutex::default(), wake: Notify::new() });
        self.mailboxes.write().push(mailbox.clone());
        Subscription { fanout: self.clone(), mailbox }
    }

    /// Delivers a batch of events, in order, to the mailboxes they match.
    pub fn publish(&self, events: &[Arc<Event>]) {
        let mailboxes = self.mailboxes.read();
        for mailbox in mailboxes.iter() {
            let mut matching = events.iter().filter(|event| event.key.starts_with(&mailbox.prefix)).peekable();
            if matching.peek().is_none() {
                continue;
            }
            mailbox.push(matching);
            mailbox.wake.notify_one();
        }
    }

    /// Number of registered watchers.
    #[cfg(test)]
    pub fn watchers(&self) -> usize {
        self.mailboxes.read().len()
    }
}

impl Mailbox {
    fn push<'a>(&self, events: impl Iterator<Item = &'a Arc<Event>>) {
        let mut queue = self.queue.lock();
        if queue.lagged {
            return;
        }
        queue.events.extend(events.cloned());
        if queue.events.len() > self.capacity {
            queue.events = VecDeque::new();
            queue.lagged = true;
        }
    }
}

impl Subscription {
    /// Waits for events (or a lag). Cancel-safe: nothing is taken before it returns.
    pub async fn receive(&self) -> Delivery {
        loop {
            if let Some(delivery) = self.try_receive() {
                return delivery;
            }
            self.mailbox.wake.notified().await;
        }
    }

    /// Whatever is queued, without waiting.
    pub fn try_receive(&self) -> Option<Delivery> {
        let mut queue = self.mailbox.queue.lock();
        if queue.lagged {
            queue.lagged = false;
            return Some(Delivery::Lagged);
        }
        match queue.events.is_empty() {
            true => None,
            false => Some(Delivery::Events(std::mem::take(&mut queue.events))),
        }
    }

    /// The prefix this watcher receives.
    pub fn prefix(&self) -> &[u8] {
        &self.mailbox.prefix
    }

    /// Nothing is queued (a lag counts as something).
    pub fn is_empty(&self) -> bool {
        let queue = self.mailbox.queue.lock();
        queue.events.is_empty() && !queue.lagged
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.fanout.mailboxes.write().retain(|mailbox| !Arc::ptr_eq(mailbox, &self.mailbox));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventKind;

    fn event(rv: u64, key: &'static str) -> Arc<Event> {
        Arc::new(Event {
            rv,
            key: Bytes::from_static(key.as_bytes()),
            kind: EventKind::Added,
            value: None,
            prev: None,
            cause: None,
        })
    }

    fn rvs(delivery: Option<Delivery>) -> Vec<u64> {
        match delivery {
            Some(Delivery::Events(events)) => events.iter().map(|e| e.rv).collect(),
            Some(Delivery::Lagged) => vec![0],
            None => vec![],
        }
    }

    #[test]
    fn each_watcher_gets_only_its_prefix_in_commit_order() {
        let fanout = Arc::new(Fanout::new(16));
        let a = fanout.subscribe(Bytes::from_static(b"a/"));
        let b = fanout.subscribe(Bytes::from_static(b"b/"));
        let all = fanout.subscribe(Bytes::new());
        fanout.publish(&[event(1, "a/x"), event(2, "b/x"), event(3, "a/y"), event(4, "c/z")]);
        assert_eq!(rvs(a.try_receive()), vec![1, 3]);
        assert_eq!(rvs(b.try_receive()), vec![2]);
        assert_eq!(rvs(all.try_receive()), vec![1, 2, 3, 4]);
        assert!(a.is_empty() && b.is_empty() && all.is_empty());
    }

    #[test]
    fn a_watcher_past_its_capacity_is_told_it_lagged_then_gets_what_follows() {
        let fanout = Arc::new(Fanout::new(2));
        let a = fanout.subscribe(Bytes::from_static(b"a/"));
        fanout.publish(&[event(1, "a/1"), event(2, "a/2"), event(3, "a/3")]);
        assert!(!a.is_empty());
        assert_eq!(rvs(a.try_receive()), vec![0], "lagged");
        assert_eq!(rvs(a.try_receive()), Vec::<u64>::new());
        fanout.publish(&[event(4, "a/4")]);
        assert_eq!(rvs(a.try_receive()), vec![4]);
    }

    #[test]
    fn a_dropped_subscription_leaves_the_registry() {
        let fanout = Arc::new(Fanout::new(4));
        let a = fanout.subscribe(Bytes::from_static(b"a/"));
        let b = fanout.subscribe(Bytes::from_static(b"a/"));
        assert_eq!(fanout.watchers(), 2);
        drop(a);
        assert_eq!(fanout.watchers(), 1);
        fanout.publish(&[event(1, "a/1")]);
        assert_eq!(rvs(b.try_receive()), vec![1]);
    }

    #[tokio::test]
    async fn a_waiting_watcher_is_woken_by_a_matching_event_only() {
        let fanout = Arc::new(Fanout::new(4));
        let a = fanout.subscribe(Bytes::from_static(b"a/"));
        let waiting = tokio::spawn(async move { rvs(Some(a.receive().await)) });
        tokio::task::yield_now().await;
        fanout.publish(&[event(1, "b/1")]);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        fanout.publish(&[event(2, "a/2")]);
        assert_eq!(waiting.await.unwrap(), vec![2]);
    }
}
