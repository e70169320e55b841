//! The APIExport virtual workspace through real processes: root + 2 shards with regional
//! caches, behind a front-proxy. A provider's controller, built with kube-rs, follows
//! the APIExportEndpointSlice, watches every bound Widget through each shard's view and
//! writes their status back, while one consumer shard is killed and comes back.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use http::StatusCode;
use kube::api::{Api, Patch, PatchParams};
use kube::core::DynamicObject;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::apis::{binding_manifest, wait_object, widget_manifest, widget_resource, WIDGETS_SCHEMA_AND_EXPORT};
use tests::installation::Installation;

/// How long a URL, a binding or a reconciliation may take: it bounds a bug, the work
/// takes seconds at most.
const READY: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_millis(250);
const PLACEMENT_MAX: usize = 40;
const EXPORT: &str = "widgets";

const PROVIDER_MANIFEST: &str = r#"
apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata: {name: v1.widgets.example.io}
spec:
  group: example.io
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      type: object
      properties:
        spec:
          type: object
          properties:
            size: {type: integer}
        status:
          type: object
          properties:
            observedSize: {type: integer}
---
apiVersion: apis.kcp.io/v1alpha1
kind: APIExport
metadata: {name: widgets}
spec:
  latestResourceSchemas: [v1.widgets.example.io]
---
apiVersion: apis.kcp.io/v1alpha1
kind: APIExportEndpointSlice
metadata: {name: widgets}
spec:
  export: {name: widgets}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widgets-provider
  annotations: {internal.kcp.io/replicate: "true"}
rules:
- apiGroups: [apis.kcp.io]
  resources: [apiexports/content]
  resourceNames: [widgets]
  verbs: [get, list, watch, update, patch]
- apiGroups: [apis.kcp.io]
  resources: [apiexportendpointslices]
  verbs: [get, list, watch]
- apiGroups: [tenancy.kcp.io]
  resources: [workspaces/content]
  verbs: [access]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: widgets-provider
  annotations: {internal.kcp.io/replicate: "true"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widgets-provider}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: provider-bot}]
"#;

/// The URLs an endpoint slice lists.
fn endpoint_urls(slice: &Value) -> BTreeSet<String> {
    let endpoints = slice.pointer("/status/endpoints").and_then(Value::as_array).cloned().unwrap_or_default();
    endpoints.iter().filter_map(|e| e["url"].as_str().map(str::to_string)).collect()
}

/// The path of a view URL (`/shards/<shard>/services/apiexport/...`), to reach it through
/// the front-proxy whatever host the shard publishes.
fn view_path(url: &str) -> String {
    url[url.find("/shards/").expect("view URLs name their shard")..].to_string()
}

/// A kube-rs client for `kubeconfig`'s user, on `url`.
async fn client_at(kubeconfig: &Path, url: &str) -> kube::Client {
    let file = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default()).await.unwrap();
    config.cluster_url = url.parse().unwrap();
    kube::Client::try_from(config).unwrap()
}

/// What the provider's controller did: per `(cluster, name)`, the size it last wrote.
type Reconciled = Arc<Mutex<HashMap<(String, String), u64>>>;

