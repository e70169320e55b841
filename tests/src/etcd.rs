//! Debian's etcd (the `etcd-server` package), started for comparison benchmarks.
//!
//! The store benchmark's goal is stated relative to etcd's raw put rate on the same
//! machine, so etcd runs here with its defaults (fsync on every commit), on loopback,
//! in a temporary data dir that disappears with the [`EtcdProcess`].

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use tempfile::TempDir;

use crate::ports::free_port;
use crate::process::{log_tail, OwnedChild};

/// Where Debian installs etcd.
pub const ETCD_BINARY: &str = "/usr/bin/etcd";

/// How long etcd may take to answer its first status request.
pub const ETCD_START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long etcd may take to exit after SIGTERM.
const ETCD_STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// A running single-member etcd, killed when dropped.
pub struct EtcdProcess {
    // Declared before `dir` so that etcd dies before its data dir is removed.
    child: Option<OwnedChild>,
    dir: TempDir,
    client_url: String,
}

impl EtcdProcess {
    /// Starts etcd on free loopback ports and waits until it answers a status request.
    pub async fn start() -> anyhow::Result<EtcdProcess> {
        anyhow::ensure!(
            Path::new(ETCD_BINARY).is_file(),
            "{ETCD_BINARY} not found: install it with `apt-get install etcd-server`"
        );
        let dir = tempfile::Builder::new().prefix("atoll-etcd-").tempdir().context("create etcd's temporary dir")?;
        let client_url = format!("http://127.0.0.1:{}", free_port()?);
        let peer_url = format!("http://127.0.0.1:{}", free_port()?);
        let log_path = dir.path().join("etcd.log");
        let log = File::create(&log_path).context("create etcd.log")?;
        let mut command = Command::new(ETCD_BINARY);
        command
            .args(["--name", "bench", "--data-dir"])
            .arg(dir.path().join("data"))
            .args(["--listen-client-urls", &client_url])
            .args(["--advertise-client-urls", &client_url])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("bench={peer_url}")])
            .stdin(Stdio::null())
            .stdout(log.try_clone().context("duplicate etcd.log handle")?)
            .stderr(log);
        let child = OwnedChild::spawn(&mut command, ETCD_BINARY)?;
        let mut etcd = EtcdProcess { child: Some(child), dir, client_url };
        etcd.wait_ready().await?;
        Ok(etcd)
    }

    /// The client URL, `http://127.0.0.1:PORT`.
    pub fn client_url(&self) -> &str {
        &self.client_url
    }

    /// etcd's log file.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("etcd.log")
    }

    /// Sends SIGTERM and waits (bounded) for etcd to exit.
    pub async fn stop(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.terminate(ETCD_STOP_TIMEOUT).await.context("stop etcd")?;
        }
        Ok(())
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + ETCD_START_TIMEOUT;
        let options = etcd_client::ConnectOptions::default()
            .with_connect_timeout(Duration::from_secs(1))
            .with_timeout(Duration::from_secs(2));
        loop {
            let last = match etcd_client::Client::connect([&self.client_url], Some(options.clone())).await {
                Ok(mut client) => match client.status().await {
                    Ok(_) => return Ok(()),
                    Err(error) => error.to_string(),
                },
                Err(error) => error.to_string(),
            };
            let child = self.child.as_mut().context("etcd is not running")?;
            let exited = child.try_exited()?;
            if exited.is_some() || Instant::now() >= deadline {
                anyhow::bail!(
                    "etcd not ready (exit status {exited:?}, waited up to {ETCD_START_TIMEOUT:?}); \
                     last error: {last}\n--- tail of etcd.log ---\n{}",
                    log_tail(&self.log_path(), 40)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Returns `etcd --version`'s first line, for benchmark reports.
pub fn etcd_version() -> anyhow::Result<String> {
    let output = Command::new(ETCD_BINARY).arg("--version").output().context("run etcd --version")?;
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(text.lines().next().unwrap_or_default().trim().to_string())
}
