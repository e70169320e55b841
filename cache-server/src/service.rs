//! The gRPC service (`atoll.cache.v1.Cache`): a thin dispatcher from each RPC to its
//! module, with the caller the HTTP layer authenticated.

use crate::authz::Caller;
use crate::state::State;
use crate::{list, replicate, watch};
use protocol::cache::cache_server::Cache;
use protocol::cache::{ListRequest, ListResponse, ReplicateRequest, WatchRequest};
use std::sync::Arc;
use tonic::{Request, Response, Status, Streaming};

/// The largest message the cache accepts: a batch of ~500 changes of up to 100 KiB
/// objects. tonic's default (4 MiB) would refuse ordinary batches of large objects.
pub const MESSAGE_BYTES_MAX: usize = 64 << 20;

/// The service; one per connection, all sharing [`State`].
pub struct Service {
    state: Arc<State>,
}

impl Service {
    /// The service over `state`.
    pub fn new(state: Arc<State>) -> Self {
        Service { state }
    }
}

/// The caller the HTTP layer put into the request's extensions.
fn caller<T>(request: &Request<T>) -> Result<Caller, Status> {
    request
        .extensions()
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| Status::unauthenticated("present a client certificate from the installation's client CA"))
}

#[tonic::async_trait]
impl Cache for Service {
    type ReplicateStream = replicate::AckStream;
    type WatchStream = watch::EventStream;

    async fn replicate(
        &self,
        request: Request<Streaming<ReplicateRequest>>,
    ) -> Result<Response<Self::ReplicateStream>, Status> {
        let caller = caller(&request)?;
        let metadata = request.metadata().clone();
        let stream = replicate::replicate(self.state.clone(), caller, &metadata, request.into_inner()).await?;
        Ok(Response::new(stream))
    }

    async fn list(&self, request: Request<ListRequest>) -> Result<Response<ListResponse>, Status> {
        let caller = caller(&request)?;
        let request = request.into_inner();
        let span = tracing::info_span!("list", %caller, group = request.group, resource = request.resource);
        let state = self.state.clone();
        // Lists read RocksDB synchronously; off the async workers they cannot stall
        // replication streams sharing the runtime.
        let listed = tokio::task::spawn_blocking(move || span.in_scope(|| list::list(&state, &caller, &request)))
            .await
            .map_err(|e| Status::internal(format!("list task failed: {e}")))??;
        Ok(Response::new(listed))
    }

    async fn watch(&self, request: Request<WatchRequest>) -> Result<Response<Self::WatchStream>, Status> {
        let caller = caller(&request)?;
        Ok(Response::new(watch::watch(self.state.clone(), &caller, request.get_ref())?))
    }
}
