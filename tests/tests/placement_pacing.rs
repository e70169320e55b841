//! Pacing of placement decisions, end to end through the front-proxy with stock kubectl
//! (Atoll's answer to OCM's score churn, ocm#1436, and to the stickiness Fleet and Karmada
//! users ask to relax, fleet#715 and karmada#5172):
//!
//! - OCM: an add-on score change moves a decision at once, the next one within the
//!   placement's damping interval is held, and the placement says so in a
//!   `PlacementChangesHeld` condition naming the swap; a rebalance request applies it.
//! - Fleet, with real member agents: a PickN placement that opts in to rescheduling moves
//!   to its preferred member when that member joins; when that member is tainted within
//!   the placement's interval the move away waits, and the placement says so in the same
//!   `PlacementChangesHeld` condition; a rebalance request makes it at once; the same
//!   placement without the opt-in stays where it was put.
//! - Fleet, a member whose agent is killed: placements keep what they have there (as
//!   KubeFleet documents), except one that opted in to rescheduling, which moves to a
//!   healthy member; one whose disruption budget allows no change holds and says so; when
//!   the agent is back, the move back waits for the placement's interval.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use tests::agent::{wait_json, AgentProcess};
use tests::installation::{Installation, InstallationOptions};
use tests::placement::{condition, decided, member_cluster, placed, yaml};

/// An installation with a front-proxy and one workspace acting as the hub; returns it and
/// the workspace's path.
async fn hub(extra_args: Vec<String>) -> (Installation, String) {
    let options = InstallationOptions { front_proxy: true, extra_args, ..InstallationOptions::default() };
    let installation = Installation::start_with(options).await.expect("start the installation");
    let placed = installation.place_workspaces("hub", 1, |p| p.values().any(|names| !names.is_empty())).await.unwrap();
    let hub = format!("root:{}", placed.values().flatten().next().unwrap());
    installation.proxy().wait_resolves(&hub).await.unwrap();
    (installation, hub)
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ocm_score_churn_is_damped_and_a_rebalance_applies_at_once() {
    let (installation, hub) = hub(Vec::new()).await;
    let proxy = installation.proxy();
    let kubectl = || proxy.kubectl().cluster(&hub);
    let clusters = ["a", "b", "c"];
    let mut manifests: Vec<Value> = clusters
        .iter()
        .map(|name| {
            json!({
                "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                "metadata": {"name": name, "labels": {"cluster.open-cluster-management.io/clusterset": "all"}},
                "spec": {"hubAcceptsClient": true},
            })
        })
        .collect();
    manifests.push(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
        "metadata": {"name": "all"},
    }));
    manifests.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}));
    manifests.push(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
        "metadata": {"name": "all", "namespace": "apps"}, "spec": {"clusterSet": "all"},
    }));
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&manifests)).ok();
    let set_score = |cluster: &str, value: i64| {
        let patch = json!({"status": {"scores": [{"name": "cpuRatio", "value": value}]}}).to_string();
        let args = ["patch", "addonplacementscore", "cpu-ratio", "-n", cluster, "--subresource=status", "--type=merge"];
        kubectl().args(args).args(["-p", &patch]).ok();
    };
    for (name, value) in [("a", 80), ("b", 50), ("c", 10)] {
        wait_json(kubectl, &["namespace", name], "the hub's namespace for the cluster", |ns| {
            ns["metadata"]["name"] == name
        });
        let score = json!({
            "apiVersion": "cluster.open-cluster-management.io/v1alpha1", "kind": "AddOnPlacementScore",
            "metadata": {"name": "cpu-ratio", "namespace": name},
        });
        kubectl().args(["create", "-f", "-"]).stdin(score.to_string()).ok();
        set_score(name, value);
        // The registration agent's report, played by kubectl as in ocm_placement.rs.
        let available = json!({"status": {"conditions": [{
            "type": "ManagedClusterConditionAvailable", "status": "True", "reason": "ManagedClusterAvailable",
            "message": "Managed cluster is available", "lastTransitionTime": "2026-01-01T00:00:00Z",
        }]}})
        .to_string();
        kubectl()
            .args(["patch", "managedcluster", name, "--subresource=status", "--type=merge", "-p", &available])
            .ok();
    }
    // One cluster by score; score changes may move it once an hour.
    let placement = json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": "by-cpu", "namespace": "apps",
            "annotations": {"placement.atoll.io/disruption-interval-seconds": "3600"}},
        "spec": {
            "numberOfClusters": 1,
            "prioritizerPolicy": {"mode": "Exact", "configurations": [
                {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "cpu-ratio", "scoreName": "cpuRatio"}}, "weight": 1},
            ]},
        },
    });
    kubectl().args(["create", "-f", "-"]).stdin(placement.to_string()).ok();
    let decisions = ["placementdecisions", "-n", "apps", "-l", "cluster.open-cluster-management.io/placement=by-cpu"];
    let first = wait_json(kubectl, &decisions, "the first decision", |list| decided(list).len() == 1);
    assert_eq!(decided(&first), set(&["a"]));

    // The first score change moves the decision at once, and the move is remembered.
    set_score("b", 95);
    wait_json(kubectl, &decisions, "the decision moved to b", |list| decided(list) == set(&["b"]));
    let placement_args = ["placement.cluster.open-cluster-management.io", "by-cpu", "-n", "apps"];
    wait_json(kubectl, &placement_args, "the move recorded", |p| {
        p["metadata"]["annotations"]["placement.atoll.io/moves"].as_str().is_some_and(|m| m.ends_with("=1"))
    });

    // The next one within the interval is held, and the placement says which and why.
    set_score("c", 99);
    let held = wait_json(kubectl, &placement_args, "the held change reported", |p| {
        condition(p, "PlacementChangesHeld").is_some_and(|c| c["status"] == "True")
    });
    let reported = condition(&held, "PlacementChangesHeld").unwrap();
    assert_eq!(reported["reason"], "ScoreChangeDamped", "{reported}");
    assert!(reported["message"].as_str().unwrap().contains("b -> c"), "{reported}");
    let still = kubectl().args(["get"]).args(decisions).args(["-o", "json"]).ok().json().unwrap();
    assert_eq!(decided(&still), set(&["b"]), "a held change is not applied");
    assert_eq!(condition(&held, "PlacementSatisfied").unwrap()["status"], "True");

    // A rebalance request applies it at once, once.
    kubectl().args(["annotate"]).args(placement_args).arg("placement.atoll.io/rebalance=first").ok();
    wait_json(kubectl, &decisions, "the rebalanced decision", |list| decided(list) == set(&["c"]));
    wait_json(kubectl, &placement_args, "the rebalance recorded", |p| {
        p["metadata"]["annotations"]["placement.atoll.io/rebalanced"] == "first"
            && condition(p, "PlacementChangesHeld").is_none()
    });
}

