//! Fixed window: count units in epoch-aligned windows `[k*W, (k+1)*W)`.
//!
//! The cheapest counter, with a documented gotcha: a client can spend a full limit at the end
//! of one window and another at the start of the next, up to 2 x limit across one boundary.

use crate::algorithms::period_counter::{self, Period};
use crate::decision::Decision;
use crate::error::Result;
use crate::spec::WindowOptions;
use crate::state::{State, Step};
use crate::validate;

/// A validated fixed-window configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedWindow {
    pub(crate) limit: u64,
    pub(crate) window_ms: i64,
}

impl FixedWindow {
    /// Validates `options`: `limit` and `windowMs` integers >= 1.
    pub fn new(options: &WindowOptions) -> Result<FixedWindow> {
        let limit = validate::integer_at_least("fixedWindow.limit", options.limit, 1.0)?;
        let window_ms = validate::integer_at_least("fixedWindow.windowMs", options.window_ms, 1.0)?;
        Ok(FixedWindow { limit: limit as u64, window_ms: window_ms as i64 })
    }

    /// The reported ceiling: the limit.
    pub fn limit(&self) -> i64 {
        self.limit as i64
    }

    fn period(&self, now: i64) -> Period {
        let start = now.div_euclid(self.window_ms) * self.window_ms;
        Period { start, end: start + self.window_ms }
    }

    /// One request of `cost` at `now`.
    #[inline]
    pub fn check(&self, slot: &mut Option<State>, now: i64, cost: u64, commit: bool) -> Step<Decision> {
        period_counter::check(self.limit, self.period(now), slot, now, cost, commit)
    }

    /// The check of `cost` at `now` against a key that held `count` units in `now`'s window
    /// (the Redis store's count reply, `core/src/redis/call.rs`): [`FixedWindow::check`] on
    /// that state, so the same decision and TTL as the memory store on the same state.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn check_found(&self, count: u64, now: i64, cost: u64) -> Step<Decision> {
        let mut slot = Some(State::Counter { start: self.period(now).start, count });
        self.check(&mut slot, now, cost, false)
    }

    /// Current capacity without consuming.
    pub fn peek(&self, state: Option<&State>, now: i64) -> Decision {
        period_counter::peek(self.limit, self.period(now), state, now)
    }
}
