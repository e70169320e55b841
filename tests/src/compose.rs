//! The multi-host installation of `deploy/docker-compose.yaml` under a compose project of
//! the caller's own ([`Compose`]): images built from this checkout's binaries by
//! `scripts/compose.sh images`, the installation started by `scripts/compose.sh start`
//! (every container, network and volume carries the project's name), the front-proxy and
//! Prometheus published on free loopback ports, and everything of the project taken down
//! again when the [`Compose`] is dropped, on a panic too.
//!
//! Users reach the shards only through the front-proxy; [`Compose::service_http`] reaches
//! a shard directly at its container's address on the project network, for the reads a
//! test makes of every shard (wildcard lists the proxy does not serve), and
//! [`Compose::cache_client`] a cache server the same way (the caches publish no port).
//!
//! Shared by the compose end-to-end test and the chaos runner's `hosts` scenario.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::cache::CacheClient;
use crate::{AdminKubeconfig, Kubectl, TlsHttp};

/// Bounds on each phase; they catch hangs, not slowness.
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// How long `scripts/compose.sh start` may take to bring the installation up and ready.
pub const UP_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// How long one `docker` or `docker-compose` command may take.
pub const DOCKER_TIMEOUT: Duration = Duration::from_secs(120);

/// The port every shard listens on inside its container.
pub const SHARD_PORT: u16 = 6443;

/// The port every cache server listens on inside its container.
pub const CACHE_PORT: u16 = 6450;

/// Why the compose installation cannot run here, if it cannot: no Docker engine answering
/// `docker info`, or no `docker-compose` (v1).
pub fn docker_missing() -> Option<String> {
    if !succeeds(Command::new("docker").arg("info")) {
        return Some("no Docker engine answers `docker info`".into());
    }
    if !succeeds(Command::new("docker-compose").arg("version")) {
        return Some("`docker-compose` (v1) is not installed".into());
    }
    None
}

/// Whether `command` runs and exits 0 (its output discarded).
pub fn succeeds(command: &mut Command) -> bool {
    command.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|status| status.success())
}

/// Runs `command` to completion within `timeout`, returning its stdout; an error carries
/// both streams. Output goes to files rather than pipes so a chatty build cannot block.
pub fn run(command: &mut Command, timeout: Duration) -> anyhow::Result<String> {
    let line = format!("{command:?}");
    let (mut out, mut err) = (tempfile::tempfile()?, tempfile::tempfile()?);
    let mut child = command.stdin(Stdio::null()).stdout(out.try_clone()?).stderr(err.try_clone()?).spawn()?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let read = |file: &mut std::fs::File| {
        use std::io::Seek;
        let mut text = String::new();
        let _ = file.seek(std::io::SeekFrom::Start(0));
        let _ = file.read_to_string(&mut text);
        text
    };
    let (stdout, stderr) = (read(&mut out), read(&mut err));
    match status {
        Some(status) if status.success() => Ok(stdout),
        Some(status) => anyhow::bail!("{line} failed ({status})\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"),
        None => anyhow::bail!(
            "{line} did not finish within {timeout:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
        ),
    }
}

/// What is left of compose project `project`: the ids of its containers, networks and
/// volumes, by compose label (empty once it is all gone).
pub fn leftovers(project: &str) -> anyhow::Result<String> {
    let label = format!("label=com.docker.compose.project={project}");
    let mut left = String::new();
    for kind in [&["ps", "-aq"][..], &["network", "ls", "-q"], &["volume", "ls", "-q"]] {
        let mut args = kind.to_vec();
        args.extend(["--filter", &label]);
        left.push_str(&run(Command::new("docker").args(args), DOCKER_TIMEOUT)?);
    }
    Ok(left.trim().to_string())
}

/// One compose project: the installation a test or a chaos run brought up. Dropping it
/// (at the end, or on a panic) takes everything of the project down, volumes included.
pub struct Compose {
    project: String,
    repo: PathBuf,
    dir: tempfile::TempDir,
    proxy_port: u16,
    prometheus_port: u16,
    bin_dir: PathBuf,
    down: bool,
}

impl Compose {
    /// A project named `project` (lowercase letters, digits, `-` and `_`; unique per run,
    /// so parallel runs and a user's own `atoll` project never meet), not started yet.
    pub fn new(project: &str) -> anyhow::Result<Compose> {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().context("tests/ sits in the repository")?;
        let bin_dir = crate::binary("atoll-shard").parent().context("binaries sit in a directory")?.to_path_buf();
        Ok(Compose {
            project: project.to_string(),
            repo: repo.to_path_buf(),
            dir: tempfile::tempdir()?,
            proxy_port: crate::ports::free_port()?,
            prometheus_port: crate::ports::free_port()?,
            bin_dir,
            down: false,
        })
    }

