//! The sync path: a sync call does its own write and read on the calling thread, over a pooled
//! blocking connection, with no hop through the store's runtime (that hop costs ~40% of a
//! sequential round trip: `docs/performance.md`). On a plain-TCP RESP2 URL the connection is the
//! store's own ([`super::wire`]), which reads a decision reply where it lies; otherwise redis-rs's,
//! with the thread's signals held for the call ([`super::signals`]). A cluster routes the call
//! from the caller's thread ([`super::cluster`]) over the same kind of connection to each
//! master, and reads its reply the same way ([`wire::Wire::call`]: only an error frame is
//! decoded into a `Value`, for the redirect rules); Sentinel and deterministic replay hand it
//! to the store's runtime and wait.
//!
//! A connection that failed or timed out is dropped, never reused, so a late reply cannot be
//! mistaken for the next call's; one deadline covers the whole call, a new connection's
//! handshake included.

use std::sync::atomic::Ordering;

use redis::Value;

use super::call::{self, Outcome, ScriptCall};
use super::{Inner, RedisStore, block_on, invoke, signals, wire};
use crate::error::{Error, Result};
use crate::store::Now;

impl RedisStore {
    /// A sync call: on the caller's thread over a pooled blocking connection where the topology
    /// allows one (with the thread's signals held for the call when the connection is
    /// redis-rs's: [`signals`]), else handed to the store's runtime and waited for.
    pub(super) fn block_call(&self, call: ScriptCall, now: Now) -> Result<Outcome> {
        if let (Some(router), None) = (&self.inner.router, &self.inner.replay) {
            if self.inner.closed.load(Ordering::Acquire) {
                return Err(Error::store("the Redis store is closed"));
            }
            // redis-rs's connection cannot read again after a signal; the store's own can.
            let _held = (!router.is_wire()).then(signals::HeldSignals::hold);
            return router.run_blocking(self.inner.invoke, self.inner.durable, &call);
        }
        if self.inner.replay.is_none() && !self.inner.routed {
            // redis-rs's connection cannot read again after a signal; the store's own can.
            let _held = (!self.inner.blocking.is_wire()).then(signals::HeldSignals::hold);
            return self.inner.run_blocking(&call);
        }
        let inner = self.inner.clone();
        block_on(&self.runtime, async move { inner.run(call, now).await })
    }
}

impl Inner {
    /// A sync call on a pooled blocking connection: `EVALSHA`, `EVAL` on `NOSCRIPT` only.
    pub(super) fn run_blocking(&self, call: &ScriptCall) -> Result<Outcome> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::store("the Redis store is closed"));
        }
        let started = std::time::Instant::now();
        let timed_out = |e: redis::RedisError| {
            if e.is_timeout() || started.elapsed() >= self.timeout {
                Error::store(format!("timed out: Redis did not answer within {} ms ({e})", self.timeout.as_millis()))
            } else {
                Error::store(e)
            }
        };
        let popped = self.idle.lock().pop();
        let (mut conn, fresh) = match popped {
            Some(c) => (c, false),
            None => {
                // One deadline for the whole call: the new connection's handshake spends part of
                // it, and the call gets what is left, not a whole timeout of its own (a silent
                // server used to take twice: see [`connect::Blocking`]).
                (self.blocking.connect_sync(started + self.timeout).map_err(timed_out)?, true)
            }
        };
        let deadline = started + self.timeout;
        let value = match &mut conn {
            // The store's own connection: a decision reply is read where it lies ([`wire`]).
            wire::SyncConn::Wire(w) if self.durable.is_none() => match w.call(self.invoke, call) {
                Ok(wire::Answer::Decided(outcome)) => {
                    // The whole reply was read: the connection is in step, whatever it said.
                    self.pool(conn, fresh)?;
                    return outcome;
                }
                // An error: `NOSCRIPT` or a missing function gets the fallback, any other is
                // the call's failure (below).
                Ok(wire::Answer::Refused(reply)) => {
                    invoke::run_sync_fallback(w, self.invoke, call, Ok(reply), deadline, self.timeout)
                }
                Err(e) => Err(e),
            },
            wire::SyncConn::Wire(w) => invoke::run_sync(w, self.invoke, self.durable, call, deadline, self.timeout),
            wire::SyncConn::Crate(c) => invoke::run_sync(c, self.invoke, self.durable, call, deadline, self.timeout),
        };
        let value = match value {
            Ok(Value::ServerError(e)) => {
                self.pool(conn, fresh)?;
                return Err(Error::store(format!("{} failed: {e}", call.script.name)));
            }
            Ok(v) => v,
            // Dropped with the connection: a timed-out call is never sent again.
            Err(e) => return Err(timed_out(e)),
        };
        self.pool(conn, fresh)?;
        call::decode_reply(call, &value)
    }

    /// Returns a blocking connection that answered to the pool; a new one gets the whole
    /// timeout back for its next call (its first had only what its handshake left).
    fn pool(&self, mut conn: wire::SyncConn, fresh: bool) -> Result<()> {
        if fresh {
            conn.set_timeouts(self.timeout).map_err(Error::store)?;
        }
        self.idle.lock().push(conn);
        Ok(())
    }
}
