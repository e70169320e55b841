//! Starting, stopping and restarting a real `atoll-front-proxy` in front of an
//! installation.
//!
//! The proxy writes `DIR/admin.kubeconfig` (server `https://HOST:PORT/clusters/root`)
//! once it serves; it logs to `DIR/front-proxy.log`, quoted by every failure here.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use http::StatusCode;
use tempfile::TempDir;

use crate::binary::binary;
use crate::kubeconfig::{self, AdminKubeconfig};
use crate::kubectl::Kubectl;
use crate::process::{log_tail, OwnedChild};
use crate::shard::{wait_answering, wait_ready, KUBECONFIG_FILE, STOP_TIMEOUT};
use crate::tls_http::{ClientIdentity, TlsHttp};

/// The file, inside the data dir, that receives the proxy's output.
pub const LOG_FILE: &str = "front-proxy.log";
/// How long a path may take to resolve through the proxy after its workspace is Ready
/// (the index feed is a stream; this bounds a bug, not the normal case).
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(15);
const POLL_INTERVAL: Duration = Duration::from_millis(50);
const LOG_TAIL_LINES: usize = 60;

/// How to start a front-proxy.
#[derive(Clone, Debug, Default)]
pub struct FrontProxyOptions {
    /// The root shard's base URL (`--root-shard`).
    pub root_shard_url: String,
    /// The installation's CA directory (`--pki-dir`).
    pub pki_dir: PathBuf,
    /// A static token file (`--token-auth-file`).
    pub token_file: Option<PathBuf>,
    /// Further flags.
    pub extra_args: Vec<String>,
}

/// A running `atoll-front-proxy`, killed when dropped.
pub struct FrontProxyProcess {
    options: FrontProxyOptions,
    child: Option<OwnedChild>,
    temp_dir: Option<TempDir>,
    data_dir: PathBuf,
    admin: AdminKubeconfig,
    http: TlsHttp,
}

impl std::fmt::Debug for FrontProxyProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrontProxyProcess")
            .field("pid", &self.child.as_ref().map(OwnedChild::pid))
            .field("base_url", &self.admin.base_url)
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

impl FrontProxyProcess {
    /// Spawns a proxy on a free loopback port and waits until it serves and routes
    /// `/clusters/root`.
    pub async fn start(options: FrontProxyOptions) -> anyhow::Result<FrontProxyProcess> {
        let temp = tempfile::Builder::new().prefix("atoll-front-proxy-").tempdir().context("create a data dir")?;
        let data_dir = temp.path().to_path_buf();
        let (child, admin, http) = launch(&options, &data_dir, "127.0.0.1:0", Wait::Ready).await?;
        let proxy = FrontProxyProcess { options, child: Some(child), temp_dir: Some(temp), data_dir, admin, http };
        proxy.wait_resolves("root").await?;
        Ok(proxy)
    }

