//! `atoll-shard`: serves the Kubernetes API for many logical clusters from one RocksDB.

use anyhow::Context;
use clap::Parser;
use shard::start::Config;

/// Every request allocates many small JSON nodes; mimalloc handles that pattern with far
/// less contention and fragmentation than glibc's allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = config.worker_threads {
        runtime.worker_threads(usize::from(threads));
    }
    let runtime = runtime.enable_all().build().context("start the tokio runtime")?;
    runtime.block_on(async {
        let telemetry = telemetry::init(
            "atoll-shard",
            "info",
            Some(telemetry::Instance { attribute: "atoll.shard", name: &config.name }),
        );
        let running = shard::start::start(config).await?;
        security::process::shutdown_signal().await?;
        tracing::info!("shutting down");
        running.stop().await;
        telemetry.shutdown().await;
        Ok(())
    })
}
