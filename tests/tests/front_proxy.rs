//! The front-proxy over real processes: root + 2 shards + `atoll-front-proxy`, driven by
//! stock kubectl, kube-rs and raw HTTPS.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{json, Value};
use tests::installation::{create_workspace, wait_workspace_ready, workspace_url, Installation, InstallationOptions};
use tests::{HttpResponse, TlsHttp};

const READY: Duration = Duration::from_secs(30);
const TOKENS: &str = "t-alice,alice,u-alice\nt-bob,bob,u-bob,\"dev\"\nt-victim,victim@example.com,u-victim\n";
/// A user whose name is the home path segment `victim@example.com` gets (not a DNS label,
/// so it is hashed): the squatter of the review finding.
fn squatter() -> String {
    protocol::ring::name_for_key("user:victim@example.com")
}

/// Root + 2 shards + a front-proxy that accepts the tokens of [`TOKENS`].
async fn installation(dir: &tempfile::TempDir) -> Installation {
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, format!("{TOKENS}t-squatter,{},u-squatter\n", squatter())).unwrap();
    let options = InstallationOptions {
        extra_shards: 2,
        front_proxy: true,
        proxy_token_file: Some(tokens),
        ..InstallationOptions::default()
    };
    Installation::start_with(options).await.unwrap()
}

/// Creates workspace `root:<name>` (directly on root), waits until it is Ready and
/// resolves through the proxy, and returns the name of the shard hosting it.
async fn workspace(installation: &Installation, name: &str) -> String {
    create_workspace(&installation.root, "root", name).await.unwrap();
    let ready = wait_workspace_ready(&installation.root, "root", name, READY).await.unwrap();
    let url = workspace_url(&ready).unwrap().to_owned();
    installation.proxy().wait_resolves(&format!("root:{name}")).await.unwrap();
    installation.shard_for_url(&url).unwrap().name().to_owned()
}

async fn get_as(http: &TlsHttp, path: &str, headers: &[(&str, &str)]) -> HttpResponse {
    http.send(Method::GET, path, headers, Bytes::new()).await.unwrap()
}

