//! APIExport / APIBinding through real processes: root + 2 shards with regional caches A
//! and B under parent P, behind a front-proxy, driven by stock kubectl, kube-rs and raw
//! HTTPS.
//!
//! The export lives in a workspace on one shard, bindings in workspaces on the other: the
//! binding controller can only know the export (and the RBAC that allows binding it)
//! through the cache, which is what lets bindings keep working when the provider's shard
//! is gone.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use http::StatusCode;
use kube::api::{Api, ListParams};
use kube::core::DynamicObject;
use serde_json::Value;
use tests::apis::{binding_manifest, wait_object, widget_manifest, widget_resource, WIDGETS_SCHEMA_AND_EXPORT};
use tests::installation::Installation;
use tests::TlsHttp;

/// How long an export, a binding or a bound resource may take to be ready. It bounds a
/// bug: replication and binding take well under a second.
const READY: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(200);
const PLACEMENT_MAX: usize = 40;
const SCHEMA: &str = "v1.widgets.example.io";
const EXPORT: &str = "widgets";

/// Where a test's workspaces landed: the provider on one non-root shard, `consumers`
/// workspaces on the other.
struct Placement {
    provider_shard: String,
    provider: String,
    consumer_shard: String,
    consumers: Vec<String>,
}

/// Creates workspaces until one non-root shard hosts one and the other `consumers`.
async fn place(installation: &Installation, prefix: &str, consumers: usize) -> Placement {
    let count = |placement: &BTreeMap<String, Vec<String>>, shard: &str| placement.get(shard).map_or(0, Vec::len);
    let fits = |p: &BTreeMap<String, Vec<String>>, provider: &str, consumer: &str| {
        count(p, provider) >= 1 && count(p, consumer) >= consumers
    };
    let placement = installation
        .place_workspaces(prefix, PLACEMENT_MAX, |p| fits(p, "shard-1", "shard-2") || fits(p, "shard-2", "shard-1"))
        .await
        .expect("place the provider and consumer workspaces");
    let (provider_shard, consumer_shard) =
        if fits(&placement, "shard-1", "shard-2") { ("shard-1", "shard-2") } else { ("shard-2", "shard-1") };
    let path = |name: &String| format!("root:{name}");
    for name in placement.values().flatten() {
        installation.proxy().wait_resolves(&path(name)).await.unwrap();
    }
    Placement {
        provider_shard: provider_shard.into(),
        provider: path(&placement[provider_shard][0]),
        consumer_shard: consumer_shard.into(),
        consumers: placement[consumer_shard].iter().take(consumers).map(path).collect(),
    }
}

/// The export's identity hash, once its status has one.
async fn identity_hash(http: &TlsHttp, provider: &str) -> String {
    let path = format!("/clusters/{provider}/apis/apis.kcp.io/v1alpha1/apiexports/{EXPORT}");
    let export = wait_object(http, &path, "the export's identity", READY, |export| {
        export.pointer("/status/identityHash").and_then(Value::as_str).is_some_and(|hash| !hash.is_empty())
    })
    .await;
    let hash = export["status"]["identityHash"].as_str().unwrap().to_string();
    assert!(hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit()), "identityHash is hex sha256: {hash}");
    hash
}

