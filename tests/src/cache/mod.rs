//! Starting, killing and restarting real `atoll-cache-server` processes, and reading and
//! tampering with what they hold.
//!
//! A [`CacheServerProcess`] owns one cache server: its child process, its data dir (kept
//! across restarts, so a restart is recovery from RocksDB) and a port chosen once, so that
//! shards and child caches keep reaching it after a restart. It logs to
//! `DIR/cache-server.log`, quoted by every failure here.
//!
//! The submodules, in the order a test meets them:
//!
//! - [`topology`] says which caches an installation starts, which is whose parent, and
//!   which caches each shard writes to and watches.
//! - [`client`] is the gRPC client ([`CacheClient`]): List and Watch to read replicas,
//!   Replicate to tamper with them.
//! - [`sources`] lists what the shards hold of every replicated resource.
//! - [`compare`] decides whether a cache equals the sources (pure).

pub mod client;
pub mod compare;
pub mod sources;
pub mod topology;

pub use client::CacheClient;
pub use compare::{ReplicaId, Scope, SourceObject};
use protocol::wellknown::MASTERS_GROUP;
use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
pub use topology::{CacheSpec, CacheTopology, ShardCaches};

use anyhow::Context;
use http::StatusCode;
/// A replica as a cache lists it (the wire type).
pub use protocol::cache::{OriginEpoch, Replica};
use tempfile::TempDir;

use crate::binary::binary;
use crate::process::{log_tail, OwnedChild};
use crate::shard::{ShardProcess, STOP_TIMEOUT};
use crate::tls_http::ClientIdentity;

/// How long a cache server may take from spawn to answering.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long replicas may take to match their sources in tests that do not say: generous,
/// because it bounds a bug (replication normally takes milliseconds, drift repair one
/// resync interval), and tests must not fail on a slow machine.
pub const CONVERGE_TIMEOUT: Duration = Duration::from_secs(60);

/// The file, inside the data dir, that receives the cache server's output.
pub const LOG_FILE: &str = "cache-server.log";

/// The admin user the harness reads and tampers as (group `system:masters`).
pub const ADMIN_USER: &str = "admin";

/// How often readiness and convergence are polled.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// How many lines of the log error messages quote.
const LOG_TAIL_LINES: usize = 60;

/// How often a first start retries on a new port when the chosen one was taken meanwhile
/// (ports are picked by binding and releasing; another process may grab one in between).
const PORT_ATTEMPTS: usize = 3;

/// How to start a cache server.
#[derive(Clone, Debug)]
pub struct CacheServerOptions {
    /// `--name`: the sender name it pushes to its parents under.
    pub name: String,
    /// `--pki-dir`: the installation's shared CA directory.
    pub pki_dir: PathBuf,
    /// `--parent`: the URLs of the caches it pushes everything it holds to, in failover
    /// order; empty for a top-level cache.
    pub parents: Vec<String>,
    /// A data dir to use (and keep); `None` means a fresh temporary dir deleted with the
    /// process object.
    pub data_dir: Option<PathBuf>,
    /// `--resync-interval-seconds`, when set.
    pub resync_interval_seconds: Option<u64>,
    /// Further flags.
    pub extra_args: Vec<String>,
}

impl CacheServerOptions {
    /// A top-level cache named `name` in a temporary dir, trusting the CAs in `pki_dir`.
    pub fn new(name: &str, pki_dir: &Path) -> CacheServerOptions {
        CacheServerOptions {
            name: name.to_string(),
            pki_dir: pki_dir.to_path_buf(),
            parents: Vec::new(),
            data_dir: None,
            resync_interval_seconds: None,
            extra_args: Vec::new(),
        }
    }
}

/// A running `atoll-cache-server`, killed when dropped.
pub struct CacheServerProcess {
    options: CacheServerOptions,
    // Declared before `temp_dir` so that the process dies before its data dir is removed.
    child: Option<OwnedChild>,
    temp_dir: Option<TempDir>,
    data_dir: PathBuf,
    port: u16,
    ca_pem: String,
    admin: ClientIdentity,
    client: CacheClient,
}

impl std::fmt::Debug for CacheServerProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheServerProcess")
            .field("name", &self.options.name)
            .field("pid", &self.pid())
            .field("url", &self.url())
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

