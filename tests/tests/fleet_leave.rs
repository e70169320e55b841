//! A Fleet hub's placements when something goes wrong, through the front-proxy with stock
//! kubectl and real member agents applying into logical clusters of a member installation:
//!
//! - a rolling update that one member cannot apply (an override makes one object invalid
//!   there) stops, and the placement's RolloutStarted says RolloutBlocked naming that
//!   member and why, unlike a rollout still converging; removing the cause lets it finish;
//! - the placement records KubeFleet's events (PlacementRolloutStarted … PlacementAvailable,
//!   PlacementRolloutCompleted) and a warning for the blocked rollout, once per change;
//! - deleting a MemberCluster whose agent is alive runs KubeFleet's leave flow: the agent
//!   removes what it applied and reports Left, the hub deletes the member's namespace and
//!   lets the MemberCluster go, and a PickN placement picks another member;
//! - deleting a MemberCluster whose agent was killed (kill -9) ends after the hub's
//!   force-delete wait: its Works' finalizers, its namespace and the MemberCluster go,
//!   and what the dead agent applied stays on the member, as in KubeFleet;
//! - each member's joining and leaving is told in Events on the MemberCluster, once per
//!   step: KubeFleet's MemberClusterJoined and MemberClusterLeft, the hub's leave steps,
//!   and a warning when a dead agent's member was let go by force.

use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use tests::agent::wait_json;
use tests::fleet_members::{hub_workspace, FleetMembers};
use tests::installation::InstallationOptions;
use tests::placement::{condition, is_true, placed, yaml};

const MEMBERS: [&str; 3] = ["m1", "m2", "m3"];

/// The Events about MemberCluster `member` (in the hub's `default` namespace): reason →
/// (type, count, message), at most one Event per reason.
fn member_events(kubectl: impl Fn() -> tests::Kubectl, member: &str) -> BTreeMap<String, (String, u64, String)> {
    let events = kubectl().args(["get", "events", "-n", "default", "-o", "json"]).ok().json().unwrap();
    let mut found = BTreeMap::new();
    let about = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["involvedObject"]["kind"] == "MemberCluster" && e["involvedObject"]["name"] == member);
    for event in about {
        let text = |field: &str| event[field].as_str().unwrap_or_default().to_string();
        let entry = (text("type"), event["count"].as_u64().unwrap_or(0), text("message"));
        assert!(found.insert(text("reason"), entry).is_none(), "one Event per reason: {event}");
    }
    found
}

