//! A whole installation on loopback: one root shard and N further shards sharing a CA.
//!
//! [`Installation::start`] starts the root shard (`--root`), then `shard-1..=N` with
//! `--root-shard <root URL>`, all with the same `--pki-dir`, and waits until every shard's
//! consistent-hash ring holds all of them (`atoll_ring_shards` in `/metrics`). Only then
//! can a test expect workspaces to land on any shard. With [`InstallationOptions::caches`],
//! cache servers start first (parents before children, on the same PKI) and every shard is
//! pointed at its caches as the [`CacheTopology`] says. The helpers below speak the kcp
//! tenancy API the way a test reads it: create a Workspace, wait until it is Ready, find
//! the process its `spec.URL` points at, and list the logical clusters a shard hosts.

use protocol::wellknown::CLUSTER_ANNOTATION;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use http::{Method, StatusCode};
use serde_json::Value;
use tempfile::TempDir;

use crate::cache::{CacheServerOptions, CacheServerProcess, CacheTopology};
use crate::front_proxy::{FrontProxyOptions, FrontProxyProcess};
use crate::shard::{ShardOptions, ShardProcess};
use crate::tls_http::ClientIdentity;

/// How long the shards may take, after all of them started, until every ring holds all
/// of them. Registration is one write to root plus a watch event; seconds mean a bug.
pub const RING_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a new Workspace may take to become Ready in tests that do not say.
pub const WORKSPACE_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How often rings and workspace phases are polled.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// How many lines of a shard's log error messages quote.
const LOG_TAIL_LINES: usize = 40;

/// The root logical cluster's name and canonical path.
pub const ROOT_CLUSTER: &str = "root";

/// The root shard's `--name`.
pub const ROOT_SHARD_NAME: &str = "root";

/// The gauge every shard exports with the number of shards in its ring.
const RING_GAUGE: &str = "atoll_ring_shards";

/// The Workspace collection, relative to a logical cluster's URL.
const WORKSPACES_API: &str = "apis/tenancy.kcp.io/v1alpha1/workspaces";

/// How to start an installation.
#[derive(Clone, Debug, Default)]
pub struct InstallationOptions {
    /// Shards besides root (named `shard-1..=extra_shards`).
    pub extra_shards: usize,
    /// Flags given to every shard, root included (say `["--workspace-name-seed", "7"]`).
    pub extra_args: Vec<String>,
    /// Also start a front-proxy in front of the shards.
    pub front_proxy: bool,
    /// The front-proxy's `--token-auth-file`.
    pub proxy_token_file: Option<PathBuf>,
    /// The shards' `--token-auth-file` (every shard gets the same file).
    pub shard_token_file: Option<PathBuf>,
    /// Cache servers to start before the shards, and which of them each shard replicates
    /// to and watches; `None` (the default) starts none and gives shards no cache flags.
    pub caches: Option<CacheTopology>,
    /// How shards and child caches dial each cache; `None` (the default): its own URL.
    pub cache_hops: Option<CacheHops>,
}

/// Decides the URL by which a process reaches a cache: called as `hop(from, cache, url)`
/// with the caller's name (a shard or a child cache), the cache's name and its own URL,
/// once that cache runs; returns the URL to give the caller, say a fault proxy's in front
/// of the cache so that a test can cut that one hop. Shards' watch servers go through it
/// too.
#[derive(Clone)]
pub struct CacheHops(pub std::sync::Arc<HopFn>);

/// `hop(from, cache, url)` of [`CacheHops`].
pub type HopFn = dyn Fn(&str, &str, &str) -> anyhow::Result<String> + Send + Sync;

impl std::fmt::Debug for CacheHops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CacheHops(..)")
    }
}

impl CacheHops {
    fn url(&self, from: &str, cache: &str, url: &str) -> anyhow::Result<String> {
        (self.0)(from, cache, url).with_context(|| format!("put a hop from {from} to cache {cache}"))
    }

