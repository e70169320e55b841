//! The fault schedule: drawn once from the run's seed, before anything starts, so that
//! the same seed injects the same faults at the same offsets. Pure: no I/O, no clock.
//!
//! A schedule alternates fault and calm: each step injects one fault on one target,
//! holds it, then lifts it (heal, SIGCONT or restart) and leaves the system a calm spell
//! to recover, so the workload sees both faults and recoveries.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::hosts::fault::HostFault;
use crate::netproxy::{Direction, NetFault};

/// What a step does to its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    /// A network fault on the proxy in front of the target shard, lifted by a heal.
    Net(NetFault),
    /// `kill -9`, then a restart on the same data dir after the hold.
    Kill9,
    /// SIGSTOP, then SIGCONT after the hold: the process keeps its connections open.
    Pause,
    /// Fill the filesystem under the shard's store, then free it after the hold.
    DiskFull,
    /// `kill -9` of the front-proxy (the step's target is ignored), then a restart on the
    /// same port and data dir after the hold.
    ProxyKill9,
    /// A fault on a container of the docker-compose installation (the `hosts` scenario),
    /// lifted by its heal.
    Host(HostFault),
}

/// One scheduled fault.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// Offset from the start of the fault phase.
    pub at_ms: u64,
    /// The shard it targets (an index into the scenario's shards).
    pub target: usize,
    /// What is done.
    pub action: Action,
    /// How long the fault holds before it is lifted.
    pub hold_ms: u64,
}

/// Which kinds of fault a scenario draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mix {
    /// Network faults through the proxy.
    pub network: bool,
    /// kill -9 and restart.
    pub kill: bool,
    /// SIGSTOP / SIGCONT.
    pub pause: bool,
    /// A full disk under a shard's store.
    pub disk_full: bool,
}

/// How long faults hold and the calm spells between them last: each drawn between a
/// shortest and a longest, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spells {
    /// A fault's hold.
    pub hold_ms: (u64, u64),
    /// The calm after a fault (and before the first).
    pub calm_ms: (u64, u64),
}

/// The spells of process and proxy faults: short, so a few seconds see several.
pub const SPELLS: Spells = Spells { hold_ms: (500, 3_000), calm_ms: (500, 2_000) };

/// Draws the schedule for a fault phase of `duration_ms` over `targets` shards.
pub fn draw(seed: u64, duration_ms: u64, targets: usize, mix: Mix) -> Vec<Step> {
    let mut actions = Vec::new();
    if mix.network {
        actions.extend([
            Action::Net(NetFault::Cut),
            Action::Net(NetFault::Blackhole),
            Action::Net(NetFault::Drop(Direction::Upstream)),
            Action::Net(NetFault::Drop(Direction::Downstream)),
        ]);
    }
    if mix.kill {
        actions.push(Action::Kill9);
    }
    if mix.pause {
        actions.push(Action::Pause);
    }
    if mix.disk_full {
        actions.push(Action::DiskFull);
    }
    if actions.is_empty() {
        return Vec::new();
    }
    steps(seed, duration_ms, targets, SPELLS, |rng, _| {
        let action = actions[rng.gen_range(0..actions.len())];
        if action == Action::Net(NetFault::Blackhole) && rng.gen_bool(0.3) {
            // Sometimes slow rather than dead: delay both ways instead.
            return Action::Net(NetFault::Delay(Direction::Downstream, rng.gen_range(20..=400)));
        }
        action
    })
}

/// Draws a schedule that takes `actions` in turn (the first step does `actions[0]`, the
/// next `actions[1]`, …), with targets, offsets and holds from the seed: a scenario
/// whose point is a combination of faults meets every one of them even in a short run.
pub fn draw_alternating(seed: u64, duration_ms: u64, targets: usize, actions: &[Action]) -> Vec<Step> {
    if actions.is_empty() {
        return Vec::new();
    }
    steps(seed, duration_ms, targets, SPELLS, |_, index| actions[index % actions.len()])
}

/// Draws a schedule that takes the `(target, action)` pairs of `turns` in turn (step `i`
/// does `turns[i % turns.len()]`), with offsets and holds from the seed: a scenario whose
/// faults only make sense on certain targets (a network fault on a hop, a kill on a
/// process) meets each of its pairs even in a short run, targets as well as kinds.
pub fn draw_turns(seed: u64, duration_ms: u64, turns: &[(usize, Action)]) -> Vec<Step> {
    draw_turns_spelled(seed, duration_ms, turns, SPELLS)
}