    /// The compose project's name.
    pub fn project(&self) -> &str {
        &self.project
    }

    /// The front-proxy's port on 127.0.0.1.
    pub fn proxy_port(&self) -> u16 {
        self.proxy_port
    }

    /// Prometheus's port on 127.0.0.1.
    pub fn prometheus_port(&self) -> u16 {
        self.prometheus_port
    }

    /// Where `start` writes the admin kubeconfig (the front-proxy's, its server the
    /// published port).
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("admin.kubeconfig")
    }

    fn with_env<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        command
            .current_dir(&self.repo)
            .env("ATOLL_COMPOSE_PROJECT", &self.project)
            .env("ATOLL_PROXY_PORT", self.proxy_port.to_string())
            .env("ATOLL_PROMETHEUS_PORT", self.prometheus_port.to_string())
            .env("ATOLL_COMPOSE_KUBECONFIG", self.kubeconfig())
            .env("ATOLL_BIN_DIR", &self.bin_dir)
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
    }

    /// `scripts/compose.sh ARGS`.
    pub fn script(&self, args: &[&str], timeout: Duration) -> anyhow::Result<String> {
        run(self.with_env(Command::new(self.repo.join("scripts/compose.sh")).args(args)), timeout)
    }

    /// Builds the images from the binaries next to this program (`compose.sh images`).
    pub fn build_images(&self) -> anyhow::Result<()> {
        self.script(&["images"], BUILD_TIMEOUT).map(drop)
    }

    /// Starts the installation and waits until the front-proxy routes to every shard
    /// (`compose.sh start`), which also writes [`Compose::kubeconfig`].
    pub fn start(&self) -> anyhow::Result<()> {
        self.script(&["start"], UP_TIMEOUT).map(drop)
    }

    /// `docker-compose -p PROJECT -f deploy/docker-compose.yaml ARGS`.
    pub fn compose(&self, args: &[&str]) -> anyhow::Result<String> {
        let file = self.repo.join("deploy/docker-compose.yaml");
        let mut command = Command::new("docker-compose");
        command.arg("-p").arg(&self.project).arg("-f").arg(file).args(args);
        run(self.with_env(&mut command), DOCKER_TIMEOUT)
    }

    /// `docker ARGS`.
    pub fn docker(&self, args: &[&str]) -> anyhow::Result<String> {
        run(Command::new("docker").args(args), DOCKER_TIMEOUT)
    }

    /// The id of `service`'s container.
    pub fn container(&self, service: &str) -> anyhow::Result<String> {
        let id = self.compose(&["ps", "-q", service])?.trim().to_string();
        anyhow::ensure!(!id.is_empty(), "service {service} of {} has no container", self.project);
        Ok(id)
    }

    /// The compose network every service is on.
    pub fn network(&self) -> String {
        format!("{}_default", self.project)
    }

    /// The process id of `service`'s container's first process, on this host: the way
    /// into its namespaces (`nsenter -t PID -n`).
    pub fn pid(&self, service: &str) -> anyhow::Result<u32> {
        let pid = self.docker(&["inspect", "-f", "{{.State.Pid}}", &self.container(service)?])?;
        let pid: u32 = pid.trim().parse().with_context(|| format!("parse the pid of {service}: {pid:?}"))?;
        anyhow::ensure!(pid != 0, "the container of {service} is not running");
        Ok(pid)
    }

    /// `service`'s address on the project network (none while it is disconnected).
    pub fn address(&self, service: &str) -> anyhow::Result<String> {
        let template =
            format!("{{{{with index .NetworkSettings.Networks \"{}\"}}}}{{{{.IPAddress}}}}{{{{end}}}}", self.network());
        let address = self.docker(&["inspect", "-f", &template, &self.container(service)?])?.trim().to_string();
        anyhow::ensure!(!address.is_empty(), "{service} has no address on {}", self.network());
        Ok(address)
    }

    /// What is left of the project: see [`leftovers`].
    pub fn leftovers(&self) -> anyhow::Result<String> {
        leftovers(&self.project)
    }

    /// Takes every container, network and volume of the project down (also those of the
    /// observability profile).
    pub fn teardown(&mut self) -> anyhow::Result<()> {
        self.down = true;
        self.compose(&["--profile", "observability", "down", "-v", "--remove-orphans", "--timeout", "10"])?;
        Ok(())
    }

    /// A stock kubectl through the front-proxy, on logical cluster `path`.
    pub fn kubectl(&self, path: &str) -> Kubectl {
        let base = format!("https://127.0.0.1:{}", self.proxy_port);
        Kubectl::new(&self.kubeconfig(), &base, &self.dir.path().join("kubectl-cache"), None).cluster(path)
    }

    /// The admin kubeconfig `start` wrote.
    pub fn admin(&self) -> anyhow::Result<AdminKubeconfig> {
        crate::kubeconfig::read(&self.kubeconfig())
    }

    /// A raw HTTPS client through the front-proxy as admin, patient for 20 s.
    pub fn http(&self) -> anyhow::Result<TlsHttp> {
        let admin = self.admin()?;
        let base = format!("https://127.0.0.1:{}", self.proxy_port);
        Ok(TlsHttp::new(&base, &admin.ca_pem, Some(&admin.identity))?.with_timeout(Duration::from_secs(20)))
    }

    /// A raw HTTPS client straight to shard `service` at its container's address on the
    /// project network (the certificate names the service), as the admin of the shard's
    /// own kubeconfig. Works only while the shard is connected.
    pub fn service_http(&self, service: &str) -> anyhow::Result<TlsHttp> {
        let admin = self.shard_admin(service)?;
        let base = format!("https://{}:{SHARD_PORT}", self.address(service)?);
        TlsHttp::new(&base, &admin.ca_pem, Some(&admin.identity))?.with_server_name(service)
    }

    /// A gRPC client straight to cache server `service` at its container's address on the
    /// project network (the certificate names the service), as the admin of root's own
    /// kubeconfig (`system:masters`, which may read every replica; the caches share the
    /// shards' PKI). Works only while the cache is connected.
    pub fn cache_client(&self, service: &str) -> anyhow::Result<CacheClient> {
        let admin = self.shard_admin("root")?;
        let ca_pem = String::from_utf8(admin.ca_pem).context("the CA of root's admin kubeconfig is not text")?;
        let url = format!("https://{}:{CACHE_PORT}", self.address(service)?);
        CacheClient::with_server_name(&url, &ca_pem, &admin.identity, service)
    }

    /// The admin kubeconfig shard `service` wrote into its data dir.
    fn shard_admin(&self, service: &str) -> anyhow::Result<AdminKubeconfig> {
        let container = self.container(service)?;
        let text = self.docker(&["exec", &container, "cat", "/var/lib/atoll/data/admin.kubeconfig"])?;
        crate::kubeconfig::parse(&text).with_context(|| format!("parse the admin kubeconfig of {service}"))
    }

    /// `GET path` on the compose's Prometheus, parsed.
    pub async fn prometheus(&self, path: &str) -> anyhow::Result<Value> {
        prometheus_get(self.prometheus_port, path).await
    }
}

