//! Runtimes bound to the store: each has a connection of its own, kept by the router
//! ([`super::cluster`]: to the one node, or to each master of a cluster), whose driver task runs
//! on that runtime, so a call awaited there writes and reads on the caller's runtime without
//! crossing to the store's thread (the hop costs two wake-ups of a sleeping thread per call, the
//! larger part of a sequential call's time on a busy machine: `docs/performance.md`, "Rust over
//! Redis"). The entry here says the runtime is bound; its removal at shutdown drops its
//! connections too.
//!
//! A runtime is bound by [`super::RedisStore::bind_current_runtime`], or by the first call
//! awaited on it (unless [`super::RedisStore::bind_runtimes`] turned that off). Its connection to
//! one node is made at once, in the background on that runtime (a cluster's, as calls first reach
//! each master); until it is up, and whenever it is down, calls take the store's own
//! connections. A runtime that cannot make it (no IO driver or no timer: the connect task panics
//! there, once) stays on the store's connections.
//!
//! An entry lives as long as its runtime: a task parked on that runtime forever holds an
//! [`Unbind`] guard, which the runtime drops when it shuts down, removing the entry (and the
//! router's connections there). A program that makes a runtime per call therefore leaves nothing
//! behind.
//!
//! A runtime bound by a call may be entered without being driven (a current-thread runtime
//! polled through `Handle::block_on` from another thread while nobody runs it): its connection's
//! driver task then never runs and a call on it would time out. A call that times out retires
//! the connection it was sent on; the next call takes the store's connections and, once one
//! succeeds, reconnects on that runtime (a connect that never runs leaves the runtime on the
//! store's connections).

use std::sync::Weak;
use std::sync::atomic::Ordering;

use tokio::runtime::{Handle, Id};

use super::{Inner, RedisStore};
use crate::error::{Error, Result};

/// Removes the runtime's entry when dropped (see the module's doc).
struct Unbind {
    inner: Weak<Inner>,
    runtime: Id,
}

impl Drop for Unbind {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.bound.write().retain(|b| *b != self.runtime);
            inner.router.unbind(self.runtime);
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

/// Binding runtimes, and their connections' lifecycle (see the module's doc).
impl RedisStore {
    /// Gives the current tokio runtime a connection of its own, driven on that runtime: async
    /// calls awaited on it then never cross to the store's thread. Calls from other runtimes
    /// and executors keep working through the store's own connections; every guarantee holds on
    /// both (bounded wait, `EVAL` on `NOSCRIPT` only, no resend, reconnection).
    ///
    /// The first call awaited on a runtime binds it anyway ([`RedisStore::bind_runtimes`]);
    /// binding first has that runtime's connection ready for its first calls. Bind only a
    /// runtime built with IO and timers enabled (`enable_all`) that polls the futures awaited on
    /// it itself (`block_on` or its tasks), such as a binding's own runtime. The connection is
    /// made in the background (on that runtime's next turn); until it is up, and whenever it is
    /// down, calls take the store's connections, as they do for good if it cannot be made there
    /// (no IO driver or timer). The binding ends when the runtime shuts down. Binding again, or
    /// the store's own runtime, does nothing; so does deterministic-replay mode (its rounds take
    /// the store's connections, one call at a time). Fails outside a tokio runtime.
    pub fn bind_current_runtime(&self) -> Result<()> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::not_implemented("bind_current_runtime outside a tokio runtime"))?;
        self.bind(handle);
        Ok(())
    }

    /// Whether an async call awaited on a tokio runtime that is not bound yet binds it, as
    /// [`RedisStore::bind_current_runtime`] would (on by default). Its calls then stop crossing
    /// to the store's thread once its connection is up. Turn it off for a runtime that is
    /// entered without being driven (a current-thread runtime whose futures are polled by
    /// another executor or through `Handle::block_on` while nobody runs it: a call on its
    /// connection would wait for its timeout), or to keep one connection per store.
    /// Runtimes bound already stay bound.
    pub fn bind_runtimes(&self, on: bool) {
        self.inner.auto_bind.store(on, Ordering::Release);
    }

    /// Binds `handle`'s runtime.
    fn bind(&self, handle: tokio::runtime::Handle) {
        let id = handle.id();
        let router = &self.inner.router;
        if self.inner.replay.is_some() || self.inner.closed.load(Ordering::Acquire) || self.runtime.id() == Some(id) {
            return;
        }
        {
            let mut slots = self.inner.bound.write();
            if slots.contains(&id) {
                return;
            }
            slots.push(id);
        }
        unbind_at_shutdown(std::sync::Arc::downgrade(&self.inner), &handle);
        self.inner.any_bound.store(true, Ordering::Release);
        router.bind_local(&handle);
    }

    /// A call awaited on a tokio runtime that is not bound binds it, unless turned off.
    pub(super) fn bind_automatically(&self) {
        if self.inner.auto_bind.load(Ordering::Acquire)
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            self.bind(handle);
        }
    }

    /// A call's runtime, when it is bound to the store (binding it first, as
    /// [`RedisStore::bind_runtimes`] says): that runtime's own connections to the masters serve
    /// the call once they are up ([`super::cluster`]).
    pub(super) fn local_runtime(&self) -> Option<tokio::runtime::Handle> {
        let handle = tokio::runtime::Handle::try_current().ok()?;
        let id = handle.id();
        let bound = |inner: &Inner| inner.any_bound.load(Ordering::Acquire) && inner.bound.read().contains(&id);
        if bound(&self.inner) {
            return Some(handle);
        }
        self.bind_automatically();
        bound(&self.inner).then_some(handle)
    }

    /// Whether the current runtime is bound and its own connection is up (to one node; on a
    /// cluster, to any master) (tests, tools).
    #[doc(hidden)]
    pub fn bound_connection_ready(&self) -> bool {
        self.local_cluster_connections() > 0
    }

    /// How many runtimes are bound to the store now (tests, tools).
    #[doc(hidden)]
    pub fn bound_runtimes(&self) -> usize {
        self.inner.bound.read().len()
    }

    /// How many nodes (the one node, or masters of a cluster) the current runtime has its own
    /// connection to, up now (tests, tools).
    #[doc(hidden)]
    pub fn local_cluster_connections(&self) -> usize {
        tokio::runtime::Handle::try_current().map_or(0, |h| self.inner.router.local_connections(h.id()))
    }
}
