//! OCM's decision groups (`spec.decisionStrategy.groupStrategy`), pure: which decided
//! cluster goes in which group, and the PlacementDecision pages of every group laid out
//! so that no cluster that stays decided ever vanishes from the union of the pages while
//! they are rewritten, also when it moves from one group to another.
//!
//! The groups are OCM's (its scheduling controller's `generateDecisionGroups`):
//!
//! - `clustersPerDecisionGroup` (an integer or a percentage of the decided clusters,
//!   rounded up; default `100%`) is the group length; a length of zero or more than the
//!   decided clusters means all of them. A string that is not a percentage is a
//!   misconfiguration.
//! - Each `decisionGroups[]` entry in order takes the decided clusters its selector
//!   matches and that no earlier entry took, sorted by name, in groups of at most the
//!   group length, all with the entry's `groupName`.
//! - The clusters left make more groups of at most the group length, named `""`.
//! - Group indices count from 0 in that order. With no cluster decided there is one
//!   empty group, so that the placement still shows one (empty) decision.
//!
//! OCM then writes each group's clusters in pages of at most 100, numbered on from the
//! previous group's pages (`<placement>-decision-<n>`, n from 1). Here a group's pages are
//! laid over the pages that group has already with [`crate::plan_pages`] (clusters that
//! stay keep their page; newcomers fill free slots, then new pages), a new page takes the
//! lowest free number (so a first layout is numbered exactly as OCM numbers it), the
//! pages of a group that is gone are deleted, and the writes of every group go in one
//! order: pages that gain a cluster, then pages that only lose, then deletions (a page
//! that gains and also loses a cluster moving to another group is written twice: with
//! that cluster among the gains, without it among the losses). A cluster that changes
//! group therefore shows on its new page before it leaves its old one. A group is known
//! by its index and name together: a page whose group changed name belongs to a group
//! that is gone.

use crate::pages::{plan as plan_pages, Page};
use std::collections::{BTreeMap, BTreeSet};

/// `clustersPerDecisionGroup` as written: an integer or a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClustersPerGroup {
    /// A number of clusters.
    Count(i64),
    /// A percentage such as `"25%"` (anything else is a misconfiguration).
    Text(String),
}

impl Default for ClustersPerGroup {
    /// OCM's default, `100%`: one group.
    fn default() -> Self {
        ClustersPerGroup::Text("100%".into())
    }
}

/// The number of clusters per group for `total` decided clusters, as OCM computes it
/// (`calculateLength`): a percentage is rounded up; zero, negative or more than `total`
/// means `total`. Err carries OCM's message for a string that is not a percentage.
pub fn group_length(per_group: &ClustersPerGroup, total: usize) -> Result<usize, String> {
    let length = match per_group {
        ClustersPerGroup::Count(n) => *n,
        ClustersPerGroup::Text(text) => {
            let invalid = || format!("{text} invalid type: string is not a percentage");
            let percent: f64 = text.strip_suffix('%').ok_or_else(invalid)?.parse().map_err(|_| invalid())?;
            (percent / 100.0 * total as f64).ceil() as i64
        }
    };
    Ok(match usize::try_from(length) {
        Ok(length) if length > 0 && length <= total => length,
        _ => total,
    })
}

/// One configured group (`decisionGroups[]`): its name and the clusters its selector
/// matches (any superset of the decided ones; only decided clusters are grouped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSelection {
    /// `groupName`.
    pub name: String,
    /// The clusters `groupClusterSelector` matches.
    pub matching: BTreeSet<String>,
}

/// One decision group: its index, its name and its clusters, sorted by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionGroup {
    /// `decisionGroupIndex`, from 0.
    pub index: u32,
    /// `decisionGroupName`; `""` for the clusters no configured group took.
    pub name: String,
    /// The group's clusters, sorted by name.
    pub clusters: Vec<String>,
}

/// Splits the decided clusters into OCM's decision groups of at most `length` clusters.
pub fn decision_groups(configured: &[GroupSelection], decided: &[String], length: usize) -> Vec<DecisionGroup> {
    let length = length.max(1);
    let mut left: BTreeSet<&str> = decided.iter().map(String::as_str).collect();
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut divide = |name: &str, clusters: Vec<String>| {
        for chunk in clusters.chunks(length) {
            groups.push((name.to_string(), chunk.to_vec()));
        }
    };
    for group in configured {
        let taken: Vec<String> = left.iter().filter(|c| group.matching.contains(**c)).map(|c| c.to_string()).collect();
        for cluster in &taken {
            left.remove(cluster.as_str());
        }
        divide(&group.name, taken);
    }
    divide("", left.iter().map(|c| c.to_string()).collect());
    if groups.is_empty() {
        groups.push((String::new(), Vec::new()));
    }
    (0..).zip(groups).map(|(index, (name, clusters))| DecisionGroup { index, name, clusters }).collect()
}

