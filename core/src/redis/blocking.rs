//! The sync path, the engine's blocking driver: a sync call does its own write and read on the
//! calling thread, over a pooled blocking connection, with no hop through the store's runtime (that hop costs ~40% of a
//! sequential round trip: `docs/performance.md`). The connection is the store's own
//! ([`super::wire`]: TCP, TLS or a Unix socket, RESP2 or RESP3), which reads a decision reply
//! where it lies and reads again after a signal. The router ([`super::cluster`]) routes the call
//! from the caller's thread to the one node or the key's master ([`super::wire::Pool::drive`]);
//! Sentinel and deterministic replay hand it to the store's runtime and wait.
//!
//! A connection that failed or timed out is dropped, never reused, so a late reply cannot be
//! mistaken for the next call's; one deadline covers the whole call, a new connection's
//! handshake included.

use std::sync::atomic::Ordering;

use super::call::{Outcome, ScriptCall};
use super::engine;
use super::{RedisStore, block_on};
use crate::error::Result;
use crate::store::Now;

impl RedisStore {
    /// A sync call: routed on the caller's thread over a pooled blocking connection (the store's
    /// own, which reads again after a signal: no signals held), else (deterministic replay)
    /// handed to the store's runtime and waited for.
    pub(super) fn block_call(&self, call: ScriptCall, now: Now) -> Result<Outcome> {
        if self.inner.replay.is_none() {
            if self.inner.closed.load(Ordering::Acquire) {
                return Err(engine::closed());
            }
            return self.inner.router.run_blocking(self.inner.invoke, self.inner.durable, &call);
        }
        let inner = self.inner.clone();
        block_on(&self.runtime, async move { inner.bounded(inner.replayed(&call, now)).await })
    }
}
