//! Runtimes bound to the store: each has a connection of its own, whose driver task runs on that
//! runtime, so a call awaited there writes and reads on the caller's runtime without crossing to
//! the store's thread (the hop costs two wake-ups of a sleeping thread per call, the larger part
//! of a sequential call's time on a busy machine: `docs/performance.md`, "Rust over Redis").
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

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use tokio::runtime::{Handle, Id};

use super::held::{Held, Taken};
use super::pipelined::Pipelined;
use super::{Inner, RedisStore};
use crate::error::{Error, Result};

/// A runtime bound to the store, and its connection (empty while (re)connecting).
pub(super) struct Bound {
    pub(super) runtime: Id,
    pub(super) handle: Handle,
    pub(super) conn: Held,
    pub(super) refreshing: bool,
    /// Bound by a call, not by `bind_current_runtime`: a timeout retires its connection.
    pub(super) auto: bool,
    /// Its connection could not be made there (no IO driver or no timer): never tried again.
    pub(super) failed: bool,
}

impl Bound {
    pub(super) fn new(handle: Handle, auto: bool) -> Bound {
        Bound { runtime: handle.id(), handle, conn: Held::default(), refreshing: false, auto, failed: false }
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
    /// the store's own runtime, does nothing; so does deterministic-replay mode (it serialises
    /// every call on the store's runtime). Fails outside a tokio runtime.
    pub fn bind_current_runtime(&self) -> Result<()> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::not_implemented("bind_current_runtime outside a tokio runtime"))?;
        self.bind(handle, false);
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

    /// Binds `handle`'s runtime (`auto`: by a call rather than by `bind_current_runtime`).
    fn bind(&self, handle: tokio::runtime::Handle, auto: bool) {
        let id = handle.id();
        if self.inner.replay.is_some()
            || self.sentinel()
            || self.inner.closed.load(Ordering::Acquire)
            || self.runtime.id() == Some(id)
        {
            return;
        }
        {
            let mut slots = self.inner.bound.write();
            if let Some(b) = slots.iter_mut().find(|b| b.runtime == id) {
                b.auto &= auto;
                return;
            }
            slots.push(Bound::new(handle.clone(), auto));
        }
        unbind_at_shutdown(Arc::downgrade(&self.inner), &handle);
        self.inner.any_bound.store(true, Ordering::Release);
        // A cluster connects the runtime to each master when its calls first reach it
        // ([`cluster`]); one node connects now.
        if self.inner.router.is_none() {
            self.refresh_bound(id);
        }
    }

    /// A call awaited on a tokio runtime that is not bound binds it, unless turned off.
    pub(super) fn bind_automatically(&self) {
        if !self.sentinel()
            && self.inner.auto_bind.load(Ordering::Acquire)
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            self.bind(handle, true);
        }
    }

    /// A cluster call's runtime, when it is bound to the store (binding it first, as
    /// [`RedisStore::bind_runtimes`] says): that runtime's own connections to the masters serve
    /// the call once they are up ([`super::cluster`]).
    pub(super) fn local_runtime(&self) -> Option<tokio::runtime::Handle> {
        let handle = tokio::runtime::Handle::try_current().ok()?;
        let id = handle.id();
        let bound = |inner: &Inner| {
            inner.any_bound.load(Ordering::Acquire) && inner.bound.read().iter().any(|b| b.runtime == id)
        };
        if bound(&self.inner) {
            return Some(handle);
        }
        self.bind_automatically();
        bound(&self.inner).then_some(handle)
    }

    /// Whether the current runtime is bound and its own connection is up (tests, tools).
    #[doc(hidden)]
    pub fn bound_connection_ready(&self) -> bool {
        let Ok(handle) = tokio::runtime::Handle::try_current() else { return false };
        let id = handle.id();
        self.inner.bound.read().iter().any(|b| b.runtime == id && b.conn.is_up())
    }

    /// How many runtimes are bound to the store now (tests, tools).
    #[doc(hidden)]
    pub fn bound_runtimes(&self) -> usize {
        self.inner.bound.read().len()
    }

    /// On a cluster: how many masters the current runtime has its own connection to, up now
    /// (tests, tools).
    #[doc(hidden)]
    pub fn local_cluster_connections(&self) -> usize {
        match (&self.inner.router, tokio::runtime::Handle::try_current()) {
            (Some(router), Ok(handle)) => router.local_connections(handle.id()),
            _ => 0,
        }
    }

    /// The current runtime's own connection if it is bound: `Ok` when it is up (and whether a
    /// call bound the runtime), `Err(Some(id))` when bound but (re)connecting, `Err(None)` when
    /// unbound.
    pub(super) fn bound_conn(&self) -> std::result::Result<(Taken, bool), Option<tokio::runtime::Id>> {
        if !self.inner.any_bound.load(Ordering::Acquire) {
            return Err(None);
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else { return Err(None) };
        let id = handle.id();
        let slots = self.inner.bound.read();
        let b = slots.iter().find(|b| b.runtime == id).ok_or(None)?;
        b.conn.take().map(|taken| (taken, b.auto)).ok_or(Some(id))
    }

    /// Connects the bound runtime `rt`'s own connection in the background, on that runtime (so
    /// that its driver task lives there), unless it is up or already connecting. Should the
    /// task fail (a runtime without IO or timers panics it; a runtime shut down cancels it),
    /// it is not tried again and the store's connections serve that runtime.
    pub(super) fn refresh_bound(&self, rt: tokio::runtime::Id) {
        let handle = {
            let mut slots = self.inner.bound.write();
            let Some(b) = slots.iter_mut().find(|b| b.runtime == rt) else { return };
            if b.conn.is_up() || b.refreshing || b.failed || self.inner.closed.load(Ordering::Acquire) {
                return;
            }
            b.refreshing = true;
            b.handle.clone()
        };
        let inner = self.inner.clone();
        let task = handle.spawn(async move {
            // The bound runtime's timer bounds the connect (the store's may be gone by then).
            // The store's own ([`Pipelined`]: TCP, TLS or a Unix socket).
            let conn = Pipelined::open(inner.pool.blocking(), inner.timeout).await.ok();
            let mut slots = inner.bound.write();
            if let Some(b) = slots.iter_mut().find(|b| b.runtime == rt) {
                b.refreshing = false;
                if let Some(conn) = conn
                    && !inner.closed.load(Ordering::Acquire)
                {
                    b.conn.hold(conn);
                }
            }
        });
        let inner = self.inner.clone();
        self.runtime.spawn(async move {
            if task.await.is_err()
                && let Some(b) = inner.bound.write().iter_mut().find(|b| b.runtime == rt)
            {
                b.failed = true;
            }
        });
    }
}
