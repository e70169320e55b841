//! What client-go's event correlator decides, pure: whether an event is dropped by the
//! per-object spam filter, written as a new Event, or folded into the Event already
//! written for the same (object, type, reason, message) by bumping its count. The clock
//! comes in as an argument; nothing here does I/O.
//!
//! - Spam filter: a token bucket per involved object (client-go's
//!   `EventSourceObjectSpamFilter`), [`SPAM_BURST`] tokens, refilled at that many a
//!   minute. An event that finds the bucket empty is dropped, repeats included, so that a
//!   controller stuck in a loop cannot fill the store with Events.
//! - Aggregation: the same event seen again within [`AGGREGATION_WINDOW`] of the last one
//!   bumps `count` and `lastTimestamp` on the Event written first (client-go's
//!   `eventLogger`); after the window a new Event starts.
//! - Both maps are bounded ([`KEYS_MAX`]): when full, the entry seen longest ago goes,
//!   which at worst writes a new Event instead of bumping an old one.

use jiff::{SignedDuration, Timestamp};
use std::collections::HashMap;

/// Events a single object may get at once before the filter drops them.
pub const SPAM_BURST: u32 = 25;
/// How long the bucket takes to refill completely.
const SPAM_REFILL: SignedDuration = SignedDuration::from_secs(60);
/// A repeat within this long of the last one bumps the existing Event (client-go's
/// aggregator uses ten minutes).
pub const AGGREGATION_WINDOW: SignedDuration = SignedDuration::from_secs(600);
/// Most objects and event keys remembered (client-go's LRU holds 4096).
pub const KEYS_MAX: usize = 4096;

/// The object an event is about, as `involvedObject` names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    /// Logical cluster the object lives in.
    pub cluster: String,
    /// `apiVersion` of the object.
    pub api_version: String,
    /// `kind` of the object.
    pub kind: String,
    /// Namespace; empty for cluster-scoped objects.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID: a recreated object is another object.
    pub uid: String,
}

/// What makes two events the same one (client-go's `getEventKey` without the source,
/// which is one per recorder): the object, the type, the reason and the message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventKey {
    /// The involved object.
    pub object: ObjectKey,
    /// `Normal` or `Warning`.
    pub kind: String,
    /// The reason.
    pub reason: String,
    /// The message.
    pub message: String,
}

/// What to do with one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The object had too many events lately: write nothing.
    Drop,
    /// Write a new Event with this name and count 1.
    Create {
        /// The Event's name.
        name: String,
    },
    /// Bump the Event of this name to `count`, with `lastTimestamp` now.
    Bump {
        /// The Event's name.
        name: String,
        /// The new count.
        count: u64,
    },
}

/// The name client-go gives an Event: the object's name, a dot and the time in
/// nanoseconds since the epoch, in hexadecimal (16 digits for any time after 2004).
pub fn event_name(object_name: &str, at: Timestamp) -> String {
    format!("{object_name}.{:x}", at.as_nanosecond().max(0))
}

#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    refilled: Timestamp,
}

#[derive(Debug, Clone)]
struct Seen {
    name: String,
    count: u64,
    last: Timestamp,
}

/// The correlator's memory: the spam buckets and the Events written lately.
#[derive(Debug, Default)]
pub struct Correlator {
    buckets: HashMap<ObjectKey, Bucket>,
    seen: HashMap<EventKey, Seen>,
}

impl Correlator {
    /// Decides what becomes of `key` seen at `now`, and remembers it.
    pub fn observe(&mut self, key: &EventKey, now: Timestamp) -> Action {
        if !self.take_token(&key.object, now) {
            return Action::Drop;
        }
        if let Some(seen) = self.seen.get_mut(key) {
            if now.duration_since(seen.last) <= AGGREGATION_WINDOW {
                seen.count += 1;
                seen.last = now;
                return Action::Bump { name: seen.name.clone(), count: seen.count };
            }
        }
        let name = event_name(&key.object.name, now);
        evict_oldest(&mut self.seen, |s| s.last);
        self.seen.insert(key.clone(), Seen { name: name.clone(), count: 1, last: now });
        Action::Create { name }
    }

    /// Forgets the Event written for `key`, when writing it or bumping it failed: the
    /// next repeat writes a new Event instead of bumping one that may not exist.
    pub fn forget(&mut self, key: &EventKey) {
        self.seen.remove(key);
    }

