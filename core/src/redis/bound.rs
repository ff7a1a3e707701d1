//! Runtimes bound to the store: each has a connection of its own, whose driver task runs on that
//! runtime, so a call awaited there writes and reads on the caller's runtime without crossing to
//! the store's thread (the hop costs two wake-ups of a sleeping thread per call, the larger part
//! of a sequential call's time on a busy machine: `docs/performance.md`, "Rust async sequential
//! over Redis").
//!
//! On a cluster a bound runtime has a connection of its own to each master instead, kept by the
//! router and made as calls first reach that master ([`super::cluster`]); the entry here says
//! the runtime is bound, and its removal at shutdown drops those connections too.
//!
//! A runtime is bound by [`super::RedisStore::bind_current_runtime`], or by the first call
//! awaited on it (unless [`super::RedisStore::bind_runtimes`] turned that off). The connection
//! is made in the background on that runtime; until it is up, and whenever it is down, calls
//! take the store's own connections. A runtime that cannot make it (no IO driver or no timer:
//! the connect task panics there, once) stays on the store's connections.
//!
//! An entry lives as long as its runtime: a task parked on that runtime forever holds an
//! [`Unbind`] guard, which the runtime drops when it shuts down, removing the entry (and its
//! handle, which would keep the runtime's driver and descriptors). A program that makes a
//! runtime per call therefore leaves nothing behind.
//!
//! A runtime bound by a call may be entered without being driven (a current-thread runtime
//! polled through `Handle::block_on` from another thread while nobody runs it): its connection's
//! driver task then never runs and a call on it would time out. So a call that times out on an
//! automatically bound connection retires it; the next call takes the store's connections and,
//! once one succeeds, reconnects on that runtime (a connect that never runs leaves the runtime
//! on the store's connections).

use std::sync::Weak;

use tokio::runtime::{Handle, Id};

use super::{Direct, Inner};

/// A runtime bound to the store, and its connection (`None` while (re)connecting).
pub(super) struct Bound {
    pub(super) runtime: Id,
    pub(super) handle: Handle,
    pub(super) conn: Option<Direct>,
    pub(super) refreshing: bool,
    /// Bound by a call, not by `bind_current_runtime`: a timeout retires its connection.
    pub(super) auto: bool,
    /// Its connection could not be made there (no IO driver or no timer): never tried again.
    pub(super) failed: bool,
}

impl Bound {
    pub(super) fn new(handle: Handle, auto: bool) -> Bound {
        Bound { runtime: handle.id(), handle, conn: None, refreshing: false, auto, failed: false }
    }
}

/// Removes the runtime's entry when dropped (see the module's doc).
struct Unbind {
    inner: Weak<Inner>,
    runtime: Id,
}

impl Drop for Unbind {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.bound.write().retain(|b| b.runtime != self.runtime);
            if let Some(router) = &inner.router {
                router.unbind(self.runtime);
            }
        }
    }
}

/// Parks a task on `handle`'s runtime that removes its entry from `inner` when the runtime
/// shuts down. Call it without holding `inner.bound`: a runtime already shut down drops the task
/// (and so the guard) inside `spawn`.
pub(super) fn unbind_at_shutdown(inner: Weak<Inner>, handle: &Handle) {
    let guard = Unbind { inner, runtime: handle.id() };
    drop(handle.spawn(async move {
        let _guard = guard;
        std::future::pending::<()>().await
    }));
}
