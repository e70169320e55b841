//! The rolling update of one ClusterResourcePlacement, pure: which bindings become Bound
//! to the latest resource snapshot, which Bound ones move to it and which Unscheduled ones
//! go, within `maxUnavailable` and `maxSurge` as KubeFleet's rollout controller counts
//! them (percentages of the target count, rounded up).

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
    /// Its resources are available on the member (for its current generation).
    pub ready: bool,
    /// Its resources failed to apply or override on the member.
    pub failed: bool,
    /// Why it will not become ready by waiting, naming its cluster: its resources failed
    /// to apply or override, or stayed unavailable beyond `unavailablePeriodSeconds`.
    pub stuck: Option<String>,
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
    // With a target of at least one, one cluster may always be unavailable, or nothing
    // could ever move.
    let max_unavailable = if target > 0 { max_unavailable.max(1) } else { max_unavailable };
    let ready = members.iter().filter(|m| m.state != State::Scheduled && m.ready).count();
    let can_be_ready = members.iter().filter(|m| m.state != State::Scheduled && (m.ready || !m.failed)).count();
    let mut plan = Plan::default();
    // Updates that failed to apply proceed regardless: they are unavailable anyway.
    let outdated: Vec<&Member> = members.iter().filter(|m| m.state == State::Bound && !m.current).collect();
    plan.update.extend(outdated.iter().filter(|m| m.failed).map(|m| m.name.clone()));
    // Removing an Unscheduled binding or moving a Bound one to the latest snapshot may
    // make its cluster unavailable: as many may go as keep `target - maxUnavailable`
    // ready, Unscheduled ones first (KubeFleet charges every candidate, ready or not).
    let mut removable = ready.saturating_sub(target.saturating_sub(max_unavailable));
    let candidates =
        members.iter().filter(|m| m.state == State::Unscheduled).chain(outdated.iter().copied().filter(|m| !m.failed));
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
pub fn blockers(members: &[Member], plan: &Plan) -> Vec<String> {
    if plan.blocked.is_empty() {
        return Vec::new();
    }
    let unready: Vec<&Member> = members.iter().filter(|m| m.state != State::Scheduled && !m.ready).collect();
    if unready.is_empty() || unready.iter().any(|m| m.stuck.is_none()) {
        return Vec::new();
    }
    unready.iter().filter_map(|m| m.stuck.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn member(name: &str, state: State, current: bool, ready: bool) -> Member {
        Member { name: name.into(), state, current, ready, failed: false, stuck: None }
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
            assert_eq!(blockers(&members, &plan), want, "{case}: {plan:?}");
        }
    }
}
