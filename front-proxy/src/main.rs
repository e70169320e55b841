//! `atoll-front-proxy`: one HTTPS endpoint for the whole installation.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use front_proxy::feed::{self, Routing};
use front_proxy::metrics::Metrics;
use front_proxy::proxy::Proxy;
use front_proxy::upstream::Upstream;
use front_proxy::workers;
use security::authn::{Authenticator, TokenFile};
use security::{pki, tls};

/// Every proxied request allocates a few small buffers on two threads; mimalloc keeps
/// that cheap, as in the shard.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Serve every workspace of an Atoll installation on one HTTPS endpoint.
#[derive(Debug, Parser)]
#[command(name = "atoll-front-proxy", version)]
struct Args {
    /// HTTPS address to listen on (port 0 picks a free port; admin.kubeconfig names the real one).
    #[arg(long, default_value = "127.0.0.1:6440")]
    listen: SocketAddr,
    /// Base URL of the root shard (`https://host:port`); the other shards are learnt from it.
    #[arg(long)]
    root_shard: String,
    /// Directory for this proxy's certificates, the remembered shard set and admin.kubeconfig.
    #[arg(long, env = "ATOLL_FRONT_PROXY_DATA_DIR")]
    data_dir: PathBuf,
    /// The installation's shared CA directory [default: DATA_DIR/pki].
    #[arg(long)]
    pki_dir: Option<PathBuf>,
    /// This proxy's name (its client certificate is `system:atoll:front-proxy:<name>`).
    #[arg(long, default_value = "front-proxy")]
    name: String,
    /// kube-apiserver style static token file: `token,user,uid,"group1,group2"` per line.
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// Let requests without credentials through as `system:anonymous`.
    #[arg(long)]
    anonymous_auth: bool,
    /// Extra host names or IPs for the serving certificate (comma separated).
    #[arg(long, value_delimiter = ',')]
    tls_san: Vec<String>,
    #[command(flatten)]
    serving: pki::ServingFlags,
    /// Client certificate the proxy presents to shards, signed by their front-proxy CA (PEM).
    #[arg(long)]
    proxy_client_cert_file: Option<PathBuf>,
    /// Private key of --proxy-client-cert-file (PEM).
    #[arg(long)]
    proxy_client_key_file: Option<PathBuf>,
    /// How long after the start `/readyz` waits for the routing index of every known shard
    /// before it reports ready with the shards that answered (a dead shard must not keep
    /// the proxy out of its load balancer; its unknown paths keep answering 503).
    #[arg(long, default_value_t = front_proxy::sync_gate::READY_GRACE.as_secs())]
    ready_grace_seconds: u64,
    /// Worker threads serving requests, each with its own listener and connection pool
    /// [default: one per CPU].
    #[arg(long)]
    workers: Option<usize>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // The main runtime runs the index feeds and waits for the signal; requests are served
    // by the workers' own runtimes.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("start the runtime")?;
    runtime.block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    let telemetry = telemetry::init("atoll-front-proxy", "info", None);
    std::fs::create_dir_all(&args.data_dir).with_context(|| format!("create data dir {}", args.data_dir.display()))?;
    let workers =
        args.workers.unwrap_or_else(|| std::thread::available_parallelism().map(usize::from).unwrap_or(1)).max(1);
    let listeners = workers::bind(args.listen, workers)?;
    let local = listeners[0].local_addr().context("read the bound address")?;
    let host = if local.ip().is_unspecified() { "127.0.0.1".to_string() } else { local.ip().to_string() };
    let authority =
        if host.contains(':') { format!("[{host}]:{}", local.port()) } else { format!("{host}:{}", local.port()) };
    let mut hosts = vec![host.clone()];
    hosts.extend(args.tls_san.iter().cloned());

    let material = pki::load(&pki::PkiOptions {
        pki_dir: args.pki_dir.clone().unwrap_or_else(|| args.data_dir.join("pki")),
        leaf_dir: args.data_dir.join("certs"),
        process_name: args.name.clone(),
        hosts,
        files: args.serving.files(args.proxy_client_cert_file.clone(), args.proxy_client_key_file.clone(), None),
        role: pki::Role::FrontProxy,
    })
    .context("load or create the PKI")?;
    // Users present client-CA certificates; the front-proxy CA is for shards to trust.
    let user_facing = pki::ServingMaterial { front_proxy_ca_cert_pem: None, ..material.clone() };
    let tls_config = tls::server_config(&user_facing).context("build the TLS configuration")?;
    let tokens = match &args.token_auth_file {
        Some(path) => Some(TokenFile::load(path)?),
        None => None,
    };
    let (ca, cert, key, name) = (
        material.ca_cert_pem.clone(),
        material.peer_client_cert_pem.clone(),
        material.peer_client_key_pem.clone(),
        args.name.clone(),
    );
    let connect = move || Upstream::new(&ca, &cert, &key, &name);
    let upstream = connect()?;
    let root_shard_url = args.root_shard.trim_end_matches('/').to_owned();
    let ready_grace = std::time::Duration::from_secs(args.ready_grace_seconds);
    let routing = Arc::new(Routing::new(args.data_dir.join("shards.json"), ready_grace));
    tokio::spawn(feed::run(routing.clone(), upstream.clone(), root_shard_url.clone()));
    let metrics = Arc::new(Metrics::new(&routing.feed_lag));
    let proxy = Proxy {
        authn: Arc::new(Authenticator::new(tokens, None)?),
        anonymous: args.anonymous_auth,
        routing,
        upstream,
        root_shard_url,
        metrics,
    };

    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    let threads = workers::spawn(listeners, tls_config, shutdown_rx, move || {
        Ok(Arc::new(Proxy { upstream: connect()?, ..proxy.clone() }))
    })?;
    let url = format!("https://{authority}");
    let kubeconfig = args.data_dir.join("admin.kubeconfig");
    if let Some((admin_cert, admin_key)) = material.admin_credential() {
        pki::write_kubeconfig(
            &kubeconfig,
            &format!("{url}/clusters/root"),
            &material.ca_cert_pem,
            admin_cert,
            admin_key,
        )
        .context("write admin.kubeconfig")?;
    }
    tracing::info!(%url, kubeconfig = %kubeconfig.display(), "front-proxy serving");

    security::process::shutdown_signal().await?;
    tracing::info!("shutting down");
    let _ = shutdown_tx.send(true);
    let _ = tokio::task::spawn_blocking(move || threads.into_iter().for_each(|thread| drop(thread.join()))).await;
    telemetry.shutdown().await;
    Ok(())
}
