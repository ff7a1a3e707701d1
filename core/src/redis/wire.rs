//! The blocking driver of the engine ([`super::engine`]): [`Wire::drive`] sends a call's
//! attempts and feeds their reply frames to its [`Exchange`], for both sync paths (one node, and
//! each master of a cluster). Its connection over TCP, TLS or a Unix socket is the store's own
//! [`Wire`]: a socket, one reusable read buffer, and the engine's frame scanner, which finds
//! where a reply ends without decoding it.
//!
//! Why not redis-rs's blocking `Connection`: it zero-fills a read buffer before every `recv` and
//! builds a `Value` tree for a few integers (docs/performance.md, "Why the Redis drivers are our
//! own"). Here a reply is one `recv` into a buffer kept between calls, read by the engine's
//! reader ([`super::engine::decode`]) as on every path.
//!
//! [`Wire`] serves every blocking path: `redis://` over TCP, `rediss://` (TLS, [`super::tls`])
//! and `redis+unix://`, speaking RESP2 or, on `?protocol=resp3`, RESP3 (the login says
//! `HELLO 3`, [`super::connect::Dial`]; the engine's reader reads RESP3's replies, and a push
//! answers no call: [`Wire::frame`] drops it). Timeouts are the
//! socket's: the write and read timeouts bound each `send` and `recv`, and every read after a
//! call's plain first one is bounded by the time left until the call's deadline.

use std::io::{Error, ErrorKind, Read, Result, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::connect::Dial;
use super::engine::resp::{self, frame_len};
use super::engine::{Attempt, Exchange, Step, To};
use super::socket::{SyncSocket, Target};

/// What a connect that ran out of time says.
const CONNECTING: &str = "connecting took the whole timeout";

/// The first read buffer; it grows only for a reply that does not fit (an `EVAL` error).
const INITIAL: usize = 512;

/// A blocking connection over TCP, TLS or a Unix socket, pooled by the sync paths (one node, or
/// each master of a cluster).
pub(crate) struct Wire {
    stream: SyncSocket,
    /// Bytes read: `buf[start..end]` is not consumed yet (a later frame of a pipeline).
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The request being written, kept between calls.
    out: Vec<u8>,
    /// The socket's read timeout as last set (a read interrupted by a signal waits only what
    /// is left of it).
    read_timeout: Duration,
}

impl Wire {
    /// Connects to `target` by `deadline` and sends `handshake` (each answered `+OK`, or its
    /// error fails the connect), each step bounded by the time left.
    pub(crate) fn connect(target: &Target, handshake: &[Vec<u8>], deadline: Instant) -> Result<Wire> {
        let stream = match target {
            Target::Tcp(host, port) => SyncSocket::Tcp(connect_tcp(host, *port, deadline)?),
            Target::Tls(host, port, config) => {
                let tcp = connect_tcp(host, *port, deadline)?;
                let t = left(deadline, CONNECTING)?;
                tcp.set_read_timeout(Some(t))?;
                tcp.set_write_timeout(Some(t))?;
                let tls = super::tls::handshake_sync(config.connection(host)?, tcp).map_err(timeout_kind)?;
                SyncSocket::Tls(Box::new(tls))
            }
            // A local socket connects at once or not at all: no timeout to bound.
            #[cfg(unix)]
            Target::Unix(path) => SyncSocket::Unix(std::os::unix::net::UnixStream::connect(path)?),
        };
        let mut wire =
            Wire { stream, buf: vec![0; INITIAL], start: 0, end: 0, out: Vec::new(), read_timeout: Duration::ZERO };
        for command in handshake {
            wire.set_timeouts(left(deadline, CONNECTING)?)?;
            wire.send(command)?;
            if let Some(e) = refused(wire.frame()?) {
                return Err(e);
            }
        }
        wire.set_timeouts(left(deadline, CONNECTING)?)?;
        Ok(wire)
    }

    /// Sets both socket timeouts.
    pub(crate) fn set_timeouts(&mut self, t: Duration) -> Result<()> {
        self.set_read_timeout(t)?;
        self.stream.set_write_timeout(Some(t))?;
        Ok(())
    }

    /// Sets the read timeout.
    pub(crate) fn set_read_timeout(&mut self, t: Duration) -> Result<()> {
        self.stream.set_read_timeout(Some(t))?;
        self.read_timeout = t;
        Ok(())
    }

    /// Writes `bytes` (a packed command or pipeline) whole.
    pub(crate) fn send(&mut self, bytes: &[u8]) -> Result<()> {
        // `flush` sends what TLS buffered (nothing to do on a plain socket).
        self.stream.write_all(bytes).and_then(|()| self.stream.flush()).map_err(timeout_kind)
    }

    /// Writes what `pack` puts in the connection's own buffer (kept between calls).
    pub(crate) fn send_with(&mut self, pack: impl FnOnce(&mut Vec<u8>)) -> Result<()> {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        pack(&mut out);
        let sent = self.send(&out);
        self.out = out;
        sent
    }

    /// The next reply frame, whole (its bytes stay valid until the next read); a RESP3 push on
    /// the way is dropped (it answers no call: the connection subscribes to nothing).
    ///
    /// A read interrupted by a signal handler (`EINTR`: Linux never restarts a `recv` that has
    /// a socket timeout) is read again, waiting what is left of the read timeout: the bytes
    /// read so far stay in the buffer, so nothing is lost and nothing is sent again. That is
    /// why this connection needs no signals held, which saves the two `rt_sigprocmask` calls
    /// per call that redis-rs's connection needs.
    pub(crate) fn frame(&mut self) -> Result<&[u8]> {
        loop {
            let (at, n) = self.next_frame()?;
            if !resp::is_push(&self.buf[at..at + n]) {
                return Ok(&self.buf[at..at + n]);
            }
        }
    }

    /// Where the next frame lies in the buffer, read whole.
    fn next_frame(&mut self) -> Result<(usize, usize)> {
        let mut began = None;
        let mut shortened = false;
        let out = loop {
            if let Some(n) = frame_len(&self.buf[self.start..self.end])? {
                break n;
            }
            // Make room: move the partial frame to the front, grow if it fills the buffer.
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                (self.start, self.end) = (0, self.end - self.start);
            }
            if self.end == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let began = *began.get_or_insert_with(Instant::now);
            match self.stream.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err(io(ErrorKind::UnexpectedEof, "the server closed the connection")),
                Ok(n) => self.end += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {
                    let left = self.read_timeout.saturating_sub(began.elapsed());
                    if left.is_zero() {
                        return Err(io(ErrorKind::TimedOut, "no reply within the read timeout"));
                    }
                    self.stream.set_read_timeout(Some(left))?;
                    shortened = true;
                }
                Err(e) => return Err(timeout_kind(e)),
            }
        };
        if shortened {
            self.stream.set_read_timeout(Some(self.read_timeout))?;
        }
        let at = self.start;
        self.start += out;
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        }
        Ok((at, out))
    }
}

