//! TLS (`rediss://`) under the store's own drivers: rustls with the ring provider, driven by hand
//! over the same sockets as plain TCP, so a TLS connection takes the same blocking driver
//! ([`super::wire::Wire`]), async driver ([`super::pipelined::Pipelined`]), frame scanner and
//! engine as a plain one; only the bytes on the socket differ.
//!
//! Verification is always on: the server's chain must lead to the `tls_ca_file` certificates
//! (or, without that option, to the system's roots, loaded by `rustls-native-certs`), and its
//! certificate must name the URL's host. `tls_cert_file` + `tls_key_file` add a client
//! certificate (mutual TLS). There is no option that skips verification.

use std::io::{ErrorKind, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection};

use crate::error::{Error, Result};

/// A client configuration, shared by every connection of a store. Equal only to itself (the
/// options that built it are compared where it matters: [`super::socket::Target`]).
#[derive(Clone)]
pub(crate) struct TlsConfig(pub Arc<ClientConfig>);

impl PartialEq for TlsConfig {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for TlsConfig {}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsConfig")
    }
}

impl TlsConfig {
    /// The configuration for `ca` (PEM roots; `None`: the system's) and `client` (a PEM
    /// certificate chain and its key). `config_invalid` names the option whose file does not
    /// parse; `store_unavailable` when the system has no roots to load.
    pub(crate) fn new(ca: Option<&[u8]>, client: Option<(&[u8], &[u8])>) -> Result<TlsConfig> {
        install_crypto_provider();
        let roots = crate::tls_roots::load(ca, |why| Error::config("redis.tls_ca_file", &why))?;
        let builder = ClientConfig::builder().with_root_certificates(roots);
        let config = match client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = CertificateDer::pem_slice_iter(cert)
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| Error::config("redis.tls_cert_file", &format!("does not parse: {e}")))?;
                let key = PrivateKeyDer::from_pem_slice(key)
                    .map_err(|e| Error::config("redis.tls_key_file", &format!("does not parse: {e}")))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| Error::config("redis.tls_cert_file", &format!("with tls_key_file: {e}")))?
            }
        };
        Ok(TlsConfig(Arc::new(config)))
    }

    /// A client connection to `host` (a DNS name or an IP address, as the URL spells it).
    pub(crate) fn connection(&self, host: &str) -> std::io::Result<ClientConnection> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, format!("{host:?} is no server name: {e}")))?;
        ClientConnection::new(self.0.clone(), name).map_err(invalid)
    }
}

/// rustls needs one process-wide crypto provider. Ring is the only one compiled in by core, but
/// another crate in the process could enable a second, after which rustls refuses to guess:
/// installing ring first (if nobody installed one) keeps that from ever failing a connect.
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing the race to another installer is fine: a provider is then in place.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// A rustls error as an IO error (a failed verification names its cause: `UnknownIssuer`, ...).
fn invalid(e: rustls::Error) -> std::io::Error {
    std::io::Error::new(ErrorKind::InvalidData, e)
}

/// A blocking TLS stream: the handshake is finished by [`handshake_sync`], under the socket's
/// timeouts, before the first command.
pub(crate) type SyncTls = rustls::StreamOwned<ClientConnection, std::net::TcpStream>;

/// Runs the handshake on `tcp` (whose timeouts bound each read and write).
pub(crate) fn handshake_sync(mut conn: ClientConnection, mut tcp: std::net::TcpStream) -> std::io::Result<SyncTls> {
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp)?;
    }
    while conn.wants_write() {
        conn.write_tls(&mut tcp)?;
    }
    Ok(rustls::StreamOwned::new(conn, tcp))
}

/// An async TLS stream for [`super::pipelined::Pipelined`]: read and written without `&mut`, like
/// the plain sockets ([`super::socket::Io`]), the TLS state under a lock held only for one
/// non-blocking step.
pub(crate) struct AsyncTls {
    tcp: tokio::net::TcpStream,
    tls: parking_lot::Mutex<ClientConnection>,
    /// Plaintext is decrypted and not read yet: the socket may be read though it has nothing.
    buffered: AtomicBool,
}

