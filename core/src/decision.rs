//! What a check returns: [`Decision`], and the shaper's [`Reservation`].

use serde::{Deserialize, Serialize};

/// The immutable result of one check.
///
/// Every numeric field is an integer so the in-memory path and the Redis Lua path (whose replies
/// Redis truncates to integers) produce byte-equal values. The type grows only by appending
/// fields; the five fields of ThrottleKit 1.x come first and keep their meaning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// Whether the request was admitted (and, for a check, consumed).
    pub allowed: bool,
    /// The effective ceiling: GCRA's burst, a token bucket's capacity, a window's limit.
    pub limit: i64,
    /// Whole units still admissible; never negative.
    pub remaining: i64,
    /// Epoch milliseconds at which the limit is fully replenished.
    pub reset_at: i64,
    /// 0 when allowed; otherwise at least 1: how long until the same request could succeed.
    pub retry_after_ms: i64,
    /// True when the store was unavailable and a fail-open policy admitted the request
    /// (or a fail-closed policy denied it) without consulting any state.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fallback: bool,
}

impl Decision {
    /// `Ok(self)` when allowed; otherwise a `rate_limit_exceeded` error carrying the retry
    /// hint, for callers who prefer `?` to an `if` (e.g. in a request handler).
    pub fn or_exceeded(self) -> crate::Result<Decision> {
        if self.allowed {
            Ok(self)
        } else {
            Err(crate::Error::new(
                crate::ErrorCode::RateLimitExceeded,
                format!("rate limit exceeded: retry in {} ms", self.retry_after_ms),
            )
            .with_retry_after(self.retry_after_ms))
        }
    }

    /// The five ThrottleKit 1.x fields, for comparing decisions field for field.
    pub fn fields(&self) -> (bool, i64, i64, i64, i64) {
        (self.allowed, self.limit, self.remaining, self.reset_at, self.retry_after_ms)
    }
}

/// The shaper's answer: accepted requests wait `delay_ms` before departing; a rejected one
/// would have had to wait more than `max_queue_ms`, and `delay_ms` says by how much.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reservation {
    /// Whether the request got a departure slot.
    pub accepted: bool,
    /// Accepted: how long to wait before departing. Rejected: by how much the queue is too long.
    pub delay_ms: i64,
}
