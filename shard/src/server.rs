//! The shard's HTTPS listener: `security::https` connections, each request routed to the
//! gRPC index feed or the Kubernetes API.

use crate::api::{self, PeerInfo};
use crate::index_feed;
use crate::state::Shard;
use security::tls;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Accepts connections until `shutdown` flips to true, then drains.
pub async fn serve(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    shard: Arc<Shard>,
    shutdown: watch::Receiver<bool>,
) {
    security::https::serve(listener, config, shutdown, move |connection| {
        // What the client certificate says is worked out once per connection.
        let certificate = tls::client_certificate_der(connection).map(|der| shard.authn.certificate_caller(der));
        let peer = Arc::new(PeerInfo { certificate });
        let shard = shard.clone();
        hyper::service::service_fn(move |request| {
            let (shard, peer) = (shard.clone(), peer.clone());
            async move {
                if security::grpc::is_grpc(&request) {
                    return Ok::<_, std::convert::Infallible>(index_feed::serve(shard, &peer, request).await);
                }
                Ok(api::serve(shard, peer, request).await)
            }
        })
    })
    .await;
}
