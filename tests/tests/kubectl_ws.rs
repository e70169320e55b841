//! The `kubectl ws` plugin, run by the real kubectl from `PATH`, the way users run it.
//!
//! Every test works on a private copy of a kubeconfig. The plugin is found next to the
//! other workspace binaries (`cargo build --workspace` builds it); kubectl finds it on
//! `PATH` as `kubectl-ws`. kubectl refuses flags before a plugin's name, so these runs
//! cannot go through [`tests::Kubectl`], which puts `--cache-dir` first; plain kubectl
//! commands in between still do.

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
        let dir = tempfile::Builder::new().prefix("kubectl-ws-").tempdir().expect("create a temporary dir");
        let kubeconfig = dir.path().join("config");
        std::fs::copy(source, &kubeconfig).unwrap_or_else(|e| panic!("copy {}: {e}", source.display()));
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
