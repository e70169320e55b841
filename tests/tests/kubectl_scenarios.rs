//! Stock kubectl against a real `atoll-shard`: the scenarios a person types, each run
//! directly against a shard and again through the front-proxy (HTTP/2, watches included)
//! into a workspace on another shard.

use std::time::Duration;
use tests::installation::{Installation, InstallationOptions};
use tests::{Kubectl, ShardOptions, ShardProcess, TlsHttp};

/// Where a scenario runs: kubectl and raw HTTP aimed at one logical cluster.
struct Target {
    kubectl: Box<dyn Fn() -> Kubectl + Send + Sync>,
    http: TlsHttp,
    /// The `<…>` of `/clusters/<…>/` for raw requests.
    cluster: String,
    /// Admin clients of every shard the target's requests may land on, for their metrics.
    shards: Vec<TlsHttp>,
}

impl Target {
    fn kubectl(&self) -> Kubectl {
        (self.kubectl)()
    }

    /// Watches started so far by the shards behind the target.
    async fn watches_started(&self) -> u64 {
        let mut total = 0;
        for shard in &self.shards {
            total += tests::shard::watches_started(shard).await.unwrap();
        }
        total
    }

    /// Waits (at most 30 s) until the shards behind the target started more watches than
    /// `before`: a kubectl watch started after `before` was read is then established.
    async fn wait_for_a_watch(&self, before: u64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while self.watches_started().await <= before {
            assert!(tokio::time::Instant::now() < deadline, "no watch reached a shard within 30 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A fresh shard with logical cluster `name`; the shard must outlive the target.
async fn direct(name: &str) -> (ShardProcess, Target) {
    let shard = ShardProcess::with_clusters(&[name]).await;
    let (kubectl_shard, cluster) = (shard.kubectl(), name.to_owned());
    let target = Target {
        kubectl: Box::new(move || kubectl_shard.clone().cluster(&cluster)),
        http: shard.http(),
        cluster: name.to_owned(),
        shards: vec![shard.http()],
    };
    (shard, target)
}

/// Workspace `root:<name>` created through the front-proxy of `installation`.
async fn proxied(installation: &Installation, name: &str) -> Target {
    let proxy = installation.proxy();
    let workspace =
        format!(r#"{{"apiVersion":"tenancy.kcp.io/v1alpha1","kind":"Workspace","metadata":{{"name":"{name}"}}}}"#);
    proxy.kubectl().args(["create", "-f", "-"]).stdin(workspace).ok();
    proxy
        .kubectl()
        .args(["wait", "--for=jsonpath={.status.phase}=Ready", &format!("workspace/{name}"), "--timeout=30s"])
        .ok();
    let path = format!("root:{name}");
    proxy.wait_resolves(&path).await.unwrap();
    let (kubectl_proxy, cluster) = (proxy.kubectl(), path.clone());
    Target {
        kubectl: Box::new(move || kubectl_proxy.clone().cluster(&cluster)),
        http: proxy.http(),
        cluster: path,
        shards: installation.all().map(ShardProcess::http).collect(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios_through_the_front_proxy() {
    let options = InstallationOptions { extra_shards: 2, front_proxy: true, ..InstallationOptions::default() };
    let installation = Installation::start_with(options).await.unwrap();
    apply_get_label_annotate_patch(&proxied(&installation, "alpha").await).await;
    discovery_api_resources_and_explain(&proxied(&installation, "beta").await).await;
    watch_sees_writes_of_another_client(&proxied(&installation, "gamma").await).await;
    finalizers_hold_deletion_until_removed(&proxied(&installation, "delta").await).await;
    deleting_a_namespace_deletes_its_content(&proxied(&installation, "epsilon").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_get_label_annotate_patch_direct() {
    let (_shard, target) = direct("alpha").await;
    apply_get_label_annotate_patch(&target).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_api_resources_and_explain_direct() {
    let (_shard, target) = direct("beta").await;
    discovery_api_resources_and_explain(&target).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_sees_writes_of_another_client_direct() {
    let (_shard, target) = direct("gamma").await;
    watch_sees_writes_of_another_client(&target).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizers_hold_deletion_until_removed_direct() {
    let (_shard, target) = direct("delta").await;
    finalizers_hold_deletion_until_removed(&target).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_namespace_deletes_its_content_direct() {
    let (_shard, target) = direct("epsilon").await;
    deleting_a_namespace_deletes_its_content(&target).await;
}

const MANIFEST: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
  labels:
    app: shop
data:
  color: blue
  size: "3"
---
apiVersion: v1
kind: Secret
metadata:
  name: token
  namespace: shop
stringData:
  password: hunter2
"#;

async fn apply_get_label_annotate_patch(target: &Target) {
    let kubectl = || target.kubectl();

    let applied = kubectl().args(["apply", "-f", "-"]).stdin(MANIFEST).ok();
    assert!(applied.stdout.contains("namespace/shop created"), "{}", applied.stdout);
    assert!(applied.stdout.contains("configmap/settings created"), "{}", applied.stdout);
    assert!(applied.stdout.contains("secret/token created"), "{}", applied.stdout);

    // Re-apply with a change goes through kubectl's three-way strategic merge patch.
    let changed = MANIFEST.replace("color: blue", "color: green");
    let reapplied = kubectl().args(["apply", "-f", "-"]).stdin(changed).ok();
    assert!(reapplied.stdout.contains("configmap/settings configured"), "{}", reapplied.stdout);
    assert!(reapplied.stdout.contains("namespace/shop unchanged"), "{}", reapplied.stdout);

    let yaml = kubectl().args(["get", "configmap", "settings", "-n", "shop", "-o", "yaml"]).ok().stdout;
    assert!(yaml.contains("color: green"), "{yaml}");
    assert!(yaml.contains("resourceVersion:"), "{yaml}");
    assert!(yaml.contains("uid:"), "{yaml}");
    assert!(yaml.contains("creationTimestamp:"), "{yaml}");

    let secret =
        kubectl().args(["get", "secret", "token", "-n", "shop", "-o", "jsonpath={.data.password}"]).ok().stdout;
    assert_eq!(secret, "aHVudGVyMg==");

    kubectl().args(["label", "configmap", "settings", "-n", "shop", "tier=gold"]).ok();
    kubectl().args(["label", "configmap", "settings", "-n", "shop", "tier=silver", "--overwrite"]).ok();
    kubectl().args(["annotate", "configmap", "settings", "-n", "shop", "owner=team-a"]).ok();
    let labelled = kubectl().args(["get", "configmaps", "-n", "shop", "-l", "tier=silver", "-o", "name"]).ok().stdout;
    assert_eq!(labelled.trim(), "configmap/settings");
    // Only the namespace's kube-root-ca.crt (unlabelled, as in kube) is not silver.
    let others =
        kubectl().args(["get", "configmaps", "-n", "shop", "-l", "tier notin (silver)", "-o", "name"]).ok().stdout;
    assert_eq!(others.trim(), "configmap/kube-root-ca.crt");

    kubectl()
        .args(["patch", "configmap", "settings", "-n", "shop", "--type", "merge", "-p", r#"{"data":{"size":"4"}}"#])
        .ok();
    kubectl()
        .args([
            "patch",
            "configmap",
            "settings",
            "-n",
            "shop",
            "--type",
            "json",
            "-p",
            r#"[{"op":"remove","path":"/data/color"}]"#,
        ])
        .ok();
    kubectl().args(["patch", "configmap", "settings", "-n", "shop", "-p", r#"{"data":{"shape":"round"}}"#]).ok();
    let data = kubectl().args(["get", "configmap", "settings", "-n", "shop", "-o", "json"]).ok().json().unwrap();
    assert_eq!(data["data"], serde_json::json!({"size": "4", "shape": "round"}));
    assert_eq!(data["metadata"]["annotations"]["owner"], "team-a");

    // Table output with the server's columns.
    let table = kubectl().args(["get", "configmaps", "-n", "shop"]).ok().stdout;
    let header = table.lines().next().unwrap_or_default();
    assert!(header.contains("NAME") && header.contains("DATA") && header.contains("AGE"), "{table}");
    assert!(table.contains("settings"), "{table}");
    let namespaces = kubectl().args(["get", "ns"]).ok().stdout;
    assert!(namespaces.contains("STATUS") && namespaces.contains("Active"), "{namespaces}");
}

async fn discovery_api_resources_and_explain(target: &Target) {
    let kubectl = || target.kubectl();
    let resources = kubectl().args(["api-resources"]).ok().stdout;
    for expected in [
        "configmaps",
        "namespaces",
        "secrets",
        "leases",
        "clusterroles",
        "customresourcedefinitions",
        "logicalclusters",
        "events",
    ] {
        assert!(resources.contains(expected), "{expected} missing from:\n{resources}");
    }
    let explain = kubectl().args(["explain", "configmap.data"]).ok().stdout;
    assert!(explain.contains("KIND:") && explain.contains("ConfigMap"), "{explain}");
    let explain = kubectl().args(["explain", "leases.spec"]).ok().stdout;
    assert!(explain.contains("holderIdentity"), "{explain}");
    let version = kubectl().args(["version", "-o", "json"]).ok().json().unwrap();
    assert_eq!(version["serverVersion"]["major"], "1");
}

async fn watch_sees_writes_of_another_client(target: &Target) {
    let started_before = target.watches_started().await;
    // The server ends the watch after --request-timeout, and kubectl then exits 0.
    let watcher = target
        .kubectl()
        .args(["get", "configmaps", "-n", "default", "-w", "--output-watch-events", "--request-timeout=10s"])
        .timeout(Duration::from_secs(30))
        .run_async();
    let watching = tokio::spawn(watcher);
    // kubectl lists, then watches from the list's version: once its watch reached the
    // shard, every later write is an event of this watch.
    target.wait_for_a_watch(started_before).await;
    for name in ["first", "second"] {
        target.kubectl().args(["create", "configmap", name, "-n", "default"]).ok();
    }
    target.kubectl().args(["delete", "configmap", "first", "-n", "default"]).ok();
    let output = watching.await.unwrap();
    assert!(output.success(), "the watch failed: {output:?}");
    // The table with an EVENT column: "ADDED   first   0   0s".
    let events: Vec<(&str, &str)> = output
        .stdout
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut columns = line.split_whitespace();
            Some((columns.next()?, columns.next()?))
        })
        .filter(|(_, name)| *name != "kube-root-ca.crt")
        .collect();
    assert_eq!(
        events,
        [("ADDED", "first"), ("ADDED", "second"), ("DELETED", "first")],
        "the watch's events in order: {output:?}"
    );
}

async fn finalizers_hold_deletion_until_removed(target: &Target) {
    let kubectl = || target.kubectl();
    let held = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","namespace":"default","finalizers":["example.com/hold"]}}"#;
    kubectl().args(["create", "-f", "-"]).stdin(held).ok();
    kubectl().args(["delete", "configmap", "held", "-n", "default", "--wait=false"]).ok();
    let pending = kubectl().args(["get", "configmap", "held", "-n", "default", "-o", "json"]).ok().json().unwrap();
    assert!(pending["metadata"]["deletionTimestamp"].is_string(), "{pending}");
    kubectl().clear_finalizers("configmap", "held", "default");
    let gone = kubectl().args(["get", "configmap", "held", "-n", "default"]).fails();
    assert!(gone.stderr.contains("NotFound") || gone.stderr.contains("not found"), "{gone:?}");
}

async fn deleting_a_namespace_deletes_its_content(target: &Target) {
    let kubectl = || target.kubectl();
    kubectl().args(["create", "namespace", "doomed"]).ok();
    kubectl().args(["create", "configmap", "a", "-n", "doomed"]).ok();
    kubectl().args(["create", "secret", "generic", "b", "-n", "doomed", "--from-literal=k=v"]).ok();
    kubectl().args(["delete", "namespace", "doomed", "--timeout=30s"]).ok();
    let gone = kubectl().args(["get", "namespace", "doomed"]).fails();
    assert!(gone.stderr.contains("not found"), "{gone:?}");
    let path = format!("/clusters/{}/api/v1/namespaces/doomed/configmaps", target.cluster);
    let objects = target.http.get(&path).await.unwrap().json().unwrap();
    assert_eq!(objects["items"], serde_json::json!([]));
    let create = kubectl().args(["create", "configmap", "late", "-n", "doomed"]).fails();
    assert!(create.stderr.contains("not found"), "{create:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logical_clusters_are_isolated() {
    let shard = ShardProcess::start(ShardOptions::default()).await.unwrap();
    for cluster in ["one", "two"] {
        shard.create_logical_cluster(cluster).await.unwrap();
        let value = format!("--from-literal=owner={cluster}");
        shard.kubectl().cluster(cluster).args(["create", "configmap", "same", "-n", "default", value.as_str()]).ok();
    }
    for cluster in ["one", "two"] {
        let owner = shard
            .kubectl()
            .cluster(cluster)
            .args(["get", "configmap", "same", "-n", "default", "-o", "jsonpath={.data.owner}"])
            .ok()
            .stdout;
        assert_eq!(owner, cluster);
    }
    shard.kubectl().cluster("one").args(["delete", "configmap", "same", "-n", "default"]).ok();
    shard.kubectl().cluster("two").args(["get", "configmap", "same", "-n", "default"]).ok();
    let missing = shard.kubectl().cluster("nope").args(["get", "configmaps"]).fails();
    assert!(missing.stderr.contains("could not find the requested resource"), "{missing:?}");
    let raw = shard.http().get("/clusters/nope/api/v1/namespaces/default/configmaps").await.unwrap();
    assert_eq!(raw.status, 404);
    assert!(raw.text().contains("logical cluster \\\"nope\\\" does not exist"), "{}", raw.text());

    // The wildcard endpoint sees both clusters' objects, annotated with their cluster.
    let all = shard.http().get("/clusters/*/api/v1/configmaps").await.unwrap().json().unwrap();
    let clusters: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|cm| cm["metadata"]["annotations"]["kcp.io/cluster"].as_str())
        .collect();
    assert!(clusters.contains(&"two") && !clusters.contains(&"one"), "{clusters:?}");
}
