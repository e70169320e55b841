//! The watch validator: etcd's watch guarantees, judged for every watch request and every
//! session (a chain of requests, each resumed from the RV the previous one reached).
//!
//! - **ordered**: events of one session arrive in strictly increasing RV order.
//! - **unique**: no event (name, RV) is delivered twice in one session.
//! - **atomic**: one revision is never split: no event carries the RV a bookmark already
//!   announced, or the RV a resumed request started from.
//! - **resumable**: a request resumed from RV r delivers nothing at or before r.
//! - **bookmarkable**: after a bookmark at RV b, no event with an RV below b arrives.
//! - **reliable**: every acknowledged create or update of the collection with an RV in
//!   (start, progress] of a request arrives in that request, and a session whose watch
//!   reached the final list's RV reproduces that list exactly (so deletes and writes of
//!   unknown outcome are judged too).
//! - **valid**: every event names a write somebody made (no invented events).
//!
//! A request that ended with 410 Gone is honest; the watcher re-lists and starts a new
//! session, which these checks judge from its own list.

use std::collections::{BTreeMap, BTreeSet};

use super::Violation;
use crate::history::{EventKind, History, OperationKind, Outcome, WatchItem, WatchRequest};

const CHECKER: &str = "watch";

/// Runs every watch check.
pub fn check(history: &History) -> Vec<Violation> {
    let mut violations = Vec::new();
    for session in sessions(history) {
        violations.extend(check_session(history, &session));
    }
    violations
}

/// The requests of each (collection, watcher, session), in the order they were opened.
fn sessions(history: &History) -> Vec<Vec<&WatchRequest>> {
    let mut by_key: BTreeMap<(&str, u32, u32), Vec<&WatchRequest>> = BTreeMap::new();
    for request in &history.watches {
        by_key.entry((request.collection.as_str(), request.watcher, request.session)).or_default().push(request);
    }
    by_key.into_values().collect()
}

fn label(request: &WatchRequest) -> String {
    format!(
        "{} watcher {} session {} (from rv {})",
        request.collection, request.watcher, request.session, request.start_rv
    )
}

fn check_session(history: &History, session: &[&WatchRequest]) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut seen: BTreeSet<(u64, &str)> = BTreeSet::new();
    let mut last_event_rv: Option<u64> = None;
    for request in session {
        let mut bookmark: Option<u64> = None;
        for item in &request.items {
            let WatchItem::Event { name, rv, .. } = item else {
                bookmark = Some(item.rv());
                continue;
            };
            let mut report = |guarantee: &str, what: String| {
                violations.push(Violation::new(CHECKER, guarantee, format!("{}: {what}", label(request))));
            };
            if !seen.insert((*rv, name.as_str())) {
                report("unique", format!("event {name}@{rv} delivered twice"));
            } else if last_event_rv.is_some_and(|last| *rv < last) {
                report("ordered", format!("event {name}@{rv} after an event at rv {}", last_event_rv.unwrap_or(0)));
            }
            if *rv < request.start_rv {
                report("resumable", format!("event {name}@{rv} before the resume point"));
            } else if *rv == request.start_rv {
                report("atomic", format!("event {name}@{rv} at the resume point: a revision split"));
            }
            match bookmark {
                Some(b) if *rv < b => report("bookmarkable", format!("event {name}@{rv} after a bookmark at rv {b}")),
                Some(b) if *rv == b => report("atomic", format!("event {name}@{rv} after a bookmark at the same rv")),
                _ => {}
            }
            last_event_rv = Some(last_event_rv.map_or(*rv, |last| last.max(*rv)));
        }
        violations.extend(gaps(history, request));
        violations.extend(invented(history, request));
    }
    violations.extend(convergence(history, session));
    violations
}

/// Acknowledged creates and updates inside the request's proven range that never arrived.
fn gaps(history: &History, request: &WatchRequest) -> Vec<Violation> {
    let progress = request.progress_rv();
    let delivered: BTreeSet<(u64, &str)> = request
        .items
        .iter()
        .filter_map(|item| match item {
            WatchItem::Event { name, rv, .. } => Some((*rv, name.as_str())),
            WatchItem::Bookmark { .. } => None,
        })
        .collect();
    history
        .operations
        .iter()
        .filter(|op| op.collection == request.collection)
        .filter(|op| matches!(op.kind, OperationKind::Create | OperationKind::Update))
        .filter_map(|op| match op.outcome {
            Outcome::Ok { rv, .. } if rv > request.start_rv && rv <= progress => Some((rv, op)),
            _ => None,
        })
        .filter(|(rv, op)| !delivered.contains(&(*rv, op.name.as_str())))
        .map(|(rv, op)| {
            Violation::new(
                CHECKER,
                "reliable",
                format!(
                    "{}: acknowledged {:?} {}@{rv} missing, though the watch proved progress to rv {progress}",
                    label(request),
                    op.kind,
                    op.name
                ),
            )
        })
        .collect()
}

