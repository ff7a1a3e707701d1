//! Sub-bucketed sliding window: a ring of `buckets + 1` tick counters, the oldest weighted by
//! how much of it still overlaps the window.
//!
//! The window is the ticks `c - buckets ..= c`, where `c = floor(now / w)` and
//! `w = windowMs / buckets`. Ticks after the oldest count in full; the oldest is weighted by
//! `(w - elapsed) / w`. The error is bounded by one bucket. `buckets = 1` is the classic
//! two-counter estimator (`current + previous * (windowMs - elapsed) / windowMs`).

use crate::decision::Decision;
use crate::error::Result;
use crate::spec::SlidingWindowOptions;
use crate::state::{Slot, State, Step, ceil_i, floor_i};
use crate::validate;

/// Default number of sub-buckets.
pub const DEFAULT_BUCKETS: u64 = 10;

/// A validated sliding-window configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct SlidingWindow {
    pub(crate) limit: f64,
    pub(crate) window_ms: f64,
    pub(crate) buckets: u64,
    /// Tick length: `windowMs / buckets`, a float.
    w: f64,
}

/// The window as seen at one instant.
struct View {
    tick: i64,
    weight: f64,
    oldest: u64,
    current: u64,
    estimate: f64,
}

impl SlidingWindow {
    /// Validates `options`: `limit`, `windowMs` and `buckets` integers >= 1, `buckets` at most
    /// 1000000 and at most `1000 * windowMs`.
    pub fn new(options: &SlidingWindowOptions) -> Result<SlidingWindow> {
        SlidingWindow::with_field_prefix("slidingWindow", options.limit, options.window_ms, options.buckets)
    }

    /// Shared with the rolling quota, whose errors name `quota.*` fields.
    pub(crate) fn with_field_prefix(
        prefix: &str,
        limit: f64,
        window_ms: f64,
        buckets: Option<f64>,
    ) -> Result<SlidingWindow> {
        let limit = validate::integer_at_least(&format!("{prefix}.limit"), limit, 1.0)?;
        let field = if prefix == "quota" { "periodMs" } else { "windowMs" };
        let window_ms = validate::integer_at_least(&format!("{prefix}.{field}"), window_ms, 1.0)?;
        let buckets =
            validate::integer_at_least(&format!("{prefix}.buckets"), buckets.unwrap_or(DEFAULT_BUCKETS as f64), 1.0)?;
        if buckets > 1_000_000.0 {
            return Err(crate::Error::config(&format!("{prefix}.buckets"), "must be <= 1000000"));
        }
        // Every bucket at least one microsecond wide: then `c = floor(now / w)` stays below 2^53
        // until the year 2255 on any clock, Redis's own included (`serverClock`, where core sees
        // no `now` to refuse per call and the scripts would decide on an inexact tick).
        if buckets > 1000.0 * window_ms {
            return Err(crate::Error::config(
                &format!("{prefix}.buckets"),
                &format!("must be <= 1000 * {field} (each bucket at least 1 microsecond)"),
            ));
        }
        Ok(SlidingWindow { limit, window_ms, buckets: buckets as u64, w: window_ms / buckets })
    }

    /// The reported ceiling: the limit.
    pub fn limit(&self) -> i64 {
        self.limit as i64
    }

    /// `config_invalid` naming `now` unless every tick the window reads or writes at `now`,
    /// `c - buckets ..= c + 1` with `c = floor(now / w)`, lies within ±2^53: beyond, `t + 1 == t`
    /// in Lua's doubles (a ring loop that never ends blocks the whole Redis server) and `c` no
    /// longer fits an `i64` tick. Checked by the limiters before any store is called, so every
    /// store refuses the same calls.
    #[inline]
    pub(crate) fn check_tick(&self, now: i64) -> Result<()> {
        if (now as f64 / self.w).floor().abs() + self.buckets as f64 >= validate::MAX_SAFE_INTEGER {
            return Err(crate::Error::config("now", "must be within ±2^53 ticks of windowMs / buckets"));
        }
        Ok(())
    }

    fn ring_len(&self) -> i64 {
        self.buckets as i64 + 1
    }

    fn count(ring: &[Slot], len: i64, tick: i64) -> u64 {
        let slot = ring[tick.rem_euclid(len) as usize];
        if slot.tick == tick { slot.count } else { 0 }
    }

    fn view(&self, state: Option<&State>, now: i64) -> View {
        let now_f = now as f64;
        let c = (now_f / self.w).floor();
        let elapsed = now_f - c * self.w;
        let weight = ((self.w - elapsed) / self.w).clamp(0.0, 1.0);
        let tick = c as i64;
        let len = self.ring_len();
        let ring = match state {
            Some(State::Ring(ring)) if ring.len() as i64 == len => Some(ring),
            _ => None,
        };
        let Some(ring) = ring else {
            return View { tick, weight, oldest: 0, current: 0, estimate: 0.0 };
        };
        let b = self.buckets as i64;
        let mut sum: u64 = 0;
        for t in (tick - b + 1)..=tick {
            sum = sum.saturating_add(SlidingWindow::count(ring, len, t));
        }
        let oldest = SlidingWindow::count(ring, len, tick - b);
        let current = SlidingWindow::count(ring, len, tick);
        View { tick, weight, oldest, current, estimate: sum as f64 + oldest as f64 * weight }
    }

