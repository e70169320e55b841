//! `atoll-shard`: serves the Kubernetes API for many logical clusters from one RocksDB.

use anyhow::Context;
use clap::Parser;
use protocol::path::ROOT;
use protocol::ring::ClusterNames;
use security::authn::{Authenticator, TokenFile};
use security::{pki, tls};
use shard::membership::Membership;
use shard::metrics::Metrics;
use shard::paths::PathIndex;
use shard::peer::{PeerCredentials, Peers};
use shard::registry::Registry;
use shard::state::Shard;
use shard::{bootstrap, controllers, replication, server};
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
    /// Directory for RocksDB, this process's certificates, the shard set and admin.kubeconfig; created if missing.
    #[arg(long, env = "ATOLL_DATA_DIR")]
    data_dir: PathBuf,
    /// The installation's shared CA directory (CA, client CA, front-proxy CA), created on first use
    /// [default: DATA_DIR/pki].
    #[arg(long)]
    pki_dir: Option<PathBuf>,
    /// Base URL of the root shard (`https://host:port`): this shard joins that installation.
    /// Without it, this process is the root shard and needs --root.
    #[arg(long)]
    root_shard: Option<String>,
    /// URL clients use to reach this shard, published in its Shard object and workspace URLs
    /// [default: the listen URL].
    #[arg(long)]
    external_url: Option<String>,
    /// Draw logical-cluster names from this seed instead of at random (deterministic tests).
    #[arg(long, hide = true)]
    workspace_name_seed: Option<u64>,
    #[command(flatten)]
    serving: pki::ServingFlags,
    /// Client certificate this shard presents to other shards (PEM).
    #[arg(long)]
    peer_client_cert_file: Option<PathBuf>,
    /// Private key of --peer-client-cert-file (PEM).
    #[arg(long)]
    peer_client_key_file: Option<PathBuf>,
    /// CA of the front-proxy's client certificate (PEM).
    #[arg(long)]
    front_proxy_ca_file: Option<PathBuf>,
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
    /// Cache servers this shard replicates to (`https://host:port`, comma separated), tried in order: when one
    /// fails the next takes over.
    #[arg(long, value_delimiter = ',')]
    cache_server: Vec<String>,
    /// Cache servers this shard's cache informers read other shards' objects from, in failover order (the top of
    /// a cache hierarchy) [default: --cache-server].
    #[arg(long, value_delimiter = ',')]
    cache_watch_server: Vec<String>,
    /// Seconds between full comparisons of this shard's replicas with its cache, which repair drift there.
    #[arg(long, default_value_t = 30)]
    cache_resync_interval_seconds: u64,
}

/// Starts replication to the cache servers and the cache informer, when caches are configured.
fn start_replication(shard: &Arc<Shard>, args: &Args, material: &pki::ServingMaterial) -> anyhow::Result<()> {
    let trim = |urls: &[String]| -> Vec<String> {
        urls.iter().map(|u| u.trim().trim_end_matches('/').to_string()).filter(|u| !u.is_empty()).collect()
    };
    let writes = trim(&args.cache_server);
    let mut reads = trim(&args.cache_watch_server);
    if reads.is_empty() {
        reads = writes.clone();
    }
    if writes.is_empty() && reads.is_empty() {
        return Ok(());
    }
    let client =
        security::grpc::client(&material.ca_cert_pem, &material.peer_client_cert_pem, &material.peer_client_key_pem)
            .context("build the cache server client")?;
    let replication = replication::Replication {
        urls: writes,
        client: client.clone(),
        resync: Duration::from_secs(args.cache_resync_interval_seconds.max(1)),
    };
    tokio::spawn(replication::run(shard.clone(), replication));
    tokio::spawn(shard::cache::run(shard.cache.clone(), reads, client));
    Ok(())
}

