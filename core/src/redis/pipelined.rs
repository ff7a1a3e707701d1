//! The store's own async connection to a node over plain TCP, TLS or a Unix socket, speaking
//! RESP2 or, on `?protocol=resp3`, RESP3 (one node's, or each master's of a cluster): the async twin of [`super::wire::Wire`]. Calls queue their packed commands
//! and wait for their replies; a driver task on the bound runtime writes what is queued (once
//! the tasks queued with it have run, so that the calls made in one turn share a write:
//! [`behind_the_queue`]; a call that makes [`WRITE_EVERY`] queued in one turn writes them
//! itself) and hands each reply frame, whole and undecoded, to the oldest call still owed one.
//!
//! Why not redis-rs's `MultiplexedConnection`: it decodes every reply into a
//! `Value` tree on its driver (docs/performance.md, "Why the Redis drivers are our own"). Here
//! the driver only finds where each frame ends ([`super::engine::resp::frame_len`]), and the
//! caller's task reads the reply with the engine's reader ([`super::engine::decode`]), as on
//! every path.
//!
//! Replies are matched to calls in the order the calls were queued, which is the order their
//! bytes were written (a command is queued whole, with its waiter, under one lock and before
//! the call's first await, and bytes are written only under that lock, from the front of the
//! queue). A call that stops waiting (its timeout) keeps its place: its reply
//! is read when it comes and dropped, never handed to the next call. Anything that breaks the
//! stream (a read or write error, the server closing, bytes that are no RESP frame or a reply no
//! call is owed) kills the connection: every waiting call and every later one fails with an IO
//! error, which retires the connection ([`super::bound`]); nothing is sent again. The driver
//! ends, closing the socket, when the last handle is dropped (the connection retired, the store
//! closed) or when its runtime shuts down. A RESP3 push (out-of-band data: the connection
//! subscribes to nothing) answers no call and is dropped wherever it lies.

use std::collections::VecDeque;
use std::io::{Error, ErrorKind, Result};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::{Notify, oneshot};

use super::engine::resp::{self, frame_len};
use super::engine::value::Args;
use super::engine::{Driven, Step};
use super::socket::{AsyncSocket, Io, Target};
use super::tls::AsyncTls;
use super::wire::{io, refused};

/// The read buffer, one per connection for its life; it grows only for a reply that does not fit.
///
/// Why this size: each read takes what the server answered since the last one, and with calls
/// in flight that is a batch of replies (a GCRA decision's frame is about 50 bytes; 64 of them
/// are about 3 KB). A buffer smaller than the batch reads it in several `recvfrom`s: at 512
/// bytes, 3 per server read on a 3-master cluster at 64 in flight (`bench/cluster`), where one
/// does.
const INITIAL: usize = 16 * 1024;

/// A handle on the connection; clones share it. The last one dropped ends the driver.
#[derive(Clone)]
pub(crate) struct Pipelined {
    owner: Arc<Owner>,
}

/// Held only by handles: its drop tells the driver that nobody can queue a call any more.
struct Owner {
    shared: Arc<Shared>,
}

pub(super) struct Shared {
    pub(super) state: parking_lot::Mutex<State>,
    /// Wakes the driver: bytes were queued, or the last handle went.
    pub(super) wake: Notify,
    /// The socket. Bytes are written only under `state`'s lock, from the front of `out`, so
    /// whoever writes (a call, inline, or the driver) keeps them in queue order; only the
    /// driver reads.
    pub(super) stream: AsyncSocket,
}

#[derive(Default)]
pub(super) struct State {
    /// Packed commands queued and not yet written.
    out: Vec<u8>,
    /// Calls queued since bytes were last written.
    unsent: usize,
    /// The calls the last write carried (see [`Pipelined::request`]'s sequential case).
    last_write: usize,
    /// Calls owed replies, oldest first (a call that stopped waiting keeps its place).
    waiting: VecDeque<Waiter>,
    /// The stream broke or the driver ended: no call is queued any more.
    pub(super) dead: bool,
    /// The last handle is gone.
    pub(super) released: bool,
    /// A thread's [`Batch`](super::batch::Batch) holds what is queued: it writes it, and the
    /// driver was not woken.
    held: bool,
    /// Why the stream broke, told to every call it fails (a TLS alert, say, rather than "lost").
    cause: Option<std::io::Error>,
    /// Writes made (tests).
    #[cfg(test)]
    writes: usize,
}

