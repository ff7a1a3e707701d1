//! Where the store's own connections go, and the socket each of its drivers opens there: a TCP
//! host and port, TLS over TCP (`rediss://`, [`super::tls`]), or a Unix socket path
//! (`redis+unix://`), speaking RESP2 or RESP3 as the URL says.
//!
//! The blocking driver ([`super::wire::Wire`]) and the async one ([`super::pipelined::Pipelined`])
//! read and write through these, so TLS and a Unix socket take the same driver, the same frame
//! scanner and the same engine as TCP: only opening the socket differs.

use std::io::{Read, Write};
use std::time::Duration;

use super::connect::Endpoint;
use super::tls::{AsyncTls, SyncTls, TlsConfig};

/// Where a node listens, for the store's own connections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A TCP host and port.
    Tcp(String, u16),
    /// TLS to a TCP host and port, verified as the configuration says.
    Tls(String, u16, TlsConfig),
    /// A Unix socket's path.
    #[cfg(unix)]
    Unix(std::path::PathBuf),
}

impl Target {
    /// Where `endpoint` is (`tls`: the store's TLS configuration, for a `rediss://` URL).
    pub(crate) fn of(endpoint: &Endpoint, tls: Option<&TlsConfig>) -> Option<Target> {
        match (&endpoint.path, endpoint.tls) {
            #[cfg(unix)]
            (Some(path), _) => Some(Target::Unix(path.into())),
            #[cfg(not(unix))]
            (Some(_), _) => None,
            (None, true) => tls.map(|config| Target::Tls(endpoint.host.clone(), endpoint.port, config.clone())),
            (None, false) => Some(Target::Tcp(endpoint.host.clone(), endpoint.port)),
        }
    }
}

/// A blocking socket.
pub(crate) enum SyncSocket {
    Tcp(std::net::TcpStream),
    Tls(Box<SyncTls>),
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixStream),
}

impl SyncSocket {
    /// Sets the read timeout.
    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            SyncSocket::Tcp(s) => s.set_read_timeout(t),
            SyncSocket::Tls(s) => s.sock.set_read_timeout(t),
            #[cfg(unix)]
            SyncSocket::Unix(s) => s.set_read_timeout(t),
        }
    }

    /// Sets the write timeout.
    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            SyncSocket::Tcp(s) => s.set_write_timeout(t),
            SyncSocket::Tls(s) => s.sock.set_write_timeout(t),
            #[cfg(unix)]
            SyncSocket::Unix(s) => s.set_write_timeout(t),
        }
    }
}

impl Read for SyncSocket {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            SyncSocket::Tcp(s) => s.read(buf),
            SyncSocket::Tls(s) => s.read(buf),
            #[cfg(unix)]
            SyncSocket::Unix(s) => s.read(buf),
        }
    }
}

impl Write for SyncSocket {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            SyncSocket::Tcp(s) => s.write(buf),
            SyncSocket::Tls(s) => s.write(buf),
            #[cfg(unix)]
            SyncSocket::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            // rustls buffers what `write` took until `flush`.
            SyncSocket::Tls(s) => s.flush(),
            _ => Ok(()),
        }
    }
}

/// A tokio socket, read and written without `&mut` (the async driver writes from the calls'
/// tasks under its queue's lock and reads from its own task).
pub(crate) enum AsyncSocket {
    Tcp(tokio::net::TcpStream),
    Tls(Box<AsyncTls>),
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

/// What the async driver does with its socket, implemented by each tokio socket type so that
/// the driver is compiled once per type ([`AsyncSocket`] is matched once, when it starts): a
/// read-readiness future wrapped in a match of its own cost each sequential call about 300
/// instructions (callgrind, `core/benches/redis.rs` `TK_BENCH_ONLY=async`).
pub(crate) trait Io {
    /// Waits until the socket may be read.
    fn readable(&self) -> impl std::future::Future<Output = std::io::Result<()>>;
    /// Waits until the socket may be written.
    fn writable(&self) -> impl std::future::Future<Output = std::io::Result<()>>;
    /// Reads what is there, without waiting (`WouldBlock` when nothing is).
    fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize>;
    /// Writes what the socket takes, without waiting (`WouldBlock` when its buffer is full).
    fn try_write(&self, buf: &[u8]) -> std::io::Result<usize>;
    /// Sends what an earlier `try_write` took but could not put on the wire yet (TLS records),
    /// without waiting: `Ok(true)` when nothing is left.
    fn flushed(&self) -> std::io::Result<bool> {
        Ok(true)
    }
}

macro_rules! io_for {
    ($t:ty) => {
        impl Io for $t {
            fn readable(&self) -> impl std::future::Future<Output = std::io::Result<()>> {
                <$t>::readable(self)
            }
            fn writable(&self) -> impl std::future::Future<Output = std::io::Result<()>> {
                <$t>::writable(self)
            }
            fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
                // A read shorter than the buffer drained the socket (a stream socket under
                // epoll), so its read readiness is cleared here, as tokio's own `poll_read`
                // clears it: the driver's next `readable()` then waits for the next reply
                // instead of trying a read that answers `WouldBlock` (a `recvfrom` more per
                // sequential call). An event that came after the read keeps the readiness
                // (tokio clears only the readiness this read saw).
                let (len, mut short) = (buf.len(), 0);
                let read = <$t>::try_io(self, tokio::io::Interest::READABLE, || match <$t>::try_read(self, buf) {
                    Ok(n) if n > 0 && n < len => {
                        short = n;
                        Err(std::io::ErrorKind::WouldBlock.into())
                    }
                    other => other,
                });
                match read {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && short > 0 => Ok(short),
                    other => other,
                }
            }
            fn try_write(&self, buf: &[u8]) -> std::io::Result<usize> {
                <$t>::try_write(self, buf)
            }
        }
    };
}

io_for!(tokio::net::TcpStream);
#[cfg(unix)]
io_for!(tokio::net::UnixStream);
