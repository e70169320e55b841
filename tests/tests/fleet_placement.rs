//! Fleet placement in a workspace that acts as the hub, through the front-proxy with
//! stock kubectl and real member agents (`atoll-agent --member-cluster`) applying into
//! five logical clusters of a member installation:
//!
//! - the agents heartbeat their MemberClusters, which the hub reports Joined and gives
//!   their reserved namespaces `fleet-member-<name>`;
//! - a PickAll ClusterResourcePlacement of a namespace puts its objects on every member,
//!   with a ResourceOverride giving the canary member its own value, and reports every
//!   stage of KubeFleet's condition chain True;
//! - an envelope ConfigMap in the namespace reaches each member as a Work of its own
//!   (KubeFleet's name and labels), its Role applied by the agent and counted in the
//!   placement's availability; removed from the namespace, its Work and Role go;
//! - a change to the namespace's objects rolls out with `maxUnavailable: 1`: a watcher of
//!   the bindings never sees two clusters updating at once, and every member ends on the
//!   new value;
//! - PickN with preferred affinity picks the preferred members, scales up keeping them
//!   and down to the best-scored;
//! - the hub refuses, as KubeFleet's webhook does, a placement whose fields do not fit
//!   its type, a changed placement type and a removed toleration (422, naming the field);
//! - a member whose agent dies gets no new placement after the heartbeat timeout, keeps
//!   what it had, and is picked again once its agent is back.

use base64::Engine;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tests::agent::wait_json;
use tests::fleet_members::{hub_workspace, FleetMembers};
use tests::installation::InstallationOptions;
use tests::placement::{condition, is_true, placed, yaml};

