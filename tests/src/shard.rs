//! Starting, stopping and restarting real `atoll-shard` processes.
//!
//! A [`ShardProcess`] owns one shard: its child process, its data dir (a temporary one
//! unless the test brings its own) and the admin credentials the shard writes into
//! `DIR/admin.kubeconfig` once it is ready to serve. The shard logs to `DIR/shard.log`;
//! every failure here quotes the tail of that log, because "did not become ready" is
//! useless without the reason the shard printed.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use http::StatusCode;
use tempfile::TempDir;

use crate::binary::binary;
use crate::kubeconfig::{self, AdminKubeconfig};
use crate::kubectl::Kubectl;
use crate::process::{log_tail, OwnedChild};
use crate::tls_http::{ClientIdentity, TlsHttp};

/// How long a shard may take from spawn to answering `/readyz` with 200.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a shard may take to exit after SIGTERM before it is killed.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a new logical cluster may take to serve its API after it was created.
pub const LOGICAL_CLUSTER_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// The time limit on each readiness probe, so one hung probe cannot eat the budget.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How often readiness is probed.
const PROBE_INTERVAL: Duration = Duration::from_millis(100);

/// How many lines of `shard.log` error messages quote.
const LOG_TAIL_LINES: usize = 60;

/// The file, inside the data dir, that the shard writes when ready to serve.
pub const KUBECONFIG_FILE: &str = "admin.kubeconfig";

/// The file, inside the data dir, that receives the shard's stdout and stderr.
pub const LOG_FILE: &str = "shard.log";

/// How to start a shard.
#[derive(Clone, Debug)]
pub struct ShardOptions {
    /// The shard's name (`--name`).
    pub name: String,
    /// Whether this shard hosts the `root` logical cluster (`--root`).
    pub root: bool,
    /// A data dir to use (and keep); `None` means a fresh temporary dir deleted with the
    /// [`ShardProcess`]. Pass the same dir to a second `start` to test recovery.
    pub data_dir: Option<PathBuf>,
    /// `HOST:PORT` to listen on; `None` means `127.0.0.1:0` (the shard picks a port).
    pub listen: Option<String>,
    /// A static token file (`--token-auth-file`).
    pub token_file: Option<PathBuf>,
    /// Further flags, for example `["--retention-events", "100"]`.
    pub extra_args: Vec<String>,
}

impl Default for ShardOptions {
    /// A root shard named `root` in a fresh temporary dir on a free loopback port: what
    /// most single-shard tests want.
    fn default() -> ShardOptions {
        ShardOptions {
            name: "root".to_string(),
            root: true,
            data_dir: None,
            listen: None,
            token_file: None,
            extra_args: Vec::new(),
        }
    }
}

/// A running `atoll-shard`, killed when dropped.
pub struct ShardProcess {
    options: ShardOptions,
    // Declared before `temp_dir` so that the process dies before its data dir is removed.
    child: Option<OwnedChild>,
    temp_dir: Option<TempDir>,
    data_dir: PathBuf,
    listen_host: String,
    admin: AdminKubeconfig,
    http: TlsHttp,
}

impl std::fmt::Debug for ShardProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardProcess")
            .field("name", &self.options.name)
            .field("pid", &self.pid())
            .field("base_url", &self.admin.base_url)
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

impl ShardProcess {
    /// Spawns a shard and waits (at most [`START_TIMEOUT`]) until it wrote its admin
    /// kubeconfig and `/readyz` answers 200.
    pub async fn start(options: ShardOptions) -> anyhow::Result<ShardProcess> {
        let prefix = format!("atoll-{}-", options.name);
        let (temp_dir, data_dir) = crate::process::data_dir(options.data_dir.as_deref(), &prefix)?;
        let listen = options.listen.clone().unwrap_or_else(|| "127.0.0.1:0".to_string());
        let listen_host = split_host(&listen)?.to_string();
        let (child, admin, http) = launch(&options, &data_dir, &listen).await?;
        Ok(ShardProcess { options, child: Some(child), temp_dir, data_dir, listen_host, admin, http })
    }

    /// The shard's name.
    pub fn name(&self) -> &str {
        &self.options.name
    }

