//! Replication through real processes: `atoll-cache-server` alone, then installations of
//! root + 2 shards with regional caches A (root, shard-1) and B (shard-2) under parent P,
//! every shard's informers watching P.
//!
//! Every installation test ends with the same invariant, checked by
//! [`tests::cache::wait_matches`]: the cache holds exactly the shards' replicated objects
//! (uid, source resourceVersion, `kcp.io/path`, content), and nothing of deleted ones. No
//! assertion is about time: convergence is polled with a generous deadline.

use protocol::wellknown::{ORIGIN_ANNOTATION, REPLICATE_ANNOTATION, SOURCE_RV_ANNOTATION};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use protocol::cache::{change, watch_event, Batch, Change, Replica, ReplicaKey, WatchRequest};
use serde_json::{json, Value};
use tests::cache::topology::{FIRST, PARENT, REGION_A, REGION_B, SECOND};
use tests::cache::{self, CacheServerOptions, CacheServerProcess, CacheTopology, ReplicaId, CONVERGE_TIMEOUT};
use tests::installation::{Installation, InstallationOptions};
use tests::{ShardProcess, TlsHttp};
use tonic::Code;

const RBAC: &str = "rbac.authorization.k8s.io";
const CLUSTER_ROLES: &str = "clusterroles";
/// How many workspaces the placement helpers may create before giving up.
const PLACEMENT_MAX: usize = 30;

/// Root + shard-1 + shard-2 with the caches of `topology`.
async fn installation(topology: CacheTopology) -> Installation {
    let options = InstallationOptions { extra_shards: 2, caches: Some(topology), ..InstallationOptions::default() };
    Installation::start_with(options).await.expect("start the installation with its caches")
}

/// Creates workspaces in root until shard-1 and shard-2 host one each; returns their
/// canonical paths `(on shard-1, on shard-2)`.
async fn workspace_per_shard(installation: &Installation, prefix: &str) -> (String, String) {
    let has = |placement: &std::collections::BTreeMap<String, Vec<String>>, shard: &str| {
        placement.get(shard).is_some_and(|names| !names.is_empty())
    };
    let placement = installation
        .place_workspaces(prefix, PLACEMENT_MAX, |p| has(p, "shard-1") && has(p, "shard-2"))
        .await
        .expect("place a workspace on each shard");
    let path = |shard: &str| format!("root:{}", placement[shard][0]);
    (path("shard-1"), path("shard-2"))
}

/// A ClusterRole, marked for replication or not.
fn cluster_role(name: &str, replicate: bool) -> Value {
    let mut role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
    });
    if replicate {
        role["metadata"]["annotations"] = json!({REPLICATE_ANNOTATION: "true"});
    }
    role
}

/// `kubectl apply`s `object` in the logical cluster at `path` on `shard`.
fn apply(shard: &ShardProcess, path: &str, object: &Value) {
    shard.kubectl().cluster(path).args(["apply", "-f", "-"]).stdin(object.to_string()).ok();
}

/// The id of ClusterRole `name` in `cluster` on `origin`.
fn role_id(origin: &str, cluster: &str, name: &str) -> ReplicaId {
    ReplicaId {
        origin: origin.into(),
        cluster: cluster.into(),
        group: RBAC.into(),
        resource: CLUSTER_ROLES.into(),
        namespace: String::new(),
        name: name.into(),
    }
}

/// The logical cluster name behind the canonical path `path` on `shard`.
async fn cluster_of(shard: &ShardProcess, path: &str) -> String {
    let response =
        shard.http().get(&format!("/clusters/{path}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster")).await.unwrap();
    assert_eq!(response.status, StatusCode::OK, "{path} on {}: {}", shard.name(), response.text());
    let object = response.json().unwrap();
    object["metadata"]["annotations"]["kcp.io/cluster"]
        .as_str()
        .unwrap_or_else(|| panic!("LogicalCluster of {path} without kcp.io/cluster: {object}"))
        .to_string()
}

/// Waits until `cache` equals the sources of the shards named `origins`.
async fn assert_matches(installation: &Installation, cache: &str, origins: &[&str]) {
    let shards: Vec<&ShardProcess> = origins.iter().map(|name| installation.by_name(name).unwrap()).collect();
    let cache = installation.cache(cache).unwrap();
    cache::wait_matches(cache, &shards, CONVERGE_TIMEOUT).await.unwrap_or_else(|e| panic!("{e:#}"));
}

