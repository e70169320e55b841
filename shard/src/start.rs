//! Starting a shard: the wiring from a [`Config`] (the command line of `atoll-shard`) to a
//! serving shard, in-process. `main.rs` only parses flags and waits for a signal; tests
//! start shards here without spawning the binary.

use crate::membership::Membership;
use crate::metrics::Metrics;
use crate::paths::PathIndex;
use crate::peer::{PeerCredentials, Peers};
use crate::state::Shard;
use crate::{assemble, bootstrap, replication, server};
use anyhow::Context;
use apiserver::registry::Core;
use clap::Parser;
use protocol::path::ROOT as ROOT_CLUSTER;
use protocol::ring::ClusterNames;
use security::authn::{Authenticator, TokenFile};
use security::{pki, tls};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use store::{Store, StoreOptions};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Serve the Kubernetes API for many logical clusters, stored durably in RocksDB.
#[derive(Debug, Parser)]
#[command(name = "atoll-shard", version)]
pub struct Config {
    /// Directory for RocksDB, this process's certificates, the shard set and admin.kubeconfig; created if missing.
    #[arg(long, env = "ATOLL_DATA_DIR")]
    pub data_dir: PathBuf,
    /// The installation's shared CA directory (CA, client CA, front-proxy CA), created on first use
    /// [default: DATA_DIR/pki].
    #[arg(long)]
    pub pki_dir: Option<PathBuf>,
    /// Base URL of the root shard (`https://host:port`): this shard joins that installation.
    /// Without it, this process is the root shard and needs --root.
    #[arg(long)]
    pub root_shard: Option<String>,
    /// URL clients use to reach this shard, published in its Shard object and workspace URLs
    /// [default: the listen URL].
    #[arg(long)]
    pub external_url: Option<String>,
    /// URL other shards and front-proxies reach this shard at, published as its Shard
    /// object's `spec.baseURL` (kcp's `--shard-base-url`), e.g. `https://shard-1.atoll:6443`
    /// where hosts have DNS names; its host joins the serving certificate's names
    /// [default: https://<listen address>].
    #[arg(long, value_parser = parse_base_url)]
    pub shard_base_url: Option<String>,
    /// Draw logical-cluster names from this seed instead of at random (deterministic tests).
    #[arg(long, hide = true)]
    pub workspace_name_seed: Option<u64>,
    #[command(flatten)]
    pub serving: pki::ServingFlags,
    /// Client certificate this shard presents to other shards (PEM).
    #[arg(long)]
    pub peer_client_cert_file: Option<PathBuf>,
    /// Private key of --peer-client-cert-file (PEM).
    #[arg(long)]
    pub peer_client_key_file: Option<PathBuf>,
    /// CA of the front-proxy's client certificate (PEM).
    #[arg(long)]
    pub front_proxy_ca_file: Option<PathBuf>,
    /// Common names of the front-proxy client certificates whose identity headers (`X-Remote-*`) this shard
    /// believes, comma separated (kube's flag); another certificate of the front-proxy CA is refused (401)
    /// [default: empty, any certificate of the front-proxy CA, as in kube].
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,
    /// HTTPS address to listen on (port 0 picks a free port; admin.kubeconfig names the real one).
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: SocketAddr,
    /// This shard's name.
    #[arg(long, default_value = "root")]
    pub name: String,
    /// This shard hosts the `root` logical cluster (created on first start).
    #[arg(long)]
    pub root: bool,
    /// kube-apiserver style static token file: `token,user,uid,"group1,group2"` per line.
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,
    /// Extra host names or IPs for the serving certificate (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub tls_san: Vec<String>,
    /// Change-log records kept for watches and consistent paging; older resourceVersions get 410 Gone.
    #[arg(long, default_value_t = 100_000)]
    pub retention_events: u64,
    /// Seconds between change-log compactions.
    #[arg(long, default_value_t = 5)]
    pub compaction_interval_seconds: u64,
    /// Cache servers this shard replicates to (`https://host:port`, comma separated), tried in order: when one
    /// fails the next takes over.
    #[arg(long, value_delimiter = ',')]
    pub cache_server: Vec<String>,
    /// Cache servers this shard's cache informers read other shards' objects from, in failover order (the top of
    /// a cache hierarchy) [default: --cache-server].
    #[arg(long, value_delimiter = ',')]
    pub cache_watch_server: Vec<String>,
    /// Seconds between full comparisons of this shard's replicas with its cache, which repair drift there.
    #[arg(long, default_value_t = 30)]
    pub cache_resync_interval_seconds: u64,
    /// Seconds a namespace keeps a SyncTarget's label after that target stopped being chosen for it (kcp: 5), so
    /// the agent can delete downstream first.
    #[arg(long, default_value_t = 5.0)]
    pub placement_removal_grace_seconds: f64,
    /// Seconds without an agent heartbeat after which a SyncTarget is not Ready (kcp: 60).
    #[arg(long, default_value_t = 60.0)]
    pub sync_target_heartbeat_threshold_seconds: f64,
    /// Seconds without a Fleet member agent's heartbeat (or unhealthy) after which the member gets no new
    /// placements; what it has stays (KubeFleet: 300).
    #[arg(long, default_value_t = 300.0)]
    pub fleet_heartbeat_timeout_seconds: f64,
    /// Seconds a deleted Fleet MemberCluster waits for its agent to leave before the hub removes its namespace
    /// and Works all the same (KubeFleet's --force-delete-wait-time: 15 minutes).
    #[arg(long, default_value_t = 900.0)]
    pub fleet_force_delete_wait_seconds: f64,
    /// Seconds within which score-only changes (OCM add-on scores, resource figures; Fleet placements that opt in
    /// to rescheduling) move a placement's decisions at most once; a placement's
    /// `placement.atoll.io/disruption-interval-seconds` annotation overrides it (OCM discusses one minute).
    #[arg(long, default_value_t = 60.0)]
    pub placement_damping_seconds: f64,
    /// Seconds another shard may fail every probe before the Workspaces here whose logical clusters it hosts go
    /// `Unavailable` (condition WorkspaceShardAvailable); they are `Ready` again at its first answer.
    #[arg(long, default_value_t = 30.0)]
    pub shard_unavailable_grace_seconds: f64,
    /// Threads that serve requests and run the controllers [default: `TOKIO_WORKER_THREADS`, else the CPUs this
    /// process may use]. The store's writer and RocksDB's compaction run on threads of their own beside them, so a
    /// shard that shares its CPUs with other busy processes can do more with fewer.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,
}