    /// `urls` (by cache name) as `from` dials them.
    fn urls_for(&self, from: &str, urls: &BTreeMap<String, String>) -> anyhow::Result<BTreeMap<String, String>> {
        urls.iter().map(|(cache, url)| Ok((cache.clone(), self.url(from, cache, url)?))).collect()
    }
}

/// A running installation; dropping it kills every shard.
pub struct Installation {
    /// The front-proxy, when the options asked for one (declared first: dropped first).
    pub front_proxy: Option<FrontProxyProcess>,
    /// The shard hosting the `root` logical cluster.
    pub root: ShardProcess,
    /// The other shards, `shard-1` first.
    pub shards: Vec<ShardProcess>,
    /// The cache servers, in the topology's order (parents first); empty without one.
    /// Declared after the shards: shards die first, so none replicates into a dead cache.
    pub caches: Vec<CacheServerProcess>,
    cache_topology: Option<CacheTopology>,
    // Declared after the processes so that they die before the CA directory is removed.
    pki_temp: Option<TempDir>,
    pki_dir: PathBuf,
}

impl std::fmt::Debug for Installation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Installation")
            .field("root", &self.root)
            .field("shards", &self.shards)
            .field("caches", &self.caches)
            .field("pki_dir", &self.pki_dir)
            .finish()
    }
}

impl Installation {
    /// Starts root and two more shards replicating to regional caches under a global one,
    /// behind a front-proxy: the installation the APIExport tests bind across.
    pub async fn regional_behind_proxy() -> Installation {
        let options = InstallationOptions {
            extra_shards: 2,
            front_proxy: true,
            caches: Some(crate::cache::CacheTopology::regional()),
            ..InstallationOptions::default()
        };
        Installation::start_with(options).await.expect("start the installation")
    }

    /// Starts root plus `extra_shards` shards and waits until every ring is complete.
    pub async fn start(extra_shards: usize) -> anyhow::Result<Installation> {
        Installation::start_with(InstallationOptions { extra_shards, ..InstallationOptions::default() }).await
    }

    /// Starts an installation as `options` say and waits (at most [`RING_TIMEOUT`]) until
    /// every shard's ring holds every shard.
    pub async fn start_with(options: InstallationOptions) -> anyhow::Result<Installation> {
        let pki_temp = tempfile::Builder::new()
            .prefix("atoll-installation-")
            .tempdir()
            .context("create the installation's temporary dir")?;
        let pki_dir = pki_temp.path().join("pki");
        let pki_flag = pki_dir.to_string_lossy().into_owned();
        let (caches, cache_urls) = match &options.caches {
            Some(topology) => {
                let leaf_dir = pki_temp.path().join("harness-certs");
                start_caches(topology, &pki_dir, &leaf_dir, options.cache_hops.as_ref()).await?
            }
            None => (Vec::new(), BTreeMap::new()),
        };
        let cache_args = |shard: &str| -> anyhow::Result<Vec<String>> {
            match (&options.caches, &options.cache_hops) {
                (Some(topology), Some(hops)) => topology.shard_args(shard, &hops.urls_for(shard, &cache_urls)?),
                (Some(topology), None) => topology.shard_args(shard, &cache_urls),
                (None, _) => Ok(Vec::new()),
            }
        };

        let mut root_args = vec!["--pki-dir".to_string(), pki_flag.clone()];
        root_args.extend(cache_args(ROOT_SHARD_NAME)?);
        root_args.extend(options.extra_args.iter().cloned());
        let root_options = ShardOptions {
            name: ROOT_SHARD_NAME.to_string(),
            root: true,
            extra_args: root_args,
            token_file: options.shard_token_file.clone(),
            ..Default::default()
        };
        let root = ShardProcess::start(root_options).await.context("start the root shard")?;

        // One after the other: each shard registers with root and may write into the
        // shared PKI dir; starting them in sequence keeps a failure attributable to one.
        let mut shards = Vec::with_capacity(options.extra_shards);
        for index in 1..=options.extra_shards {
            let name = format!("shard-{index}");
            let mut args = vec!["--pki-dir".to_string(), pki_flag.clone()];
            args.extend(["--root-shard".to_string(), root.base_url().to_string()]);
            args.extend(cache_args(&name)?);
            args.extend(options.extra_args.iter().cloned());
            let shard_options = ShardOptions {
                name: name.clone(),
                root: false,
                extra_args: args,
                token_file: options.shard_token_file.clone(),
                ..Default::default()
            };
            shards.push(ShardProcess::start(shard_options).await.with_context(|| format!("start shard {name}"))?);
        }
        let mut installation = Installation {
            front_proxy: None,
            root,
            shards,
            caches,
            cache_topology: options.caches.clone(),
            pki_temp: Some(pki_temp),
            pki_dir,
        };
        installation.wait_rings_complete(RING_TIMEOUT).await?;
        if options.front_proxy {
            let proxy_options = FrontProxyOptions {
                root_shard_url: installation.root.base_url().to_string(),
                pki_dir: installation.pki_dir.clone(),
                token_file: options.proxy_token_file.clone(),
                extra_args: Vec::new(),
            };
            installation.front_proxy =
                Some(FrontProxyProcess::start(proxy_options).await.context("start the front-proxy")?);
        }
        Ok(installation)
    }

