//! Deletions that must take what belongs to them along, or refuse, as kcp and kube do,
//! over a real shard driven by stock kubectl:
//! - unbinding: deleting an APIBinding deletes the bound objects of its workspace
//!   (their finalizers honoured, a condition on the binding meanwhile), then the
//!   resource leaves discovery;
//! - a LogicalCluster goes by a user's DELETE only when `spec.directlyDeletable`;
//! - `kubectl delete -f` of a namespace and its content succeeds, the namespace
//!   Terminating while the content goes.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tests::kubectl::Kubectl;
use tests::shard::ShardProcess;

/// How long a controller may take to act on a deletion. It bounds a bug: each pass takes
/// well under a second (namespaces wait kube's 5 s grace first).
const SETTLE: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(200);

const BINDING: &str = r#"
apiVersion: apis.kcp.io/v1alpha1
kind: APIBinding
metadata: {name: widgets}
spec:
  reference:
    export: {path: provider, name: widgets}
"#;

/// Polls `kubectl get <what> -o json` until `check` accepts the object (`None`: NotFound).
async fn wait_for(kubectl: &Kubectl, what: &[&str], description: &str, check: impl Fn(Option<&Value>) -> bool) {
    let deadline = Instant::now() + SETTLE;
    loop {
        let output = kubectl.clone().arg("get").args(what).args(["-o", "json"]).run_async().await;
        let object = output.success().then(|| output.json().unwrap());
        let missing = output.stderr.contains("NotFound") || output.stderr.contains("not found");
        if (object.is_some() || missing) && check(object.as_ref()) {
            return;
        }
        assert!(Instant::now() < deadline, "{what:?} did not become {description} within {SETTLE:?}: {output:?}");
        tokio::time::sleep(POLL).await;
    }
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == kind)
}

fn widget(name: &str, finalizers: &[&str]) -> String {
    json!({
        "apiVersion": "example.io/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default", "finalizers": finalizers},
        "spec": {"size": 1},
    })
    .to_string()
}

/// The resources `kubectl api-resources` lists for group example.io (fresh discovery).
fn example_resources(kubectl: &Kubectl) -> String {
    kubectl.clone().args(["api-resources", "--api-group=example.io", "-o", "name", "--cached=false"]).ok().stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unbinding_deletes_the_bound_objects_then_the_resource() {
    let shard = ShardProcess::with_clusters(&["provider", "consumer"]).await;
    let provider = shard.kubectl().cluster("provider");
    let consumer = shard.kubectl().cluster("consumer");
    provider.clone().args(["apply", "-f", "-"]).stdin(tests::apis::WIDGETS_SCHEMA_AND_EXPORT).ok();
    consumer.clone().args(["apply", "-f", "-"]).stdin(BINDING).ok();
    wait_for(&consumer, &["apibinding", "widgets"], "Bound", |b| {
        b.is_some_and(|b| b.pointer("/status/phase") == Some(&json!("Bound")))
    })
    .await;
    let binding = consumer.clone().args(["get", "apibinding", "widgets", "-o", "json"]).ok().json().unwrap();
    assert_eq!(binding["metadata"]["finalizers"], json!(["apis.kcp.io/apibinding-finalizer"]), "{binding}");
    assert!(example_resources(&consumer).contains("widgets.example.io"));
    consumer.clone().args(["create", "-f", "-"]).stdin(widget("loose", &[])).ok();
    consumer.clone().args(["create", "-f", "-"]).stdin(widget("held", &["example.io/hold"])).ok();

    consumer.clone().args(["delete", "apibinding", "widgets", "--wait=false"]).ok();
    // The loose widget goes; the held one is deleting, and holds the binding, which says so.
    wait_for(&consumer, &["widget", "loose", "-n", "default"], "gone", |w| w.is_none()).await;
    wait_for(&consumer, &["apibinding", "widgets"], "held by the widget's finalizer", |b| {
        b.and_then(|b| condition(b, "BindingResourceDeleteSuccess")).is_some_and(|c| {
            c["status"] == "False"
                && c["reason"] == "SomeFinalizersRemain"
                && c["message"].as_str().is_some_and(|m| m.contains("example.io/hold in 1 resource instances"))
        })
    })
    .await;
    let held = consumer.clone().args(["get", "widget", "held", "-n", "default", "-o", "json"]).ok().json().unwrap();
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    assert!(example_resources(&consumer).contains("widgets.example.io"), "served while objects remain");

    // Its finalizer removed, the widget goes, then the binding, then the resource.
    consumer.clone().clear_finalizers("widget", "held", "default");
    wait_for(&consumer, &["apibinding", "widgets"], "gone", |b| b.is_none()).await;
    assert_eq!(example_resources(&consumer).trim(), "", "the resource left discovery");
    consumer.clone().args(["get", "widgets", "-A"]).fails();

    // Bound again, the export's resource starts empty: nothing came back.
    consumer.clone().args(["apply", "-f", "-"]).stdin(BINDING).ok();
    wait_for(&consumer, &["apibinding", "widgets"], "Bound again", |b| {
        b.is_some_and(|b| b.pointer("/status/phase") == Some(&json!("Bound")))
    })
    .await;
    let listed = consumer.clone().args(["get", "widgets", "-A", "-o", "json"]).ok().json().unwrap();
    assert_eq!(listed["items"], json!([]), "{listed}");
}

const LOGICAL_CLUSTER_ADMIN: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: logical-cluster-admin}
rules:
- {apiGroups: [core.kcp.io], resources: [logicalclusters], verbs: [get, list, delete]}
- {nonResourceURLs: ["/"], verbs: [access]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-logical-cluster-admin}
subjects:
- {kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}
roleRef: {kind: ClusterRole, name: logical-cluster-admin, apiGroup: rbac.authorization.k8s.io}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_logical_cluster_goes_by_a_users_delete_only_when_directly_deletable() {
    let shard = ShardProcess::with_clusters(&["team"]).await;
    let admin = shard.kubectl().cluster("team");
    admin.clone().args(["apply", "-f", "-"]).stdin(LOGICAL_CLUSTER_ADMIN).ok();
    let alice = shard.kubectl_with(&shard.user_kubeconfig("alice", &[], "team").unwrap());

    // Allowed by RBAC, refused by the LogicalCluster rule, with what to do instead.
    let refused = alice.clone().args(["delete", "logicalcluster", "cluster", "--wait=false"]).fails();
    assert!(refused.stderr.contains("(Forbidden)"), "{refused:?}");
    assert!(refused.stderr.contains("spec.directlyDeletable is false"), "{refused:?}");
    assert!(refused.stderr.contains("delete that Workspace"), "{refused:?}");
    let kept = admin.clone().args(["get", "logicalcluster", "cluster", "-o", "json"]).ok().json().unwrap();
    assert!(kept["metadata"]["deletionTimestamp"].is_null(), "{kept}");

    // Once the administrator marks it directly deletable, alice's DELETE goes through.
    let patch = r#"{"spec":{"directlyDeletable":true}}"#;
    admin.clone().args(["patch", "logicalcluster", "cluster", "--type=merge", "-p", patch]).ok();
    alice.clone().args(["delete", "logicalcluster", "cluster", "--wait=false"]).ok();
    let deadline = Instant::now() + SETTLE;
    loop {
        let cluster = shard.http().get("/clusters/team/apis/core.kcp.io/v1alpha1/logicalclusters/cluster").await;
        if cluster.as_ref().is_ok_and(|r| r.status == http::StatusCode::NOT_FOUND) {
            break;
        }
        assert!(Instant::now() < deadline, "the logical cluster was not deleted: {:?}", cluster.map(|r| r.text()));
        tokio::time::sleep(POLL).await;
    }
}

