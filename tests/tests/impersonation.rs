//! Impersonation (`kubectl --as`, `--as-group`), `kubectl auth whoami` and who may send
//! identity headers, over real processes with stock kubectl: a root shard behind the
//! front-proxy, users as client certificates from the installation's client CA, policy
//! written by the admin.
//!
//! The shard authorizes each part of an impersonation against the RBAC of the workspace
//! the request addresses, whether the request came through the front-proxy (which passes
//! `Impersonate-*` on and names the real caller in `X-Remote-*`) or straight to the shard.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::Value;
use tests::installation::{create_workspace, wait_workspace_ready, Installation, InstallationOptions};
use tests::{ClientIdentity, Kubectl, Output, TlsHttp};

const WORKSPACE: &str = "root:team";
/// The front-proxy's client certificate name in tests (`--name` defaults to `front-proxy`).
const PROXY_NAME: &str = "system:atoll:front-proxy:front-proxy";

/// Workspace access for alice, bob and carol; alice may view in `default`, bob may edit
/// there (so that what alice cannot do, bob could: a request run as bob would succeed).
/// Carol may do nothing more (kube's `edit` lets bob impersonate service accounts).
const BASE_POLICY: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: access}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:kcp:workspace:access"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-view, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-edit, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
"#;

/// Bob may impersonate users (cluster-wide, by a ClusterRoleBinding).
const IMPERSONATE_USERS: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonate-users}
rules: [{apiGroups: [""], resources: [users], verbs: [impersonate]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-impersonates-users}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonate-users}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
"#;

/// Bob may impersonate groups; group `dev` may edit in `default`.
const IMPERSONATE_GROUPS: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonate-groups}
rules: [{apiGroups: [""], resources: [groups], verbs: [impersonate]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-impersonates-groups}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonate-groups}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dev-edit, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: dev}]
"#;

/// Carol may impersonate the service accounts of `default` only (a RoleBinding there); the
/// service account `robot` may enter the workspace and list configmaps there.
const IMPERSONATE_SERVICE_ACCOUNTS: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonate-service-accounts}
rules: [{apiGroups: [""], resources: [serviceaccounts], verbs: [impersonate]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: carol-impersonates-service-accounts, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonate-service-accounts}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: robot-access}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:kcp:workspace:access"}
subjects: [{kind: ServiceAccount, name: robot, namespace: default}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: robot-view, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: robot, namespace: default}]
"#;

/// A root shard behind a front-proxy, with workspace `root:team` Ready and routed.
async fn installation(shard_args: &[&str]) -> Installation {
    let options = InstallationOptions {
        front_proxy: true,
        extra_args: shard_args.iter().map(|arg| arg.to_string()).collect(),
        ..InstallationOptions::default()
    };
    let installation = Installation::start_with(options).await.unwrap();
    create_workspace(&installation.root, "root", "team").await.unwrap();
    wait_workspace_ready(&installation.root, "root", "team", tests::installation::WORKSPACE_READY_TIMEOUT)
        .await
        .unwrap();
    installation.proxy().wait_resolves(WORKSPACE).await.unwrap();
    installation
}

/// A user's kubectl on `root:team`: through the front-proxy, and straight to the root
/// shard.
struct User {
    proxy: Kubectl,
    shard: Kubectl,
}

fn user(installation: &Installation, dir: &Path, name: &str) -> User {
    let identity = installation.user_identity(name, &[]).unwrap();
    let proxy = installation.proxy();
    let root = &installation.root;
    let direct: PathBuf = dir.join(format!("{name}-shard.kubeconfig"));
    tests::kubeconfig::write(&direct, &root.cluster_url(WORKSPACE), &root.admin().ca_pem, &identity).unwrap();
    User {
        proxy: proxy.kubectl_with(&proxy.user_kubeconfig(name, &identity, WORKSPACE).unwrap()),
        shard: root.kubectl_with(&direct),
    }
}

