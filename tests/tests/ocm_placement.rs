//! OCM placement in a workspace that acts as the hub, through the front-proxy with stock
//! kubectl: ManagedClusters in two cluster sets, both bound to the placement's
//! namespace, and a Placement picking two clusters by an add-on score.
//!
//! - the Placement's PlacementDecision names the two best-scored clusters, and the
//!   Placement reports `PlacementSatisfied` with OCM's reason and the selected count;
//! - raising another cluster's AddOnPlacementScore moves one decision to it, while a
//!   watcher of the PlacementDecisions never sees the cluster that stays vanish;
//! - a cluster tainted NoSelect (as OCM taints an unreachable cluster) leaves the
//!   decision, and a Placement without enough clusters says how many are unscheduled;
//! - a namespace without a ManagedClusterSetBinding gets OCM's NoManagedClusterSetBindings.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;
use tests::agent::wait_json;
use tests::installation::{Installation, InstallationOptions};
use tests::kubectl::Kubectl;
use tests::placement::decided;

fn cluster(name: &str, set: &str) -> Value {
    json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": name, "labels": {"cluster.open-cluster-management.io/clusterset": set, "env": "prod"}},
        "spec": {"hubAcceptsClient": true},
    })
}

/// A cluster the hub has not accepted: its health is not judged (no lease, no taints), so
/// it needs no agent; placement still considers it.
fn registered(name: &str, set: &str) -> Value {
    let mut cluster = cluster(name, set);
    cluster["spec"]["hubAcceptsClient"] = json!(false);
    cluster
}

fn score(cluster: &str, value: i64) -> Value {
    json!({
        "apiVersion": "cluster.open-cluster-management.io/v1alpha1", "kind": "AddOnPlacementScore",
        "metadata": {"name": "cpu-ratio", "namespace": cluster},
        "status": {"scores": [{"name": "cpuRatio", "value": value}]},
    })
}