/// A replica of a made-up ClusterRole of `origin`, as a shard would send it.
fn made_up_replica(origin: &str, name: &str, source_rv: u64) -> Replica {
    let object = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": source_rv.to_string(),
                     "annotations": {REPLICATE_ANNOTATION: "true", "kcp.io/path": "root:made-up",
                                     SOURCE_RV_ANNOTATION: source_rv.to_string(), ORIGIN_ANNOTATION: origin}},
        "rules": [],
    });
    Replica {
        key: Some(role_id(origin, "madeup", name).to_key()),
        uid: format!("uid-{name}"),
        source_rv,
        object: serde_json::to_vec(&object).unwrap(),
        sender: String::new(),
    }
}

fn upsert(replica: Replica) -> Change {
    Change { change: Some(change::Change::Upsert(replica)), force: false }
}

fn tombstone(key: ReplicaKey) -> Change {
    Change { change: Some(change::Change::Tombstone(key)), force: false }
}

fn names(replicas: &[Replica]) -> Vec<String> {
    replicas.iter().filter_map(|r| r.key.as_ref()).map(|k| ReplicaId::from(k).to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_server_stores_relays_and_guards_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    cache::ensure_pki(&pki, &dir.path().join("harness-certs")).unwrap();
    let parent = CacheServerProcess::start(CacheServerOptions::new("parent", &pki)).await.unwrap();
    let child_options = CacheServerOptions {
        parents: vec![parent.url()],
        resync_interval_seconds: Some(1),
        ..CacheServerOptions::new("child", &pki)
    };
    let mut child = CacheServerProcess::start(child_options).await.unwrap();

    // A shard's certificate (as shards get them: CN system:atoll:shard:<name>, O
    // system:masters) writes replicas of its own origin, and the acknowledged position
    // is where it resumes.
    let shard_1 = cache::mint_identity(&pki, "system:atoll:shard:shard-1", &["system:masters"]).unwrap();
    let as_shard_1 = child.client_as(&shard_1).unwrap();
    let batch = Batch {
        changes: vec![upsert(made_up_replica("shard-1", "kept", 4)), upsert(made_up_replica("shard-1", "doomed", 5))],
        position: 5,
        ..Batch::default()
    };
    let answers = as_shard_1.replicate("shard-1", vec![batch]).await.expect("shard-1 writes its own replicas");
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0].position, 0, "a new sender starts from 0: {answers:?}");
    assert_eq!((answers[1].position, answers[1].batches), (5, 1), "{answers:?}");
    let listed = child.client().list_resource(RBAC, CLUSTER_ROLES).await.unwrap();
    assert_eq!(names(&listed.items).len(), 2, "{:?}", names(&listed.items));
    let kept = cache::find(&listed.items, &role_id("shard-1", "madeup", "kept")).expect("kept is listed");
    assert_eq!((kept.uid.as_str(), kept.source_rv), ("uid-kept", 4));

    // ...and never another origin, whatever sender it claims to be.
    let foreign =
        Batch { changes: vec![upsert(made_up_replica("shard-2", "forged", 9))], position: 6, ..Batch::default() };
    let refused = as_shard_1.replicate("shard-1", vec![foreign.clone()]).await.expect_err("forged origin");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    let refused = as_shard_1.replicate("shard-2", vec![foreign]).await.expect_err("forged sender");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");

    // The parent receives everything the child holds.
    cache::wait_replicas(&parent, "both replicas relayed", CONVERGE_TIMEOUT, |replicas| {
        let ids = names(replicas);
        ids.iter().any(|id| id.ends_with("/kept")) && ids.iter().any(|id| id.ends_with("/doomed"))
    })
    .await
    .unwrap();

    // A watch from the list's version sees a tombstone as DELETED, and the parent drops
    // the replica too.
    let mut watch = child
        .client()
        .watch(WatchRequest { group: RBAC.into(), resource: CLUSTER_ROLES.into(), from_rv: listed.rv })
        .await
        .expect("open a watch");
    let delete = Batch {
        changes: vec![tombstone(role_id("shard-1", "madeup", "doomed").to_key())],
        position: 6,
        ..Batch::default()
    };
    as_shard_1.replicate("shard-1", vec![delete]).await.expect("shard-1 deletes its own replica");
    let deleted = tokio::time::timeout(CONVERGE_TIMEOUT, async {
        while let Some(event) = watch.message().await.expect("read the watch") {
            let name = event.replica.as_ref().and_then(|r| r.key.as_ref()).map(|k| k.name.clone());
            if event.kind == watch_event::Kind::Deleted as i32 && name.as_deref() == Some("doomed") {
                return event;
            }
        }
        panic!("the watch ended before the tombstone arrived");
    })
    .await
    .expect("DELETED event for the tombstone");
    assert!(deleted.rv > listed.rv, "{deleted:?} after list rv {}", listed.rv);
    cache::wait_replicas(&parent, "the tombstone relayed", CONVERGE_TIMEOUT, |replicas| {
        let ids = names(replicas);
        ids.iter().any(|id| id.ends_with("/kept")) && !ids.iter().any(|id| id.ends_with("/doomed"))
    })
    .await
    .unwrap();

    // A crash loses nothing acknowledged: replicas and the sender's position survive.
    child.kill9();
    child.restart().await.unwrap();
    // A fresh client: the old one's connection died with the process.
    let as_shard_1 = child.client_as(&shard_1).unwrap();
    let after = child.client().list_resource(RBAC, CLUSTER_ROLES).await.unwrap();
    assert_eq!(names(&after.items), ["shard-1/madeup/rbac.authorization.k8s.io/clusterroles/kept"]);
    let hello = as_shard_1.replicate("shard-1", Vec::new()).await.expect("reconnect after the restart");
    assert_eq!(hello[0].position, 6, "resume from the last acknowledged position: {hello:?}");

    // Admins may tamper (the tests below rely on it); a user who is neither a shard, a
    // cache nor an admin may write nothing, not even under her own name.
    let mut altered = made_up_replica("shard-1", "kept", 4);
    altered.uid = "tampered".into();
    child.client().force_upsert(altered).await.expect("admin may force a replica");
    let stranger = child.client_as(&cache::mint_identity(&pki, "mallory", &[]).unwrap()).unwrap();
    let own_name =
        Batch { changes: vec![upsert(made_up_replica("mallory", "mine", 1))], position: 1, ..Batch::default() };
    let denied = stranger.replicate("mallory", vec![own_name]).await.expect_err("mallory writes");
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_reach_regional_caches_and_the_parent() {
    let installation = installation(CacheTopology::regional()).await;
    let (on_1, on_2) = workspace_per_shard(&installation, "rep").await;
    let shard_1 = installation.by_name("shard-1").unwrap();
    let shard_2 = installation.by_name("shard-2").unwrap();
    let placements = [(&installation.root, "root"), (shard_1, on_1.as_str()), (shard_2, on_2.as_str())];
    for (shard, path) in placements {
        apply(shard, path, &cluster_role("plain", false));
        apply(shard, path, &cluster_role("marked", true));
    }
    // Regional caches hold their own shards' replicas, the parent everybody's.
    assert_matches(&installation, REGION_A, &["root", "shard-1"]).await;
    assert_matches(&installation, REGION_B, &["shard-2"]).await;
    assert_matches(&installation, PARENT, &["root", "shard-1", "shard-2"]).await;
    // The comparison has teeth: A holds nothing of shard-2, and says so.
    let against_2 = cache::differences(installation.cache(REGION_A).unwrap(), &[shard_2]).await.unwrap();
    assert!(!against_2.is_empty(), "shard-2 replicates something");
    assert!(
        against_2.iter().all(|d| d.contains("missing in the cache") || d.contains("more differences")),
        "{against_2:#?}"
    );
    let parent = installation.cache(PARENT).unwrap();
    let held = parent.replicas().await.unwrap();
    let cluster_2 = cluster_of(shard_2, &on_2).await;
    for name in ["root", "shard-1", "shard-2"] {
        let id = ReplicaId { group: "core.kcp.io".into(), resource: "shards".into(), ..role_id("root", "root", name) };
        assert!(cache::find(&held, &id).is_some(), "Shard {name} not in the parent: {:#?}", names(&held));
    }
    assert!(cache::find(&held, &role_id("shard-2", &cluster_2, "marked")).is_some(), "{:#?}", names(&held));
    assert!(cache::find(&held, &role_id("shard-2", &cluster_2, "plain")).is_none(), "unmarked role replicated");

    // Marking a role replicates it; deleting one removes it everywhere.
    shard_2
        .kubectl()
        .cluster(&on_2)
        .args(["annotate", "clusterrole", "plain", &format!("{REPLICATE_ANNOTATION}=true")])
        .ok();
    shard_1.kubectl().cluster(&on_1).args(["delete", "clusterrole", "marked"]).ok();
    cache::wait_replicas(parent, "the newly marked role", CONVERGE_TIMEOUT, |replicas| {
        cache::find(replicas, &role_id("shard-2", &cluster_2, "plain")).is_some()
    })
    .await
    .unwrap();
    assert_matches(&installation, REGION_A, &["root", "shard-1"]).await;
    assert_matches(&installation, REGION_B, &["shard-2"]).await;
    assert_matches(&installation, PARENT, &["root", "shard-1", "shard-2"]).await;

    // A shard's own certificate writes only its own origin.
    let identity = cache::shard_identity(shard_1).unwrap();
    let as_shard_1 = installation.cache(REGION_A).unwrap().client_as(&identity).unwrap();
    let forged =
        Batch { changes: vec![upsert(made_up_replica("shard-2", "forged", 1))], position: 0, ..Batch::default() };
    let refused = as_shard_1.replicate("shard-1", vec![forged]).await.expect_err("shard-1 writes as shard-2");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    assert!(!refused.message().is_empty(), "the refusal says why");
}

