//! Token bucket: `capacity` tokens refilled continuously at `refillPerSec`, starting full.
//!
//! Behaviourally GCRA with `burst = capacity`; it exists because it reports an explicit token
//! count. Tokens-to-time conversions always divide by `refill_per_ms` (docs/semantics.md).

use crate::decision::Decision;
use crate::error::Result;
use crate::spec::TokenBucketOptions;
use crate::state::{State, Step, ceil_i, floor_i};
use crate::validate;

/// A validated token-bucket configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBucket {
    pub(crate) capacity: f64,
    pub(crate) refill_per_sec: f64,
    refill_per_ms: f64,
}

impl TokenBucket {
    /// Validates `options`: `capacity` an integer >= 1, `refillPerSec` > 0.
    pub fn new(options: &TokenBucketOptions) -> Result<TokenBucket> {
        let capacity = validate::integer_at_least("tokenBucket.capacity", options.capacity, 1.0)?;
        let refill_per_sec = validate::positive("tokenBucket.refillPerSec", options.refill_per_sec)?;
        Ok(TokenBucket { capacity, refill_per_sec, refill_per_ms: refill_per_sec / 1000.0 })
    }

    /// The reported ceiling: the capacity.
    pub fn limit(&self) -> i64 {
        self.capacity as i64
    }

    /// Tokens present at `now`: lazily refilled, never for negative elapsed time.
    fn tokens_at(&self, state: Option<&State>, now: i64) -> f64 {
        match state {
            Some(State::Bucket { tokens, last }) => {
                let elapsed = (now as f64 - *last as f64).max(0.0);
                self.capacity.min(tokens + elapsed * self.refill_per_ms)
            }
            _ => self.capacity,
        }
    }

    fn reset_at(&self, now: i64, tokens: f64) -> i64 {
        now.saturating_add(ceil_i((self.capacity - tokens) / self.refill_per_ms))
    }

    /// One request of `cost` at `now`.
    #[inline]
    pub fn check(&self, slot: &mut Option<State>, now: i64, cost: u64, commit: bool) -> Step<Decision> {
        let tokens = self.tokens_at(slot.as_ref(), now);
        let cost_f = cost as f64;
        if tokens >= cost_f {
            let left = tokens - cost_f;
            if commit {
                *slot = Some(State::Bucket { tokens: left, last: now });
            }
            Step {
                reply: Decision {
                    allowed: true,
                    limit: self.limit(),
                    remaining: floor_i(left).max(0),
                    reset_at: self.reset_at(now, left),
                    retry_after_ms: 0,
                    fallback: false,
                },
                ttl_ms: Some(ceil_i(self.capacity / self.refill_per_ms).max(1)),
            }
        } else {
            Step {
                reply: Decision {
                    allowed: false,
                    limit: self.limit(),
                    remaining: floor_i(tokens).max(0),
                    reset_at: self.reset_at(now, tokens),
                    retry_after_ms: ceil_i((cost_f - tokens) / self.refill_per_ms).max(1),
                    fallback: false,
                },
                ttl_ms: None,
            }
        }
    }

    /// Current capacity without consuming.
    pub fn peek(&self, state: Option<&State>, now: i64) -> Decision {
        let tokens = self.tokens_at(state, now);
        let allowed = tokens >= 1.0;
        Decision {
            allowed,
            limit: self.limit(),
            remaining: floor_i(tokens).max(0),
            reset_at: self.reset_at(now, tokens),
            retry_after_ms: if allowed { 0 } else { ceil_i((1.0 - tokens) / self.refill_per_ms).max(1) },
            fallback: false,
        }
    }
}
