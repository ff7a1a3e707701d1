//! Sliding-window log: the exact count of units admitted in the trailing `windowMs`.
//!
//! Every admitted unit is kept as a stamp (runs of equal stamps are stored once with a count),
//! so memory is O(distinct stamps) per key: use it for low limits ("5 password resets an
//! hour"). A stamp at `t` stops counting at exactly `t + windowMs`. Stamps later than `now`,
//! left behind by a backward clock jump, stay live and count.

use crate::decision::Decision;
use crate::error::Result;
use crate::spec::WindowOptions;
use crate::state::{Log, State, Step};
use crate::validate;

/// A validated sliding-window-log configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct SlidingWindowLog {
    pub(crate) limit: u64,
    pub(crate) window_ms: i64,
}

/// The live part of a log at one instant.
struct View<'a> {
    /// The live runs, oldest first, in up to three slices (see `Log::parts`).
    live: [&'a [(i64, u64)]; 3],
    dead_runs: usize,
    /// Units in the expired runs.
    dead_units: u64,
    count: u64,
    /// The oldest live run's stamp (the log's cached one when nothing expired, so the runs'
    /// buffer is not read).
    oldest: Option<i64>,
}

impl<'a> View<'a> {
    fn runs(&self) -> impl Iterator<Item = &'a (i64, u64)> {
        let [a, b, c] = self.live;
        a.iter().chain(b).chain(c)
    }

    /// The stamp of the `rank`-th oldest live unit (1-based, `1 <= rank <= count`).
    fn stamp_of_rank(&self, rank: u64) -> i64 {
        if let (1, Some(oldest)) = (rank, self.oldest) {
            return oldest; // the usual denial: until the oldest unit ages out
        }
        let mut seen = 0u64;
        for &(stamp, n) in self.runs() {
            seen += n;
            if seen >= rank {
                return stamp;
            }
        }
        unreachable!("rank is clamped to the live count")
    }
}

impl SlidingWindowLog {
    /// Validates `options`: `limit` and `windowMs` integers >= 1.
    pub fn new(options: &WindowOptions) -> Result<SlidingWindowLog> {
        let limit = validate::integer_at_least("slidingWindowLog.limit", options.limit, 1.0)?;
        let window_ms = validate::integer_at_least("slidingWindowLog.windowMs", options.window_ms, 1.0)?;
        Ok(SlidingWindowLog { limit: limit as u64, window_ms: window_ms as i64 })
    }

    /// The reported ceiling: the limit.
    pub fn limit(&self) -> i64 {
        self.limit as i64
    }

