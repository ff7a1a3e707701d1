//! A bound runtime's own connection to a plain-TCP, RESP2 node: the async twin of
//! [`super::wire::Wire`]. Calls queue their packed commands and wait for their replies; a
//! driver task on the bound runtime writes what is queued (several calls' commands in one
//! write when they queue together) and hands each reply frame, whole and undecoded, to the
//! oldest call still owed one.
//!
//! Why not redis-rs's [`redis::aio::MultiplexedConnection`]: per sequential call its driver
//! spent 7.3k of the client's 23.2k instructions decoding the reply into a `Value` tree with
//! its `combine` parser, and about 1.5k more in its request channel and reply hand-off
//! (callgrind, `core/benches/redis.rs` `TK_BENCH_ONLY=async`; `docs/performance.md`). Here the
//! driver only finds where each frame ends ([`super::wire::frame_len`]); a decision reply is
//! read by [`super::transport::outcome`]'s integer reader on the caller's task, and every other
//! reply (an error, the fallback's, `WAIT`'s) by redis-rs's parser from the frame, so what a
//! reply means is unchanged.
//!
//! Replies are matched to calls in the order the calls were queued, which is the order their
//! bytes were written (a command is queued whole, with its waiter, under one lock and before
//! the call's first await). A call that stops waiting (its timeout) keeps its place: its reply
//! is read when it comes and dropped, never handed to the next call. Anything that breaks the
//! stream (a read or write error, the server closing, bytes that are no RESP2 frame or that no
//! call is owed) kills the connection: every waiting call and every later one fails with an IO
//! error, which retires the connection ([`super::bound`]); nothing is sent again. The driver
//! ends, closing the socket, when the last handle is dropped (the connection retired, the store
//! closed) or when its runtime shuts down.

use std::collections::VecDeque;
use std::io::ErrorKind;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{Notify, oneshot};

use super::wire::{frame_len, io};

/// The first read buffer; it grows only for a reply that does not fit.
const INITIAL: usize = 512;

/// A handle on the connection; clones share it. The last one dropped ends the driver.
#[derive(Clone)]
pub(crate) struct Pipelined {
    owner: Arc<Owner>,
}

/// Held only by handles: its drop tells the driver that nobody can queue a call any more.
struct Owner {
    shared: Arc<Shared>,
}

struct Shared {
    state: parking_lot::Mutex<State>,
    /// Wakes the driver: bytes were queued, or the last handle went.
    wake: Notify,
}

#[derive(Default)]
struct State {
    /// Packed commands queued and not yet written.
    out: Vec<u8>,
    /// Calls owed replies, oldest first (a call that stopped waiting keeps its place).
    waiting: VecDeque<Waiter>,
    /// The stream broke or the driver ended: no call is queued any more.
    dead: bool,
    /// The last handle is gone.
    released: bool,
}

struct Waiter {
    /// Reply frames owed to this call (a pipeline's commands each have one).
    frames: usize,
    tx: oneshot::Sender<RedisResult<Vec<u8>>>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shared.state.lock().released = true;
        self.shared.wake.notify_one();
    }
}

impl Pipelined {
    /// Connects to `host:port` and sends `handshake` (each answered with anything but an
    /// error), all within `timeout`, then starts the driver on the current runtime.
    pub(crate) async fn connect(
        host: &str,
        port: u16,
        handshake: &[Vec<u8>],
        timeout: Duration,
    ) -> RedisResult<Pipelined> {
        let setup = async {
            let mut stream = TcpStream::connect((host, port)).await?;
            stream.set_nodelay(true)?;
            let mut buf = vec![0; INITIAL];
            let mut end = 0;
            for command in handshake {
                write_all(&mut stream, command).await?;
                let n = loop {
                    if let Some(n) = frame_len(&buf[..end])? {
                        break n;
                    }
                    if end == buf.len() {
                        buf.resize(buf.len() * 2, 0);
                    }
                    match read(&mut stream, &mut buf[end..]).await? {
                        0 => return Err(io(ErrorKind::UnexpectedEof, "the server closed the connection")),
                        k => end += k,
                    }
                };
                if let Value::ServerError(e) = redis::parse_redis_value(&buf[..n])? {
                    return Err(e.into());
                }
                buf.copy_within(n..end, 0);
                end -= n;
            }
            if end > 0 {
                return Err(io(ErrorKind::InvalidData, "a reply no command asked for"));
            }
            Ok::<_, RedisError>((stream, buf))
        };
        let (stream, buf) = tokio::time::timeout(timeout, setup)
            .await
            .map_err(|_| io(ErrorKind::TimedOut, "connecting took the whole timeout"))??;
        let shared = Arc::new(Shared { state: parking_lot::Mutex::new(State::default()), wake: Notify::new() });
        tokio::spawn(drive(shared.clone(), stream, buf));
        Ok(Pipelined { owner: Arc::new(Owner { shared }) })
    }

    /// Queues what `pack` writes (`frames` commands) and waits for their reply frames, returned
    /// as one buffer.
    async fn request(&self, frames: usize, pack: impl FnOnce(&mut Vec<u8>)) -> RedisResult<Vec<u8>> {
        let shared = &self.owner.shared;
        let (tx, rx) = oneshot::channel();
        let first = {
            let mut state = shared.state.lock();
            if state.dead {
                return Err(io(ErrorKind::ConnectionReset, "the connection is closed"));
            }
            let first = state.out.is_empty();
            pack(&mut state.out);
            state.waiting.push_back(Waiter { frames, tx });
            first
        };
        if first {
            shared.wake.notify_one();
        }
        rx.await.unwrap_or_else(|_| Err(io(ErrorKind::ConnectionReset, "the connection is closed")))
    }