    /// The front-proxy.
    ///
    /// # Panics
    /// If the installation was started without one: a test bug.
    pub fn proxy(&self) -> &FrontProxyProcess {
        self.front_proxy.as_ref().expect("the installation was started with front_proxy: true")
    }

    /// The front-proxy, mutably (to restart or kill it).
    ///
    /// # Panics
    /// If the installation was started without one.
    pub fn proxy_mut(&mut self) -> &mut FrontProxyProcess {
        self.front_proxy.as_mut().expect("the installation was started with front_proxy: true")
    }

    /// Every shard process, root first.
    pub fn all(&self) -> impl Iterator<Item = &ShardProcess> {
        std::iter::once(&self.root).chain(self.shards.iter())
    }

    /// How many shards the installation has, root included.
    pub fn shard_count(&self) -> usize {
        1 + self.shards.len()
    }

    /// The shard named `name` (`root`, `shard-1`, …).
    pub fn by_name(&self, name: &str) -> anyhow::Result<&ShardProcess> {
        self.all().find(|shard| shard.name() == name).with_context(|| {
            let names: Vec<&str> = self.all().map(ShardProcess::name).collect();
            format!("no shard named {name:?}; the installation has {names:?}")
        })
    }

    /// The shard that `url` points at: a Workspace's `spec.URL`
    /// (`https://host:port/clusters/…`) or a base URL. Matched on scheme and authority,
    /// so that port 1234 is never mistaken for port 12345.
    pub fn shard_for_url(&self, url: &str) -> anyhow::Result<&ShardProcess> {
        let wanted = origin_of(url).with_context(|| format!("find the origin of {url:?}"))?;
        self.all().find(|shard| origin_of(shard.base_url()).is_some_and(|origin| origin == wanted)).with_context(|| {
            let known: Vec<String> = self.all().map(|s| format!("{}={}", s.name(), s.base_url())).collect();
            format!("no shard serves {url:?}; the installation has {known:?}")
        })
    }

    /// The shard named `name`, mutably (to kill or restart it).
    pub fn shard_mut(&mut self, name: &str) -> anyhow::Result<&mut ShardProcess> {
        let names: Vec<String> = self.all().map(|shard| shard.name().to_string()).collect();
        std::iter::once(&mut self.root)
            .chain(self.shards.iter_mut())
            .find(|shard| shard.name() == name)
            .with_context(|| format!("no shard named {name:?}; the installation has {names:?}"))
    }

    /// The cache server named `name` (see [`crate::cache::topology`] for the names).
    pub fn cache(&self, name: &str) -> anyhow::Result<&CacheServerProcess> {
        self.caches.iter().find(|cache| cache.name() == name).with_context(|| self.no_cache(name))
    }

