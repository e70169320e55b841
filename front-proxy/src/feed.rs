//! Keeps the [`Index`] current: learns the shard set from root's Shard objects (polled,
//! and remembered in `DATA_DIR/shards.json` for a restart while root is down), and runs
//! one index-feed stream per shard that resumes from its last event after either side
//! restarts.

use crate::feed_lag::FeedLag;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use parking_lot::RwLock;
use protocol::index::index_feed_client::IndexFeedClient;
use protocol::index::WatchRequest;
use serde_json::Value;
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::index::Index;
use crate::sync_gate::{self, Pending};
use crate::upstream::Upstream;

/// How often root's Shard list is read.
const SHARD_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// First and longest wait before reconnecting a feed.
const RECONNECT_MIN: Duration = Duration::from_millis(100);
const RECONNECT_MAX: Duration = Duration::from_secs(2);

/// The shard set and the index built from their feeds.
pub struct Routing {
    /// The routing index.
    pub index: RwLock<Index>,
    /// Shard name → base URL (`https://host:port`).
    shards: RwLock<BTreeMap<String, String>>,
    /// Where the shard set is remembered.
    state_file: PathBuf,
    /// How far the index trails the shards.
    pub feed_lag: FeedLag,
    /// The shards whose feed has synced since the proxy started (see [`sync_gate`]).
    synced: RwLock<BTreeSet<String>>,
    /// When the proxy started.
    started: Instant,
    /// How long `/readyz` waits for every known shard's feed (see [`sync_gate::READY_GRACE`]).
    ready_grace: Duration,
}

impl Routing {
    /// An empty index; the shard set is loaded from `state_file` if it exists. `/readyz`
    /// waits at most `ready_grace` for the feeds of shards that do not answer.
    pub fn new(state_file: PathBuf, ready_grace: Duration) -> Routing {
        let shards = std::fs::read(&state_file)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<BTreeMap<String, String>>(&bytes).ok())
            .unwrap_or_default();
        Routing {
            index: RwLock::new(Index::default()),
            shards: RwLock::new(shards),
            state_file,
            feed_lag: FeedLag::default(),
            synced: RwLock::new(BTreeSet::new()),
            started: Instant::now(),
            ready_grace,
        }
    }

    /// The known shards whose feed has not synced since the start; `None` once all have.
    pub fn pending(&self) -> Option<Pending> {
        let shards = self.shards.read();
        sync_gate::pending(shards.keys().map(String::as_str), &self.synced.read())
    }

    /// Whether `/readyz` says ready (`Err` with the reason when not).
    pub fn readiness(&self) -> Result<(), String> {
        let any_synced = !self.synced.read().is_empty();
        sync_gate::readiness(self.pending().as_ref(), any_synced, self.started.elapsed() >= self.ready_grace)
    }

    fn mark_synced(&self, shard: &str) {
        if !self.synced.read().contains(shard) {
            self.synced.write().insert(shard.to_owned());
        }
    }

    /// The base URL of `shard`.
    pub fn shard_url(&self, shard: &str) -> Option<String> {
        self.shards.read().get(shard).cloned()
    }

    /// The names of the known shards.
    pub fn shard_names(&self) -> Vec<String> {
        self.shards.read().keys().cloned().collect()
    }

    fn set_shards(&self, shards: BTreeMap<String, String>) {
        if *self.shards.read() == shards {
            return;
        }
        if let Err(error) = write_atomically(&self.state_file, &shards) {
            tracing::warn!(%error, "could not remember the shard set");
        }
        *self.shards.write() = shards;
    }
}

fn write_atomically(path: &PathBuf, shards: &BTreeMap<String, String>) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(shards)?).with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("rename to {}", path.display()))?;
    Ok(())
}

