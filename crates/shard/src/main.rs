//! `atoll-shard`: serves the Kubernetes API for many logical clusters from one RocksDB.

use anyhow::Context;
use clap::Parser;
use shard::authn::{Authenticator, TokenFile};
use shard::metrics::Metrics;
use shard::registry::Registry;
use shard::state::{Shard, ROOT_CLUSTER};
use shard::{bootstrap, controllers, pki, server, tls};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use store::{Store, StoreOptions};

/// Every request allocates many small JSON nodes; mimalloc handles that pattern with far
/// less contention and fragmentation than glibc's allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Serve the Kubernetes API for many logical clusters, stored durably in RocksDB.
#[derive(Debug, Parser)]
#[command(name = "atoll-shard", version)]
struct Args {
    /// Directory for RocksDB, the generated PKI and admin.kubeconfig; created if missing.
    #[arg(long, env = "ATOLL_DATA_DIR")]
    data_dir: PathBuf,
    /// HTTPS address to listen on (port 0 picks a free port; admin.kubeconfig names the real one).
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// This shard's name.
    #[arg(long, default_value = "root")]
    name: String,
    /// This shard hosts the `root` logical cluster (created on first start).
    #[arg(long)]
    root: bool,
    /// kube-apiserver style static token file: `token,user,uid,"group1,group2"` per line.
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// Extra host names or IPs for the serving certificate (comma separated).
    #[arg(long, value_delimiter = ',')]
    tls_san: Vec<String>,
    /// Change-log records kept for watches and consistent paging; older resourceVersions get 410 Gone.
    #[arg(long, default_value_t = 100_000)]
    retention_events: u64,
    /// Seconds between change-log compactions.
    #[arg(long, default_value_t = 5)]
    compaction_interval_seconds: u64,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args = Args::parse();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("start the tokio runtime")?;
    runtime.block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.data_dir).with_context(|| format!("create data dir {}", args.data_dir.display()))?;
    let store_options = StoreOptions {
        retention_events: args.retention_events,
        compaction_interval: Duration::from_secs(args.compaction_interval_seconds.max(1)),
        ..StoreOptions::default()
    };
    let store_dir = args.data_dir.join("store");
    let store =
        Store::open(&store_dir, store_options).with_context(|| format!("open rocksdb at {}", store_dir.display()))?;

    let listener =
        tokio::net::TcpListener::bind(args.listen).await.with_context(|| format!("listen on {}", args.listen))?;
    let local = listener.local_addr().context("read the bound address")?;
    let host = if local.ip().is_unspecified() { "127.0.0.1".to_string() } else { local.ip().to_string() };
    let mut hosts = vec![host.clone()];
    hosts.extend(args.tls_san.iter().cloned());
    let material = pki::load_or_create(&args.data_dir, &hosts).context("load or create the PKI")?;
    let tls_config = tls::server_config(&material).context("build the TLS configuration")?;
    let tokens = match &args.token_auth_file {
        Some(path) => Some(TokenFile::load(path).with_context(|| format!("load token file {}", path.display()))?),
        None => None,
    };
    let authority =
        if host.contains(':') { format!("[{host}]:{}", local.port()) } else { format!("{host}:{}", local.port()) };
    let shard = Arc::new(Shard {
        name: args.name.clone(),
        store,
        registry: Registry::builtin(),
        authn: Authenticator::new(tokens),
        metrics: Metrics::new(),
        base_url: format!("https://{authority}"),
    });
    if args.root {
        bootstrap::ensure_root_cluster(&shard).await?;
    }
    controllers::start(shard.clone());

    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    let serving = tokio::spawn(server::serve(listener, tls_config, shard.clone(), shutdown_rx));
    let kubeconfig = args.data_dir.join("admin.kubeconfig");
    let server_url = format!("{}/clusters/{ROOT_CLUSTER}", shard.base_url);
    pki::write_kubeconfig(
        &kubeconfig,
        &server_url,
        &material.ca_cert_pem,
        &material.admin_cert_pem,
        &material.admin_key_pem,
    )
    .context("write admin.kubeconfig")?;
    tracing::info!(shard = %args.name, url = %shard.base_url, kubeconfig = %kubeconfig.display(), "serving");

    wait_for_signal().await?;
    tracing::info!("shutting down");
    let _ = shutdown_tx.send(true);
    let _ = serving.await;
    Ok(())
}

async fn wait_for_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("install the SIGTERM handler")?;
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}
