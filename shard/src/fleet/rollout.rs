//! The rolling update of one ClusterResourcePlacement, pure: which bindings become Bound
//! to the latest resource snapshot, which Bound ones move to it and which Unscheduled ones
//! go, within `maxUnavailable` and `maxSurge` as KubeFleet's rollout controller counts
//! them (percentages of the target count, rounded up):
//! - `maxUnavailable` holds the clusters that are ready (available for what their binding
//!   says now) and will stay so at `target - maxUnavailable`: a cluster whose binding was
//!   changed and is not available again, or is not available at all, counts against it
//!   until it is, and a binding being deleted counts as about to be unavailable;
//! - `maxSurge` holds the clusters that are or may become ready (every placed binding that
//!   has not failed, being deleted or not, bound-but-not-yet-available included) at
//!   `target + maxSurge`.

use serde_json::Value;

/// A binding's state (`spec.state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Scheduled,
    Bound,
    Unscheduled,
}

impl State {
    pub fn of(binding: &Value) -> State {
        match binding.pointer("/spec/state").and_then(Value::as_str) {
            Some("Bound") => State::Bound,
            Some("Unscheduled") => State::Unscheduled,
            _ => State::Scheduled,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            State::Scheduled => "Scheduled",
            State::Bound => "Bound",
            State::Unscheduled => "Unscheduled",
        }
    }
}

/// What the rollout needs to know of one binding.
#[derive(Clone, Debug)]
pub struct Member {
    pub name: String,
    pub state: State,
    /// Its resource snapshot is the latest.
    pub current: bool,
    /// Its resources are available on the member for what the binding says now: a Work
    /// still carrying an earlier snapshot does not make it ready.
    pub ready: bool,
    /// Its resources failed to override, apply or become available on the member
    /// (KubeFleet's terminal binding failures): it will not become ready by waiting.
    pub failed: bool,
    /// Why it will not become ready by waiting, naming its cluster: its resources failed
    /// to apply or override, or stayed unavailable beyond `unavailablePeriodSeconds`.
    pub stuck: Option<String>,
    /// Being deleted: its resources stay on the member until its Works are gone, so it may
    /// still serve, and may stop at any moment.
    pub deleting: bool,
}

/// `maxUnavailable` or `maxSurge`: a count or a percentage of the target.
pub fn scaled(value: Option<&Value>, default_percent: u32, target: usize) -> Result<usize, String> {
    let percent = |p: u32| (target * p as usize).div_ceil(100);
    match value {
        None => Ok(percent(default_percent)),
        Some(Value::Number(n)) => n.as_u64().map(|n| n as usize).ok_or_else(|| format!("{n} is not a count")),
        Some(Value::String(text)) => match text.strip_suffix('%') {
            Some(p) => p.parse::<u32>().ok().filter(|p| *p <= 100).map(percent),
            None => text.parse::<usize>().ok(),
        }
        .ok_or_else(|| format!("{text:?} is neither a count nor a percentage up to 100%")),
        Some(other) => Err(format!("{other} is neither a count nor a percentage")),
    }
}

/// The outcome of one rollout pass.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Scheduled bindings to make Bound to the latest snapshot.
    pub bind: Vec<String>,
    /// Bound bindings to move to the latest snapshot.
    pub update: Vec<String>,
    /// Unscheduled bindings to delete.
    pub remove: Vec<String>,
    /// Bindings the strategy holds back for now.
    pub blocked: Vec<String>,
}

