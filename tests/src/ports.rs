//! Free loopback ports for processes that cannot be told to pick their own.

use anyhow::Context;

/// Returns a TCP port on 127.0.0.1 that was free a moment ago.
///
/// The listener is dropped before the port is handed out, so another process may grab
/// it in between; callers whose child fails to bind should retry with a new port. Only
/// use this for programs without a "port 0" option (etcd); `atoll-shard` takes port 0.
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("bind a free port")?;
    let port = listener.local_addr().context("read the bound address")?.port();
    Ok(port)
}
