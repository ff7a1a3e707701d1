//! The sync path, the engine's blocking driver: a sync call does its own write and read on the
//! calling thread, over a pooled blocking connection, with no hop through the store's runtime (that hop costs ~40% of a
//! sequential round trip: `docs/performance.md`). The connection is the store's own
//! ([`super::wire`]: TCP, TLS or a Unix socket, RESP2 or RESP3), which reads a decision reply
//! where it lies and reads again after a signal. A cluster routes the call
//! from the caller's thread ([`super::cluster`]) over the same kind of connection to each
//! master, and reads its reply the same way ([`wire::Pool::drive`]: only an error frame is
//! decoded into a `Value`, for the redirect rules); Sentinel and deterministic replay hand it
//! to the store's runtime and wait.
//!
//! A connection that failed or timed out is dropped, never reused, so a late reply cannot be
//! mistaken for the next call's; one deadline covers the whole call, a new connection's
//! handshake included.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::call::{Outcome, ScriptCall};
use super::engine::{self, Exchange, Rules, Step};
use super::{Inner, RedisStore, block_on, wire};
use crate::error::{Error, Result};
use crate::store::Now;

impl RedisStore {
    /// A sync call: on the caller's thread over a pooled blocking connection where the topology
    /// allows one (the store's own, which reads again after a signal: no signals held), else
    /// handed to the store's runtime and waited for.
    pub(super) fn block_call(&self, call: ScriptCall, now: Now) -> Result<Outcome> {
        if let (Some(router), None) = (&self.inner.router, &self.inner.replay) {
            if self.inner.closed.load(Ordering::Acquire) {
                return Err(Error::store("the Redis store is closed"));
            }
            return router.run_blocking(self.inner.invoke, self.inner.durable, &call);
        }
        if self.inner.replay.is_none() && !self.inner.routed {
            return self.inner.run_blocking(&call);
        }
        let inner = self.inner.clone();
        block_on(&self.runtime, async move { inner.run(call, now).await })
    }
}

impl Inner {
    /// The rules of this store's calls on one node ([`engine`]).
    pub(super) fn rules(&self) -> Rules {
        Rules { invoke: self.invoke, durable: self.durable, cluster: false }
    }

    /// A sync call on a pooled blocking connection, driven by the engine
    /// ([`wire::Pool::drive`]): the call's first command, the fallback after a miss, `WAIT`
    /// when durable.
    pub(super) fn run_blocking(&self, call: &ScriptCall) -> Result<Outcome> {
        if self.closed.load(Ordering::Acquire) {
            return Err(engine::closed());
        }
        let started = Instant::now();
        match self.pool.drive(&mut Exchange::new(call, self.rules()), started + self.timeout) {
            Ok(Step::Done(outcome)) => outcome,
            // One node follows no redirect: the engine ends such a call itself.
            Ok(step) => Err(Error::store(format!("{}: unexpected {step:?} on one node", call.script.name))),
            // A call that may have counted is never sent again.
            Err(wire::Lost::Unsent(e) | wire::Lost::Sent(e)) => {
                if e.is_timeout() || started.elapsed() >= self.timeout {
                    Err(engine::timed_out_because(self.timeout.as_millis() as u64, &e))
                } else {
                    Err(engine::lost(&e))
                }
            }
        }
    }
}