    fn take_token(&mut self, object: &ObjectKey, now: Timestamp) -> bool {
        if !self.buckets.contains_key(object) {
            evict_oldest(&mut self.buckets, |b| b.refilled);
        }
        let bucket =
            self.buckets.entry(object.clone()).or_insert(Bucket { tokens: f64::from(SPAM_BURST), refilled: now });
        let elapsed = now.duration_since(bucket.refilled).as_secs_f64().max(0.0);
        let per_second = f64::from(SPAM_BURST) / SPAM_REFILL.as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * per_second).min(f64::from(SPAM_BURST));
        bucket.refilled = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Makes room for one more entry in a map of at most [`KEYS_MAX`]: drops the entry
/// whose time is oldest. Linear, but only when the map is full.
fn evict_oldest<K: Clone + Eq + std::hash::Hash, V>(map: &mut HashMap<K, V>, at: impl Fn(&V) -> Timestamp) {
    if map.len() < KEYS_MAX {
        return;
    }
    let oldest = map.iter().min_by_key(|(_, v)| at(v)).map(|(k, _)| k.clone());
    if let Some(oldest) = oldest {
        map.remove(&oldest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str) -> ObjectKey {
        ObjectKey {
            cluster: "c".into(),
            api_version: "cluster.open-cluster-management.io/v1beta1".into(),
            kind: "Placement".into(),
            namespace: "ns".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
        }
    }

    fn key(name: &str, reason: &str, message: &str) -> EventKey {
        EventKey { object: object(name), kind: "Normal".into(), reason: reason.into(), message: message.into() }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    #[test]
    fn names_are_the_object_name_and_sixteen_hex_digits_of_nanoseconds() {
        let t = Timestamp::from_nanosecond(1_764_255_000_123_456_789).unwrap();
        assert_eq!(event_name("p1", t), "p1.187be4933f90bd15");
        assert_eq!(event_name("p1", at(0)).len(), "p1.".len() + 16);
    }

    #[test]
    fn a_repeat_within_the_window_bumps_the_first_event() {
        let mut correlator = Correlator::default();
        let k = key("p", "DecisionUpdate", "m");
        let Action::Create { name } = correlator.observe(&k, at(0)) else { panic!("first is a create") };
        assert_eq!(correlator.observe(&k, at(10)), Action::Bump { name: name.clone(), count: 2 });
        assert_eq!(correlator.observe(&k, at(20)), Action::Bump { name, count: 3 });
    }

    /// Table: which differences make another Event.
    #[test]
    fn the_key_is_object_type_reason_and_message() {
        let base = key("p", "DecisionUpdate", "m");
        let mut warning = base.clone();
        warning.kind = "Warning".into();
        let mut recreated = base.clone();
        recreated.object.uid = "other".into();
        let mut elsewhere = base.clone();
        elsewhere.object.cluster = "d".into();
        let cases = [
            (base.clone(), false),
            (key("p", "DecisionUpdate", "other message"), true),
            (key("p", "ScoreUpdate", "m"), true),
            (key("q", "DecisionUpdate", "m"), true),
            (warning, true),
            (recreated, true),
            (elsewhere, true),
        ];
        for (other, new_event) in cases {
            let mut correlator = Correlator::default();
            correlator.observe(&base, at(0));
            let action = correlator.observe(&other, at(1));
            assert_eq!(matches!(action, Action::Create { .. }), new_event, "{other:?}: {action:?}");
        }
    }

    #[test]
    fn after_the_window_a_new_event_starts() {
        let mut correlator = Correlator::default();
        let k = key("p", "r", "m");
        correlator.observe(&k, at(0));
        let later = at(AGGREGATION_WINDOW.as_secs() + 1);
        assert_eq!(correlator.observe(&k, later), Action::Create { name: event_name("p", later) });
    }

    #[test]
    fn the_spam_filter_drops_beyond_the_burst_per_object_and_refills() {
        let mut correlator = Correlator::default();
        let mut written = 0;
        for i in 0..40 {
            if correlator.observe(&key("p", "r", &format!("m{i}")), at(0)) != Action::Drop {
                written += 1;
            }
        }
        assert_eq!(written, SPAM_BURST);
        // Repeats are filtered too, and another object has its own bucket.
        assert_eq!(correlator.observe(&key("p", "r", "m0"), at(0)), Action::Drop);
        assert!(matches!(correlator.observe(&key("q", "r", "m"), at(0)), Action::Create { .. }));
        // A minute refills the bucket: a full burst again.
        let refilled = (0..40).filter(|i| correlator.observe(&key("p", "s", &i.to_string()), at(60)) != Action::Drop);
        assert_eq!(refilled.count(), SPAM_BURST as usize);
    }

    #[test]
    fn forgetting_an_event_makes_the_next_repeat_a_create() {
        let mut correlator = Correlator::default();
        let k = key("p", "r", "m");
        correlator.observe(&k, at(0));
        correlator.forget(&k);
        assert!(matches!(correlator.observe(&k, at(1)), Action::Create { .. }));
    }

    #[test]
    fn memory_is_bounded() {
        let mut correlator = Correlator::default();
        for i in 0..(KEYS_MAX + 10) {
            correlator.observe(&key(&format!("p{i}"), "r", "m"), at(i as i64));
        }
        assert!(correlator.seen.len() <= KEYS_MAX);
        assert!(correlator.buckets.len() <= KEYS_MAX);
    }
}