/// Writes ClusterRoles (create, update, delete) round-robin over `targets` until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    writes: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<anyhow::Result<usize>>,
}

/// The most writes one [`Load`] makes; a bound in case a test forgets to stop it.
const LOAD_WRITES_MAX: usize = 20_000;

/// The pause between two writes of a [`Load`], so that it leaves the two cores to the
/// processes under test.
const LOAD_PAUSE: Duration = Duration::from_millis(5);

impl Load {
    fn start(targets: Vec<(TlsHttp, String)>) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let writes = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn(run_load(targets, stop.clone(), writes.clone()));
        Load { stop, writes, task }
    }

    /// Waits until `more` further writes succeeded.
    async fn wait_writes(&self, more: usize) {
        let target = self.writes.load(Ordering::Relaxed) + more;
        let deadline = Instant::now() + CONVERGE_TIMEOUT;
        while self.writes.load(Ordering::Relaxed) < target {
            assert!(!self.task.is_finished(), "the load stopped early");
            assert!(Instant::now() < deadline, "the load did not make {more} writes within {CONVERGE_TIMEOUT:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn finish(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.expect("join the load").unwrap_or_else(|e| panic!("the load failed: {e:#}"))
    }
}

/// Per target, write `j` is: j % 4 ∈ {0, 1} create `load-j`; 2 relabel `load-(j-1)`; 3
/// delete `load-(j-3)`: creates, updates and deletes, always of objects that exist.
async fn run_load(
    targets: Vec<(TlsHttp, String)>,
    stop: Arc<AtomicBool>,
    writes: Arc<AtomicUsize>,
) -> anyhow::Result<usize> {
    let mut counters = vec![0usize; targets.len()];
    for index in 0..LOAD_WRITES_MAX {
        if stop.load(Ordering::Relaxed) {
            return Ok(index);
        }
        let target = index % targets.len();
        let (http, path) = &targets[target];
        let j = counters[target];
        counters[target] += 1;
        let collection = format!("/clusters/{path}/apis/rbac.authorization.k8s.io/v1/clusterroles");
        let (method, url, body, content_type) = match j % 4 {
            0 | 1 => (Method::POST, collection, cluster_role(&format!("load-{j}"), true), "application/json"),
            2 => (
                Method::PATCH,
                format!("{collection}/load-{}", j - 1),
                json!({"metadata": {"labels": {"generation": j.to_string()}}}),
                "application/merge-patch+json",
            ),
            _ => (Method::DELETE, format!("{collection}/load-{}", j - 3), Value::Null, "application/json"),
        };
        let bytes = if body.is_null() { Vec::new() } else { serde_json::to_vec(&body)? };
        let response = http.send(method.clone(), &url, &[("content-type", content_type)], bytes).await?;
        anyhow::ensure!(response.status.is_success(), "{method} {url}: HTTP {}: {}", response.status, response.text());
        writes.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(LOAD_PAUSE).await;
    }
    Ok(LOAD_WRITES_MAX)
}

/// Alters a replica's content (a label) without touching its versions, as drift would.
fn tampered(replica: &Replica) -> Replica {
    let mut object = replica.object_json().expect("replica JSON");
    object["metadata"]["labels"] = json!({"tampered": "yes"});
    Replica { object: serde_json::to_vec(&object).unwrap(), ..replica.clone() }
}

/// How far a cache has come through tampering and repair of one replica.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Repair {
    /// Nothing seen yet.
    #[default]
    Pending,
    /// The cache reported the tampering.
    Tampered,
    /// The cache reported the replica restored after the tampering.
    Repaired,
}

impl Repair {
    /// The next state after an event about the replica: `tampering` says whether the event
    /// shows the tampered state, `restoring` whether it shows a restored one.
    fn step(self, tampering: bool, restoring: bool) -> Repair {
        match self {
            Repair::Pending if tampering => Repair::Tampered,
            Repair::Tampered if restoring => Repair::Repaired,
            state => state,
        }
    }
}

fn has_tamper_label(replica: &Replica) -> bool {
    replica.object_json().is_some_and(|object| object.pointer("/metadata/labels/tampered").is_some())
}

/// Alters `altered` (when given) and deletes `deleted` in `cache` as an admin, and reads a
/// watch opened before until the cache has reported both tamperings and then both
/// repairs: proof that the drift really existed in the cache and was repaired.
async fn tamper_and_see_repaired(cache: &CacheServerProcess, altered: Option<&Replica>, deleted: &Replica) {
    let client = cache.client();
    let listed = client.list_resource(RBAC, CLUSTER_ROLES).await.unwrap();
    let request = WatchRequest { group: RBAC.into(), resource: CLUSTER_ROLES.into(), from_rv: listed.rv };
    let mut watch = client.watch(request).await.expect("open a watch before tampering");
    let id_of = |replica: &Replica| ReplicaId::from(replica.key.as_ref().expect("replica key"));
    let deleted_id = id_of(deleted);
    let altered_id = altered.map(id_of);
    if let Some(altered) = altered {
        client.force_upsert(tampered(altered)).await.unwrap();
    }
    client.force_tombstone(deleted_id.to_key()).await.unwrap();
    let mut alteration = if altered.is_some() { Repair::Pending } else { Repair::Repaired };
    let mut deletion = Repair::Pending;
    let progress = async {
        while alteration != Repair::Repaired || deletion != Repair::Repaired {
            let event = watch.message().await.expect("read the watch").expect("the watch ended");
            let Some(replica) = &event.replica else { continue };
            let id = id_of(replica);
            let deleted_event = event.kind == watch_event::Kind::Deleted as i32;
            if Some(&id) == altered_id.as_ref() && !deleted_event {
                alteration = alteration.step(has_tamper_label(replica), !has_tamper_label(replica));
            }
            if id == deleted_id {
                deletion = deletion.step(deleted_event, !deleted_event);
            }
        }
    };
    let finished = tokio::time::timeout(CONVERGE_TIMEOUT, progress).await;
    assert!(
        finished.is_ok(),
        "cache {}: alteration {alteration:?}, deletion {deletion:?} after {CONVERGE_TIMEOUT:?}\n{}",
        cache.name(),
        cache.log_tail(40)
    );
}

/// The first replica of `origin`'s ClusterRoles named `load-*` in `replicas`.
fn some_load_role<'a>(replicas: &'a [Replica], origin: &str, skip: usize) -> &'a Replica {
    replicas
        .iter()
        .filter(|r| {
            r.key
                .as_ref()
                .is_some_and(|k| k.origin == origin && k.resource == CLUSTER_ROLES && k.name.starts_with("load-"))
        })
        .nth(skip)
        .unwrap_or_else(|| panic!("no load role #{skip} of {origin}: {:#?}", names(replicas)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_cache_catches_up_and_drift_is_repaired() {
    let mut installation = installation(CacheTopology::regional()).await;
    let (on_1, on_2) = workspace_per_shard(&installation, "load").await;
    let shard_1 = installation.by_name("shard-1").unwrap();
    let shard_2 = installation.by_name("shard-2").unwrap();
    let targets = vec![
        (installation.root.http(), "root".to_string()),
        (shard_1.http(), on_1.clone()),
        (shard_2.http(), on_2.clone()),
    ];
    let load = Load::start(targets);
    load.wait_writes(30).await;

    // Regional cache A crashes while root and shard-1 keep writing, and comes back with
    // its data dir: replication resumes and catches up.
    installation.cache_mut(REGION_A).unwrap().kill9();
    load.wait_writes(60).await;
    installation.cache_mut(REGION_A).unwrap().restart().await.unwrap();
    load.wait_writes(60).await;
    let written = load.finish().await;
    assert!(written >= 150, "{written} writes");
    assert_matches(&installation, REGION_A, &["root", "shard-1"]).await;
    assert_matches(&installation, REGION_B, &["shard-2"]).await;
    assert_matches(&installation, PARENT, &["root", "shard-1", "shard-2"]).await;

    // Drift in the regional caches: a replica altered, one deleted in A; one deleted in B.
    let region_a = installation.cache(REGION_A).unwrap();
    let region_b = installation.cache(REGION_B).unwrap();
    let in_a = region_a.replicas().await.unwrap();
    let in_b = region_b.replicas().await.unwrap();
    let altered = some_load_role(&in_a, "root", 0);
    let deleted_a = some_load_role(&in_a, "shard-1", 0);
    let deleted_b = some_load_role(&in_b, "shard-2", 0);
    tamper_and_see_repaired(region_a, Some(altered), deleted_a).await;
    tamper_and_see_repaired(region_b, None, deleted_b).await;
    assert_matches(&installation, REGION_A, &["root", "shard-1"]).await;
    assert_matches(&installation, REGION_B, &["shard-2"]).await;
    assert_matches(&installation, PARENT, &["root", "shard-1", "shard-2"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_in_the_parent_is_repaired() {
    let installation = installation(CacheTopology::regional()).await;
    let (on_1, on_2) = workspace_per_shard(&installation, "drift").await;
    for (shard, path) in [("shard-1", &on_1), ("shard-2", &on_2)] {
        let shard = installation.by_name(shard).unwrap();
        apply(shard, path, &cluster_role("load-a", true));
        apply(shard, path, &cluster_role("load-b", true));
    }
    assert_matches(&installation, PARENT, &["root", "shard-1", "shard-2"]).await;
    let parent = installation.cache(PARENT).unwrap();
    let held = parent.replicas().await.unwrap();
    tamper_and_see_repaired(parent, Some(some_load_role(&held, "shard-1", 0)), some_load_role(&held, "shard-2", 1))
        .await;
    assert_matches(&installation, PARENT, &["root", "shard-1", "shard-2"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_shards_replicas_vanish_from_every_cache() {
    let mut installation = installation(CacheTopology::regional()).await;
    let (_, on_2) = workspace_per_shard(&installation, "gone").await;
    let shard_2 = installation.by_name("shard-2").unwrap();
    apply(shard_2, &on_2, &cluster_role("doomed", true));
    assert_matches(&installation, REGION_B, &["shard-2"]).await;
    assert_matches(&installation, PARENT, &["root", "shard-1", "shard-2"]).await;

    // The shard is gone for good: stopped, and its Shard object deleted in root.
    installation.shard_mut("shard-2").unwrap().kill9();
    installation.root.kubectl().cluster("root").args(["delete", "shard", "shard-2"]).ok();
    let no_trace = |replicas: &[Replica]| {
        replicas
            .iter()
            .filter_map(|r| r.key.as_ref())
            .all(|k| k.origin != "shard-2" && !(k.resource == "shards" && k.name == "shard-2"))
    };
    for cache in [PARENT, REGION_B, REGION_A] {
        let cache = installation.cache(cache).unwrap();
        cache::wait_replicas(cache, "no replica of shard-2 left", CONVERGE_TIMEOUT, no_trace).await.unwrap();
    }
    // Everybody else's replicas stay.
    assert_matches(&installation, PARENT, &["root", "shard-1"]).await;
    assert_matches(&installation, REGION_A, &["root", "shard-1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replication_fails_over_to_the_second_cache() {
    let mut installation = installation(CacheTopology::failover()).await;
    let (on_1, _) = workspace_per_shard(&installation, "fo").await;
    apply(&installation.root, "root", &cluster_role("before", true));
    assert_matches(&installation, FIRST, &["root", "shard-1", "shard-2"]).await;

    installation.cache_mut(FIRST).unwrap().kill9();
    apply(&installation.root, "root", &cluster_role("after", true));
    apply(installation.by_name("shard-1").unwrap(), &on_1, &cluster_role("after", true));
    assert_matches(&installation, SECOND, &["root", "shard-1", "shard-2"]).await;
    let second = installation.cache(SECOND).unwrap().replicas().await.unwrap();
    assert!(cache::find(&second, &role_id("root", "root", "after")).is_some(), "{:#?}", names(&second));
}

/// Regional caches A and B under parent P: shard-1 writes to A and fails over to B, every
/// other shard writes to B; every shard's informers watch P.
fn failover_under_a_parent() -> CacheTopology {
    use tests::cache::topology::{CacheSpec, ShardCaches};
    let caches = |names: &[&str]| names.iter().map(|name| name.to_string()).collect::<Vec<_>>();
    CacheTopology {
        caches: vec![CacheSpec::top(PARENT), CacheSpec::under(REGION_A, PARENT), CacheSpec::under(REGION_B, PARENT)],
        default_shard: ShardCaches { write: caches(&[REGION_B]), watch: caches(&[PARENT]) },
        per_shard: std::collections::BTreeMap::from([(
            "shard-1".to_string(),
            ShardCaches { write: caches(&[REGION_A, REGION_B]), watch: caches(&[PARENT]) },
        )]),
        resync_interval_seconds: tests::cache::topology::TEST_RESYNC_INTERVAL_SECONDS,
    }
}

/// The resurrection bug of issue 15: shard-1 replicates an object through regional cache A,
/// fails over to B, and deletes the object there. A, back, still holds the object and its
/// uplink re-sent it to the parent, which had no memory of the deletion. The parent must
/// stay without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_after_failover_is_not_resurrected_by_the_old_cache() {
    let mut installation = installation(failover_under_a_parent()).await;
    let doomed = delete_after_failover(&mut installation, "res").await;

    // A comes back, still holding the role, and pushes what it holds to the parent.
    old_cache_returns_and_the_parent_stays_without(&mut installation, &doomed).await;
    assert_matches(&installation, PARENT, &["root", "shard-1", "shard-2"]).await;
}

/// How long the parent remembers a deletion in the fencing test: far shorter than the old
/// cache stays away, so only fencing can keep the deleted object out.
const SHORT_TOMBSTONE_RETENTION_SECONDS: u64 = 2;

/// Issue 15's remaining hole, with no time bound: shard-1 replicates through regional cache
/// A, fails over to B when A goes away, and deletes an object there. The parent forgets the
/// deletion (a 2 s `--tombstone-retention-seconds`) long before A comes back still holding
/// the object. The parent must not take it back from A (A relays an older replication
/// session of shard-1 than B does), and A must drop shard-1's replicas once it sees that
/// shard-1 moved on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_cache_back_after_the_deletion_is_forgotten_resurrects_nothing() {
    let mut installation = installation(failover_under_a_parent()).await;
    let parent = installation.cache_mut(PARENT).unwrap();
    let retention = SHORT_TOMBSTONE_RETENTION_SECONDS.to_string();
    parent.options_mut().extra_args.extend(["--tombstone-retention-seconds".to_string(), retention]);
    parent.restart().await.unwrap();
    let doomed = delete_after_failover(&mut installation, "fence").await;
    let gone = |replicas: &[Replica]| cache::find(replicas, &doomed).is_none();

    // The parent forgets the deletion while A is still away: the time-bounded guard is
    // gone, and only fencing is left.
    let parent = installation.cache(PARENT).unwrap();
    let forgotten =
        || std::fs::read_to_string(parent.log_path()).unwrap_or_default().contains("forgot expired deletions");
    let deadline = Instant::now() + CONVERGE_TIMEOUT;
    while !forgotten() {
        assert!(Instant::now() < deadline, "the parent never forgot the deletion:\n{}", parent.log_tail(30));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A comes back, still holding the role, and compares itself with the parent every
    // second.
    old_cache_returns_and_the_parent_stays_without(&mut installation, &doomed).await;
    let region_a = installation.cache(REGION_A).unwrap();
    let parent = installation.cache(PARENT).unwrap();
    let of_shard_1 =
        |replicas: &[Replica]| replicas.iter().any(|r| r.key.as_ref().is_some_and(|k| k.origin == "shard-1"));
    // A learns that shard-1 moved on and drops every replica of it.
    cache::wait_replicas(region_a, "A dropped the replicas of shard-1", CONVERGE_TIMEOUT, |r| !of_shard_1(r))
        .await
        .unwrap();
    assert!(gone(&parent.replicas().await.unwrap()), "A's drop brought nothing back");
    assert_matches(&installation, PARENT, &["root", "shard-1", "shard-2"]).await;
    assert_matches(&installation, REGION_B, &["root", "shard-1", "shard-2"]).await;
}

/// Replicates a ClusterRole "doomed" from a workspace on shard-1 (named from `prefix`)
/// into regional cache A and the parent, stops A (cutting it from shard-1 and from the
/// parent), waits until shard-1 writes to B, and deletes the role there until B and the
/// parent let it go. Returns the role's replica id.
async fn delete_after_failover(installation: &mut Installation, prefix: &str) -> ReplicaId {
    let (on_1, _) = workspace_per_shard(installation, prefix).await;
    let shard_1 = installation.by_name("shard-1").unwrap();
    let cluster = cluster_of(shard_1, &on_1).await;
    apply(shard_1, &on_1, &cluster_role("doomed", true));
    let doomed = role_id("shard-1", &cluster, "doomed");
    let holds = |replicas: &[Replica]| cache::find(replicas, &doomed).is_some();
    for cache in [REGION_A, PARENT] {
        let cache = installation.cache(cache).unwrap();
        cache::wait_replicas(cache, "the doomed role replicated", CONVERGE_TIMEOUT, holds).await.unwrap();
    }
    installation.cache_mut(REGION_A).unwrap().stop().await.unwrap();
    let shard_1 = installation.by_name("shard-1").unwrap();
    apply(shard_1, &on_1, &cluster_role("after-failover", true));
    let after = role_id("shard-1", &cluster, "after-failover");
    let region_b = installation.cache(REGION_B).unwrap();
    cache::wait_replicas(region_b, "shard-1 writes to B", CONVERGE_TIMEOUT, |r| cache::find(r, &after).is_some())
        .await
        .unwrap();
    shard_1.kubectl().cluster(&on_1).args(["delete", "clusterrole", "doomed"]).ok();
    let gone = |replicas: &[Replica]| cache::find(replicas, &doomed).is_none();
    for cache in [REGION_B, PARENT] {
        let cache = installation.cache(cache).unwrap();
        cache::wait_replicas(cache, "the doomed role deleted", CONVERGE_TIMEOUT, gone).await.unwrap();
    }
    doomed
}

/// Restarts regional cache A, which must still hold the deleted role (or the test means
/// nothing), and watches the parent for 10 s of A's resyncs (one a second): the role must
/// never come back there.
async fn old_cache_returns_and_the_parent_stays_without(installation: &mut Installation, doomed: &ReplicaId) {
    installation.cache_mut(REGION_A).unwrap().restart().await.unwrap();
    let region_a = installation.cache(REGION_A).unwrap();
    assert!(
        cache::find(&region_a.replicas().await.unwrap(), doomed).is_some(),
        "A must still hold the stale role for this test to mean anything"
    );
    let parent = installation.cache(PARENT).unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        let held = parent.replicas().await.unwrap();
        assert!(
            cache::find(&held, doomed).is_none(),
            "the parent resurrected the deleted role: {:#?}\n{}",
            names(&held),
            region_a.log_tail(20)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
