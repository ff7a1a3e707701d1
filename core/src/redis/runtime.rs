//! The store's private tokio runtime, and when it stops.
//!
//! It stops when the store is dropped, or at [`super::RedisStore`]'s `close()`: a binding whose
//! store object lives until a garbage collector finalizes it (Node) would otherwise keep the
//! runtime's thread and descriptors (its epoll instance and wakers) after `close()`, for as
//! long as the collector waits. Stopping it at `close()` needs care: an async call awaits a
//! timer of this runtime from the caller's task, and tokio panics when a timer is polled after
//! its runtime shut down. So every async call that holds such a timer counts itself in flight
//! ([`OwnedRuntime::call`]), and the runtime stops when the store is closed and no call is in
//! flight: at `close()` if none is, else when the last one ends. A call that begins after
//! `close()` never takes a timer: it fails as closed. Everything else left on the runtime
//! (connection drivers, background connects and refreshes) is dropped with it; a blocking call
//! waiting for such a task then fails at once, as the closed store's calls do.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use tokio::runtime::{Id, Runtime};
use tokio::task::JoinHandle;

/// Owns the runtime; shuts it down without blocking, so the store may be dropped (or closed)
/// anywhere (dropping a tokio runtime inside another runtime's task would otherwise panic). No
/// `Handle` is kept beside it: a handle keeps the runtime's driver, so its descriptors, alive.
pub(crate) struct OwnedRuntime {
    runtime: parking_lot::RwLock<Option<Runtime>>,
    /// Async calls holding a timer of this runtime.
    in_flight: AtomicUsize,
    closing: AtomicBool,
}

impl OwnedRuntime {
    pub(crate) fn new(runtime: Runtime) -> OwnedRuntime {
        OwnedRuntime {
            runtime: parking_lot::RwLock::new(Some(runtime)),
            in_flight: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
        }
    }

    pub(crate) fn id(&self) -> Option<Id> {
        self.runtime.read().as_ref().map(|r| r.handle().id())
    }

    /// Spawns `fut` on the runtime; `None` once it stopped (the store is closed).
    pub(crate) fn spawn<F>(&self, fut: F) -> Option<JoinHandle<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.runtime.read().as_ref().map(|r| r.spawn(fut))
    }

    /// A handle to spawn on, while the runtime runs (kept no longer than a call: a handle keeps
    /// the runtime's driver alive).
    pub(crate) fn handle(&self) -> Option<tokio::runtime::Handle> {
        self.runtime.read().as_ref().map(|r| r.handle().clone())
    }

    /// A timer of the runtime; make it only under an [`OwnedRuntime::call`] guard, which keeps
    /// the runtime running until the timer is dropped.
    pub(crate) fn sleep(&self, duration: Duration) -> Option<tokio::time::Sleep> {
        let runtime = self.runtime.read();
        let _context = runtime.as_ref()?.enter();
        Some(tokio::time::sleep(duration))
    }

    /// Counts an async call in flight while the guard lives; `None` once the store is closing
    /// (the call must then fail as closed, before making a timer).
    pub(crate) fn call(&self) -> Option<InFlight<'_>> {
        // SeqCst on both sides (here: count, then read `closing`; `close`: set `closing`, then
        // read the count): either `close` sees this call, or this call sees `close`.
        self.in_flight.fetch_add(1, SeqCst);
        let guard = InFlight(self);
        if self.closing.load(SeqCst) { None } else { Some(guard) }
    }

    /// The store is closed: the runtime stops now if no async call is in flight, else when the
    /// last one ends.
    pub(crate) fn close(&self) {
        self.closing.store(true, SeqCst);
        if self.in_flight.load(SeqCst) == 0 {
            self.stop();
        }
    }

    fn stop(&self) {
        let runtime = self.runtime.write().take();
        if let Some(rt) = runtime {
            rt.shutdown_background();
        }
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `fut` on `runtime` and waits for its output on this thread (a plain one, or one inside
/// another async runtime: it blocks, never panics), at most `limit` when given: `None` when the
/// runtime dropped the task (it stopped) or the wait ran out.
pub(crate) fn wait_for<F>(runtime: tokio::runtime::Handle, fut: F, limit: Option<Duration>) -> Option<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    // The handle goes at once: held through the wait, it would keep a stopped runtime's
    // driver (its descriptors) until the wait ends.
    drop(runtime.spawn(async move {
        let _ = tx.send(fut.await);
    }));
    drop(runtime);
    match limit {
        Some(limit) => rx.recv_timeout(limit).ok(),
        None => rx.recv().ok(),
    }
}

/// Blocks `SIGPIPE` on the calling thread (one of the runtime's own).
///
/// A write to a connection the server (or a proxy) has reset raises `SIGPIPE` in the writing
/// thread, and the runtime writes with `writev`, which has no `MSG_NOSIGNAL`. Rust, Python, Node
/// and the JVM ignore the signal, but a C program keeps the default action (terminate), and a Go
/// program lets it terminate the process when it arrives on a thread Go did not create: the
/// chaos suite lost its Go driver to exactly that (exit by signal 13). Blocked on our threads
/// only, the signal stays pending there, the write fails with `EPIPE` (a connection error the
/// store already handles), and the host program's own disposition is left as it chose it.
pub(crate) fn block_sigpipe() {
    #[cfg(unix)]
    // SAFETY: the set is initialised by `sigemptyset` before use, and `pthread_sigmask` only
    // changes the calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// An async call in flight (see [`OwnedRuntime::call`]).
pub(crate) struct InFlight<'a>(&'a OwnedRuntime);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, SeqCst) == 1 && self.0.closing.load(SeqCst) {
            self.0.stop();
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::IoSlice;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    /// A `writev` into a socket whose peer is gone, from one of the store runtime's threads,
    /// fails with `EPIPE` and leaves `SIGPIPE` pending on that thread instead of delivering it
    /// (which would terminate a C or Go host). The test binary ignores `SIGPIPE`, so without the
    /// block the signal would be delivered and discarded, and nothing would be pending.
    #[test]
    fn a_write_to_a_reset_peer_from_the_runtime_raises_no_signal() {
        let runtime = super::super::build_runtime().unwrap();
        let (pending, error) = runtime.block_on(async {
            tokio::spawn(async {
                let (ours, theirs) = UnixStream::pair().unwrap();
                drop(theirs);
                let bytes = [IoSlice::new(b"PING\r\n")];
                // SAFETY: a valid descriptor and one valid iovec.
                let n = unsafe { libc::writev(ours.as_raw_fd(), bytes.as_ptr().cast(), 1) };
                let error = std::io::Error::last_os_error().raw_os_error();
                assert_eq!(n, -1);
                // SAFETY: `set` is written by `sigpending` before it is read.
                let pending = unsafe {
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigpending(&mut set);
                    libc::sigismember(&set, libc::SIGPIPE) == 1
                };
                (pending, error)
            })
            .await
            .unwrap()
        });
        assert_eq!(error, Some(libc::EPIPE));
        assert!(pending, "SIGPIPE was delivered to the runtime's thread, not held blocked");
    }
}
