//! A TCP fault proxy on loopback: clients connect to it instead of to a process, and it
//! forwards bytes both ways untouched (TLS passes through; the proxy sees only ciphertext)
//! until told to misbehave.
//!
//! Faults apply per direction ([`Direction::Upstream`] is client → server):
//!
//! - **delay**: every chunk waits `ms` before it is forwarded (order is kept);
//! - **drop**: bytes in that direction are discarded, and new connections are closed at
//!   once when the upstream direction drops;
//! - **blackhole**: both directions discard everything, and new connections are accepted
//!   and then held without ever reaching the server (a peer that vanished);
//! - **cut**: every open connection is reset (SO_LINGER 0, then close: the peers see RST),
//!   a one-off event;
//! - **heal**: every fault is lifted; held (blackholed) connections are reset.
//!
//! The proxy decides nothing at random itself: the seeded schedule in
//! [`crate::schedule`] says what to inject when, so a run replays from its seed.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The size of one forwarded chunk.
const CHUNK_BYTES: usize = 16 * 1024;

/// The most connections one proxy holds open at once; further ones are refused (closed at
/// once), so a client storm cannot exhaust file descriptors.
pub const CONNECTIONS_MAX: usize = 512;

/// One direction of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Direction {
    /// Client → server.
    Upstream,
    /// Server → client.
    Downstream,
}

/// The faults currently applied to one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkFaults {
    /// Added latency per chunk.
    pub delay_ms: u64,
    /// Discard bytes (and, upstream, close new connections).
    pub drop: bool,
}

/// Everything the proxy is doing wrong right now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Faults {
    upstream: LinkFaults,
    downstream: LinkFaults,
    blackhole: bool,
}

impl Faults {
    fn link(&self, direction: Direction) -> LinkFaults {
        match direction {
            Direction::Upstream => self.upstream,
            Direction::Downstream => self.downstream,
        }
    }

    fn link_mut(&mut self, direction: Direction) -> &mut LinkFaults {
        match direction {
            Direction::Upstream => &mut self.upstream,
            Direction::Downstream => &mut self.downstream,
        }
    }
}

/// A fault to inject, as the schedule names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum NetFault {
    /// Delay one direction by this many milliseconds per chunk.
    Delay(Direction, u64),
    /// Drop one direction.
    Drop(Direction),
    /// Accept, never forward or answer.
    Blackhole,
    /// Reset every open connection.
    Cut,
    /// Lift every fault.
    Heal,
}

struct Shared {
    faults: Mutex<Faults>,
    /// Bumped by `cut` and `heal`: every connection that saw an older value resets.
    resets: watch::Sender<u64>,
    open: Mutex<usize>,
}

/// A running proxy; dropping it stops accepting and resets every connection.
pub struct FaultProxy {
    name: String,
    listen: SocketAddr,
    upstream: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl std::fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultProxy")
            .field("name", &self.name)
            .field("listen", &self.listen)
            .field("upstream", &self.upstream)
            .finish_non_exhaustive()
    }
}

impl FaultProxy {
    /// Listens on a free port of 127.0.0.1 and forwards to `upstream`.
    pub async fn start(name: &str, upstream: SocketAddr) -> anyhow::Result<FaultProxy> {
        FaultProxy::bind(name, upstream)
    }