/// An installation with a front-proxy and one workspace to act as the hub, resolvable
/// through the proxy; returns the installation and the workspace's path.
async fn hub() -> (Installation, String) {
    let options = InstallationOptions { front_proxy: true, ..InstallationOptions::default() };
    let installation = Installation::start_with(options).await.expect("start the installation");
    let placed = installation.place_workspaces("hub", 1, |p| p.values().any(|names| !names.is_empty())).await.unwrap();
    let hub = format!("root:{}", placed.values().flatten().next().unwrap());
    installation.proxy().wait_resolves(&hub).await.unwrap();
    (installation, hub)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ocm_placement_decides_by_scores_and_never_flaps() {
    let (installation, hub) = hub().await;
    let (config, url) = (installation.proxy().kubeconfig_path(), installation.proxy().base_url().to_string());
    let cache = tempfile::tempdir().unwrap();
    let kubectl = || Kubectl::new(&config, &url, cache.path(), None).cluster(&hub);

    // Four clusters in two sets; the hub gives each accepted cluster its namespace (where
    // its add-on scores and its lease live).
    let mut manifests = Vec::new();
    for (name, set) in [("east-1", "east"), ("east-2", "east"), ("west-1", "west"), ("west-2", "west")] {
        manifests.push(cluster(name, set));
    }
    for set in ["east", "west"] {
        manifests.push(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
            "metadata": {"name": set},
        }));
    }
    manifests.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}));
    for set in ["east", "west"] {
        manifests.push(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
            "metadata": {"name": set, "namespace": "apps"}, "spec": {"clusterSet": set},
        }));
    }
    let yaml: Vec<String> = manifests.iter().map(|m| serde_yaml_ng::to_string(m).unwrap()).collect();
    kubectl().args(["apply", "-f", "-"]).stdin(yaml.join("---\n")).ok();
    for name in ["east-1", "east-2", "west-1", "west-2"] {
        wait_json(kubectl, &["namespace", name], "the hub's namespace for the cluster", |ns| {
            ns["metadata"]["name"] == name
        });
    }
    // Scores live in status: created, then written through the status subresource.
    for (name, value) in [("east-1", 80), ("east-2", 10), ("west-1", 50), ("west-2", 20)] {
        let object = score(name, value);
        kubectl().args(["create", "-f", "-"]).stdin(object.to_string()).ok();
        let patch = json!({"status": object["status"]}).to_string();
        kubectl()
            .args([
                "patch",
                "addonplacementscore",
                "cpu-ratio",
                "-n",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                &patch,
            ])
            .ok();
    }
    // Their agents report them available (a cluster no agent reported is tainted
    // unreachable, as OCM's hub taints it).
    for name in ["east-1", "east-2", "west-1", "west-2"] {
        let patch = json!({"status": {"conditions": [{
            "type": "ManagedClusterConditionAvailable", "status": "True", "reason": "ManagedClusterAvailable",
            "message": "Managed cluster is available", "lastTransitionTime": "2026-01-01T00:00:00Z",
        }]}})
        .to_string();
        kubectl().args(["patch", "managedcluster", name, "--subresource=status", "--type=merge", "-p", &patch]).ok();
    }
    // kubectl finds the kinds by their short names and shows OCM's columns.
    let listed = kubectl().args(["get", "mcl"]).ok();
    assert!(listed.stdout.contains("HUB ACCEPTED") && listed.stdout.contains("east-1"), "{}", listed.stdout);

    let placement = json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": "by-cpu", "namespace": "apps"},
        "spec": {
            "numberOfClusters": 2,
            "predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}],
            "prioritizerPolicy": {"mode": "Exact", "configurations": [
                {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "cpu-ratio", "scoreName": "cpuRatio"}}, "weight": 1},
            ]},
        },
    });
    kubectl().args(["create", "-f", "-"]).stdin(placement.to_string()).ok();
    let first = wait_json(
        kubectl,
        &["placementdecisions", "-n", "apps", "-l", "cluster.open-cluster-management.io/placement=by-cpu"],
        "the first decision",
        |list| decided(list).len() == 2,
    );
    assert_eq!(decided(&first), BTreeSet::from(["east-1".to_string(), "west-1".to_string()]));
    let page = &first["items"][0];
    assert_eq!(page["metadata"]["name"], "by-cpu-decision-1");
    assert_eq!(page["metadata"]["ownerReferences"][0]["kind"], "Placement");
    assert!(page["status"]["decisions"][0]["reason"].as_str().is_some_and(|r| !r.is_empty()), "{page}");
    let status = wait_json(
        kubectl,
        &["placement.cluster.open-cluster-management.io", "by-cpu", "-n", "apps"],
        "the placement's status",
        |p| p["status"]["numberOfSelectedClusters"] == 2,
    );
    let satisfied = status["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "PlacementSatisfied")
        .cloned()
        .unwrap();
    assert_eq!(
        (satisfied["status"].as_str(), satisfied["reason"].as_str()),
        (Some("True"), Some("AllDecisionsScheduled"))
    );

    // A higher score elsewhere moves one decision.
    let patch = json!({"status": {"scores": [{"name": "cpuRatio", "value": 95}]}}).to_string();
    kubectl()
        .args([
            "patch",
            "addonplacementscore",
            "cpu-ratio",
            "-n",
            "west-2",
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch,
        ])
        .ok();
    let moved = wait_json(
        kubectl,
        &["placementdecisions", "-n", "apps", "-l", "cluster.open-cluster-management.io/placement=by-cpu"],
        "the decision moved to west-2",
        |list| decided(list).contains("west-2"),
    );
    assert_eq!(decided(&moved), BTreeSet::from(["east-1".to_string(), "west-2".to_string()]));

    // A NoSelect taint takes east-1 out.
    let taint = json!({"spec": {"taints": [{
        "key": "example.com/maintenance", "effect": "NoSelect",
        "timeAdded": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    }]}})
    .to_string();
    kubectl().args(["patch", "managedcluster", "east-1", "--type=merge", "-p", &taint]).ok();
    let without = wait_json(
        kubectl,
        &["placementdecisions", "-n", "apps", "-l", "cluster.open-cluster-management.io/placement=by-cpu"],
        "east-1 left the decision",
        |list| !decided(list).contains("east-1") && decided(list).len() == 2,
    );
    assert_eq!(decided(&without), BTreeSet::from(["west-1".to_string(), "west-2".to_string()]));

    // Asking for more than there are: every feasible cluster, and the shortfall reported.
    let more = json!({"spec": {"numberOfClusters": 5}}).to_string();
    kubectl()
        .args([
            "patch",
            "placement.cluster.open-cluster-management.io",
            "by-cpu",
            "-n",
            "apps",
            "--type=merge",
            "-p",
            &more,
        ])
        .ok();
    wait_json(
        kubectl,
        &["placement.cluster.open-cluster-management.io", "by-cpu", "-n", "apps"],
        "the shortfall reported",
        |p| {
            p["status"]["conditions"].as_array().is_some_and(|conditions| {
                conditions.iter().any(|c| {
                    c["reason"] == "NotAllDecisionsScheduled" && c["message"] == "2 cluster decisions unscheduled"
                })
            }) && p["status"]["numberOfSelectedClusters"] == 3
        },
    );

    // Heartbeats, as OCM's hub judges them: the hub gives an accepted cluster its
    // namespace and lease; the registration agent (played here by kubectl) renews the
    // lease and reports Available. Five lease durations without a renewal make the
    // cluster Unknown and taint it unreachable, and the placement drops it; the agent's
    // return brings it back.
    let beat = json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": "beat", "labels": {"cluster.open-cluster-management.io/clusterset": "east", "beat": "yes"}},
        "spec": {"hubAcceptsClient": true, "leaseDurationSeconds": 1},
    });
    kubectl().args(["create", "-f", "-"]).stdin(beat.to_string()).ok();
    wait_json(kubectl, &["lease", "managed-cluster-lease", "-n", "beat"], "the hub's lease for beat", |lease| {
        lease["metadata"]["labels"]["open-cluster-management.io/cluster-name"] == "beat"
    });
    let available = |status: &str| {
        json!({"status": {"conditions": [{
            "type": "ManagedClusterConditionAvailable", "status": status, "reason": "ManagedClusterAvailable",
            "message": "Managed cluster is available", "lastTransitionTime": "2026-01-01T00:00:00Z",
        }]}})
        .to_string()
    };
    let renew = || {
        let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
        let patch = json!({"spec": {"renewTime": now}}).to_string();
        kubectl().args(["patch", "lease", "managed-cluster-lease", "-n", "beat", "--type=merge", "-p", &patch]).ok();
    };
    renew();
    kubectl()
        .args(["patch", "managedcluster", "beat", "--subresource=status", "--type=merge", "-p", &available("True")])
        .ok();
    let beaters = json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": "beaters", "namespace": "apps"},
        "spec": {"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"beat": "yes"}}}}]},
    });
    kubectl().args(["create", "-f", "-"]).stdin(beaters.to_string()).ok();
    let beaters_decisions =
        ["placementdecisions", "-n", "apps", "-l", "cluster.open-cluster-management.io/placement=beaters"];
    wait_json(kubectl, &beaters_decisions, "beat decided", |list| decided(list).contains("beat"));
    // Renewed every second for longer than the grace (5 × 1 s): still available.
    for _ in 0..7 {
        renew();
        std::thread::sleep(Duration::from_secs(1));
    }
    let alive = kubectl().args(["get", "managedcluster", "beat", "-o", "json"]).ok().json().unwrap();
    assert!(alive["spec"]["taints"].as_array().is_none_or(Vec::is_empty), "{alive}");
    // The agent stops.
    let stopped = wait_json(kubectl, &["managedcluster", "beat"], "beat Unknown and tainted", |c| {
        c["status"]["conditions"].as_array().is_some_and(|conditions| {
            conditions.iter().any(|c| c["reason"] == "ManagedClusterLeaseUpdateStopped" && c["status"] == "Unknown")
        }) && c["spec"]["taints"][0]["key"] == "cluster.open-cluster-management.io/unreachable"
    });
    assert_eq!(stopped["spec"]["taints"][0]["effect"], "NoSelect");
    wait_json(kubectl, &beaters_decisions, "beat dropped", |list| decided(list).is_empty());
    wait_json(kubectl, &["placement.cluster.open-cluster-management.io", "beaters", "-n", "apps"], "no match", |p| {
        p["status"]["conditions"]
            .as_array()
            .is_some_and(|conditions| conditions.iter().any(|c| c["reason"] == "NoManagedClusterMatched"))
    });
    // The agent returns: a renewal and Available again; the taint goes, the decision comes back.
    renew();
    kubectl()
        .args(["patch", "managedcluster", "beat", "--subresource=status", "--type=merge", "-p", &available("True")])
        .ok();
    wait_json(kubectl, &beaters_decisions, "beat decided again", |list| decided(list).contains("beat"));

    // More than a page: 120 clusters in set "many", all decided by one placement. A new
    // cluster whose name sorts first must not push a decided cluster from page 1 to
    // page 2 (OCM#1346: rewriting page 1 first drops it from every page for a moment);
    // a watcher of every page checks that the union never loses a decided cluster.
    let mut many = vec![json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
        "metadata": {"name": "many"},
    })];
    let names: Vec<String> = (0..120).map(|i| format!("m-{i:03}")).collect();
    many.extend(names.iter().map(|name| registered(name, "many")));
    many.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fleet"}}));
    many.push(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
        "metadata": {"name": "many", "namespace": "fleet"}, "spec": {"clusterSet": "many"},
    }));
    many.push(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": "all", "namespace": "fleet"}, "spec": {"clusterSets": ["many"]},
    }));
    let yaml: Vec<String> = many.iter().map(|m| serde_yaml_ng::to_string(m).unwrap()).collect();
    kubectl().args(["apply", "-f", "-"]).stdin(yaml.join("---\n")).ok();
    let pages = wait_json(kubectl, &["placementdecisions", "-n", "fleet"], "120 clusters on two pages", |list| {
        decided(list).len() == 120
    });
    let sizes: Vec<usize> = pages["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["status"]["decisions"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(sizes, [100, 20], "pages of at most 100");
    let watcher = {
        let watch = kubectl()
            .args(["get", "placementdecisions", "-n", "fleet", "--watch", "--output-watch-events", "-o", "json"])
            .timeout(Duration::from_secs(8));
        std::thread::spawn(move || watch.run())
    };
    std::thread::sleep(Duration::from_secs(2));
    let newcomer = serde_yaml_ng::to_string(&registered("a-first", "many")).unwrap();
    kubectl().args(["apply", "-f", "-"]).stdin(newcomer).ok();
    wait_json(kubectl, &["placementdecisions", "-n", "fleet"], "the newcomer decided", |list| {
        decided(list).contains("a-first")
    });
    let output = watcher.join().unwrap();
    let mut by_page: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    let mut events = 0;
    for event in serde_json::Deserializer::from_str(&output.stdout).into_iter::<Value>().map_while(Result::ok) {
        let page = event["object"]["metadata"]["name"].as_str().unwrap_or_default().to_string();
        by_page.insert(page, decided(&json!({"items": [event["object"].clone()]})));
        events += 1;
        let union: BTreeSet<&String> = by_page.values().flatten().collect();
        // Once both pages are known, every original cluster is on one of them.
        if by_page.len() == 2 {
            let missing: Vec<&String> = names.iter().filter(|n| !union.contains(n)).collect();
            assert!(missing.is_empty(), "decided clusters vanished after event {events}: {missing:?}");
        }
    }
    assert!(events >= 3, "the watcher saw both pages and the rewrite ({events} events)");
    assert!(by_page.values().flatten().any(|c| c == "a-first"), "the watcher saw the newcomer decided");

    // A namespace without bindings.
    kubectl().args(["create", "namespace", "lonely"]).ok();
    let alone = json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": "alone", "namespace": "lonely"}, "spec": {},
    });
    kubectl().args(["create", "-f", "-"]).stdin(alone.to_string()).ok();
    wait_json(
        kubectl,
        &["placement.cluster.open-cluster-management.io", "alone", "-n", "lonely"],
        "NoManagedClusterSetBindings",
        |p| {
            p["status"]["conditions"]
                .as_array()
                .is_some_and(|conditions| conditions.iter().any(|c| c["reason"] == "NoManagedClusterSetBindings"))
        },
    );
    let table = kubectl().args(["get", "placements.cluster.open-cluster-management.io", "-A"]).ok();
    assert!(
        table.stdout.contains("SUCCEEDED") && table.stdout.contains("NoManagedClusterSetBindings"),
        "{}",
        table.stdout
    );

    // Deleting the placement takes its decisions with it (they are owned by it).
    kubectl().args(["delete", "placement.cluster.open-cluster-management.io", "by-cpu", "-n", "apps"]).ok();
    let by_cpu = ["placementdecisions", "-n", "apps", "-l", "cluster.open-cluster-management.io/placement=by-cpu"];
    wait_json(kubectl, &by_cpu, "the decisions collected", |list| list["items"].as_array().is_some_and(Vec::is_empty));
}

