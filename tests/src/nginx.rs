//! Debian's nginx (the `nginx` package) as a TLS reverse proxy in front of one shard: the
//! baseline the front-proxy benchmark measures the front-proxy against.
//!
//! nginx runs as the harness's user (its workers drop to `nobody` when that is root),
//! never as the system service: from a temporary prefix, on a free loopback port, with
//! every path it writes (pid, error log, temp dirs) inside that prefix, and in the
//! foreground, so it is the harness's child. Its master forks workers, and workers do
//! not die with a killed master; so nginx gets its own process group, and everything in
//! that group is killed when the [`NginxProcess`] is dropped.
//!
//! The configuration is what a careful operator would write for this job: keep-alive
//! connections to the upstream (`keepalive`, HTTP/1.1, an empty `Connection` header),
//! mutual TLS to the shard with the upstream certificate verified, TLS session reuse,
//! no response buffering and no access log.

use std::fs::OpenOptions;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use tempfile::TempDir;

use crate::ports::free_port;
use crate::process::{log_tail, OwnedChild};
use crate::tls_http::ClientIdentity;

/// Where Debian installs nginx.
pub const NGINX_BINARY: &str = "/usr/sbin/nginx";

/// How long nginx may take from spawn to accepting connections.
pub const NGINX_START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long nginx may take to exit after SIGTERM (its fast shutdown) before the whole
/// process group is killed.
const NGINX_STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a free port is tried: [`free_port`] can race with another process, and
/// nginx then exits with "Address already in use".
const BIND_ATTEMPTS_MAX: usize = 3;

/// How often readiness is polled.
const PROBE_INTERVAL: Duration = Duration::from_millis(50);

/// How many lines of nginx's log error messages quote.
const LOG_TAIL_LINES: usize = 40;

/// Idle keep-alive connections each worker keeps to the upstream. Above the benchmark's
/// 64 client connections, so that a worker never has to open a fresh upstream
/// connection (a TLS handshake) in the middle of a run.
pub const UPSTREAM_KEEPALIVE_DEFAULT: usize = 128;

/// Requests per keep-alive connection, both sides. nginx's default (1000) would close
/// every client and upstream connection after 1000 requests, so a benchmark would
/// measure TLS handshakes rather than proxying.
const KEEPALIVE_REQUESTS_MAX: u64 = 10_000_000;

/// Certificates and addresses for one nginx in front of one upstream.
#[derive(Clone, Debug)]
pub struct NginxOptions {
    /// `host:port` of the upstream (the shard).
    pub upstream: String,
    /// The name nginx checks the upstream's serving certificate against. nginx only
    /// matches DNS names, not IP SANs, so for a loopback shard this is `localhost`.
    pub upstream_server_name: String,
    /// The CA that signed the upstream's serving certificate, PEM.
    pub upstream_ca_pem: String,
    /// The client certificate nginx presents to the upstream.
    pub upstream_client: ClientIdentity,
    /// nginx's own serving certificate (chain) and key, PEM.
    pub serving_cert_pem: String,
    /// The private key of [`NginxOptions::serving_cert_pem`], PEM.
    pub serving_key_pem: String,
    /// Idle keep-alive connections per worker to the upstream.
    pub upstream_keepalive: usize,
}

/// A running nginx, killed (with its workers) when dropped.
pub struct NginxProcess {
    // Declared before `prefix` so that nginx dies before its files are removed.
    child: Option<OwnedChild>,
    prefix: TempDir,
    port: u16,
}

