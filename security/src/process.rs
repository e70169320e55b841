//! What every server binary does at stop: the stop signal. (Logging and traces are set up
//! by the `telemetry` crate.)

/// Resolves when the process is asked to stop: SIGTERM or Ctrl-C.
pub async fn shutdown_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(|e| anyhow::anyhow!("install the SIGTERM handler: {e}"))?;
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}