/// Real `atoll-agent`s as OCM registration agents, each for one member (a logical cluster
/// of a standalone shard that keeps ClusterClaims): they register their ManagedCluster,
/// an admin accepts it, they renew its lease and report it Available with its claims; a
/// placement selects by claim. An agent killed with -9 stops its renewals: the hub makes
/// its cluster Unknown and unreachable and the placement drops it; restarted, it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ocm_agents_register_renew_and_report_claims() {
    let (installation, hub) = hub().await;
    let proxy = installation.proxy();
    let kubectl = || proxy.kubectl().cluster(&hub);
    let member = tests::ShardProcess::with_clusters(&["m1", "m2"]).await;
    let logs = tempfile::tempdir().unwrap();
    let identity = installation.user_identity("ocm-agent", &["system:masters"]).unwrap();
    let hub_config = proxy.user_kubeconfig("ocm-agent", &identity, &hub).unwrap();
    let mut agents = Vec::new();
    for (name, region) in [("m1", "us-east-1"), ("m2", "eu-west-1")] {
        let config = member.user_kubeconfig(&format!("admin-{name}"), &["system:masters"], name).unwrap();
        let claim = json!({
            "apiVersion": "cluster.open-cluster-management.io/v1alpha1", "kind": "ClusterClaim",
            "metadata": {"name": "region.open-cluster-management.io"}, "spec": {"value": region},
        });
        member.kubectl_with(&config).args(["create", "-f", "-"]).stdin(claim.to_string()).ok();
        let log = logs.path().join(format!("{name}.log"));
        agents.push(tests::agent::AgentProcess::start_managed_cluster(&hub_config, name, &config, &log).unwrap());
    }
    // Registered, not accepted: the admin accepts each with a short lease.
    for name in ["m1", "m2"] {
        wait_json(kubectl, &["managedcluster", name], "registered by its agent", |c| {
            c["spec"]["hubAcceptsClient"] == false
        });
        let accept = json!({
            "metadata": {"labels": {"cluster.open-cluster-management.io/clusterset": "fleet"}},
            "spec": {"hubAcceptsClient": true, "leaseDurationSeconds": 1},
        })
        .to_string();
        kubectl().args(["patch", "managedcluster", name, "--type=merge", "-p", &accept]).ok();
    }
    let reported = wait_json(kubectl, &["managedcluster", "m1"], "m1 available with its claim", |c| {
        c["status"]["clusterClaims"][0]["value"] == "us-east-1"
            && c["status"]["conditions"].as_array().is_some_and(|conditions| {
                conditions.iter().any(|c| c["type"] == "ManagedClusterConditionAvailable" && c["status"] == "True")
            })
            && c["spec"]["taints"].as_array().is_none_or(Vec::is_empty)
    });
    assert_eq!(reported["status"]["clusterClaims"][0]["name"], "region.open-cluster-management.io");
    let set = json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
        "metadata": {"name": "fleet"},
    });
    kubectl().args(["create", "-f", "-"]).stdin(set.to_string()).ok();
    kubectl().args(["create", "namespace", "apps"]).ok();
    let binding = json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
        "metadata": {"name": "fleet", "namespace": "apps"}, "spec": {"clusterSet": "fleet"},
    });
    kubectl().args(["create", "-f", "-"]).stdin(binding.to_string()).ok();
    let placement = json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": "east", "namespace": "apps"},
        "spec": {"predicates": [{"requiredClusterSelector": {"claimSelector": {"matchExpressions": [
            {"key": "region.open-cluster-management.io", "operator": "In", "values": ["us-east-1"]},
        ]}}}]},
    });
    kubectl().args(["create", "-f", "-"]).stdin(placement.to_string()).ok();
    let decisions = ["placementdecisions", "-n", "apps", "-l", "cluster.open-cluster-management.io/placement=east"];
    let first = wait_json(kubectl, &decisions, "m1 decided by its claim", |list| !decided(list).is_empty());
    assert_eq!(decided(&first), BTreeSet::from(["m1".to_string()]));

    // The agent of m1 dies: five lease durations later the hub makes m1 Unknown.
    agents[0].kill9();
    wait_json(kubectl, &["managedcluster", "m1"], "m1 Unknown and unreachable", |c| {
        c["spec"]["taints"][0]["key"] == "cluster.open-cluster-management.io/unreachable"
    });
    wait_json(kubectl, &decisions, "m1 dropped", |list| decided(list).is_empty());
    let m2 = kubectl().args(["get", "managedcluster", "m2", "-o", "json"]).ok().json().unwrap();
    assert!(m2["spec"]["taints"].as_array().is_none_or(Vec::is_empty), "m2's agent still renews: {m2}");
    // Back.
    agents[0].restart().unwrap();
    wait_json(kubectl, &decisions, "m1 decided again", |list| decided(list).contains("m1"));
}

