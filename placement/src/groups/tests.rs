use super::*;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn selection(name: &str, matching: &[&str]) -> GroupSelection {
    GroupSelection { name: name.into(), matching: matching.iter().map(|s| s.to_string()).collect() }
}

fn summary(groups: &[DecisionGroup]) -> Vec<(u32, &str, Vec<&str>)> {
    groups.iter().map(|g| (g.index, g.name.as_str(), g.clusters.iter().map(String::as_str).collect())).collect()
}

/// OCM's `calculateLength`, by table: integers as they are, percentages of the total
/// rounded up, zero or too many meaning all, anything else misconfigured.
#[test]
fn group_length_as_ocm_computes_it() {
    let count = ClustersPerGroup::Count;
    let text = |s: &str| ClustersPerGroup::Text(s.into());
    let cases = [
        (ClustersPerGroup::default(), 7, Ok(7)),
        (count(2), 7, Ok(2)),
        (count(0), 7, Ok(7)),
        (count(-3), 7, Ok(7)),
        (count(9), 7, Ok(7)),
        (text("25%"), 3, Ok(1)),
        (text("25%"), 100, Ok(25)),
        (text("30%"), 10, Ok(3)),
        (text("33%"), 10, Ok(4)),
        (text("50%"), 5, Ok(3)),
        (text("1%"), 1000, Ok(10)),
        (text("0%"), 10, Ok(10)),
        (text("150%"), 10, Ok(10)),
        (text("100%"), 0, Ok(0)),
        (text("abc"), 10, Err("abc invalid type: string is not a percentage".to_string())),
        (text("5"), 10, Err("5 invalid type: string is not a percentage".to_string())),
        (text("x%"), 10, Err("x% invalid type: string is not a percentage".to_string())),
    ];
    for (per_group, total, want) in cases {
        assert_eq!(group_length(&per_group, total), want, "{per_group:?} of {total}");
    }
}

/// OCM's test "placement with decision groups": group1 takes cloud=Amazon, group2
/// cloud=Azure; one page each.
#[test]
fn groups_by_selector_in_order() {
    let decided = names(&["cluster1", "cluster2", "cluster3"]);
    let configured = [selection("group1", &["cluster1", "cluster2"]), selection("group2", &["cluster3"])];
    let groups = decision_groups(&configured, &decided, 3);
    assert_eq!(summary(&groups), [(0, "group1", vec!["cluster1", "cluster2"]), (1, "group2", vec!["cluster3"])]);
    let plan = plan_groups(&[], &groups, 100);
    let pages: Vec<(u32, u32, &str)> = plan.pages.iter().map(|p| (p.index, p.group, p.group_name.as_str())).collect();
    assert_eq!(pages, [(1, 0, "group1"), (2, 1, "group2")]);
}

/// OCM's test "placement with only cluster per decision group": 25% of three clusters
/// rounds up to one, so three unnamed groups of one.
#[test]
fn the_rest_split_by_clusters_per_group() {
    let decided = names(&["cluster3", "cluster1", "cluster2"]);
    let length = group_length(&ClustersPerGroup::Text("25%".into()), decided.len()).unwrap();
    let groups = decision_groups(&[], &decided, length);
    assert_eq!(summary(&groups), [(0, "", vec!["cluster1"]), (1, "", vec!["cluster2"]), (2, "", vec!["cluster3"])]);
    let plan = plan_groups(&[], &groups, 100);
    assert_eq!(plan.pages.iter().map(|p| (p.index, p.group)).collect::<Vec<_>>(), [(1, 0), (2, 1), (3, 2)]);
}

/// A group by selector, then the rest in groups of two; a cluster two selectors match
/// belongs to the first; selector matches that were not decided are ignored; a selected
/// group larger than the length splits under the same name.
#[test]
fn selected_groups_then_the_rest() {
    let decided = names(&["e", "a", "d", "b", "c", "f", "g"]);
    let configured =
        [selection("prod", &["a", "b", "c", "x"]), selection("canary", &["c", "g"]), selection("empty", &["y"])];
    let groups = decision_groups(&configured, &decided, 2);
    assert_eq!(
        summary(&groups),
        [
            (0, "prod", vec!["a", "b"]),
            (1, "prod", vec!["c"]),
            (2, "canary", vec!["g"]),
            (3, "", vec!["d", "e"]),
            (4, "", vec!["f"]),
        ]
    );
}

#[test]
fn nothing_decided_is_one_empty_group_with_one_empty_page() {
    let groups = decision_groups(&[selection("prod", &["a"])], &[], 0);
    assert_eq!(summary(&groups), [(0, "", vec![])]);
    let plan = plan_groups(&[], &groups, 100);
    assert_eq!(plan.pages, [GroupPage { index: 1, group: 0, group_name: String::new(), clusters: vec![] }]);
    assert!(plan_groups(&plan.pages, &groups, 100).writes.is_empty(), "a second pass writes nothing");
}