/// The provider's controller: reads the endpoint slice through the front-proxy every
/// poll; for each new view URL it watches every Widget through that view and sets
/// `status.observedSize` to `spec.size` in the Widget's own cluster, through the view.
/// It never learns which shard is which, and keeps its watches when a view's shard dies
/// (kube-rs's watcher retries with back-off until the shard is back).
async fn provider_controller(proxy_base: String, kubeconfig: PathBuf, slice_path: String, reconciled: Reconciled) {
    let slices = client_at(&kubeconfig, &proxy_base).await;
    let mut watched: BTreeSet<String> = BTreeSet::new();
    loop {
        let request = http::Request::get(&slice_path).body(Vec::new()).unwrap();
        if let Ok(slice) = slices.request::<Value>(request).await {
            for url in endpoint_urls(&slice) {
                if watched.insert(url.clone()) {
                    let view = format!("{proxy_base}{}", view_path(&url));
                    tokio::spawn(follow_view(view, kubeconfig.clone(), reconciled.clone()));
                }
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn follow_view(view: String, kubeconfig: PathBuf, reconciled: Reconciled) {
    let all = client_at(&kubeconfig, &format!("{view}/clusters/*")).await;
    let widgets: Api<DynamicObject> = Api::all_with(all, &widget_resource());
    let mut events = watcher::watcher(widgets, watcher::Config::default()).default_backoff().boxed();
    while let Some(event) = events.next().await {
        let Ok(Event::Apply(widget) | Event::InitApply(widget)) = event else { continue };
        let cluster = widget.metadata.annotations.as_ref().and_then(|a| a.get("kcp.io/cluster")).cloned();
        let (Some(cluster), Some(name), Some(namespace)) = (cluster, widget.metadata.name, widget.metadata.namespace)
        else {
            continue;
        };
        let size = widget.data.pointer("/spec/size").and_then(Value::as_u64).unwrap_or_default();
        if widget.data.pointer("/status/observedSize").and_then(Value::as_u64) == Some(size) {
            reconciled.lock().insert((cluster, name), size);
            continue;
        }
        let one = client_at(&kubeconfig, &format!("{view}/clusters/{cluster}")).await;
        let api: Api<DynamicObject> = Api::namespaced_with(one, &namespace, &widget_resource());
        let status = Patch::Merge(json!({"status": {"observedSize": size}}));
        if api.patch_status(&name, &PatchParams::default(), &status).await.is_ok() {
            reconciled.lock().insert((cluster, name), size);
        }
    }
}

/// Waits until the controller has written every `(cluster, name) → size` of `wanted`.
async fn wait_reconciled(reconciled: &Reconciled, wanted: &BTreeMap<(String, String), u64>) {
    let deadline = Instant::now() + READY;
    loop {
        let missing: Vec<_> = {
            let seen = reconciled.lock();
            wanted.iter().filter(|(key, size)| seen.get(*key) != Some(size)).map(|(key, _)| key.clone()).collect()
        };
        if missing.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "not reconciled within {READY:?}: {missing:?}");
        tokio::time::sleep(POLL).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kube_rs_provider_reconciles_every_bound_instance_through_the_views_across_a_shard_restart() {
    let mut installation = Installation::regional_behind_proxy().await;
    // A consumer workspace on every shard (root's too), and the provider's anywhere.
    let placement = installation
        .place_workspaces("vw", PLACEMENT_MAX, |p| p.len() == 3 && p.values().map(Vec::len).sum::<usize>() >= 4)
        .await
        .expect("place consumer workspaces on every shard");
    let path = |name: &str| format!("root:{name}");
    let consumers: BTreeMap<String, String> =
        placement.iter().map(|(shard, names)| (shard.clone(), path(&names[0]))).collect();
    let provider_name = placement.values().flatten().find(|n| !consumers.values().any(|c| c == &path(n))).unwrap();
    let provider = path(provider_name);
    for workspace in consumers.values().chain([&provider]) {
        installation.proxy().wait_resolves(workspace).await.unwrap();
    }
    let proxy = installation.proxy();
    let http = proxy.http();
    proxy.kubectl().cluster(&provider).args(["apply", "-f", "-"]).stdin(PROVIDER_MANIFEST).ok();
    let export_path = format!("/clusters/{provider}/apis/apis.kcp.io/v1alpha1/apiexports/{EXPORT}");
    let export =
        wait_object(&http, &export_path, "the export's identity", READY, |e| e["status"]["identityHash"].is_string())
            .await;
    let export_cluster = export["metadata"]["annotations"]["kcp.io/cluster"].as_str().unwrap().to_string();
    for consumer in consumers.values() {
        proxy
            .kubectl()
            .cluster(consumer)
            .args(["apply", "-f", "-"])
            .stdin(binding_manifest(EXPORT, &provider, EXPORT))
            .ok();
    }
    for consumer in consumers.values() {
        let binding = format!("/clusters/{consumer}/apis/apis.kcp.io/v1alpha1/apibindings/{EXPORT}");
        wait_object(&http, &binding, "the binding Bound", READY, |b| b["status"]["phase"] == "Bound").await;
    }

    // The slice lists one view per shard with a binding, each naming its shard.
    let slice_path = format!("/clusters/{provider}/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/{EXPORT}");
    let slice = wait_object(&http, &slice_path, "one endpoint per shard", READY, |s| endpoint_urls(s).len() == 3).await;
    let urls = endpoint_urls(&slice);
    for shard in consumers.keys() {
        let wanted = format!("/shards/{shard}/services/apiexport/{export_cluster}/{EXPORT}");
        assert!(urls.iter().any(|url| url.ends_with(&wanted)), "{wanted} in {urls:?}");
    }

    // The views are the provider's, by RBAC in the export's workspace: another user is
    // refused, and so is the provider outside the export's resources.
    let bot = installation.user_identity("provider-bot", &[]).unwrap();
    let mallory = installation.user_identity("mallory", &[]).unwrap();
    let some_view = view_path(urls.iter().next().unwrap());
    let as_bot = proxy.http_as(Some(&bot)).unwrap();
    let refused = proxy
        .http_as(Some(&mallory))
        .unwrap()
        .get(&format!("{some_view}/clusters/*/apis/example.io/v1/widgets"))
        .await
        .unwrap();
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    assert!(refused.text().contains("apiexports/content"), "the refusal names what is missing: {}", refused.text());
    let configmaps = as_bot.get(&format!("{some_view}/clusters/*/api/v1/configmaps")).await.unwrap();
    assert_eq!(configmaps.status, StatusCode::NOT_FOUND, "{}", configmaps.text());
    let discovery = as_bot.get(&format!("{some_view}/clusters/*/apis/example.io/v1")).await.unwrap();
    assert_eq!(discovery.status, StatusCode::OK, "{}", discovery.text());
    let resources = discovery.json().unwrap()["resources"].clone();
    let served: Vec<&str> = resources.as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(served, ["widgets", "widgets/status"], "only the export's resources: {resources}");
    let groups = as_bot.get(&format!("{some_view}/clusters/*/apis")).await.unwrap().json().unwrap();
    let names: Vec<&str> = groups["groups"].as_array().unwrap().iter().filter_map(|g| g["name"].as_str()).collect();
    assert_eq!(names, ["example.io"], "{groups}");

    // Widgets everywhere, and the provider's controller (as provider-bot, through the
    // proxy) follows the slice.
    let kubeconfig = proxy.user_kubeconfig("provider-bot", &bot, &provider).unwrap();
    let mut wanted: BTreeMap<(String, String), u64> = BTreeMap::new();
    let cluster_of = |workspace: &str| {
        let lc = format!("/clusters/{workspace}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster");
        let http = http.clone();
        async move {
            http.get_json(&lc).await.unwrap()["metadata"]["annotations"]["kcp.io/cluster"].as_str().unwrap().to_string()
        }
    };
    let mut clusters = BTreeMap::new();
    for (shard, consumer) in &consumers {
        clusters.insert(shard.clone(), cluster_of(consumer).await);
        for (index, size) in [(0, 1), (1, 2)] {
            let name = format!("w{index}");
            proxy.kubectl().cluster(consumer).args(["create", "-f", "-"]).stdin(widget_manifest(&name, size)).ok();
            wanted.insert((clusters[shard].clone(), name), size);
        }
    }
    let reconciled: Reconciled = Arc::default();
    let controller = tokio::spawn(provider_controller(
        proxy.base_url().to_string(),
        kubeconfig.clone(),
        slice_path.clone(),
        reconciled.clone(),
    ));
    wait_reconciled(&reconciled, &wanted).await;
    let written = proxy
        .kubectl()
        .cluster(&consumers["root"])
        .args(["get", "widget", "w1", "-n", "default", "-o", "json"])
        .ok()
        .json()
        .unwrap();
    assert_eq!(written["status"]["observedSize"], 2, "the status written through the view is stored: {written}");

    // A consumer shard dies (not root's, not the provider's): the others' widgets keep
    // being reconciled.
    let provider_shard = placement.iter().find(|(_, names)| names.contains(provider_name)).map(|(s, _)| s.clone());
    let victim =
        ["shard-1", "shard-2"].into_iter().find(|s| Some(s.to_string()) != provider_shard).unwrap().to_string();
    installation.shard_mut(&victim).unwrap().kill9();
    let proxy = installation.proxy();
    for (shard, consumer) in &consumers {
        if *shard != victim {
            proxy.kubectl().cluster(consumer).args(["create", "-f", "-"]).stdin(widget_manifest("during", 7)).ok();
            wanted.insert((clusters[shard].clone(), "during".into()), 7);
        }
    }
    wait_reconciled(&reconciled, &wanted).await;

    // It comes back: its view is watched again, old widgets changed while it was away
    // and new ones are reconciled.
    installation.shard_mut(&victim).unwrap().restart().await.unwrap();
    let proxy = installation.proxy();
    proxy.wait_resolves(&consumers[&victim]).await.unwrap();
    let victims_widgets = format!("/clusters/{}/apis/example.io/v1/namespaces/default/widgets", consumers[&victim]);
    wait_object(&proxy.http(), &victims_widgets, "widgets served again", READY, |list| list["items"].is_array()).await;
    let consumer = proxy.kubectl().cluster(&consumers[&victim]);
    consumer.args(["create", "-f", "-"]).stdin(widget_manifest("after", 9)).ok();
    let consumer = proxy.kubectl().cluster(&consumers[&victim]);
    consumer.args(["patch", "widget", "w0", "-n", "default", "--type=merge", "-p", r#"{"spec":{"size":5}}"#]).ok();
    wanted.insert((clusters[&victim].clone(), "after".into()), 9);
    wanted.insert((clusters[&victim].clone(), "w0".into()), 5);
    wait_reconciled(&reconciled, &wanted).await;
    controller.abort();

    // Every instance ends with its status, as stored.
    for (shard, consumer) in &consumers {
        let list = proxy
            .kubectl()
            .cluster(consumer)
            .args(["get", "widgets", "-n", "default", "-o", "json"])
            .ok()
            .json()
            .unwrap();
        for widget in list["items"].as_array().unwrap() {
            assert_eq!(widget["status"]["observedSize"], widget["spec"]["size"], "{shard}: {widget}");
        }
    }
}

const POLICY_EXPORT: &str = r#"
apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata: {name: v1.gadgets.example.io}
spec:
  group: example.io
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apis.kcp.io/v1alpha1
kind: APIExport
metadata: {name: gadgets}
spec:
  latestResourceSchemas: [v1.gadgets.example.io]
  maximalPermissionPolicy: {local: {}}
  permissionClaims:
  - {group: "", resource: configmaps, all: true}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: gadgets-consumers
  annotations: {internal.kcp.io/replicate: "true"}
rules:
- apiGroups: [example.io]
  resources: [gadgets]
  verbs: [get, list, watch, create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: gadgets-consumers
  annotations: {internal.kcp.io/replicate: "true"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gadgets-consumers}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "apis.kcp.io:binding:system:authenticated"}]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_maximal_permission_policy_bounds_consumers_and_claims_grant_exactly_what_is_accepted() {
    let installation = Installation::regional_behind_proxy().await;
    let placement = installation
        .place_workspaces("mpp", PLACEMENT_MAX, |p| p.len() >= 2)
        .await
        .expect("place provider and consumer on two shards");
    let mut shards = placement.values();
    let provider = format!("root:{}", shards.next().unwrap()[0]);
    let consumer = format!("root:{}", shards.next().unwrap()[0]);
    let proxy = installation.proxy();
    for workspace in [&provider, &consumer] {
        proxy.wait_resolves(workspace).await.unwrap();
    }
    let http = proxy.http();
    proxy.kubectl().cluster(&provider).args(["apply", "-f", "-"]).stdin(POLICY_EXPORT).ok();
    let export_path = format!("/clusters/{provider}/apis/apis.kcp.io/v1alpha1/apiexports/gadgets");
    wait_object(&http, &export_path, "the export's identity", READY, |e| e["status"]["identityHash"].is_string()).await;
    let binding = json!({
        "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "gadgets"},
        "spec": {"reference": {"export": {"path": provider, "name": "gadgets"}}},
    });
    proxy.kubectl().cluster(&consumer).args(["apply", "-f", "-"]).stdin(binding.to_string()).ok();
    let binding_path = format!("/clusters/{consumer}/apis/apis.kcp.io/v1alpha1/apibindings/gadgets");
    wait_object(&http, &binding_path, "the binding Bound", READY, |b| b["status"]["phase"] == "Bound").await;

    // Dora is cluster-admin of the consumer workspace.
    let dora_admin = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: dora-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: dora}]
"#;
    proxy.kubectl().cluster(&consumer).args(["apply", "-f", "-"]).stdin(dora_admin).ok();
    let dora = installation.user_identity("dora", &[]).unwrap();
    let kubeconfig = proxy.user_kubeconfig("dora", &dora, &consumer).unwrap();
    let as_dora = || proxy.kubectl_with(&kubeconfig);
    let gadget =
        json!({"apiVersion": "example.io/v1", "kind": "Gadget", "metadata": {"name": "g1", "namespace": "default"}});
    as_dora().args(["create", "-f", "-"]).stdin(gadget.to_string()).ok();
    as_dora().args(["get", "gadgets", "-n", "default"]).ok();
    // ConfigMaps are hers to delete; gadgets are not, whatever her own RBAC says.
    as_dora().args(["create", "configmap", "mine", "-n", "default"]).ok();
    // An endpoint slice tells where an export's consumers are: only who may bind it makes one.
    let slice = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExportEndpointSlice",
        "metadata": {"name": "gadgets"}, "spec": {"export": {"path": provider, "name": "gadgets"}}});
    let refused = as_dora().args(["create", "-f", "-"]).stdin(slice.to_string()).fails();
    assert!(refused.stderr.contains("no permission to bind"), "{refused:?}");
    as_dora().args(["delete", "configmap", "mine", "-n", "default"]).ok();
    let refused = as_dora().args(["delete", "gadget", "g1", "-n", "default"]).fails();
    let said = refused.stderr.to_lowercase();
    assert!(said.contains("forbidden") && said.contains("maximal permission policy"), "{refused:?}");
    // `kubectl auth can-i` answers as the requests are answered: the export's policy bounds
    // the review too, not only her own RBAC.
    let can_i = |verb: &str| as_dora().args(["auth", "can-i", verb, "gadgets.example.io", "-n", "default"]).run();
    let asked = can_i("delete");
    assert!(!asked.success() && asked.stdout.starts_with("no - "), "{asked:?}");
    assert!(asked.stdout.contains("maximal permission policy of APIExport"), "the reason says why: {asked:?}");
    let asked = can_i("get");
    assert_eq!((asked.success(), asked.stdout.trim()), (true, "yes"), "{asked:?}");
    // The admin (system:masters) is not bounded, and a grant in the policy lets her.
    let grant = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: gadgets-deleters
  annotations: {internal.kcp.io/replicate: "true"}
rules:
- apiGroups: [example.io]
  resources: [gadgets]
  verbs: [delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: gadgets-deleters
  annotations: {internal.kcp.io/replicate: "true"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gadgets-deleters}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "apis.kcp.io:binding:dora"}]
"#;
    proxy.kubectl().cluster(&provider).args(["apply", "-f", "-"]).stdin(grant).ok();
    let deadline = Instant::now() + READY;
    loop {
        let attempt = as_dora().args(["delete", "gadget", "g1", "-n", "default"]).run();
        if attempt.success() {
            break;
        }
        assert!(Instant::now() < deadline, "the policy's grant never reached the consumer's shard: {attempt:?}");
        tokio::time::sleep(POLL).await;
    }
    let asked = can_i("delete");
    assert_eq!((asked.success(), asked.stdout.trim()), (true, "yes"), "once granted: {asked:?}");

    // Permission claims: the export claims ConfigMaps. Until the binding accepts, the
    // view shows none; accepted, exactly the consumer's; rejected, a watch sees them go.
    let export = http.get_json(&export_path).await.unwrap();
    let export_cluster = export["metadata"]["annotations"]["kcp.io/cluster"].as_str().unwrap().to_string();
    let consumer_shard =
        placement.iter().find(|(_, names)| consumer == format!("root:{}", names[0])).unwrap().0.clone();
    let view = format!("/shards/{consumer_shard}/services/apiexport/{export_cluster}/gadgets");
    let configmaps = format!("{view}/clusters/*/api/v1/configmaps");
    proxy.kubectl().cluster(&consumer).args(["create", "configmap", "claimed", "-n", "default"]).ok();
    let names = |list: &Value| -> BTreeSet<String> {
        let items = list["items"].as_array().cloned().unwrap_or_default();
        items.iter().filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string)).collect()
    };
    let before = http.get_json(&configmaps).await.unwrap();
    assert!(names(&before).is_empty(), "nothing is granted before the claim is accepted: {before}");
    let accept = |state: &str| json!({"spec": {"permissionClaims": [{"group": "", "resource": "configmaps", "all": true, "state": state}]}});
    proxy
        .kubectl()
        .cluster(&consumer)
        .args(["patch", "apibinding", "gadgets", "--type=merge", "-p", &accept("Accepted").to_string()])
        .ok();
    let granted = wait_object(&http, &configmaps, "the claimed ConfigMap in the view", READY, |list| {
        names(list).contains("claimed")
    })
    .await;
    let clusters: BTreeSet<&str> = granted["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["annotations"]["kcp.io/cluster"].as_str())
        .collect();
    assert_eq!(clusters.len(), 1, "only the accepting workspace's ConfigMaps: {granted}");
    let binding_now = http.get_json(&binding_path).await.unwrap();
    assert_eq!(binding_now["status"]["appliedPermissionClaims"][0]["resource"], "configmaps", "{binding_now}");
    // One object in the accepting cluster is reachable by name through the view.
    let cluster = clusters.iter().next().unwrap().to_string();
    let one =
        http.get(&format!("{view}/clusters/{cluster}/api/v1/namespaces/default/configmaps/claimed")).await.unwrap();
    assert_eq!(one.status, StatusCode::OK, "{}", one.text());

    // A watch through the view sees DELETED when the claim is rejected.
    let client = client_at(&proxy.kubeconfig_path(), &format!("{}{view}/clusters/*", proxy.base_url())).await;
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::all(client);
    let (gone_tx, mut gone) = tokio::sync::mpsc::unbounded_channel::<String>();
    let (ready_tx, mut ready) = tokio::sync::mpsc::unbounded_channel::<()>();
    let watch = tokio::spawn(async move {
        let mut events = watcher::watcher(api, watcher::Config::default()).boxed();
        while let Some(event) = events.next().await {
            match event {
                Ok(Event::InitDone) => {
                    let _ = ready_tx.send(());
                }
                Ok(Event::Delete(cm)) => {
                    let _ = gone_tx.send(cm.metadata.name.unwrap_or_default());
                }
                _ => {}
            }
        }
    });
    tokio::time::timeout(READY, ready.recv()).await.expect("the view's watch starts");
    proxy
        .kubectl()
        .cluster(&consumer)
        .args(["patch", "apibinding", "gadgets", "--type=merge", "-p", &accept("Rejected").to_string()])
        .ok();
    let deleted = tokio::time::timeout(READY, gone.recv()).await.expect("a DELETED event after the rejection");
    assert_eq!(deleted.as_deref(), Some("claimed"));
    watch.abort();
    let after = http.get_json(&configmaps).await.unwrap();
    assert!(names(&after).is_empty(), "a rejected claim grants nothing: {after}");
    // Nobody forges the claim's label into the view: a user is refused it, and an
    // object labelled anyway (by system:masters) does not count in a cluster whose
    // binding does not apply the claim.
    let claimed_item =
        granted["items"].as_array().unwrap().iter().find(|i| i["metadata"]["name"] == "claimed").unwrap();
    let (label_key, label_value) = claimed_item["metadata"]["labels"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(key, _)| key.starts_with("claimed.internal.apis.kcp.io/"))
        .map(|(key, value)| (key.clone(), value.as_str().unwrap().to_string()))
        .expect("the claimed ConfigMap carries the claim's label");
    let forged = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": {label_key.clone(): label_value.clone()}}})
        .to_string()
    };
    let refused = as_dora().args(["create", "-f", "-"]).stdin(forged("forged-by-dora")).fails();
    assert!(refused.stderr.contains("claimed.internal.apis.kcp.io"), "{refused:?}");
    proxy.kubectl().cluster(&consumer).args(["create", "-f", "-"]).stdin(forged("forged")).ok();
    let after = http.get_json(&configmaps).await.unwrap();
    assert!(names(&after).is_empty(), "a forged label grants nothing: {after}");
    let refused =
        http.get(&format!("{view}/clusters/{cluster}/api/v1/namespaces/default/configmaps/claimed")).await.unwrap();
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());

    // A claim on another export's resource names it by that export's identity: the
    // gadgets export claims the widgets export's Widgets, the consumer accepts, and only
    // then binds widgets (so the claimed resource arrives on its shard after the claim).
    proxy.kubectl().cluster(&provider).args(["apply", "-f", "-"]).stdin(WIDGETS_SCHEMA_AND_EXPORT).ok();
    let widgets_export = format!("/clusters/{provider}/apis/apis.kcp.io/v1alpha1/apiexports/widgets");
    let widgets_export =
        wait_object(&http, &widgets_export, "the widgets identity", READY, |e| e["status"]["identityHash"].is_string())
            .await;
    let widgets_identity = widgets_export["status"]["identityHash"].as_str().unwrap().to_string();
    let widget_claim =
        json!({"group": "example.io", "resource": "widgets", "identityHash": widgets_identity, "all": true});
    let claims =
        json!({"spec": {"permissionClaims": [{"group": "", "resource": "configmaps", "all": true}, widget_claim]}});
    let patch = ["patch", "apiexport", "gadgets", "--type=merge", "-p"];
    proxy.kubectl().cluster(&provider).args(patch).args([claims.to_string()]).ok();
    let mut accepted = widget_claim.clone();
    accepted["state"] = json!("Accepted");
    let accept_widgets = json!({"spec": {"permissionClaims": [accepted]}});
    let patch = ["patch", "apibinding", "gadgets", "--type=merge", "-p"];
    proxy.kubectl().cluster(&consumer).args(patch).args([accept_widgets.to_string()]).ok();
    wait_object(&http, &binding_path, "the widgets claim applied", READY, |b| {
        b["status"]["appliedPermissionClaims"][0]["resource"] == "widgets"
    })
    .await;
    proxy
        .kubectl()
        .cluster(&consumer)
        .args(["apply", "-f", "-"])
        .stdin(binding_manifest(EXPORT, &provider, EXPORT))
        .ok();
    let widgets_binding = format!("/clusters/{consumer}/apis/apis.kcp.io/v1alpha1/apibindings/{EXPORT}");
    wait_object(&http, &widgets_binding, "the widgets binding Bound", READY, |b| b["status"]["phase"] == "Bound").await;
    proxy.kubectl().cluster(&consumer).args(["create", "-f", "-"]).stdin(widget_manifest("claimed-widget", 3)).ok();
    let claimed_widgets = format!("{view}/clusters/*/apis/example.io/v1/widgets");
    let seen = wait_object(&http, &claimed_widgets, "the claimed Widget in the gadgets view", READY, |list| {
        names(list).contains("claimed-widget")
    })
    .await;
    assert_eq!(names(&seen).len(), 1, "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_stream_lists_with_bookmarks_and_answer_a_compacted_version_with_410() {
    // Short change-log retention, so a version falls out of it quickly.
    let options = tests::ShardOptions {
        extra_args: vec!["--retention-events".into(), "5".into(), "--compaction-interval-seconds".into(), "1".into()],
        ..tests::ShardOptions::default()
    };
    let shard = tests::ShardProcess::start(options).await.unwrap();
    for cluster in ["provider", "consumer"] {
        shard.create_logical_cluster(cluster).await.unwrap();
    }
    let kubectl = |cluster: &str| shard.kubectl().cluster(cluster);
    let provider_only = PROVIDER_MANIFEST.split("---").take(2).collect::<Vec<_>>().join("---");
    kubectl("provider").args(["apply", "-f", "-"]).stdin(provider_only).ok();
    let http = shard.http();
    let export = "/clusters/provider/apis/apis.kcp.io/v1alpha1/apiexports/widgets";
    wait_object(&http, export, "the export's identity", READY, |e| e["status"]["identityHash"].is_string()).await;
    kubectl("consumer").args(["apply", "-f", "-"]).stdin(binding_manifest(EXPORT, "provider", EXPORT)).ok();
    let binding = "/clusters/consumer/apis/apis.kcp.io/v1alpha1/apibindings/widgets";
    wait_object(&http, binding, "the binding Bound", READY, |b| b["status"]["phase"] == "Bound").await;
    for name in ["a", "b"] {
        kubectl("consumer").args(["create", "-f", "-"]).stdin(widget_manifest(name, 1)).ok();
    }
    let widgets =
        format!("/shards/{}/services/apiexport/provider/widgets/clusters/*/apis/example.io/v1/widgets", shard.name());

    // A streaming list: the instances, then the initial-events-end bookmark.
    let streaming = format!(
        "{widgets}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    );
    let response = http.send_streaming(http::Method::GET, &streaming, &[], Vec::new()).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let events = tests::tls_http::watch_events(response, 3).await;
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap_or_default()).collect();
    assert_eq!(kinds, ["ADDED", "ADDED", "BOOKMARK"], "{events:?}");
    assert_eq!(events[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true", "{events:?}");
    assert!(events[0]["object"]["metadata"]["annotations"]["kcp.io/cluster"].is_string(), "{events:?}");

    // A watch from a version the change log no longer holds is an in-band 410.
    let listed = http.get_json(&widgets).await.unwrap();
    let old = listed["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    for index in 0..20 {
        kubectl("consumer").args(["create", "configmap", &format!("churn-{index}"), "-n", "default"]).ok();
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let from_old = format!("{widgets}?watch=true&resourceVersion={old}");
    let response = http.send_streaming(http::Method::GET, &from_old, &[], Vec::new()).await.unwrap();
    let events = tests::tls_http::watch_events(response, 1).await;
    assert_eq!(events[0]["type"], "ERROR", "{events:?}");
    assert_eq!(events[0]["object"]["code"], 410, "{events:?}");
}
