//! The HTTPS listener every Atoll server process runs: rustls handshakes, HTTP/1.1 and
//! HTTP/2 (kubectl speaks h2), bounded connections, timeouts, and graceful shutdown.
//!
//! What a request means is the caller's business: [`serve`] takes a function that builds
//! one hyper service per connection from the finished TLS handshake (where the client
//! certificate is).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

/// Connections served at once; further ones wait in the kernel's accept backlog.
const CONNECTIONS_MAX: usize = 4096;
/// A TLS handshake that takes longer than this is dropped (slowloris).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// An HTTP/1.1 client must send a request's headers within this time, also on an idle
/// keep-alive connection.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// HTTP/2 connections are pinged this often, and dropped if a ping is not answered in
/// [`HTTP2_KEEP_ALIVE_TIMEOUT`].
const HTTP2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
/// See [`HTTP2_KEEP_ALIVE_INTERVAL`].
const HTTP2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// How long in-flight requests get to finish on shutdown.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Accepts connections until `shutdown` flips to true, then drains. `make_service` runs
/// once per connection, after the handshake.
pub async fn serve<M, S, B>(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    mut shutdown: watch::Receiver<bool>,
    make_service: M,
) where
    M: Fn(&rustls::ServerConnection) -> S + Send + Sync + 'static,
    S: hyper::service::Service<http::Request<Incoming>, Response = http::Response<B>, Error = Infallible>
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let acceptor = TlsAcceptor::from(config);
    let make_service = Arc::new(make_service);
    let slots = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS_MAX));
    let (drain_tx, drain_rx) = watch::channel(false);
    loop {
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => permit.expect("semaphore is never closed"),
            _ = shutdown.changed() => break,
        };
        let (tcp, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.changed() => break,
        };
        let _ = tcp.set_nodelay(true);
        let (acceptor, make_service, drain) = (acceptor.clone(), make_service.clone(), drain_rx.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(error)) => {
                    tracing::debug!(%remote, %error, "TLS handshake failed");
                    return;
                }
                Err(_) => return,
            };
            let service = make_service(tls.get_ref().1);
            serve_connection(tls, service, drain).await;
        });
    }
    let _ = drain_tx.send(true);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while slots.available_permits() < CONNECTIONS_MAX {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    if drained.is_err() {
        tracing::info!("shutdown: connections still open after the drain timeout; closing them");
    }
}

async fn serve_connection<S, B>(
    tls: tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
    service: S,
    mut drain: watch::Receiver<bool>,
) where
    S: hyper::service::Service<http::Request<Incoming>, Response = http::Response<B>, Error = Infallible>
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // Without a timer hyper applies no timeouts at all, and idle or slow connections
    // would hold connection slots forever.
    builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(HTTP2_KEEP_ALIVE_INTERVAL))
        .keep_alive_timeout(HTTP2_KEEP_ALIVE_TIMEOUT);
    let connection = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "connection ended with an error");
            }
        }
        _ = drain.changed() => {
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(DRAIN_TIMEOUT, connection).await;
        }
    }
}