/// Waits until `done` holds, polling.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !done() {
        assert!(Instant::now() < deadline, "{what} did not happen");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_says_what_blocks_a_rollout_and_members_leave_alive_or_dead() {
    let options = InstallationOptions {
        // Long enough that a live agent on a loaded 2-core machine leaves before it (the
        // leaving member must never be forced), short enough for the dead one.
        extra_args: vec!["--fleet-force-delete-wait-seconds".into(), "15".into()],
        ..InstallationOptions::default()
    };
    let (installation, hub) = hub_workspace(options).await;
    let proxy = installation.proxy();
    let kubectl = || proxy.kubectl().cluster(&hub);

    let labelled: Vec<(&str, Value)> = MEMBERS.iter().map(|n| (*n, json!({"member": n}))).collect();
    let mut fleet = FleetMembers::join(&installation, &hub, &labelled).await;
    let in_member = |name: &str| fleet.shard.kubectl_with(&fleet.configs[name]);
    for name in MEMBERS {
        let joined = wait_json(kubectl, &["membercluster", name], "joined by its agent", |m| is_true(m, "Joined"));
        assert!(
            joined["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f == "kubernetes-fleet.io/membercluster-finalizer")),
            "the hub holds every member for its leave flow: {joined}"
        );
    }

    // A PickAll placement rolling one member at a time.
    let content = |version: &str| {
        let mut objects = vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "app"},
                "data": {"version": version}}),
        ];
        if version != "1" {
            objects.push(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "extra", "namespace": "app", "labels": {"app": "web"}}, "data": {"a": "b"}}));
        }
        objects
    };
    // On m1 only, the new ConfigMap gets a label value no API server accepts.
    let breaking = json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ResourceOverride",
        "metadata": {"name": "breaking", "namespace": "app"},
        "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "ConfigMap", "name": "extra"}],
            "policy": {"overrideRules": [{
                "clusterSelector": {"clusterSelectorTerms": [{"labelSelector": {"matchLabels": {"member": "m1"}}}]},
                "jsonPatchOverrides": [{"op": "add", "path": "/metadata/labels/broken", "value": "not a label value!"}],
            }]}},
    });
    let crp = json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "app"},
        "spec": {
            "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
            "policy": {"placementType": "PickAll"},
            "strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0, "unavailablePeriodSeconds": 1}},
        },
    });
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&content("1"))).ok();
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[breaking, crp])).ok();
    wait_json(kubectl, &["crp", "app"], "the placement available everywhere", |c| {
        is_true(c, "ClusterResourcePlacementAvailable")
    });

    // The update: m1 (first by binding name) moves, fails to apply, and holds the others
    // back for good. The placement says so, naming m1 and what its member refused.
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&content("2"))).ok();
    let blocked = wait_json(kubectl, &["crp", "app"], "the rollout reported blocked", |c| {
        condition(c, "ClusterResourcePlacementRolloutStarted").is_some_and(|r| r["reason"] == "RolloutBlocked")
    });
    let started = condition(&blocked, "ClusterResourcePlacementRolloutStarted").unwrap();
    assert_eq!(started["status"], "False", "{started}");
    let message = started["message"].as_str().unwrap();
    assert!(message.contains("\"m1\" failed to apply") && message.contains("extra"), "{message}");
    assert!(!message.contains("m2") && !message.contains("m3"), "only m1 blocks: {message}");
    for name in ["m2", "m3"] {
        let settings =
            in_member(name).args(["get", "configmap", "settings", "-n", "app", "-o", "json"]).ok().json().unwrap();
        assert_eq!(settings["data"]["version"], "1", "{name} is held back while m1 blocks");
    }
    // Without the override m1 applies, and the rollout goes on to the end.
    kubectl().args(["delete", "resourceoverride", "breaking", "-n", "app"]).ok();
    let done = wait_json(kubectl, &["crp", "app"], "the update available everywhere", |c| {
        is_true(c, "ClusterResourcePlacementAvailable") && c["status"]["observedResourceIndex"] != "0"
    });
    assert!(is_true(&done, "ClusterResourcePlacementRolloutStarted"), "{done}");
    for name in MEMBERS {
        let settings =
            in_member(name).args(["get", "configmap", "settings", "-n", "app", "-o", "json"]).ok().json().unwrap();
        assert_eq!(settings["data"]["version"], "2", "{name} ends on the update");
    }

    // KubeFleet's events on the placement, each once per change: the stages reached,
    // and a warning naming what blocked the rollout (kept once however many passes saw
    // it blocked).
    let events = kubectl().args(["get", "events", "-n", "default", "-o", "json"]).ok().json().unwrap();
    let about_app: Vec<&Value> = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["involvedObject"]["kind"] == "ClusterResourcePlacement" && e["involvedObject"]["name"] == "app")
        .collect();
    let reasons: BTreeSet<&str> = about_app.iter().filter_map(|e| e["reason"].as_str()).collect();
    for reason in ["PlacementRolloutStarted", "PlacementApplied", "PlacementAvailable", "PlacementRolloutCompleted"] {
        assert!(reasons.contains(reason), "{reason} missing: {reasons:?}");
    }
    let blocked_events: Vec<&&Value> = about_app.iter().filter(|e| e["reason"] == "PlacementRolloutBlocked").collect();
    assert_eq!(blocked_events.len(), 1, "{blocked_events:?}");
    assert_eq!(blocked_events[0]["type"], "Warning");
    assert_eq!(blocked_events[0]["count"], 1, "recorded on the change only: {}", blocked_events[0]);
    assert!(blocked_events[0]["message"].as_str().unwrap().contains("\"m1\" failed to apply"));

    // PickN 2 of 3: one picked member leaves with its agent alive.
    let pick = json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "two"},
        "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
            "policy": {"placementType": "PickN", "numberOfClusters": 2}},
    });
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[pick])).ok();
    let bindings = wait_json(kubectl, &["clusterresourcebindings"], "two picks two", |l| placed(l, "two").len() == 2);
    let picked = placed(&bindings, "two");
    let leaving = picked.iter().next().unwrap().clone();
    let spare = MEMBERS.iter().find(|m| !picked.contains(**m)).unwrap().to_string();
    kubectl().args(["delete", "membercluster", &leaving, "--wait=false"]).ok();
    wait_until("the leaving member's MemberCluster goes", || {
        kubectl().args(["get", "membercluster", &leaving]).run().stderr.contains("NotFound")
    });
    let namespace = format!("fleet-member-{leaving}");
    assert!(kubectl().args(["get", "namespace", &namespace]).run().stderr.contains("NotFound"), "{namespace} stays");
    assert!(
        in_member(&leaving).args(["get", "configmap", "settings", "-n", "app"]).run().stderr.contains("NotFound"),
        "the agent removed what it applied before it left"
    );
    assert!(fleet.agents[&leaving].log_tail(50).contains("left the fleet"), "{}", fleet.agents[&leaving].log_tail(50));
    let bindings = wait_json(kubectl, &["clusterresourcebindings"], "two re-picks", |l| {
        let now = placed(l, "two");
        now.len() == 2 && !now.contains(&leaving)
    });
    assert!(placed(&bindings, "two").contains(&spare), "the spare member replaces the one that left");
    // Its whole life in Events, each step told once.
    wait_until("the leaving member's release told", || {
        member_events(kubectl, &leaving).contains_key("MemberClusterReleased")
    });
    let told = member_events(kubectl, &leaving);
    for reason in ["MemberClusterJoined", "MemberClusterLeft", "MemberClusterNamespaceDeleted", "MemberClusterReleased"]
    {
        let (kind, count, _) = told.get(reason).unwrap_or_else(|| panic!("{reason} missing: {told:?}"));
        assert_eq!((kind.as_str(), *count), ("Normal", 1), "{reason}: {told:?}");
    }
    assert!(told["MemberClusterNamespaceDeleted"].2.contains(&namespace), "{told:?}");
    assert!(!told.contains_key("MemberClusterForceDeleted"), "its agent left: {told:?}");

    // The other members: one's agent dies, then its MemberCluster is deleted. After the
    // force-delete wait the hub lets it go; what the agent applied stays on the member.
    let dead = MEMBERS.iter().find(|m| **m != leaving).unwrap().to_string();
    fleet.agents.get_mut(&dead).unwrap().kill9();
    let works =
        kubectl().args(["get", "works", "-n", &format!("fleet-member-{dead}"), "-o", "json"]).ok().json().unwrap();
    let held = works["items"].as_array().unwrap().iter().filter(|w| w["metadata"]["finalizers"].is_array()).count();
    assert!(held > 0, "the dead agent held its Works: {works}");
    kubectl().args(["delete", "membercluster", &dead, "--wait=false"]).ok();
    wait_until("the dead member's MemberCluster goes after the force-delete wait", || {
        kubectl().args(["get", "membercluster", &dead]).run().stderr.contains("NotFound")
    });
    let namespace = format!("fleet-member-{dead}");
    assert!(kubectl().args(["get", "namespace", &namespace]).run().stderr.contains("NotFound"), "{namespace} stays");
    let settings =
        in_member(&dead).args(["get", "configmap", "settings", "-n", "app", "-o", "json"]).ok().json().unwrap();
    assert_eq!(settings["data"]["version"], "2", "nobody removes what a dead agent applied");
    // A member let go by force says so in a warning; its agent never said it left.
    wait_until("the dead member's release told", || {
        member_events(kubectl, &dead).contains_key("MemberClusterReleased")
    });
    let told = member_events(kubectl, &dead);
    let (kind, count, message) = told.get("MemberClusterForceDeleted").unwrap_or_else(|| panic!("{told:?}"));
    assert_eq!((kind.as_str(), *count), ("Warning", 1), "{told:?}");
    assert!(message.contains("within 15s") && message.contains("stays on the member"), "{message}");
    assert!(!told.contains_key("MemberClusterLeft") && !told.contains_key("MemberClusterNamespaceDeleted"), "{told:?}");
}