fn main() -> anyhow::Result<()> {
    security::process::init_logging();
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
    anyhow::ensure!(
        args.root || args.root_shard.is_some(),
        "say which installation this shard belongs to: --root for the root shard, or --root-shard URL to join one"
    );
    anyhow::ensure!(
        !(args.root && args.root_shard.is_some()),
        "--root and --root-shard exclude each other: the root shard is the one others join"
    );
    let pki_options = pki::PkiOptions {
        pki_dir: args.pki_dir.clone().unwrap_or_else(|| args.data_dir.join("pki")),
        leaf_dir: args.data_dir.join("certs"),
        process_name: args.name.clone(),
        hosts: hosts.clone(),
        files: args.serving.files(
            args.peer_client_cert_file.clone(),
            args.peer_client_key_file.clone(),
            args.front_proxy_ca_file.clone(),
        ),
        role: pki::Role::Shard,
    };
    let material = pki::load(&pki_options).context("load or create the PKI")?;
    // With one CA for both, every user certificate would count as a front-proxy's and
    // could name any user in identity headers.
    anyhow::ensure!(
        material.front_proxy_ca_cert_pem.as_deref() != Some(material.client_ca_cert_pem.as_str()),
        "--front-proxy-ca-file must not be the client CA: user certificates would be trusted to send identity headers"
    );
    let tls_config = tls::server_config(&material).context("build the TLS configuration")?;
    let tokens = match &args.token_auth_file {
        Some(path) => Some(TokenFile::load(path).with_context(|| format!("load token file {}", path.display()))?),
        None => None,
    };
    let authority =
        if host.contains(':') { format!("[{host}]:{}", local.port()) } else { format!("{host}:{}", local.port()) };
    let metrics = Metrics::new();
    let base_url = format!("https://{authority}");
    let membership = Membership::load(args.data_dir.join("membership.json"), metrics.ring_shards.clone());
    let peers = Peers::new(PeerCredentials {
        server_ca_pem: material.ca_cert_pem.clone(),
        client_cert_pem: material.peer_client_cert_pem.clone(),
        client_key_pem: material.peer_client_key_pem.clone(),
    });
    let shard = Arc::new(Shard {
        name: args.name.clone(),
        store,
        registry: Registry::builtin(),
        authn: Authenticator::new(tokens, material.front_proxy_ca_cert_pem.as_deref())
            .context("read the front-proxy CA")?,
        metrics,
        external_url: args
            .external_url
            .clone()
            .map(|u| u.trim_end_matches('/').to_string())
            .unwrap_or_else(|| base_url.clone()),
        base_url,
        root_shard_url: args.root_shard.clone().map(|u| u.trim_end_matches('/').to_string()),
        paths: PathIndex::default(),
        membership,
        peers,
        cluster_names: match args.workspace_name_seed {
            Some(seed) => ClusterNames::seeded(seed),
            None => ClusterNames::random(),
        },
        cache: Arc::default(),
    });
    shard.paths.load(&shard).context("index the canonical paths of the hosted logical clusters")?;
    shard
        .registry
        .custom()
        .load(&shard)
        .context("index the CustomResourceDefinitions of the hosted logical clusters")?;
    shard.registry.bound().load(&shard).context("index the APIBindings of the hosted logical clusters")?;
    if args.root {
        bootstrap::ensure_root_cluster(&shard).await?;
        shard::binding::system::ensure_on_root(&shard).await.context("create root's system APIExports")?;
    } else if let Some(root_url) = shard.root_shard_url.clone() {
        let file = shard::binding::system::identities_file(&args.data_dir);
        tokio::spawn(shard::binding::system::load_or_fetch(shard.clone(), root_url, file));
    }
    controllers::start(shard.clone());
    start_replication(&shard, &args, &material)?;

    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    let serving = tokio::spawn(server::serve(listener, tls_config, shard.clone(), shutdown_rx));
    let kubeconfig = args.data_dir.join("admin.kubeconfig");
    let server_url = format!("{}/clusters/{ROOT}", shard.base_url);
    // With explicit certificate files there is no client CA key to mint an admin from.
    if let Some((admin_cert, admin_key)) = material.admin_credential() {
        pki::write_kubeconfig(&kubeconfig, &server_url, &material.ca_cert_pem, admin_cert, admin_key)
            .context("write admin.kubeconfig")?;
    }
    tracing::info!(shard = %args.name, url = %shard.base_url, kubeconfig = %kubeconfig.display(), "serving");

    security::process::shutdown_signal().await?;
    tracing::info!("shutting down");
    let _ = shutdown_tx.send(true);
    let _ = serving.await;
    Ok(())
}