/// `tcp`'s non-blocking reads, as [`Read`] for rustls.
struct TryRead<'a>(&'a tokio::net::TcpStream);

impl Read for TryRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.try_read(buf)
    }
}

/// `tcp`'s non-blocking writes, as [`Write`] for rustls.
struct TryWrite<'a>(&'a tokio::net::TcpStream);

impl Write for TryWrite<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.try_write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes the TLS records `conn` holds without waiting: `Ok(true)` when none is left.
fn drain(conn: &mut ClientConnection, tcp: &tokio::net::TcpStream) -> std::io::Result<bool> {
    while conn.wants_write() {
        match conn.write_tls(&mut TryWrite(tcp)) {
            Ok(0) => return Err(std::io::Error::new(ErrorKind::WriteZero, "the socket took no bytes")),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

impl AsyncTls {
    /// Runs the handshake on `tcp`; the caller bounds it with its timeout.
    pub(crate) async fn handshake(mut conn: ClientConnection, tcp: tokio::net::TcpStream) -> std::io::Result<AsyncTls> {
        loop {
            while !drain(&mut conn, &tcp)? {
                tcp.writable().await?;
            }
            if !conn.is_handshaking() {
                break;
            }
            tcp.readable().await?;
            match conn.read_tls(&mut TryRead(&tcp)) {
                Ok(0) => return Err(std::io::Error::new(ErrorKind::UnexpectedEof, "the server closed the connection")),
                Ok(_) => {
                    conn.process_new_packets().map_err(|e| {
                        // Tell the server why (the alert rustls queued), best effort.
                        let _ = drain(&mut conn, &tcp);
                        invalid(e)
                    })?;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        let buffered = AtomicBool::new(conn.process_new_packets().map_err(invalid)?.plaintext_bytes_to_read() > 0);
        Ok(AsyncTls { tcp, tls: parking_lot::Mutex::new(conn), buffered })
    }
}

impl super::socket::Io for AsyncTls {
    async fn readable(&self) -> std::io::Result<()> {
        if self.buffered.load(Ordering::Acquire) {
            return Ok(());
        }
        self.tcp.readable().await
    }

    fn writable(&self) -> impl std::future::Future<Output = std::io::Result<()>> {
        self.tcp.writable()
    }

    fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut conn = self.tls.lock();
        loop {
            match conn.reader().read(buf) {
                Ok(n) => {
                    let left = conn.process_new_packets().map_err(invalid)?.plaintext_bytes_to_read();
                    self.buffered.store(left > 0, Ordering::Release);
                    return Ok(n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            self.buffered.store(false, Ordering::Release);
            // Nothing decrypted: read records (`WouldBlock` when the socket has none).
            if conn.read_tls(&mut TryRead(&self.tcp))? == 0 {
                // The server closed: the reader says how (cleanly or not) on the next turn.
                conn.process_new_packets().map_err(invalid)?;
                return match conn.reader().read(buf) {
                    Ok(n) => Ok(n),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(0),
                    Err(e) => Err(e),
                };
            }
            conn.process_new_packets().map_err(invalid)?;
            // Records the server asked for (a key update), best effort: the next write sends
            // what this one could not.
            drain(&mut conn, &self.tcp)?;
        }
    }

    fn try_write(&self, buf: &[u8]) -> std::io::Result<usize> {
        let mut conn = self.tls.lock();
        // Records left from the last write go first; plaintext is taken only when they went,
        // so what rustls holds stays one write's worth.
        if !drain(&mut conn, &self.tcp)? {
            return Err(std::io::Error::new(ErrorKind::WouldBlock, "the socket's buffer is full"));
        }
        let n = conn.writer().write(buf)?;
        drain(&mut conn, &self.tcp)?;
        Ok(n)
    }

    fn flushed(&self) -> std::io::Result<bool> {
        drain(&mut self.tls.lock(), &self.tcp)
    }
}