/// One PlacementDecision page with the group it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPage {
    /// The page's number: `<placement>-decision-<index>`.
    pub index: u32,
    /// The index of its group (the `decision-group-index` label).
    pub group: u32,
    /// The name of its group (the `decision-group-name` label).
    pub group_name: String,
    /// Its clusters, in the order shown.
    pub clusters: Vec<String>,
}

/// One write of a grouped plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupPageWrite {
    /// Create or replace the page (clusters and group labels).
    Put(GroupPage),
    /// Delete the page with this index.
    Delete(u32),
}

/// The pages after a change and the writes that get there, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPlan {
    /// Every page after the writes, by index.
    pub pages: Vec<GroupPage>,
    /// The writes, in order; empty when nothing changes.
    pub writes: Vec<GroupPageWrite>,
}

impl GroupPlan {
    /// The names of each group's pages, by group index (`status.decisionGroups[].decisions`).
    pub fn pages_of(&self, group: u32) -> impl Iterator<Item = u32> + '_ {
        self.pages.iter().filter(move |p| p.group == group).map(|p| p.index)
    }
}

/// Lays `groups` over the `current` pages, at most `per_page` clusters a page.
pub fn plan_groups(current: &[GroupPage], groups: &[DecisionGroup], per_page: usize) -> GroupPlan {
    let mut used: BTreeSet<u32> = current.iter().map(|p| p.index).collect();
    let mut next_free = 1u32;
    let mut allocate = move |used: &mut BTreeSet<u32>| {
        while used.contains(&next_free) {
            next_free += 1;
        }
        used.insert(next_free);
        next_free
    };
    let mut pages: BTreeMap<u32, GroupPage> = BTreeMap::new();
    for group in groups {
        let own: Vec<Page> = current
            .iter()
            .filter(|p| p.group == group.index && p.group_name == group.name)
            .map(|p| Page { index: p.index, clusters: p.clusters.clone() })
            .collect();
        let owned: BTreeSet<u32> = own.iter().map(|p| p.index).collect();
        // pages::plan numbers a group's new pages after its own last page; here a new
        // page takes the lowest number no page of any group holds.
        for page in plan_pages(&own, &group.clusters, per_page).pages {
            let index = if owned.contains(&page.index) { page.index } else { allocate(&mut used) };
            let page = GroupPage { index, group: group.index, group_name: group.name.clone(), clusters: page.clusters };
            pages.insert(index, page);
        }
    }
    let decided: BTreeSet<&str> = groups.iter().flat_map(|g| g.clusters.iter().map(String::as_str)).collect();
    let before: BTreeMap<u32, &GroupPage> = current.iter().map(|p| (p.index, p)).collect();
    let mut gains = Vec::new();
    let mut losses = Vec::new();
    for page in pages.values() {
        let old = before.get(&page.index);
        if old.is_some_and(|old| *old == page) {
            continue;
        }
        let gained = page.clusters.iter().any(|c| !old.is_some_and(|old| old.clusters.contains(c)));
        if !gained && old.is_some() {
            losses.push(GroupPageWrite::Put(page.clone()));
            continue;
        }
        // A page that gains and also loses a cluster that moves to another group's page
        // keeps that cluster until the losses: written first without it, the page would
        // hide it while the page it moves to may not show it yet (two groups swapping
        // clusters would make that unavoidable in any order).
        let lingering: Vec<String> = old
            .into_iter()
            .flat_map(|old| old.clusters.iter())
            .filter(|c| !page.clusters.contains(c) && decided.contains(c.as_str()))
            .cloned()
            .collect();
        if lingering.is_empty() {
            gains.push(GroupPageWrite::Put(page.clone()));
        } else {
            let mut widened = page.clone();
            widened.clusters.extend(lingering);
            gains.push(GroupPageWrite::Put(widened));
            losses.push(GroupPageWrite::Put(page.clone()));
        }
    }
    let deletes = before.keys().filter(|index| !pages.contains_key(index)).map(|index| GroupPageWrite::Delete(*index));
    let writes = gains.into_iter().chain(losses).chain(deletes).collect();
    GroupPlan { pages: pages.into_values().collect(), writes }
}

/// The pages after applying `writes` to `pages` in order (what a watcher has seen).
pub fn apply_group_writes(pages: &[GroupPage], writes: &[GroupPageWrite]) -> Vec<GroupPage> {
    let mut by_index: BTreeMap<u32, GroupPage> = pages.iter().map(|p| (p.index, p.clone())).collect();
    for write in writes {
        match write {
            GroupPageWrite::Put(page) => {
                by_index.insert(page.index, page.clone());
            }
            GroupPageWrite::Delete(index) => {
                by_index.remove(index);
            }
        }
    }
    by_index.into_values().collect()
}

#[cfg(test)]
mod tests;