fn crp(name: &str, annotations: Value) -> Value {
    json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": name}],
            "policy": {"placementType": "PickN", "numberOfClusters": 1, "affinity": {"clusterAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "preference": {
                    "labelSelector": {"matchLabels": {"tier": "gold"}}}}],
            }}},
        },
    })
}

/// The member clusters `bronze` and `gold`, logical clusters of one member shard, and how to
/// start the Fleet agent of one of them against the hub (heartbeat every second).
struct Members {
    shard: tests::ShardProcess,
    logs: tempfile::TempDir,
    hub_config: std::path::PathBuf,
}

impl Members {
    async fn start(installation: &Installation, hub: &str) -> Members {
        let shard = tests::ShardProcess::with_clusters(&["bronze", "gold"]).await;
        let identity = installation.user_identity("fleet-agent", &["system:masters"]).unwrap();
        let hub_config = installation.proxy().user_kubeconfig("fleet-agent", &identity, hub).unwrap();
        Members { shard, logs: tempfile::tempdir().unwrap(), hub_config }
    }

    fn agent(&self, name: &str) -> AgentProcess {
        let config = self.shard.user_kubeconfig(&format!("admin-{name}"), &["system:masters"], name).unwrap();
        let log = self.logs.path().join(format!("{name}.log"));
        let args = ["--heartbeat-interval-seconds", "1"];
        AgentProcess::start_member_cluster(&self.hub_config, name, &config, &args, &log).unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_rescheduling_moves_to_a_recovered_member_and_off_a_tainted_one_only_when_opted_in() {
    let (installation, hub) = hub(Vec::new()).await;
    let proxy = installation.proxy();
    let kubectl = || proxy.kubectl().cluster(&hub);
    let fleet = Members::start(&installation, &hub).await;
    let (member, start_agent) = (&fleet.shard, |name: &str| fleet.agent(name));
    let joined = |name: &str| {
        wait_json(kubectl, &["membercluster", name], "joined by its agent", |m| {
            condition(m, "Joined").is_some_and(|c| c["status"] == "True")
        });
    };

    // Only bronze is in the fleet when both placements are made: both pick it.
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[member_cluster("bronze", json!({"tier": "bronze"}))])).ok();
    let _bronze = start_agent("bronze");
    joined("bronze");
    let namespaces: Vec<Value> = ["sticky", "mobile"]
        .iter()
        .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}))
        .collect();
    let mobile =
        json!({"placement.atoll.io/rescheduling": "Enabled", "placement.atoll.io/disruption-interval-seconds": "3600"});
    let placements = [crp("sticky", json!({})), crp("mobile", mobile)];
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&namespaces)).ok();
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&placements)).ok();
    let bindings = ["clusterresourcebindings"];
    wait_json(kubectl, &bindings, "both placed on bronze", |b| {
        placed(b, "sticky") == set(&["bronze"]) && placed(b, "mobile") == set(&["bronze"])
    });

    // The preferred member joins: only the placement that opted in moves to it.
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[member_cluster("gold", json!({"tier": "gold"}))])).ok();
    let _gold = start_agent("gold");
    joined("gold");
    let moved = wait_json(kubectl, &bindings, "mobile moved to gold", |b| placed(b, "mobile") == set(&["gold"]));
    assert_eq!(placed(&moved, "sticky"), set(&["bronze"]), "a placement that did not opt in stays");
    // The workload follows: the namespace reaches gold's cluster.
    let gold_config = member.user_kubeconfig("admin-gold-check", &["system:masters"], "gold").unwrap();
    wait_json(
        || member.kubectl_with(&gold_config),
        &["namespace", "mobile"],
        "mobile applied on gold",
        |ns| ns["metadata"]["name"] == "mobile",
    );

    // gold is tainted NoSchedule: Fleet keeps what is there. The opted-in placement would
    // leave, but it moved less than its hour ago: the move waits. A rebalance request
    // makes it at once, and is marked carried out.
    let taint = json!({"spec": {"taints": [{"key": "maintenance", "value": "planned", "effect": "NoSchedule"}]}});
    kubectl().args(["patch", "membercluster", "gold", "--type=merge", "-p", &taint.to_string()]).ok();
    wait_json(kubectl, &["clusterresourceplacement", "mobile"], "the first move recorded", |p| {
        p["metadata"]["annotations"]["placement.atoll.io/moves"].as_str().is_some_and(|m| m.ends_with("=1"))
    });
    let held = wait_json(kubectl, &["clusterresourceplacement", "mobile"], "the held move reported", |p| {
        condition(p, "PlacementChangesHeld").is_some_and(|c| c["status"] == "True")
    });
    // Held by the interval, wanted because gold no longer qualifies: no score moved.
    let reported = condition(&held, "PlacementChangesHeld").unwrap();
    assert_eq!(reported["reason"], "ReschedulingDamped", "{reported}");
    let message = reported["message"].as_str().unwrap();
    assert!(
        message.contains("gold -> bronze (gold no longer qualifies: rejected by TaintToleration: taint maintenance"),
        "{reported}"
    );
    let still = kubectl().args(["get", "clusterresourcebindings", "-o", "json"]).ok().json().unwrap();
    assert_eq!(placed(&still, "mobile"), set(&["gold"]), "a held move is not made");
    kubectl().args(["annotate", "clusterresourceplacement", "mobile", "placement.atoll.io/rebalance=now"]).ok();
    wait_json(kubectl, &bindings, "mobile left the tainted member", |b| placed(b, "mobile") == set(&["bronze"]));
    wait_json(kubectl, &["clusterresourceplacement", "mobile"], "the rebalance recorded, nothing held", |p| {
        p["metadata"]["annotations"]["placement.atoll.io/rebalanced"] == "now"
            && condition(p, "PlacementChangesHeld").is_none()
    });
    let sticky = kubectl().args(["get", "clusterresourcebindings", "-o", "json"]).ok().json().unwrap();
    assert_eq!(placed(&sticky, "sticky"), set(&["bronze"]));
    let sticky = kubectl().args(["get", "clusterresourceplacement", "sticky", "-o", "json"]).ok().json().unwrap();
    assert!(condition(&sticky, "PlacementChangesHeld").is_none(), "a sticky placement holds nothing: {sticky}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_rescheduling_moves_off_a_silent_member_within_the_budget_and_waits_to_move_back() {
    let (installation, hub) = hub(vec!["--fleet-heartbeat-timeout-seconds".into(), "5".into()]).await;
    let proxy = installation.proxy();
    let kubectl = || proxy.kubectl().cluster(&hub);
    let fleet = Members::start(&installation, &hub).await;
    let (member, start_agent) = (&fleet.shard, |name: &str| fleet.agent(name));
    let members =
        [member_cluster("bronze", json!({"tier": "bronze"})), member_cluster("gold", json!({"tier": "gold"}))];
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&members)).ok();
    let _bronze = start_agent("bronze");
    let mut gold = start_agent("gold");
    for name in ["bronze", "gold"] {
        wait_json(kubectl, &["membercluster", name], "joined by its agent", |m| {
            condition(m, "Joined").is_some_and(|c| c["status"] == "True")
        });
    }
    // Three placements prefer gold: one sticky (Fleet's default), one that opted in to
    // rescheduling with an hour's interval, one that opted in with a budget of no change.
    let placements = ["sticky", "mobile", "frozen"];
    let namespaces: Vec<Value> =
        placements.iter().map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}})).collect();
    let hour = "3600";
    let mobile =
        json!({"placement.atoll.io/rescheduling": "Enabled", "placement.atoll.io/disruption-interval-seconds": hour});
    let frozen = json!({"placement.atoll.io/rescheduling": "Enabled", "placement.atoll.io/disruption-interval-seconds": hour,
        "placement.atoll.io/disruption-budget": "0"});
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&namespaces)).ok();
    let crps = [crp("sticky", json!({})), crp("mobile", mobile), crp("frozen", frozen)];
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&crps)).ok();
    let bindings = ["clusterresourcebindings"];
    wait_json(kubectl, &bindings, "all three placed on gold", |b| {
        placements.iter().all(|p| placed(b, p) == set(&["gold"]))
    });

    // gold's agent dies: after the heartbeat timeout only the placement that opted in
    // (and may move) leaves it, for the healthy member, and its workload follows.
    gold.kill9();
    let moved = wait_json(kubectl, &bindings, "mobile moved off the silent member", |b| {
        placed(b, "mobile") == set(&["bronze"])
    });
    let bronze_config = member.user_kubeconfig("admin-bronze-check", &["system:masters"], "bronze").unwrap();
    wait_json(
        || member.kubectl_with(&bronze_config),
        &["namespace", "mobile"],
        "mobile applied on bronze",
        |ns| ns["metadata"]["name"] == "mobile",
    );
    let held = wait_json(kubectl, &["clusterresourceplacement", "frozen"], "frozen's held move reported", |p| {
        condition(p, "PlacementChangesHeld").is_some_and(|c| c["status"] == "True")
    });
    let reported = condition(&held, "PlacementChangesHeld").unwrap();
    assert_eq!(reported["reason"], "DisruptionBudgetExhausted", "{reported}");
    let message = reported["message"].as_str().unwrap();
    assert!(
        message.contains("gold -> bronze (gold no longer qualifies: rejected by Schedulable: unschedulable"),
        "{reported}"
    );
    let now = kubectl().args(["get", "clusterresourcebindings", "-o", "json"]).ok().json().unwrap();
    assert_eq!(placed(&now, "frozen"), set(&["gold"]), "a budget of no change holds the move");
    assert_eq!(placed(&now, "sticky"), set(&["gold"]), "a sticky placement keeps the silent member");
    assert_eq!(placed(&moved, "sticky"), set(&["gold"]));
    let sticky = kubectl().args(["get", "clusterresourceplacement", "sticky", "-o", "json"]).ok().json().unwrap();
    assert!(condition(&sticky, "PlacementChangesHeld").is_none(), "{sticky}");

    // gold's agent is back: mobile would rather be on gold again, but it moved less than
    // its hour ago, so the move back waits and is reported; frozen holds nothing now.
    gold.restart().unwrap();
    let back = wait_json(kubectl, &["clusterresourceplacement", "mobile"], "the move back held", |p| {
        condition(p, "PlacementChangesHeld")
            .is_some_and(|c| c["message"].as_str().unwrap_or_default().contains("bronze -> gold"))
    });
    let reported = condition(&back, "PlacementChangesHeld").unwrap();
    assert_eq!(reported["reason"], "ScoreChangeDamped", "{reported}");
    assert!(reported["message"].as_str().unwrap().contains("bronze -> gold (gold ranks higher)"), "{reported}");
    wait_json(kubectl, &["clusterresourceplacement", "frozen"], "frozen holds nothing once gold is back", |p| {
        condition(p, "PlacementChangesHeld").is_none()
    });
    let now = kubectl().args(["get", "clusterresourcebindings", "-o", "json"]).ok().json().unwrap();
    assert_eq!(placed(&now, "mobile"), set(&["bronze"]), "the move back waits for the interval");
    assert_eq!(placed(&now, "frozen"), set(&["gold"]));
}