/// Pages of a group larger than a page are numbered on from the previous group's, as
/// OCM numbers them.
#[test]
fn pages_are_numbered_across_groups() {
    let decided: Vec<String> = (0..250).map(|i| format!("c{i:03}")).collect();
    let prod: Vec<&str> = decided[..150].iter().map(String::as_str).collect();
    let groups = decision_groups(&[selection("prod", &prod)], &decided, decided.len());
    let plan = plan_groups(&[], &groups, 100);
    let layout: Vec<(u32, u32, usize)> = plan.pages.iter().map(|p| (p.index, p.group, p.clusters.len())).collect();
    assert_eq!(layout, [(1, 0, 100), (2, 0, 50), (3, 1, 100)]);
    assert_eq!(plan.pages_of(0).collect::<Vec<_>>(), [1, 2]);
}

/// Applies a plan one write at a time: a cluster decided before and after is in the
/// union of the pages after every write, and the writes end at the planned pages.
fn check(current: &[GroupPage], groups: &[DecisionGroup], per_page: usize) -> GroupPlan {
    let plan = plan_groups(current, groups, per_page);
    let union = |pages: &[GroupPage]| -> BTreeSet<String> { pages.iter().flat_map(|p| p.clusters.clone()).collect() };
    let decided: BTreeSet<String> = groups.iter().flat_map(|g| g.clusters.clone()).collect();
    let stays: BTreeSet<String> = union(current).intersection(&decided).cloned().collect();
    let mut seen = current.to_vec();
    for write in &plan.writes {
        seen = apply_group_writes(&seen, std::slice::from_ref(write));
        let now = union(&seen);
        let missing: Vec<&String> = stays.difference(&now).collect();
        assert!(missing.is_empty(), "{missing:?} vanished after {write:?}");
    }
    assert_eq!(seen, plan.pages, "the writes give the planned pages");
    for group in groups {
        let mut on_pages: Vec<String> = plan
            .pages
            .iter()
            .filter(|p| p.group == group.index && p.group_name == group.name)
            .flat_map(|p| p.clusters.clone())
            .collect();
        on_pages.sort();
        assert_eq!(on_pages, group.clusters, "group {} holds exactly its clusters", group.index);
    }
    let listed: usize = plan.pages.iter().map(|p| p.clusters.len()).sum();
    assert_eq!(listed, decided.len(), "every decided cluster once");
    assert!(plan.pages.iter().all(|p| p.clusters.len() <= per_page));
    plan
}

/// Two groups swap a cluster each (a label moved from one cluster to another): each
/// moving cluster shows on its new page before its old page drops it.
#[test]
fn clusters_swapping_groups_never_vanish() {
    let before = decision_groups(&[selection("prod", &["a", "b"])], &names(&["a", "b", "c", "d"]), 4);
    let current = check(&[], &before, 100).pages;
    let after = decision_groups(&[selection("prod", &["a", "c"])], &names(&["a", "b", "c", "d"]), 4);
    let plan = check(&current, &after, 100);
    // Both pages gain and lose: each is written widened first, then narrowed.
    assert_eq!(plan.writes.len(), 4);
}

#[test]
fn the_same_groups_write_nothing() {
    let decided = names(&["a", "b", "c", "d", "e"]);
    let groups = decision_groups(&[selection("prod", &["a", "e"])], &decided, 2);
    let current = check(&[], &groups, 100).pages;
    assert!(plan_groups(&current, &groups, 100).writes.is_empty());
}

/// A group whose name changed is another group: its old pages go after the new ones
/// are written.
#[test]
fn a_renamed_group_gets_new_pages_first() {
    let decided = names(&["a", "b"]);
    let current = check(&[], &decision_groups(&[selection("prod", &["a"])], &decided, 2), 100).pages;
    let renamed = decision_groups(&[selection("production", &["a"])], &decided, 2);
    let plan = check(&current, &renamed, 100);
    assert_eq!(plan.writes.last(), Some(&GroupPageWrite::Delete(1)));
    assert_eq!(
        plan.pages.iter().map(|p| (p.index, p.group_name.as_str())).collect::<Vec<_>>(),
        [(2, ""), (3, "production")]
    );
}

/// Random decided sets, selectors and group lengths in a row, with small pages: no
/// cluster that stays decided ever vanishes, whatever group it moves to.
#[test]
fn random_regroupings_never_flap() {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut random = move |below: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    };
    let universe: Vec<String> = (0..40).map(|i| format!("c{i:02}")).collect();
    let mut pages = Vec::new();
    for _ in 0..400 {
        let decided: Vec<String> = universe.iter().filter(|_| random(4) > 0).cloned().collect();
        let configured: Vec<GroupSelection> = (0..random(3))
            .map(|g| GroupSelection {
                name: format!("g{}", random(2) + g),
                matching: universe.iter().filter(|_| random(3) == 0).cloned().collect(),
            })
            .collect();
        let length = random(12) as usize;
        let groups = decision_groups(&configured, &decided, length);
        pages = check(&pages, &groups, 1 + random(6) as usize).pages;
    }
}
