//! Decision pages that never flap: how a new chosen set of clusters is laid over the
//! pages a placement already has, and in which order the pages are written.
//!
//! OCM writes a Placement's decisions as PlacementDecision objects of at most 100
//! clusters each (`<placement>-decision-<n>`), and rewrites them one after another. When a
//! rewrite moves a cluster from one page to another and the source page is written first,
//! a consumer that reads the union of the pages sees the cluster vanish and come back
//! (ocm#1346): an add-on is deleted and recreated. Without multi-object transactions the
//! cure is the layout and the order of the writes:
//!
//! - A cluster that stays chosen stays on its page. Clusters that leave free their slots;
//!   new clusters fill free slots in page order, then open new pages.
//! - Pages that gain a cluster are written first, pages that only lose clusters next, and
//!   pages left empty are deleted last (the first page is kept, empty, so that a
//!   placement always shows its decision object, as OCM does).
//!
//! So after every prefix of the writes the union of the pages holds every cluster that
//! was chosen before and is still chosen, and, once written, every new one: no cluster
//! that stays ever disappears, and no cluster is shown twice once the writes are done.
//! A change that does not alter the chosen set writes nothing. Pure: no I/O, no clock.

use std::collections::{BTreeMap, BTreeSet};

/// OCM's page size: at most this many clusters per PlacementDecision.
pub const CLUSTERS_PER_PAGE: usize = 100;

/// One page: its index (1-based, as in `<placement>-decision-<index>`) and its clusters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The page's index; page names are `<placement>-decision-<index>`.
    pub index: u32,
    /// Cluster names on the page, in the order they are shown.
    pub clusters: Vec<String>,
}

/// One write of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageWrite {
    /// Create or replace the page.
    Put(Page),
    /// Delete the page with this index.
    Delete(u32),
}

/// The pages after a change and the writes that get there, in the order to apply them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PagePlan {
    /// Every page after the writes, by index.
    pub pages: Vec<Page>,
    /// The writes, in order; empty when nothing changes.
    pub writes: Vec<PageWrite>,
}

/// Lays `chosen` (in decision order, without repeats) over the `current` pages, at most
/// `per_page` clusters a page (at least 1).
pub fn plan(current: &[Page], chosen: &[String], per_page: usize) -> PagePlan {
    let per_page = per_page.max(1);
    let wanted: BTreeSet<&str> = chosen.iter().map(String::as_str).collect();
    let mut current: Vec<&Page> = current.iter().collect();
    current.sort_by_key(|page| page.index);

    // Clusters that stay keep their slot; a cluster listed on two pages (written by an
    // older controller, or a crash mid-plan) stays only on the first.
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    let mut pages: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for page in &current {
        let kept = page.clusters.iter().filter(|c| wanted.contains(c.as_str()) && placed.insert(c.as_str()));
        let kept: Vec<String> = kept.take(per_page).cloned().collect();
        pages.insert(page.index, kept);
    }
    // Overflow of an over-full page (a smaller page size than before) counts as new.
    let mut newcomers = chosen.iter().filter(|c| !placed.contains(c.as_str()));
    for clusters in pages.values_mut() {
        while clusters.len() < per_page {
            match newcomers.next() {
                Some(cluster) => clusters.push(cluster.clone()),
                None => break,
            }
        }
    }
    let next = pages.keys().next_back().map_or(1, |last| last + 1);
    let rest: Vec<&String> = newcomers.collect();
    for (index, chunk) in (next..).zip(rest.chunks(per_page)) {
        pages.insert(index, chunk.iter().map(|c| (*c).clone()).collect());
    }
    // Empty pages go, except the first page, which always exists.
    let first = pages.keys().next().copied().unwrap_or(1);
    pages.retain(|index, clusters| !clusters.is_empty() || *index == first);
    pages.entry(first).or_default();

    let before: BTreeMap<u32, &Vec<String>> = current.iter().map(|page| (page.index, &page.clusters)).collect();
    let mut gains = Vec::new();
    let mut losses = Vec::new();
    for (index, clusters) in &pages {
        let old = before.get(index);
        if old.is_some_and(|old| *old == clusters) {
            continue;
        }
        let page = Page { index: *index, clusters: clusters.clone() };
        let gained = clusters.iter().any(|c| !old.is_some_and(|old| old.contains(c)));
        if gained || old.is_none() {
            gains.push(PageWrite::Put(page));
        } else {
            losses.push(PageWrite::Put(page));
        }
    }
    let deletes = before.keys().filter(|index| !pages.contains_key(index)).map(|index| PageWrite::Delete(*index));
    let writes = gains.into_iter().chain(losses).chain(deletes).collect();
    let pages = pages.into_iter().map(|(index, clusters)| Page { index, clusters }).collect();
    PagePlan { pages, writes }
}

