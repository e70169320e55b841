//! `atoll-cache-server`: holds replicas pushed by shards (and child caches), serves them
//! as list/watch, and relays them to parent caches.

use anyhow::Context;
use cache_server::{start, Config};
use clap::Parser;
use security::pki;
use std::path::PathBuf;
use std::time::Duration;
use store::StoreOptions;

/// Hold replicas of the objects every shard must see, and serve them to shards.
#[derive(Debug, Parser)]
#[command(name = "atoll-cache-server", version)]
struct Args {
    /// HTTPS address to listen on, HOST:PORT (port 0 picks a free port).
    #[arg(long)]
    listen: String,
    /// Directory for RocksDB and this process's certificates; created if missing.
    #[arg(long, env = "ATOLL_CACHE_DATA_DIR")]
    data_dir: PathBuf,
    /// Parent cache servers (`https://host:port`, comma separated, in failover order):
    /// everything this cache holds is replicated to the first one that answers.
    #[arg(long, value_delimiter = ',')]
    parent: Vec<String>,
    /// This cache's name: its sender name towards parents, and its client certificate's
    /// user `system:atoll:cache:<name>`.
    #[arg(long, default_value = "cache")]
    name: String,
    /// The installation's shared CA directory, the same the shards use [default: DATA_DIR/pki].
    #[arg(long)]
    pki_dir: Option<PathBuf>,
    /// Change-log records kept for watches; older resourceVersions get OUT_OF_RANGE (410).
    #[arg(long, default_value_t = 100_000)]
    retention_events: u64,
    /// Seconds between comparisons of the parent with this cache (drift repair).
    #[arg(long, default_value_t = 30)]
    resync_interval_seconds: u64,
    /// Seconds a deleted replica's deletion is remembered: copies of it at or below the
    /// deleted version (relayed late, e.g. by a cache a shard failed over from) are refused
    /// meanwhile. Must outlast the outages after which such copies may still arrive.
    #[arg(long, default_value_t = 600)]
    tombstone_retention_seconds: u64,
    /// Extra host names or IPs for the serving certificate (comma separated).
    #[arg(long, value_delimiter = ',')]
    tls_san: Vec<String>,
    #[command(flatten)]
    serving: pki::ServingFlags,
    /// Client certificate this cache presents to parent caches (PEM).
    #[arg(long)]
    peer_client_cert_file: Option<PathBuf>,
    /// Private key of --peer-client-cert-file (PEM).
    #[arg(long)]
    peer_client_key_file: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("start the tokio runtime")?;
    runtime.block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    let telemetry = telemetry::init(
        "atoll-cache-server",
        "info",
        Some(telemetry::Instance { attribute: "atoll.cache", name: &args.name }),
    );
    std::fs::create_dir_all(&args.data_dir).with_context(|| format!("create data dir {}", args.data_dir.display()))?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("listen on {} (expected HOST:PORT)", args.listen))?;
    let local = listener.local_addr().context("read the bound address")?;
    let mut hosts = Vec::new();
    if !local.ip().is_unspecified() {
        hosts.push(local.ip().to_string());
    }
    // A name given to --listen (e.g. a host name) must be in the certificate too.
    if let Some((host, _port)) = args.listen.rsplit_once(':') {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if !host.is_empty() && host.parse::<std::net::IpAddr>().is_err() {
            hosts.push(host.to_owned());
        }
    }
    hosts.extend(args.tls_san.iter().cloned());
    let material = pki::load(&pki::PkiOptions {
        pki_dir: args.pki_dir.clone().unwrap_or_else(|| args.data_dir.join("pki")),
        leaf_dir: args.data_dir.join("certs"),
        process_name: args.name.clone(),
        hosts,
        files: args.serving.files(args.peer_client_cert_file.clone(), args.peer_client_key_file.clone(), None),
        role: pki::Role::Cache,
    })
    .context("load or create the PKI")?;
    let config = Config {
        name: args.name.clone(),
        store_dir: args.data_dir.join("store"),
        store_options: StoreOptions { retention_events: args.retention_events, ..StoreOptions::default() },
        material,
        parents: args.parent.clone(),
        resync_interval: Duration::from_secs(args.resync_interval_seconds.max(1)),
        tombstone_retention: Duration::from_secs(args.tombstone_retention_seconds),
    };
    let running = start(config, listener).await?;
    tracing::info!(name = args.name, url = format!("https://{local}"), "atoll-cache-server ready");

    security::process::shutdown_signal().await?;
    tracing::info!("shutting down");
    running.stop().await;
    telemetry.shutdown().await;
    Ok(())
}