    /// [`FaultProxy::start`] without awaiting: for callers that must put a proxy on a hop
    /// from synchronous code (say a harness callback), within a Tokio runtime.
    pub fn bind(name: &str, upstream: SocketAddr) -> anyhow::Result<FaultProxy> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").context("bind the fault proxy on 127.0.0.1")?;
        listener.set_nonblocking(true).context("make the fault proxy's listener non-blocking")?;
        let listener = TcpListener::from_std(listener).context("register the fault proxy's listener with Tokio")?;
        let listen = listener.local_addr().context("read the fault proxy's address")?;
        let (resets, _) = watch::channel(0);
        let shared = Arc::new(Shared { faults: Mutex::new(Faults::default()), resets, open: Mutex::new(0) });
        let accept = tokio::spawn(accept_loop(listener, upstream, shared.clone()));
        Ok(FaultProxy { name: name.to_string(), listen, upstream, shared, accept })
    }

    /// The proxy's name (for logs).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where clients connect.
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen
    }

    /// How many connections are open through the proxy now.
    pub fn open_connections(&self) -> usize {
        *lock(&self.shared.open)
    }

    /// Applies `fault`.
    pub fn inject(&self, fault: NetFault) {
        let mut faults = lock(&self.shared.faults);
        match fault {
            NetFault::Delay(direction, ms) => faults.link_mut(direction).delay_ms = ms,
            NetFault::Drop(direction) => faults.link_mut(direction).drop = true,
            NetFault::Blackhole => faults.blackhole = true,
            NetFault::Cut => self.reset_all(),
            NetFault::Heal => {
                // Held connections never reached the server, and a dropped direction lost
                // bytes mid-stream: both are broken for good, so they are reset.
                let broken = faults.blackhole || faults.upstream.drop || faults.downstream.drop;
                *faults = Faults::default();
                if broken {
                    self.reset_all();
                }
            }
        }
    }

    /// Lifts every fault (see [`NetFault::Heal`]).
    pub fn heal(&self) {
        self.inject(NetFault::Heal);
    }

    fn reset_all(&self) {
        self.shared.resets.send_modify(|generation| *generation += 1);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.reset_all();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panicking connection task must not take the proxy down with it.
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn accept_loop(listener: TcpListener, upstream: SocketAddr, shared: Arc<Shared>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let faults = *lock(&shared.faults);
        let full = *lock(&shared.open) >= CONNECTIONS_MAX;
        if full || faults.upstream.drop {
            drop(client);
            continue;
        }
        *lock(&shared.open) += 1;
        let shared = shared.clone();
        tokio::spawn(async move {
            serve(client, upstream, faults.blackhole, &shared).await;
            *lock(&shared.open) -= 1;
        });
    }
}

/// Runs one connection until either side closes or a reset arrives.
async fn serve(mut client: TcpStream, upstream: SocketAddr, blackholed: bool, shared: &Shared) {
    let mut resets = shared.resets.subscribe();
    resets.mark_unchanged();
    if blackholed {
        // Accepted, never forwarded: hold it until a reset or the client gives up.
        let mut sink = [0u8; 1024];
        let hold = async { while matches!(client.read(&mut sink).await, Ok(n) if n > 0) {} };
        tokio::select! {
            _ = hold => {}
            _ = resets.changed() => reset(&client),
        }
        return;
    }
    let Ok(mut server) = TcpStream::connect(upstream).await else { return };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.split();
    let (mut server_read, mut server_write) = server.split();
    let up = pipe(&mut client_read, &mut server_write, Direction::Upstream, shared);
    let down = pipe(&mut server_read, &mut client_write, Direction::Downstream, shared);
    let was_reset = tokio::select! {
        _ = async { tokio::join!(up, down) } => false,
        _ = resets.changed() => true,
    };
    if was_reset {
        reset(&client);
        reset(&server);
    }
}

/// Makes the coming close an RST rather than a FIN.
fn reset(stream: &TcpStream) {
    let _ = stream.set_zero_linger();
}