    /// One command's reply frame, undecoded.
    pub(crate) async fn frame(&self, cmd: &Cmd) -> RedisResult<Vec<u8>> {
        self.request(1, |out| cmd.write_packed_command(out)).await
    }

    /// A pipeline's replies, decoded by redis-rs's parser (server errors as
    /// [`Value::ServerError`]).
    pub(crate) async fn values(&self, pipeline: &Pipeline) -> RedisResult<Vec<Value>> {
        let frames = pipeline.len();
        let bytes = self.request(frames, |out| out.extend_from_slice(&pipeline.get_packed_pipeline())).await?;
        let mut values = Vec::with_capacity(frames);
        let mut at = 0;
        while at < bytes.len() {
            let n = frame_len(&bytes[at..])?.ok_or_else(|| io(ErrorKind::InvalidData, "a partial frame"))?;
            values.push(redis::parse_redis_value(&bytes[at..at + n])?);
            at += n;
        }
        Ok(values)
    }
}

impl ConnectionLike for Pipelined {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move { redis::parse_redis_value(&self.frame(cmd).await?) })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move { Ok(self.values(pipeline).await?.into_iter().skip(offset).take(count).collect()) })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// Ends the connection however the driver stops (an error, the last handle gone, its runtime
/// shut down, which drops the task): no call is queued any more, and every call still owed a
/// reply fails now rather than at its timeout.
struct Kill(Arc<Shared>);

impl Drop for Kill {
    fn drop(&mut self) {
        let waiting = {
            let mut state = self.0.state.lock();
            state.dead = true;
            state.out.clear();
            std::mem::take(&mut state.waiting)
        };
        for w in waiting {
            let _ = w.tx.send(Err(io(ErrorKind::ConnectionReset, "the connection was lost")));
        }
    }
}

/// The driver: writes what calls queue, reads replies and hands them out in order.
async fn drive(shared: Arc<Shared>, mut stream: TcpStream, mut buf: Vec<u8>) {
    let _kill = Kill(shared.clone());
    let (mut rd, mut wr) = stream.split();
    let mut sending = Vec::new();
    // `buf[start..end]` is read and not handed out yet.
    let (mut start, mut end) = (0, 0);
    loop {
        tokio::select! {
            biased;
            read = read(&mut rd, &mut buf[end..]) => {
                match read {
                    Ok(0) | Err(_) => return,
                    Ok(n) => end += n,
                }
                match hand_out(&shared, &buf[start..end]) {
                    Ok(used) => start += used,
                    Err(()) => return,
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
                {
                    let mut state = shared.state.lock();
                    if state.released {
                        return;
                    }
                    std::mem::swap(&mut state.out, &mut sending);
                }
                if !sending.is_empty() && write_all(&mut wr, &sending).await.is_err() {
                    return;
                }
                sending.clear();
            }
        }
    }
}

/// Hands the whole replies at the start of `bytes` to the calls owed them, oldest first;
/// returns the bytes used. `Err` when the stream is broken: bytes that start no RESP2 frame, or
/// a reply no call is owed.
fn hand_out(shared: &Shared, bytes: &[u8]) -> std::result::Result<usize, ()> {
    let mut used = 0;
    loop {
        if used == bytes.len() {
            return Ok(used);
        }
        let mut state = shared.state.lock();
        let Some(frames) = state.waiting.front().map(|w| w.frames) else { return Err(()) };
        let mut at = used;
        for _ in 0..frames {
            match frame_len(&bytes[at..]) {
                Ok(Some(n)) => at += n,
                Ok(None) => return Ok(used),
                Err(_) => return Err(()),
            }
        }
        let waiter = state.waiting.pop_front().expect("a waiter was there");
        drop(state);
        // A call that stopped waiting drops its reply here.
        let _ = waiter.tx.send(Ok(bytes[used..at].to_vec()));
        used = at;
    }
}

/// Reads what is there into `buf` (tokio's `AsyncRead`, without the `io-util` feature).
async fn read<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    std::future::poll_fn(|cx| {
        let mut b = ReadBuf::new(buf);
        std::task::ready!(std::pin::Pin::new(&mut *r).poll_read(cx, &mut b))?;
        std::task::Poll::Ready(Ok(b.filled().len()))
    })
    .await
}

/// Writes all of `bytes`.
async fn write_all<W: AsyncWrite + Unpin>(w: &mut W, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let n = std::future::poll_fn(|cx| std::pin::Pin::new(&mut *w).poll_write(cx, bytes)).await?;
        if n == 0 {
            return Err(std::io::Error::new(ErrorKind::WriteZero, "the socket took no bytes"));
        }
        bytes = &bytes[n..];
    }
    Ok(())
}

/// A direct-path connection: redis-rs's multiplexed connection (the store's own runtime's, and
/// a bound runtime's on TLS, Unix sockets or RESP3), or a bound runtime's [`Pipelined`].
#[derive(Clone)]
pub(crate) enum AsyncConn {
    Crate(redis::aio::MultiplexedConnection),
    Own(Pipelined),
}

impl ConnectionLike for AsyncConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            AsyncConn::Crate(c) => c.req_packed_command(cmd),
            AsyncConn::Own(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            AsyncConn::Crate(c) => c.req_packed_commands(pipeline, offset, count),
            AsyncConn::Own(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            AsyncConn::Crate(c) => c.get_db(),
            AsyncConn::Own(c) => c.get_db(),
        }
    }
}
