//! Thread-per-core serving, nginx's worker model: N OS threads, each running a
//! current-thread tokio runtime with its own `SO_REUSEPORT` listener and its own pool of
//! connections to the shards, so a request never crosses threads. The kernel spreads
//! new connections over the listeners.
//!
//! One multi-threaded runtime did the same work with ~20% more CPU per request on two
//! cores (wake-ups and work stealing between threads), which the proxy benchmark shows.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Context;
use tokio::sync::watch;

use crate::proxy::Proxy;

/// Pending connections per listener.
const BACKLOG: u32 = 1024;

/// Binds `count` listeners to `addr` with `SO_REUSEPORT` (port 0 picks one port for all).
/// Must run inside a tokio runtime; the listeners are handed out as std sockets so that
/// each worker registers its own with its own runtime.
pub fn bind(addr: SocketAddr, count: usize) -> anyhow::Result<Vec<std::net::TcpListener>> {
    let mut listeners = Vec::with_capacity(count);
    let mut bound = addr;
    for _ in 0..count.max(1) {
        let socket = if bound.is_ipv4() { tokio::net::TcpSocket::new_v4() } else { tokio::net::TcpSocket::new_v6() }
            .context("create a socket")?;
        socket.set_reuseaddr(true).context("set SO_REUSEADDR")?;
        socket.set_reuseport(true).context("set SO_REUSEPORT")?;
        socket.bind(bound).with_context(|| format!("bind {bound}"))?;
        let listener = socket.listen(BACKLOG).with_context(|| format!("listen on {bound}"))?;
        bound = listener.local_addr().context("read the bound address")?;
        listeners.push(listener.into_std().context("detach the listener")?);
    }
    Ok(listeners)
}

/// Starts one worker thread per listener. `make_proxy` runs on each worker, inside its
/// runtime, so the connection pool it creates belongs to that worker.
pub fn spawn<F>(
    listeners: Vec<std::net::TcpListener>,
    tls: Arc<rustls::ServerConfig>,
    shutdown: watch::Receiver<bool>,
    make_proxy: F,
) -> anyhow::Result<Vec<JoinHandle<()>>>
where
    F: Fn() -> anyhow::Result<Arc<Proxy>> + Send + Sync + 'static,
{
    let make_proxy = Arc::new(make_proxy);
    let mut threads = Vec::with_capacity(listeners.len());
    for (index, listener) in listeners.into_iter().enumerate() {
        let (tls, shutdown, make_proxy) = (tls.clone(), shutdown.clone(), make_proxy.clone());
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("start a worker")?;
        let thread = std::thread::Builder::new()
            .name(format!("proxy-worker-{index}"))
            .spawn(move || {
                runtime.block_on(async move {
                    let proxy = match make_proxy() {
                        Ok(proxy) => proxy,
                        Err(error) => return tracing::error!(error = format!("{error:#}"), "worker failed to start"),
                    };
                    let listener =
                        match listener.set_nonblocking(true).and_then(|()| tokio::net::TcpListener::from_std(listener))
                        {
                            Ok(listener) => listener,
                            Err(error) => return tracing::error!(%error, "worker could not take its listener"),
                        };
                    security::https::serve(listener, tls, shutdown, move |connection| {
                        let identity = Arc::new(
                            security::tls::client_certificate_der(connection)
                                .and_then(|der| proxy.certificate_identity(der)),
                        );
                        let proxy = proxy.clone();
                        hyper::service::service_fn(move |request| {
                            let (proxy, identity) = (proxy.clone(), identity.clone());
                            async move { Ok::<_, std::convert::Infallible>(proxy.serve(identity, request).await) }
                        })
                    })
                    .await;
                });
            })
            .context("spawn a worker thread")?;
        threads.push(thread);
    }
    Ok(threads)
}