/// Starts replication to the cache servers and the cache informer, when caches are configured.
fn start_replication(shard: &Arc<Shard>, args: &Config, material: &pki::ServingMaterial) -> anyhow::Result<()> {
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
    tokio::spawn(crate::cache::run(shard.cache.clone(), reads, client));
    Ok(())
}

/// A shard serving in this process.
pub struct Running {
    /// The shard's state, for in-process inspection.
    pub shard: Arc<Shard>,
    /// `https://host:port` it serves on (the real port when `--listen` asked for port 0).
    pub base_url: String,
    /// The admin kubeconfig it wrote (absent with explicit certificate files).
    pub admin_kubeconfig: PathBuf,
    shutdown: watch::Sender<bool>,
    serving: JoinHandle<()>,
}

impl Running {
    /// Stops accepting connections and drains the open ones.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        let _ = self.serving.await;
    }
}

/// Opens the store, loads the PKI, assembles the shard from the core and its features,
/// bootstraps (root) or joins, starts controllers and replication, and serves.
pub async fn start(args: Config) -> anyhow::Result<Running> {
    std::fs::create_dir_all(&args.data_dir).with_context(|| format!("create data dir {}", args.data_dir.display()))?;
    let store_options = StoreOptions {
        retention_events: args.retention_events,
        compaction_interval: Duration::from_secs(args.compaction_interval_seconds.max(1)),
        ..StoreOptions::default()
    };
    let store_dir = args.data_dir.join("store");
    let store =
        Store::open(&store_dir, store_options).with_context(|| format!("open rocksdb at {}", store_dir.display()))?;

    let listener = TcpListener::bind(args.listen).await.with_context(|| format!("listen on {}", args.listen))?;
    let local = listener.local_addr().context("read the bound address")?;
    let host = if local.ip().is_unspecified() { "127.0.0.1".to_string() } else { local.ip().to_string() };
    let (material, tls_config) = load_pki(&args, &host)?;
    let authority =
        if host.contains(':') { format!("[{host}]:{}", local.port()) } else { format!("{host}:{}", local.port()) };
    let base_url = args.shard_base_url.clone().unwrap_or_else(|| format!("https://{authority}"));
    let (shard, handles) = assemble_shard(&args, store, &material, base_url)?;
    shard.paths.load(&shard).context("index the canonical paths of the hosted logical clusters")?;
    crate::crd::load_index(&shard).context("index the CustomResourceDefinitions of the hosted logical clusters")?;
    let bindings = &handles.bindings;
    bindings.bound.load(&shard).context("index the APIBindings of the hosted logical clusters")?;
    if args.root {
        bootstrap::ensure_root_cluster(&shard).await?;
        let system = &bindings.system;
        crate::binding::system::ensure_on_root(&shard, system).await.context("create root's system APIExports")?;
    } else if let Some(root_url) = shard.root_shard_url.clone() {
        let file = crate::binding::system::identities_file(&args.data_dir);
        let system = bindings.system.clone();
        tokio::spawn(crate::binding::system::load_or_fetch(shard.clone(), system, root_url, file));
    }
    let tmc = crate::tmc::Settings {
        removal_grace: Duration::from_secs_f64(args.placement_removal_grace_seconds.max(0.0)),
        heartbeat_threshold: Duration::from_secs_f64(args.sync_target_heartbeat_threshold_seconds.max(0.1)),
    };
    let eligibility = crate::fleet::policy::Eligibility {
        heartbeat_timeout: Duration::from_secs_f64(args.fleet_heartbeat_timeout_seconds.max(0.1)),
        unhealthy_timeout: Duration::from_secs_f64(args.fleet_heartbeat_timeout_seconds.max(0.1)),
    };
    let force_delete_wait = Duration::from_secs_f64(args.fleet_force_delete_wait_seconds.max(0.0));
    let damping = Duration::from_secs_f64(args.placement_damping_seconds.max(0.0));
    let fleet = crate::fleet::controller::Settings { eligibility, force_delete_wait, damping };
    let health = crate::controllers::shard_health::Settings {
        grace: Duration::from_secs_f64(args.shard_unavailable_grace_seconds.max(0.0)),
    };
    let ocm = crate::ocm::controller::Settings { damping };
    assemble::start_controllers(shard.clone(), handles, tmc, fleet, ocm, health);
    start_replication(&shard, &args, &material)?;

    let (shutdown, shutdown_rx) = watch::channel(false);
    let serving = tokio::spawn(server::serve(listener, tls_config, shard.clone(), shutdown_rx));
    let kubeconfig = args.data_dir.join("admin.kubeconfig");
    let server_url = format!("{}/clusters/{ROOT_CLUSTER}", shard.base_url);
    // With explicit certificate files there is no client CA key to mint an admin from.
    if let Some((admin_cert, admin_key)) = material.admin_credential() {
        pki::write_kubeconfig(&kubeconfig, &server_url, &material.ca_cert_pem, admin_cert, admin_key)
            .context("write admin.kubeconfig")?;
    }
    tracing::info!(shard = %args.name, url = %shard.base_url, kubeconfig = %kubeconfig.display(), "serving");

    Ok(Running { base_url: shard.base_url.clone(), shard, admin_kubeconfig: kubeconfig, shutdown, serving })
}