    fn view<'a>(&self, state: Option<&'a State>, now: i64) -> View<'a> {
        match state {
            Some(State::Log(log)) => self.view_log(log, now),
            _ => View { live: [&[]; 3], dead_runs: 0, dead_units: 0, count: 0, oldest: None },
        }
    }

    /// The live part of `log` at `now` (an empty log reads as a fresh key).
    #[inline(always)]
    fn view_log<'a>(&self, log: &'a Log, now: i64) -> View<'a> {
        let horizon = now.saturating_sub(self.window_ms);
        let mut live = log.parts();
        // Expired runs sit at the front, and each commit drops them: usually there are none,
        // which the log's cached oldest stamp shows without reading the runs.
        let oldest = log.oldest();
        if !matches!(oldest, Some(oldest) if oldest <= horizon) {
            return View { live, dead_runs: 0, dead_units: 0, count: log.total(), oldest };
        }
        // Split each slice at the horizon; a slice with a live run ends the dead ones.
        let mut dead: [&[(i64, u64)]; 3] = [&[]; 3];
        let mut dead_runs = 0;
        for i in 0..3 {
            let part = live[i];
            let at = part.partition_point(|&(stamp, _)| stamp <= horizon);
            (dead[i], live[i]) = part.split_at(at);
            dead_runs += at;
            if at < part.len() {
                break;
            }
        }
        let sum = |parts: &[&[(i64, u64)]; 3]| {
            parts.iter().flat_map(|p| p.iter()).fold(0u64, |acc, r| acc.saturating_add(r.1))
        };
        // Sum whichever part is shorter; the log's total gives the other.
        let (dead_units, count) = if dead_runs <= log.len() - dead_runs {
            let dead_units = sum(&dead);
            (dead_units, log.total().saturating_sub(dead_units))
        } else {
            let count = sum(&live);
            (log.total().saturating_sub(count), count)
        };
        let oldest = live.iter().find_map(|p| p.first()).map(|r| r.0);
        View { live, dead_runs, dead_units, count, oldest }
    }

    fn retry_after(&self, view: &View<'_>, now: i64, cost: u64) -> i64 {
        if view.count == 0 {
            return self.window_ms.max(1);
        }
        let rank = (view.count.saturating_add(cost).saturating_sub(self.limit)).clamp(1, view.count);
        (view.stamp_of_rank(rank) + self.window_ms - now).max(1)
    }

    fn reset_at(&self, view: &View<'_>, now: i64) -> i64 {
        view.oldest.unwrap_or(now) + self.window_ms
    }

    /// One request of `cost` at `now`.
    pub fn check(&self, slot: &mut Option<State>, now: i64, cost: u64, commit: bool) -> Step<Decision> {
        if let Some(State::Log(log)) = slot {
            return self.check_log(log, now, cost, commit);
        }
        // A fresh key (or a state of another shape): an empty log, stored only when written.
        let mut log = Log::new();
        let step = self.check_log(&mut log, now, cost, commit);
        if commit && step.ttl_ms.is_some() {
            *slot = Some(State::Log(log));
        }
        step
    }

    /// [`SlidingWindowLog::check`] on the log itself, changed in place when the request is
    /// allowed and `commit` is true (an empty log is a fresh key). The memory store calls this
    /// on the log it keeps boxed in the key's entry, so a check moves no [`State`] in or out.
    ///
    /// The usual check reads only the log's holder: nothing has expired (the oldest stamp is
    /// inside the window, so the live count is the kept total), and a denial waits for the
    /// oldest unit (rank 1). It is decided here from the total and the oldest stamp, with no
    /// [`View`] built; every other check (something expired, a denial that waits for a later
    /// unit) goes to [`SlidingWindowLog::check_log_viewed`]. Why: a hot key over
    /// its limit is denied thousands of times a second, and the view (three slices and four
    /// counters) went through memory on each, with the decision behind it (132 instructions
    /// a denial, callgrind, docs/performance.md). The two agree on every log
    /// (`the_direct_check_is_the_viewed_check`).
    #[inline(always)]
    pub(crate) fn check_log(&self, log: &mut Log, now: i64, cost: u64, commit: bool) -> Step<Decision> {
        let oldest = log.oldest();
        if matches!(oldest, Some(oldest) if oldest <= now.saturating_sub(self.window_ms)) {
            return self.check_log_viewed(log, now, cost, commit);
        }
        // Nothing expired: the live count is the total, and the oldest live stamp the log's.
        let count = log.total();
        let new_count = count.saturating_add(cost);
        if new_count > self.limit {
            let retry_after_ms = match oldest {
                _ if count == 0 => self.window_ms.max(1),
                // The rank `retry_after` takes is 1 exactly when one unit too many is asked for
                // (or only one is live): then it is the oldest stamp's.
                Some(oldest) if new_count - self.limit == 1 || count == 1 => (oldest + self.window_ms - now).max(1),
                _ => return self.check_log_viewed(log, now, cost, commit),
            };
            return Step {
                reply: Decision {
                    allowed: false,
                    limit: self.limit(),
                    remaining: self.limit.saturating_sub(count) as i64,
                    reset_at: oldest.unwrap_or(now) + self.window_ms,
                    retry_after_ms,
                    fallback: false,
                },
                ttl_ms: None,
            };
        }
        let reset_from = oldest.map_or(now, |o| o.min(now));
        if commit {
            log.add(now, cost);
        }
        Step {
            reply: Decision {
                allowed: true,
                limit: self.limit(),
                remaining: (self.limit - new_count) as i64,
                reset_at: reset_from + self.window_ms,
                retry_after_ms: 0,
                fallback: false,
            },
            ttl_ms: Some(self.window_ms),
        }
    }

    /// [`SlidingWindowLog::check_log`] through the log's [`View`]: every case, expired runs and
    /// any rank of denial included. Inlined like `check_log`: a decision that comes back from a
    /// call is kept in memory where the ways meet, and copied out wider than it was written.
    #[inline(always)]
    pub(crate) fn check_log_viewed(&self, log: &mut Log, now: i64, cost: u64, commit: bool) -> Step<Decision> {
        let view = self.view_log(log, now);
        let new_count = view.count.saturating_add(cost);
        if new_count > self.limit {
            return Step {
                reply: Decision {
                    allowed: false,
                    limit: self.limit(),
                    remaining: self.limit.saturating_sub(view.count) as i64,
                    reset_at: self.reset_at(&view, now),
                    retry_after_ms: self.retry_after(&view, now, cost),
                    fallback: false,
                },
                ttl_ms: None,
            };
        }
        let oldest = view.oldest.map_or(now, |o| o.min(now));
        let (dead_runs, dead_units) = (view.dead_runs, view.dead_units);
        if commit {
            log.drop_oldest(dead_runs, dead_units);
            log.add(now, cost);
        }
        Step {
            reply: Decision {
                allowed: true,
                limit: self.limit(),
                remaining: (self.limit - new_count) as i64,
                reset_at: oldest + self.window_ms,
                retry_after_ms: 0,
                fallback: false,
            },
            ttl_ms: Some(self.window_ms),
        }
    }

    /// Current capacity without consuming.
    pub fn peek(&self, state: Option<&State>, now: i64) -> Decision {
        let view = self.view(state, now);
        let allowed = view.count < self.limit;
        Decision {
            allowed,
            limit: self.limit(),
            remaining: self.limit.saturating_sub(view.count) as i64,
            reset_at: self.reset_at(&view, now),
            retry_after_ms: if allowed { 0 } else { self.retry_after(&view, now, 1) },
            fallback: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// `check_log`'s direct decision (nothing expired, a denial of rank 1) is the viewed
        /// check's on every log: the same step, and the same log after it, for logs built from
        /// stamps in any order (a clock that jumps back) with their oldest runs dropped, at any
        /// `now` around them (expired runs or none), any cost (one unit or many over the limit),
        /// committed or not.
        #[test]
        fn the_direct_check_is_the_viewed_check(
            ops in proptest::collection::vec((0i64..60, 0u64..4, 0usize..2), 0..40),
            limit in 1u64..12,
            window_ms in 1i64..40,
            now in -5i64..110,
            cost in 1u64..15,
            commit: bool,
        ) {
            let swl = SlidingWindowLog { limit, window_ms };
            let mut log = Log::new();
            for (stamp, units, drop) in ops {
                log.add(stamp, units);
                let n = drop.min(log.len());
                let dropped: u64 = log.iter().take(n).map(|r| r.1).sum();
                log.drop_oldest(n, dropped);
            }
            let (mut direct, mut viewed) = (log.clone(), log);
            let a = swl.check_log(&mut direct, now, cost, commit);
            let b = swl.check_log_viewed(&mut viewed, now, cost, commit);
            prop_assert_eq!(a, b);
            prop_assert_eq!(&direct, &viewed);
            prop_assert_eq!(direct.total(), viewed.total());
            prop_assert_eq!(direct.oldest(), viewed.oldest());
        }
    }
}