impl CacheServerProcess {
    /// Spawns a cache server on a free loopback port and waits (at most
    /// [`START_TIMEOUT`]) until it answers. The CAs must already exist in
    /// `options.pki_dir` (see [`ensure_pki`]).
    pub async fn start(options: CacheServerOptions) -> anyhow::Result<CacheServerProcess> {
        let prefix = format!("atoll-cache-{}-", options.name);
        let (temp_dir, data_dir) = crate::process::data_dir(options.data_dir.as_deref(), &prefix)?;
        let ca_pem = read_pki(&options.pki_dir, "ca.crt")?;
        let admin = admin_identity(&options.pki_dir)?;
        let mut last_error = None;
        for _ in 0..PORT_ATTEMPTS {
            let port = crate::ports::free_port()?;
            let client = CacheClient::new(&url_of(port), &ca_pem, &admin)?;
            match launch(&options, &data_dir, port, &client).await {
                Ok(child) => {
                    let process = CacheServerProcess {
                        options,
                        child: Some(child),
                        temp_dir,
                        data_dir,
                        port,
                        ca_pem,
                        admin,
                        client,
                    };
                    return Ok(process);
                }
                Err(error) if format!("{error:#}").contains("in use") => last_error = Some(error),
                Err(error) => return Err(error),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow::anyhow!("no port attempt was made")))
            .context(format!("start cache server {} ({PORT_ATTEMPTS} ports were taken)", options.name))
    }

    /// The cache server's name.
    pub fn name(&self) -> &str {
        &self.options.name
    }

    /// The process id, if it is running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(OwnedChild::pid)
    }

    /// `https://127.0.0.1:PORT`: what shards and child caches are given.
    pub fn url(&self) -> String {
        url_of(self.port)
    }

    /// The data dir.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The options it was started with.
    pub fn options(&self) -> &CacheServerOptions {
        &self.options
    }

    /// `DIR/cache-server.log`.
    pub fn log_path(&self) -> PathBuf {
        self.data_dir.join(LOG_FILE)
    }

    /// The last `lines` lines of the log, for assertion messages.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log_path(), lines)
    }

    /// The CA that signs the cache's serving certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A gRPC client authenticated as the installation's admin (`system:masters`).
    pub fn client(&self) -> CacheClient {
        self.client.clone()
    }

    /// A gRPC client authenticated as `identity` (say a shard's peer certificate).
    pub fn client_as(&self, identity: &ClientIdentity) -> anyhow::Result<CacheClient> {
        CacheClient::new(&self.url(), &self.ca_pem, identity)
    }

    /// The admin identity [`CacheServerProcess::client`] presents.
    pub fn admin_identity(&self) -> &ClientIdentity {
        &self.admin
    }

    /// Every replica the cache holds.
    pub async fn replicas(&self) -> anyhow::Result<Vec<Replica>> {
        self.client
            .list_all()
            .await
            .with_context(|| format!("list the replicas of cache {}{}", self.name(), self.log_section()))
    }

    /// Kills the cache server with SIGKILL (a crash) and reaps it; the data dir stays.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill9();
        }
    }

    /// The options the next [`CacheServerProcess::restart`] starts it with (a test that
    /// needs other flags changes them here).
    pub fn options_mut(&mut self) -> &mut CacheServerOptions {
        &mut self.options
    }

    /// Sends SIGTERM and waits at most [`STOP_TIMEOUT`]; ignoring SIGTERM is an error.
    pub async fn stop(&mut self) -> anyhow::Result<ExitStatus> {
        let Some(mut child) = self.child.take() else {
            anyhow::bail!("stop cache server {}: it is not running", self.options.name);
        };
        let stopped = child.terminate(STOP_TIMEOUT).await;
        stopped.with_context(|| format!("stop cache server {}{}", self.options.name, self.log_section()))
    }

    /// Stops the cache server if it runs (SIGTERM) and starts it again on the same port
    /// with the same data dir, waiting until it answers.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        if self.child.is_some() {
            self.stop().await?;
        }
        // A fresh connection pool: the old one's connection died with the process.
        self.client = CacheClient::new(&self.url(), &self.ca_pem, &self.admin)?;
        let child = launch(&self.options, &self.data_dir, self.port, &self.client).await?;
        self.child = Some(child);
        Ok(())
    }

    fn log_section(&self) -> String {
        format!("\n--- tail of {} ---\n{}", self.log_path().display(), self.log_tail(LOG_TAIL_LINES))
    }
}