impl NginxProcess {
    /// Writes the configuration and certificates into a fresh prefix, starts nginx on a
    /// free loopback port and waits until it accepts connections.
    pub async fn start(options: &NginxOptions) -> anyhow::Result<NginxProcess> {
        anyhow::ensure!(
            Path::new(NGINX_BINARY).is_file(),
            "{NGINX_BINARY} not found: install it with `apt-get install nginx` (scripts/deps.sh does)"
        );
        let prefix = tempfile::Builder::new().prefix("atoll-nginx-").tempdir().context("create nginx's prefix")?;
        // Workers of a root-started master run as `nobody`; they must be able to enter
        // the prefix to create temp files. The keys inside stay 0600 (the master reads
        // them before it forks).
        std::fs::set_permissions(prefix.path(), std::fs::Permissions::from_mode(0o711))
            .context("make nginx's prefix traversable")?;
        let files = write_files(prefix.path(), options)?;
        let mut last_error = None;
        for _ in 0..BIND_ATTEMPTS_MAX {
            let port = free_port()?;
            let config = render_config(&files, options, port);
            std::fs::write(&files.config, config).context("write nginx.conf")?;
            // A fresh log per attempt, so that the port-race check reads this attempt's.
            std::fs::write(&files.log, "").context("truncate nginx.log")?;
            let mut child = spawn(prefix.path(), &files)?;
            match wait_ready(&mut child, &files, port).await {
                Ok(()) => return Ok(NginxProcess { child: Some(child), prefix, port }),
                Err(error) => {
                    kill_all(child);
                    if !log_tail(&files.log, LOG_TAIL_LINES).contains("Address already in use") {
                        return Err(error);
                    }
                    last_error = Some(error);
                }
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow::anyhow!("nginx was never started")))
            .context(format!("start nginx on a free port ({BIND_ATTEMPTS_MAX} attempts)"))
    }

    /// `https://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The process ids of the master and its workers (nginx's process group).
    pub fn pids(&self) -> Vec<u32> {
        match &self.child {
            Some(child) => process_group_members(child.pid()),
            None => Vec::new(),
        }
    }

    /// nginx's error log (its stdout and stderr go there too).
    pub fn log_path(&self) -> PathBuf {
        self.prefix.path().join(LOG_FILE)
    }

    /// Sends SIGTERM (nginx's fast shutdown) and waits, bounded; then kills whatever of
    /// the process group is left.
    pub async fn stop(&mut self) -> anyhow::Result<()> {
        let Some(mut child) = self.child.take() else { return Ok(()) };
        let pgid = child.pid();
        let stopped = child.terminate(NGINX_STOP_TIMEOUT).await;
        kill_process_group(pgid);
        stopped.map(drop).context("stop nginx")
    }
}

impl Drop for NginxProcess {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            kill_all(child);
        }
    }
}

/// Kills nginx's whole process group (the workers outlive a killed master) and reaps
/// the master.
fn kill_all(mut child: OwnedChild) {
    kill_process_group(child.pid());
    child.kill9();
}

/// Waits until nginx accepts connections on `port`, or fails with its log's tail when
/// it exits or [`NGINX_START_TIMEOUT`] passes.
async fn wait_ready(child: &mut OwnedChild, files: &Files, port: u16) -> anyhow::Result<()> {
    let deadline = Instant::now() + NGINX_START_TIMEOUT;
    let address = format!("127.0.0.1:{port}");
    loop {
        // The master writes its pid file only after it has bound its listeners.
        if files.pid.exists() && tokio::net::TcpStream::connect(&address).await.is_ok() {
            return Ok(());
        }
        let why = match child.try_exited()? {
            Some(status) => format!("it exited ({status})"),
            None if Instant::now() >= deadline => format!("not within {NGINX_START_TIMEOUT:?}"),
            None => {
                tokio::time::sleep(PROBE_INTERVAL).await;
                continue;
            }
        };
        anyhow::bail!(
            "nginx not accepting connections on {address}: {why}\n--- tail of {} ---\n{}",
            files.log.display(),
            log_tail(&files.log, LOG_TAIL_LINES)
        );
    }
}

const CONFIG_FILE: &str = "nginx.conf";
const LOG_FILE: &str = "nginx.log";
const PID_FILE: &str = "nginx.pid";
const TEMP_DIR: &str = "temp";

