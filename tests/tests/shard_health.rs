//! Shard health on Workspaces, over root + one shard behind a front-proxy: a workspace
//! whose shard is killed goes `Unavailable` (condition `WorkspaceShardAvailable`) after
//! the grace period (`--shard-unavailable-grace-seconds 2` here) and `Ready` again after
//! the shard restarts; meanwhile a user who may not see the workspace gets the very
//! answer for a workspace that does not exist, through the front-proxy and from a shard,
//! while a user who may see it learns that its shard is unavailable.

use std::time::{Duration, Instant};

use http::StatusCode;
use serde_json::Value;
use tests::installation::{Installation, InstallationOptions, ROOT_CLUSTER};
use tests::TlsHttp;

/// How long a transition may take beyond the grace. It bounds a bug: probes run every second.
const SETTLE: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(200);
const GRACE_SECONDS: &str = "2";

/// Bob may see root's workspaces (RBAC in root), and nothing in them.
const WORKSPACE_VIEWER: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: workspace-viewer}
rules:
- {apiGroups: [tenancy.kcp.io], resources: [workspaces], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-workspace-viewer}
subjects:
- {kind: User, name: bob, apiGroup: rbac.authorization.k8s.io}
roleRef: {kind: ClusterRole, name: workspace-viewer, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-root-access}
subjects:
- {kind: User, name: bob, apiGroup: rbac.authorization.k8s.io}
roleRef: {kind: ClusterRole, name: "system:kcp:workspace:access", apiGroup: rbac.authorization.k8s.io}
"#;

/// Polls root's Workspace `name` until `check` accepts it; returns it.
async fn wait_workspace(installation: &Installation, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let path = format!("/clusters/{ROOT_CLUSTER}/apis/tenancy.kcp.io/v1alpha1/workspaces/{name}");
    let deadline = Instant::now() + SETTLE;
    loop {
        let workspace = installation.root.http().get_json(&path).await.unwrap();
        if check(&workspace) {
            return workspace;
        }
        assert!(Instant::now() < deadline, "workspace {name} did not become {what} within {SETTLE:?}: {workspace}");
        tokio::time::sleep(POLL).await;
    }
}

fn shard_condition(workspace: &Value) -> Option<&Value> {
    let conditions = workspace.pointer("/status/conditions")?.as_array()?;
    conditions.iter().find(|c| c["type"] == "WorkspaceShardAvailable")
}

/// Status code and body of a GET, with `name` replaced by `NAME` in the body.
async fn answer(http: &TlsHttp, path: &str, name: &str) -> (StatusCode, String) {
    let response = http.get(path).await.unwrap();
    (response.status, response.text().replace(name, "NAME"))
}

/// kubectl's `Error from server …` lines (its klog lines carry times and process ids).
fn errors(stderr: &str) -> String {
    stderr.lines().filter(|line| line.starts_with("Error")).collect::<Vec<_>>().join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_on_a_dead_shard_is_unavailable_to_whom_may_see_it_and_missing_to_others() {
    let options = InstallationOptions {
        extra_shards: 1,
        front_proxy: true,
        extra_args: vec!["--shard-unavailable-grace-seconds".into(), GRACE_SECONDS.into()],
        ..InstallationOptions::default()
    };
    let mut installation = Installation::start_with(options).await.unwrap();
    let placement = installation.place_workspaces("team", 40, |p| p.contains_key("shard-1")).await.unwrap();
    let name = placement["shard-1"][0].clone();
    let path = format!("root:{name}");
    installation.proxy().wait_resolves(&path).await.unwrap();
    installation.root.kubectl().cluster(ROOT_CLUSTER).args(["apply", "-f", "-"]).stdin(WORKSPACE_VIEWER).ok();
    let eve = installation.user_identity("eve", &[]).unwrap();
    let bob = installation.user_identity("bob", &[]).unwrap();
    let eve_proxy = installation.proxy().http_as(Some(&eve)).unwrap();
    let bob_proxy = installation.proxy().http_as(Some(&bob)).unwrap();
    let eve_root = installation.root.http_as(Some(&eve)).unwrap();
    let namespaces = |path: &str| format!("/clusters/{path}/api/v1/namespaces");
    let missing = "root:nowhere";

    installation.shards[0].kill9();
    let workspace =
        wait_workspace(&installation, &name, "Unavailable", |w| w["status"]["phase"] == "Unavailable").await;
    let condition = shard_condition(&workspace).unwrap_or_else(|| panic!("no shard condition: {workspace}"));
    assert_eq!(condition["status"], "False", "{workspace}");
    assert_eq!(condition["reason"], "ShardUnavailable", "{workspace}");
    assert!(condition["message"].as_str().unwrap().contains("shard-1"), "{workspace}");

    // Eve may not see the workspace: on the dead shard or missing, the same answer.
    let dead = answer(&eve_proxy, &namespaces(&path), &path).await;
    assert_eq!(dead.0, StatusCode::FORBIDDEN, "{dead:?}");
    assert_eq!(dead, answer(&eve_proxy, &namespaces(missing), missing).await, "through the front-proxy");
    let direct = answer(&eve_root, &namespaces(&path), &path).await;
    assert_eq!(direct, answer(&eve_root, &namespaces(missing), missing).await, "from the root shard");
    let kubeconfig = |target: &str| installation.proxy().user_kubeconfig("eve", &eve, target).unwrap();
    let on_dead = installation.proxy().kubectl_with(&kubeconfig(&path)).args(["get", "configmaps"]).fails();
    let on_missing = installation.proxy().kubectl_with(&kubeconfig(missing)).args(["get", "configmaps"]).fails();
    assert_eq!(on_dead.status.code(), on_missing.status.code());
    assert_eq!(errors(&on_dead.stderr).replace(&path, "NAME"), errors(&on_missing.stderr).replace(missing, "NAME"));
    assert!(errors(&on_dead.stderr).contains("(Forbidden)"), "{on_dead:?}");

    // Bob may see root's workspaces: he learns that the shard is down, and so does admin.
    let (code, body) = answer(&bob_proxy, &namespaces(&path), &path).await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("shard shard-1 hosting this workspace is unavailable"), "{body}");
    let (code, _) = answer(&installation.proxy().http(), &namespaces(&path), &path).await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer(&bob_proxy, &namespaces(missing), missing).await.0, StatusCode::FORBIDDEN);

    // Back: Ready, condition True, served again.
    installation.shards[0].restart().await.unwrap();
    let workspace = wait_workspace(&installation, &name, "Ready again", |w| w["status"]["phase"] == "Ready").await;
    let condition = shard_condition(&workspace).unwrap();
    assert_eq!(condition["status"], "True", "{workspace}");
    installation.proxy().wait_resolves(&path).await.unwrap();
}
