//! What a pass of the Fleet hub controller covers and works with, shared by the loop
//! that wakes it ([`super::controller`]) and the pass itself (`super::hub`).

use super::policy::Eligibility;
use super::{CLUSTER_GROUP, PLACEMENT_GROUP};
use crate::state::Shard;
use apiserver::registry::ResourceType;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// How the hub judges members.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub eligibility: Eligibility,
    /// How long a member being deleted waits for its agent to leave before the hub
    /// collects its namespace all the same ([`super::leave`]).
    pub force_delete_wait: std::time::Duration,
    /// Placements that opt in to rescheduling move voluntarily at most once per this
    /// interval unless they name their own ([`placement::pace`]).
    pub damping: std::time::Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            eligibility: Eligibility::default(),
            force_delete_wait: super::leave::DEFAULT_FORCE_DELETE_WAIT,
            damping: std::time::Duration::from_secs(60),
        }
    }
}

/// The resources one hub reads and writes.
pub(super) struct Rows {
    pub members: Arc<ResourceType>,
    pub placements: Arc<ResourceType>,
    pub policy_snapshots: Arc<ResourceType>,
    pub resource_snapshots: Arc<ResourceType>,
    pub bindings: Arc<ResourceType>,
    pub works: Arc<ResourceType>,
    pub cluster_overrides: Arc<ResourceType>,
    pub resource_overrides: Arc<ResourceType>,
    pub namespaces: Arc<ResourceType>,
}

impl Rows {
    pub fn of(shard: &Shard) -> Option<Rows> {
        let row = |resource: &str| shard.registry.get(PLACEMENT_GROUP, "v1", resource);
        Some(Rows {
            members: shard.registry.get(CLUSTER_GROUP, "v1", "memberclusters")?,
            placements: row("clusterresourceplacements")?,
            policy_snapshots: row("clusterschedulingpolicysnapshots")?,
            resource_snapshots: row("clusterresourcesnapshots")?,
            bindings: row("clusterresourcebindings")?,
            works: row("works")?,
            cluster_overrides: row("clusterresourceoverrides")?,
            resource_overrides: row("resourceoverrides")?,
            namespaces: shard.registry.namespaces(),
        })
    }
}

/// What one hub's next pass must cover.
#[derive(Debug, Default, Clone)]
pub(super) struct Triggers {
    /// Every member and placement.
    pub all: bool,
    /// Members whose hub status and scheduling view to bring up.
    pub members: BTreeSet<String>,
    /// Placements to decide again.
    pub placements: BTreeSet<String>,
}

/// What a placement selects: the namespaces whose contents it carries and the
/// cluster-scoped resources it picks from (by storage key prefix, `group/resource/`).
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Selection {
    pub namespaces: BTreeSet<String>,
    pub resources: BTreeSet<String>,
    /// When the placement must be passed again with no write (a rollout waiting on time).
    pub wake_at: Option<jiff::Timestamp>,
}

/// What the scheduler saw of each member of one hub, and when each may lapse.
#[derive(Default)]
pub(super) struct MemberMemo {
    seen: HashMap<String, String>,
    deadlines: HashMap<String, jiff::Timestamp>,
}

impl MemberMemo {
    /// Records what the scheduler sees of `member`; whether it changed.
    pub fn observe(&mut self, member: &str, seen: String, deadline: Option<jiff::Timestamp>) -> bool {
        match deadline {
            Some(at) => self.deadlines.insert(member.to_string(), at),
            None => self.deadlines.remove(member),
        };
        self.seen.insert(member.to_string(), seen.clone()) != Some(seen)
    }

    /// Forgets members `keep` rejects; whether any was forgotten.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) -> bool {
        let before = self.seen.len();
        self.seen.retain(|name, _| keep(name));
        self.deadlines.retain(|name, _| keep(name));
        self.seen.len() != before
    }

    /// Forgets one member; whether it was known.
    pub fn forget(&mut self, member: &str) -> bool {
        self.deadlines.remove(member);
        self.seen.remove(member).is_some()
    }

    /// Members whose deadline has passed (their deadline is dropped) and the next one.
    pub fn due(&mut self, now: jiff::Timestamp) -> (Vec<String>, Option<jiff::Timestamp>) {
        let due: Vec<String> = self.deadlines.iter().filter(|(_, at)| **at <= now).map(|(m, _)| m.clone()).collect();
        for member in &due {
            self.deadlines.remove(member);
        }
        (due, self.deadlines.values().min().copied())
    }
}
