//! The local store as a watcher source ([`protocol::watcher`]): a (paged) list of one key
//! prefix, then the store's change stream from the list's resourceVersion. The
//! controllers and the garbage collector follow the store through it.

use bytes::Bytes;
use protocol::watcher::drive::{Failure, Source};
use store::{Event, ListOptions, Store, StoreError, Versioned};

/// What receives the store's objects and changes.
pub trait StoreConsumer: Send {
    /// A fresh list begins (what an earlier, failed one handed over is to be dropped).
    fn listing(&mut self) {}

    /// One page of a fresh list (all of it when unpaged).
    fn page(&mut self, items: &[(Bytes, Versioned)]);

    /// The list is complete, as of `rv`.
    fn listed(&mut self, _rv: u64) {}

    /// One committed change.
    fn event(&mut self, event: &Event);
}

/// Every key under one prefix of the local store.
pub struct StoreSource<C> {
    store: Store,
    prefix: Bytes,
    page_items: Option<usize>,
    consumer: C,
}

impl<C: StoreConsumer> StoreSource<C> {
    /// Follows the keys under `prefix` (empty: all), handing them to `consumer`.
    pub fn new(store: Store, prefix: impl Into<Bytes>, consumer: C) -> Self {
        StoreSource { store, prefix: prefix.into(), page_items: None, consumer }
    }

    /// Lists in pages of at most `items`, so that a relist of a large store does not hold
    /// it all in memory at once.
    pub fn paged(mut self, items: usize) -> Self {
        self.page_items = Some(items);
        self
    }
}

/// The store's errors as the watcher branches on them.
fn failure(error: StoreError) -> Failure {
    match error {
        StoreError::Closed => Failure::Closed,
        StoreError::Gone { .. } => Failure::Gone(error.to_string()),
        error => Failure::Failed(error.to_string()),
    }
}

impl<C: StoreConsumer> Source for StoreSource<C> {
    fn endpoints(&self) -> usize {
        1
    }

    fn name(&self, _endpoint: usize) -> String {
        format!("store:{}", String::from_utf8_lossy(&self.prefix))
    }

    async fn list(&mut self, _endpoint: usize) -> Result<u64, Failure> {
        let prefix = self.prefix.to_vec();
        let mut options = ListOptions { prefix, limit: self.page_items, ..ListOptions::default() };
        self.consumer.listing();
        loop {
            let page = self.store.list(&options, |_, _| true).map_err(failure)?;
            self.consumer.page(&page.items);
            let Some(next) = page.next else {
                self.consumer.listed(page.rv);
                return Ok(page.rv);
            };
            // Later pages at the first page's resourceVersion: one consistent list.
            (options.start, options.at_rv) = (Some(next), Some(page.rv));
            tokio::task::yield_now().await;
        }
    }

    async fn watch(&mut self, _endpoint: usize, from_rv: u64) -> Result<u64, Failure> {
        let mut watch = self.store.watch(self.prefix.clone(), from_rv).map_err(failure)?;
        loop {
            let event = watch.next().await.map_err(failure)?;
            self.consumer.event(&event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use protocol::watcher::{drive, Backoff};
    use std::sync::Arc;
    use std::time::Duration;
    use store::{Precondition, StoreOptions};

    /// Records what it is handed, as text.
    #[derive(Default, Clone)]
    struct Log(Arc<Mutex<Vec<String>>>);

    impl Log {
        fn push(&self, line: String) {
            self.0.lock().push(line);
        }

        fn lines(&self) -> Vec<String> {
            self.0.lock().clone()
        }
    }

    impl StoreConsumer for Log {
        fn listing(&mut self) {
            self.push("listing".into());
        }

        fn page(&mut self, items: &[(Bytes, Versioned)]) {
            let keys: Vec<String> = items.iter().map(|(key, _)| String::from_utf8_lossy(key).into_owned()).collect();
            self.push(format!("page {}", keys.join(",")));
        }

        fn listed(&mut self, _rv: u64) {
            self.push("listed".into());
        }

        fn event(&mut self, event: &Event) {
            self.push(format!("event {}", String::from_utf8_lossy(&event.key)));
        }
    }

    async fn store_with(dir: &tempfile::TempDir, keys: &[&'static str]) -> Store {
        let store = Store::open(dir.path(), StoreOptions::default()).expect("open the store");
        for key in keys {
            store.put(*key, "v", Precondition::None).await.expect("put");
        }
        store
    }

    /// Waits (a while at most) until `log` holds `lines` lines.
    async fn eventually(log: &Log, lines: usize) {
        for _ in 0..1000 {
            if log.lines().len() >= lines {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn lists_in_pages_of_the_prefix_and_a_compacted_watch_is_gone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store_with(&dir, &["a/1", "a/2", "b/1"]).await;
        let log = Log::default();
        let mut source = StoreSource::new(store.clone(), "a/", log.clone()).paged(1);
        let rv = source.list(0).await.expect("list");
        assert_eq!(log.lines(), ["listing", "page a/1", "page a/2", "listed"]);
        for key in ["a/3", "a/4", "a/5"] {
            store.put(key, "v", Precondition::None).await.expect("put");
        }
        store.compact_keeping(1).expect("compact");
        assert!(matches!(source.watch(0, rv).await, Err(Failure::Gone(_))), "a watch from before the log is 410");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_driver_lists_then_follows_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store_with(&dir, &["a/1", "b/1"]).await;
        let log = Log::default();
        let mut source = StoreSource::new(store.clone(), "a/", log.clone());
        let watcher = tokio::spawn(async move { drive::run("test", &mut source, Backoff::reconnect()).await });
        eventually(&log, 3).await;
        store.put("b/2", "v", Precondition::None).await.expect("put");
        store.put("a/2", "v", Precondition::None).await.expect("put");
        eventually(&log, 4).await;
        watcher.abort();
        assert_eq!(log.lines(), ["listing", "page a/1", "listed", "event a/2"]);
    }
}