    /// The cache server named `name`, mutably (to kill or restart it).
    pub fn cache_mut(&mut self, name: &str) -> anyhow::Result<&mut CacheServerProcess> {
        let missing = self.no_cache(name);
        self.caches.iter_mut().find(|cache| cache.name() == name).context(missing)
    }

    fn no_cache(&self, name: &str) -> String {
        let names: Vec<&str> = self.caches.iter().map(CacheServerProcess::name).collect();
        format!("no cache server named {name:?}; the installation has {names:?}")
    }

    /// The cache topology the installation was started with, if any.
    pub fn cache_topology(&self) -> Option<&CacheTopology> {
        self.cache_topology.as_ref()
    }

    /// The shards that replicate to cache `cache` first (root first), per the topology.
    pub fn writers_of(&self, cache: &str) -> Vec<&ShardProcess> {
        let Some(topology) = &self.cache_topology else { return Vec::new() };
        self.all().filter(|shard| topology.for_shard(shard.name()).write.first().is_some_and(|c| c == cache)).collect()
    }

    /// Creates workspaces `<prefix>-0`, `<prefix>-1`, … in root, one at a time and each
    /// waited Ready, until `enough` accepts the placement so far, and returns it: the
    /// names of the workspaces each shard hosts, by shard name. Fails after `max`
    /// workspaces, since the ring spreads names evenly and `enough` should be met long
    /// before.
    pub async fn place_workspaces(
        &self,
        prefix: &str,
        max: usize,
        enough: impl Fn(&BTreeMap<String, Vec<String>>) -> bool,
    ) -> anyhow::Result<BTreeMap<String, Vec<String>>> {
        let mut placement: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for index in 0..max {
            if enough(&placement) {
                return Ok(placement);
            }
            let name = format!("{prefix}-{index}");
            create_workspace(&self.root, ROOT_CLUSTER, &name).await?;
            let ready = wait_workspace_ready(&self.root, ROOT_CLUSTER, &name, WORKSPACE_READY_TIMEOUT).await?;
            let url = workspace_url(&ready).with_context(|| format!("Ready workspace {name} has no spec.URL"))?;
            let shard = self.shard_for_url(url)?.name().to_string();
            placement.entry(shard).or_default().push(name);
        }
        anyhow::ensure!(enough(&placement), "{max} workspaces did not make the placement wanted: {placement:?}");
        Ok(placement)
    }

    /// The CA directory every shard was given with `--pki-dir`.
    pub fn pki_dir(&self) -> &Path {
        &self.pki_dir
    }