/// [`draw_turns`] with holds and calm spells drawn from `spells`: faults whose effect
/// takes a while to show (a container cut off the network) hold longer.
pub fn draw_turns_spelled(seed: u64, duration_ms: u64, turns: &[(usize, Action)], spells: Spells) -> Vec<Step> {
    if turns.is_empty() {
        return Vec::new();
    }
    let mut steps = steps(seed, duration_ms, 1, spells, |_, index| turns[index % turns.len()].1);
    for (index, step) in steps.iter_mut().enumerate() {
        step.target = turns[index % turns.len()].0;
    }
    steps
}

/// The steps of a phase: fault, hold, calm, and again, until `duration_ms` is used up;
/// `action` names the fault of step `index`.
fn steps(
    seed: u64,
    duration_ms: u64,
    targets: usize,
    spells: Spells,
    mut action: impl FnMut(&mut StdRng, usize) -> Action,
) -> Vec<Step> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut steps = Vec::new();
    if targets == 0 {
        return steps;
    }
    let (hold, calm) = (spells.hold_ms, spells.calm_ms);
    let mut at_ms = rng.gen_range(calm.0..=calm.1);
    while at_ms < duration_ms {
        let action = action(&mut rng, steps.len());
        let hold_ms = rng.gen_range(hold.0..=hold.1).min(duration_ms - at_ms);
        steps.push(Step { at_ms, target: rng.gen_range(0..targets), action, hold_ms });
        at_ms += hold_ms + rng.gen_range(calm.0..=calm.1);
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Mix = Mix { network: true, kill: true, pause: true, disk_full: true };

    #[test]
    fn the_same_seed_draws_the_same_schedule() {
        assert_eq!(draw(7, 30_000, 2, ALL), draw(7, 30_000, 2, ALL));
        assert_ne!(draw(7, 30_000, 2, ALL), draw(8, 30_000, 2, ALL));
    }

    #[test]
    fn steps_do_not_overlap_and_end_within_the_phase() {
        for seed in 0..50 {
            let steps = draw(seed, 20_000, 2, ALL);
            assert!(!steps.is_empty(), "seed {seed}");
            for pair in steps.windows(2) {
                assert!(pair[0].at_ms + pair[0].hold_ms < pair[1].at_ms, "seed {seed}: {pair:?}");
            }
            let last = steps.last().unwrap();
            assert!(last.at_ms + last.hold_ms <= 20_000, "seed {seed}: {last:?}");
            assert!(steps.iter().all(|s| s.target < 2));
        }
    }

    #[test]
    fn the_mix_limits_the_actions() {
        let kills = draw(3, 60_000, 1, Mix { network: false, kill: true, pause: false, disk_full: false });
        assert!(kills.iter().all(|s| s.action == Action::Kill9), "{kills:?}");
        assert!(draw(3, 60_000, 1, Mix { network: false, kill: false, pause: false, disk_full: false }).is_empty());
    }

    #[test]
    fn an_alternating_schedule_takes_the_actions_in_turn() {
        let actions = [Action::Pause, Action::ProxyKill9];
        let steps = draw_alternating(5, 30_000, 2, &actions);
        assert!(steps.len() >= 4, "{steps:?}");
        for (index, step) in steps.iter().enumerate() {
            assert_eq!(step.action, actions[index % 2], "{steps:?}");
        }
        assert!(steps.iter().any(|s| s.target == 0) && steps.iter().any(|s| s.target == 1), "{steps:?}");
        assert_eq!(steps, draw_alternating(5, 30_000, 2, &actions));
        assert!(draw_alternating(5, 30_000, 2, &[]).is_empty());
    }

    #[test]
    fn a_schedule_in_turns_takes_targets_and_actions_together() {
        let turns = [(0, Action::Kill9), (1, Action::Pause), (2, Action::Net(NetFault::Cut))];
        let steps = draw_turns(23, 30_000, &turns);
        assert!(steps.len() >= 6, "{steps:?}");
        for (index, step) in steps.iter().enumerate() {
            assert_eq!((step.target, step.action), turns[index % 3], "{steps:?}");
        }
        assert_eq!(steps, draw_turns(23, 30_000, &turns));
        assert!(draw_turns(23, 30_000, &[]).is_empty());
    }

    #[test]
    fn spells_bound_the_holds_and_calms() {
        let spells = Spells { hold_ms: (3_000, 4_000), calm_ms: (2_000, 2_500) };
        let steps = draw_turns_spelled(9, 60_000, &[(0, Action::Pause)], spells);
        assert!(steps.len() >= 8, "{steps:?}");
        assert!((2_000..=2_500).contains(&steps[0].at_ms), "{steps:?}");
        for pair in steps.windows(2) {
            assert!((3_000..=4_000).contains(&pair[0].hold_ms), "{pair:?}");
            let calm = pair[1].at_ms - pair[0].at_ms - pair[0].hold_ms;
            assert!((2_000..=2_500).contains(&calm), "{pair:?}");
        }
    }
}
