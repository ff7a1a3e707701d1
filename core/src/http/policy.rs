//! What a strategy promises, in the terms of the rate-limit fields: a quota per window, and how
//! the quota comes back.

use crate::Decision;
use crate::spec::{ResetCadence, StrategySpec};
use crate::strategy::Strategy;

/// How consumed quota returns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Refill {
    /// One unit every `unit_ms`, continuously (GCRA, token bucket).
    Continuous {
        /// Milliseconds per unit: GCRA's emission interval, `1000 / refillPerSec` for a bucket.
        unit_ms: f64,
    },
    /// All at once at a boundary that the decision's `reset_at` names (fixed window, quota), or
    /// as the oldest hits age out (log, sliding window), which `reset_at` also names.
    Window,
}

/// A strategy's quota policy: `quota` units per `window_s` seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Policy {
    /// The quota (`q`): the decisions' `limit` (GCRA's burst, a bucket's capacity, a window's limit).
    pub quota: i64,
    /// The window (`w`) in whole seconds, rounded up; `None` when it varies (calendar months).
    pub window_s: Option<i64>,
    /// How quota comes back, which decides the `t` parameter.
    pub refill: Refill,
}

fn seconds_up(ms: f64) -> i64 {
    ((ms / 1000.0).ceil() as i64).max(1)
}

impl Strategy {
    /// This strategy's quota policy for the rate-limit fields.
    ///
    /// GCRA `limit` per `periodMs` with burst `b` is `q = b` per `w = b * periodMs / limit`
    /// (the time to earn the burst back), so `q / w` is the sustained rate and `r <= q` holds.
    pub fn http_policy(&self) -> Policy {
        match self.spec() {
            StrategySpec::Gcra(o) => {
                let unit_ms = o.period_ms / o.limit;
                let burst = o.burst.unwrap_or(o.limit);
                Policy {
                    quota: self.limit(),
                    window_s: Some(seconds_up(burst * unit_ms)),
                    refill: Refill::Continuous { unit_ms },
                }
            }
            StrategySpec::TokenBucket(o) => {
                let unit_ms = 1000.0 / o.refill_per_sec;
                Policy {
                    quota: self.limit(),
                    window_s: Some(seconds_up(o.capacity * unit_ms)),
                    refill: Refill::Continuous { unit_ms },
                }
            }
            StrategySpec::FixedWindow(o) | StrategySpec::SlidingWindowLog(o) => {
                Policy { quota: self.limit(), window_s: Some(seconds_up(o.window_ms)), refill: Refill::Window }
            }
            StrategySpec::SlidingWindow(o) => {
                Policy { quota: self.limit(), window_s: Some(seconds_up(o.window_ms)), refill: Refill::Window }
            }
            StrategySpec::Quota(o) => {
                let window_s = match o.reset_cadence {
                    ResetCadence::CalendarDay => Some(86_400),
                    ResetCadence::CalendarWeek => Some(604_800),
                    ResetCadence::CalendarMonth => None,
                    ResetCadence::Fixed | ResetCadence::Rolling => o.period_ms.map(seconds_up),
                };
                Policy { quota: self.limit(), window_s, refill: Refill::Window }
            }
        }
    }
}

impl Policy {
    /// Milliseconds until *more* quota is available after `decision` (the draft's `t`), not until
    /// the bucket is full (`reset_at`): for a continuous refill, the full-replenishment time less
    /// the time the units still in use after the next one take to come back; 0 when nothing is
    /// in use. For windows the two coincide.
    pub fn next_quota_ms(&self, decision: &Decision, now_ms: i64) -> i64 {
        let to_reset = decision.reset_at.saturating_sub(now_ms).max(0);
        match self.refill {
            Refill::Window => to_reset,
            Refill::Continuous { unit_ms } => {
                if decision.remaining >= decision.limit {
                    return 0;
                }
                let still_used = decision.limit.saturating_sub(decision.remaining).saturating_sub(1) as f64;
                let ms = (to_reset as f64 - still_used * unit_ms).ceil();
                if ms.is_finite() { (ms as i64).max(0) } else { 0 }
            }
        }
    }
}