    /// Mints a client certificate for `user` (in at most one group) from the shared
    /// client CA, valid on every shard. Use this rather than
    /// [`ShardProcess::user_identity`], which looks in the shard's own data dir.
    pub fn user_identity(&self, user: &str, groups: &[&str]) -> anyhow::Result<ClientIdentity> {
        let read = |file: &str| {
            let path = self.pki_dir.join(file);
            std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))
        };
        crate::certs::mint_client_identity(&read("client-ca.crt")?, &read("client-ca.key")?, user, groups)
    }

    /// Waits (at most `timeout`) until every shard's `/metrics` reports a ring of
    /// [`Installation::shard_count`] shards; the error names the first shard that did not.
    pub async fn wait_rings_complete(&self, timeout: Duration) -> anyhow::Result<()> {
        let expected = self.shard_count();
        let deadline = Instant::now() + timeout;
        for shard in self.all() {
            loop {
                let last = match ring_shards(shard).await {
                    Ok(Some(count)) if count == expected => break,
                    Ok(Some(count)) => format!("{RING_GAUGE} {count}"),
                    Ok(None) => format!("no {RING_GAUGE} line in /metrics"),
                    Err(error) => format!("{error:#}"),
                };
                if Instant::now() >= deadline {
                    anyhow::bail!(
                        "shard {} does not know all {expected} shards within {timeout:?}; last seen: {last}\n\
                         --- tail of {} ---\n{}",
                        shard.name(),
                        shard.log_path().display(),
                        shard.log_tail(LOG_TAIL_LINES)
                    );
                }
                tokio::time::sleep(POLL_INTERVAL).await;
            }
        }
        Ok(())
    }

    /// Stops every shard with SIGTERM (others first, root last, so that nobody loses
    /// root while shutting down), then the cache servers (children before parents); after
    /// trying them all, fails naming every process that did not exit cleanly, with the
    /// tail of its log. Processes already stopped or killed by the test are skipped.
    pub async fn stop(&mut self) -> anyhow::Result<()> {
        let mut failures = Vec::new();
        for shard in self.shards.iter_mut().rev().chain(std::iter::once(&mut self.root)) {
            if shard.pid().is_none() {
                continue;
            }
            match shard.stop().await {
                Ok(status) if status.success() => {}
                // The log is the only record of why: the data dir goes with the process.
                Ok(status) => failures.push(format!(
                    "shard {} exited with {status} on SIGTERM\n--- tail of {} ---\n{}",
                    shard.name(),
                    shard.log_path().display(),
                    shard.log_tail(LOG_TAIL_LINES)
                )),
                Err(error) => failures.push(format!("{error:#}")),
            }
        }
        for cache in self.caches.iter_mut().rev().filter(|cache| cache.pid().is_some()) {
            match cache.stop().await {
                Ok(status) if status.success() => {}
                Ok(status) => failures.push(format!(
                    "cache server {} exited with {status} on SIGTERM\n--- tail of {} ---\n{}",
                    cache.name(),
                    cache.log_path().display(),
                    cache.log_tail(LOG_TAIL_LINES)
                )),
                Err(error) => failures.push(format!("{error:#}")),
            }
        }
        anyhow::ensure!(failures.is_empty(), "{}", failures.join("\n"));
        Ok(())
    }
}

impl Drop for Installation {
    fn drop(&mut self) {
        // The shards keep their own data dirs on a panic; keep the CA they trusted too.
        if std::thread::panicking() {
            if let Some(temp) = self.pki_temp.take() {
                eprintln!("installation: keeping PKI dir {}", temp.keep().join("pki").display());
            }
        }
    }
}

/// Creates the CAs, then starts every cache of `topology` in order (parents first, each
/// given its parents' URLs, through `hops` when given); returns them with their own URLs
/// by name.
async fn start_caches(
    topology: &CacheTopology,
    pki_dir: &Path,
    harness_leaf_dir: &Path,
    hops: Option<&CacheHops>,
) -> anyhow::Result<(Vec<CacheServerProcess>, BTreeMap<String, String>)> {
    topology.validate().context("check the cache topology")?;
    crate::cache::ensure_pki(pki_dir, harness_leaf_dir)?;
    let mut caches = Vec::with_capacity(topology.caches.len());
    let mut urls = BTreeMap::new();
    for spec in &topology.caches {
        let parents = match hops {
            Some(hops) => topology.parent_urls(spec, &hops.urls_for(&spec.name, &urls)?)?,
            None => topology.parent_urls(spec, &urls)?,
        };
        let options = CacheServerOptions {
            parents,
            resync_interval_seconds: Some(topology.resync_interval_seconds),
            ..CacheServerOptions::new(&spec.name, pki_dir)
        };
        let cache =
            CacheServerProcess::start(options).await.with_context(|| format!("start cache server {}", spec.name))?;
        urls.insert(spec.name.clone(), cache.url());
        caches.push(cache);
    }
    Ok((caches, urls))
}

/// `/clusters/{cluster}/apis/tenancy.kcp.io/v1alpha1/workspaces`, where `cluster` is a
/// logical cluster's name or canonical path (`root:team-a`).
pub fn workspaces_path(cluster: &str) -> String {
    format!("/clusters/{cluster}/{WORKSPACES_API}")
}

/// The canonical path of workspace `name` in the workspace at `parent_path`.
pub fn child_path(parent_path: &str, name: &str) -> String {
    format!("{parent_path}:{name}")
}