/// Plans one pass for `members` (sorted by name) towards `target` clusters.
pub fn plan(members: &[Member], target: usize, max_unavailable: usize, max_surge: usize) -> Plan {
    let placed = |m: &&Member| m.state != State::Scheduled;
    // Ready now, and of those the ones that may stop at any moment (being deleted): the
    // lower bound of what stays available whatever this pass does.
    let ready = members.iter().filter(placed).filter(|m| m.ready).count();
    let leaving = members.iter().filter(placed).filter(|m| m.ready && m.deleting).count();
    // Everything that may be ready during the rollout: placed and not failed, whether
    // available yet or not, being deleted or not.
    let can_be_ready = members.iter().filter(placed).filter(|m| !m.failed).count();
    let mut plan = Plan::default();
    let outdated: Vec<&Member> =
        members.iter().filter(|m| m.state == State::Bound && !m.current && !m.deleting).collect();
    // Updates that failed proceed regardless: they are unavailable anyway.
    plan.update.extend(outdated.iter().filter(|m| m.failed).map(|m| m.name.clone()));
    // Removing an Unscheduled binding or moving a Bound one to the latest snapshot may
    // make its cluster unavailable: as many may go as keep `target - maxUnavailable`
    // ready, Unscheduled ones first (KubeFleet charges every candidate, ready or not).
    // With `maxUnavailable` 0 nothing ready may go: a move waits for its replacement to be
    // ready (surge), and an update in place cannot start (see [`blockers`]).
    let mut removable = (ready - leaving).saturating_sub(target.saturating_sub(max_unavailable));
    let candidates = members
        .iter()
        .filter(|m| m.state == State::Unscheduled && !m.deleting)
        .chain(outdated.iter().copied().filter(|m| !m.failed));
    for member in candidates {
        let goes = removable > 0;
        removable = removable.saturating_sub(1);
        let list = match (goes, member.state) {
            (true, State::Unscheduled) => &mut plan.remove,
            (true, _) => &mut plan.update,
            (false, _) => &mut plan.blocked,
        };
        list.push(member.name.clone());
    }
    let mut addable = (target + max_surge).saturating_sub(can_be_ready);
    for member in members.iter().filter(|m| m.state == State::Scheduled) {
        if addable > 0 {
            addable -= 1;
            plan.bind.push(member.name.clone());
        } else {
            plan.blocked.push(member.name.clone());
        }
    }
    plan.update.sort();
    plan.blocked.sort();
    plan
}

