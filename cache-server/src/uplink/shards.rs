//! Following the parent's Shard replicas: when the parent reports a Shard replica
//! DELETED, this cache purges that shard's replicas too, even if the root shard's
//! tombstone never came through this cache.
//!
//! Only DELETED events count. A Shard replica that is merely absent (from the first list,
//! or after relisting on 410) proves nothing: replication lags, and the parent may be
//! younger than this cache. Deletions the parent reported while this cache was
//! disconnected are seen only if the resumed watch still covers them; otherwise the
//! purge happens when the deletion reaches this cache another way (the root shard's own
//! tombstone, or this cache's parent relaying it as a tombstone).

use super::{failover, Ended, Uplink};
use crate::replicas;
use http::Uri;
use protocol::cache::cache_client::CacheClient;
use protocol::cache::watch_event::Kind;
use protocol::cache::{ListRequest, WatchEvent, WatchRequest};
use protocol::types::{CORE_KCP_GROUP, SHARD_RESOURCE};
use security::grpc::GrpcClient;
use std::sync::Arc;
use std::time::Duration;
use tonic::{Code, Status};
use tracing::Instrument;

/// Attempts at purging one deleted shard before giving up on it (and logging an error).
const PURGE_ATTEMPTS: usize = 5;

/// Where one connection to the parent is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Follow {
    /// List the parent's Shard replicas, for a resourceVersion to watch from.
    List,
    /// Watch from this resourceVersion.
    Watch(u64),
}

impl Uplink {
    /// Follows the parents' Shard replicas until the server stops.
    pub async fn follow_shards(self: Arc<Self>) {
        let (parents, shutdown) = (self.parents.clone(), self.state.shutdown.clone());
        failover("shard deletions", &parents, shutdown, |parent| {
            let this = self.clone();
            async move { this.follow_session(parent).await }
        })
        .await;
    }

    async fn follow_session(&self, parent: Uri) -> Ended {
        let span = tracing::info_span!("follow_shards", %parent);
        let mut shutdown = self.state.shutdown.clone();
        let mut cache = self.cache(&parent);
        let mut established = false;
        let mut state = Follow::List;
        async {
            loop {
                let step = tokio::select! {
                    step = self.step(&mut cache, state) => step,
                    _ = crate::state::stopped(&mut shutdown) => return Ended::Stopped,
                };
                state = match step {
                    Ok(next) => {
                        established = true;
                        next
                    }
                    // 410 Gone: the parent's change log moved past us; relist.
                    Err(status) if status.code() == Code::OutOfRange => {
                        tracing::info!(reason = status.message(), "watch expired; listing again");
                        Follow::List
                    }
                    Err(status) => return Ended::Failed { established, error: status.into() },
                };
            }
        }
        .instrument(span)
        .await
    }

    /// One transition: a list, or a watch until it ends.
    async fn step(&self, cache: &mut CacheClient<GrpcClient>, state: Follow) -> Result<Follow, Status> {
        match state {
            Follow::List => {
                let request = ListRequest {
                    group: CORE_KCP_GROUP.to_owned(),
                    resource: SHARD_RESOURCE.to_owned(),
                    ..ListRequest::default()
                };
                let listed = cache.list(request).await?.into_inner();
                tracing::debug!(shards = listed.items.len(), rv = listed.rv, "listed the parent's Shard replicas");
                Ok(Follow::Watch(listed.rv))
            }
            Follow::Watch(from_rv) => {
                let request =
                    WatchRequest { group: CORE_KCP_GROUP.to_owned(), resource: SHARD_RESOURCE.to_owned(), from_rv };
                let mut events = cache.watch(request).await?.into_inner();
                let mut rv = from_rv;
                while let Some(event) = events.message().await? {
                    rv = rv.max(event.rv);
                    self.on_event(&event).await;
                }
                // The parent ended the stream cleanly (it is restarting): resume.
                Ok(Follow::Watch(rv))
            }
        }
    }

    async fn on_event(&self, event: &WatchEvent) {
        if event.kind != Kind::Deleted as i32 {
            return;
        }
        let Some(key) = event.replica.as_ref().and_then(|replica| replica.key.as_ref()) else { return };
        let shard = &key.name;
        let mut delay = Duration::from_millis(100);
        for attempt in 1..=PURGE_ATTEMPTS {
            match replicas::purge_origin(&self.state.store, shard).await {
                Ok(purged) => {
                    tracing::info!(shard, purged, "the parent deleted a Shard replica: purged its replicas here");
                    return;
                }
                Err(error) if attempt < PURGE_ATTEMPTS => {
                    tracing::warn!(shard, %error, attempt, "purge failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                Err(error) => {
                    tracing::error!(shard, %error, "purge failed; the shard's replicas stay until it is deleted again")
                }
            }
        }
    }
}