/// Polls root's Shard list forever and keeps one feed per shard running.
pub async fn run(routing: Arc<Routing>, upstream: Upstream, root_shard_url: String) {
    let mut feeds: BTreeMap<String, (String, JoinHandle<()>)> = BTreeMap::new();
    loop {
        match list_shards(&upstream, &root_shard_url).await {
            Ok(shards) => routing.set_shards(shards),
            Err(error) => tracing::debug!(error = format!("{error:#}"), "reading root's shard list failed"),
        }
        let wanted = routing.shards.read().clone();
        feeds.retain(|name, (url, task)| {
            let keep = wanted.get(name) == Some(url);
            if !keep {
                task.abort();
                routing.index.write().remove_shard(name);
                // Back, it will have to send its snapshot again before its paths are known.
                routing.synced.write().remove(name);
                tracing::info!(shard = %name, "shard left; its logical clusters no longer resolve");
            }
            keep
        });
        for (name, url) in wanted {
            if feeds.contains_key(&name) {
                continue;
            }
            let span = tracing::info_span!("index_feed", shard = %name, url = %url);
            let task =
                tokio::spawn(follow(routing.clone(), upstream.clone(), name.clone(), url.clone()).instrument(span));
            feeds.insert(name, (url, task));
        }
        tokio::time::sleep(SHARD_POLL_INTERVAL).await;
    }
}

/// Reads root's Shard objects: name → spec.baseURL.
async fn list_shards(upstream: &Upstream, root_shard_url: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let url = format!("{root_shard_url}/clusters/root/apis/core.kcp.io/v1alpha1/shards");
    let (status, body) = upstream.call(http::Method::GET, &url, None).await?;
    anyhow::ensure!(status.is_success(), "{url} answered {status}");
    let list: Value = serde_json::from_slice(&body).context("decode the Shard list")?;
    let items = list.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
    Ok(items
        .iter()
        .filter_map(|shard| {
            let name = shard.pointer("/metadata/name")?.as_str()?;
            let url = shard.pointer("/spec/baseURL")?.as_str()?;
            Some((name.to_owned(), url.trim_end_matches('/').to_owned()))
        })
        .collect())
}

/// Streams `shard`'s index feed into the index forever, reconnecting with back-off and
/// resuming from the last event applied.
async fn follow(routing: Arc<Routing>, upstream: Upstream, shard: String, url: String) {
    let mut resume_rv = 0;
    let mut delay = RECONNECT_MIN;
    loop {
        match stream_once(&routing, &upstream, &shard, &url, &mut resume_rv).await {
            Ok(()) => delay = RECONNECT_MIN,
            Err(error) => tracing::debug!(error = format!("{error:#}"), "index feed interrupted"),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(RECONNECT_MAX);
    }
}

async fn stream_once(
    routing: &Routing,
    upstream: &Upstream,
    shard: &str,
    url: &str,
    resume_rv: &mut u64,
) -> anyhow::Result<()> {
    let origin: http::Uri = url.parse().with_context(|| format!("parse shard URL {url}"))?;
    let mut client = IndexFeedClient::with_origin(upstream.grpc.clone(), origin);
    let mut stream = client.watch(WatchRequest { resume_rv: *resume_rv }).await.context("open the feed")?.into_inner();
    routing.index.write().begin_stream(shard);
    let mut synced = false;
    while let Some(event) = stream.message().await.context("read the feed")? {
        if event.kind == protocol::index::index_event::Kind::Synced as i32 {
            tracing::info!(resumed = event.resumed, rv = event.rv, "index feed synced");
            synced = true;
        }
        // A snapshot cut short must be received again whole, so only a synced stream moves
        // the resume point.
        if synced {
            *resume_rv = event.rv;
        }
        let committed = event.committed_unix_micros;
        routing.index.write().apply(shard, event);
        if synced {
            // After the SYNCED event is applied: the shard's snapshot is in the index.
            routing.mark_synced(shard);
        }
        if committed > 0 {
            routing.feed_lag.observe(shard, committed);
        }
    }
    anyhow::ensure!(synced, "the feed ended before it synced");
    Ok(())
}