/// What blocks a rollout that cannot advance, or nothing while it converges: when the
/// strategy holds bindings back and every placed binding that is not ready (and so uses
/// up `maxUnavailable`, or holds surge room) is stuck, no wait frees the budget, and the
/// stuck ones' reasons say what must change. While any of them may still become ready,
/// the rollout is converging (fleet#807, fleet#503: the two looked the same).
pub fn blockers(members: &[Member], plan: &Plan, max_unavailable: usize) -> Vec<String> {
    if plan.blocked.is_empty() {
        return Vec::new();
    }
    let unready: Vec<&Member> = members.iter().filter(|m| m.state != State::Scheduled && !m.ready).collect();
    if unready.is_empty() {
        // Everything placed is ready and still something waits: only an update in place
        // with no room to be unavailable, which no wait changes.
        let in_place: Vec<&String> = members
            .iter()
            .filter(|m| m.state == State::Bound && !m.current && plan.blocked.contains(&m.name))
            .map(|m| &m.name)
            .collect();
        if max_unavailable == 0 && !in_place.is_empty() {
            return vec![format!(
                "maxUnavailable is 0, so {} binding(s) cannot update their clusters in place ({})",
                in_place.len(),
                in_place.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")
            )];
        }
        return Vec::new();
    }
    if unready.iter().any(|m| m.stuck.is_none()) {
        return Vec::new();
    }
    unready.iter().filter_map(|m| m.stuck.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn member(name: &str, state: State, current: bool, ready: bool) -> Member {
        Member { name: name.into(), state, current, ready, failed: false, stuck: None, deleting: false }
    }

    #[test]
    fn percentages_round_up_as_kubefleet_does() {
        assert_eq!(scaled(None, 25, 5), Ok(2));
        assert_eq!(scaled(Some(&json!("20%")), 25, 5), Ok(1));
        assert_eq!(scaled(Some(&json!("1%")), 25, 5), Ok(1));
        assert_eq!(scaled(Some(&json!(3)), 25, 5), Ok(3));
        assert_eq!(scaled(Some(&json!("2")), 25, 5), Ok(2));
        assert_eq!(scaled(Some(&json!("0%")), 25, 5), Ok(0));
        assert!(scaled(Some(&json!("150%")), 25, 5).is_err());
        assert!(scaled(Some(&json!("x")), 25, 5).is_err());
    }

    #[test]
    fn a_first_rollout_binds_everything_it_may() {
        let members: Vec<Member> = (0..5).map(|i| member(&format!("b{i}"), State::Scheduled, false, false)).collect();
        let plan = plan(&members, 5, 1, 1);
        assert_eq!(plan.bind.len(), 5);
        assert!(plan.blocked.is_empty());
    }

    #[test]
    fn an_update_moves_at_most_max_unavailable_ready_clusters_at_a_time() {
        let mut members: Vec<Member> = (0..5).map(|i| member(&format!("b{i}"), State::Bound, false, true)).collect();
        let first = plan(&members, 5, 1, 1);
        assert_eq!(first.update, ["b0"]);
        assert_eq!(first.blocked.len(), 4);
        // b0 moved and is not ready yet: nothing else moves.
        members[0] = member("b0", State::Bound, true, false);
        assert!(plan(&members, 5, 1, 1).update.is_empty());
        // b0 is ready again: the next one moves.
        members[0].ready = true;
        assert_eq!(plan(&members, 5, 1, 1).update, ["b1"]);
        // Two may go at once with maxUnavailable 2.
        assert_eq!(plan(&members, 5, 2, 1).update, ["b1", "b2"]);
    }

    #[test]
    fn failed_clusters_move_at_once_and_unready_ones_use_up_the_budget() {
        let mut members = vec![
            member("a", State::Bound, false, true),
            member("b", State::Bound, false, false),
            member("c", State::Bound, false, true),
        ];
        members[2].failed = true;
        members[2].ready = false;
        // 1 of 3 ready and 2 must stay so: nothing but the failed c may move.
        let plan = plan(&members, 3, 1, 0);
        assert_eq!(plan.update, ["c"]);
        assert_eq!(plan.blocked, ["a", "b"]);
    }

    #[test]
    fn surge_limits_new_bindings_and_unscheduled_ones_count_until_removed() {
        let members = vec![
            member("old", State::Unscheduled, true, true),
            member("a", State::Bound, true, true),
            member("new1", State::Scheduled, false, false),
            member("new2", State::Scheduled, false, false),
        ];
        // Target 3 with no surge: a and old can be ready, so one new binding may be added;
        // old stays while only 2 are ready (3 - 1 must be).
        let first = plan(&members, 3, 1, 0);
        assert_eq!(first.bind, ["new1"]);
        assert_eq!(first.blocked, ["new2", "old"]);
        assert!(first.remove.is_empty());
        // new1 bound and ready: 3 ready, so old may go.
        let mut members = members;
        members[2] = member("new1", State::Bound, true, true);
        let second = plan(&members, 3, 1, 0);
        assert_eq!(second.remove, ["old"]);
        assert!(second.bind.is_empty(), "a, old and new1 can be ready: no room for new2 without surge");
    }

    /// KubeFleet's counting, case by case: what is ready, what is leaving, what can be
    /// ready, and what that lets this pass do.
    #[test]
    fn the_budgets_count_every_unavailable_and_every_possibly_ready_binding() {
        let bound = |name: &str, current: bool, ready: bool| member(name, State::Bound, current, ready);
        let unscheduled = |name: &str, ready: bool| member(name, State::Unscheduled, true, ready);
        let scheduled = |name: &str| member(name, State::Scheduled, false, false);
        let deleting = |mut m: Member| {
            m.deleting = true;
            m
        };
        let failed = |mut m: Member| {
            m.failed = true;
            m.ready = false;
            m
        };
        /// (case, members, target, maxUnavailable, maxSurge, bind, update, remove, blocked)
        type Case<'a> =
            (&'a str, Vec<Member>, usize, usize, usize, &'a [&'a str], &'a [&'a str], &'a [&'a str], &'a [&'a str]);
        let cases: Vec<Case> = vec![
            (
                "a cluster changed last pass and not available again uses up maxUnavailable",
                vec![
                    bound("a", true, false),
                    bound("b", false, true),
                    bound("c", false, true),
                    bound("d", false, true),
                ],
                4,
                1,
                0,
                &[],
                &[],
                &[],
                &["b", "c", "d"],
            ),
            (
                "an unavailable cluster not being changed counts as well",
                vec![bound("a", false, false), bound("b", false, true), bound("c", false, true)],
                3,
                1,
                0,
                &[],
                &[],
                &[],
                &["a", "b", "c"],
            ),
            (
                "with maxUnavailable 2 the second slot is free",
                vec![
                    bound("a", true, false),
                    bound("b", false, true),
                    bound("c", false, true),
                    bound("d", false, true),
                ],
                4,
                2,
                0,
                &[],
                &["b"],
                &[],
                &["c", "d"],
            ),
            (
                "a ready binding being deleted may vanish at any moment: it does not count as available",
                vec![deleting(unscheduled("old", true)), bound("a", false, true), bound("b", true, false)],
                2,
                1,
                0,
                &[],
                &[],
                &[],
                &["a"],
            ),
            (
                "a binding being deleted is neither removed nor updated again",
                vec![deleting(bound("a", false, true)), bound("b", true, true), bound("c", true, true)],
                2,
                1,
                1,
                &[],
                &[],
                &[],
                &[],
            ),
            (
                "maxSurge counts bound bindings not yet available",
                vec![bound("a", true, true), bound("b", true, false), scheduled("c"), scheduled("d")],
                3,
                1,
                0,
                &["c"],
                &[],
                &[],
                &["d"],
            ),
            (
                "maxSurge counts a binding being deleted until its Works are gone",
                vec![deleting(unscheduled("old", false)), bound("a", true, true), scheduled("new")],
                2,
                1,
                0,
                &[],
                &[],
                &[],
                &["new"],
            ),
            (
                "a failed binding holds no surge room, and its update goes regardless",
                vec![failed(bound("a", false, false)), bound("b", false, true), scheduled("c")],
                2,
                1,
                0,
                &["c"],
                &["a"],
                &[],
                &["b"],
            ),
            (
                "maxUnavailable 0 keeps the old cluster until the new one is ready",
                vec![unscheduled("old", true), scheduled("new")],
                1,
                0,
                1,
                &["new"],
                &[],
                &[],
                &["old"],
            ),
            (
                "maxUnavailable 0: the new one is ready, the old one goes",
                vec![unscheduled("old", true), bound("new", true, true)],
                1,
                0,
                1,
                &[],
                &[],
                &["old"],
                &[],
            ),
            (
                "maxUnavailable 0 cannot update in place",
                vec![bound("a", false, true), bound("b", false, true)],
                2,
                0,
                1,
                &[],
                &[],
                &[],
                &["a", "b"],
            ),
        ];
        for (case, members, target, unavailable, surge, bind, update, remove, blocked) in cases {
            let plan = plan(&members, target, unavailable, surge);
            assert_eq!(plan.bind, bind, "{case}: bind");
            assert_eq!(plan.update, update, "{case}: update");
            assert_eq!(plan.remove, remove, "{case}: remove");
            assert_eq!(plan.blocked, blocked, "{case}: blocked");
        }
    }

    #[test]
    fn an_update_in_place_with_no_unavailable_budget_is_blocked_not_converging() {
        let members = vec![member("a", State::Bound, false, true), member("b", State::Bound, false, true)];
        let plan = plan(&members, 2, 0, 1);
        assert_eq!(
            blockers(&members, &plan, 0),
            ["maxUnavailable is 0, so 2 binding(s) cannot update their clusters in place (a, b)"]
        );
        // With a budget nothing is blocked for good: one moves, the other waits for it.
        let plan = super::plan(&members, 2, 1, 1);
        assert!(blockers(&members, &plan, 1).is_empty());
    }

    #[test]
    fn a_rollout_is_blocked_only_when_no_wait_can_free_its_budget() {
        let stuck = |mut m: Member, why: &str| {
            m.stuck = Some(why.to_string());
            m
        };
        let bound = |name: &str, current: bool, ready: bool| member(name, State::Bound, current, ready);
        let failed = |name: &str| {
            let mut m = stuck(bound(name, true, false), &format!("{name}: apply failed"));
            m.failed = true;
            m
        };
        /// (case, members, target, maxUnavailable, blockers)
        type Case<'a> = (&'a str, Vec<Member>, usize, usize, Vec<&'a str>);
        let cases: Vec<Case> = vec![
            ("all ready, nothing held back", vec![bound("a", true, true), bound("b", true, true)], 2, 1, vec![]),
            (
                "one updating, still converging",
                vec![bound("a", true, false), bound("b", false, true), bound("c", false, true)],
                3,
                1,
                vec![],
            ),
            (
                "the updated one failed to apply: the others wait forever",
                vec![failed("a"), bound("b", false, true), bound("c", false, true)],
                3,
                1,
                vec!["a: apply failed"],
            ),
            (
                "one failed, another still converging",
                vec![failed("a"), bound("b", true, false), bound("c", false, true), bound("d", false, true)],
                4,
                2,
                vec![],
            ),
            (
                "unavailable beyond the period uses up the budget",
                vec![
                    stuck(bound("a", true, false), "a: unavailable for 2m"),
                    bound("b", false, true),
                    bound("c", false, true),
                ],
                3,
                1,
                vec!["a: unavailable for 2m"],
            ),
            (
                "a failed cluster with nothing held back is not a blocked rollout",
                vec![failed("a"), bound("b", true, true)],
                2,
                1,
                vec![],
            ),
        ];
        for (case, members, target, max_unavailable, want) in cases {
            let plan = plan(&members, target, max_unavailable, 0);
            assert_eq!(blockers(&members, &plan, max_unavailable), want, "{case}: {plan:?}");
        }
    }
}