/// The body of a new Workspace named `name` (no type: the default one).
pub fn workspace_body(name: &str) -> Value {
    serde_json::json!({
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": name},
    })
}

/// Creates Workspace `name` in the workspace at `parent_path`, which `parent_shard`
/// hosts, and returns the created object. Anything but 201 is an error with the body.
pub async fn create_workspace(parent_shard: &ShardProcess, parent_path: &str, name: &str) -> anyhow::Result<Value> {
    let path = workspaces_path(parent_path);
    let response = parent_shard
        .http()
        .post_json(&path, &workspace_body(name))
        .await
        .with_context(|| format!("create workspace {name} in {parent_path} on shard {}", parent_shard.name()))?;
    anyhow::ensure!(
        response.status == StatusCode::CREATED,
        "create workspace {name} in {parent_path} on shard {}: HTTP {}: {}",
        parent_shard.name(),
        response.status,
        response.text()
    );
    response.json()
}

/// Deletes Workspace `name` in the workspace at `parent_path`; 200 and 202 both count,
/// anything else is an error with the body.
pub async fn delete_workspace(parent_shard: &ShardProcess, parent_path: &str, name: &str) -> anyhow::Result<()> {
    let path = format!("{}/{name}", workspaces_path(parent_path));
    let response = parent_shard
        .http()
        .send(Method::DELETE, &path, &[], bytes::Bytes::new())
        .await
        .with_context(|| format!("delete workspace {name} in {parent_path} on shard {}", parent_shard.name()))?;
    anyhow::ensure!(
        matches!(response.status, StatusCode::OK | StatusCode::ACCEPTED),
        "delete workspace {name} in {parent_path} on shard {}: HTTP {}: {}",
        parent_shard.name(),
        response.status,
        response.text()
    );
    Ok(())
}

