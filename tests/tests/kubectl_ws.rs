//! The `kubectl ws` plugin, run by the real kubectl from `PATH`, the way users run it.
//!
//! Every test works on a private copy of a kubeconfig. The plugin is found next to the
//! other workspace binaries (`cargo build --workspace` builds it); kubectl finds it on
//! `PATH` as `kubectl-ws`. kubectl refuses flags before a plugin's name, so these runs
//! cannot go through [`tests::Kubectl`], which puts `--cache-dir` first; plain kubectl
//! commands in between still do.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use http::StatusCode;
use tempfile::TempDir;
use tests::installation::{Installation, InstallationOptions};

/// How long one `kubectl ws` may take; `create` alone may wait a minute for Ready.
const WS_TIMEOUT: Duration = Duration::from_secs(90);

/// What one `kubectl ws` run printed.
#[derive(Debug)]
struct WsOutput {
    success: bool,
    stdout: String,
    stderr: String,
}

/// `kubectl ws …` with the plugin on `PATH` and `KUBECONFIG` set to a private copy.
struct Ws {
    kubeconfig: PathBuf,
    search_path: OsString,
    // Holds the kubeconfig copy and serves as HOME, so nothing touches the real one.
    dir: TempDir,
}

impl Ws {
    /// A plugin user whose kubeconfig starts as a copy of `source`.
    fn new(source: &Path) -> Ws {
        let ws = Ws::without_kubeconfig();
        std::fs::copy(source, &ws.kubeconfig).unwrap_or_else(|e| panic!("copy {}: {e}", source.display()));
        ws
    }

    /// A plugin user whose `KUBECONFIG` names a file that does not exist (yet).
    fn without_kubeconfig() -> Ws {
        let dir = tempfile::Builder::new().prefix("kubectl-ws-").tempdir().expect("create a temporary dir");
        let kubeconfig = dir.path().join("config");
        let plugin = tests::binary("kubectl-ws");
        let plugin_dir = plugin.parent().expect("the plugin binary has a directory").to_path_buf();
        let inherited = std::env::var_os("PATH").unwrap_or_default();
        let search_path = std::env::join_paths(std::iter::once(plugin_dir).chain(std::env::split_paths(&inherited)))
            .expect("join PATH");
        Ws { kubeconfig, search_path, dir }
    }

    /// Runs `kubectl ws <args>` to completion, at most [`WS_TIMEOUT`].
    async fn run(&self, args: &[&str]) -> WsOutput {
        let mut command = tokio::process::Command::new("kubectl");
        command
            .arg("ws")
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("PATH", &self.search_path)
            .env("HOME", self.dir.path())
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(WS_TIMEOUT, command.output())
            .await
            .unwrap_or_else(|_| panic!("`kubectl ws {}` did not finish within {WS_TIMEOUT:?}", args.join(" ")))
            .expect("start kubectl (is it installed and on PATH?)");
        WsOutput {
            success: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// [`Ws::run`] with owned arguments.
    async fn run_owned(&self, args: &[String]) -> WsOutput {
        self.run(&args.iter().map(String::as_str).collect::<Vec<_>>()).await
    }

    /// Runs `kubectl ws <args>`, panics unless it succeeded, and returns stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args).await;
        assert!(output.success, "`kubectl ws {}` failed\n{}", args.join(" "), self.describe(&output));
        output.stdout
    }

    /// Runs `kubectl ws <args>`, panics unless it failed, and returns stderr.
    async fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args).await;
        assert!(!output.success, "`kubectl ws {}` succeeded\n{}", args.join(" "), self.describe(&output));
        output.stderr
    }

    /// The server the kubeconfig's current context points at, read back with kube.
    fn current_server(&self) -> String {
        let config = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("kube reads the kubeconfig");
        let context_name = config.current_context.clone().expect("a current context");
        let context = config.contexts.iter().find(|c| c.name == context_name).expect("the current context exists");
        let cluster_name = &context.context.as_ref().expect("a context body").cluster;
        let cluster = config.clusters.iter().find(|c| &c.name == cluster_name).expect("the cluster exists");
        cluster.cluster.as_ref().and_then(|c| c.server.clone()).expect("a server")
    }

    fn describe(&self, output: &WsOutput) -> String {
        let kubeconfig = std::fs::read_to_string(&self.kubeconfig).unwrap_or_default();
        format!("--- stdout ---\n{}--- stderr ---\n{}--- kubeconfig ---\n{kubeconfig}", output.stdout, output.stderr)
    }
}

