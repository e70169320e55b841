//! Garbage collection by ownerReferences on a real `atoll-shard`, driven by stock kubectl:
//! background, foreground and orphan cascades, dependents with several owners, owner
//! references that cannot resolve, DeleteCollection, custom resources, and a collection
//! that a kill -9 interrupts and the restarted shard finishes.
//!
//! The collector works asynchronously, so every expectation about its effects is polled
//! with a generous deadline; nothing here depends on how fast it is.

use http::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tests::{Kubectl, ShardProcess};

/// How long the collector may take to reach an expected state.
const GC_DEADLINE: Duration = Duration::from_secs(60);
/// How often the state is polled.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// `/clusters/<cluster>/api/v1/namespaces/<ns>/<resource>/<name>`.
fn core_path(cluster: &str, namespace: &str, resource: &str, name: &str) -> String {
    format!("/clusters/{cluster}/api/v1/namespaces/{namespace}/{resource}/{name}")
}

/// The object at `path`, or `None` when it is not found.
async fn read(shard: &ShardProcess, path: &str) -> Option<Value> {
    let response = shard.http().get(path).await.unwrap_or_else(|e| panic!("GET {path}: {e:#}"));
    match response.status {
        StatusCode::OK => Some(response.json().expect("JSON object")),
        StatusCode::NOT_FOUND => None,
        other => panic!("GET {path}: HTTP {other}: {}", response.text()),
    }
}

/// Polls until `done` holds for the object at `path` (`None`: absent); panics with the
/// last state and the shard log after [`GC_DEADLINE`].
async fn wait_for(
    shard: &ShardProcess,
    path: &str,
    what: &str,
    done: impl Fn(Option<&Value>) -> bool,
) -> Option<Value> {
    let deadline = Instant::now() + GC_DEADLINE;
    loop {
        let current = read(shard, path).await;
        if done(current.as_ref()) {
            return current;
        }
        if Instant::now() >= deadline {
            panic!(
                "{path}: still not {what} after {GC_DEADLINE:?}; last state: {current:#?}\n--- shard log ---\n{}",
                shard.log_tail(60)
            );
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

async fn wait_gone(shard: &ShardProcess, path: &str) {
    wait_for(shard, path, "gone", |object| object.is_none()).await;
}

/// Creates an object from JSON with kubectl and returns it as stored (with its UID).
fn create(kubectl: &Kubectl, object: Value) -> Value {
    kubectl.clone().args(["create", "-o", "json", "-f", "-"]).stdin(object.to_string()).ok().json().unwrap()
}

fn uid(object: &Value) -> String {
    object["metadata"]["uid"].as_str().expect("created objects have a uid").to_string()
}

/// An ownerReference to `owner`.
fn owner_ref(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    })
}

fn config_map(name: &str, namespace: &str, owners: Vec<Value>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": owners},
        "data": {"k": "v"},
    })
}

fn owner_uids(object: Option<&Value>) -> Vec<String> {
    let references = object.and_then(|o| o["metadata"]["ownerReferences"].as_array().cloned()).unwrap_or_default();
    references.iter().filter_map(|r| r["uid"].as_str().map(str::to_string)).collect()
}

