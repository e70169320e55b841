//! kcp's TMC kinds as kcp users write them: SyncTargets, Locations and Placements applied
//! with stock kubectl from kcp-style manifests, shown with kcp's columns, explained from
//! the published schema, validated, and the inventory kinds replicated to the cache so
//! placement on any shard can read them.

use serde_json::Value;
use tests::cache::topology::SINGLE;
use tests::cache::{self, CacheTopology, CONVERGE_TIMEOUT};
use tests::installation::{Installation, InstallationOptions};

const INVENTORY: &str = r#"
apiVersion: workload.kcp.io/v1alpha1
kind: SyncTarget
metadata:
  name: aws-east
  labels: {cloud: aws, region: us-east-1}
spec:
  unschedulable: false
  supportedAPIExports:
  - export: kubernetes
  cells: {rack: a}
---
apiVersion: scheduling.kcp.io/v1alpha1
kind: Location
metadata:
  name: aws
  labels: {cloud: aws}
spec:
  resource: {group: workload.kcp.io, version: v1alpha1, resource: synctargets}
  description: clusters in AWS
  availableSelectorLabels:
  - {key: region, values: [us-east-1, us-west-2]}
  instanceSelector:
    matchLabels: {cloud: aws}
---
apiVersion: scheduling.kcp.io/v1alpha1
kind: Placement
metadata:
  name: on-aws
spec:
  locationSelectors:
  - matchLabels: {cloud: aws}
  locationResource: {group: workload.kcp.io, version: v1alpha1, resource: synctargets}
  namespaceSelector: {}
  locationWorkspace: root
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcp_manifests_apply_and_the_inventory_reaches_the_cache() {
    let options = InstallationOptions { caches: Some(CacheTopology::single()), ..InstallationOptions::default() };
    let installation = Installation::start_with(options).await.unwrap();
    let root = &installation.root;
    let k = || root.kubectl().cluster("root");

    k().args(["apply", "-f", "-"]).stdin(INVENTORY).ok();
    let target: Value = k().args(["get", "synctarget", "aws-east", "-o", "json"]).ok().json().unwrap();
    assert_eq!(target["spec"]["unschedulable"], false, "kcp writes unschedulable even when false");
    assert_eq!(target["spec"]["supportedAPIExports"][0]["export"], "kubernetes");
    assert_eq!(target["metadata"]["generation"], 1);
    let locations = k().args(["get", "locations"]).ok().stdout;
    assert!(locations.contains("RESOURCE") && locations.contains("synctargets"), "{locations}");
    // The Labels column shows the Location's labels, which the controller writes down.
    tests::agent::wait_json(k, &["location", "aws"], "the labels annotation", |l| {
        l["metadata"]["annotations"]["scheduling.kcp.io/labels"] == "cloud=aws"
    });
    let placement: Value = k().args(["get", "placement", "on-aws", "-o", "json"]).ok().json().unwrap();
    assert_eq!(placement["spec"]["locationSelectors"][0]["matchLabels"]["cloud"], "aws");
    assert_eq!(placement["spec"]["locationWorkspace"], "root");
    // The controller chooses the one matching Location through the framework.
    k().args([
        "wait",
        "--for=jsonpath={.status.selectedLocation.locationName}=aws",
        "placement/on-aws",
        "--timeout=30s",
    ])
    .ok();
    let placement: Value = k().args(["get", "placement", "on-aws", "-o", "json"]).ok().json().unwrap();
    assert_eq!(placement["status"]["selectedLocation"], serde_json::json!({"path": "root", "locationName": "aws"}));
    assert_eq!(placement["status"]["conditions"][0]["status"], "True");
    // The Location counts the SyncTargets it selects, and the Ready ones.
    let second = r#"{"apiVersion":"workload.kcp.io/v1alpha1","kind":"SyncTarget","metadata":{"name":"aws-west","labels":{"cloud":"aws"}},"spec":{"unschedulable":false}}"#;
    k().args(["create", "-f", "-"]).stdin(second).ok();
    k().args(["wait", "--for=jsonpath={.status.instances}=2", "location/aws", "--timeout=30s"]).ok();
    // A heartbeat, as the agent writes it, makes the target Ready.
    let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let beat = serde_json::json!({"status": {"lastSyncerHeartbeatTime": now}}).to_string();
    k().args(["patch", "synctarget", "aws-west", "--subresource=status", "--type=merge", "-p", &beat]).ok();
    k().args(["wait", "--for=jsonpath={.status.availableInstances}=1", "location/aws", "--timeout=30s"]).ok();
    let nowhere = r#"{"apiVersion":"scheduling.kcp.io/v1alpha1","kind":"Placement","metadata":{"name":"on-azure"},
        "spec":{"locationSelectors":[{"matchLabels":{"cloud":"azure"}}],
        "locationResource":{"group":"workload.kcp.io","version":"v1alpha1","resource":"synctargets"}}}"#;
    k().args(["create", "-f", "-"]).stdin(nowhere).ok();
    k().args(["wait", "--for=jsonpath={.status.phase}=Pending", "placement/on-azure", "--timeout=30s"]).ok();
    let pending: Value = k().args(["get", "placement", "on-azure", "-o", "json"]).ok().json().unwrap();
    assert_eq!(pending["status"]["conditions"][0]["reason"], "LocationNotFound");
    let everything = k().args(["get", "kcp", "-o", "name"]).ok().stdout;
    for name in
        ["synctarget.workload.kcp.io/aws-east", "location.scheduling.kcp.io/aws", "placement.scheduling.kcp.io/on-aws"]
    {
        assert!(everything.contains(name), "the kcp category lacks {name}:\n{everything}");
    }
    let explained = k().args(["explain", "placement.spec.locationSelectors"]).ok().stdout;
    assert!(explained.contains("matchLabels"), "{explained}");
    let explained = k().args(["explain", "synctarget.status.lastSyncerHeartbeatTime"]).ok().stdout;
    assert!(explained.contains("FIELD: lastSyncerHeartbeatTime"), "{explained}");

    // kcp's selector and phase rules, as 422s.
    let bad = r#"{"apiVersion":"scheduling.kcp.io/v1alpha1","kind":"Placement","metadata":{"name":"bad"},
        "spec":{"locationSelectors":[{"matchExpressions":[{"key":"cloud","operator":"Maybe"}]}]}}"#;
    let refused = k().args(["create", "-f", "-"]).stdin(bad).fails().stderr;
    assert!(refused.contains("spec.locationSelectors[0]"), "{refused}");

    // The inventory kinds leave the shard; Placements stay.
    let cache = installation.cache(SINGLE).unwrap();
    cache::wait_replicas(cache, "the SyncTarget and the Location replicated", CONVERGE_TIMEOUT, |replicas| {
        let names: Vec<String> = replicas
            .iter()
            .filter_map(|r| r.key.as_ref())
            .map(|key| format!("{}/{}/{}", key.group, key.resource, key.name))
            .collect();
        names.contains(&"workload.kcp.io/synctargets/aws-east".to_string())
            && names.contains(&"scheduling.kcp.io/locations/aws".to_string())
    })
    .await
    .unwrap();
    let placements = cache.client().list_resource("scheduling.kcp.io", "placements").await.unwrap();
    assert!(placements.items.is_empty(), "placements are not replicated");
}