/// Waits until binding `name` in `consumer` is Bound and its resource is served there.
async fn wait_bound(http: &TlsHttp, consumer: &str, name: &str) -> Value {
    let path = format!("/clusters/{consumer}/apis/apis.kcp.io/v1alpha1/apibindings/{name}");
    let bound = wait_object(http, &path, &format!("binding {name} in {consumer} Bound"), READY, |binding| {
        binding.pointer("/status/phase").and_then(Value::as_str) == Some("Bound")
    })
    .await;
    let resources = bound.pointer("/status/boundResources").and_then(Value::as_array).cloned().unwrap_or_default();
    assert!(
        resources
            .iter()
            .any(|r| r["resource"] == "widgets" && r["group"] == "example.io" && r["schema"]["name"] == SCHEMA),
        "boundResources names widgets.example.io: {bound}"
    );
    let widgets = format!("/clusters/{consumer}/apis/example.io/v1/namespaces/default/widgets");
    wait_object(http, &widgets, "widgets served", READY, |list| list.get("items").is_some()).await;
    bound
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bindings_serve_on_the_consumers_shard_and_survive_the_providers_loss() {
    let mut installation = Installation::regional_behind_proxy().await;
    let placement = place(&installation, "api", 2).await;
    let proxy = installation.proxy();
    let http = proxy.http();
    let provider = || proxy.kubectl().cluster(&placement.provider);
    let consumer = |index: usize| proxy.kubectl().cluster(&placement.consumers[index]);

    provider().args(["apply", "-f", "-"]).stdin(WIDGETS_SCHEMA_AND_EXPORT).ok();
    let hash = identity_hash(&http, &placement.provider).await;
    consumer(0).args(["apply", "-f", "-"]).stdin(binding_manifest(EXPORT, &placement.provider, EXPORT)).ok();
    wait_bound(&http, &placement.consumers[0], EXPORT).await;

    // The bound resource is served in the consumer's workspace, to kubectl and kube-rs.
    consumer(0).args(["create", "-f", "-"]).stdin(widget_manifest("first", 1)).ok();
    let listed = consumer(0).args(["get", "widgets", "-n", "default", "-o", "name"]).ok().stdout;
    assert!(listed.contains("widget.example.io/first"), "{listed}");
    let client = proxy.kube_client(&placement.consumers[0]).await.unwrap();
    let widgets: Api<DynamicObject> = Api::namespaced_with(client, "default", &widget_resource());
    let names: Vec<String> =
        widgets.list(&ListParams::default()).await.unwrap().items.into_iter().filter_map(|w| w.metadata.name).collect();
    assert_eq!(names, ["first"]);

    // On the consumer's shard, bound objects are stored under the export's identity.
    let consumer_shard = installation.by_name(&placement.consumer_shard).unwrap();
    let wildcard = format!("/clusters/*/apis/example.io/v1/widgets:{hash}");
    let response = consumer_shard.http().get(&wildcard).await.unwrap();
    assert_eq!(response.status, StatusCode::OK, "{wildcard}: {}", response.text());
    let items = response.json().unwrap()["items"].as_array().cloned().unwrap_or_default();
    let wildcard_names: Vec<&str> = items.iter().filter_map(|item| item["metadata"]["name"].as_str()).collect();
    assert_eq!(wildcard_names, ["first"], "{wildcard}");
    assert!(items[0]["metadata"]["annotations"]["kcp.io/cluster"].is_string(), "{}", items[0]);

    // The provider's shard dies: the existing binding keeps serving, and a new binding to
    // the same export is resolved from the cache.
    installation.shard_mut(&placement.provider_shard).unwrap().kill9();
    let proxy = installation.proxy();
    let consumer = |index: usize| proxy.kubectl().cluster(&placement.consumers[index]);
    consumer(0).args(["create", "-f", "-"]).stdin(widget_manifest("second", 2)).ok();
    let listed = consumer(0).args(["get", "widgets", "-n", "default", "-o", "name"]).ok().stdout;
    assert!(listed.contains("widget.example.io/second"), "{listed}");
    consumer(1).args(["apply", "-f", "-"]).stdin(binding_manifest(EXPORT, &placement.provider, EXPORT)).ok();
    wait_bound(&proxy.http(), &placement.consumers[1], EXPORT).await;
    consumer(1).args(["create", "-f", "-"]).stdin(widget_manifest("third", 3)).ok();
    let object = consumer(1).args(["get", "widget", "third", "-n", "default", "-o", "json"]).ok().json().unwrap();
    assert_eq!(object["spec"]["size"], 3, "{object}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_an_export_needs_the_bind_permission_in_its_workspace() {
    let installation = Installation::regional_behind_proxy().await;
    let placement = place(&installation, "perm", 1).await;
    let proxy = installation.proxy();
    let consumer_path = placement.consumers[0].clone();
    proxy.kubectl().cluster(&placement.provider).args(["apply", "-f", "-"]).stdin(WIDGETS_SCHEMA_AND_EXPORT).ok();
    identity_hash(&proxy.http(), &placement.provider).await;

    // Carol may use the consumer workspace and manage bindings in it, but holds no `bind`
    // on the export.
    let grants = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: binding-editor}
rules:
- apiGroups: [tenancy.kcp.io]
  resources: [workspaces/content]
  verbs: [access]
- apiGroups: [apis.kcp.io]
  resources: [apibindings]
  verbs: ["*"]
- apiGroups: [example.io]
  resources: [widgets]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: carol-binding-editor}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: binding-editor}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]
