//! A cache server's gRPC list/watch as a watcher [`Source`]: the shard's cache informer
//! and the cache server's follower of its parent's Shard replicas both use it.

use super::drive::{Failure, Source};
use crate::cache::cache_client::CacheClient;
use crate::cache::{ListRequest, Replica, WatchEvent, WatchRequest};
use std::future::Future;
use tonic::codegen::{Body, Bytes, StdError};
use tonic::{Code, Status};

/// What receives a cache's replicas.
pub trait CacheConsumer: Send {
    /// A fresh list: everything the cache holds (of the followed resource), at `rv`.
    fn listed(&mut self, items: Vec<Replica>, rv: u64);

    /// One watch event.
    fn event(&mut self, event: WatchEvent) -> impl Future<Output = ()> + Send;
}

/// One or more cache servers (in failover order), followed for one resource or all.
pub struct CacheSource<T, C> {
    caches: Vec<(String, CacheClient<T>)>,
    group: String,
    resource: String,
    consumer: C,
}

impl<T, C> CacheSource<T, C> {
    /// Follows every replica the `caches` (name, client) hold; `consumer` receives them.
    pub fn new(caches: Vec<(String, CacheClient<T>)>, consumer: C) -> Self {
        CacheSource { caches, group: String::new(), resource: String::new(), consumer }
    }

    /// Follows only `group/resource`.
    pub fn only(mut self, group: &str, resource: &str) -> Self {
        (self.group, self.resource) = (group.to_owned(), resource.to_owned());
        self
    }
}

/// 410 (`OUT_OF_RANGE`) means list again; anything else, fail over.
fn failure(status: Status) -> Failure {
    match status.code() {
        Code::OutOfRange => Failure::Gone(status.message().to_owned()),
        _ => Failure::Failed(status.to_string()),
    }
}

impl<T, C> Source for CacheSource<T, C>
where
    T: tonic::client::GrpcService<tonic::body::Body> + Send + Sync,
    T::Future: Send,
    T::Error: Into<StdError>,
    T::ResponseBody: Body<Data = Bytes> + Send + 'static,
    <T::ResponseBody as Body>::Error: Into<StdError> + Send,
    C: CacheConsumer,
{
    fn endpoints(&self) -> usize {
        self.caches.len()
    }

    fn name(&self, endpoint: usize) -> String {
        self.caches[endpoint].0.clone()
    }

    async fn list(&mut self, endpoint: usize) -> Result<u64, Failure> {
        let request =
            ListRequest { group: self.group.clone(), resource: self.resource.clone(), ..ListRequest::default() };
        let listed = self.caches[endpoint].1.list(request).await.map_err(failure)?.into_inner();
        tracing::debug!(cache = %self.caches[endpoint].0, replicas = listed.items.len(), rv = listed.rv, "cache listed");
        self.consumer.listed(listed.items, listed.rv);
        Ok(listed.rv)
    }

    async fn watch(&mut self, endpoint: usize, from_rv: u64) -> Result<u64, Failure> {
        let request = WatchRequest { group: self.group.clone(), resource: self.resource.clone(), from_rv };
        let mut events = self.caches[endpoint].1.watch(request).await.map_err(failure)?.into_inner();
        let mut rv = from_rv;
        while let Some(event) = events.message().await.map_err(failure)? {
            rv = rv.max(event.rv);
            self.consumer.event(event).await;
        }
        Ok(rv)
    }
}
