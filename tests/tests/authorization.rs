//! Authorization over real processes: users other than system:masters are judged by the
//! RBAC of the logical cluster they address, and only after they may access it at all
//! (kcp's verb `access`, or owning the workspace).
//!
//! Users are client certificates minted from the shard's client CA; policy is written
//! by the admin with stock kubectl, and checked with raw HTTP (for exact Status bodies)
//! and with `kubectl auth can-i`.

use http::{Method, StatusCode};
use serde_json::{json, Value};
use std::path::PathBuf;
use tests::installation::{create_workspace, wait_workspace_ready, workspace_url, workspaces_path, Installation};
use tests::{HttpResponse, ShardProcess, TlsHttp};

const CLUSTER: &str = "team";

/// A ClusterRole granting kcp's workspace access in its older, resource form (the modern
/// form, `access` on `/`, is the bootstrap `system:kcp:workspace:access`).
const CONTENT_ACCESS_ROLE: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: content-access
rules:
- apiGroups: ["tenancy.kcp.io"]
  resources: ["workspaces/content"]
  verbs: ["access"]
"#;

/// Applies `manifest` in `cluster` as the admin.
fn apply(shard: &ShardProcess, cluster: &str, manifest: &str) {
    shard.kubectl().cluster(cluster).args(["apply", "-f", "-"]).stdin(manifest.to_string()).ok();
}

/// A ClusterRoleBinding of `role` to user `user`.
fn cluster_role_binding(name: &str, user: &str, role: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {name}\n\
         subjects:\n- kind: User\n  name: {user}\n  apiGroup: rbac.authorization.k8s.io\n\
         roleRef:\n  kind: ClusterRole\n  name: {role}\n  apiGroup: rbac.authorization.k8s.io\n"
    )
}

/// A RoleBinding in `namespace` of `kind` `role` to user `user`.
fn role_binding(name: &str, namespace: &str, user: &str, kind: &str, role: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {name}\n  namespace: {namespace}\n\
         subjects:\n- kind: User\n  name: {user}\n  apiGroup: rbac.authorization.k8s.io\n\
         roleRef:\n  kind: {kind}\n  name: {role}\n  apiGroup: rbac.authorization.k8s.io\n"
    )
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

fn configmaps(cluster: &str, namespace: &str) -> String {
    format!("/clusters/{cluster}/api/v1/namespaces/{namespace}/configmaps")
}

/// A raw HTTPS client for `user` (no groups besides system:authenticated).
fn user_http(shard: &ShardProcess, user: &str) -> TlsHttp {
    let identity = shard.user_identity(user, &[]).expect("mint a user certificate");
    shard.http_as(Some(&identity)).expect("build a user client")
}

/// Asserts a 403 Status whose message contains `message`; returns the Status.
fn assert_forbidden(response: &HttpResponse, message: &str) -> Value {
    assert_eq!(response.status, StatusCode::FORBIDDEN, "{}", response.text());
    let status = response.json().expect("a Status body");
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["reason"], "Forbidden", "{status}");
    assert_eq!(status["code"], 403, "{status}");
    let text = status["message"].as_str().unwrap_or_default();
    assert!(text.contains(message), "expected {message:?} in {text:?}");
    status
}

/// Asserts a 200 (quoting the body otherwise); returns the response.
fn assert_ok(response: HttpResponse) -> HttpResponse {
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    response
}

async fn get(http: &TlsHttp, path: &str) -> HttpResponse {
    http.get(path).await.unwrap_or_else(|e| panic!("GET {path}: {e:#}"))
}