    /// The process id, if the shard is running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(OwnedChild::pid)
    }

    /// The data dir.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// `DIR/shard.log`, where the shard's output goes.
    pub fn log_path(&self) -> PathBuf {
        self.data_dir.join(LOG_FILE)
    }

    /// The last `lines` lines of the shard log, for assertion messages.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log_path(), lines)
    }

    /// `DIR/admin.kubeconfig`.
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.data_dir.join(KUBECONFIG_FILE)
    }

    /// The parsed admin kubeconfig (server URL, CA and admin client certificate).
    pub fn admin(&self) -> &AdminKubeconfig {
        &self.admin
    }

    /// `https://host:port`, without a path.
    pub fn base_url(&self) -> &str {
        &self.admin.base_url
    }

    /// `https://host:port/clusters/<cluster>`.
    pub fn cluster_url(&self, cluster: &str) -> String {
        format!("{}/clusters/{cluster}", self.admin.base_url)
    }

    /// Stock kubectl with `KUBECONFIG` set to the admin kubeconfig.
    pub fn kubectl(&self) -> Kubectl {
        self.kubectl_with(&self.kubeconfig_path())
    }

    /// Stock kubectl with another kubeconfig (say from [`ShardProcess::user_kubeconfig`]).
    pub fn kubectl_with(&self, kubeconfig: &Path) -> Kubectl {
        let log_path = self.log_path();
        Kubectl::new(kubeconfig, &self.admin.base_url, &self.data_dir.join("kubectl-cache"), Some(&log_path))
    }

    /// A `kube::Client` acting as admin on logical cluster `cluster`.
    ///
    /// # Panics
    /// If the kubeconfig the shard wrote cannot be loaded by kube: the harness already
    /// parsed it, so that is a harness or shard bug, not a test outcome.
    pub async fn kube_client(&self, cluster: &str) -> kube::Client {
        let path = self.kubeconfig_path();
        let file = kube::config::Kubeconfig::read_from(&path)
            .unwrap_or_else(|e| panic!("read {} with kube: {e}", path.display()));
        let options = kube::config::KubeConfigOptions::default();
        let mut config = kube::Config::from_custom_kubeconfig(file, &options)
            .await
            .unwrap_or_else(|e| panic!("load {} with kube: {e}", path.display()));
        let url = self.cluster_url(cluster);
        config.cluster_url = url.parse().unwrap_or_else(|e| panic!("parse cluster URL {url}: {e}"));
        kube::Client::try_from(config).unwrap_or_else(|e| panic!("build kube client: {e}"))
    }

    /// A raw HTTPS client authenticated as admin (see [`TlsHttp`]).
    pub fn http(&self) -> TlsHttp {
        self.http.clone()
    }

    /// How many watches this shard has started serving (its `atoll_watches_started`
    /// counter): a test waits for it to grow to know a client's watch is established,
    /// instead of sleeping and hoping.
    pub async fn watches_started(&self) -> anyhow::Result<u64> {
        watches_started(&self.http).await
    }

    /// A raw HTTPS client authenticated as `identity`, or anonymous for `None`.
    pub fn http_as(&self, identity: Option<&ClientIdentity>) -> anyhow::Result<TlsHttp> {
        self.http.with_identity(identity)
    }

    /// Mints a client certificate for `user` (in at most one group) from the shard's
    /// client CA at `DIR/pki/client-ca.{crt,key}`.
    pub fn user_identity(&self, user: &str, groups: &[&str]) -> anyhow::Result<ClientIdentity> {
        let pki = self.data_dir.join("pki");
        let cert = std::fs::read_to_string(pki.join("client-ca.crt")).context("read the client CA certificate")?;
        let key = std::fs::read_to_string(pki.join("client-ca.key")).context("read the client CA key")?;
        crate::certs::mint_client_identity(&cert, &key, user, groups)
    }

    /// Writes `DIR/users/<user>.kubeconfig` for `user` on logical cluster `cluster` and
    /// returns its path, for [`ShardProcess::kubectl_with`] and RBAC tests.
    pub fn user_kubeconfig(&self, user: &str, groups: &[&str], cluster: &str) -> anyhow::Result<PathBuf> {
        let identity = self.user_identity(user, groups)?;
        let dir = self.data_dir.join("users");
        std::fs::create_dir_all(&dir).context("create the users kubeconfig dir")?;
        let path = dir.join(format!("{user}.kubeconfig"));
        let server = self.cluster_url(cluster);
        kubeconfig::write(&path, &server, &self.admin.ca_pem, &identity)?;
        Ok(path)
    }

    /// Starts a shard with default options and creates the logical clusters `clusters`.
    ///
    /// # Panics
    /// If the shard does not start or a cluster cannot be created: every test using this
    /// needs both, and the panic message carries the reason.
    pub async fn with_clusters(clusters: &[&str]) -> ShardProcess {
        let shard = ShardProcess::start(ShardOptions::default()).await.expect("start shard");
        for cluster in clusters {
            shard.create_logical_cluster(cluster).await.unwrap_or_else(|e| panic!("create cluster {cluster}: {e:#}"));
        }
        shard
    }

    /// Creates logical cluster `name` and waits (at most
    /// [`LOGICAL_CLUSTER_READY_TIMEOUT`]) until its API lists namespaces.
    pub async fn create_logical_cluster(&self, name: &str) -> anyhow::Result<()> {
        let path = format!("/clusters/{name}/apis/core.kcp.io/v1alpha1/logicalclusters");
        let body = serde_json::json!({
            "apiVersion": "core.kcp.io/v1alpha1",
            "kind": "LogicalCluster",
            "metadata": {"name": "cluster"},
        });
        let response =
            self.http.post_json(&path, &body).await.with_context(|| format!("create logical cluster {name}"))?;
        if !matches!(response.status, StatusCode::CREATED | StatusCode::OK) {
            anyhow::bail!(
                "create logical cluster {name}: HTTP {}: {}{}",
                response.status,
                response.text(),
                self.log_section()
            );
        }
        self.wait_logical_cluster_ready(name).await
    }

    async fn wait_logical_cluster_ready(&self, name: &str) -> anyhow::Result<()> {
        let path = format!("/clusters/{name}/api/v1/namespaces");
        let deadline = Instant::now() + LOGICAL_CLUSTER_READY_TIMEOUT;
        loop {
            let last = match self.http.get(&path).await {
                Ok(response) if response.status == StatusCode::OK => return Ok(()),
                Ok(response) => format!("HTTP {}: {}", response.status, response.text()),
                Err(error) => format!("{error:#}"),
            };
            if Instant::now() >= deadline {
                anyhow::bail!(
                    "logical cluster {name} not serving within {LOGICAL_CLUSTER_READY_TIMEOUT:?}; \
                     last GET {path}: {last}{}",
                    self.log_section()
                );
            }
            tokio::time::sleep(PROBE_INTERVAL).await;
        }
    }

    /// Kills the shard with SIGKILL (a crash: no shutdown code runs) and reaps it.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill9();
        }
    }

    /// Sends SIGTERM and waits at most [`STOP_TIMEOUT`]; on timeout the shard is killed
    /// and an error returned, since ignoring SIGTERM is a bug.
    pub async fn stop(&mut self) -> anyhow::Result<ExitStatus> {
        let Some(mut child) = self.child.take() else {
            anyhow::bail!("stop shard {}: it is not running", self.options.name);
        };
        let stopped = child.terminate(STOP_TIMEOUT).await;
        stopped.with_context(|| format!("stop shard {}{}", self.options.name, self.log_section()))
    }

    /// Stops the shard if it is running (SIGTERM) and starts it again with the same data
    /// dir, name and port, waiting until it is ready.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        if self.child.is_some() {
            self.stop().await?;
        }
        // Same port: clients (and other shards) hold the URL from the first start.
        let listen = format!("{}:{}", self.listen_host, self.admin.port()?);
        let (child, admin, http) = launch(&self.options, &self.data_dir, &listen).await?;
        self.child = Some(child);
        self.admin = admin;
        self.http = http;
        Ok(())
    }

    fn log_section(&self) -> String {
        format!("\n--- tail of {} ---\n{}", self.log_path().display(), self.log_tail(LOG_TAIL_LINES))
    }
}