impl State {
    /// The error a call gets once the connection is dead.
    fn lost(&self) -> Error {
        match &self.cause {
            Some(e) => Error::new(e.kind(), e.to_string()),
            None => io(ErrorKind::ConnectionReset, "the connection was lost"),
        }
    }
}

struct Waiter {
    /// Reply frames owed to this call (a pipeline's commands each have one).
    frames: usize,
    tx: oneshot::Sender<Result<Vec<u8>>>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shared.state.lock().released = true;
        self.shared.wake.notify_one();
    }
}

impl Pipelined {
    /// Connects to `target`, starts the driver on the current runtime and sends `handshake`
    /// through it, each command answered with anything but an error, all within `timeout`.
    pub(crate) async fn connect(target: &Target, handshake: &[Vec<u8>], timeout: Duration) -> Result<Pipelined> {
        let setup = async {
            let stream = match target {
                Target::Tcp(host, port) => {
                    let stream = TcpStream::connect((host.as_str(), *port)).await?;
                    stream.set_nodelay(true)?;
                    AsyncSocket::Tcp(stream)
                }
                Target::Tls(host, port, config) => {
                    let tcp = TcpStream::connect((host.as_str(), *port)).await?;
                    tcp.set_nodelay(true)?;
                    AsyncSocket::Tls(Box::new(AsyncTls::handshake(config.connection(host)?, tcp).await?))
                }
                #[cfg(unix)]
                Target::Unix(path) => AsyncSocket::Unix(tokio::net::UnixStream::connect(path).await?),
            };
            let shared =
                Arc::new(Shared { state: parking_lot::Mutex::new(State::default()), wake: Notify::new(), stream });
            tokio::spawn(drive(shared.clone()));
            // Dropped on an error or at the timeout, the handle ends the driver.
            let conn = Pipelined { owner: Arc::new(Owner { shared }) };
            for command in handshake {
                let reply = conn.request(1, |out| out.extend_from_slice(command)).await?;
                if let Some(e) = refused(&reply) {
                    return Err(e);
                }
            }
            Ok::<_, Error>(conn)
        };
        tokio::time::timeout(timeout, setup)
            .await
            .map_err(|_| io(ErrorKind::TimedOut, "connecting took the whole timeout"))?
    }

    /// Queues what `pack` writes (`frames` commands) and waits for their reply frames, returned
    /// as one buffer.
    pub(crate) async fn request(&self, frames: usize, pack: impl FnOnce(&mut Vec<u8>)) -> Result<Vec<u8>> {
        let shared = &self.owner.shared;
        let (tx, rx) = oneshot::channel();
        // Whether the driver must write: the queue was empty (nobody has woken it yet), or a
        // write made here did not take everything. The first case is left to this thread's open
        // [`Batch`](super::batch::Batch), if it has one: it writes at its turn's end; so is a
        // queue another thread's batch holds (else the driver writes it now: that thread's turn
        // may be long, or its loop stopped).
        let wake = {
            let mut state = shared.state.lock();
            if state.dead {
                return Err(state.lost());
            }
            let first = state.out.is_empty();
            pack(&mut state.out);
            state.waiting.push_back(Waiter { frames, tx });
            state.unsent += 1;
            if state.unsent >= WRITE_EVERY {
                // Enough calls queued in this turn: write them now, so that the server starts
                // on them while later calls are still being made ([`WRITE_EVERY`]).
                !matches!(flush_socket(&mut state, &shared.stream), Ok(true))
            } else if first || state.held {
                state.held = super::batch::held(&self.owner.shared);
                if !state.held && state.waiting.len() == 1 && state.last_write == 1 {
                    // Sequential: no other call is in flight and the last write carried one
                    // call, so no call is likely to join this one in this turn. It is written
                    // now, from the caller's task: the driver is then polled once per call (for
                    // the reply), not three times (woken, stepping behind the queue, writing).
                    !matches!(flush_socket(&mut state, &shared.stream), Ok(true))
                } else {
                    !state.held
                }
            } else {
                false
            }
        };
        if wake {
            shared.wake.notify_one();
        }
        rx.await.unwrap_or_else(|_| Err(io(ErrorKind::ConnectionReset, "the connection is closed")))
    }

    /// One command's reply frame, undecoded.
    pub(crate) async fn frame(&self, command: &Args) -> Result<Vec<u8>> {
        self.request(1, |out| resp::write_command(out, command.iter())).await
    }
}

/// Ends the connection however the driver stops (an error, the last handle gone, its runtime
/// shut down, which drops the task): no call is queued any more, and every call still owed a
/// reply fails now rather than at its timeout.
struct Kill(Arc<Shared>);