async fn post(http: &TlsHttp, path: &str, body: &Value) -> HttpResponse {
    http.post_json(path, body).await.unwrap_or_else(|e| panic!("POST {path}: {e:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_need_workspace_access_and_then_rbac() {
    let shard = ShardProcess::with_clusters(&[CLUSTER]).await;
    let admin = shard.http();
    let cms = configmaps(CLUSTER, "default");
    for name in ["x", "y"] {
        assert_eq!(post(&admin, &cms, &config_map(name)).await.status, StatusCode::CREATED);
    }
    apply(&shard, CLUSTER, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: other\n");
    let alice = user_http(&shard, "alice");

    // Unauthenticated is 401, before any authorization.
    let anonymous = shard.http_as(None).unwrap();
    assert_eq!(get(&anonymous, &cms).await.status, StatusCode::UNAUTHORIZED);

    // Without access to the workspace, nothing: objects, lists, discovery.
    let denied = assert_forbidden(
        &get(&alice, &format!("{cms}/x")).await,
        r#"forbidden: User "alice" cannot access workspace "team""#,
    );
    // Only the workspace is named, worded as for one that does not exist.
    assert!(denied.get("details").is_none(), "{denied}");
    assert_forbidden(&get(&alice, &cms).await, r#"User "alice" cannot access workspace "team""#);
    assert_forbidden(&get(&alice, "/clusters/team/api").await, "forbidden: User \"alice\" cannot access workspace");
    // A cluster that does not exist looks the same: names cannot be probed.
    assert_forbidden(&get(&alice, "/clusters/nope/api/v1/namespaces").await, r#"cannot access workspace "nope""#);
    assert_forbidden(&get(&alice, "/clusters/root:nope/api").await, r#"cannot access workspace "root:nope""#);
    // The admin still learns why.
    assert_eq!(get(&admin, "/clusters/nope/api/v1/namespaces").await.status, StatusCode::NOT_FOUND);

    // Access to the workspace alone grants discovery, not objects.
    apply(&shard, CLUSTER, CONTENT_ACCESS_ROLE);
    apply(&shard, CLUSTER, &cluster_role_binding("alice-access", "alice", "content-access"));
    assert_ok(get(&alice, "/clusters/team/api").await);
    assert_ok(get(&alice, "/clusters/team/apis").await);
    assert_ok(get(&alice, "/clusters/team/version").await);
    assert_forbidden(
        &get(&alice, &format!("{cms}/x")).await,
        r#"configmaps "x" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "default""#,
    );
    assert_forbidden(
        &get(&alice, &cms).await,
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#,
    );

    // view in default: read there, nothing more.
    apply(&shard, CLUSTER, &role_binding("alice-view", "default", "alice", "ClusterRole", "view"));
    assert_ok(get(&alice, &format!("{cms}/x")).await);
    let listed = assert_ok(get(&alice, &cms).await);
    // x, y and the namespace's kube-root-ca.crt.
    assert_eq!(listed.json().unwrap()["items"].as_array().map(Vec::len), Some(3));
    assert_ok(get(&alice, "/clusters/team/api/v1/namespaces/default").await);
    assert_forbidden(&post(&alice, &cms, &config_map("z")).await, r#"cannot create resource "configmaps""#);
    assert_forbidden(&get(&alice, &configmaps(CLUSTER, "other")).await, r#"in the namespace "other""#);
    assert_forbidden(&get(&alice, "/clusters/team/api/v1/namespaces/default/secrets").await, "secrets");
    assert_forbidden(&get(&alice, "/clusters/team/api/v1/configmaps").await, "at the cluster scope");
    // Bindings in this cluster grant nothing in another.
    assert_forbidden(&get(&alice, &configmaps("root", "default")).await, r#"cannot access workspace "root""#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_names_and_non_resource_urls_restrict_rules() {
    let shard = ShardProcess::with_clusters(&[CLUSTER]).await;
    let admin = shard.http();
    let cms = configmaps(CLUSTER, "default");
    for name in ["mine", "theirs"] {
        assert_eq!(post(&admin, &cms, &config_map(name)).await.status, StatusCode::CREATED);
    }
    apply(&shard, CLUSTER, &cluster_role_binding("bob-access", "bob", "system:kcp:workspace:access"));
    apply(
        &shard,
        CLUSTER,
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: only-mine, namespace: default}
rules:
- {apiGroups: [""], resources: [configmaps], resourceNames: [mine], verbs: [get, list, watch, update]}
"#,
    );
    apply(&shard, CLUSTER, &role_binding("bob-mine", "default", "bob", "Role", "only-mine"));
    let bob = user_http(&shard, "bob");
    assert_ok(get(&bob, &format!("{cms}/mine")).await);
    assert_forbidden(&get(&bob, &format!("{cms}/theirs")).await, r#"configmaps "theirs" is forbidden"#);
    assert_forbidden(&get(&bob, &cms).await, "cannot list resource");
    // A list pinned to the allowed name by a field selector is a request for that name.
    assert_ok(get(&bob, &format!("{cms}?fieldSelector=metadata.name%3Dmine")).await);

    // Replacing the bootstrap discovery binding takes discovery away...
    apply(
        &shard,
        CLUSTER,
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:discovery"}
subjects: [{kind: Group, name: nobody, apiGroup: rbac.authorization.k8s.io}]
roleRef: {kind: ClusterRole, name: "system:discovery", apiGroup: rbac.authorization.k8s.io}
"#,
    );
    assert_forbidden(&get(&bob, "/clusters/team/api").await, r#"forbidden: User "bob" cannot get path "/api""#);
    // ...and nonResourceURLs give it back, exactly or by prefix.
    apply(
        &shard,
        CLUSTER,
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: some-paths}
rules:
- {nonResourceURLs: ["/api", "/apis/*"], verbs: [get]}
"#,
    );
    apply(&shard, CLUSTER, &cluster_role_binding("bob-paths", "bob", "some-paths"));
    assert_ok(get(&bob, "/clusters/team/api").await);
    assert_ok(get(&bob, "/clusters/team/apis/rbac.authorization.k8s.io/v1").await);
    assert_forbidden(&get(&bob, "/clusters/team/apis").await, r#"cannot get path "/apis""#);
    assert_forbidden(&get(&bob, "/clusters/team/api/v1").await, r#"cannot get path "/api/v1""#);
    // /version stays public through system:public-info-viewer.
    assert_ok(get(&bob, "/clusters/team/version").await);
}

/// Writes a kubeconfig for `user` on `cluster` of `shard`, signed by the installation's
/// or the shard's client CA.
fn kubeconfig(shard: &ShardProcess, identity: &tests::ClientIdentity, user: &str, cluster: &str) -> PathBuf {
    let path = shard.data_dir().join(format!("{user}-{}.kubeconfig", cluster.replace(':', "_")));
    tests::kubeconfig::write(&path, &shard.cluster_url(cluster), &shard.admin().ca_pem, identity).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_can_i_answers_for_the_caller() {
    let shard = ShardProcess::with_clusters(&[CLUSTER]).await;
    apply(&shard, CLUSTER, &cluster_role_binding("alice-access", "alice", "system:kcp:workspace:access"));
    apply(&shard, CLUSTER, &role_binding("alice-view", "default", "alice", "ClusterRole", "view"));
    let identity = shard.user_identity("alice", &[]).unwrap();
    let alice = shard.kubectl_with(&kubeconfig(&shard, &identity, "alice", CLUSTER));

    let yes = alice.clone().args(["auth", "can-i", "get", "configmaps", "-n", "default"]).ok();
    assert_eq!(yes.stdout.trim(), "yes");
    for denied in [["create", "configmaps", "default"], ["get", "configmaps", "other"], ["get", "secrets", "default"]] {
        let no = alice.clone().args(["auth", "can-i", denied[0], denied[1], "-n", denied[2]]).fails();
        assert!(no.stdout.trim().starts_with("no"), "{denied:?}: {}", no.stdout);
    }
    let list = alice.clone().args(["auth", "can-i", "--list", "-n", "default"]).ok();
    for expected in ["configmaps", "selfsubjectaccessreviews.authorization.k8s.io", "[/api/*]"] {
        assert!(list.stdout.contains(expected), "{expected} missing from:\n{}", list.stdout);
    }
    assert!(!list.stdout.contains("secrets"), "{}", list.stdout);
    let admin = shard.kubectl().cluster(CLUSTER).args(["auth", "can-i", "*", "*"]).ok();
    assert_eq!(admin.stdout.trim(), "yes");

    // SubjectAccessReview: the admin may ask about alice; alice may not ask about others.
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": "alice", "groups": ["system:authenticated"],
                 "resourceAttributes": {"verb": "list", "resource": "configmaps", "namespace": "default"}},
    });
    let path = "/clusters/team/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let answered = post(&shard.http(), path, &review).await;
    assert_eq!(answered.status, StatusCode::CREATED, "{}", answered.text());
    let answered = answered.json().unwrap();
    assert_eq!(answered["status"]["allowed"], true, "{answered}");
    assert!(answered["status"]["reason"].as_str().unwrap().contains(r#"RoleBinding "alice-view/default""#));
    let mut elsewhere = review.clone();
    elsewhere["spec"]["resourceAttributes"]["namespace"] = json!("other");
    let answered = post(&shard.http(), path, &elsewhere).await.json().unwrap();
    assert_eq!(answered["status"]["allowed"], false, "{answered}");
    assert_forbidden(&post(&user_http(&shard, "alice"), path, &review).await, "subjectaccessreviews");
    // Reviews are questions, not objects.
    let listed = shard.http().get(path).await.unwrap();
    assert_eq!(listed.status, StatusCode::METHOD_NOT_ALLOWED, "{}", listed.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_creators_own_their_workspace_on_its_shard() {
    let installation = Installation::start(1).await.unwrap();
    let root = &installation.root;
    apply(
        root,
        "root",
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: workspace-creator}
rules:
- {nonResourceURLs: ["/"], verbs: [access]}
- {apiGroups: [tenancy.kcp.io], resources: [workspaces], verbs: [create, get, list, watch]}
"#,
    );
    apply(root, "root", &cluster_role_binding("bob-creates", "bob", "workspace-creator"));
    let bob_identity = installation.user_identity("bob", &[]).unwrap();
    let bob_on_root = root.http_as(Some(&bob_identity)).unwrap();

    let created = post(&bob_on_root, &workspaces_path("root"), &tests::installation::workspace_body("bobs")).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let owner_of = |object: &Value| -> Value {
        let annotation = object["metadata"]["annotations"]["experimental.tenancy.kcp.io/owner"].as_str();
        annotation.map(|a| serde_json::from_str(a).unwrap()).unwrap_or(Value::Null)
    };
    let owner = owner_of(&created.json().unwrap());
    assert_eq!(owner["username"], "bob", "{owner}");
    assert!(owner["groups"].as_array().unwrap().contains(&json!("system:authenticated")), "{owner}");
    // Administrators' workspaces carry no owner (kept small for bulk creation).
    let by_admin = create_workspace(root, "root", "admins").await.unwrap();
    assert_eq!(owner_of(&by_admin), Value::Null);

    let ready = wait_workspace_ready(root, "root", "bobs", tests::installation::WORKSPACE_READY_TIMEOUT).await.unwrap();
    let target = installation.shard_for_url(workspace_url(&ready).unwrap()).unwrap();
    let logical_cluster =
        get(&target.http(), "/clusters/root:bobs/apis/core.kcp.io/v1alpha1/logicalclusters/cluster").await;
    assert_eq!(logical_cluster.status, StatusCode::OK, "{}", logical_cluster.text());
    assert_eq!(owner_of(&logical_cluster.json().unwrap())["username"], "bob");

    // On the workspace's shard the owner is cluster-admin, with no binding stored.
    let bob = target.http_as(Some(&bob_identity)).unwrap();
    let cms = configmaps("root:bobs", "default");
    assert_eq!(post(&bob, &cms, &config_map("mine")).await.status, StatusCode::CREATED);
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bobs-ns"}});
    assert_eq!(post(&bob, "/clusters/root:bobs/api/v1/namespaces", &namespace).await.status, StatusCode::CREATED);
    let bindings = get(&bob, "/clusters/root:bobs/apis/rbac.authorization.k8s.io/v1/clusterrolebindings").await;
    assert_eq!(bindings.status, StatusCode::OK, "{}", bindings.text());
    assert_eq!(bindings.json().unwrap()["items"], json!([]), "ownership is not a stored binding");
    let can_i = target.kubectl_with(&kubeconfig(target, &bob_identity, "bob", "root:bobs"));
    assert_eq!(can_i.args(["auth", "can-i", "*", "*"]).ok().stdout.trim(), "yes");
    // Nobody else is.
    let alice = target.http_as(Some(&installation.user_identity("alice", &[]).unwrap())).unwrap();
    assert_forbidden(&get(&alice, &cms).await, r#"cannot access workspace "root:bobs""#);
    // And the owner cannot hand ownership to someone else.
    let patch = r#"{"metadata":{"annotations":{"experimental.tenancy.kcp.io/owner":"{\"username\":\"alice\"}"}}}"#;
    let lc_path = "/clusters/root:bobs/apis/core.kcp.io/v1alpha1/logicalclusters/cluster";
    let patched = bob
        .send(Method::PATCH, lc_path, &[("content-type", "application/merge-patch+json")], patch.as_bytes().to_vec())
        .await
        .unwrap();
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.text());
    assert_eq!(owner_of(&patched.json().unwrap())["username"], "bob");
}
