//! What every request and task of one cache server shares, and the stop signal they
//! watch. A leaf: the server builds it, every service and the uplink take it, and it
//! imports none of them, so no module needs the server to reach the store.

use crate::metrics::Metrics;
use store::Store;
use tokio::sync::watch;

/// What every request and task of one cache server shares.
pub struct State {
    /// Replicas and positions.
    pub store: Store,
    /// This cache's name.
    pub name: String,
    /// Flips to true when the server stops; long-lived streams end on it.
    pub shutdown: watch::Receiver<bool>,
    /// What `/metrics` serves.
    pub metrics: Metrics,
}

/// Resolves once `shutdown` flips to true (or its sender is gone, which also means stop).
pub async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is not Send; it must not live across an await.
    let _ = shutdown.wait_for(|stop| *stop).await;
}