fn finalizers(object: Option<&Value>) -> Vec<String> {
    let list = object.and_then(|o| o["metadata"]["finalizers"].as_array().cloned()).unwrap_or_default();
    list.iter().filter_map(|f| f.as_str().map(str::to_string)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_cascade_deletes_dependents_down_the_chain() {
    let shard = ShardProcess::with_clusters(&["bg"]).await;
    let kubectl = shard.kubectl().cluster("bg");
    let owner = create(&kubectl, config_map("owner", "default", vec![]));
    let child = create(&kubectl, config_map("child", "default", vec![owner_ref(&owner, false)]));
    create(&kubectl, config_map("grandchild", "default", vec![owner_ref(&child, true)]));
    create(
        &kubectl,
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "secret", "namespace": "default",
            "ownerReferences": [owner_ref(&owner, false)]}, "stringData": {"k": "v"}}),
    );
    create(
        &kubectl,
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot", "namespace": "default",
            "ownerReferences": [owner_ref(&owner, true)]}}),
    );
    create(&kubectl, config_map("bystander", "default", vec![]));

    // A namespaced owner must be in its dependent's namespace: elsewhere the reference is
    // treated as absent, so this dependent goes even though its owner lives.
    kubectl.clone().args(["create", "namespace", "elsewhere"]).ok();
    create(&kubectl, config_map("stray", "elsewhere", vec![owner_ref(&owner, false)]));
    wait_gone(&shard, &core_path("bg", "elsewhere", "configmaps", "stray")).await;
    assert!(read(&shard, &core_path("bg", "default", "configmaps", "child")).await.is_some());

    // kubectl's default is --cascade=background: the owner goes at once.
    kubectl.clone().args(["delete", "configmap", "owner", "-n", "default"]).ok();
    assert!(read(&shard, &core_path("bg", "default", "configmaps", "owner")).await.is_none());
    for (resource, name) in
        [("configmaps", "child"), ("configmaps", "grandchild"), ("secrets", "secret"), ("serviceaccounts", "robot")]
    {
        wait_gone(&shard, &core_path("bg", "default", resource, name)).await;
    }
    assert!(read(&shard, &core_path("bg", "default", "configmaps", "bystander")).await.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependent_with_another_owner_survives_and_loses_the_dead_reference() {
    let shard = ShardProcess::with_clusters(&["two"]).await;
    let kubectl = shard.kubectl().cluster("two");
    let first = create(&kubectl, config_map("first", "default", vec![]));
    // A cluster-scoped owner may own namespaced dependents.
    let second =
        create(&kubectl, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "second-owner"}}));
    create(&kubectl, config_map("shared", "default", vec![owner_ref(&first, true), owner_ref(&second, false)]));

    kubectl.clone().args(["delete", "configmap", "first", "-n", "default"]).ok();
    let path = core_path("two", "default", "configmaps", "shared");
    // kube's collector removes the reference to the owner that is gone and keeps the object.
    let shared = wait_for(&shard, &path, "left with its live owner only", |object| {
        object.is_some() && owner_uids(object) == [uid(&second)]
    })
    .await;
    assert_eq!(shared.unwrap()["data"]["k"], "v");

    kubectl.clone().args(["delete", "namespace", "second-owner"]).ok();
    wait_gone(&shard, &path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_keeps_the_owner_until_blocking_dependents_are_gone() {
    let shard = ShardProcess::with_clusters(&["fg"]).await;
    let kubectl = shard.kubectl().cluster("fg");
    let owner = create(&kubectl, config_map("owner", "default", vec![]));
    let mut held = config_map("held", "default", vec![owner_ref(&owner, true)]);
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&kubectl, held);
    create(&kubectl, config_map("loose", "default", vec![owner_ref(&owner, false)]));
    let owner_path = core_path("fg", "default", "configmaps", "owner");
    let held_path = core_path("fg", "default", "configmaps", "held");

    // A dry run changes nothing, finalizers included.
    kubectl
        .clone()
        .args(["delete", "configmap", "owner", "-n", "default", "--cascade=foreground", "--dry-run=server"])
        .ok();
    let untouched = read(&shard, &owner_path).await;
    assert!(finalizers(untouched.as_ref()).is_empty(), "{untouched:?}");
    assert!(untouched.unwrap()["metadata"].get("deletionTimestamp").is_none());

    kubectl
        .clone()
        .args(["delete", "configmap", "owner", "-n", "default", "--cascade=foreground", "--wait=false"])
        .ok();
    let seen = kubectl.clone().args(["get", "configmap", "owner", "-n", "default", "-o", "json"]).ok().json().unwrap();
    assert!(seen["metadata"]["deletionTimestamp"].is_string(), "{seen}");
    assert_eq!(finalizers(Some(&seen)), ["foregroundDeletion"]);

    // Every dependent is deleted; the blocking one waits for its own finalizer.
    wait_gone(&shard, &core_path("fg", "default", "configmaps", "loose")).await;
    wait_for(&shard, &held_path, "deleting", |o| o.is_some_and(|o| o["metadata"]["deletionTimestamp"].is_string()))
        .await;
    let owner_now = read(&shard, &owner_path).await;
    assert_eq!(finalizers(owner_now.as_ref()), ["foregroundDeletion"], "the owner waits for its blocking dependent");

    kubectl.clone().clear_finalizers("configmap", "held", "default");
    wait_gone(&shard, &held_path).await;
    wait_gone(&shard, &owner_path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphan_keeps_dependents_without_the_reference() {
    let shard = ShardProcess::with_clusters(&["orphans"]).await;
    let kubectl = shard.kubectl().cluster("orphans");
    let owner = create(&kubectl, config_map("owner", "default", vec![]));
    let keeper = create(&kubectl, config_map("keeper", "default", vec![]));
    create(&kubectl, config_map("only", "default", vec![owner_ref(&owner, true)]));
    create(&kubectl, config_map("both", "default", vec![owner_ref(&owner, false), owner_ref(&keeper, false)]));

    // kubectl waits for the owner to disappear, which needs the collector.
    kubectl.clone().args(["delete", "configmap", "owner", "-n", "default", "--cascade=orphan", "--timeout=60s"]).ok();
    assert!(read(&shard, &core_path("orphans", "default", "configmaps", "owner")).await.is_none());
    let only = read(&shard, &core_path("orphans", "default", "configmaps", "only")).await;
    assert!(only.as_ref().is_some_and(|o| o["metadata"].get("ownerReferences").is_none()), "{only:?}");
    let both = read(&shard, &core_path("orphans", "default", "configmaps", "both")).await;
    assert_eq!(owner_uids(both.as_ref()), [uid(&keeper)]);

    // DeleteCollection honours the policy too; the raw API takes it from the body.
    for name in ["a", "b"] {
        let mut labelled = config_map(name, "default", vec![]);
        labelled["metadata"]["labels"] = json!({"batch": "1"});
        let parent = create(&kubectl, labelled);
        create(&kubectl, config_map(&format!("{name}-child"), "default", vec![owner_ref(&parent, true)]));
    }
    let path = "/clusters/orphans/api/v1/namespaces/default/configmaps?labelSelector=batch%3D1";
    let body = serde_json::to_vec(&json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"}))
        .unwrap();
    let response =
        shard.http().send(Method::DELETE, path, &[("content-type", "application/json")], body).await.unwrap();
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    for name in ["a", "b"] {
        wait_gone(&shard, &core_path("orphans", "default", "configmaps", name)).await;
        let child = read(&shard, &core_path("orphans", "default", "configmaps", &format!("{name}-child"))).await;
        assert!(child.as_ref().is_some_and(|c| c["metadata"].get("ownerReferences").is_none()), "{child:?}");
    }

    // Both policies at once are refused as kube refuses them.
    let body = json!({"propagationPolicy": "Orphan", "orphanDependents": true}).to_string();
    let response = shard
        .http()
        .send(Method::DELETE, &core_path("orphans", "default", "configmaps", "keeper"), &[], body)
        .await
        .unwrap();
    assert_eq!(response.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", response.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_own_and_are_owned() {
    let shard = ShardProcess::with_clusters(&["custom"]).await;
    let kubectl = shard.kubectl().cluster("custom");
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;
    kubectl.clone().args(["apply", "-f", "-"]).stdin(crd).ok();
    kubectl.clone().args(["wait", "--for=condition=Established", "crd/gadgets.example.com", "--timeout=30s"]).ok();
    let gadget = create(
        &kubectl,
        json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "default"}}),
    );
    create(&kubectl, config_map("of-gadget", "default", vec![owner_ref(&gadget, true)]));
    let holder = create(&kubectl, config_map("holder", "default", vec![]));
    create(
        &kubectl,
        json!({"apiVersion": "example.com/v1", "kind": "Gadget",
            "metadata": {"name": "owned", "namespace": "default", "ownerReferences": [owner_ref(&holder, true)]}}),
    );

    kubectl.clone().args(["delete", "gadget", "g", "-n", "default"]).ok();
    wait_gone(&shard, &core_path("custom", "default", "configmaps", "of-gadget")).await;
    kubectl
        .clone()
        .args(["delete", "configmap", "holder", "-n", "default", "--cascade=foreground", "--timeout=60s"])
        .ok();
    wait_gone(&shard, "/clusters/custom/apis/example.com/v1/namespaces/default/gadgets/owned").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collection_interrupted_by_kill9_finishes_after_restart() {
    let mut shard = ShardProcess::with_clusters(&["crash"]).await;
    let kubectl = shard.kubectl().cluster("crash");

    // Work that cannot finish before the crash: a foreground owner waits for a dependent
    // held by a finalizer.
    let waiting = create(&kubectl, config_map("waiting", "default", vec![]));
    let mut held = config_map("held", "default", vec![owner_ref(&waiting, true)]);
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&kubectl, held);
    kubectl
        .clone()
        .args(["delete", "configmap", "waiting", "-n", "default", "--cascade=foreground", "--wait=false"])
        .ok();
    let held_path = core_path("crash", "default", "configmaps", "held");
    wait_for(&shard, &held_path, "deleting", |o| o.is_some_and(|o| o["metadata"]["deletionTimestamp"].is_string()))
        .await;

    // Work that is most likely still under way at the crash: many dependents of an owner
    // deleted in background just before it.
    let owner = create(&kubectl, config_map("owner", "default", vec![]));
    // One stream of JSON documents, so that one kubectl creates them all.
    let manifest: Vec<String> = (0..DEPENDENTS)
        .map(|i| {
            let mut dependent = config_map(&format!("dep-{i}"), "default", vec![owner_ref(&owner, false)]);
            dependent["metadata"]["labels"] = json!({"role": "dependent"});
            dependent.to_string()
        })
        .collect();
    kubectl.clone().args(["create", "-f", "-"]).stdin(manifest.join("\n")).ok();
    // Deleted over the raw API, the dependents counted through it, and killed at once,
    // without a kubectl process in between.
    let owner_path = core_path("crash", "default", "configmaps", "owner");
    let response = shard.http().send(Method::DELETE, &owner_path, &[], Vec::new()).await.unwrap();
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    let present_before_kill = dependents(&shard).await;
    shard.kill9();
    shard.restart().await.expect("restart after kill -9");

    // The restarted collector rebuilds its index from the store and finishes the job.
    for i in 0..DEPENDENTS {
        wait_gone(&shard, &core_path("crash", "default", "configmaps", &format!("dep-{i}"))).await;
    }
    assert_eq!(dependents(&shard).await, 0, "every dependent was collected after the restart");

    // Proof that the collection was still under way at the kill and that the restarted
    // collector finished it: dependents were left just before the kill, and the restarted
    // process (its counters start at zero) deleted some of them itself, no more than
    // were left. Without that the recovery path above never ran.
    let deleted_after_restart = gc_deletes(&shard).await;
    println!(
        "{present_before_kill} dependents left just before the kill, {deleted_after_restart} deleted after the restart"
    );
    assert!(
        present_before_kill > 0,
        "the collector had deleted every dependent before the kill: the test did not interrupt a collection"
    );
    assert!(
        deleted_after_restart > 0 && deleted_after_restart <= present_before_kill,
        "the restarted collector deleted {deleted_after_restart} objects, {present_before_kill} dependents \
         were left just before the kill: the recovery path did not finish the collection"
    );

    // The restarted collector knows the owner still waits: releasing its dependent lets it go.
    let waiting_path = core_path("crash", "default", "configmaps", "waiting");
    assert_eq!(finalizers(read(&shard, &waiting_path).await.as_ref()), ["foregroundDeletion"]);
    shard.kubectl().cluster("crash").clear_finalizers("configmap", "held", "default");
    wait_gone(&shard, &held_path).await;
    wait_gone(&shard, &waiting_path).await;
}

/// The dependents of `owner` in the interrupted-collection test.
const DEPENDENTS: usize = 150;

/// How many of the interrupted-collection test's dependents the shard still serves.
async fn dependents(shard: &ShardProcess) -> usize {
    let path = "/clusters/crash/api/v1/namespaces/default/configmaps?labelSelector=role%3Ddependent";
    let response = shard.http().get(path).await.unwrap_or_else(|e| panic!("GET {path}: {e:#}"));
    assert_eq!(response.status, StatusCode::OK, "GET {path}: {}", response.text());
    let list: Value = response.json().expect("a list");
    list["items"].as_array().expect("a list has items").len()
}

/// How many objects this shard process's garbage collector deleted (its
/// `atoll_gc_actions_total{action="delete"}`; absent before its first delete).
async fn gc_deletes(shard: &ShardProcess) -> usize {
    let metrics = shard.http().get("/metrics").await.expect("GET /metrics").text();
    let line =
        metrics.lines().find(|line| line.starts_with("atoll_gc_actions_total{") && line.contains("action=\"delete\""));
    line.and_then(|line| line.rsplit(' ').next()?.parse().ok()).unwrap_or_default()
}