/// The absolute paths nginx's configuration names.
#[derive(Clone, Debug)]
struct Files {
    prefix: PathBuf,
    config: PathBuf,
    log: PathBuf,
    pid: PathBuf,
    serving_cert: PathBuf,
    serving_key: PathBuf,
    upstream_ca: PathBuf,
    upstream_client_cert: PathBuf,
    upstream_client_key: PathBuf,
}

fn write_files(prefix: &Path, options: &NginxOptions) -> anyhow::Result<Files> {
    let files = Files {
        prefix: prefix.to_path_buf(),
        config: prefix.join(CONFIG_FILE),
        log: prefix.join(LOG_FILE),
        pid: prefix.join(PID_FILE),
        serving_cert: prefix.join("serving.crt"),
        serving_key: prefix.join("serving.key"),
        upstream_ca: prefix.join("upstream-ca.crt"),
        upstream_client_cert: prefix.join("upstream-client.crt"),
        upstream_client_key: prefix.join("upstream-client.key"),
    };
    // nginx creates each temp dir but not their parent.
    let temp = prefix.join(TEMP_DIR);
    std::fs::create_dir(&temp).with_context(|| format!("create {}", temp.display()))?;
    write_file(&files.serving_cert, &options.serving_cert_pem, 0o644)?;
    write_file(&files.serving_key, &options.serving_key_pem, 0o600)?;
    write_file(&files.upstream_ca, &options.upstream_ca_pem, 0o644)?;
    write_file(&files.upstream_client_cert, &options.upstream_client.cert_pem, 0o644)?;
    write_file(&files.upstream_client_key, &options.upstream_client.key_pem, 0o600)?;
    Ok(files)
}

fn write_file(path: &Path, contents: &str, mode: u32) -> anyhow::Result<()> {
    use std::io::Write;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("create {}", path.display()))?;
    file.write_all(contents.as_bytes()).with_context(|| format!("write {}", path.display()))
}

fn spawn(prefix: &Path, files: &Files) -> anyhow::Result<OwnedChild> {
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&files.log)
        .with_context(|| format!("open {}", files.log.display()))?;
    let mut command = Command::new(NGINX_BINARY);
    command
        .arg("-p")
        .arg(prefix)
        .arg("-c")
        .arg(&files.config)
        // Before the configuration is read nginx logs to its built-in path; `-e` keeps
        // even those early messages inside the prefix.
        .arg("-e")
        .arg(&files.log)
        .args(["-g", "daemon off;"])
        // Its own group, so the master and its workers can be killed together.
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(log.try_clone().context("duplicate the nginx log handle")?)
        .stderr(log);
    OwnedChild::spawn(&mut command, NGINX_BINARY)
}

/// nginx's configuration for one TLS listener on 127.0.0.1:`port` proxying everything
/// to `upstream` over mutual TLS.
fn render_config(files: &Files, options: &NginxOptions, port: u16) -> String {
    let path = |p: &Path| format!("\"{}\"", p.display());
    let temp = |name: &str| path(&files.prefix.join(TEMP_DIR).join(name));
    format!(
        r#"# Generated by the Atoll test harness (tests/src/nginx.rs).
worker_processes auto;
pid {pid};
error_log {log} warn;

events {{
    worker_connections 4096;
}}

http {{
    access_log off;
    client_body_temp_path {client_body};
    proxy_temp_path {proxy};
    fastcgi_temp_path {fastcgi};
    uwsgi_temp_path {uwsgi};
    scgi_temp_path {scgi};
    keepalive_requests {keepalive_requests};
    keepalive_timeout 300s;

    upstream shard {{
        server {upstream};
        keepalive {upstream_keepalive};
        keepalive_requests {keepalive_requests};
        keepalive_timeout 60s;
    }}

    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {serving_cert};
        ssl_certificate_key {serving_key};
        ssl_protocols TLSv1.2 TLSv1.3;

        location / {{
            proxy_pass https://shard;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_ssl_certificate {client_cert};
            proxy_ssl_certificate_key {client_key};
            proxy_ssl_trusted_certificate {ca};
            proxy_ssl_verify on;
            proxy_ssl_verify_depth 2;
            proxy_ssl_name {server_name};
            proxy_ssl_protocols TLSv1.2 TLSv1.3;
            proxy_ssl_session_reuse on;
        }}
    }}
}}
"#,
        pid = path(&files.pid),
        log = path(&files.log),
        client_body = temp("client_body"),
        proxy = temp("proxy"),
        fastcgi = temp("fastcgi"),
        uwsgi = temp("uwsgi"),
        scgi = temp("scgi"),
        upstream = options.upstream,
        upstream_keepalive = options.upstream_keepalive,
        server_name = options.upstream_server_name,
        keepalive_requests = KEEPALIVE_REQUESTS_MAX,
        serving_cert = path(&files.serving_cert),
        serving_key = path(&files.serving_key),
        client_cert = path(&files.upstream_client_cert),
        client_key = path(&files.upstream_client_key),
        ca = path(&files.upstream_ca),
    )
}

