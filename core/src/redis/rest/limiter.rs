//! A limiter's checks over REST, prepared and finished by the core: what the JavaScript glue
//! of the WebAssembly build calls (the native tests drive it over a small HTTP client).
//!
//! 1. Prepare: [`crate::Limiter::rest_prepare`] (check, peek or forecast of one key),
//!    [`crate::Limiter::rest_prepare_many`] (`check_many`: one `/pipeline`) or
//!    [`crate::MultiLimiter::rest_prepare`] (the fused `all`/`any` script). The clock is read
//!    here, once (the limiter's clock: in JavaScript, the host's `Date.now()`), and the key
//!    checks of the store paths apply.
//! 2. Send [`RestCall::request`] (`POST <url><path>`, its body, [`super::headers`]).
//! 3. Feed the HTTP status and body to [`RestCall::feed`]; on [`Next::Send`] send
//!    [`RestCall::request`] again (the calls that met `NOSCRIPT`, with `EVAL`), on
//!    [`Next::Done`] finish. If the request failed or timed out (an `AbortSignal`), call
//!    [`RestCall::fail`] with [`super::timed_out`] or [`super::transport_error`] instead: it
//!    is never sent again.
//! 4. Finish with the limiter that prepared the call: [`crate::Limiter::rest_finish`],
//!    [`crate::Limiter::rest_finish_many`] or [`crate::MultiLimiter::rest_finish`]. A
//!    `store_unavailable` goes through the limiter's fail policy there, as on every store.
//!
//! `reset` is one request, [`crate::Limiter::rest_reset`], whose reply [`super::finish_del`]
//! reads. A [`crate::Shaper`]'s reservations take the same steps: [`crate::Shaper::rest_prepare`],
//! [`crate::Shaper::rest_finish`], [`crate::Shaper::rest_reset`].

use super::{Batch, Locking, Next, ReplayBook, Request};
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::limiter::Limiter;
use crate::multi::{MultiDecision, MultiLimiter};
use crate::redis::call::Outcome;
pub use crate::redis::prepared::Op as RestOp;
use crate::redis::prepared::PreparedCall;
use crate::store::{MultiReply, Now, Reply};

/// One prepared REST call in flight: one script call, or a `check_many`'s several.
#[derive(Debug)]
pub struct RestCall {
    pub(super) batch: Batch,
    pub(super) now: Now,
    pub(super) op: RestOp,
}

impl RestCall {
    /// The prepared `calls` (made at one clock read, with one op), sent with `locking`'s
    /// scripts. An empty `check_many` has no call to time: it never reads its `now`.
    pub fn of(calls: Vec<PreparedCall>, locking: Locking) -> RestCall {
        let (now, op) = calls.first().map_or((Now::Server, RestOp::Check), |c| (c.now(), c.op()));
        RestCall { batch: Batch::new(calls.into_iter().map(|c| c.call).collect(), locking), now, op }
    }

    /// The request to send now.
    pub fn request(&self) -> Request {
        self.batch.request()
    }

    /// Feeds the reply to [`RestCall::request`]: its HTTP status and body.
    pub fn feed(&mut self, status: u16, body: &[u8]) -> Next {
        self.batch.feed(status, body)
    }

    /// The request failed or timed out: every call still in flight ends with `error` (a
    /// `store_unavailable`: [`super::timed_out`], [`super::transport_error`]).
    pub fn fail(&mut self, error: Error) -> Next {
        self.batch.fail(error)
    }

    /// The call in deterministic-replay mode (expiry on the caller's clock, for conformance
    /// runs) with the store's `book`: each call then takes the replay's round trips, one
    /// `/pipeline` each ([`super::HEX_ENCODING`]). A call on the server's clock is unchanged.
    pub fn replayed(mut self, book: &ReplayBook) -> RestCall {
        if let Now::At(at) = self.now {
            self.batch = self.batch.replayed(book, at);
        }
        self
    }

    /// The time the call was prepared at.
    pub fn now(&self) -> Now {
        self.now
    }

    /// The first call's outcome (a call never sent: `store_unavailable`).
    pub(super) fn outcome(self) -> Result<Outcome> {
        self.batch.outcomes().next().unwrap_or_else(|| Err(Error::store("an empty REST call")))
    }

    /// The store's reply to a single-key call ([`PreparedCall::single`]), for a [`crate::Store`]
    /// driven over REST: no fail policy, no metrics (the limiter over the store applies them).
    pub fn into_reply(self) -> Result<Reply> {
        self.outcome().and_then(Outcome::into_single)
    }

    /// The store's reply to a fused multi-dimensional call ([`PreparedCall::multi`]).
    pub fn into_multi_reply(self) -> Result<MultiReply> {
        self.outcome().and_then(Outcome::into_multi)
    }
}

impl Limiter {
    /// Prepares `op` on `key` for the REST store (see [`self`]): [`Limiter::prepare`]'s call.
    pub fn rest_prepare(&self, op: RestOp, key: &str, cost: u64, locking: Locking) -> Result<RestCall> {
        Ok(RestCall::of(vec![self.prepare(op, key, cost)?], locking))
    }

    /// Prepares `check_many`: [`Limiter::prepare_many`]'s calls, sent as one `/pipeline`.
    pub fn rest_prepare_many(&self, keys: &[&str], cost: u64, locking: Locking) -> Result<RestCall> {
        Ok(RestCall::of(self.prepare_many(keys, cost)?, locking))
    }

    /// The decision of a call from [`Limiter::rest_prepare`], once [`RestCall::feed`] said
    /// [`Next::Done`] (or the call failed): a `store_unavailable` through the fail policy.
    pub fn rest_finish(&self, call: RestCall) -> Result<Decision> {
        let (now, op) = (call.now, call.op);
        self.decide(op, now, call.outcome())
    }

    /// The decisions of a call from [`Limiter::rest_prepare_many`], one per key (each through
    /// the fail policy; `raise` makes the first failure the error, as `check_many` does).
    pub fn rest_finish_many(&self, call: RestCall) -> Result<Vec<Decision>> {
        let now = call.now;
        call.batch.outcomes().map(|o| self.decide(RestOp::Check, now, o)).collect()
    }

    /// `reset` over REST: the request that deletes `key`'s state; hand its reply to
    /// [`super::finish_del`].
    pub fn rest_reset(&self, key: &str) -> Result<Request> {
        self.check_key_length(key)?;
        Ok(super::del(&self.full_key(key)))
    }
}

impl MultiLimiter {
    /// Prepares a multi-dimensional check for the REST store: the fused script over every
    /// dimension's key (atomic: `all` commits every dimension or none, `any` the allowing
    /// ones), at one clock read.
    pub fn rest_prepare(&self, keys: &[&str], cost: u64, locking: Locking) -> Result<RestCall> {
        Ok(RestCall::of(vec![self.prepare(keys, cost)?], locking))
    }

    /// The decision of a call from [`MultiLimiter::rest_prepare`] (a `store_unavailable`
    /// through the fail policy).
    pub fn rest_finish(&self, call: RestCall) -> Result<MultiDecision> {
        let now = call.now;
        self.finish_multi(call.into_multi_reply(), now)
    }
}
