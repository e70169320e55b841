use super::*;

#[test]
fn the_binding_chain_stops_at_the_first_condition_not_true() {
    let binding =
        json!({"metadata": {"generation": 2}, "spec": {"state": "Bound", "resourceSnapshotName": "crp-1-snapshot"}});
    let applying = WorkState { snapshot: "crp-1-snapshot".into(), synced: true, ..WorkState::default() };
    let types = |cs: Vec<Value>| {
        cs.iter()
            .map(|c| format!("{}={}", c["type"].as_str().unwrap(), c["status"].as_str().unwrap()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        types(binding_conditions(&binding, "crp-1-snapshot", false, Some(&applying), None, None)),
        ["RolloutStarted=True", "Overridden=True", "WorkSynchronized=True", "Applied=Unknown"]
    );
    let done = WorkState {
        snapshot: "crp-1-snapshot".into(),
        synced: true,
        applied: Some(true),
        available: Some(true),
        ..WorkState::default()
    };
    let stale = WorkState { snapshot: "crp-0-snapshot".into(), ..done.clone() };
    assert_eq!(
        types(binding_conditions(&binding, "crp-1-snapshot", false, Some(&stale), None, None)),
        ["RolloutStarted=True", "Overridden=True", "WorkSynchronized=Unknown"],
        "a Work of an older snapshot says nothing of the binding's"
    );
    assert_eq!(types(binding_conditions(&binding, "crp-1-snapshot", false, Some(&done), None, Some(true))).len(), 5);
    assert_eq!(
        types(binding_conditions(&binding, "crp-2-snapshot", true, Some(&done), None, None)),
        ["RolloutStarted=False"],
        "held back by the strategy"
    );
    let failure = "bad patch".to_string();
    assert_eq!(
        types(binding_conditions(&binding, "crp-1-snapshot", false, Some(&done), Some(&failure), None)),
        ["RolloutStarted=True", "Overridden=False"]
    );
}

#[test]
fn a_work_counts_only_conditions_of_its_generation() {
    let work = json!({"metadata": {"generation": 3}, "status": {"conditions": [
        {"type": "Applied", "status": "True", "observedGeneration": 3},
        {"type": "Available", "status": "True", "observedGeneration": 2}]}});
    let state = work_state(&work, false);
    assert_eq!(state.applied, Some(true));
    assert_eq!(state.available, None, "availability of an older generation says nothing");
    assert_eq!(work_state(&work, true).applied, None, "a Work just written is not applied yet");
}

#[test]
fn a_cluster_is_stuck_when_waiting_cannot_help() {
    let now: jiff::Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
    let period = jiff::SignedDuration::from_secs(60);
    let work = |applied: Option<bool>, available: Option<bool>, since: &str| WorkState {
        applied,
        available,
        unavailable_since: since.parse().ok(),
        message: "why".into(),
        ..WorkState::default()
    };
    let failure = "bad patch".to_string();
    /// (case, the cluster's Work, its override failure, why it is stuck)
    type Case<'a> = (&'a str, Option<WorkState>, Option<&'a String>, Option<&'a str>);
    let cases: Vec<Case> = vec![
        ("not reported yet", Some(work(None, None, "")), None, None),
        ("applied and available", Some(work(Some(true), Some(true), "")), None, None),
        ("apply failed", Some(work(Some(false), None, "")), None, Some("cluster \"m1\" failed to apply: why")),
        ("override failed", None, Some(&failure), Some("cluster \"m1\" failed to override: bad patch")),
        ("unavailable within the period", Some(work(Some(true), Some(false), "2026-01-01T00:09:30Z")), None, None),
        (
            "unavailable beyond the period",
            Some(work(Some(true), Some(false), "2026-01-01T00:08:00Z")),
            None,
            Some("cluster \"m1\" is unavailable beyond unavailablePeriodSeconds (60s): why"),
        ),
    ];
    for (case, work, failure, want) in cases {
        let got = stuck("m1", work.as_ref(), failure, now, period);
        assert_eq!(got.as_deref(), want, "{case}");
    }
}

/// A CRP whose pacing holds a move says so in `PlacementChangesHeld`, with pace's
/// reason and message, at the placement's generation; with nothing held the
/// condition is absent, not False.
#[test]
fn held_changes_show_in_the_placement_changes_held_condition() {
    use placement::pace::{self, Moves, Pacing, HELD_CONDITION};
    let crp = json!({"metadata": {"name": "web", "generation": 4}, "spec": {"policy": {
        "placementType": "PickN", "numberOfClusters": 1, "affinity": {"clusterAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "preference": {
                "labelSelector": {"matchLabels": {"tier": "gold"}}}}]}}}}});
    let policy = super::super::policy::policy("web", crp.pointer("/spec/policy")).expect("policy");
    let member = |name: &str, tier: &str| {
        let mut candidate = placement::Candidate::new(name);
        candidate.labels.insert("tier".into(), tier.into());
        candidate
    };
    let mut gold = member("gold", "gold");
    let taint = placement::Taint {
        key: "maintenance".into(),
        value: String::new(),
        effect: placement::TaintEffect::NoSchedule,
        time_added: None,
    };
    gold.taints.push(taint);
    let candidates = [member("bronze", "bronze"), gold];
    let now: jiff::Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
    let state = placement::State {
        now,
        current: vec!["gold".into()],
        other_decisions: Default::default(),
        reconsider: false,
        settled: vec!["gold".into()],
    };
    let pacing = Pacing { reschedule: true, interval: jiff::SignedDuration::from_secs(3600), ..Pacing::none() };
    // gold moved in ten minutes ago: the move off it waits for the interval.
    let moves = Moves(vec![("2026-01-01T00:00:00Z".parse().unwrap(), 1)]);
    let profile = placement::Profile::fleet();
    let paced = pace::decide(&profile, &policy, &candidates, &state, &pacing, &moves).expect("decision");
    assert_eq!(paced.decision.desired, ["gold"], "held, not moved");
    let held = paced.held_report().expect("the move is held");
    let status = placement_status(&crp, &paced.decision, &[], &[], "0", &[], Some(&held));
    let found = status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == HELD_CONDITION);
    let found = found.expect("the held condition");
    assert_eq!(found["status"], "True");
    assert_eq!(found["reason"], pace::RESCHEDULE_DAMPED_REASON);
    assert_eq!(found["observedGeneration"], 4);
    let message = found["message"].as_str().unwrap();
    assert!(
        message.contains("gold -> bronze (gold no longer qualifies: rejected by TaintToleration: taint maintenance"),
        "{message}"
    );
    assert!(message.contains("from 2026-01-01T01:00:00Z"), "{message}");

    let settled = placement_status(&crp, &paced.decision, &[], &[], "0", &[], None);
    let conditions = settled["conditions"].as_array().unwrap();
    assert!(conditions.iter().all(|c| c["type"] != HELD_CONDITION), "{settled}");
}