/// A namespace and its content, in the order `kubectl delete -f` deletes them.
fn namespace_file(namespace: &str, held: bool) -> String {
    let finalizers = if held { "\n  finalizers: [example.com/hold]" } else { "" };
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {namespace}\ndata: {{k: v}}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: {namespace}\nstringData: {{k: v}}\n---\n\
         apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: robot\n  namespace: {namespace}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: last\n  namespace: {namespace}{finalizers}\ndata: {{k: v}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_delete_f_of_a_namespace_and_its_content_succeeds() {
    let shard = ShardProcess::with_clusters(&["files"]).await;
    let kubectl = shard.kubectl().cluster("files");
    let dir = tempfile::tempdir().unwrap();

    // Deleted in file order: the namespace first, then each object in it, all found.
    let plain = dir.path().join("shop.yaml");
    std::fs::write(&plain, namespace_file("shop", false)).unwrap();
    let file = plain.to_str().unwrap();
    kubectl.clone().args(["apply", "-f", file]).ok();
    let deleted = kubectl.clone().args(["delete", "-f", file]).ok();
    for line in ["namespace \"shop\" deleted", "configmap \"settings\" deleted", "configmap \"last\" deleted"] {
        assert!(deleted.stdout.contains(line), "{deleted:?}");
    }
    wait_for(&kubectl, &["namespace", "shop"], "gone", |n| n.is_none()).await;

    // Held by one object's finalizer, the namespace stays Terminating after kubectl is done.
    let held = dir.path().join("held.yaml");
    std::fs::write(&held, namespace_file("held", true)).unwrap();
    let file = held.to_str().unwrap();
    kubectl.clone().args(["apply", "-f", file]).ok();
    kubectl.clone().args(["delete", "-f", file, "--wait=false"]).ok();
    wait_for(&kubectl, &["configmap", "settings", "-n", "held"], "gone", |c| c.is_none()).await;
    let namespace = kubectl.clone().args(["get", "namespace", "held", "-o", "json"]).ok().json().unwrap();
    assert_eq!(namespace["status"]["phase"], "Terminating", "{namespace}");
    kubectl.clone().clear_finalizers("configmap", "last", "held");
    wait_for(&kubectl, &["namespace", "held"], "gone", |n| n.is_none()).await;
}