/// The last line a command printed.
fn last_line(stdout: &str) -> &str {
    stdout.lines().last().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn walking_workspaces_through_the_front_proxy() {
    let options = InstallationOptions { extra_shards: 2, front_proxy: true, ..InstallationOptions::default() };
    let installation = Installation::start_with(options).await.unwrap();
    let proxy = installation.proxy();
    let ws = Ws::new(&proxy.kubeconfig_path());
    let base = proxy.base_url().to_string();

    assert_eq!(ws.ok(&["current"]).await, "Current workspace is \"root\".\n");

    let created = ws.ok(&["create", "org", "--enter"]).await;
    assert!(created.contains("Workspace \"org\""), "{created}");
    assert!(created.contains("is ready to use."), "{created}");
    assert!(last_line(&created).starts_with("Current workspace is \"root:org\""), "{created}");
    assert_eq!(ws.current_server(), format!("{base}/clusters/root:org"));

    let created = ws.ok(&["create", "team", "--enter"]).await;
    assert!(last_line(&created).starts_with("Current workspace is \"root:org:team\""), "{created}");

    // Plain kubectl now works in root:org:team, wherever the ring put it.
    let kubectl = proxy.kubectl_with(&ws.kubeconfig);
    kubectl.clone().args(["create", "configmap", "probe", "--from-literal=k=v"]).ok();
    let listed = kubectl.clone().args(["get", "configmaps"]).ok().stdout;
    assert!(listed.contains("probe"), "{listed}");
    let path = "/clusters/root:org:team/api/v1/namespaces/default/configmaps/probe";
    let response = proxy.http().get(path).await.unwrap();
    assert_eq!(response.status, StatusCode::OK, "the configmap landed in root:org:team: {}", response.text());

    let up = ws.ok(&[".."]).await;
    assert!(up.starts_with("Current workspace is \"root:org\""), "{up}");
    assert_eq!(ws.ok(&["tree"]).await, ".\n└── org\n    └── team\n\n");
    assert_eq!(ws.ok(&["tree", "--full"]).await, ".\n└── root:org\n    └── root:org:team\n\n");
    assert_eq!(ws.ok(&["-"]).await, "Current workspace is \"root:org:team\".\n");
    assert_eq!(ws.ok(&["-"]).await, "Current workspace is \"root:org\".\n");

    // Home is created on first use.
    let home = ws.ok(&["~"]).await;
    assert!(home.starts_with("Current workspace is \"home:admin\""), "{home}");
    assert_eq!(ws.ok(&["current"]).await, "Current workspace is \"home:admin\".\n");
    assert_eq!(ws.current_server(), format!("{base}/clusters/home:admin"));
    assert_eq!(ws.ok(&["current", "--short"]).await, "home:admin\n");

    // Absolute paths, from anywhere; the legacy `root:` spelling too, with kcp's note.
    assert_eq!(ws.ok(&[":root:org:team"]).await, "Current workspace is \"root:org:team\" (type root:universal).\n");
    let legacy = ws.run(&["root:org"]).await;
    assert!(legacy.success, "{legacy:?}");
    assert!(legacy.stderr.contains("use ':root'"), "{legacy:?}");
    assert!(legacy.stdout.starts_with("Current workspace is \"root:org\""), "{legacy:?}");

    // Mistakes name the workspace.
    assert!(ws.fails(&["nope"]).await.contains("workspace \"root:org:nope\" not found"));
    ws.ok(&[":root"]).await;
    assert!(ws.fails(&[".."]).await.contains("workspace \"root\" has no parent"));
    assert_eq!(ws.ok(&["."]).await, "Current workspace is \"root\".\n");

    // Another user gets their own home, and can create workspaces in it.
    let identity = installation.user_identity("alice", &[]).unwrap();
    let alice_kubeconfig = proxy.user_kubeconfig("alice", &identity, "root").unwrap();
    let alice = Ws::new(&alice_kubeconfig);
    assert!(alice.ok(&["~"]).await.starts_with("Current workspace is \"home:alice\""));
    let created = alice.ok(&["create", "project", "--enter"]).await;
    assert!(last_line(&created).starts_with("Current workspace is \"home:alice:project\""), "{created}");
    assert_eq!(alice.ok(&["~"]).await.lines().next(), Some("Current workspace is \"home:alice\"."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn walking_workspaces_on_a_single_shard() {
    // One shard hosts every workspace, so every path resolves without a front-proxy.
    let installation = Installation::start(0).await.unwrap();
    let shard = &installation.root;
    let ws = Ws::new(&shard.kubeconfig_path());
    let original = std::fs::read_to_string(&ws.kubeconfig).unwrap();

    assert!(ws.fails(&["-"]).await.contains("no previous workspace found in kubeconfig"));
    assert!(ws.fails(&[".."]).await.contains("workspace \"root\" has no parent"));

    let created = ws.ok(&["create", "org"]).await;
    assert!(created.contains("is ready to use."), "{created}");
    assert_eq!(ws.ok(&["current"]).await, "Current workspace is \"root\".\n", "create without --enter stays");
    let again = ws.fails(&["create", "org"]).await;
    assert!(again.contains("already exists"), "{again}");
    let ignored = ws.ok(&["create", "org", "--ignore-existing"]).await;
    assert!(ignored.contains("already exists."), "{ignored}");

    assert!(ws.ok(&["use", "org"]).await.starts_with("Current workspace is \"root:org\""));
    ws.ok(&["create", "other"]).await;
    ws.ok(&["create", "team", "--enter"]).await;
    assert_eq!(ws.ok(&["cd", "..:.."]).await, "Current workspace is \"root\" (type root).\n");
    assert_eq!(ws.ok(&["tree"]).await, ".\n└── root\n    └── org\n        ├── other\n        └── team\n\n");
    assert_eq!(ws.ok(&["-"]).await, "Current workspace is \"root:org:team\".\n");
    assert_eq!(ws.ok(&["use", "--short", ":root:org"]).await, "root:org\n");

    // The shard alone cannot resolve `~`: the error says where to point instead.
    let home = ws.fails(&["~"]).await;
    assert!(home.contains("home workspace"), "{home}");

    // --kubeconfig and --context are honoured; the original context is never changed.
    let other = Ws::new(&shard.kubeconfig_path());
    let flagged = ws.ok(&["--kubeconfig", other.kubeconfig.to_str().unwrap(), "org"]).await;
    assert!(flagged.starts_with("Current workspace is \"root:org\""), "{flagged}");
    let config = kube::config::Kubeconfig::read_from(&ws.kubeconfig).unwrap();
    let first_context = &kube::config::Kubeconfig::read_from(shard.kubeconfig_path()).unwrap().contexts[0];
    let kept = config.contexts.iter().find(|c| c.name == first_context.name).expect("the original context is kept");
    let cluster_of = |context: &kube::config::NamedContext| context.context.as_ref().map(|c| c.cluster.clone());
    assert_eq!(cluster_of(kept), cluster_of(first_context));
    let context_flag = format!("--context={}", first_context.name);
    assert_eq!(ws.ok(&[&context_flag, "current"]).await, "Current workspace is \"root\".\n");
    assert_ne!(std::fs::read_to_string(&ws.kubeconfig).unwrap(), original);
}

/// The `message` of the Status the front-proxy answers admin's GET of `path` with, which
/// must be a 503.
async fn unavailable_message(proxy: &tests::front_proxy::FrontProxyProcess, path: &str) -> String {
    let response = proxy.http().get(path).await.unwrap();
    assert_eq!(response.status, StatusCode::SERVICE_UNAVAILABLE, "GET {path}: {}", response.text());
    let status = response.json().unwrap();
    let message = status["message"].as_str().unwrap_or_else(|| panic!("GET {path}: no message in {status}"));
    message.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_shard_fails_fast_and_the_tree_shows_the_rest() {
    let options = InstallationOptions { extra_shards: 1, front_proxy: true, ..InstallationOptions::default() };
    let mut installation = Installation::start_with(options).await.unwrap();
    let both =
        |placement: &BTreeMap<String, Vec<String>>| placement.contains_key("root") && placement.contains_key("shard-1");
    let placement = installation.place_workspaces("org", 30, both).await.unwrap();
    let live = placement["root"][0].clone();
    let dead = placement["shard-1"][0].clone();
    let proxy = installation.proxy();
    let base = proxy.base_url().to_string();
    for name in placement.values().flatten() {
        proxy.wait_resolves(&format!("root:{name}")).await.unwrap();
    }
    let ws = Ws::new(&proxy.kubeconfig_path());
    ws.ok(&[&format!(":root:{live}")]).await;
    ws.ok(&["create", "team"]).await;
    ws.ok(&[&format!(":root:{dead}")]).await;
    ws.ok(&["create", "inner"]).await;
    ws.ok(&[":root"]).await;
    // The ring may have put `team` on shard-1 too; then its (empty) subtree is unknown.
    let team_path = format!("/clusters/root:{live}/apis/tenancy.kcp.io/v1alpha1/workspaces/team");
    let team = proxy.http().get(&team_path).await.unwrap().json().unwrap();
    let team_url = tests::installation::workspace_url(&team).expect("a Ready workspace has a URL");
    let team_on_dead_shard = installation.shard_for_url(team_url).unwrap().name() == "shard-1";
    let team_label = if team_on_dead_shard { "team (unavailable)" } else { "team" };

    installation.shard_mut("shard-1").unwrap().kill9();
    let proxy = installation.proxy();

    // The tree shows everything root's shard can list and marks what lives on shard-1;
    // `inner` is behind the dead shard, so it is not shown. The exit status says the tree
    // is incomplete, and stderr names each unavailable workspace with the server's message.
    let tree = ws.run(&["tree"]).await;
    assert!(!tree.success, "an incomplete tree is not a success\n{}", ws.describe(&tree));
    let mut names: Vec<&String> = placement.values().flatten().collect();
    names.sort();
    let mut expected = String::from(".\n└── root\n");
    for (position, name) in names.iter().enumerate() {
        let last = position + 1 == names.len();
        let on_dead_shard = placement["shard-1"].contains(*name);
        let suffix = if on_dead_shard { " (unavailable)" } else { "" };
        expected.push_str(&format!("    {}{name}{suffix}\n", if last { "└── " } else { "├── " }));
        if **name == live {
            expected.push_str(&format!("    {}└── {team_label}\n", if last { "    " } else { "│   " }));
        }
    }
    expected.push('\n');
    assert_eq!(tree.stdout, expected, "{}", ws.describe(&tree));
    let listing =
        unavailable_message(proxy, &format!("/clusters/root:{dead}/apis/tenancy.kcp.io/v1alpha1/workspaces")).await;
    assert!(
        tree.stderr.contains(&format!("workspace \"root:{dead}\" is unavailable: {listing}")),
        "{}",
        ws.describe(&tree)
    );

    // Entering a workspace on the dead shard fails with the server's message, and the
    // kubeconfig stays where it was.
    let discovery = unavailable_message(proxy, &format!("/clusters/root:{dead}/apis")).await;
    let entered = ws.fails(&[&format!(":root:{dead}")]).await;
    assert!(entered.contains(&discovery), "{entered}");
    assert_eq!(ws.current_server(), format!("{base}/clusters/root"));
    let below = ws.fails(&[&format!(":root:{dead}:inner")]).await;
    assert!(below.contains(&listing) || below.contains(&discovery), "{below}");

    // Workspaces on the live shard are not affected.
    ws.ok(&[&format!(":root:{live}")]).await;
    let tree = ws.run(&["tree"]).await;
    assert_eq!(tree.stdout, format!(".\n└── {live}\n    └── {team_label}\n\n"), "{}", ws.describe(&tree));
    assert_eq!(tree.success, !team_on_dead_shard, "{}", ws.describe(&tree));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_flags_choose_server_and_credentials() {
    let dir = tempfile::Builder::new().prefix("kubectl-ws-flags-").tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "alice-token,alice,alice\nbob-token,bob,bob\n").unwrap();
    let options =
        InstallationOptions { front_proxy: true, proxy_token_file: Some(tokens), ..InstallationOptions::default() };
    let installation = Installation::start_with(options).await.unwrap();
    let proxy = installation.proxy();
    let base = proxy.base_url().to_string();
    let ca = dir.path().join("ca.crt");
    std::fs::write(&ca, &proxy.admin().ca_pem).unwrap();
    let ca = ca.to_str().unwrap();
    // Two token users on one cluster; bob's context is the current one.
    let users = dir.path().join("users.kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: bob\nclusters:\n- name: atoll\n  cluster:\n    server: {base}/clusters/root\n    certificate-authority: {ca}\nusers:\n- name: alice\n  user:\n    token: alice-token\n- name: bob\n  user:\n    token: bob-token\ncontexts:\n- name: alice\n  context: {{cluster: atoll, user: alice}}\n- name: bob\n  context: {{cluster: atoll, user: bob}}\n"
    );
    std::fs::write(&users, text).unwrap();
    let users = users.to_str().unwrap();

    // --context: alice's credentials, so `~` is her home.
    let alice = Ws::new(Path::new(users));
    assert!(alice.ok(&["--context", "alice", "~"]).await.starts_with("Current workspace is \"home:alice\""));
    alice.ok(&["create", "project"]).await;
    let alice_tree = ".\n└── alice\n    └── project\n\n";
    assert_eq!(alice.ok(&["tree"]).await, alice_tree);
    let home = format!("{base}/clusters/home:alice");

    // No kubeconfig at all: --server, --token and --certificate-authority are enough; the
    // token decides who asks (bob may not look into alice's home, so it shows as a leaf).
    let nobody = Ws::without_kubeconfig();
    let at_home = |token: &str, rest: &[&str]| -> Vec<String> {
        let flags = ["--server", home.as_str(), "--token", token];
        flags.iter().chain(rest).map(|arg| arg.to_string()).collect()
    };
    let output = nobody.run_owned(&at_home("alice-token", &["--certificate-authority", ca, "tree"])).await;
    assert!(output.success, "{output:?}");
    assert_eq!(output.stdout, alice_tree);
    let output = nobody.run_owned(&at_home("bob-token", &["--certificate-authority", ca, "-v", "6", "tree"])).await;
    assert_eq!(output.stdout, ".\n└── alice\n\n", "{output:?}");
    let output = nobody.run_owned(&at_home("wrong-token", &["--certificate-authority", ca, "tree"])).await;
    assert!(!output.success, "a wrong token is refused: {output:?}");
    // Without the CA the server's certificate is not trusted, unless told to skip the check.
    let output = nobody.run_owned(&at_home("alice-token", &["tree"])).await;
    assert!(!output.success, "the server's certificate is checked: {output:?}");
    let output = nobody.run_owned(&at_home("alice-token", &["--insecure-skip-tls-verify", "tree"])).await;
    assert_eq!(output.stdout, alice_tree, "{output:?}");

    // --kubeconfig with --context, and --server over the kubeconfig's server.
    let flagged = nobody.ok(&["--kubeconfig", users, "--context", "alice", "--server", &home, "tree"]).await;
    assert_eq!(flagged, alice_tree);
    // --user picks another user of the kubeconfig; --cluster must name one that exists.
    let bob = Ws::new(Path::new(users));
    assert_eq!(bob.ok(&["--user", "alice", "--server", &home, "tree"]).await, alice_tree);
    let missing = bob.fails(&["--cluster", "nope", "tree"]).await;
    assert!(missing.contains("cluster \"nope\""), "{missing}");
    // --client-certificate and --client-key: alice by certificate this time.
    let identity = installation.user_identity("alice", &[]).unwrap();
    let (cert, key) = (dir.path().join("alice.crt"), dir.path().join("alice.key"));
    std::fs::write(&cert, &identity.cert_pem).unwrap();
    std::fs::write(&key, &identity.key_pem).unwrap();
    let certificate_flags = ["--client-certificate", cert.to_str().unwrap(), "--client-key", key.to_str().unwrap()];
    let mut args = vec!["--server", home.as_str(), "--certificate-authority", ca];
    args.extend(certificate_flags);
    args.push("tree");
    assert_eq!(nobody.ok(&args).await, alice_tree);

    // Moving with --server and --token writes the new workspace into the kubeconfig's
    // current context, as kcp's plugin does: the server comes from the flag.
    let moved = bob.ok(&["--server", &format!("{base}/clusters/root"), "--token", "alice-token", "~"]).await;
    assert!(moved.starts_with("Current workspace is \"home:alice\""), "{moved}");
    assert_eq!(bob.current_server(), home);
}
