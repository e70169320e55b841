//! Process faults: SIGSTOP / SIGCONT on a shard (kill -9 and restart come from the
//! harness's [`tests::ShardProcess`]). Signals go through `kill(1)` because the
//! workspace forbids `unsafe`, and with it a direct `libc::kill`.

use std::process::Command;

use anyhow::Context;

/// Sends `signal` (`STOP`, `CONT`) to `pid`.
pub fn signal(pid: u32, signal: &str) -> anyhow::Result<()> {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .with_context(|| format!("run kill -{signal} {pid}"))?;
    anyhow::ensure!(status.success(), "kill -{signal} {pid} failed: {status}");
    Ok(())
}

/// Freezes a process: it keeps its sockets open but answers nothing.
pub fn pause(pid: u32) -> anyhow::Result<()> {
    signal(pid, "STOP")
}

/// Lets a frozen process run again.
pub fn resume(pid: u32) -> anyhow::Result<()> {
    signal(pid, "CONT")
}