/// The pages of a placement with their group labels and clusters, by page name.
fn pages_by_name(list: &Value) -> std::collections::BTreeMap<String, (String, String, BTreeSet<String>)> {
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .map(|page| {
            let labels = &page["metadata"]["labels"];
            let label = |key: &str| labels[key].as_str().unwrap_or("<none>").to_string();
            let name = page["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let index = label("cluster.open-cluster-management.io/decision-group-index");
            let group = label("cluster.open-cluster-management.io/decision-group-name");
            (name, (index, group, decided(&json!({"items": [page]}))))
        })
        .collect()
}

/// Whether the placement's `status.decisionGroups` are `wanted` (index, name, clusters)
/// and each group's listed pages carry that group's labels and hold exactly its clusters.
fn groups_as_wanted(placement: &Value, pages: &Value, wanted: &[(u64, &str, &[&str])]) -> bool {
    let groups = placement["status"]["decisionGroups"].as_array().cloned().unwrap_or_default();
    let pages = pages_by_name(pages);
    groups.len() == wanted.len()
        && groups.iter().zip(wanted).all(|(group, (index, name, clusters))| {
            let listed: Vec<&str> =
                group["decisions"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let on_pages: BTreeSet<String> = listed
                .iter()
                .filter_map(|page| pages.get(*page))
                .filter(|(i, n, _)| *i == index.to_string() && n == name)
                .flat_map(|(_, _, clusters)| clusters.clone())
                .collect();
            group["decisionGroupIndex"] == *index
                && group["decisionGroupName"] == *name
                && group["clustersCount"] == clusters.len()
                && on_pages == clusters.iter().map(|c| c.to_string()).collect::<BTreeSet<_>>()
        })
}

/// The Events about placement `name` in the namespace, by reason.
fn events_about(list: &Value, name: &str) -> Vec<Value> {
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .into_iter()
        .filter(|e| e["involvedObject"]["kind"] == "Placement" && e["involvedObject"]["name"] == name)
        .collect()
}

/// OCM's decision groups: one group of the clusters labelled `env=prod`, the rest in
/// groups of two (`clustersPerDecisionGroup: 2`). The PlacementDecisions carry their
/// group's index and name as labels, the Placement lists the groups in
/// `status.decisionGroups`, and the scheduler's Events (DecisionCreate, DecisionUpdate,
/// ScoreUpdate with every cluster's score) show in `kubectl get events` and `describe`.
/// A cluster that gains the label moves into the prod group while a watcher of the pages
/// never sees a decided cluster vanish; a pass that changes nothing writes no Event; a
/// group size OCM's schema refuses is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ocm_decision_groups_label_pages_and_record_events() {
    let (installation, hub) = hub().await;
    let proxy = installation.proxy();
    let kubectl = || proxy.kubectl().cluster(&hub);
    let mut manifests = vec![json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
        "metadata": {"name": "waves"},
    })];
    for name in ["p-1", "p-2", "d-1", "d-2", "d-3"] {
        let mut cluster = registered(name, "waves");
        if name.starts_with("p-") {
            cluster["metadata"]["labels"]["env"] = json!("prod");
        } else {
            cluster["metadata"]["labels"]["env"] = json!("dev");
        }
        manifests.push(cluster);
    }
    manifests.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "rollout"}}));
    manifests.push(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
        "metadata": {"name": "waves", "namespace": "rollout"}, "spec": {"clusterSet": "waves"},
    }));
    manifests.push(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": "waves", "namespace": "rollout"},
        "spec": {"decisionStrategy": {"groupStrategy": {
            "clustersPerDecisionGroup": 2,
            "decisionGroups": [{"groupName": "prod", "groupClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}],
        }}},
    }));
    let yaml: Vec<String> = manifests.iter().map(|m| serde_yaml_ng::to_string(m).unwrap()).collect();
    kubectl().args(["apply", "-f", "-"]).stdin(yaml.join("---\n")).ok();

    let pages_args =
        ["placementdecisions", "-n", "rollout", "-l", "cluster.open-cluster-management.io/placement=waves"];
    let placement_args = ["placement.cluster.open-cluster-management.io", "waves", "-n", "rollout"];
    let first: &[(u64, &str, &[&str])] = &[(0, "prod", &["p-1", "p-2"]), (1, "", &["d-1", "d-2"]), (2, "", &["d-3"])];
    let placement = wait_json(kubectl, &placement_args, "three decision groups", |p| {
        let pages = kubectl().args(["get"]).args(pages_args).args(["-o", "json"]).ok().json().unwrap();
        groups_as_wanted(p, &pages, first)
    });
    assert_eq!(placement["status"]["numberOfSelectedClusters"], 5);
    // A first layout is OCM's: pages numbered on from group to group.
    let names: Vec<&str> = placement["status"]["decisionGroups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["decisions"].as_array().unwrap().iter().filter_map(Value::as_str))
        .collect();
    assert_eq!(names, ["waves-decision-1", "waves-decision-2", "waves-decision-3"]);

    // The scheduler's Events, on the Placement in its namespace.
    let events_args = ["events", "-n", "rollout"];
    let events = wait_json(kubectl, &events_args, "DecisionCreate and ScoreUpdate events", |list| {
        let events = events_about(list, "waves");
        events.iter().any(|e| e["reason"] == "DecisionCreate") && events.iter().any(|e| e["reason"] == "ScoreUpdate")
    });
    let events = events_about(&events, "waves");
    let created = events.iter().find(|e| e["reason"] == "DecisionCreate").unwrap();
    assert_eq!(created["type"], "Normal");
    assert_eq!(created["source"]["component"], "placement-scheduler");
    assert_eq!(created["reportingComponent"], "placement-scheduler");
    assert!(created["reportingInstance"].as_str().is_some_and(|i| !i.is_empty()), "{created}");
    assert_eq!(created["involvedObject"]["uid"], placement["metadata"]["uid"]);
    assert!(
        created["message"].as_str().unwrap().ends_with("is created with placement waves in namespace rollout"),
        "{created}"
    );
    let name = created["metadata"]["name"].as_str().unwrap();
    let suffix = name.strip_prefix("waves.").unwrap_or_default();
    assert!(suffix.len() == 16 && suffix.chars().all(|c| c.is_ascii_hexdigit()), "client-go's name: {name}");
    let scores = events.iter().find(|e| e["reason"] == "ScoreUpdate").unwrap()["message"].as_str().unwrap().to_string();
    for cluster in ["p-1", "p-2", "d-1", "d-2", "d-3"] {
        let entry = scores.split_whitespace().find(|entry| entry.starts_with(&format!("{cluster}:")));
        assert!(entry.is_some_and(|e| e[cluster.len() + 1..].parse::<i64>().is_ok()), "{cluster} in {scores:?}");
    }
    let described = kubectl().args(["describe"]).args(placement_args).ok();
    assert!(
        described.stdout.contains("DecisionCreate") && described.stdout.contains("ScoreUpdate"),
        "{}",
        described.stdout
    );

    // Nothing changes: passes go on (the hub resyncs every 5 s) and write no Event.
    let settled = |list: &Value| -> Vec<(String, Value)> {
        let mut events: Vec<(String, Value)> = events_about(list, "waves")
            .iter()
            .map(|e| (e["metadata"]["name"].as_str().unwrap_or_default().to_string(), e["count"].clone()))
            .collect();
        events.sort_by(|a, b| a.0.cmp(&b.0));
        events
    };
    let before = settled(&kubectl().args(["get"]).args(events_args).args(["-o", "json"]).ok().json().unwrap());
    std::thread::sleep(Duration::from_secs(7));
    let after = settled(&kubectl().args(["get"]).args(events_args).args(["-o", "json"]).ok().json().unwrap());
    assert_eq!(before, after, "a pass that changes nothing records nothing");

    // d-3 becomes prod: the prod group (three clusters, two a group) splits in two, and
    // d-3 moves from the last group into the first while a watcher follows every page.
    let watcher = {
        let watch = kubectl()
            .args(["get", "placementdecisions", "-n", "rollout", "--watch", "--output-watch-events", "-o", "json"])
            .timeout(Duration::from_secs(8));
        std::thread::spawn(move || watch.run())
    };
    std::thread::sleep(Duration::from_secs(2));
    kubectl().args(["label", "managedcluster", "d-3", "env=prod", "--overwrite"]).ok();
    let second: &[(u64, &str, &[&str])] =
        &[(0, "prod", &["d-3", "p-1"]), (1, "prod", &["p-2"]), (2, "", &["d-1", "d-2"])];
    wait_json(kubectl, &placement_args, "d-3 in the prod groups", |p| {
        let pages = kubectl().args(["get"]).args(pages_args).args(["-o", "json"]).ok().json().unwrap();
        groups_as_wanted(p, &pages, second)
    });
    let output = watcher.join().unwrap();
    let initial = pages_by_name(&kubectl().args(["get"]).args(pages_args).args(["-o", "json"]).ok().json().unwrap());
    let mut by_page: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    let mut seen = 0;
    for event in serde_json::Deserializer::from_str(&output.stdout).into_iter::<Value>().map_while(Result::ok) {
        let page = event["object"]["metadata"]["name"].as_str().unwrap_or_default().to_string();
        if event["type"] == "DELETED" {
            by_page.remove(&page);
        } else {
            by_page.insert(page, decided(&json!({"items": [event["object"].clone()]})));
        }
        seen += 1;
        // Once the three first pages are known, every cluster is on one of them.
        if seen >= 3 {
            let union: BTreeSet<&String> = by_page.values().flatten().collect();
            let missing: Vec<&str> =
                ["p-1", "p-2", "d-1", "d-2", "d-3"].into_iter().filter(|c| !union.contains(&c.to_string())).collect();
            assert!(missing.is_empty(), "decided clusters vanished after watch event {seen}: {missing:?}");
        }
    }
    assert!(seen > 3, "the watcher saw the pages and their rewrite ({seen} events)");
    assert!(initial.values().any(|(_, group, clusters)| group == "prod" && clusters.contains("d-3")));
    wait_json(kubectl, &events_args, "a DecisionUpdate event", |list| {
        let events = events_about(list, "waves");
        events.iter().any(|e| {
            e["reason"] == "DecisionUpdate"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.ends_with("is updated with placement waves in namespace rollout"))
        })
    });

    // OCM's schema refuses group sizes that are neither 1-100% nor a positive count.
    for size in ["0%", "150%", "half"] {
        let bad = json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "bad", "namespace": "rollout"},
            "spec": {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": size}}},
        });
        let refused = kubectl().args(["create", "-f", "-"]).stdin(bad.to_string()).fails();
        assert!(refused.stderr.contains("clustersPerDecisionGroup"), "{size}: {}", refused.stderr);
    }
}
