//! The prepared call, transport-neutral: what every driver that is not the store's own sends
//! and finishes. A limiter, multi limiter or shaper *prepares* a call (its entry checks, one
//! clock read, the script call on the prefixed key); the driver moves it (RESP on a binding's
//! socket, `redis::transport`, with the `redis` feature; JSON over HTTP, [`super::rest`]);
//! the engine reads the reply into an outcome, and the limiter *finishes* it through its fail
//! policy, counted once in its metrics. Built with the `rest` feature alone too (the
//! WebAssembly build), so both transports share one copy.

use super::call::{self, Outcome, ScriptCall};
use crate::decision::Decision;
use crate::error::Result;
use crate::limiter::Limiter;
use crate::store::{Now, Transform};
use crate::validate;

/// What a prepared single-key call does (the async methods of [`Limiter`] of the same name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// [`Limiter::check`]: consumes when allowed.
    Check,
    /// [`Limiter::peek`]: current capacity; the cost is ignored.
    Peek,
    /// [`Limiter::forecast`]: the decision a check would get, consuming nothing.
    Forecast,
}

/// One script call, prepared: a transport writes it (RESP: `super::transport`'s
/// `PreparedCall::write`; REST: [`super::rest::limiter::RestCall`]) and the limiter that
/// prepared it finishes it.
#[derive(Clone, Debug)]
pub struct PreparedCall {
    pub(super) call: ScriptCall,
    pub(super) op: Op,
    pub(super) now: Now,
}

impl PreparedCall {
    /// The time the call was prepared at (`Now::Server`: the script reads Redis's `TIME`).
    pub fn now(&self) -> Now {
        self.now
    }

    /// What the call does (a multi limiter's or a shaper's call says `Check`).
    pub fn op(&self) -> Op {
        self.op
    }

    /// A single-key call of any transform, as a store's `apply` makes it
    /// ([`crate::Shaper::prepare`]; a [`crate::Store`] driven over another transport).
    pub fn single(full_key: &str, now: Now, transform: Transform<'_>) -> PreparedCall {
        PreparedCall { call: call::single(full_key, now, &transform), op: Op::Check, now }
    }

    /// The fused call of a multi-dimensional check ([`crate::MultiLimiter::prepare`]).
    pub fn multi(rule: crate::store::Rule, dims: &[crate::store::DimensionCall<'_>], now: Now) -> PreparedCall {
        PreparedCall { call: call::multi(rule, dims, now), op: Op::Check, now }
    }
}

impl Limiter {
    /// Prepares `op` on `key` for a transport other than the store's own (`redis::transport`,
    /// [`super::rest`]): validates the cost, reads the clock once (or asks for Redis's `TIME`
    /// on a server-clock limiter) and builds the script call on the prefixed key, as
    /// [`Limiter::check`] would.
    pub fn prepare(&self, op: Op, key: &str, cost: u64) -> Result<PreparedCall> {
        self.prepare_at(op, key, cost, self.now())
    }

    /// [`Limiter::prepare`] at an explicit time (several calls at one clock read, as
    /// [`Limiter::check_many`] makes them).
    ///
    /// The limiter's own entry checks (`Limiter::admit`: cost, time, key length) refuse the
    /// calls its store path refuses, with the same error, which is then the call's outcome and
    /// counted as such in its metrics (the call goes no further: no finish follows). A
    /// transport that prepares a call again to resend it (after `NOSCRIPT`, or a redirect)
    /// passes what succeeded the first time, so it counts nothing.
    pub fn prepare_at(&self, op: Op, key: &str, cost: u64, now: Now) -> Result<PreparedCall> {
        let strategy = self.strategy();
        let transform = match op {
            Op::Check => Transform::Check { strategy, cost },
            Op::Forecast => Transform::Forecast { strategy, cost },
            Op::Peek => Transform::Peek { strategy },
        };
        match self.admit(key, now, &transform) {
            Ok(()) => Ok(PreparedCall { call: call::single(&self.full_key(key), now, &transform), op, now }),
            Err(e) => Err(self.observe_error(e)),
        }
    }

    /// One check per key, all at one clock read, as [`Limiter::check_many`] sends them (a bad
    /// cost is one error, as there).
    pub fn prepare_many(&self, keys: &[&str], cost: u64) -> Result<Vec<PreparedCall>> {
        validate::cost(cost).map_err(|e| self.observe_error(e))?;
        let now = self.now();
        keys.iter().map(|k| self.prepare_at(Op::Check, k, cost, now)).collect()
    }

    /// The decision of a call prepared at `now` from its outcome (the engine's reading of the
    /// reply, or the transport's error): a `store_unavailable` (the transport's, a server
    /// error, a malformed reply) goes through the fail policy, as on the store's own path.
    /// Counted in the limiter's metrics as `op`, once (not timed: the core does not see when
    /// the bytes left).
    pub(crate) fn decide(&self, op: Op, now: Now, outcome: Result<Outcome>) -> Result<Decision> {
        let result = match outcome.and_then(Outcome::into_single).and_then(|r| r.decision()) {
            Ok(d) => Ok(d),
            Err(e) => self.fail_policy().fallback(e, self.strategy().limit(), now.fallback_ms(&**self.clock())),
        };
        match op {
            Op::Check => self.observe(result),
            Op::Peek => self.observe_read(result, false),
            Op::Forecast => self.observe_read(result, true),
        }
    }
}
