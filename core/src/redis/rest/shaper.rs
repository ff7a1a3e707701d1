//! A [`Shaper`]'s reservations over REST, prepared and finished by the core as a limiter's
//! checks are ([`super::limiter`]): the same leaky-bucket script call as on RESP, so the same
//! reservations. Prepare with [`Shaper::rest_prepare`], drive the [`RestCall`] as a limiter's,
//! finish with [`Shaper::rest_finish`]; `reset` is [`Shaper::rest_reset`]'s one request.

use super::limiter::RestCall;
use super::{Locking, Request};
use crate::decision::Reservation;
use crate::error::Result;
use crate::shaper::Shaper;

impl Shaper {
    /// Prepares a reservation of `cost` units of `key` for the REST store: [`Shaper::prepare`]'s
    /// call (the cost, the time and the key checked as [`Shaper::reserve`] checks them, a
    /// refusal counted in its metrics, the clock read once).
    pub fn rest_prepare(&self, key: &str, cost: u64, locking: Locking) -> Result<RestCall> {
        Ok(RestCall::of(vec![self.prepare(key, cost)?], locking))
    }

    /// The reservation of a call from [`Shaper::rest_prepare`], once it is over: a failed
    /// request's `store_unavailable` passes through (a shaper has no fail policy).
    pub fn rest_finish(&self, call: RestCall) -> Result<Reservation> {
        self.observe(call.into_reply().and_then(|r| r.reservation()))
    }

    /// `reset` over REST: the request that deletes `key`'s queue; hand its reply to
    /// [`super::finish_del`].
    pub fn rest_reset(&self, key: &str) -> Result<Request> {
        Ok(super::del(&self.checked_key(key)?))
    }
}