/// Forwards one direction until EOF or an error, applying that direction's faults to each
/// chunk as it passes; at EOF the write side is shut down so the peer sees it.
async fn pipe<R, W>(reader: &mut R, writer: &mut W, direction: Direction, shared: &Shared)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut buffer = vec![0u8; CHUNK_BYTES];
    loop {
        let n = match reader.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let (link, blackhole) = {
            let faults = lock(&shared.faults);
            (faults.link(direction), faults.blackhole)
        };
        if blackhole || link.drop {
            continue;
        }
        if link.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(link.delay_ms)).await;
        }
        if writer.write_all(&buffer[..n]).await.is_err() {
            break;
        }
    }
    let _ = writer.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server on loopback, for driving the proxy without any Atoll process.
    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = stream.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        addr
    }

    async fn round_trip(stream: &mut TcpStream, wait: Duration) -> std::io::Result<Option<Vec<u8>>> {
        stream.write_all(b"ping").await?;
        let mut buffer = [0u8; 4];
        match tokio::time::timeout(wait, stream.read_exact(&mut buffer)).await {
            Ok(read) => read.map(|_| Some(buffer.to_vec())),
            Err(_) => Ok(None),
        }
    }

    const WAIT: Duration = Duration::from_secs(5);
    /// Long enough that a forwarded echo would have come back on a loopback link.
    const SILENCE: Duration = Duration::from_millis(300);

    #[tokio::test]
    async fn forwards_both_ways_until_cut() {
        let proxy = FaultProxy::start("echo", echo_server().await).await.unwrap();
        let mut stream = TcpStream::connect(proxy.listen_addr()).await.unwrap();
        assert_eq!(round_trip(&mut stream, WAIT).await.unwrap(), Some(b"ping".to_vec()));
        proxy.inject(NetFault::Cut);
        let mut buffer = [0u8; 4];
        let read = tokio::time::timeout(WAIT, stream.read(&mut buffer)).await.expect("the cut arrives");
        let reset = matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset);
        assert!(reset, "a cut connection is reset, not closed: {read:?}");
        // A cut is momentary: new connections work.
        let mut fresh = TcpStream::connect(proxy.listen_addr()).await.unwrap();
        assert_eq!(round_trip(&mut fresh, WAIT).await.unwrap(), Some(b"ping".to_vec()));
    }

    #[tokio::test]
    async fn blackhole_holds_connections_silent_until_heal() {
        let proxy = FaultProxy::start("echo", echo_server().await).await.unwrap();
        proxy.inject(NetFault::Blackhole);
        let mut held = TcpStream::connect(proxy.listen_addr()).await.expect("a blackhole still accepts");
        assert_eq!(round_trip(&mut held, SILENCE).await.unwrap(), None, "nothing comes back");
        proxy.heal();
        let mut fresh = TcpStream::connect(proxy.listen_addr()).await.unwrap();
        assert_eq!(round_trip(&mut fresh, WAIT).await.unwrap(), Some(b"ping".to_vec()));
    }

    #[tokio::test]
    async fn dropping_downstream_discards_answers_and_upstream_refuses_connections() {
        let proxy = FaultProxy::start("echo", echo_server().await).await.unwrap();
        let mut stream = TcpStream::connect(proxy.listen_addr()).await.unwrap();
        proxy.inject(NetFault::Drop(Direction::Downstream));
        assert_eq!(round_trip(&mut stream, SILENCE).await.unwrap(), None, "the echo is dropped");
        proxy.heal();
        proxy.inject(NetFault::Drop(Direction::Upstream));
        let mut refused = TcpStream::connect(proxy.listen_addr()).await.unwrap();
        let mut buffer = [0u8; 4];
        let read = tokio::time::timeout(WAIT, refused.read(&mut buffer)).await.expect("closed at once");
        assert!(matches!(read, Ok(0) | Err(_)), "a new connection is closed: {read:?}");
    }

    #[tokio::test]
    async fn delay_keeps_bytes_and_order() {
        let proxy = FaultProxy::start("echo", echo_server().await).await.unwrap();
        proxy.inject(NetFault::Delay(Direction::Upstream, 50));
        proxy.inject(NetFault::Delay(Direction::Downstream, 50));
        let mut stream = TcpStream::connect(proxy.listen_addr()).await.unwrap();
        for _ in 0..3 {
            assert_eq!(round_trip(&mut stream, WAIT).await.unwrap(), Some(b"ping".to_vec()));
        }
        assert_eq!(proxy.open_connections(), 1);
    }
}