    /// The process id, if the proxy is running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(OwnedChild::pid)
    }

    /// `https://host:port`.
    pub fn base_url(&self) -> &str {
        &self.admin.base_url
    }

    /// `https://host:port/clusters/<path>`.
    pub fn cluster_url(&self, path: &str) -> String {
        format!("{}/clusters/{path}", self.admin.base_url)
    }

    /// `DIR/admin.kubeconfig`, pointing at `/clusters/root` through the proxy.
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.data_dir.join(KUBECONFIG_FILE)
    }

    /// The parsed admin kubeconfig.
    pub fn admin(&self) -> &AdminKubeconfig {
        &self.admin
    }

    /// The data dir.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The last lines of the proxy's log.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.data_dir.join(LOG_FILE), lines)
    }

    /// Stock kubectl with the admin kubeconfig of the proxy.
    pub fn kubectl(&self) -> Kubectl {
        self.kubectl_with(&self.kubeconfig_path())
    }

    /// Stock kubectl with another kubeconfig.
    pub fn kubectl_with(&self, kubeconfig: &Path) -> Kubectl {
        let log = self.data_dir.join(LOG_FILE);
        Kubectl::new(kubeconfig, &self.admin.base_url, &self.data_dir.join("kubectl-cache"), Some(&log))
    }

    /// A raw HTTPS client authenticated as admin.
    pub fn http(&self) -> TlsHttp {
        self.http.clone()
    }

    /// A raw HTTPS client authenticated as `identity`, or anonymous for `None`.
    pub fn http_as(&self, identity: Option<&ClientIdentity>) -> anyhow::Result<TlsHttp> {
        self.http.with_identity(identity)
    }

    /// Writes `DIR/users/<user>.kubeconfig` for `identity` on `path` through the proxy.
    pub fn user_kubeconfig(&self, user: &str, identity: &ClientIdentity, path: &str) -> anyhow::Result<PathBuf> {
        let dir = self.data_dir.join("users");
        std::fs::create_dir_all(&dir).context("create the users kubeconfig dir")?;
        let file = dir.join(format!("{user}.kubeconfig"));
        kubeconfig::write(&file, &self.cluster_url(path), &self.admin.ca_pem, identity)?;
        Ok(file)
    }

    /// A `kube::Client` acting as admin on `path` through the proxy.
    pub async fn kube_client(&self, path: &str) -> anyhow::Result<kube::Client> {
        let file = kube::config::Kubeconfig::read_from(self.kubeconfig_path())?;
        let mut config =
            kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default()).await?;
        config.cluster_url = self.cluster_url(path).parse()?;
        Ok(kube::Client::try_from(config)?)
    }

    /// Waits until `/clusters/<path>/api` answers 200 for admin through the proxy.
    pub async fn wait_resolves(&self, path: &str) -> anyhow::Result<()> {
        let url = format!("/clusters/{path}/api");
        let deadline = Instant::now() + RESOLVE_TIMEOUT;
        loop {
            let last = match self.http.get(&url).await {
                Ok(response) if response.status == StatusCode::OK => return Ok(()),
                Ok(response) => format!("HTTP {}: {}", response.status, response.text()),
                Err(error) => format!("{error:#}"),
            };
            anyhow::ensure!(
                Instant::now() < deadline,
                "{path} did not resolve through the front-proxy within {RESOLVE_TIMEOUT:?}; last: {last}\n--- proxy log ---\n{}",
                self.log_tail(LOG_TAIL_LINES)
            );
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// Kills the proxy with SIGKILL.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill9();
        }
    }

    /// Stops the proxy (SIGTERM) if running and starts it again on the same port and data
    /// dir, waiting until it serves and routes root.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.relaunch(Wait::Ready).await?;
        self.wait_resolves("root").await
    }

    /// Like [`FrontProxyProcess::restart`] with `extra_args` added to the flags, but waits
    /// only until the proxy serves (`/healthz`), not until `/readyz` says every shard's
    /// index arrived: for tests of a proxy that starts while a shard does not answer.
    pub async fn restart_serving(&mut self, extra_args: &[&str]) -> anyhow::Result<()> {
        self.options.extra_args.extend(extra_args.iter().map(|arg| (*arg).to_string()));
        self.relaunch(Wait::Serving).await
    }

    async fn relaunch(&mut self, wait: Wait) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.terminate(STOP_TIMEOUT).await.context("stop the front-proxy")?;
        }
        let listen = format!("127.0.0.1:{}", self.admin.port()?);
        let (child, admin, http) = launch(&self.options, &self.data_dir, &listen, wait).await?;
        self.child = Some(child);
        self.admin = admin;
        self.http = http;
        Ok(())
    }
}

impl Drop for FrontProxyProcess {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            if let Some(temp) = self.temp_dir.take() {
                eprintln!("front-proxy: keeping data dir {}", temp.keep().display());
            }
        }
    }
}

/// What a launch waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// `/readyz` answers 200: every known shard's index arrived.
    Ready,
    /// `/healthz` answers 200: the proxy serves.
    Serving,
}

async fn launch(
    options: &FrontProxyOptions,
    data_dir: &Path,
    listen: &str,
    wait: Wait,
) -> anyhow::Result<(OwnedChild, AdminKubeconfig, TlsHttp)> {
    let kubeconfig_path = data_dir.join(KUBECONFIG_FILE);
    if kubeconfig_path.exists() {
        std::fs::remove_file(&kubeconfig_path).context("remove the previous admin.kubeconfig")?;
    }
    let log_path = data_dir.join(LOG_FILE);
    let mut log = OpenOptions::new().create(true).append(true).open(&log_path).context("open the proxy log")?;
    writeln!(log, "=== harness: starting atoll-front-proxy on {listen} ===").context("write the log banner")?;
    let mut command = Command::new(binary("atoll-front-proxy"));
    command
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--listen")
        .arg(listen)
        .arg("--root-shard")
        .arg(&options.root_shard_url)
        .arg("--pki-dir")
        .arg(&options.pki_dir);
    if let Some(file) = &options.token_file {
        command.arg("--token-auth-file").arg(file);
    }
    command.args(&options.extra_args);
    if std::env::var_os("RUST_LOG").is_none() {
        command.env("RUST_LOG", "info");
    }
    command.stdin(Stdio::null()).stdout(log.try_clone().context("duplicate the log handle")?).stderr(log);
    let mut child = OwnedChild::spawn(&mut command, "atoll-front-proxy")?;
    let (admin, http) = match wait {
        Wait::Ready => wait_ready("atoll-front-proxy", &mut child, &kubeconfig_path, &log_path).await?,
        Wait::Serving => {
            wait_answering("atoll-front-proxy", "/healthz", &mut child, &kubeconfig_path, &log_path).await?
        }
    };
    Ok((child, admin, http))
}
