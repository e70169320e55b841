//! kcp's TMC scheduling across shards: an inventory workspace (SyncTargets, Locations) on
//! one shard, a user workspace with a Placement on another, root + 2 shards, a cache and
//! the front-proxy, driven by stock kubectl. Heartbeats are written the way an agent
//! writes them (`status.lastSyncerHeartbeatTime`).
//!
//! - namespaces the Placement selects are labelled `state.workload.kcp.io/<key>=Sync` for
//!   one Ready SyncTarget of the chosen Location, and the objects in them inherit it;
//! - a SyncTarget that stops heartbeating loses its namespaces to the other target of the
//!   Location after the grace period;
//! - with the inventory's shard killed (-9), the Placement stays Bound and new namespaces
//!   are still scheduled, from the cache;
//! - deleting the Placement removes the labels (after the grace period), from objects too;
//! - a workload APIBinding gets a default Placement once; deleting it does not bring it back.

use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tests::agent::{deletions, location, states, sync_target, wait_json};
use tests::cache::CacheTopology;
use tests::installation::{Installation, InstallationOptions};
use tests::kubectl::Kubectl;

/// Locations aws (two SyncTargets) and gce (one).
fn inventory_manifests() -> String {
    let documents = [
        sync_target("aws-1", "aws", "{}"),
        sync_target("aws-2", "aws", "{}"),
        sync_target("gce-1", "gce", "{}"),
        location("aws", "aws"),
        location("gce", "gce"),
    ];
    documents.join("---\n")
}

fn placement(inventory: &str) -> String {
    json!({
        "apiVersion": "scheduling.kcp.io/v1alpha1", "kind": "Placement", "metadata": {"name": "on-aws"},
        "spec": {
            "locationSelectors": [{"matchLabels": {"cloud": "aws"}}],
            "locationResource": {"group": "workload.kcp.io", "version": "v1alpha1", "resource": "synctargets"},
            "namespaceSelector": {"matchLabels": {"team": "a"}},
            "locationWorkspace": inventory,
        },
    })
    .to_string()
}

fn namespace(name: &str, team: &str) -> String {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"team": team}}}).to_string()
}

