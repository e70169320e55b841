//! Starting and stopping a cache server: the store, the HTTPS listener and the uplink.

use crate::state::State;
use crate::uplink::Uplink;
use crate::{authz, routes};
use anyhow::Context;
use security::pki::ServingMaterial;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use store::{Store, StoreOptions};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long [`Running::stop`] waits for streams to let go of the store.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything a cache server needs to start.
#[derive(Clone, Debug)]
pub struct Config {
    /// This cache's name: its sender name towards a parent, and the CN of its client
    /// certificate (`system:atoll:cache:<name>`).
    pub name: String,
    /// The RocksDB directory (`DATA_DIR/store`).
    pub store_dir: PathBuf,
    /// Store tuning (retention of the change log).
    pub store_options: StoreOptions,
    /// Serving certificate, client CA, and the client certificate towards parents.
    pub material: ServingMaterial,
    /// Parent cache servers (`https://host:port`), in failover order; empty for a root
    /// cache.
    pub parents: Vec<String>,
    /// How often the uplink compares the parent with this cache and repairs drift.
    pub resync_interval: Duration,
    /// How long a deleted replica's deletion is remembered, refusing late copies of it
    /// (`--tombstone-retention-seconds`).
    pub tombstone_retention: Duration,
}

impl Config {
    /// A cache named `name` whose data lives in `DIR/<name>` and whose certificates are
    /// issued from the installation's shared CAs in `pki_dir` (created on first use),
    /// with default store tuning: what embedding a cache server in one process takes.
    pub fn in_dir(
        name: &str,
        dir: &std::path::Path,
        pki_dir: &std::path::Path,
        parents: Vec<String>,
    ) -> anyhow::Result<Config> {
        let material = security::pki::load(&security::pki::PkiOptions {
            pki_dir: pki_dir.to_path_buf(),
            leaf_dir: dir.join(name).join("certs"),
            process_name: name.to_owned(),
            hosts: Vec::new(),
            files: security::pki::CertFiles::default(),
            role: security::pki::Role::Cache,
        })
        .context("load the PKI")?;
        Ok(Config {
            name: name.to_owned(),
            store_dir: dir.join(name).join("store"),
            store_options: StoreOptions::default(),
            material,
            parents,
            resync_interval: DEFAULT_RESYNC_INTERVAL,
            tombstone_retention: DEFAULT_TOMBSTONE_RETENTION,
        })
    }
}

/// How often an uplink repairs drift in its parent unless told otherwise.
pub const DEFAULT_RESYNC_INTERVAL: Duration = Duration::from_secs(30);

/// How long deletions are remembered unless told otherwise.
pub const DEFAULT_TOMBSTONE_RETENTION: Duration = Duration::from_secs(600);

/// Forgets expired deletions now and then until the server stops.
async fn collect_deletions(state: Arc<State>, retention: Duration) {
    let every = (retention / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    let mut shutdown = state.shutdown.clone();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = crate::state::stopped(&mut shutdown) => return,
        }
        match crate::replicas::collect_deletions(&state.store, retention, None).await {
            Ok(0) => {}
            Ok(forgotten) => tracing::info!(forgotten, "forgot expired deletions"),
            Err(error) => tracing::warn!(%error, "forgetting expired deletions failed; trying again later"),
        }
    }
}

/// A started cache server.
pub struct Running {
    addr: SocketAddr,
    state: Arc<State>,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

/// Parses `--parent` URLs: each must be `https://HOST:PORT`.
pub fn parse_parents(parents: &[String]) -> anyhow::Result<Vec<http::Uri>> {
    parents
        .iter()
        .map(|url| {
            let uri: http::Uri = url.trim_end_matches('/').parse().with_context(|| format!("parse --parent {url}"))?;
            anyhow::ensure!(
                uri.scheme_str() == Some("https") && uri.authority().is_some() && uri.path() == "/",
                "--parent {url}: expected https://HOST:PORT (cache servers speak gRPC over TLS only)"
            );
            Ok(uri)
        })
        .collect()
}

/// Opens the store, serves on `listener` and starts the uplink.
pub async fn start(config: Config, listener: TcpListener) -> anyhow::Result<Running> {
    authz::check_sender_name(&config.name).map_err(|why| anyhow::anyhow!("--name: {why}"))?;
    let parents = parse_parents(&config.parents)?;
    let addr = listener.local_addr().context("read the bound address")?;
    // Only client-CA certificates name callers here: the front-proxy CA is left out.
    let user_facing = ServingMaterial { front_proxy_ca_cert_pem: None, ..config.material.clone() };
    let tls = security::tls::server_config(&user_facing).context("build the TLS configuration")?;
    let store = Store::open(&config.store_dir, config.store_options.clone())
        .with_context(|| format!("open rocksdb at {}", config.store_dir.display()))?;
    let (stop, shutdown) = watch::channel(false);
    let metrics = crate::metrics::Metrics::new(&store);
    let state = Arc::new(State { store, name: config.name.clone(), shutdown: shutdown.clone(), metrics });

    let serving_state = state.clone();
    let serving = tokio::spawn(security::https::serve(listener, tls, shutdown, move |connection| {
        // What the client certificate says is worked out once per connection.
        let peer = Arc::new(routes::peer_of(connection));
        let state = serving_state.clone();
        hyper::service::service_fn(move |request| {
            let (state, peer) = (state.clone(), peer.clone());
            async move { Ok::<_, Infallible>(routes::serve(state, peer, request).await) }
        })
    }));
    let mut tasks = vec![serving, tokio::spawn(collect_deletions(state.clone(), config.tombstone_retention))];
    if !parents.is_empty() {
        let material = &config.material;
        let client = security::grpc::client(
            &material.ca_cert_pem,
            &material.peer_client_cert_pem,
            &material.peer_client_key_pem,
        )
        .context("build the gRPC client towards the parent caches")?;
        let uplink = Arc::new(Uplink::new(state.clone(), parents, client, config.resync_interval));
        tasks.push(tokio::spawn(uplink.clone().run()));
        tasks.push(tokio::spawn(uplink.follow_shards()));
    }
    tracing::info!(name = config.name, %addr, parents = ?config.parents, "cache server serving");
    Ok(Running { addr, state, stop, tasks })
}

impl Running {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's store (tests compact it). Drop clones before [`Running::stop`], which
    /// closes the store only once nothing holds it.
    pub fn store(&self) -> &Store {
        &self.state.store
    }

    /// Stops serving, ends every stream and the uplink, and closes the store, so that the
    /// same data directory can be opened again once this returns.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
        // Streams end on the same signal; wait until their tasks let go of the store.
        let deadline = tokio::time::Instant::now() + STOP_TIMEOUT;
        while Arc::strong_count(&self.state) > 1 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if Arc::strong_count(&self.state) > 1 {
            tracing::warn!("streams still hold the store after {STOP_TIMEOUT:?}; it closes when they end");
        }
        let state = self.state;
        // Dropping the last handle joins the store's threads: not on an async worker.
        let _ = tokio::task::spawn_blocking(move || drop(state)).await;
        tracing::info!("cache server stopped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_must_be_https_base_urls() {
        let ok = parse_parents(&["https://a:1".into(), "https://[::1]:2/".into()]).expect("valid");
        assert_eq!(ok.iter().map(ToString::to_string).collect::<Vec<_>>(), ["https://a:1/", "https://[::1]:2/"]);
        for bad in ["http://a:1", "a:1", "https://a:1/base", "https://"] {
            let error = parse_parents(&[bad.into()]).expect_err(bad);
            assert!(format!("{error:#}").contains("--parent"), "{bad}: {error:#}");
        }
    }
}