impl Drop for CacheServerProcess {
    fn drop(&mut self) {
        self.kill9();
        // A failing test's data dir is evidence: keep it and say where it is.
        if std::thread::panicking() {
            if let Some(temp) = self.temp_dir.take() {
                let path = temp.keep();
                eprintln!(
                    "cache server {}: keeping data dir {} (log: {})",
                    self.options.name,
                    path.display(),
                    path.join(LOG_FILE).display()
                );
            }
        }
    }
}

fn url_of(port: u16) -> String {
    format!("https://127.0.0.1:{port}")
}

/// Creates the installation's CAs in `pki_dir` unless they exist, so that cache servers
/// can start before any shard and the harness can mint identities from the client CA.
/// The harness's own leaves go to `leaf_dir`, which no process reads.
pub fn ensure_pki(pki_dir: &Path, leaf_dir: &Path) -> anyhow::Result<()> {
    let options = security::pki::PkiOptions {
        pki_dir: pki_dir.to_path_buf(),
        leaf_dir: leaf_dir.to_path_buf(),
        process_name: "harness".to_string(),
        hosts: Vec::new(),
        files: security::pki::CertFiles::default(),
        role: security::pki::Role::Shard,
    };
    security::pki::load(&options).with_context(|| format!("create the CAs in {}", pki_dir.display()))?;
    Ok(())
}

/// An identity minted by the client CA in `pki_dir`: `user` in at most one group.
pub fn mint_identity(pki_dir: &Path, user: &str, groups: &[&str]) -> anyhow::Result<ClientIdentity> {
    crate::certs::mint_client_identity(
        &read_pki(pki_dir, "client-ca.crt")?,
        &read_pki(pki_dir, "client-ca.key")?,
        user,
        groups,
    )
}

/// The installation's admin (`admin` in `system:masters`), minted from `pki_dir`.
pub fn admin_identity(pki_dir: &Path) -> anyhow::Result<ClientIdentity> {
    mint_identity(pki_dir, ADMIN_USER, &[MASTERS_GROUP])
}

/// The peer client certificate a shard presents to other shards and to its caches
/// (`DATA_DIR/certs/peer-client.{crt,key}`).
pub fn shard_identity(shard: &ShardProcess) -> anyhow::Result<ClientIdentity> {
    let read = |file: &str| {
        let path = shard.data_dir().join("certs").join(file);
        std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))
    };
    Ok(ClientIdentity { cert_pem: read("peer-client.crt")?, key_pem: read("peer-client.key")? })
}

fn read_pki(pki_dir: &Path, file: &str) -> anyhow::Result<String> {
    let path = pki_dir.join(file);
    std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))
}

/// Spawns `atoll-cache-server` on `port` and waits until it answers.
async fn launch(
    options: &CacheServerOptions,
    data_dir: &Path,
    port: u16,
    client: &CacheClient,
) -> anyhow::Result<OwnedChild> {
    let log_path = data_dir.join(LOG_FILE);
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("open {}", log_path.display()))?;
    let listen = format!("127.0.0.1:{port}");
    writeln!(log, "=== harness: starting atoll-cache-server {} on {listen} ===", options.name)
        .context("write the log banner")?;
    let mut command = cache_command(options, data_dir, &listen);
    command.stdin(Stdio::null()).stdout(log.try_clone().context("duplicate the log file handle")?).stderr(log);
    let mut child = OwnedChild::spawn(&mut command, "atoll-cache-server")?;
    wait_ready(&options.name, &mut child, client, &log_path).await?;
    Ok(child)
}

fn cache_command(options: &CacheServerOptions, data_dir: &Path, listen: &str) -> Command {
    let mut command = Command::new(binary("atoll-cache-server"));
    command
        .arg("--listen")
        .arg(listen)
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--name")
        .arg(&options.name)
        .arg("--pki-dir")
        .arg(&options.pki_dir);
    if !options.parents.is_empty() {
        command.arg("--parent").arg(options.parents.join(","));
    }
    if let Some(seconds) = options.resync_interval_seconds {
        command.arg("--resync-interval-seconds").arg(seconds.to_string());
    }
    command.args(&options.extra_args);
    // Without a filter the log would be empty, and failures unexplained.
    if std::env::var_os("RUST_LOG").is_none() {
        command.env("RUST_LOG", "info");
    }
    command
}