/// A TCP connection to `host:port` (its first address that answers) by `deadline`, with
/// Nagle's delay off.
fn connect_tcp(host: &str, port: u16, deadline: Instant) -> Result<TcpStream> {
    let mut last = None;
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, left(deadline, CONNECTING)?) {
            Ok(s) => {
                s.set_nodelay(true)?;
                return Ok(s);
            }
            Err(e) => last = Some(e),
        }
    }
    match last {
        Some(e) => Err(e),
        None => Err(io(ErrorKind::NotFound, "the host resolved to no address")),
    }
}

impl Wire {
    /// The blocking driver of [`super::engine`]: sends the exchange's current attempt and feeds it its
    /// reply frames until the call is done or asks for another node (a cluster's redirect),
    /// sending the attempts it asks of this node (the fallback after a miss, `TRYAGAIN` after
    /// its pause) on this connection.
    ///
    /// A plain first attempt reads under the socket's own timeout (no system call more per
    /// call); every other read is bounded by the time left until `deadline`, and then the
    /// answer's `true` says the socket's timeouts must be set back before the connection serves
    /// another call. `Err`: the connection failed or timed out after the call was written (it
    /// must be dropped, never reused).
    pub(crate) fn drive(&mut self, x: &mut Exchange<'_>, deadline: Instant) -> Result<(Step, bool)> {
        let mut bounded = false;
        loop {
            let plain = x.plain() && x.attempt() == Attempt::default();
            self.send_with(|out| x.write(out))?;
            loop {
                if !plain {
                    self.set_read_timeout(left(deadline, "no reply within the call's timeout")?)?;
                    bounded = true;
                }
                let step = x.feed(self.frame()?);
                match step {
                    Step::More => {}
                    Step::Again { to: To::Same, pause } => {
                        if !pause.is_zero() {
                            std::thread::sleep(pause);
                        }
                        break;
                    }
                    step => return Ok((step, bounded)),
                }
            }
        }
    }
}