/// A shard base URL: `https://host[:port]`, no path; stored without a trailing slash.
fn parse_base_url(value: &str) -> Result<String, String> {
    let url = value.trim_end_matches('/');
    let uri: http::Uri = url.parse().map_err(|e| format!("not a URL: {e}"))?;
    if uri.scheme_str() != Some("https") || uri.host().is_none() {
        return Err("give https://host[:port]".into());
    }
    if !matches!(uri.path(), "" | "/") {
        return Err("give the shard's root URL, without a path".into());
    }
    Ok(url.to_string())
}

/// The installation's certificates for this shard, and its TLS configuration.
fn load_pki(args: &Config, host: &str) -> anyhow::Result<(pki::ServingMaterial, Arc<rustls::ServerConfig>)> {
    let mut hosts = vec![host.to_string()];
    hosts.extend(args.tls_san.iter().cloned());
    if let Some(base) = args.shard_base_url.as_deref().and_then(|url| url.parse::<http::Uri>().ok()) {
        hosts.extend(base.host().map(|h| h.trim_start_matches('[').trim_end_matches(']').to_string()));
    }
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
    Ok((material, tls_config))
}

/// Builds the shard around the core: the features' strategies are registered into the
/// table while the shard is constructed (they keep a weak reference to it).
fn assemble_shard(
    args: &Config,
    store: Store,
    material: &pki::ServingMaterial,
    base_url: String,
) -> anyhow::Result<(Arc<Shard>, assemble::Handles)> {
    let tokens = match &args.token_auth_file {
        Some(path) => Some(TokenFile::load(path).with_context(|| format!("load token file {}", path.display()))?),
        None => None,
    };
    let core_metrics = apiserver::metrics::CoreMetrics::default();
    let metrics = Metrics::new(&core_metrics, &store);
    let membership = Membership::load(args.data_dir.join("membership.json"), metrics.ring_shards.clone());
    let peers = Peers::new(PeerCredentials {
        server_ca_pem: material.ca_cert_pem.clone(),
        client_cert_pem: material.peer_client_cert_pem.clone(),
        client_key_pem: material.peer_client_key_pem.clone(),
    });
    let authn = Authenticator::new(tokens, material.front_proxy_ca_cert_pem.as_deref())
        .context("read the front-proxy CA")?
        .with_front_proxy_names(args.requestheader_allowed_names.iter().cloned());
    let paths = Arc::new(PathIndex::default());
    let mut handles = None;
    let shard = Arc::new_cyclic(|weak| {
        let (registry, features) =
            assemble::registry(weak.clone(), paths.clone(), base_url.clone(), &material.ca_cert_pem);
        handles = Some(features);
        Shard {
            core: Arc::new(Core { store, registry, metrics: core_metrics }),
            name: args.name.clone(),
            authn,
            metrics,
            external_url: args
                .external_url
                .clone()
                .map(|u| u.trim_end_matches('/').to_string())
                .unwrap_or_else(|| base_url.clone()),
            base_url,
            root_shard_url: args.root_shard.clone().map(|u| u.trim_end_matches('/').to_string()),
            paths,
            membership,
            peers,
            cluster_names: match args.workspace_name_seed {
                Some(seed) => ClusterNames::seeded(seed),
                None => ClusterNames::random(),
            },
            cache: Arc::default(),
        }
    });
    let handles = handles.expect("the shard was assembled");
    Ok((shard, handles))
}