impl Drop for Compose {
    fn drop(&mut self) {
        if self.down {
            return;
        }
        if std::thread::panicking() {
            match self.compose(&["logs", "--no-color", "--tail", "40"]) {
                Ok(logs) => eprintln!("--- logs of compose project {} ---\n{logs}", self.project),
                Err(error) => eprintln!("reading the logs of {} failed: {error:#}", self.project),
            }
        }
        if let Err(error) = self.teardown() {
            eprintln!("tearing down compose project {} failed: {error:#}", self.project);
        }
    }
}

/// Polls `probe` every half second until it returns `Ok(value)`, or fails with its last
/// complaint after `timeout`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match probe().await {
            Ok(value) => return Ok(value),
            Err(last) if Instant::now() >= deadline => anyhow::bail!("{what}: not within {timeout:?}; last: {last}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

/// A plain HTTP/1.0 GET on 127.0.0.1:`port` (Prometheus serves no TLS here; one request
/// per connection is all these checks need).
pub async fn prometheus_get(port: u16, path: &str) -> anyhow::Result<Value> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut response)).await??;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| anyhow::anyhow!("no HTTP header end: {text}"))?;
    anyhow::ensure!(head.starts_with("HTTP/1.") && head.contains(" 200 "), "GET {path}: {head}\n{body}");
    Ok(serde_json::from_str(body)?)
}