/// The requests a shard's /metrics counts with `resource="unknown"`, over every verb and code.
fn unknown_resource_requests(metrics: &str) -> u64 {
    metrics
        .lines()
        .filter(|line| line.starts_with("apiserver_request") && line.contains("resource=\"unknown\""))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_and_authorization_through_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let installation = installation(&dir).await;
    let proxy = installation.proxy();
    let hosting = workspace(&installation, "team-b").await;
    let configmaps = "/clusters/root:team-b/api/v1/namespaces/default/configmaps";

    // No credentials: 401, as a Status.
    let anonymous = proxy.http_as(None).unwrap();
    let response = get_as(&anonymous, configmaps, &[]).await;
    assert_eq!(response.status, StatusCode::UNAUTHORIZED, "{}", response.text());
    assert_eq!(response.json().unwrap()["kind"], "Status");
    let response = get_as(&anonymous, configmaps, &[("authorization", "Bearer wrong")]).await;
    assert_eq!(response.status, StatusCode::UNAUTHORIZED, "{}", response.text());

    // A bearer token is a user; smuggled identity headers gain nothing.
    let bob = [("authorization", "Bearer t-bob")];
    assert_eq!(get_as(&anonymous, configmaps, &bob).await.status, StatusCode::FORBIDDEN);
    let smuggled = [
        ("authorization", "Bearer t-bob"),
        ("x-remote-user", "admin"),
        ("x-remote-group", "system:masters"),
        ("impersonate-user", "admin"),
    ];
    let response = get_as(&anonymous, configmaps, &smuggled).await;
    assert_eq!(response.status, StatusCode::FORBIDDEN, "{}", response.text());
    assert!(response.text().contains("bob"), "{}", response.text());

    // Client certificates: alice may not read workspace team-b...
    let alice = installation.user_identity("alice", &[]).unwrap();
    let alice_http = proxy.http_as(Some(&alice)).unwrap();
    let denied = get_as(&alice_http, configmaps, &[]).await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN, "{}", denied.text());
    // Straight to a shard, identity headers from a user certificate count for nothing:
    // shards take them only from the front-proxy's certificate.
    let direct = installation.root.http_as(Some(&alice)).unwrap();
    let smuggled = [("x-remote-user", "admin"), ("x-remote-group", "system:masters")];
    let response = get_as(&direct, "/clusters/root/api/v1/namespaces/default/configmaps", &smuggled).await;
    assert_eq!(response.status, StatusCode::FORBIDDEN, "{}", response.text());
    assert!(response.text().contains("alice"), "{}", response.text());
    // The gRPC index feed is for front-proxies (and system:masters) only.
    let grpc = [("content-type", "application/grpc"), ("te", "trailers")];
    let feed = direct.send(Method::POST, "/atoll.index.v1.IndexFeed/Watch", &grpc, Bytes::new()).await.unwrap();
    assert_eq!(feed.headers.get("grpc-status").map(|v| v.to_str().unwrap()), Some("7"), "{feed:?}");
    // Paths a shard does not serve, and names with an escaped slash, look the same for
    // existing and missing workspaces; the shard keeps serving.
    for (existing, missing) in [
        ("/clusters/root:team-b/foo", "/clusters/root:nope/foo"),
        (
            "/clusters/root:team-b/api/v1/namespaces/default/configmaps/a%2Fb",
            "/clusters/root:nope/api/v1/namespaces/default/configmaps/a%2Fb",
        ),
    ] {
        let (existing, missing) = (get_as(&alice_http, existing, &[]).await, get_as(&alice_http, missing, &[]).await);
        assert_eq!(existing.status, StatusCode::FORBIDDEN, "{}", existing.text());
        assert_eq!(existing.text().replace("root:team-b", "<p>"), missing.text().replace("root:nope", "<p>"));
    }
    let slash = proxy.http().get("/clusters/root:team-b/api/v1/namespaces/default/configmaps/a%2Fb").await.unwrap();
    assert_eq!(slash.status, StatusCode::NOT_FOUND, "{}", slash.text());
    // gRPC is not relayed to shards, and a shard's /metrics is for masters only, with
    // resource labels only for resources that exist.
    let relayed = alice_http.send(Method::POST, "/atoll.index.v1.IndexFeed/Watch", &grpc, Bytes::new()).await.unwrap();
    assert_eq!(relayed.status, StatusCode::FORBIDDEN, "{}", relayed.text());
    assert_eq!(
        installation.root.http_as(None).unwrap().get("/metrics").await.unwrap().status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(direct.get("/metrics").await.unwrap().status, StatusCode::FORBIDDEN);
    let hosting_shard = installation.all().find(|shard| shard.name() == hosting).unwrap();
    let unknown_before = unknown_resource_requests(&hosting_shard.http().get("/metrics").await.unwrap().text());
    let made_up = get_as(&alice_http, "/clusters/root:team-b/api/v1/made-up-resource", &[]).await;
    // The proxy relays it (alice is refused by the shard, which labels the request).
    assert_eq!(made_up.status, StatusCode::FORBIDDEN, "{}", made_up.text());
    for shard in installation.all() {
        let metrics = shard.http().get("/metrics").await.unwrap().text();
        if shard.name() == hosting {
            let unknown_after = unknown_resource_requests(&metrics);
            assert!(unknown_after > unknown_before, "the request was not counted as resource=unknown: {metrics}");
        }
        assert!(!metrics.contains("made-up-resource"), "label from a URL on {}", shard.name());
    }
    // ...and an unknown workspace looks the same: 403, not 404.
    let unknown = get_as(&alice_http, "/clusters/root:nope/api/v1/namespaces/default/configmaps", &[]).await;
    assert_eq!(unknown.status, StatusCode::FORBIDDEN, "{}", unknown.text());
    let message = |response: &HttpResponse, path: &str| response.text().replace(path, "<path>");
    assert_eq!(message(&unknown, "root:nope"), message(&denied, "root:team-b"), "unknown and forbidden look alike");
    // Wildcards are shard-direct only, even for admin.
    let wildcard = proxy.http().get("/clusters/*/api/v1/configmaps").await.unwrap();
    assert_eq!(wildcard.status, StatusCode::FORBIDDEN, "{}", wildcard.text());
    let wildcard = proxy.http().get("/clusters/%2A/api/v1/configmaps").await.unwrap();
    assert_eq!(wildcard.status, StatusCode::FORBIDDEN, "{}", wildcard.text());

    // Granted access to the workspace and a RoleBinding to view in default, she can read
    // there and nowhere else, and cannot write.
    let admin = || proxy.kubectl().cluster("root:team-b");
    let grants = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: workspace-access}