/// Every process whose process group is `pgid`, read from `/proc`.
fn process_group_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| process_group_of(*pid) == Some(pgid))
        .collect()
}

/// Field 5 (`pgrp`) of `/proc/PID/stat`. The command name before it may hold spaces
/// and parentheses, so fields are counted from the last `)`.
fn process_group_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(2)?.parse().ok()
}

/// SIGKILL to every process in group `pgid`; errors mean the group is already empty.
fn kill_process_group(pgid: u32) {
    // `kill(1)` rather than libc: the workspace forbids `unsafe`.
    let _ = Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Files {
        let prefix = PathBuf::from("/tmp/p");
        Files {
            config: prefix.join(CONFIG_FILE),
            log: prefix.join(LOG_FILE),
            pid: prefix.join(PID_FILE),
            serving_cert: prefix.join("serving.crt"),
            serving_key: prefix.join("serving.key"),
            upstream_ca: prefix.join("upstream-ca.crt"),
            upstream_client_cert: prefix.join("upstream-client.crt"),
            upstream_client_key: prefix.join("upstream-client.key"),
            prefix,
        }
    }

    #[test]
    fn config_keeps_everything_in_the_prefix_and_upstream_connections_alive() {
        let options = NginxOptions {
            upstream: "127.0.0.1:6443".to_string(),
            upstream_server_name: "localhost".to_string(),
            upstream_ca_pem: String::new(),
            upstream_client: ClientIdentity { cert_pem: String::new(), key_pem: String::new() },
            serving_cert_pem: String::new(),
            serving_key_pem: String::new(),
            upstream_keepalive: 128,
        };
        let config = render_config(&files(), &options, 8443);
        let expected = [
            "pid \"/tmp/p/nginx.pid\";",
            "error_log \"/tmp/p/nginx.log\" warn;",
            "proxy_temp_path \"/tmp/p/temp/proxy\";",
            "server 127.0.0.1:6443;",
            "keepalive 128;",
            "listen 127.0.0.1:8443 ssl;",
            "proxy_http_version 1.1;",
            "proxy_set_header Connection \"\";",
            "proxy_ssl_verify on;",
            "proxy_ssl_name localhost;",
            "proxy_ssl_certificate \"/tmp/p/upstream-client.crt\";",
            "proxy_ssl_trusted_certificate \"/tmp/p/upstream-ca.crt\";",
            "proxy_ssl_session_reuse on;",
            "proxy_buffering off;",
        ];
        for line in expected {
            assert!(config.contains(line), "missing {line:?} in:\n{config}");
        }
        // Every absolute path in the file lies inside the prefix.
        for quoted in config.split('"').skip(1).step_by(2).filter(|s| s.starts_with('/')) {
            assert!(quoted.starts_with("/tmp/p/"), "{quoted} is outside the prefix");
        }
    }

    #[test]
    fn process_group_is_read_after_the_command_name() {
        let pid = std::process::id();
        assert!(process_group_of(pid).is_some_and(|pgid| pgid > 0));
    }
}