/// Events that no write (acknowledged or of unknown outcome) could have caused.
fn invented(history: &History, request: &WatchRequest) -> Vec<Violation> {
    let mut violations = Vec::new();
    for item in &request.items {
        let WatchItem::Event { kind, name, rv, value } = item else { continue };
        let writes = history.operations.iter().filter(|op| op.collection == request.collection && op.name == *name);
        let explained = writes.clone().any(|op| match (kind, op.kind, &op.outcome) {
            (EventKind::Deleted, OperationKind::Delete, Outcome::Ok { .. } | Outcome::Unknown { .. }) => true,
            (EventKind::Added | EventKind::Modified, OperationKind::Create | OperationKind::Update, outcome) => {
                op.value == *value
                    && match outcome {
                        Outcome::Ok { rv: acknowledged, .. } => acknowledged == rv,
                        Outcome::Unknown { .. } => true,
                        _ => false,
                    }
            }
            _ => false,
        });
        if !explained {
            violations.push(Violation::new(
                CHECKER,
                "valid",
                format!("{}: event {kind:?} {name}@{rv} (value {value:?}) matches no write", label(request)),
            ));
        }
    }
    violations
}

/// How many sessions that started from a list reached the final list's RV (and so were
/// compared with it), out of how many such sessions there were.
pub fn converged_sessions(history: &History) -> (usize, usize) {
    let listed: Vec<Vec<&WatchRequest>> =
        sessions(history).into_iter().filter(|s| s.first().is_some_and(|r| r.initial.is_some())).collect();
    let reached = listed
        .iter()
        .filter(|session| {
            let final_rv = history.final_states.iter().find(|f| f.collection == session[0].collection).map(|f| f.rv);
            let progress = session.last().map(|r| r.progress_rv()).unwrap_or(0);
            final_rv.is_some_and(|rv| progress >= rv)
        })
        .count();
    (reached, listed.len())
}

/// A session that started from a list and watched up to the final list's RV must hold
/// exactly what the final list holds.
fn convergence(history: &History, session: &[&WatchRequest]) -> Vec<Violation> {
    let Some(first) = session.first() else { return Vec::new() };
    let Some(initial) = &first.initial else { return Vec::new() };
    let Some(last) = session.last() else { return Vec::new() };
    let Some(state) = history.final_states.iter().find(|s| s.collection == first.collection) else {
        return Vec::new();
    };
    if last.progress_rv() < state.rv {
        return Vec::new();
    }
    let replayed = replay(initial, session, state.rv);
    let expected: BTreeMap<&str, (u64, Option<&str>)> =
        state.objects.iter().map(|(n, rv, v)| (n.as_str(), (*rv, v.as_deref()))).collect();
    let differences = differences(&replayed, &expected);
    if differences.is_empty() {
        return Vec::new();
    }
    vec![Violation::new(
        CHECKER,
        "reliable",
        format!(
            "{}: the watch reached rv {} but disagrees with the final list: {}",
            label(first),
            state.rv,
            differences
        ),
    )]
}

fn replay<'a>(
    initial: &'a [(String, u64, Option<String>)],
    session: &[&'a WatchRequest],
    up_to_rv: u64,
) -> BTreeMap<&'a str, (u64, Option<&'a str>)> {
    let mut state: BTreeMap<&str, (u64, Option<&str>)> =
        initial.iter().map(|(n, rv, v)| (n.as_str(), (*rv, v.as_deref()))).collect();
    for request in session {
        for item in &request.items {
            match item {
                WatchItem::Event { rv, .. } if *rv > up_to_rv => {}
                WatchItem::Event { kind: EventKind::Deleted, name, .. } => {
                    state.remove(name.as_str());
                }
                WatchItem::Event { name, rv, value, .. } => {
                    state.insert(name.as_str(), (*rv, value.as_deref()));
                }
                WatchItem::Bookmark { .. } => {}
            }
        }
    }
    state
}

