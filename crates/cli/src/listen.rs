//! The listening socket of `probity serve` and `probity sim serve`.

use crate::failure::Failure;
use std::io;
use std::net::SocketAddr;
use tokio::net::{TcpListener, TcpSocket};

/// Connections the kernel queues before the server accepts them. Burst
/// clients (a load test opening a thousand connections at once) are reset
/// once the queue is full; tokio's `TcpListener::bind` asks for 128. Linux
/// caps the figure at `net.core.somaxconn` (`/proc/sys/net/core/somaxconn`:
/// 4096 by default since Linux 5.4, 128 before; raise it with `sysctl` to
/// use the whole backlog on an older kernel).
pub const BACKLOG: u32 = 1024;

/// A listener on `addr` (`host:port`; a name is resolved and each of its
/// addresses tried in turn) with `SO_REUSEADDR` — a restarted server can
/// take its port back while old connections linger in `TIME_WAIT` — and a
/// backlog of [`BACKLOG`]. A failure is a usage error, `cannot listen on
/// ADDR: REASON`.
pub async fn bind(addr: &str) -> Result<TcpListener, Failure> {
    bind_any(addr)
        .await
        .map_err(|e| Failure::usage(format!("cannot listen on {addr}: {e}")))
}

async fn bind_any(addr: &str) -> io::Result<TcpListener> {
    let mut last = None;
    for a in tokio::net::lookup_host(addr).await? {
        match bind_one(a) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "could not resolve to any address",
        )
    }))
}

fn bind_one(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // Not on Windows, where it would let another process take a port in use.
    #[cfg(not(windows))]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}