    fn reset_at(&self, tick: i64) -> i64 {
        ceil_i((tick as f64 + 1.0) * self.w + self.window_ms)
    }

    fn retry_after(&self, view: &View, now: i64, cost: f64) -> i64 {
        let d = view.estimate + cost - self.limit;
        let oldest = view.oldest as f64;
        let retry = if view.oldest > 0 && d <= oldest * view.weight {
            ceil_i(d * self.w / oldest)
        } else {
            ceil_i((view.tick as f64 + 1.0) * self.w - now as f64)
        };
        retry.max(1)
    }

    /// One request of `cost` at `now`.
    #[inline]
    pub fn check(&self, slot: &mut Option<State>, now: i64, cost: u64, commit: bool) -> Step<Decision> {
        let view = self.view(slot.as_ref(), now);
        let cost_f = cost as f64;
        let after = view.estimate + cost_f;
        if after <= self.limit {
            if commit {
                let len = self.ring_len();
                let index = view.tick.rem_euclid(len) as usize;
                let new_slot = Slot { tick: view.tick, count: view.current.saturating_add(cost) };
                match slot {
                    Some(State::Ring(ring)) if ring.len() as i64 == len => ring[index] = new_slot,
                    _ => {
                        let mut ring = vec![Slot::EMPTY; len as usize].into_boxed_slice();
                        ring[index] = new_slot;
                        *slot = Some(State::Ring(ring));
                    }
                }
            }
            Step {
                reply: Decision {
                    allowed: true,
                    limit: self.limit(),
                    remaining: floor_i(self.limit - after).max(0),
                    reset_at: self.reset_at(view.tick),
                    retry_after_ms: 0,
                    fallback: false,
                },
                ttl_ms: Some(ceil_i(self.window_ms + self.w).max(1)),
            }
        } else {
            Step {
                reply: Decision {
                    allowed: false,
                    limit: self.limit(),
                    remaining: floor_i(self.limit - view.estimate).max(0),
                    reset_at: self.reset_at(view.tick),
                    retry_after_ms: self.retry_after(&view, now, cost_f),
                    fallback: false,
                },
                ttl_ms: None,
            }
        }
    }

    /// Current capacity without consuming.
    pub fn peek(&self, state: Option<&State>, now: i64) -> Decision {
        let view = self.view(state, now);
        let allowed = view.estimate + 1.0 <= self.limit;
        Decision {
            allowed,
            limit: self.limit(),
            remaining: floor_i(self.limit - view.estimate).max(0),
            reset_at: self.reset_at(view.tick),
            retry_after_ms: if allowed { 0 } else { self.retry_after(&view, now, 1.0) },
            fallback: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    fn refusal(prefix: &str, window_ms: f64, buckets: f64) -> String {
        let e = SlidingWindow::with_field_prefix(prefix, 1.0, window_ms, Some(buckets)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConfigInvalid);
        e.message().to_string()
    }

    #[test]
    fn every_bucket_is_at_least_one_microsecond_wide() {
        // 1000 buckets in 1 ms: 1 microsecond each, the narrowest allowed.
        assert!(SlidingWindow::with_field_prefix("slidingWindow", 1.0, 1.0, Some(1000.0)).is_ok());
        assert!(SlidingWindow::with_field_prefix("quota", 1.0, 1.0, Some(1000.0)).is_ok());
        assert_eq!(
            refusal("slidingWindow", 1.0, 1001.0),
            "slidingWindow.buckets must be <= 1000 * windowMs (each bucket at least 1 microsecond)"
        );
        assert_eq!(
            refusal("quota", 7.0, 7001.0),
            "quota.buckets must be <= 1000 * periodMs (each bucket at least 1 microsecond)"
        );
        // The older rule still holds where the new one would allow more.
        assert_eq!(refusal("slidingWindow", 10_000.0, 1_000_001.0), "slidingWindow.buckets must be <= 1000000");
    }

    #[test]
    fn the_narrowest_bucket_ticks_within_2_53_until_2255() {
        // 2^53 microseconds after the epoch is in the year 2255 (2^53 / 1000 ms is 2255-06-05):
        // on any clock up to then, Redis's included, the tick is exact.
        let w = SlidingWindow::with_field_prefix("slidingWindow", 1.0, 1.0, Some(1000.0)).unwrap();
        let year_2255: i64 = 9_000_000_000_000; // 2255-03-14
        assert!(w.check_tick(year_2255).is_ok());
        assert!(w.check_tick(-year_2255).is_ok());
        // 2^53 microseconds (2255-06-05) is where a call's own bound starts refusing.
        assert!(w.check_tick(9_007_199_254_740).is_err());
    }
}