fn apply(installation: &Installation, manifest: &str) {
    installation.proxy().kubectl().cluster(WORKSPACE).args(["apply", "-f", "-"]).stdin(manifest).ok();
}

/// `kubectl <args>` as it failed, with stderr for the assertion message.
fn refused(kubectl: &Kubectl, args: &[&str]) -> Output {
    let output = kubectl.clone().args(args).fails();
    assert!(output.stderr.contains("Forbidden") || output.stderr.contains("forbidden"), "{output:?}");
    output
}

fn whoami(kubectl: &Kubectl, args: &[&str]) -> Value {
    let output = kubectl.clone().args(["auth", "whoami", "-o", "json"]).args(args).ok();
    output.json().unwrap()["status"]["userInfo"].clone()
}

fn groups(user_info: &Value) -> Vec<String> {
    serde_json::from_value(user_info["groups"].clone()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_as_runs_as_the_impersonated_user_once_rbac_allows_it() {
    let dir = tempfile::tempdir().unwrap();
    let installation = installation(&[]).await;
    apply(&installation, BASE_POLICY);
    let admin = installation.proxy().kubectl().cluster(WORKSPACE);
    let bob = user(&installation, dir.path(), "bob");

    // The admin (system:masters) may impersonate anyone: alice may only view, so the
    // create is refused for alice, and `can-i` answers for her, not for the admin.
    let denied = refused(&admin, &["create", "configmap", "by-alice", "-n", "default", "--as", "alice"]);
    assert!(
        denied
            .stderr
            .contains(r#"User "alice" cannot create resource "configmaps" in API group "" in the namespace "default""#),
        "{denied:?}"
    );
    let can_i = |kubectl: &Kubectl, args: &[&str]| kubectl.clone().args(["auth", "can-i"]).args(args).run().stdout;
    assert_eq!(can_i(&admin, &["delete", "configmaps", "-n", "default"]).trim(), "yes");
    assert_eq!(can_i(&admin, &["delete", "configmaps", "-n", "default", "--as", "alice"]).trim(), "no");
    assert_eq!(can_i(&admin, &["list", "configmaps", "-n", "default", "--as", "alice"]).trim(), "yes");
    let alice = whoami(&admin, &["--as", "alice", "--as-group", "dev"]);
    assert_eq!(alice["username"], "alice", "{alice}");
    assert_eq!(groups(&alice), ["dev", "system:authenticated"], "{alice}");
    assert!(alice.get("extra").is_none(), "a master's impersonation is not scoped: {alice}");
    // Discovery lists it, so kubectl finds it as on kube.
    let listed = admin.clone().args(["api-resources", "--api-group=authentication.k8s.io", "-o", "wide"]).ok().stdout;
    let row = listed.lines().find(|line| line.starts_with("selfsubjectreviews"));
    assert!(row.is_some_and(|row| row.split_whitespace().any(|word| word == "create")), "{listed}");
    let admin_self = whoami(&admin, &[]);
    assert!(groups(&admin_self).contains(&"system:masters".to_string()), "{admin_self}");

    // Bob, without the impersonate verb, is refused with kube's message, through the
    // proxy and straight to the shard. (A typed create, because kubectl prints a failed
    // discovery as "unknown" when its cache is cold, against kube too.)
    for kubectl in [&bob.proxy, &bob.shard] {
        let denied = refused(kubectl, &["create", "configmap", "x", "-n", "default", "--as", "alice"]);
        assert!(
            denied.stderr.contains(
                r#"users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#
            ),
            "{denied:?}"
        );
        assert_eq!(whoami(kubectl, &[])["username"], "bob");
    }

    // A ClusterRoleBinding grants impersonating users: now bob runs as alice, who may
    // read but not create, although bob himself may create.
    apply(&installation, IMPERSONATE_USERS);
    for (kubectl, name) in [(&bob.proxy, "via-proxy"), (&bob.shard, "direct")] {
        kubectl.clone().args(["get", "configmaps", "-n", "default", "--as", "alice"]).ok();
        let denied = refused(kubectl, &["create", "configmap", name, "-n", "default", "--as", "alice"]);
        assert!(denied.stderr.contains(r#"User "alice" cannot create resource "configmaps""#), "{denied:?}");
        kubectl.clone().args(["create", "configmap", name, "-n", "default"]).ok();
        assert_eq!(can_i(kubectl, &["create", "configmaps", "-n", "default", "--as", "alice"]).trim(), "no");
        assert_eq!(can_i(kubectl, &["create", "configmaps", "-n", "default"]).trim(), "yes");
        let alice = whoami(kubectl, &["--as", "alice"]);
        assert_eq!(alice["username"], "alice", "{alice}");
        assert_eq!(groups(&alice), ["system:authenticated"], "{alice}");
        // Impersonated by a non-master, alice is confined to this workspace (kcp's scope).
        let scopes = alice["extra"]["authentication.kcp.io/scopes"].as_array().cloned().unwrap_or_default();
        assert_eq!(scopes.len(), 1, "{alice}");
        assert!(scopes[0].as_str().unwrap().starts_with("cluster:"), "{alice}");
    }

    // Groups are checked one by one: impersonating users does not lend groups...
    let denied =
        refused(&bob.proxy, &["create", "configmap", "x", "-n", "default", "--as", "alice", "--as-group", "dev"]);
    assert!(
        denied.stderr.contains(r#"groups "dev" is forbidden: User "bob" cannot impersonate resource "groups""#),
        "{denied:?}"
    );
    // ...until granted; then alice in group dev may create (dev may edit).
    apply(&installation, IMPERSONATE_GROUPS);
    for (kubectl, name) in [(&bob.proxy, "dev-via-proxy"), (&bob.shard, "dev-direct")] {
        kubectl.clone().args(["create", "configmap", name, "-n", "default", "--as", "alice", "--as-group", "dev"]).ok();
        let alice = whoami(kubectl, &["--as", "alice", "--as-group", "dev"]);
        assert_eq!(groups(&alice), ["dev", "system:authenticated"], "{alice}");
    }
    // No one outside system:masters impersonates into it, whatever RBAC says.
    let as_masters = ["--as", "alice", "--as-group", "system:masters"];
    let denied = refused(&bob.proxy, &[&["create", "configmap", "x", "-n", "default"][..], &as_masters].concat());
    assert!(denied.stderr.contains("system:masters"), "{denied:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_accounts_impersonation_wildcards_and_identity_headers() {
    let dir = tempfile::tempdir().unwrap();
    let installation = installation(&[]).await;
    apply(&installation, BASE_POLICY);
    let admin = installation.proxy().kubectl().cluster(WORKSPACE);
    admin.clone().args(["create", "namespace", "other"]).ok();
    let carol = user(&installation, dir.path(), "carol");
    let robot = ["--as", "system:serviceaccount:default:robot"];

    // A service account is checked as `serviceaccounts` in its namespace.
    let denied = refused(&carol.proxy, &[&["create", "configmap", "x", "-n", "default"][..], &robot].concat());
    assert!(
        denied.stderr.contains(
            r#"serviceaccounts "robot" is forbidden: User "carol" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "default""#
        ),
        "{denied:?}"
    );
    // A RoleBinding in that namespace grants it, and for that namespace's accounts only.
    apply(&installation, IMPERSONATE_SERVICE_ACCOUNTS);
    for kubectl in [&carol.proxy, &carol.shard] {
        kubectl.clone().args([&["get", "configmaps", "-n", "default"][..], &robot].concat()).ok();
        refused(kubectl, &[&["create", "configmap", "x", "-n", "default"][..], &robot].concat());
        let account = whoami(kubectl, &robot);
        assert_eq!(account["username"], "system:serviceaccount:default:robot", "{account}");
        assert_eq!(
            groups(&account),
            ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"],
            "{account}"
        );
        refused(kubectl, &["get", "configmaps", "-n", "other", "--as", "system:serviceaccount:other:robot"]);
    }

    // Groups without a user: 400, as a Status (kubectl refuses to send it).
    let bob_identity = installation.user_identity("bob", &[]).unwrap();
    let raw = installation.root.http_as(Some(&bob_identity)).unwrap();
    let configmaps = format!("/clusters/{WORKSPACE}/api/v1/namespaces/default/configmaps");
    let response = raw.send(Method::GET, &configmaps, &[("impersonate-group", "dev")], Bytes::new()).await.unwrap();
    assert_eq!(response.status, StatusCode::BAD_REQUEST, "{}", response.text());
    assert_eq!(response.json().unwrap()["kind"], "Status");
    // Across all clusters only masters impersonate; a workspace bob cannot see gets the
    // same answer as one that does not exist.
    let wildcard = raw
        .send(Method::GET, "/clusters/*/api/v1/configmaps", &[("impersonate-user", "admin")], Bytes::new())
        .await
        .unwrap();
    assert_eq!(wildcard.status, StatusCode::FORBIDDEN, "{}", wildcard.text());
    assert!(wildcard.text().contains("reserved to system:masters"), "{}", wildcard.text());
    let as_admin = [("impersonate-user", "admin")];
    let hidden = get(&raw, "/clusters/root/api/v1/namespaces", &as_admin).await;
    let missing = get(&raw, "/clusters/root:nope/api/v1/namespaces", &as_admin).await;
    assert_eq!(hidden.status, StatusCode::FORBIDDEN, "{}", hidden.text());
    let message = |response: &tests::HttpResponse, path: &str| {
        response.json().unwrap()["message"].as_str().unwrap_or_default().replace(path, "<p>")
    };
    assert_eq!(message(&hidden, "\"root\""), message(&missing, "\"root:nope\""));
    assert!(message(&hidden, "\"root\"").contains("cannot access workspace <p>"), "{}", hidden.text());

    // Without --requestheader-allowed-names any certificate of the front-proxy CA is a
    // front-proxy, as in kube (the next test restricts it).
    let impostor = front_proxy_ca_identity(&installation, "system:atoll:front-proxy:impostor");
    let response = as_front_proxy(&installation, &impostor).await;
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
}

async fn get(http: &TlsHttp, path: &str, headers: &[(&str, &str)]) -> tests::HttpResponse {
    http.send(Method::GET, path, headers, Bytes::new()).await.unwrap()
}

/// A client certificate named `name`, signed by the installation's front-proxy CA.
fn front_proxy_ca_identity(installation: &Installation, name: &str) -> ClientIdentity {
    let read = |file: &str| std::fs::read_to_string(installation.pki_dir().join(file)).unwrap();
    tests::mint_client_identity(&read("front-proxy-ca.crt"), &read("front-proxy-ca.key"), name, &[]).unwrap()
}

/// Lists the namespaces of root straight on the root shard, presenting `identity` and
/// claiming the admin in identity headers.
async fn as_front_proxy(installation: &Installation, identity: &ClientIdentity) -> tests::HttpResponse {
    let http = installation.root.http_as(Some(identity)).unwrap();
    let claims = [("x-remote-user", "admin"), ("x-remote-group", "system:masters")];
    get(&http, "/clusters/root/api/v1/namespaces", &claims).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_headers_are_believed_only_from_allowed_front_proxy_names() {
    let installation = installation(&["--requestheader-allowed-names", &format!(" {PROXY_NAME},another-proxy")]).await;
    apply(&installation, BASE_POLICY);
    // Another certificate of the front-proxy CA cannot assert identities: 401.
    let impostor = front_proxy_ca_identity(&installation, "system:atoll:front-proxy:impostor");
    let response = as_front_proxy(&installation, &impostor).await;
    assert_eq!(response.status, StatusCode::UNAUTHORIZED, "{}", response.text());
    assert!(response.text().contains("--requestheader-allowed-names"), "{}", response.text());
    // The gRPC index feed refuses it too.
    let http = installation.root.http_as(Some(&impostor)).unwrap();
    let grpc = [("content-type", "application/grpc"), ("te", "trailers")];
    let feed = http.send(Method::POST, "/atoll.index.v1.IndexFeed/Watch", &grpc, Bytes::new()).await.unwrap();
    assert_eq!(feed.headers.get("grpc-status").map(|v| v.to_str().unwrap()), Some("7"), "{feed:?}");
    // A certificate with an allowed name may (the list decides, not the CA alone).
    let named = front_proxy_ca_identity(&installation, "another-proxy");
    let response = as_front_proxy(&installation, &named).await;
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    // The real front-proxy, on the list, serves users as before, impersonation included.
    let admin = installation.proxy().kubectl().cluster(WORKSPACE);
    admin.clone().args(["get", "namespaces"]).ok();
    assert_eq!(whoami(&admin, &["--as", "alice"])["username"], "alice");
}

/// An export `widgets` in `root:provider`, which user pat may bind (granted there).
const PROVIDER: &str = r#"
apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata: {name: v1.widgets.example.io}
spec:
  group: example.io
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {type: object}}
---
apiVersion: apis.kcp.io/v1alpha1
kind: APIExport
metadata: {name: widgets}
spec:
  latestResourceSchemas: [v1.widgets.example.io]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: bind-widgets}
rules: [{apiGroups: [apis.kcp.io], resources: [apiexports], resourceNames: [widgets], verbs: [bind]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: pat-binds-widgets}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bind-widgets}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: pat}]
"#;

/// In `root:team`: pat may enter and manage APIBindings; bob may impersonate users.
const CONSUMER: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: binding-editor}
rules:
- {apiGroups: [apis.kcp.io], resources: [apibindings], verbs: ["*"]}
- {nonResourceURLs: ["/"], verbs: [access]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: pat-binding-editor}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: binding-editor}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: pat}]
"#;