const MEMBERS: [(&str, &str, &str); 5] = [
    ("m1", "east", "prod"),
    ("m2", "east", "prod"),
    ("m3", "west", "prod"),
    ("m4", "west", "prod"),
    ("m5", "west", "canary"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_places_rolls_out_scales_and_survives_a_silent_member() {
    let options = InstallationOptions {
        extra_args: vec!["--fleet-heartbeat-timeout-seconds".into(), "4".into()],
        ..InstallationOptions::default()
    };
    let (installation, hub) = hub_workspace(options).await;
    let proxy = installation.proxy();
    let kubectl = || proxy.kubectl().cluster(&hub);

    // Five members: logical clusters of a second installation, one agent each.
    let names: Vec<&str> = MEMBERS.iter().map(|(n, _, _)| *n).collect();
    let labelled: Vec<(&str, Value)> = MEMBERS.iter().map(|(n, r, e)| (*n, json!({"region": r, "env": e}))).collect();
    let mut fleet = FleetMembers::join(&installation, &hub, &labelled).await;
    let in_member = |name: &str| fleet.shard.kubectl_with(&fleet.configs[name]);
    for name in &names {
        wait_json(kubectl, &["membercluster", name], "joined by its agent", |m| is_true(m, "Joined"));
        wait_json(kubectl, &["namespace", &format!("fleet-member-{name}")], "the member's namespace", |ns| {
            ns["metadata"]["labels"]["kubernetes-fleet.io/is-fleet-resource"] == "true"
        });
    }
    let listed = kubectl().args(["get", "memberclusters"]).ok();
    assert!(listed.stdout.contains("JOINED") && listed.stdout.contains("MEMBER-AGENT-LAST-SEEN"), "{}", listed.stdout);

    // What is placed: a namespace with a ConfigMap and a PodTemplate (a kind whose
    // availability members cannot track, so each update waits unavailablePeriodSeconds).
    // An update changes the ConfigMap only: each object kubectl changes makes a snapshot.
    let content = |version: &str| {
        vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "app"},
                "data": {"where": "hub", "version": version}}),
            json!({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "web", "namespace": "app"},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "web:1"}]}}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wrapper", "namespace": "app",
                "annotations": {"kubernetes-fleet.io/envelope-configmap": "true"}},
                "data": {"role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: wrapped\nrules:\n- apiGroups: [\"\"]\n  resources: [\"configmaps\"]\n  verbs: [\"get\"]\n"}}),
        ]
    };
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&content("1"))).ok();
    let override_ = json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ResourceOverride",
        "metadata": {"name": "canary", "namespace": "app"},
        "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "ConfigMap", "name": "settings"}],
            "policy": {"overrideRules": [{
                "clusterSelector": {"clusterSelectorTerms": [{"labelSelector": {"matchLabels": {"env": "canary"}}}]},
                "jsonPatchOverrides": [{"op": "replace", "path": "/data/where", "value": "${MEMBER-CLUSTER-NAME}"}],
            }]}},
    });
    let crp = json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "app"},
        "spec": {
            "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
            "policy": {"placementType": "PickAll"},
            "strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0, "unavailablePeriodSeconds": 2}},
        },
    });
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[override_, crp])).ok();
    let available = wait_json(kubectl, &["crp", "app"], "the placement available everywhere", |c| {
        is_true(c, "ClusterResourcePlacementAvailable")
    });
    for kind in ["Scheduled", "RolloutStarted", "Overridden", "WorkSynchronized", "Applied", "Available"] {
        let placement_kind = format!("ClusterResourcePlacement{kind}");
        assert!(is_true(&available, &placement_kind), "{placement_kind}: {available}");
    }
    assert_eq!(
        condition(&available, "ClusterResourcePlacementScheduled").unwrap()["reason"],
        "SchedulingPolicyFulfilled"
    );
    assert_eq!(condition(&available, "ClusterResourcePlacementOverridden").unwrap()["reason"], "OverriddenSucceeded");
    assert_eq!(available["status"]["placementStatuses"].as_array().map(Vec::len), Some(5), "{available}");
    let selected = available["status"]["selectedResources"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&str> = selected.iter().filter_map(|r| r["kind"].as_str()).collect();
    assert_eq!(kinds, ["Namespace", "ConfigMap", "ConfigMap", "PodTemplate"], "KubeFleet's order");
    // The envelope: a Work of its own per member, named and labelled as KubeFleet's work
    // generator does; what it carries is on the member, the envelope itself is not. Both
    // Works belong to the member's binding, so they go when it goes.
    let bindings = kubectl().args(["get", "clusterresourcebindings", "-o", "json"]).ok().json().unwrap();
    let bindings = bindings["items"].as_array().cloned().unwrap_or_default();
    for name in &names {
        let namespace = format!("fleet-member-{name}");
        let works = kubectl().args(["get", "works", "-n", &namespace, "-o", "json"]).ok().json().unwrap();
        let works = works["items"].as_array().cloned().unwrap_or_default();
        let names_of: Vec<&str> = works.iter().filter_map(|w| w["metadata"]["name"].as_str()).collect();
        assert_eq!(works.len(), 2, "{name}: the main Work and the envelope's: {names_of:?}");
        let binding = bindings
            .iter()
            .find(|b| {
                b["metadata"]["labels"]["kubernetes-fleet.io/parent-CRP"] == "app"
                    && b["spec"]["targetCluster"] == *name
            })
            .unwrap_or_else(|| panic!("{name} has a binding of app"));
        for work in &works {
            let owner = &work["metadata"]["ownerReferences"][0];
            assert_eq!(owner["kind"], "ClusterResourceBinding", "{work}");
            assert_eq!(owner["uid"], binding["metadata"]["uid"], "{name}: owned by its binding: {work}");
        }
        let envelope = works.iter().find(|w| w["metadata"]["name"] != "app-work").unwrap();
        let labels = &envelope["metadata"]["labels"];
        assert!(envelope["metadata"]["name"].as_str().unwrap().starts_with("app-work-configmap-"), "{envelope}");
        assert_eq!(labels["kubernetes-fleet.io/envelope-work"], "configmap", "{envelope}");
        assert_eq!(labels["kubernetes-fleet.io/envelope-name"], "wrapper", "{envelope}");
        assert_eq!(labels["kubernetes-fleet.io/envelope-namespace"], "app", "{envelope}");
        assert_eq!(labels["kubernetes-fleet.io/parent-CRP"], "app", "{envelope}");
        let manifests = envelope["spec"]["workload"]["manifests"].as_array().cloned().unwrap_or_default();
        let kinds: Vec<&str> = manifests.iter().filter_map(|m| m["kind"].as_str()).collect();
        assert_eq!(kinds, ["Role"], "{envelope}");
        assert!(is_true(envelope, "Available"), "{name}: the envelope's Work is available: {envelope}");
        let main = works.iter().find(|w| w["metadata"]["name"] == "app-work").unwrap();
        let main_names: Vec<&str> = main["spec"]["workload"]["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["metadata"]["name"].as_str())
            .collect();
        assert!(!main_names.contains(&"wrapper") && !main_names.contains(&"wrapped"), "{main_names:?}");
        let role = in_member(name).args(["get", "role", "wrapped", "-n", "app", "-o", "json"]).ok().json().unwrap();
        assert_eq!(role["rules"][0]["verbs"][0], "get", "{name}: {role}");
        assert!(!in_member(name).args(["get", "configmap", "wrapper", "-n", "app"]).run().success(), "{name}");
    }
    for name in &names {
        let settings =
            in_member(name).args(["get", "configmap", "settings", "-n", "app", "-o", "json"]).ok().json().unwrap();
        let expected = if *name == "m5" { "m5" } else { "hub" };
        assert_eq!(settings["data"]["where"], expected, "{name}: {settings}");
        assert_eq!(settings["data"]["version"], "1");
    }
    let shown = kubectl().args(["get", "crp"]).ok();
    assert!(shown.stdout.contains("SCHEDULED") && shown.stdout.contains("app"), "{}", shown.stdout);
    let snapshots = kubectl().args(["get", "clusterresourcesnapshots", "-o", "json"]).ok().json().unwrap();
    let latest: Vec<&Value> = snapshots["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["metadata"]["labels"]["kubernetes-fleet.io/is-latest-snapshot"] == "true")
        .collect();
    assert_eq!(latest.len(), 1);
    assert_eq!(latest[0]["metadata"]["name"], "app-0-snapshot");
    let policy = kubectl().args(["get", "csps", "app-0", "-o", "json"]).ok().json().unwrap();
    assert!(is_true(&policy, "Scheduled"), "{policy}");
    // KubeFleet's policyHash: bytes (base64 in JSON) of the hex SHA-256 of the policy's JSON.
    let hash = policy["spec"]["policyHash"].as_str().unwrap_or_default();
    let hex = base64::engine::general_purpose::STANDARD.decode(hash).expect("policyHash is base64");
    assert_eq!(hex.len(), 64, "{policy}");
    assert!(hex.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b)), "{policy}");

    // A rolling update. A watch of the bindings sees every change in commit order; each
    // time a binding moves to the new snapshot, every other binding already moved must be
    // available again (maxUnavailable 1). A cluster whose availability cannot be tracked
    // counts as unavailable for unavailablePeriodSeconds after it was applied (and may be
    // moved at once, as KubeFleet does): let that period pass first, so all five start
    // available.
    std::thread::sleep(Duration::from_secs(3));
    let client = proxy.kube_client(&hub).await.unwrap();
    let bindings_api: Api<DynamicObject> = Api::all_with(
        client,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("placement.kubernetes-fleet.io", "v1", "ClusterResourceBinding"),
            "clusterresourcebindings",
        ),
    );
    let watching = tokio::spawn(async move {
        let mut state: BTreeMap<String, (String, bool)> = BTreeMap::new();
        let mut moves = Vec::new();
        let mut stream = watcher::watcher(bindings_api, watcher::Config::default()).boxed();
        while let Some(event) = stream.next().await {
            let object = match event {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => serde_json::to_value(o).unwrap(),
                _ => continue,
            };
            if object["metadata"]["labels"]["kubernetes-fleet.io/parent-CRP"] != "app" {
                continue;
            }
            let cluster = object["spec"]["targetCluster"].as_str().unwrap_or_default().to_string();
            let snapshot = object["spec"]["resourceSnapshotName"].as_str().unwrap_or_default().to_string();
            let available = condition(&object, "Available")
                .is_some_and(|c| c["status"] == "True" && c["observedGeneration"] == object["metadata"]["generation"]);
            let before = state.insert(cluster.clone(), (snapshot.clone(), available));
            if snapshot == "app-1-snapshot" && before.is_some_and(|(s, _)| s != snapshot) {
                let unavailable: Vec<String> = state
                    .iter()
                    .filter(|(c, (s, ok))| **c != cluster && s == "app-1-snapshot" && !ok)
                    .map(|(c, _)| c.clone())
                    .collect();
                moves.push((cluster, unavailable));
            }
            if moves.len() == 5 && state.values().all(|(s, ok)| s == "app-1-snapshot" && *ok) {
                return moves;
            }
        }
        moves
    });
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&content("2"))).ok();
    for name in &names {
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        loop {
            let out = in_member(name).args(["get", "configmap", "settings", "-n", "app", "-o", "json"]).run();
            if out.json().is_ok_and(|c| c["data"]["version"] == "2") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{name} never got version 2");
            std::thread::sleep(Duration::from_millis(250));
        }
    }
    wait_json(kubectl, &["crp", "app"], "the update available everywhere", |c| {
        is_true(c, "ClusterResourcePlacementAvailable") && c["status"]["observedResourceIndex"] == "1"
    });
    let moves = tokio::time::timeout(Duration::from_secs(60), watching).await.expect("the watch saw all five").unwrap();
    assert_eq!(moves.len(), 5, "each cluster moved once: {moves:?}");
    for (cluster, unavailable) in &moves {
        assert!(unavailable.is_empty(), "{cluster} moved while {unavailable:?} were not available again");
    }
    let canary = in_member("m5").args(["get", "configmap", "settings", "-n", "app", "-o", "json"]).ok().json().unwrap();
    assert_eq!(canary["data"]["where"], "m5", "the override holds across updates");

    // PickN with preferred affinity: the west members score 50.
    let pick = |n: u32| {
        json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
            "metadata": {"name": "west"},
            "spec": {
                "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
                "policy": {"placementType": "PickN", "numberOfClusters": n, "affinity": {"clusterAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
                        {"labelSelector": {"matchLabels": {"env": "prod"}}}]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 50, "preference": {"labelSelector": {"matchLabels": {"region": "west"}}}}]}}},
            },
        })
    };
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[pick(2)])).ok();
    let bindings = wait_json(kubectl, &["clusterresourcebindings"], "west picks two", |l| placed(l, "west").len() == 2);
    assert_eq!(placed(&bindings, "west"), BTreeSet::from(["m3".into(), "m4".into()]), "m5 is canary: required terms");
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[pick(3)])).ok();
    let bindings =
        wait_json(kubectl, &["clusterresourcebindings"], "west scales to three", |l| placed(l, "west").len() == 3);
    let three = placed(&bindings, "west");
    assert!(three.contains("m3") && three.contains("m4"), "scaling up keeps the picks: {three:?}");
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[pick(1)])).ok();
    let bindings =
        wait_json(kubectl, &["clusterresourcebindings"], "west scales to one", |l| placed(l, "west").len() == 1);
    let one = placed(&bindings, "west");
    assert!(one.contains("m3") || one.contains("m4"), "scaling down keeps a best-scored pick: {one:?}");
    // The bindings scaled away are removed, and their Works with them.
    for dropped in three.difference(&one) {
        let namespace = format!("fleet-member-{dropped}");
        wait_json(kubectl, &["works", "-n", &namespace], "the dropped binding's Work gone", |l| {
            !l["items"].as_array().into_iter().flatten().any(|w| w["metadata"]["name"] == "west-work")
        });
    }
    wait_json(kubectl, &["clusterresourcebindings"], "only the kept binding of west left", |l| {
        let items = l["items"].as_array().cloned().unwrap_or_default();
        items.iter().filter(|b| b["metadata"]["labels"]["kubernetes-fleet.io/parent-CRP"] == "west").count() == 1
    });

    // What KubeFleet's webhook refuses, refused with the field to fix: tolerations may be
    // added but not removed, the placement type is fixed, fields must fit the type.
    let patch = |patch: Value| kubectl().args(["patch", "crp", "west", "--type=merge", "-p", &patch.to_string()]);
    patch(json!({"spec": {"policy": {"tolerations": [{"key": "maintenance", "operator": "Exists"}]}}})).ok();
    let refused = patch(json!({"spec": {"policy": {"tolerations": null}}})).fails();
    let removed = "spec.policy.tolerations: Forbidden: tolerations have been updated/deleted, only additions";
    assert!(refused.stderr.contains(removed), "{}", refused.stderr);
    assert!(refused.stderr.contains("\"maintenance\""), "names the missing toleration: {}", refused.stderr);
    let refused = patch(json!({"spec": {"policy": {"placementType": "PickAll", "numberOfClusters": null}}})).fails();
    let retyped = "spec.policy.placementType: Invalid value: \"PickAll\": placement type is immutable (it is PickN)";
    assert!(refused.stderr.contains(retyped), "{}", refused.stderr);
    let west = kubectl().args(["get", "crp", "west", "-o", "json"]).ok().json().unwrap();
    assert_eq!(west["spec"]["policy"]["placementType"], "PickN", "{west}");
    assert_eq!(west["spec"]["policy"]["tolerations"][0]["operator"], "Exists", "{west}");
    let misfit = json!({"apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "misfit"},
        "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
            "policy": {"placementType": "PickFixed", "clusterNames": ["m1"], "numberOfClusters": 1}}});
    let refused = kubectl().args(["create", "-f", "-"]).stdin(misfit.to_string()).fails();
    assert!(refused.stderr.contains("spec.policy.numberOfClusters: Forbidden"), "{}", refused.stderr);
    assert!(!kubectl().args(["get", "crp", "misfit"]).run().success(), "a refused placement is not stored");
    let namespaced = json!({"apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "namespaced"},
        "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "ConfigMap", "name": "settings"}]}});
    let refused = kubectl().args(["create", "-f", "-"]).stdin(namespaced.to_string()).fails();
    let selector = "spec.resourceSelectors[0].kind: Invalid value: \"ConfigMap\": ConfigMap is namespaced";
    assert!(refused.stderr.contains(selector), "{}", refused.stderr);
    let short = json!({"apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "too-many"},
        "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
            "policy": {"placementType": "PickN", "numberOfClusters": 9}}});
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[short])).ok();
    let short = wait_json(kubectl, &["crp", "too-many"], "an unfulfillable policy says so", |c| {
        condition(c, "ClusterResourcePlacementScheduled").is_some_and(|c| c["status"] == "False")
    });
    let scheduled = condition(&short, "ClusterResourcePlacementScheduled").unwrap();
    assert_eq!(scheduled["reason"], "SchedulingPolicyUnfulfilled");
    assert!(scheduled["message"].as_str().unwrap().contains("found 5 cluster(s) instead"), "{scheduled}");
    kubectl().args(["delete", "crp", "too-many", "west"]).ok();
    // West's Works go, but namespace app and its objects stay on every member: the app
    // placement still places them.
    std::thread::sleep(Duration::from_secs(2));
    for name in &names {
        let settings =
            in_member(name).args(["get", "configmap", "settings", "-n", "app", "-o", "json"]).ok().json().unwrap();
        assert_eq!(settings["data"]["version"], "2", "{name} keeps what app places");
    }

    // m1's agent dies: after the heartbeat timeout it gets no new placement, keeps its
    // own, and is picked again once its agent is back.
    fleet.agents.get_mut("m1").unwrap().kill9();
    std::thread::sleep(Duration::from_secs(6));
    let later = json!({"apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "later"},
        "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}]}});
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[later])).ok();
    let bindings = wait_json(kubectl, &["clusterresourcebindings"], "later placed on the live members", |l| {
        placed(l, "later").len() == 4
    });
    assert!(!placed(&bindings, "later").contains("m1"), "a silent member gets nothing new");
    assert!(placed(&bindings, "app").contains("m1"), "a silent member keeps what it has");
    fleet.agents.get_mut("m1").unwrap().restart().unwrap();
    wait_json(kubectl, &["clusterresourcebindings"], "m1 picked again", |l| placed(l, "later").contains("m1"));

    // The envelope leaves the namespace: its Works go, and with them its Role.
    kubectl().args(["delete", "configmap", "wrapper", "-n", "app"]).ok();
    for name in &names[1..] {
        let namespace = format!("fleet-member-{name}");
        wait_json(kubectl, &["works", "-n", &namespace], "the envelope's Work deleted", |l| {
            let items = l["items"].as_array().cloned().unwrap_or_default();
            let envelope = |w: &Value| w["metadata"]["labels"]["kubernetes-fleet.io/envelope-name"].is_string();
            items.iter().any(|w| w["metadata"]["name"] == "app-work") && !items.iter().any(envelope)
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while in_member(name).args(["get", "role", "wrapped", "-n", "app"]).run().success() {
            assert!(std::time::Instant::now() < deadline, "{name} kept the envelope's Role");
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    // Deleting a placement takes its objects off the members.
    kubectl().args(["delete", "crp", "app", "later"]).ok();
    for name in &names {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while in_member(name).args(["get", "configmap", "settings", "-n", "app"]).run().success() {
            assert!(std::time::Instant::now() < deadline, "{name} kept the placed ConfigMap");
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}