/// Waits (at most [`START_TIMEOUT`]) until the cache answers `/healthz` with 200 or, if it
/// serves no health endpoint over HTTP/2, a List call; errors quote the log.
async fn wait_ready(name: &str, child: &mut OwnedChild, client: &CacheClient, log_path: &Path) -> anyhow::Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let last = match probe(client).await {
            Ok(()) => return Ok(()),
            Err(error) => format!("{error:#}"),
        };
        let tail = || log_tail(log_path, LOG_TAIL_LINES);
        if let Some(status) = child.try_exited()? {
            anyhow::bail!(
                "cache server {name} exited ({status}) before it was ready; last probe: {last}\n\
                 --- tail of {} ---\n{}",
                log_path.display(),
                tail()
            );
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "cache server {name} not ready within {START_TIMEOUT:?}; last probe: {last}\n\
                 --- tail of {} ---\n{}",
                log_path.display(),
                tail()
            );
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

async fn probe(client: &CacheClient) -> anyhow::Result<()> {
    let health = match client.healthz().await {
        Ok(StatusCode::OK) => return Ok(()),
        Ok(status) => format!("/healthz answered {status}"),
        Err(error) => format!("{error:#}"),
    };
    match client.list_resource("core.kcp.io", "shards").await {
        Ok(_) => Ok(()),
        Err(error) => anyhow::bail!("{health}; List: {error:#}"),
    }
}

/// The sources of `shards` and the replicas of `cache`, compared within the origins of
/// `shards`: the differences, empty when the cache equals the sources.
pub async fn differences(cache: &CacheServerProcess, shards: &[&ShardProcess]) -> anyhow::Result<Vec<String>> {
    let mut sources = Vec::new();
    let mut paths = BTreeMap::new();
    for shard in shards {
        sources.extend(sources::replicated_sources(shard).await?);
        paths.extend(sources::cluster_paths(shard).await?);
    }
    let replicas = cache.replicas().await?;
    let scope = Scope::origins(shards.iter().map(|shard| shard.name()));
    Ok(compare::diff(&sources, &replicas, &paths, &scope))
}

/// Polls until `cache` equals the sources of `shards` (see [`differences`]), at most
/// `timeout`; the error lists the last differences and the cache's log.
pub async fn wait_matches(
    cache: &CacheServerProcess,
    shards: &[&ShardProcess],
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match differences(cache, shards).await {
            Ok(differences) if differences.is_empty() => return Ok(()),
            Ok(differences) => differences.join("\n"),
            Err(error) => format!("{error:#}"),
        };
        if Instant::now() >= deadline {
            let names: Vec<&str> = shards.iter().map(|shard| shard.name()).collect();
            anyhow::bail!(
                "cache {} does not equal the sources of {names:?} within {timeout:?}; last differences:\n{last}{}",
                cache.name(),
                cache.log_section()
            );
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Polls until `check` holds for the replicas of `cache`, at most `timeout`; `what` says
/// what was awaited in the error, which also quotes the last replicas' ids and the log.
pub async fn wait_replicas(
    cache: &CacheServerProcess,
    what: &str,
    timeout: Duration,
    check: impl Fn(&[Replica]) -> bool,
) -> anyhow::Result<Vec<Replica>> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match cache.replicas().await {
            Ok(replicas) if check(&replicas) => return Ok(replicas),
            Ok(replicas) => {
                let ids: Vec<String> =
                    replicas.iter().filter_map(|r| r.key.as_ref()).map(|k| ReplicaId::from(k).to_string()).collect();
                format!("{} replicas: {ids:#?}", ids.len())
            }
            Err(error) => format!("{error:#}"),
        };
        if Instant::now() >= deadline {
            anyhow::bail!(
                "cache {}: {what} not within {timeout:?}; last seen: {last}{}",
                cache.name(),
                cache.log_section()
            );
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// The replica of `id` among `replicas`.
pub fn find<'a>(replicas: &'a [Replica], id: &ReplicaId) -> Option<&'a Replica> {
    replicas.iter().find(|replica| replica.key.as_ref().is_some_and(|key| ReplicaId::from(key) == *id))
}
