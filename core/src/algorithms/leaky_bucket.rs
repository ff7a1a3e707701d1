//! The leaky-bucket shaper's transition: each accepted request gets the next departure slot,
//! `1000 / ratePerSec` ms after the previous one; a wait beyond `maxQueueMs` is rejected.
//!
//! The recurrence is GCRA's TAT: GCRA refuses past its tolerance, the shaper makes you wait.

use crate::decision::Reservation;
use crate::error::Result;
use crate::spec::LeakyBucketOptions;
use crate::state::{State, Step, ceil_i};
use crate::validate;

/// A validated shaper configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct LeakyBucket {
    pub(crate) rate_per_sec: f64,
    pub(crate) max_queue_ms: f64,
    /// ms between departures.
    t: f64,
}

impl LeakyBucket {
    /// Validates `options`: `ratePerSec` > 0, `maxQueueMs` >= 0.
    pub fn new(options: &LeakyBucketOptions) -> Result<LeakyBucket> {
        let rate_per_sec = validate::positive("leakyBucket.ratePerSec", options.rate_per_sec)?;
        let max_queue_ms = validate::non_negative("leakyBucket.maxQueueMs", options.max_queue_ms)?;
        Ok(LeakyBucket { rate_per_sec, max_queue_ms, t: 1000.0 / rate_per_sec })
    }

    /// The options this shaper was built from.
    pub fn options(&self) -> LeakyBucketOptions {
        LeakyBucketOptions { rate_per_sec: self.rate_per_sec, max_queue_ms: self.max_queue_ms }
    }

    /// Reserves a departure for `cost` units at `now`.
    pub fn reserve(&self, slot: &mut Option<State>, now: i64, cost: u64) -> Step<Reservation> {
        let now_f = now as f64;
        let inc = self.t * cost as f64;
        let stored = match slot {
            Some(State::Tat(next)) => *next,
            _ => now_f,
        };
        let departure = if stored > now_f { stored } else { now_f };
        let delay = departure - now_f;
        if delay > self.max_queue_ms {
            return Step {
                reply: Reservation { accepted: false, delay_ms: ceil_i(delay - self.max_queue_ms).max(1) },
                ttl_ms: None,
            };
        }
        let next = departure + inc;
        *slot = Some(State::Tat(next));
        Step {
            reply: Reservation { accepted: true, delay_ms: ceil_i(delay) },
            ttl_ms: Some(ceil_i(next - now_f).max(1)),
        }
    }
}