"#;
    proxy.kubectl().cluster(&consumer_path).args(["apply", "-f", "-"]).stdin(grants).ok();
    let carol = installation.user_identity("carol", &[]).unwrap();
    let as_carol = proxy.http_as(Some(&carol)).unwrap();
    let bindings = format!("/clusters/{consumer_path}/apis/apis.kcp.io/v1alpha1/apibindings");
    let binding: Value = serde_json::from_str(&binding_manifest(EXPORT, &placement.provider, EXPORT)).unwrap();
    let refused = as_carol.post_json(&bindings, &binding).await.unwrap();
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    let status = refused.json().unwrap();
    assert_eq!(status["kind"], "Status", "{status}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("bind") && message.contains(EXPORT),
        "the refusal names the missing permission: {message}"
    );
    let kubeconfig = proxy.user_kubeconfig("carol", &carol, &consumer_path).unwrap();
    let with_kubectl = proxy.kubectl_with(&kubeconfig).args(["create", "-f", "-"]).stdin(binding.to_string()).fails();
    let said = with_kubectl.stderr.to_lowercase();
    assert!(said.contains("forbidden") && said.contains("bind"), "{with_kubectl:?}");

    // `bind` on this export, granted in the provider's workspace and replicated, lets her.
    let grant = format!(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: bind-widgets
  annotations: {{internal.kcp.io/replicate: "true"}}
rules:
- apiGroups: [apis.kcp.io]
  resources: [apiexports]
  resourceNames: [{EXPORT}]
  verbs: [bind]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: carol-binds-widgets
  annotations: {{internal.kcp.io/replicate: "true"}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bind-widgets}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}}]
"#
    );
    proxy.kubectl().cluster(&placement.provider).args(["apply", "-f", "-"]).stdin(grant).ok();
    // The grant reaches the consumer's shard through the cache: retry until it has.
    let deadline = Instant::now() + READY;
    loop {
        let response = as_carol.post_json(&bindings, &binding).await.unwrap();
        if response.status == StatusCode::CREATED {
            break;
        }
        assert_eq!(response.status, StatusCode::FORBIDDEN, "{}", response.text());
        assert!(Instant::now() < deadline, "carol still may not bind after {READY:?}: {}", response.text());
        tokio::time::sleep(POLL).await;
    }
    wait_bound(&as_carol, &consumer_path, EXPORT).await;
    let widgets = format!("/clusters/{consumer_path}/apis/example.io/v1/namespaces/default/widgets");
    let widget: Value = serde_json::from_str(&widget_manifest("carols", 7)).unwrap();
    let created = as_carol.post_json(&widgets, &widget).await.unwrap();
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    // kube-rs (as admin) reads it back.
    let client = proxy.kube_client(&consumer_path).await.unwrap();
    let widgets: Api<DynamicObject> = Api::namespaced_with(client, "default", &widget_resource());
    let fetched = widgets.get("carols").await.unwrap();
    assert_eq!(fetched.data["spec"]["size"], 7);
}

/// The identity of root's system export `name`, as root serves it.
async fn system_identity(root: &tests::shard::ShardProcess, name: &str) -> String {
    let path = format!("/clusters/root/apis/apis.kcp.io/v1alpha1/apiexports/{name}");
    let export = wait_object(&root.http(), &path, "a system export's identity", READY, |export| {
        export.pointer("/status/identityHash").and_then(Value::as_str).is_some_and(|hash| !hash.is_empty())
    })
    .await;
    export["status"]["identityHash"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_keep_the_system_export_identities_and_serve_with_root_down() {
    let mut installation = Installation::start(1).await.expect("start root and one shard");
    let root = installation.by_name("root").unwrap();
    let tenancy = system_identity(root, "tenancy.kcp.io").await;
    let shards = system_identity(root, "shards.core.kcp.io").await;
    assert_ne!(tenancy, shards, "every export has its own identity");

    // The shard fetched the identities from root: its wildcard endpoint answers to kcp's
    // `<resource>:<identityHash>` names of the system resources.
    let wildcard = format!("/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces:{tenancy}");
    let shard = installation.by_name("shard-1").unwrap();
    wait_object(&shard.http(), &wildcard, "the wildcard endpoint under the system identity", READY, |list| {
        list["kind"] == "WorkspaceList"
    })
    .await;
    let kept = std::fs::read_to_string(shard.data_dir().join("system-identities.json")).unwrap();
    assert!(kept.contains(&tenancy) && kept.contains(&shards), "{kept}");
    let unknown = format!("/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces:{}", "0".repeat(64));
    assert_eq!(shard.http().get(&unknown).await.unwrap().status, StatusCode::NOT_FOUND, "{unknown}");

    // Root goes away; the shard restarts and still knows them, from its data directory.
    installation.shard_mut("root").unwrap().kill9();
    let shard = installation.shard_mut("shard-1").unwrap();
    shard.restart().await.expect("restart the shard while root is down");
    let response = shard.http().get(&wildcard).await.unwrap();
    assert_eq!(response.status, StatusCode::OK, "{wildcard}: {}", response.text());
    let discovery = shard.http().get("/clusters/*/apis/apis.kcp.io/v1alpha1/apibindings").await.unwrap();
    assert_eq!(discovery.status, StatusCode::OK, "{}", discovery.text());
}
