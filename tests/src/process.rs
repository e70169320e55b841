//! Child processes that die with their owner, and bounded waits on them.
//!
//! Every process a test starts is wrapped in an [`OwnedChild`]: dropping it (at the end
//! of a test, on a panic, or when a benchmark is interrupted) sends SIGKILL and reaps it,
//! so no shard or etcd outlives the test and holds ports or data dirs.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::Context;

/// How often bounded waits poll a child: short enough that tests are not slowed down,
/// long enough not to burn one of the two cores.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// How much of a log file [`log_tail`] reads at most, so a huge log cannot flood an
/// error message.
const LOG_TAIL_BYTES_MAX: u64 = 64 * 1024;

/// A spawned child process that is killed and reaped when dropped.
#[derive(Debug)]
pub struct OwnedChild {
    child: Child,
    exit_status: Option<ExitStatus>,
}

impl OwnedChild {
    /// Spawns `command`; `what` names the program in the error.
    pub fn spawn(command: &mut Command, what: &str) -> anyhow::Result<OwnedChild> {
        let child = command.spawn().with_context(|| format!("spawn {what}"))?;
        Ok(OwnedChild { child, exit_status: None })
    }

    /// The operating system's id of the process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Returns the exit status if the process has exited, without blocking.
    pub fn try_exited(&mut self) -> anyhow::Result<Option<ExitStatus>> {
        if self.exit_status.is_none() {
            self.exit_status = self.child.try_wait().context("poll child process")?;
        }
        Ok(self.exit_status)
    }

    /// Sends SIGKILL and reaps the process; a process that already exited is left alone.
    pub fn kill9(&mut self) -> ExitStatus {
        if let Ok(Some(status)) = self.try_exited() {
            return status;
        }
        // Errors mean the process is already gone; `wait` below still reaps it.
        let _ = self.child.kill();
        let status = self.child.wait().expect("reap a killed child process");
        self.exit_status = Some(status);
        status
    }

    /// Sends SIGTERM and waits up to `timeout` for the process to exit.
    ///
    /// On timeout the process is killed with SIGKILL and an error is returned, because a
    /// process that ignores SIGTERM is itself a bug worth failing a test for.
    pub async fn terminate(&mut self, timeout: Duration) -> anyhow::Result<ExitStatus> {
        if let Some(status) = self.try_exited()? {
            return Ok(status);
        }
        // `kill(1)` rather than libc: the workspace forbids `unsafe`.
        let sent = Command::new("kill").arg("-TERM").arg(self.pid().to_string()).status().context("run kill -TERM")?;
        if !sent.success() {
            // The process exited between the poll above and the signal.
            if let Some(status) = self.try_exited()? {
                return Ok(status);
            }
        }
        match self.wait_exit(timeout).await? {
            Some(status) => Ok(status),
            None => {
                let status = self.kill9();
                anyhow::bail!("process {} did not exit within {timeout:?} of SIGTERM; killed it ({status})", self.pid())
            }
        }
    }

    /// Waits up to `timeout` for the process to exit by itself; `None` if it did not.
    pub async fn wait_exit(&mut self, timeout: Duration) -> anyhow::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_exited()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }
}

impl Drop for OwnedChild {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The data directory of a process: `given` (created if missing), else a new temporary
/// directory named after `prefix`, removed when the returned guard drops.
pub fn data_dir(given: Option<&Path>, prefix: &str) -> anyhow::Result<(Option<tempfile::TempDir>, PathBuf)> {
    let (temp_dir, data_dir) = match given {
        Some(dir) => (None, dir.to_path_buf()),
        None => {
            let temp = tempfile::Builder::new().prefix(prefix).tempdir().context("create a temporary data dir")?;
            let path = temp.path().to_path_buf();
            (Some(temp), path)
        }
    };
    std::fs::create_dir_all(&data_dir).with_context(|| format!("create data dir {}", data_dir.display()))?;
    Ok((temp_dir, data_dir))
}

/// Returns the last `lines` lines of the log at `path`, or a note saying why it could
/// not be read; meant for error messages, so it never fails.
pub fn log_tail(path: &Path, lines: usize) -> String {
    match read_tail(path, lines) {
        Ok(text) if text.is_empty() => format!("({} is empty)", path.display()),
        Ok(text) => text,
        Err(error) => format!("(could not read {}: {error:#})", path.display()),
    }
}

fn read_tail(path: &Path, lines: usize) -> anyhow::Result<String> {
    let mut file = File::open(path).context("open log")?;
    let len = file.metadata().context("stat log")?.len();
    let start = len.saturating_sub(LOG_TAIL_BYTES_MAX);
    file.seek(SeekFrom::Start(start)).context("seek log")?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).context("read log")?;
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    let first = all.len().saturating_sub(lines);
    Ok(all[first..].join("\n"))
}

/// `getconf CLK_TCK`, the unit of [`usage`]'s CPU time; 100 on every Linux we run.
pub fn clock_ticks_per_second() -> f64 {
    let output = std::process::Command::new("getconf").arg("CLK_TCK").output();
    output.ok().and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse::<f64>().ok()).unwrap_or(100.0)
}

/// A process's CPU time (utime + stime, in clock ticks) and resident memory (KiB), read
/// from `/proc`; zeros when it cannot be read.
pub fn usage(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command name: state is field 0, utime 11, stime 12.
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or_default().split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    (ticks(11) + ticks(12), rss)
}
