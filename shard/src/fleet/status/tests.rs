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

/// What the hub writes from one decision: the placement's status, and the policy
/// snapshot's targets and Scheduled condition.
fn written_from(crp: &Value, decision: &placement::Decision, clusters: &[(String, Value, Vec<Value>)]) -> Vec<Value> {
    let placement = placement_status(crp, decision, clusters, &[], "0", &[], None);
    let snapshot =
        json!({"targetClusters": snapshot_targets(decision), "scheduled": scheduled("Scheduled", decision, 1)});
    vec![placement, snapshot]
}

/// The first half decides with only the reports the hub reads (`reports_read`), and after
/// the rollout cuts the decision to what the status half reads (`keep_for_status`): the
/// placement's status and the policy snapshot's are the same as from a decision with a
/// report per member, satisfied or short, with few or many rejected clusters, with current
/// decisions among them.
#[test]
fn the_status_half_reads_the_same_status_from_the_cut_decision() {
    use placement::pace::{self, Moves, Pacing};
    /// (case, members, which qualify (the others carry no env label and are rejected),
    /// numberOfClusters, current decisions, reports in the full / bounded / cut decision)
    type Case = (&'static str, usize, fn(usize) -> bool, u32, &'static [&'static str], [usize; 3]);
    let cases: [Case; 4] = [
        // The picked, 20 of the 27 not picked, all 10 rejected; cut: the picked and 5 rejected.
        ("satisfied", 40, |i| i % 4 != 0, 3, &[], [40, 33, 3 + 5]),
        // 35 wanted, 30 qualify: short of 5, every report is read.
        ("short", 40, |i| i % 4 != 0, 35, &[], [40, 40, 30 + 5]),
        // m05 stays (sticky), m01 no longer qualifies: 3 picked, m01 (current), all 17 not
        // picked, 20 of the other 79 rejected; cut: the picked and 5 rejected.
        ("satisfied, many rejected", 100, |i| i % 5 == 0, 3, &["m01", "m05"], [100, 41, 3 + 5]),
        // 25 wanted, 20 qualify: the 20, m01 (current) and 25 of the other 79 rejected; cut:
        // the 20 picked and 5 rejected, as many as the policy is short of.
        ("short, many rejected", 100, |i| i % 5 == 0, 25, &["m01"], [100, 46, 20 + 5]),
    ];
    for (case, members, qualifies, wanted, current, counts) in cases {
        let candidates: Vec<placement::Candidate> = (0..members)
            .map(|i| {
                let mut candidate = placement::Candidate::new(format!("m{i:02}"));
                if qualifies(i) {
                    candidate.labels.insert("env".into(), "prod".into());
                }
                candidate
            })
            .collect();
        let crp = json!({"metadata": {"name": "web", "generation": 2}, "spec": {"policy": {
            "placementType": "PickN", "numberOfClusters": wanted, "affinity": {"clusterAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
                    {"labelSelector": {"matchLabels": {"env": "prod"}}}]}}}}}});
        let policy = super::super::policy::policy("web", crp.pointer("/spec/policy")).expect("policy");
        let state = placement::State {
            now: "2026-01-01T00:10:00Z".parse().unwrap(),
            current: current.iter().map(|c| c.to_string()).collect(),
            other_decisions: Default::default(),
            reconsider: false,
            settled: Vec::new(),
        };
        let profile = placement::Profile::fleet();
        let (pacing, moves) = (Pacing::none(), Moves(Vec::new()));
        let full = pace::decide(&profile, &policy, &candidates, &state, &pacing, &moves).expect("decision").decision;
        let reports = reports_read(&policy);
        let bounded = pace::decide_reporting(&profile, &policy, &candidates, &state, &pacing, &moves, reports);
        let bounded = bounded.expect("decision").decision;
        let mut cut_full = full.clone();
        cut_full.keep_reports(reports, &state.current);
        assert_eq!(bounded, cut_full, "{case}: the bounded decision is the full one cut");
        let (mut cut, mut cut_bounded) = (full.clone(), bounded.clone());
        keep_for_status(&mut cut);
        keep_for_status(&mut cut_bounded);
        assert_eq!(cut, cut_bounded, "{case}: the first half leaves the same decision");
        assert_eq!([full.clusters.len(), bounded.clusters.len(), cut.clusters.len()], counts, "{case}");
        let bound = |cluster: &String| {
            let binding = json!({"metadata": {"generation": 1}, "spec": {"state": "Bound",
                "resourceSnapshotName": "web-0-snapshot", "targetCluster": cluster}});
            (cluster.clone(), binding, Vec::new())
        };
        let clusters: Vec<(String, Value, Vec<Value>)> = full.desired.iter().map(bound).collect();
        let written = written_from(&crp, &full, &clusters);
        assert_eq!(written, written_from(&crp, &bounded, &clusters), "{case}: from the bounded decision");
        assert_eq!(written[0], written_from(&crp, &cut, &clusters)[0], "{case}: from the cut decision");
        let targets = written[1]["targetClusters"].as_array().unwrap();
        let others = targets.len() - full.desired.len();
        assert_eq!(others, SNAPSHOT_OTHERS_SHOWN.min(members - full.desired.len()), "{case}");
        let statuses = written[0]["placementStatuses"].as_array().unwrap();
        let short = statuses.iter().filter(|s| s.get("clusterName").is_none()).count();
        assert_eq!(short, full.unsatisfied, "{case}: {}", written[0]);
    }
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