/// Writes a heartbeat for each SyncTarget whose flag is up, every half second, as an
/// agent does, until `stop` is raised.
fn heartbeats(
    kubectl: impl Fn() -> Kubectl + Send + 'static,
    beating: BTreeMap<String, Arc<AtomicBool>>,
    stop: Arc<AtomicBool>,
) {
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            for (name, beat) in &beating {
                if beat.load(Ordering::SeqCst) {
                    let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
                    let patch = json!({"status": {"lastSyncerHeartbeatTime": now}}).to_string();
                    let _ = kubectl()
                        .args(["patch", "synctarget", name, "--subresource=status", "--type=merge", "-p", &patch])
                        .run();
                }
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn placements_schedule_namespaces_across_shards_and_survive_the_inventory_shard() {
    let options = InstallationOptions {
        extra_shards: 2,
        front_proxy: true,
        caches: Some(CacheTopology::single()),
        extra_args: ["--placement-removal-grace-seconds", "3", "--sync-target-heartbeat-threshold-seconds", "4"]
            .map(String::from)
            .to_vec(),
        ..InstallationOptions::default()
    };
    let mut installation = Installation::start_with(options).await.expect("start the installation");
    let count = |p: &BTreeMap<String, Vec<String>>, shard: &str| p.get(shard).map_or(0, Vec::len);
    let fits = |p: &BTreeMap<String, Vec<String>>, a: &str, b: &str| count(p, a) >= 1 && count(p, b) >= 1;
    let placed = installation
        .place_workspaces("tmc", 40, |p| fits(p, "shard-1", "shard-2"))
        .await
        .expect("an inventory workspace on shard-1 and a user workspace on shard-2");
    let inventory = format!("root:{}", placed["shard-1"][0]);
    let user = format!("root:{}", placed["shard-2"][0]);
    for path in [&inventory, &user] {
        installation.proxy().wait_resolves(path).await.unwrap();
    }
    let proxy_config = installation.proxy().kubeconfig_path();
    let proxy_url = installation.proxy().base_url().to_string();
    let cache_dir = tempfile::tempdir().unwrap();
    let kubectl_in = |path: &str| {
        let (config, url, cache, path) =
            (proxy_config.clone(), proxy_url.clone(), cache_dir.path().to_path_buf(), path.to_string());
        move || Kubectl::new(&config, &url, &cache, None).cluster(&path)
    };
    let inv = kubectl_in(&inventory);
    let usr = kubectl_in(&user);

    inv().args(["apply", "-f", "-"]).stdin(inventory_manifests()).ok();
    let beating: BTreeMap<String, Arc<AtomicBool>> =
        ["aws-1", "aws-2", "gce-1"].iter().map(|n| (n.to_string(), Arc::new(AtomicBool::new(true)))).collect();
    let stop = Arc::new(AtomicBool::new(false));
    heartbeats(kubectl_in(&inventory), beating.clone(), stop.clone());
    // Heartbeats make the targets Ready; the Location counts them.
    wait_json(&inv, &["location", "aws"], "two available aws targets", |l| l["status"]["availableInstances"] == 2);
    let targets = inv().args(["get", "synctargets", "-o", "json"]).ok().json().unwrap();
    let keys: BTreeMap<String, String> = targets["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let key = t["metadata"]["labels"]["internal.workload.kcp.io/key"].as_str().expect("a key label");
            (t["metadata"]["name"].as_str().unwrap().to_string(), key.to_string())
        })
        .collect();
    let target = wait_json(&inv, &["synctarget", "aws-1"], "sync views listed", |t| {
        t["status"]["virtualWorkspaces"].as_array().is_some_and(|v| v.len() == 3)
    });
    assert!(target["status"]["virtualWorkspaces"][0]["syncerURL"].as_str().unwrap().contains("/services/syncer/"));

    // A Placement in the user workspace (shard-2) over the inventory (shard-1).
    usr().args(["create", "-f", "-"]).stdin(namespace("app", "a")).ok();
    usr().args(["create", "-f", "-"]).stdin(namespace("other", "b")).ok();
    usr().args(["create", "configmap", "settings", "-n", "app", "--from-literal=k=v"]).ok();
    usr().args(["create", "-f", "-"]).stdin(placement(&inventory)).ok();
    let bound = wait_json(&usr, &["placement", "on-aws"], "the placement Bound", |p| {
        p["status"]["phase"] == "Bound"
            && p["metadata"]["annotations"]["internal.workload.kcp.io/synctarget"].is_string()
    });
    assert_eq!(bound["status"]["selectedLocation"], json!({"path": inventory, "locationName": "aws"}));
    let chosen_key =
        bound["metadata"]["annotations"]["internal.workload.kcp.io/synctarget"].as_str().unwrap().to_string();
    let chosen = keys.iter().find(|(_, k)| **k == chosen_key).map(|(n, _)| n.clone()).expect("the key of a target");
    assert!(chosen.starts_with("aws-"), "{chosen}");
    let other = if chosen == "aws-1" { "aws-2" } else { "aws-1" }.to_string();
    let ns = wait_json(&usr, &["namespace", "app"], "app scheduled", |ns| states(ns).contains_key(&chosen_key));
    assert_eq!(states(&ns), BTreeMap::from([(chosen_key.clone(), "Sync".to_string())]));
    assert_eq!(ns["metadata"]["annotations"]["scheduling.kcp.io/placement"], "");
    wait_json(&usr, &["configmap", "settings", "-n", "app"], "the ConfigMap inherits the label", |cm| {
        states(cm).contains_key(&chosen_key)
    });
    let untouched = usr().args(["get", "namespace", "other", "-o", "json"]).ok().json().unwrap();
    assert!(states(&untouched).is_empty(), "{untouched}");
    // A ConfigMap created later in the namespace inherits it too.
    usr().args(["create", "configmap", "later", "-n", "app", "--from-literal=k=v"]).ok();
    wait_json(&usr, &["configmap", "later", "-n", "app"], "a new ConfigMap labelled", |cm| {
        states(cm).contains_key(&chosen_key)
    });

    // The chosen target stops heartbeating: not Ready, and app moves to the other one.
    beating[&chosen].store(false, Ordering::SeqCst);
    wait_json(&inv, &["synctarget", &chosen], "the silent target not Ready", |t| {
        t["status"]["conditions"][0]["status"] == "False" && t["status"]["conditions"][0]["reason"] == "ErrorHeartbeat"
    });
    let other_key = keys[&other].clone();
    // For the grace period the namespace has both: the new target's label, and the old
    // one's label marked for deletion.
    let moving = wait_json(&usr, &["namespace", "app"], "app moving to the other target", |ns| {
        states(ns).contains_key(&other_key) && deletions(ns).contains(&chosen_key)
    });
    assert!(states(&moving).contains_key(&chosen_key), "the old label stays for the grace period: {moving}");
    let moved = wait_json(&usr, &["namespace", "app"], "the old label removed", |ns| {
        !states(ns).contains_key(&chosen_key) && deletions(ns).is_empty()
    });
    assert_eq!(states(&moved), BTreeMap::from([(other_key.clone(), "Sync".to_string())]));
    wait_json(&usr, &["configmap", "settings", "-n", "app"], "the ConfigMap follows", |cm| {
        states(cm) == BTreeMap::from([(other_key.clone(), "Sync".to_string())])
    });

    // The inventory's shard dies: the Placement stays Bound, and a new namespace is
    // scheduled from the cache's copy of the inventory.
    stop.store(true, Ordering::SeqCst);
    installation.shard_mut("shard-1").unwrap().kill9();
    usr().args(["create", "-f", "-"]).stdin(namespace("late", "a")).ok();
    wait_json(&usr, &["namespace", "late"], "late scheduled with shard-1 down", |ns| {
        states(ns).contains_key(&other_key)
    });
    let still = usr().args(["get", "placement", "on-aws", "-o", "json"]).ok().json().unwrap();
    assert_eq!(still["status"]["phase"], "Bound", "{still}");

    // Deleting the Placement: labels go after the grace period, from objects too.
    usr().args(["delete", "placement", "on-aws"]).ok();
    for name in ["app", "late"] {
        wait_json(&usr, &["namespace", name], "labels removed", |ns| states(ns).is_empty() && deletions(ns).is_empty());
    }
    let cm = wait_json(&usr, &["configmap", "settings", "-n", "app"], "the ConfigMap unlabelled", |cm| {
        states(cm).is_empty()
    });
    assert!(deletions(&cm).is_empty(), "{cm}");
    let ns = usr().args(["get", "namespace", "app", "-o", "json"]).ok().json().unwrap();
    assert!(ns["metadata"]["annotations"].get("scheduling.kcp.io/placement").is_none(), "{ns}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workload_binding_gets_a_default_placement_once() {
    let installation = Installation::start(0).await.expect("start a shard");
    let k = || installation.root.kubectl().cluster("root");
    let export =
        r#"{"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExport","metadata":{"name":"kubernetes"},"spec":{}}"#;
    k().args(["create", "-f", "-"]).stdin(export).ok();
    let binding = r#"{"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIBinding","metadata":{"name":"kubernetes"},
        "spec":{"reference":{"export":{"path":"root","name":"kubernetes"}}}}"#;
    k().args(["create", "-f", "-"]).stdin(binding).ok();
    let default =
        wait_json(k, &["placement", "default"], "the default Placement", |p| p["metadata"]["name"] == "default");
    assert_eq!(default["spec"]["locationWorkspace"], "root");
    assert_eq!(default["spec"]["namespaceSelector"], json!({}));
    assert_eq!(default["spec"]["locationSelectors"], json!([{}]));
    let binding = wait_json(k, &["apibinding", "kubernetes"], "the binding marked", |b| {
        b["metadata"]["annotations"]["workload.kcp.io/skip-default-object-creation"].is_string()
    });
    assert_eq!(binding["status"]["phase"], "Bound");
    k().args(["delete", "placement", "default"]).ok();
    // Several controller passes later it is still gone.
    std::thread::sleep(Duration::from_secs(5));
    let gone = k().args(["get", "placement", "default"]).fails().stderr;
    assert!(gone.contains("NotFound"), "{gone}");
    // A binding to an export that is not a workload export gets none.
    let widgets = r#"{"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExport","metadata":{"name":"widgets"},"spec":{}}"#;
    k().args(["create", "-f", "-"]).stdin(widgets).ok();
    let binding = r#"{"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIBinding","metadata":{"name":"widgets"},
        "spec":{"reference":{"export":{"path":"root","name":"widgets"}}}}"#;
    k().args(["create", "-f", "-"]).stdin(binding).ok();
    wait_json(k, &["apibinding", "widgets"], "widgets Bound", |b| b["status"]["phase"] == "Bound");
    std::thread::sleep(Duration::from_secs(3));
    k().args(["get", "placement", "default"]).fails();
}
