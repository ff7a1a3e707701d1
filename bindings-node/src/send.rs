//! One non-blocking `send` of a call's bytes straight to Node's own socket, shared by the Redis
//! and Postgres socket paths (`redis_fast.rs`, `postgres_socket.rs`).
//!
//! Why: a sequential call's time is the client's CPU plus the server's, one after the other
//! (docs/bench-bindings.md), and net.Socket's write path (the Writable's bookkeeping, a
//! `WriteWrap` per write, a tick to finish it, a Buffer per call's bytes to hand it) was a good
//! part of what JavaScript spent per call. index.js passes a descriptor only when the call goes
//! at once anyway: its plain socket is connected and not destroyed (so the descriptor is still
//! its own), nothing of ours is queued on it (so the bytes keep their order) and no reply is
//! owed. `MSG_NOSIGNAL` (std's `send` on Linux): a closed peer is an error, not a signal.

/// Writes what it can of `bytes` to the socket `fd` now and says how many bytes went; 0 when
/// `fd` is -1 or not a descriptor (not index.js's socket to write to now, or not a Unix host),
/// or when the socket takes none now or fails (index.js then writes them all through the
/// socket's stream, which meets the same error and reports it as it always does).
#[cfg(unix)]
pub(crate) fn send_now(fd: f64, bytes: &[u8]) -> usize {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    if bytes.is_empty() || !(0.0..=f64::from(i32::MAX)).contains(&fd) || fd.fract() != 0.0 {
        return 0;
    }
    // SAFETY: index.js hands the descriptor of its own open socket (above); ManuallyDrop keeps
    // it open, since the socket still owns it. Node sets its sockets non-blocking, so the send
    // never waits.
    let socket = std::mem::ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(fd as i32) });
    (&*socket).write(bytes).unwrap_or(0)
}

#[cfg(not(unix))]
pub(crate) fn send_now(_fd: f64, _bytes: &[u8]) -> usize {
    0
}