fn differences(
    replayed: &BTreeMap<&str, (u64, Option<&str>)>,
    expected: &BTreeMap<&str, (u64, Option<&str>)>,
) -> String {
    let names: BTreeSet<&str> = replayed.keys().chain(expected.keys()).copied().collect();
    let differing: Vec<String> = names
        .into_iter()
        .filter(|name| replayed.get(name) != expected.get(name))
        .map(|name| format!("{name}: watch {:?}, list {:?}", replayed.get(name), expected.get(name)))
        .collect();
    differing.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{FinalState, Operation, WatchEnd};

    const COLLECTION: &str = "root/chaos/default/configmaps";

    fn write(name: &str, kind: OperationKind, value: &str, rv: u64) -> Operation {
        Operation {
            collection: COLLECTION.to_string(),
            shard: "root".to_string(),
            client: 0,
            name: name.to_string(),
            kind,
            value: (kind != OperationKind::Delete).then(|| value.to_string()),
            invoke_ms: rv * 10,
            complete_ms: rv * 10 + 5,
            outcome: Outcome::Ok { rv, value: None },
        }
    }

    fn event(kind: EventKind, name: &str, value: &str, rv: u64) -> WatchItem {
        let value = (kind != EventKind::Deleted).then(|| value.to_string());
        WatchItem::Event { kind, name: name.to_string(), rv, value }
    }

    fn request(start_rv: u64, items: Vec<WatchItem>, initial: bool) -> WatchRequest {
        WatchRequest {
            collection: COLLECTION.to_string(),
            watcher: 0,
            session: 0,
            start_rv,
            initial: initial.then(Vec::new),
            items,
            end: WatchEnd::Closed,
            opened_ms: 0,
            ended_ms: 0,
        }
    }

    /// Writes a@11, b@12, a@13 (update), delete b (event at 14); final list at rv 14.
    fn history(watches: Vec<WatchRequest>) -> History {
        History {
            operations: vec![
                write("a", OperationKind::Create, "a1", 11),
                write("b", OperationKind::Create, "b1", 12),
                write("a", OperationKind::Update, "a2", 13),
                write("b", OperationKind::Delete, "", 12),
            ],
            watches,
            final_states: vec![FinalState {
                collection: COLLECTION.to_string(),
                rv: 14,
                objects: vec![("a".to_string(), 13, Some("a2".to_string()))],
            }],
            ..History::default()
        }
    }

    fn guarantees(watches: Vec<WatchRequest>) -> Vec<String> {
        check(&history(watches)).into_iter().map(|v| v.guarantee).collect()
    }

    fn full_session() -> Vec<WatchRequest> {
        vec![
            request(10, vec![event(EventKind::Added, "a", "a1", 11), WatchItem::Bookmark { rv: 11 }], true),
            request(
                11,
                vec![
                    event(EventKind::Added, "b", "b1", 12),
                    event(EventKind::Modified, "a", "a2", 13),
                    event(EventKind::Deleted, "b", "", 14),
                ],
                false,
            ),
        ]
    }

    #[test]
    fn a_faithful_resumed_watch_passes() {
        assert_eq!(guarantees(full_session()), Vec::<String>::new());
    }

    #[test]
    fn catches_a_gap() {
        let mut watches = full_session();
        watches[1].items.remove(1);
        let found = guarantees(watches);
        assert!(found.contains(&"reliable".to_string()), "{found:?}");
        // Both the ledger comparison and the final-state replay see it.
        assert_eq!(found.iter().filter(|g| *g == "reliable").count(), 2, "{found:?}");
    }

    #[test]
    fn catches_a_duplicate() {
        let mut watches = full_session();
        watches[1].items.insert(0, event(EventKind::Added, "a", "a1", 11));
        // Replayed at the resume point: a duplicate and a split revision.
        assert_eq!(guarantees(watches), ["unique", "atomic"]);
    }

    #[test]
    fn catches_events_out_of_order() {
        let mut watches = full_session();
        watches[1].items.swap(0, 1);
        assert_eq!(guarantees(watches), ["ordered"]);
    }

    #[test]
    fn catches_a_bookmark_passed_by_an_earlier_event() {
        let mut watches = full_session();
        watches[1].items.insert(1, WatchItem::Bookmark { rv: 13 });
        // "a"@13 then arrives at the bookmark's RV (atomic); put an older event after one.
        let mut passed = full_session();
        passed[1].items.insert(0, WatchItem::Bookmark { rv: 13 });
        assert_eq!(guarantees(watches), ["atomic"]);
        assert_eq!(guarantees(passed), ["bookmarkable", "atomic"]);
    }

    #[test]
    fn catches_a_resumed_watch_that_replays_history() {
        let watches = vec![
            request(10, vec![event(EventKind::Added, "a", "a1", 11)], true),
            request(12, vec![event(EventKind::Added, "a", "a1", 11)], false),
        ];
        let found = guarantees(watches);
        assert!(found.contains(&"resumable".to_string()), "{found:?}");
        assert!(found.contains(&"unique".to_string()), "{found:?}");
    }

    #[test]
    fn catches_an_invented_event() {
        let mut watches = full_session();
        watches[1].items.insert(0, event(EventKind::Modified, "a", "forged", 12));
        let found = guarantees(watches);
        assert!(found.contains(&"valid".to_string()), "{found:?}");
    }

    #[test]
    fn a_watch_that_stopped_early_is_not_judged_against_the_final_list() {
        let watches = vec![request(10, vec![event(EventKind::Added, "a", "a1", 11)], true)];
        assert_eq!(guarantees(watches), Vec::<String>::new());
    }
}
