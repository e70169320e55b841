//! Stock `kubectl` pointed at a shard.
//!
//! Conformance with real clients is the point of speaking the Kubernetes API, so tests
//! drive the real `kubectl` binary rather than imitating it. Each invocation is bounded
//! by a timeout, and a failing `ok()` shows both output streams and the shard's log.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::process::log_tail;

/// How long one `kubectl` invocation may run unless changed with [`Kubectl::timeout`].
pub const KUBECTL_TIMEOUT: Duration = Duration::from_secs(60);

/// How many lines of the shard log a failure message includes.
const LOG_TAIL_LINES: usize = 40;

/// The result of one `kubectl` run.
#[derive(Debug)]
pub struct Output {
    /// How kubectl exited (killed by SIGKILL if it timed out).
    pub status: ExitStatus,
    /// Everything kubectl printed on stdout.
    pub stdout: String,
    /// Everything kubectl printed on stderr.
    pub stderr: String,
    /// Whether kubectl was killed for exceeding its timeout.
    pub timed_out: bool,
}

impl Output {
    /// Whether kubectl exited 0 within its timeout.
    pub fn success(&self) -> bool {
        self.status.success() && !self.timed_out
    }

    /// Parses stdout as JSON (for `-o json`).
    pub fn json(&self) -> anyhow::Result<serde_json::Value> {
        use anyhow::Context;
        serde_json::from_str(&self.stdout).with_context(|| format!("parse kubectl stdout as JSON: {}", self.stdout))
    }
}

/// A builder for one `kubectl` invocation with `KUBECONFIG` set to a shard's kubeconfig.
#[derive(Clone, Debug)]
pub struct Kubectl {
    kubeconfig: PathBuf,
    base_url: String,
    server: Option<String>,
    cache_dir: PathBuf,
    log_path: Option<PathBuf>,
    args: Vec<OsString>,
    stdin: Option<String>,
    envs: Vec<(OsString, OsString)>,
    timeout: Duration,
}

impl Kubectl {
    /// A kubectl for `kubeconfig`, whose server lives at `base_url` (`https://host:port`).
    ///
    /// `cache_dir` holds kubectl's discovery cache: kubectl keys it by host and port, and
    /// ports are reused across tests with different APIs, so a shared `~/.kube/cache`
    /// would serve one test another's discovery. `log_path` is the server log quoted on
    /// failure.
    pub fn new(kubeconfig: &Path, base_url: &str, cache_dir: &Path, log_path: Option<&Path>) -> Kubectl {
        Kubectl {
            kubeconfig: kubeconfig.to_path_buf(),
            base_url: base_url.to_string(),
            server: None,
            cache_dir: cache_dir.to_path_buf(),
            log_path: log_path.map(Path::to_path_buf),
            args: Vec::new(),
            stdin: None,
            envs: Vec::new(),
            timeout: KUBECTL_TIMEOUT,
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Kubectl {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Kubectl
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// Feeds `input` on stdin (for `apply -f -` and friends).
    pub fn stdin(mut self, input: impl Into<String>) -> Kubectl {
        self.stdin = Some(input.into());
        self
    }

    /// Sets an environment variable for kubectl.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Kubectl {
        self.envs.push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// Targets logical cluster `name` (`--server https://host:port/clusters/<name>`)
    /// instead of the kubeconfig's.
    ///
    /// `kubectl get --raw PATH` ignores the server URL's path, so raw paths must spell
    /// out `/clusters/<name>/…` themselves.
    pub fn cluster(mut self, name: &str) -> Kubectl {
        self.server = Some(format!("{}/clusters/{name}", self.base_url));
        self
    }

    /// Changes the time limit (see [`KUBECTL_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Kubectl {
        self.timeout = timeout;
        self
    }

    /// The command line, for messages.
    pub fn command_line(&self) -> String {
        let mut line = String::from("kubectl");
        for arg in self.full_args() {
            line.push(' ');
            line.push_str(&arg.to_string_lossy());
        }
        line
    }

    /// Runs kubectl to completion (or its timeout) and returns what happened.
    ///
    /// This blocks the calling thread; in async tests that also poll in-process futures
    /// (a kube watch, say) use [`Kubectl::run_async`] instead.
    ///
    /// # Panics
    /// If `kubectl` cannot be started at all (not installed): no test can pass then.
    pub fn run(&self) -> Output {
        let mut command = Command::new("kubectl");
        command
            .args(self.full_args())
            .env("KUBECONFIG", &self.kubeconfig)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child =
            command.spawn().unwrap_or_else(|e| panic!("start `kubectl` (is it installed and on PATH?): {e}"));
        let stdin_writer = self.stdin.clone().map(|input| {
            let mut pipe = child.stdin.take().expect("stdin is piped");
            // A writer thread, because kubectl may not read stdin before filling its
            // stdout pipe; writing inline could deadlock on large manifests.
            std::thread::spawn(move || {
                let _ = pipe.write_all(input.as_bytes());
            })
        });
        let stdout = drain(child.stdout.take().expect("stdout is piped"));
        let stderr = drain(child.stderr.take().expect("stderr is piped"));
        let (status, timed_out) = wait_bounded(&mut child, self.timeout);
        if let Some(writer) = stdin_writer {
            let _ = writer.join();
        }
        Output {
            status,
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
            timed_out,
        }
    }

    /// [`Kubectl::run`] on a blocking thread, so the async runtime keeps running.
    pub async fn run_async(self) -> Output {
        tokio::task::spawn_blocking(move || self.run()).await.expect("kubectl runner thread panicked")
    }

    /// Runs kubectl and panics, quoting both streams and the shard log, unless it
    /// succeeded.
    pub fn ok(&self) -> Output {
        let output = self.run();
        if !output.success() {
            panic!("{}", self.failure_message("failed", &output));
        }
        output
    }

    /// Removes every finalizer of a namespaced object with a merge patch (panics on failure),
    /// releasing an object a test held back.
    pub fn clear_finalizers(self, resource: &str, name: &str, namespace: &str) -> Output {
        let patch = r#"{"metadata":{"finalizers":null}}"#;
        self.args(["patch", resource, name, "-n", namespace, "--type", "merge", "-p", patch]).ok()
    }

    /// Runs kubectl and panics unless it failed (for negative tests).
    pub fn fails(&self) -> Output {
        let output = self.run();
        if output.success() || output.timed_out {
            panic!("{}", self.failure_message("was expected to fail but did not", &output));
        }
        output
    }

    fn failure_message(&self, what: &str, output: &Output) -> String {
        let log = match &self.log_path {
            Some(path) => format!("\n--- tail of {} ---\n{}", path.display(), log_tail(path, LOG_TAIL_LINES)),
            None => String::new(),
        };
        format!(
            "`{}` {what} ({}{})\n--- stdout ---\n{}\n--- stderr ---\n{}{log}",
            self.command_line(),
            output.status,
            if output.timed_out { ", timed out" } else { "" },
            output.stdout,
            output.stderr,
        )
    }

    fn full_args(&self) -> Vec<OsString> {
        let mut args = vec![OsString::from("--cache-dir"), self.cache_dir.clone().into()];
        if let Some(server) = &self.server {
            args.push("--server".into());
            args.push(server.into());
        }
        args.extend(self.args.iter().cloned());
        args
    }
}

fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Waits for `child` up to `timeout`, killing it when the time is up.
fn wait_bounded(child: &mut std::process::Child, timeout: Duration) -> (ExitStatus, bool) {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return (status, false),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let status = child.wait().expect("reap killed kubectl");
                return (status, true);
            }
        }
    }
}