const BINDING: &str = r#"{"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "widgets"},
  "spec": {"reference": {"export": {"path": "root:provider", "name": "widgets"}}}}"#;

/// Rights to act as pat in one workspace lend nothing in another: bob, allowed to
/// impersonate users in `root:team`, cannot bind an export of `root:provider` as pat,
/// although pat may (kcp scopes the impersonated user to the workspace).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_impersonated_user_is_confined_to_the_workspace_that_allowed_it() {
    let dir = tempfile::tempdir().unwrap();
    let installation = installation(&[]).await;
    create_workspace(&installation.root, "root", "provider").await.unwrap();
    wait_workspace_ready(&installation.root, "root", "provider", tests::installation::WORKSPACE_READY_TIMEOUT)
        .await
        .unwrap();
    installation.proxy().wait_resolves("root:provider").await.unwrap();
    installation.proxy().kubectl().cluster("root:provider").args(["apply", "-f", "-"]).stdin(PROVIDER).ok();
    apply(&installation, BASE_POLICY);
    apply(&installation, IMPERSONATE_USERS);
    apply(&installation, CONSUMER);

    let bob = user(&installation, dir.path(), "bob");
    let as_pat = bob.proxy.clone().args(["create", "-f", "-", "--as", "pat"]).stdin(BINDING).fails();
    assert!(
        as_pat.stderr.contains("Forbidden") && as_pat.stderr.contains(r#"user "pat" is not allowed to bind it"#),
        "{as_pat:?}"
    );
    // pat himself may.
    let pat = user(&installation, dir.path(), "pat");
    pat.proxy.clone().args(["create", "-f", "-"]).stdin(BINDING).ok();
}