impl Drop for ShardProcess {
    fn drop(&mut self) {
        self.kill9();
        // A failing test's data dir is evidence: keep it and say where it is.
        if std::thread::panicking() {
            if let Some(temp) = self.temp_dir.take() {
                let path = temp.keep();
                eprintln!(
                    "shard {}: keeping data dir {} (log: {})",
                    self.options.name,
                    path.display(),
                    path.join(LOG_FILE).display()
                );
            }
        }
    }
}

/// Spawns `atoll-shard` and waits until it is ready.
async fn launch(
    options: &ShardOptions,
    data_dir: &Path,
    listen: &str,
) -> anyhow::Result<(OwnedChild, AdminKubeconfig, TlsHttp)> {
    let kubeconfig_path = data_dir.join(KUBECONFIG_FILE);
    // A kubeconfig left by an earlier run would look like readiness before this run
    // has even bound its port.
    match std::fs::remove_file(&kubeconfig_path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            return Err(error).context("remove the previous admin.kubeconfig");
        }
        _ => {}
    }
    let log_path = data_dir.join(LOG_FILE);
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("open {}", log_path.display()))?;
    writeln!(log, "=== harness: starting atoll-shard {} on {listen} ===", options.name)
        .context("write the log banner")?;
    let mut command = shard_command(options, data_dir, listen);
    command.stdin(Stdio::null()).stdout(log.try_clone().context("duplicate the log file handle")?).stderr(log);
    let mut child = OwnedChild::spawn(&mut command, "atoll-shard")?;
    let (admin, http) = wait_ready("atoll-shard", &mut child, &kubeconfig_path, &log_path).await?;
    Ok((child, admin, http))
}