rules:
- apiGroups: [tenancy.kcp.io]
  resources: [workspaces/content]
  verbs: [access]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-access}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: workspace-access}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-view, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
"#;
    admin().args(["apply", "-f", "-"]).stdin(grants).ok();
    admin().args(["create", "configmap", "visible", "-n", "default"]).ok();
    let allowed = get_as(&alice_http, configmaps, &[]).await;
    assert_eq!(allowed.status, StatusCode::OK, "{}", allowed.text());
    assert!(allowed.text().contains("visible"), "{}", allowed.text());
    let kubeconfig = proxy.user_kubeconfig("alice", &alice, "root:team-b").unwrap();
    let as_alice = || proxy.kubectl_with(&kubeconfig);
    let listed = as_alice().args(["get", "configmaps", "-n", "default", "-o", "name"]).ok().stdout;
    assert!(listed.contains("configmap/visible"), "{listed}");
    let refused = as_alice().args(["create", "configmap", "mine", "-n", "default"]).fails();
    assert!(refused.stderr.contains("forbidden"), "{refused:?}");
    assert_eq!(as_alice().args(["auth", "can-i", "list", "configmaps", "-n", "default"]).ok().stdout.trim(), "yes");
    let no = as_alice().args(["auth", "can-i", "create", "configmaps", "-n", "default"]).run();
    assert_eq!(no.stdout.trim(), "no", "{no:?}");
    // Bob still cannot.
    assert_eq!(get_as(&anonymous, configmaps, &bob).await.status, StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_workspaces_are_created_on_first_use() {
    let dir = tempfile::tempdir().unwrap();
    let installation = installation(&dir).await;
    let proxy = installation.proxy();
    let anonymous = proxy.http_as(None).unwrap();
    let alice = [("authorization", "Bearer t-alice")];
    let cluster = get_as(&anonymous, "/clusters/~/apis/core.kcp.io/v1alpha1/logicalclusters/cluster", &alice).await;
    assert_eq!(cluster.status, StatusCode::OK, "{}", cluster.text());
    let cluster = cluster.json().unwrap();
    assert_eq!(cluster["metadata"]["annotations"]["kcp.io/path"], "home:alice", "{cluster}");
    // The owner may do anything there, by either name of the workspace.
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "notes"}, "data": {"k": "v"}});
    let created = anonymous
        .send(
            Method::POST,
            "/clusters/~/api/v1/namespaces/default/configmaps",
            &[alice[0], ("content-type", "application/json")],
            serde_json::to_vec(&body).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    proxy.wait_resolves("home:alice").await.unwrap();
    let read = get_as(&anonymous, "/clusters/home:alice/api/v1/namespaces/default/configmaps/notes", &alice).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.text());
    // Bob's home is another workspace, and alice's is not his.
    let bob = [("authorization", "Bearer t-bob")];
    let bobs = get_as(&anonymous, "/clusters/~/api/v1/namespaces/default/configmaps/notes", &bob).await;
    assert_eq!(bobs.status, StatusCode::NOT_FOUND, "{}", bobs.text());
    let trespass = get_as(&anonymous, "/clusters/home:alice/api/v1/namespaces/default/configmaps", &bob).await;
    assert_eq!(trespass.status, StatusCode::FORBIDDEN, "{}", trespass.text());

    // A user named like another's hashed home segment shares the path, never the cluster.
    let home_of = |token: &'static str| {
        let anonymous = anonymous.clone();
        async move {
            let headers = [("authorization", token)];
            let cluster = get_as(&anonymous, "/clusters/~/apis/core.kcp.io/v1alpha1/logicalclusters/cluster", &headers)
                .await
                .json()
                .unwrap();
            (cluster["metadata"]["annotations"]["kcp.io/cluster"].as_str().unwrap().to_owned(), cluster)
        }
    };
    let (squatters, squatter_cluster) = home_of("Bearer t-squatter").await;
    let (victims, victim_cluster) = home_of("Bearer t-victim").await;
    assert_ne!(squatters, victims, "{squatter_cluster}\n{victim_cluster}");
    assert_eq!(
        victim_cluster["metadata"]["annotations"]["kcp.io/path"],
        squatter_cluster["metadata"]["annotations"]["kcp.io/path"]
    );
    let owner: serde_json::Value = serde_json::from_str(
        victim_cluster["metadata"]["annotations"]["experimental.tenancy.kcp.io/owner"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(owner["username"], "victim@example.com");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_survive_a_proxy_restart_and_deleted_workspaces_stop_resolving() {
    let dir = tempfile::tempdir().unwrap();
    let mut installation = installation(&dir).await;
    workspace(&installation, "watched").await;
    let client = installation.proxy().kube_client("root:watched").await.unwrap();
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(client, "default");
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let watch = tokio::spawn(async move {
        use kube::runtime::watcher::{self, Event};
        use kube::runtime::WatchStreamExt;
        let mut events = watcher::watcher(api, watcher::Config::default()).default_backoff().boxed();
        while let Some(event) = events.next().await {
            if let Ok(Event::Apply(cm) | Event::InitApply(cm)) = event {
                let _ = seen_tx.send(cm.metadata.name.unwrap_or_default());
            }
        }
    });
    let kubectl = |installation: &Installation| installation.proxy().kubectl().cluster("root:watched");
    kubectl(&installation).args(["create", "configmap", "before", "-n", "default"]).ok();
    wait_seen(&mut seen_rx, "before").await;

    installation.proxy_mut().restart().await.unwrap();
    installation.proxy().wait_resolves("root:watched").await.unwrap();
    kubectl(&installation).args(["create", "configmap", "after", "-n", "default"]).ok();
    wait_seen(&mut seen_rx, "after").await;
    watch.abort();

    // Deleting the workspace stops its path resolving (the index follows the feed).
    let started = Instant::now();
    installation.proxy().kubectl().args(["delete", "workspace", "watched", "--wait=false"]).ok();
    loop {
        let response = installation.proxy().http().get("/clusters/root:watched/api").await.unwrap();
        if response.status == StatusCode::FORBIDDEN {
            break;
        }
        assert!(started.elapsed() < READY, "root:watched still resolves: {}", response.text());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("root:watched stopped resolving {:?} after kubectl delete started", started.elapsed());
}

/// Waits until the watch delivered configmap `name`.
async fn wait_seen(receiver: &mut tokio::sync::mpsc::UnboundedReceiver<String>, name: &str) {
    let found = tokio::time::timeout(READY, async {
        while let Some(seen) = receiver.recv().await {
            if seen == name {
                return;
            }
        }
    })
    .await;
    assert!(found.is_ok(), "the watch never delivered {name}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_shard_takes_only_its_own_workspaces_down() {
    let dir = tempfile::tempdir().unwrap();
    let mut installation = installation(&dir).await;
    let mut hosts: Vec<(String, String)> = Vec::new();
    for index in 0..8 {
        let name = format!("w{index}");
        let shard = workspace(&installation, &name).await;
        hosts.push((name, shard));
    }
    // A victim that is not root, and a survivor on another shard.
    let (victim_ws, victim) = hosts.iter().find(|(_, shard)| shard != "root").cloned().expect("a non-root workspace");
    let (survivor_ws, _) =
        hosts.iter().find(|(_, shard)| *shard != victim).cloned().expect("another shard's workspace");
    installation.shards.iter_mut().find(|shard| shard.name() == victim).unwrap().kill9();

    let http = installation.proxy().http();
    let dead = http.get(&format!("/clusters/root:{victim_ws}/api/v1/namespaces")).await.unwrap();
    assert_eq!(dead.status, StatusCode::SERVICE_UNAVAILABLE, "{}", dead.text());
    let body: Value = dead.json().unwrap();
    assert_eq!(body["kind"], "Status", "{body}");
    let alive = http.get(&format!("/clusters/root:{survivor_ws}/api/v1/namespaces")).await.unwrap();
    assert_eq!(alive.status, StatusCode::OK, "{}", alive.text());
    let root = http.get("/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces").await.unwrap();
    assert_eq!(root.status, StatusCode::OK, "{}", root.text());

    // Back up, the shard's feed resumes and its workspaces answer again; a workspace
    // created meanwhile elsewhere resolves too.
    let shard = installation.shards.iter_mut().find(|shard| shard.name() == victim).unwrap();
    shard.restart().await.unwrap();
    installation.proxy().wait_resolves(&format!("root:{victim_ws}")).await.unwrap();
    let back = http.get(&format!("/clusters/root:{victim_ws}/api/v1/namespaces")).await.unwrap();
    assert_eq!(back.status, StatusCode::OK, "{}", back.text());
    workspace(&installation, "after-restart").await;
}

/// Sends `signal` (`STOP`, `CONT`) to `pid` with kill(1) (the workspace forbids `unsafe`).
fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status().unwrap();
    assert!(status.success(), "kill -{signal} {pid}: {status}");
}

/// A proxy restarted while a shard is frozen (SIGSTOP: its port accepts, nothing answers)
/// has that shard's routing index still to come. A workspace there is not "forbidden or
/// does not exist": it gets a 503 Status with Retry-After, to callers who may see it;
/// a synced shard's workspaces work; a workspace missing from a synced parent keeps its
/// 403; and /readyz waits. Once the shard thaws, its workspaces route and /readyz is ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_restarted_while_a_shard_is_frozen_answers_503_for_its_workspaces_until_it_syncs() {
    let dir = tempfile::tempdir().unwrap();
    let mut installation = installation(&dir).await;
    let mut hosts: Vec<(String, String)> = Vec::new();
    // Names are drawn at random over three shards: 40 tries miss shard-1 once in ~10^7.
    for index in 0..40 {
        let name = format!("f{index}");
        let shard = workspace(&installation, &name).await;
        hosts.push((name, shard));
        let frozen = hosts.iter().any(|(_, shard)| shard == "shard-1");
        if frozen && hosts.iter().any(|(_, shard)| shard != "shard-1") {
            break;
        }
    }
    let (victim_ws, _) = hosts.iter().find(|(_, shard)| shard == "shard-1").cloned().expect("a workspace on shard-1");
    let (survivor_ws, _) =
        hosts.iter().find(|(_, shard)| shard != "shard-1").cloned().expect("a workspace on another shard");
    let pid = installation.by_name("shard-1").unwrap().pid().expect("shard-1 runs");
    signal(pid, "STOP");
    // A grace far beyond the test, so /readyz waits for shard-1 whatever the machine's load.
    let restarted = installation.proxy_mut().restart_serving(&["--ready-grace-seconds", "3600"]).await;
    if let Err(error) = restarted {
        signal(pid, "CONT");
        panic!("restart the proxy while shard-1 is frozen: {error:#}");
    }
    let proxy = installation.proxy();
    proxy.wait_resolves(&format!("root:{survivor_ws}")).await.unwrap();
    let http = proxy.http();

    let victim = format!("/clusters/root:{victim_ws}/api/v1/namespaces");
    let answer = http.get(&victim).await.unwrap();
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE, "{}", answer.text());
    assert_eq!(answer.headers.get("retry-after").and_then(|v| v.to_str().ok()), Some("1"), "{:?}", answer.headers);
    let status: Value = answer.json().unwrap();
    assert_eq!((status["kind"].as_str(), status["reason"].as_str()), (Some("Status"), Some("ServiceUnavailable")));
    let message = status["message"].as_str().unwrap_or_default();
    assert!(message.contains("shard-1") && message.contains("retry"), "{message}");
    // Someone who may not see the workspace learns nothing: the answer for a missing one.
    let alice = [("authorization", "Bearer t-alice")];
    let hidden = get_as(&proxy.http_as(None).unwrap(), &victim, &alice).await;
    assert_eq!(hidden.status, StatusCode::FORBIDDEN, "{}", hidden.text());
    // Root's Workspaces arrived: a workspace root does not have is known not to exist.
    let missing = http.get("/clusters/root:no-such-workspace/api").await.unwrap();
    assert_eq!(missing.status, StatusCode::FORBIDDEN, "{}", missing.text());
    let alive = http.get(&format!("/clusters/root:{survivor_ws}/api/v1/namespaces")).await.unwrap();
    assert_eq!(alive.status, StatusCode::OK, "{}", alive.text());
    let unready = http.get("/readyz").await.unwrap();
    assert_eq!(unready.status, StatusCode::SERVICE_UNAVAILABLE, "{}", unready.text());
    assert!(unready.text().contains("shard-1"), "{}", unready.text());

    signal(pid, "CONT");
    proxy.wait_resolves(&format!("root:{victim_ws}")).await.unwrap();
    let back = http.get(&victim).await.unwrap();
    assert_eq!(back.status, StatusCode::OK, "{}", back.text());
    let ready = http.get("/readyz").await.unwrap();
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text());
}