impl Drop for Kill {
    fn drop(&mut self) {
        let mut state = self.0.state.lock();
        state.dead = true;
        state.out.clear();
        for w in std::mem::take(&mut state.waiting) {
            let _ = w.tx.send(Err(state.lost()));
        }
    }
}

/// A call that finds this many calls queued since the last write writes them itself, at once,
/// instead of leaving them to the driver.
///
/// Why: the driver runs after every task already queued in the runtime's turn, so on a busy
/// thread (serve's gRPC thread at 64 streams) a turn's calls would all leave in one write at its
/// end, and the thread, Redis and the load generator would take turns instead of overlapping.
/// Fewer calls than this in one turn are written by the driver, in one write. (The value
/// measured best: docs/performance.md.)
const WRITE_EVERY: usize = 16;

/// Writes what `state` has queued, without waiting: `Ok(true)` when all of it went,
/// `Ok(false)` when the socket's buffer is full (the rest stays queued, in order).
pub(super) fn flush_socket(state: &mut State, stream: &AsyncSocket) -> std::io::Result<bool> {
    match stream {
        AsyncSocket::Tcp(s) => flush(state, s),
        AsyncSocket::Tls(s) => flush(state, &**s),
        #[cfg(unix)]
        AsyncSocket::Unix(s) => flush(state, s),
    }
}

/// [`flush_socket`] on the socket's own type.
fn flush<S: Io>(state: &mut State, stream: &S) -> std::io::Result<bool> {
    // Whoever writes now finishes the queue (or has the driver finish it).
    state.held = false;
    let mut at = 0;
    let result = loop {
        if at == state.out.len() {
            break stream.flushed();
        }
        match stream.try_write(&state.out[at..]) {
            Ok(0) => break Err(std::io::Error::new(ErrorKind::WriteZero, "the socket took no bytes")),
            Ok(n) => at += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break Ok(false),
            Err(e) => break Err(e),
        }
    };
    if at > 0 {
        #[cfg(test)]
        {
            state.writes += 1;
        }
        state.last_write = state.unsent;
        state.unsent = 0;
        if at == state.out.len() {
            state.out.clear();
        } else {
            state.out.drain(..at);
        }
    }
    result
}

/// The driver: writes what calls queue, reads replies and hands them out in order.
async fn drive(shared: Arc<Shared>) {
    let _kill = Kill(shared.clone());
    let cause = match &shared.stream {
        AsyncSocket::Tcp(s) => drive_on(&shared, s).await,
        AsyncSocket::Tls(s) => drive_on(&shared, &**s).await,
        #[cfg(unix)]
        AsyncSocket::Unix(s) => drive_on(&shared, s).await,
    };
    shared.state.lock().cause = cause;
}

/// [`drive`] on the socket's own type; returns why the stream broke (`None`: the last handle went).
async fn drive_on<S: Io>(shared: &Shared, stream: &S) -> Option<std::io::Error> {
    let mut buf = vec![0; INITIAL];
    // `buf[start..end]` is read and not handed out yet.
    let (mut start, mut end) = (0, 0);
    loop {
        tokio::select! {
            biased;
            ready = stream.readable() => {
                if let Err(e) = ready {
                    return Some(e);
                }
                match stream.try_read(&mut buf[end..]) {
                    Ok(0) => return Some(std::io::Error::new(ErrorKind::UnexpectedEof, "the server closed the connection")),
                    Ok(n) => end += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                    Err(e) => return Some(e),
                }
                match hand_out(shared, &buf[start..end]) {
                    Ok(used) => start += used,
                    Err(()) => return Some(std::io::Error::new(ErrorKind::InvalidData, "a reply that is no RESP frame, or that no call is owed")),
                }
                if start == end {
                    (start, end) = (0, 0);
                } else if end == buf.len() {
                    // Make room for the rest of a partial frame.
                    buf.copy_within(start..end, 0);
                    (start, end) = (0, end - start);
                    if end == buf.len() {
                        buf.resize(buf.len() * 2, 0);
                    }
                }
            }
            () = shared.wake.notified() => {
                behind_the_queue().await;
                loop {
                    let written = {
                        let mut state = shared.state.lock();
                        if state.released {
                            return None;
                        }
                        flush(&mut state, stream)
                    };
                    match written {
                        Ok(true) => break,
                        Ok(false) => {
                            if let Err(e) = stream.writable().await {
                                return Some(e);
                            }
                        }
                        Err(e) => return Some(e),
                    }
                }
            }
        }
    }
}