fn shard_command(options: &ShardOptions, data_dir: &Path, listen: &str) -> Command {
    let mut command = Command::new(binary("atoll-shard"));
    command.arg("--data-dir").arg(data_dir).arg("--listen").arg(listen).arg("--name").arg(&options.name);
    if options.root {
        command.arg("--root");
    }
    if let Some(file) = &options.token_file {
        command.arg("--token-auth-file").arg(file);
    }
    command.args(&options.extra_args);
    // Without a filter the log would be empty, and failures unexplained.
    if std::env::var_os("RUST_LOG").is_none() {
        command.env("RUST_LOG", "info");
    }
    command
}

/// Waits (at most [`START_TIMEOUT`]) until the process `what` wrote `kubeconfig_path`
/// and answers `/readyz` with 200; errors quote the tail of `log_path`.
pub(crate) async fn wait_ready(
    what: &str,
    child: &mut OwnedChild,
    kubeconfig_path: &Path,
    log_path: &Path,
) -> anyhow::Result<(AdminKubeconfig, TlsHttp)> {
    wait_answering(what, "/readyz", child, kubeconfig_path, log_path).await
}

/// Waits (at most [`START_TIMEOUT`]) until the process `what` wrote `kubeconfig_path`
/// and answers `endpoint` (`/readyz`, or `/healthz` for a process that is serving but
/// may not be ready) with 200; errors quote the tail of `log_path`.
pub(crate) async fn wait_answering(
    what: &str,
    endpoint: &str,
    child: &mut OwnedChild,
    kubeconfig_path: &Path,
    log_path: &Path,
) -> anyhow::Result<(AdminKubeconfig, TlsHttp)> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let last = match probe(kubeconfig_path, endpoint).await {
            Ok(ready) => return Ok(ready),
            Err(error) => format!("{error:#}"),
        };
        let tail = || log_tail(log_path, LOG_TAIL_LINES);
        let where_ = log_path.display();
        if let Some(status) = child.try_exited()? {
            anyhow::bail!(
                "{what} exited ({status}) before {endpoint} answered 200; last probe: {last}\n\
                 --- tail of {where_} ---\n{}",
                tail()
            );
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "{what}: {endpoint} not 200 within {START_TIMEOUT:?}; last probe: {last}\n\
                 --- tail of {where_} ---\n{}",
                tail()
            );
        }
        tokio::time::sleep(PROBE_INTERVAL).await;
    }
}

/// One check: the kubeconfig exists and parses, and `endpoint` says 200.
async fn probe(kubeconfig_path: &Path, endpoint: &str) -> anyhow::Result<(AdminKubeconfig, TlsHttp)> {
    anyhow::ensure!(kubeconfig_path.exists(), "{} not written yet", kubeconfig_path.display());
    // The file may be half-written; a parse error just means "not yet".
    let admin = kubeconfig::read(kubeconfig_path)?;
    let http = TlsHttp::new(&admin.base_url, &admin.ca_pem, Some(&admin.identity))?;
    let response = http.clone().with_timeout(PROBE_TIMEOUT).get(endpoint).await?;
    anyhow::ensure!(response.status == StatusCode::OK, "{endpoint} answered {}: {}", response.status, response.text());
    Ok((admin, http))
}

/// The host part of a `HOST:PORT` listen address.
fn split_host(listen: &str) -> anyhow::Result<&str> {
    let (host, port) =
        listen.rsplit_once(':').with_context(|| format!("split listen address {listen:?} into host and port"))?;
    port.parse::<u16>().with_context(|| format!("parse the port of listen address {listen:?}"))?;
    Ok(host)
}

/// The `atoll_watches_started` counter of the shard `http` talks to.
pub async fn watches_started(http: &TlsHttp) -> anyhow::Result<u64> {
    let response = http.get("/metrics").await.context("GET /metrics")?;
    anyhow::ensure!(response.status.is_success(), "GET /metrics: HTTP {}", response.status);
    let text = response.text();
    let line = text.lines().find(|line| line.starts_with("atoll_watches_started"));
    let value = line.and_then(|line| line.rsplit(' ').next()).and_then(|value| value.parse().ok());
    value.context("no atoll_watches_started counter in /metrics")
}