/// The blocking connections of the sync path to one node (one node's, or each master's of a
/// cluster), each serving one call at a time. A connection that answered, whatever it said, is
/// in step and goes back; one that failed or timed out is dropped, never reused, so a late reply
/// cannot be read as the next call's.
pub(crate) struct Pool {
    dial: Dial,
    idle: parking_lot::Mutex<Vec<Wire>>,
    /// The whole call timeout, which a connection back in the pool gets for its next call.
    timeout: Duration,
}

/// How a [`Pool`]'s call failed, for the at-most-once rule.
pub(crate) enum Lost {
    /// No connection could be made: nothing was sent.
    Unsent(Error),
    /// The connection failed or timed out after the call may have been written: it is never
    /// sent again.
    Sent(Error),
}

impl Pool {
    pub(crate) fn new(dial: Dial, timeout: Duration) -> Pool {
        Pool { dial, idle: parking_lot::Mutex::new(Vec::new()), timeout }
    }

    /// Where the node is and how the store's connections log in (the async ones too).
    pub(crate) fn dial(&self) -> &Dial {
        &self.dial
    }

    /// Drops every idle connection.
    pub(crate) fn clear(&self) {
        self.idle.lock().clear();
    }

    /// `x` on an idle connection, or on a new one made by `deadline` ([`Wire::drive`]): the
    /// step that ends it on this node. One deadline covers the whole call: a new connection's
    /// handshake spends part of it, and the call gets what is left (a silent server used to
    /// take twice: see [`Dial`]).
    pub(crate) fn drive(&self, x: &mut Exchange<'_>, deadline: Instant) -> std::result::Result<Step, Lost> {
        let popped = self.idle.lock().pop();
        let (mut conn, fresh) = match popped {
            Some(c) => (c, false),
            None => {
                let (target, login) =
                    self.dial.own().map_err(|what| Lost::Unsent(io(ErrorKind::InvalidInput, what)))?;
                (Wire::connect(target, login, deadline).map_err(Lost::Unsent)?, true)
            }
        };
        let (step, bounded) = conn.drive(x, deadline).map_err(Lost::Sent)?;
        // Timeouts shortened for this call (a new connection's, a bounded read) are set back to
        // the whole timeout; a connection where that fails is dropped.
        if !(fresh || bounded) || conn.set_timeouts(self.timeout).is_ok() {
            self.idle.lock().push(conn);
        }
        Ok(step)
    }
}

/// The time left until `deadline`, or a timeout error saying `what` when none is.
fn left(deadline: Instant, what: &'static str) -> Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() { Err(io(ErrorKind::TimedOut, what)) } else { Ok(left) }
}

/// An IO error of `kind` saying `what` (shared with [`super::pipelined`]).
pub(super) fn io(kind: ErrorKind, what: &'static str) -> Error {
    Error::new(kind, what)
}

/// The error of a login command the server refused (`frame` an error reply: `NOAUTH ...`,
/// `WRONGPASS ...`), as the server words it; `None` for any other reply (shared with
/// [`super::pipelined`]).
pub(super) fn refused(frame: &[u8]) -> Option<Error> {
    resp::error(frame).map(|(code, detail)| Error::new(ErrorKind::PermissionDenied, format!("{code} {detail}")))
}

/// A socket timeout reads as `WouldBlock` on Linux: name it a timeout.
fn timeout_kind(e: Error) -> Error {
    if e.kind() == ErrorKind::WouldBlock { Error::new(ErrorKind::TimedOut, e) } else { e }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;
    use crate::redis::socket::Target;

    /// A RESP3 push before a reply, split over many reads, is dropped: the next frame is the
    /// reply, and the one after it the next reply.
    #[test]
    fn a_push_before_a_reply_is_dropped() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let bytes = b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n*2\r\n:1\r\n#f\r\n>1\r\n_\r\n:7\r\n";
            for b in bytes {
                s.write_all(&[*b]).unwrap();
            }
            s
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut wire = Wire::connect(&Target::Tcp("127.0.0.1".into(), port), &[], deadline).unwrap();
        assert_eq!(wire.frame().unwrap(), b"*2\r\n:1\r\n#f\r\n");
        assert_eq!(wire.frame().unwrap(), b":7\r\n");
        drop(server.join().unwrap());
    }
}