/// The pages after applying `writes` to `pages` in order (what a watcher has seen after
/// each write).
pub fn apply(pages: &[Page], writes: &[PageWrite]) -> Vec<Page> {
    let mut by_index: BTreeMap<u32, Vec<String>> = pages.iter().map(|p| (p.index, p.clusters.clone())).collect();
    for write in writes {
        match write {
            PageWrite::Put(page) => {
                by_index.insert(page.index, page.clusters.clone());
            }
            PageWrite::Delete(index) => {
                by_index.remove(index);
            }
        }
    }
    by_index.into_iter().map(|(index, clusters)| Page { index, clusters }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(range: std::ops::Range<usize>) -> Vec<String> {
        range.map(|i| format!("c{i:04}")).collect()
    }

    fn union(pages: &[Page]) -> BTreeSet<String> {
        pages.iter().flat_map(|p| p.clusters.iter().cloned()).collect()
    }

    /// Applies the plan one write at a time and checks what a watcher could see.
    fn check(current: &[Page], chosen: &[String], per_page: usize) -> PagePlan {
        let plan = plan(current, chosen, per_page);
        let stays: BTreeSet<String> = union(current).into_iter().filter(|c| chosen.contains(c)).collect();
        let mut seen = current.to_vec();
        let mut added: BTreeSet<String> = BTreeSet::new();
        for write in &plan.writes {
            seen = apply(&seen, std::slice::from_ref(write));
            let now = union(&seen);
            assert!(stays.is_subset(&now), "a staying cluster vanished after {write:?}");
            assert!(added.is_subset(&now), "a new cluster flapped after {write:?}");
            added.extend(now.iter().filter(|c| chosen.contains(c)).cloned());
        }
        assert_eq!(seen, plan.pages, "the writes give the planned pages");
        let listed: Vec<&String> = plan.pages.iter().flat_map(|p| p.clusters.iter()).collect();
        assert_eq!(listed.len(), chosen.len(), "every chosen cluster once: {listed:?}");
        assert_eq!(union(&plan.pages), chosen.iter().cloned().collect::<BTreeSet<_>>());
        assert!(plan.pages.iter().all(|p| p.clusters.len() <= per_page.max(1)));
        let first = current.iter().map(|p| p.index).min().unwrap_or(1);
        assert_eq!(plan.pages.first().map(|p| p.index), Some(first), "the first page always exists");
        plan
    }

    #[test]
    fn first_decisions_fill_pages_of_at_most_a_hundred() {
        let plan = check(&[], &names(0..250), CLUSTERS_PER_PAGE);
        let sizes: Vec<(u32, usize)> = plan.pages.iter().map(|p| (p.index, p.clusters.len())).collect();
        assert_eq!(sizes, [(1, 100), (2, 100), (3, 50)]);
        assert_eq!(plan.writes.len(), 3);
    }

    #[test]
    fn nothing_chosen_keeps_one_empty_page() {
        let plan = check(&[], &[], CLUSTERS_PER_PAGE);
        assert_eq!(plan.pages, [Page { index: 1, clusters: vec![] }]);
        let current = plan.pages.clone();
        assert!(check(&current, &[], CLUSTERS_PER_PAGE).writes.is_empty());
    }

    #[test]
    fn the_same_set_writes_nothing_whatever_its_order() {
        let current = plan(&[], &names(0..150), CLUSTERS_PER_PAGE).pages;
        let mut reordered = names(0..150);
        reordered.reverse();
        assert!(check(&current, &reordered, CLUSTERS_PER_PAGE).writes.is_empty());
    }

    /// OCM#1346's case: a cluster early in the order leaves, every later cluster would
    /// shift one slot and some would move to the previous page. Here nobody moves, and
    /// only the page that lost a cluster is written.
    #[test]
    fn a_leaving_cluster_moves_nobody_else() {
        let current = plan(&[], &names(0..200), CLUSTERS_PER_PAGE).pages;
        let mut chosen = names(0..200);
        chosen.remove(3);
        let plan = check(&current, &chosen, CLUSTERS_PER_PAGE);
        assert_eq!(plan.writes.len(), 1);
        assert_eq!(plan.pages[1], current[1], "the second page is untouched");
    }

    #[test]
    fn newcomers_fill_freed_slots_before_opening_a_page() {
        let current = plan(&[], &names(0..200), CLUSTERS_PER_PAGE).pages;
        let mut chosen: Vec<String> = names(0..200).into_iter().filter(|c| c != "c0150").collect();
        chosen.push("new-a".into());
        chosen.push("new-b".into());
        let plan = check(&current, &chosen, CLUSTERS_PER_PAGE);
        assert_eq!(plan.pages.len(), 3);
        assert!(plan.pages[1].clusters.contains(&"new-a".to_string()));
        assert_eq!(plan.pages[2].clusters, ["new-b"]);
        // The gaining pages come before any page that only loses.
        assert!(matches!(&plan.writes[..], [PageWrite::Put(a), PageWrite::Put(b)] if a.index == 2 && b.index == 3));
    }

    #[test]
    fn emptied_pages_are_deleted_last_but_the_first_page_stays() {
        let current = plan(&[], &names(0..300), CLUSTERS_PER_PAGE).pages;
        let plan = check(&current, &names(250..260), CLUSTERS_PER_PAGE);
        assert_eq!(plan.pages.iter().map(|p| p.index).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(plan.writes.last(), Some(&PageWrite::Delete(2)));
        assert!(plan.pages[0].clusters.is_empty());
    }

    #[test]
    fn a_cluster_on_two_pages_stays_only_on_the_first() {
        let current = [
            Page { index: 1, clusters: vec!["a".into(), "b".into()] },
            Page { index: 2, clusters: vec!["b".into(), "c".into()] },
        ];
        let plan = check(&current, &["a".into(), "b".into(), "c".into()], CLUSTERS_PER_PAGE);
        assert_eq!(plan.pages[1].clusters, ["c"]);
    }

    /// Many random changes in a row: the no-flap and exact-union properties hold after
    /// each, with a small page size so clusters cross page boundaries often.
    #[test]
    fn random_changes_never_flap() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut random = move |below: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % below
        };
        let universe = names(0..60);
        let mut pages = Vec::new();
        for _ in 0..500 {
            let chosen: Vec<String> = universe.iter().filter(|_| random(3) > 0).cloned().collect();
            let per_page = 1 + random(8) as usize;
            pages = check(&pages, &chosen, per_page).pages;
        }
    }
}
