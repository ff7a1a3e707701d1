//! GCRA, the generic cell rate algorithm: one float per key, smooth pacing, a burst allowance.
//!
//! The order of floating-point operations follows `shared/SEMANTICS.md` exactly (and
//! `core/lua/gcra.lua` line for line), so the Rust and Redis paths agree to the last bit.

use crate::decision::Decision;
use crate::error::Result;
use crate::spec::GcraOptions;
use crate::state::{State, Step, ceil_i, floor_i};
use crate::validate;

/// What an allowed GCRA check writes: the new TAT, kept for `ttl_ms`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Write {
    pub(crate) tat: f64,
    pub(crate) ttl_ms: i64,
}

/// A validated GCRA configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Gcra {
    pub(crate) limit: f64,
    pub(crate) period_ms: f64,
    pub(crate) burst: f64,
    /// Emission interval: ms per request.
    t: f64,
    /// Burst tolerance.
    tau: f64,
    /// `burst as i64`, the decision's `limit`, converted once here rather than per check (a
    /// saturating float-to-integer conversion is six instructions on the hot path).
    reported_limit: i64,
}

impl Gcra {
    /// Validates `options`: `limit` an integer >= 1, `periodMs` > 0, `burst` an integer >= 1.
    pub fn new(options: &GcraOptions) -> Result<Gcra> {
        let limit = validate::integer_at_least("gcra.limit", options.limit, 1.0)?;
        let period_ms = validate::positive("gcra.periodMs", options.period_ms)?;
        let burst = validate::integer_at_least("gcra.burst", options.burst.unwrap_or(limit), 1.0)?;
        let t = period_ms / limit;
        Ok(Gcra { limit, period_ms, burst, t, tau: t * burst, reported_limit: burst as i64 })
    }

    /// The reported ceiling: the burst.
    #[inline]
    pub fn limit(&self) -> i64 {
        self.reported_limit
    }

    fn stored(state: Option<&State>) -> Option<f64> {
        match state {
            Some(State::Tat(tat)) => Some(*tat),
            _ => None,
        }
    }

    /// One request of `cost` at `now`; writes the new TAT into `slot` when allowed and `commit`.
    #[inline]
    pub fn check(&self, slot: &mut Option<State>, now: i64, cost: u64, commit: bool) -> Step<Decision> {
        let (reply, write) = self.check_tat(Gcra::stored(slot.as_ref()), now, cost);
        match write {
            Some(Write { tat, ttl_ms }) => {
                if commit {
                    *slot = Some(State::Tat(tat));
                }
                Step { reply, ttl_ms: Some(ttl_ms) }
            }
            None => Step { reply, ttl_ms: None },
        }
    }

    /// [`Gcra::check`] on the bare TAT (`None` for a fresh key): the decision, and the TAT to
    /// store with its TTL when the request is allowed. Stores that keep the TAT as a plain
    /// float call this directly, so the hot path builds no [`State`].
    #[inline(always)]
    pub(crate) fn check_tat(&self, stored: Option<f64>, now: i64, cost: u64) -> (Decision, Option<Write>) {
        let now_f = now as f64;
        let inc = self.t * cost as f64;
        let stored = stored.unwrap_or(now_f);
        let tat = if stored > now_f { stored } else { now_f };
        let new_tat = tat + inc;
        let allow_at = new_tat - self.tau;
        if now_f < allow_at {
            let remaining = floor_i((self.tau - (tat - now_f)) / self.t).max(0);
            let reply = Decision {
                allowed: false,
                limit: self.limit(),
                remaining,
                reset_at: ceil_i(tat),
                retry_after_ms: ceil_i(allow_at - now_f),
                fallback: false,
            };
            return (reply, None);
        }
        let remaining = floor_i((self.tau - (new_tat - now_f)) / self.t).max(0);
        let reply = Decision {
            allowed: true,
            limit: self.limit(),
            remaining,
            reset_at: ceil_i(new_tat),
            retry_after_ms: 0,
            fallback: false,
        };
        (reply, Some(Write { tat: new_tat, ttl_ms: ceil_i(new_tat - now_f).max(1) }))
    }

    /// Current capacity without consuming: would a cost-1 request pass, and how many would.
    pub fn peek(&self, state: Option<&State>, now: i64) -> Decision {
        let now_f = now as f64;
        let stored = Gcra::stored(state).unwrap_or(now_f);
        let tat = if stored > now_f { stored } else { now_f };
        let remaining = floor_i((self.tau - (tat - now_f)) / self.t).max(0);
        let allowed = remaining >= 1;
        Decision {
            allowed,
            limit: self.limit(),
            remaining,
            reset_at: ceil_i(tat),
            retry_after_ms: if allowed { 0 } else { ceil_i(tat + self.t - self.tau - now_f).max(1) },
            fallback: false,
        }
    }
}