#[test]
fn a_blocked_rollout_names_its_clusters_in_rollout_started() {
    let c = rollout_blocked(&["cluster \"m1\" failed to apply: refused".to_string()], 3);
    assert_eq!(c["status"], "False");
    assert_eq!(c["reason"], "RolloutBlocked");
    assert!(c["message"].as_str().unwrap().contains("m1\" failed to apply: refused"), "{c}");
}

#[test]
fn the_status_half_reads_the_same_status_from_the_cut_decision() {
    // 40 members: ten carry no env label (rejected), the rest rank by CPU.
    let candidates: Vec<placement::Candidate> = (0..40)
        .map(|i| {
            let mut candidate = placement::Candidate::new(format!("m{i:02}"));
            if i % 4 != 0 {
                candidate.labels.insert("env".into(), "prod".into());
            }
            candidate
        })
        .collect();
    let status_of = |wanted: u32| {
        let crp = json!({"metadata": {"name": "web", "generation": 2}, "spec": {"policy": {
            "placementType": "PickN", "numberOfClusters": wanted, "affinity": {"clusterAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
                    {"labelSelector": {"matchLabels": {"env": "prod"}}}]}}}}}});
        let policy = super::super::policy::policy("web", crp.pointer("/spec/policy")).expect("policy");
        let state = placement::State {
            now: "2026-01-01T00:10:00Z".parse().unwrap(),
            current: Vec::new(),
            other_decisions: Default::default(),
            reconsider: false,
            settled: Vec::new(),
        };
        let full = placement::decide(&placement::Profile::fleet(), &policy, &candidates, &state).expect("decision");
        let mut cut = full.clone();
        keep_for_status(&mut cut);
        let bound = |cluster: &String| {
            let binding = json!({"metadata": {"generation": 1}, "spec": {"state": "Bound",
                "resourceSnapshotName": "web-0-snapshot", "targetCluster": cluster}});
            (cluster.clone(), binding, Vec::new())
        };
        let clusters: Vec<(String, Value, Vec<Value>)> = full.desired.iter().map(bound).collect();
        let status = |decision: &placement::Decision| placement_status(&crp, decision, &clusters, &[], "0", &[], None);
        (full.clusters.len(), cut.clusters.len(), status(&full), status(&cut))
    };
    // Satisfied: the picked clusters' reports and the five rejected ones are left.
    let (all, kept, full, cut) = status_of(3);
    assert_eq!((all, kept), (40, 3 + 5));
    assert_eq!(full, cut);
    // Short of 5 (35 wanted, 30 qualify): every short entry and blocking message is the same.
    let (all, kept, full, cut) = status_of(35);
    assert_eq!((all, kept), (40, 30 + 5));
    assert_eq!(full, cut);
    let short = full["placementStatuses"].as_array().unwrap().iter().filter(|s| s.get("clusterName").is_none());
    assert_eq!(short.count(), 5, "{full}");
}

#[test]
fn one_condition_changes_and_the_rest_of_the_status_stays() {
    let placed = json!({"status": {
        "conditions": [
            {"type": "ClusterResourcePlacementScheduled", "status": "True"},
            {"type": "ClusterResourcePlacementAvailable", "status": "True"},
        ],
        "placementStatuses": [{"clusterName": "m1"}],
        "selectedResources": [{"kind": "Namespace", "name": "app"}],
    }});
    let failed = condition("ClusterResourcePlacementScheduled", false, "InvalidResourceSelectors", "bad".into(), 3);
    let status = with_condition(&placed, failed.clone());
    assert_eq!(status["conditions"], json!([failed, {"type": "ClusterResourcePlacementAvailable", "status": "True"}]));
    assert_eq!(status["placementStatuses"], placed["status"]["placementStatuses"], "where it is placed stays");
    assert_eq!(status["selectedResources"], placed["status"]["selectedResources"]);
    // A placement without a status gets just the condition.
    assert_eq!(with_condition(&json!({}), failed.clone()), json!({"conditions": [failed]}));
}