/// Returns after the tasks already queued on this worker have run (the task wakes itself, so
/// it is queued behind them; unlike [`tokio::task::yield_now`], which waits for the worker to
/// poll its IO driver first: an `epoll_wait` more per sequential call).
///
/// Why the driver waits for them before writing: on a multi-thread runtime a task woken by
/// another task runs next on that worker (tokio's LIFO slot), so the driver, woken by the first
/// call of a turn, would write each call alone and the server would read them one by one;
/// behind the queue, a turn's calls share a write (docs/performance.md). On a current-thread
/// runtime the driver was already behind the turn's tasks; a sequential call pays one more poll
/// of the driver task.
async fn behind_the_queue() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if std::mem::replace(&mut yielded, true) {
            return std::task::Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await
}

/// Hands the whole replies at the start of `bytes` to the calls owed them, oldest first;
/// returns the bytes used. A push is dropped, never counted as a reply. `Err` when the stream is
/// broken: bytes that start no RESP frame, or a reply no call is owed.
fn hand_out(shared: &Shared, bytes: &[u8]) -> std::result::Result<usize, ()> {
    let mut used = 0;
    loop {
        if used == bytes.len() {
            return Ok(used);
        }
        let mut state = shared.state.lock();
        let Some(frames) = state.waiting.front().map(|w| w.frames) else {
            // No call is owed a reply: only a push may come.
            drop(state);
            match frame_len(&bytes[used..]) {
                Ok(Some(n)) if resp::is_push(&bytes[used..]) => {
                    used += n;
                    continue;
                }
                Ok(None) => return Ok(used),
                _ => return Err(()),
            }
        };
        let mut at = used;
        let mut pushes = false;
        let mut got = 0;
        while got < frames {
            match frame_len(&bytes[at..]) {
                Ok(Some(n)) => {
                    if resp::is_push(&bytes[at..]) {
                        pushes = true;
                    } else {
                        got += 1;
                    }
                    at += n;
                }
                Ok(None) => return Ok(used),
                Err(_) => return Err(()),
            }
        }
        let waiter = state.waiting.pop_front().expect("a waiter was there");
        drop(state);
        let reply = if pushes { without_pushes(&bytes[used..at]) } else { bytes[used..at].to_vec() };
        // A call that stopped waiting drops its reply here.
        let _ = waiter.tx.send(Ok(reply));
        used = at;
    }
}

/// The whole frames of `bytes` but its pushes.
fn without_pushes(mut bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    while let Ok(Some(n)) = frame_len(bytes) {
        if !resp::is_push(bytes) {
            out.extend_from_slice(&bytes[..n]);
        }
        bytes = &bytes[n..];
    }
    out
}

impl Pipelined {
    /// A connection to `dial`'s node, logged in as its URL says (RESP2, or `HELLO 3` on
    /// `?protocol=resp3`), connected within `timeout` from the runtime that polls this (the
    /// driver task is spawned there).
    pub(crate) async fn open(dial: &super::connect::Dial, timeout: Duration) -> Result<Pipelined> {
        let (target, login) = dial.own().map_err(|what| io(ErrorKind::InvalidInput, what))?;
        Pipelined::connect(target, login, timeout).await
    }

    /// The async driver of the engine: sends the exchange's current attempt and feeds it the
    /// attempt's reply frames; the step that ends the attempt ([`Step::Done`], or
    /// [`Step::Again`] for the caller to follow). The frames come back whole and undecoded, and
    /// a decision is read where it lies. `Err`: the connection failed after the attempt may have been written.
    pub(crate) async fn attempt<X: Driven>(&self, x: &mut X) -> Result<Step<X::Out>> {
        let bytes = self.request(x.replies(), |out| x.write(out)).await?;
        feed(x, &bytes)
    }
}

/// Feeds `bytes`, the reply frames of `x`'s current attempt as [`Pipelined::request`] returned
/// them, to `x`: the step that ends the attempt.
fn feed<X: Driven>(x: &mut X, bytes: &[u8]) -> Result<Step<X::Out>> {
    if x.replies() == 1 {
        // The driver handed out exactly one whole frame.
        return Ok(x.feed(bytes));
    }
    for frame in resp::frames(bytes) {
        match x.feed(frame) {
            Step::More => {}
            step => return Ok(step),
        }
    }
    Err(io(ErrorKind::InvalidData, "a partial frame"))
}

#[cfg(test)]
pub(super) mod tests;