/// Polls Workspace `name` in the workspace at `parent_path` (on `parent_shard`) until
/// its `status.phase` is `Ready`, at most `timeout`, and returns the Ready object. The
/// error quotes the last object (or response) seen and the shard's log.
pub async fn wait_workspace_ready(
    parent_shard: &ShardProcess,
    parent_path: &str,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<Value> {
    let path = format!("{}/{name}", workspaces_path(parent_path));
    let http = parent_shard.http();
    let deadline = Instant::now() + timeout;
    loop {
        let last = match http.get(&path).await {
            Ok(response) if response.status == StatusCode::OK => {
                let object = response.json()?;
                if phase(&object) == Some("Ready") {
                    return Ok(object);
                }
                object.to_string()
            }
            Ok(response) => format!("HTTP {}: {}", response.status, response.text()),
            Err(error) => format!("{error:#}"),
        };
        if Instant::now() >= deadline {
            anyhow::bail!(
                "workspace {name} in {parent_path} not Ready within {timeout:?}; last GET {path} on shard {}: {last}\n\
                 --- tail of {} ---\n{}",
                parent_shard.name(),
                parent_shard.log_path().display(),
                parent_shard.log_tail(LOG_TAIL_LINES)
            );
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// A Workspace's `status.phase`, if it has one.
pub fn phase(workspace: &Value) -> Option<&str> {
    workspace.pointer("/status/phase").and_then(Value::as_str)
}

/// A Workspace's `spec.URL`, once it is scheduled.
pub fn workspace_url(workspace: &Value) -> Option<&str> {
    workspace.pointer("/spec/URL").and_then(Value::as_str)
}

/// The names of the logical clusters `shard` hosts, sorted: the `kcp.io/cluster`
/// annotation of every LogicalCluster in the wildcard (admin-only) list.
pub async fn logical_clusters(shard: &ShardProcess) -> anyhow::Result<Vec<String>> {
    let path = "/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters";
    let response = shard.http().get(path).await.with_context(|| format!("list {path} on shard {}", shard.name()))?;
    anyhow::ensure!(
        response.status == StatusCode::OK,
        "list {path} on shard {}: HTTP {}: {}",
        shard.name(),
        response.status,
        response.text()
    );
    let list = response.json()?;
    let mut names = cluster_names(&list).with_context(|| format!("read {path} on shard {}", shard.name()))?;
    names.sort();
    Ok(names)
}

/// The `kcp.io/cluster` annotations of a list's items; an item without one is a shard
/// bug and an error, not a cluster to skip.
pub fn cluster_names(list: &Value) -> anyhow::Result<Vec<String>> {
    let items = list.get("items").and_then(Value::as_array).context("the list has no items array")?;
    items
        .iter()
        .map(|item| {
            item.pointer("/metadata/annotations")
                .and_then(|annotations| annotations.get(CLUSTER_ANNOTATION))
                .and_then(Value::as_str)
                .map(str::to_string)
                .with_context(|| format!("item without a {CLUSTER_ANNOTATION} annotation: {item}"))
        })
        .collect()
}

/// How many shards `shard`'s ring holds, from `/metrics`; `None` without the gauge.
pub async fn ring_shards(shard: &ShardProcess) -> anyhow::Result<Option<usize>> {
    let response = shard.http().get("/metrics").await.with_context(|| format!("GET /metrics on {}", shard.name()))?;
    anyhow::ensure!(response.status == StatusCode::OK, "GET /metrics: HTTP {}: {}", response.status, response.text());
    Ok(gauge_value(&response.text(), RING_GAUGE).map(|value| value as usize))
}

/// The value of an unlabelled gauge in Prometheus or OpenMetrics text, which may print
/// integers as `3` or `3.0`.
fn gauge_value(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        // `atoll_ring_shards_total …` is another metric; `atoll_ring_shards{…} 3` has labels.
        let rest = match rest.strip_prefix('{') {
            Some(labelled) => labelled.split_once('}')?.1,
            None => rest,
        };
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// `scheme://authority` of a URL, lowercased; `None` if it has no `://`.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    Some(format!("{}://{}", scheme.to_ascii_lowercase(), authority.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauge_values_are_found_exactly() {
        let text = "# TYPE atoll_ring_shards gauge\n\
                    atoll_ring_shards_total 9\n\
                    atoll_ring_shards 3\n";
        let cases = [
            (text, Some(3.0)),
            ("atoll_ring_shards 2.0\n", Some(2.0)),
            ("atoll_ring_shards{shard=\"root\"} 4\n", Some(4.0)),
            ("atoll_ring_shardsx 4\n", None),
            ("# HELP atoll_ring_shards Shards known\n", None),
            ("", None),
        ];
        for (metrics, expected) in cases {
            assert_eq!(gauge_value(metrics, RING_GAUGE), expected, "{metrics:?}");
        }
    }

    #[test]
    fn origins_compare_scheme_and_authority_only() {
        let cases = [
            ("https://127.0.0.1:1234/clusters/abc", Some("https://127.0.0.1:1234")),
            ("https://127.0.0.1:1234", Some("https://127.0.0.1:1234")),
            ("HTTPS://LOCALHOST:1/x?y", Some("https://localhost:1")),
            ("127.0.0.1:1234", None),
        ];
        for (url, origin) in cases {
            assert_eq!(origin_of(url).as_deref(), origin, "{url}");
        }
        assert_ne!(origin_of("https://h:1234/a"), origin_of("https://h:12345/a"));
    }

    #[test]
    fn cluster_names_come_from_the_annotation() {
        let list = serde_json::json!({"items": [
            {"metadata": {"name": "cluster", "annotations": {"kcp.io/cluster": "root"}}},
            {"metadata": {"name": "cluster", "annotations": {"kcp.io/cluster": "2x8f"}}},
        ]});
        assert_eq!(cluster_names(&list).unwrap(), ["root", "2x8f"]);
        let missing = serde_json::json!({"items": [{"metadata": {"name": "cluster"}}]});
        assert!(cluster_names(&missing).is_err());
    }
}
