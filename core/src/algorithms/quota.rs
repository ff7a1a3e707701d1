//! Quota: a budget over a billing period that resets on a calendar boundary (month, week, day
//! at a fixed UTC offset), on fixed periods, or rolls as a sliding window.
//!
//! A fixed offset instead of a DST-aware zone is deliberate: it is the only calendar arithmetic
//! the Redis Lua path can reproduce byte for byte.

use crate::algorithms::calendar::{DAY_MS, civil_from_days, days_from_civil, weekday};
use crate::algorithms::period_counter::{self, Period};
use crate::algorithms::sliding_window::SlidingWindow;
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::spec::{QuotaOptions, ResetCadence};
use crate::state::{State, Step};
use crate::validate;

/// How the period containing `now` is found.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Cadence {
    Month { offset_ms: i64 },
    Week { offset_ms: i64, week_starts_on: i64 },
    Day { offset_ms: i64 },
    Fixed { period_ms: i64, anchor: i64 },
}

/// A validated quota configuration.
#[derive(Clone, Debug, PartialEq)]
pub enum Quota {
    /// A counter over calendar or fixed periods.
    Periodic {
        /// Units per period.
        limit: u64,
        /// How periods are cut.
        #[allow(private_interfaces)]
        cadence: Cadence,
        /// The options it was built from (the Redis path sends them as they are).
        options: QuotaOptions,
    },
    /// `rolling`: exactly the sliding window with `windowMs = periodMs`.
    Rolling(SlidingWindow),
}

impl Quota {
    /// Validates `options` (see [`QuotaOptions`]).
    pub fn new(options: &QuotaOptions) -> Result<Quota> {
        let limit = validate::integer_at_least("quota.limit", options.limit, 1.0)?;
        let offset_min =
            validate::integer_in("quota.offsetMinutes", options.offset_minutes.unwrap_or(0.0), -840.0, 840.0)?;
        let week_starts_on =
            validate::integer_in("quota.weekStartsOn", options.week_starts_on.unwrap_or(1.0), 0.0, 6.0)?;
        if let Some(b) = options.buckets {
            validate::integer_at_least("quota.buckets", b, 1.0)?;
            if options.reset_cadence != ResetCadence::Rolling {
                return Err(Error::config("quota.buckets", "applies only to the rolling cadence"));
            }
        }
        let anchor = validate::integer_in(
            "quota.anchor",
            options.anchor.unwrap_or(0.0),
            -validate::MAX_SAFE_INTEGER,
            validate::MAX_SAFE_INTEGER,
        )?;
        let period_ms = match options.reset_cadence {
            ResetCadence::Fixed | ResetCadence::Rolling => {
                let p = options
                    .period_ms
                    .ok_or_else(|| Error::config("quota.periodMs", "is required for the fixed and rolling cadences"))?;
                Some(validate::integer_at_least("quota.periodMs", p, 1.0)?)
            }
            _ => {
                if options.period_ms.is_some() {
                    return Err(Error::config("quota.periodMs", "applies only to the fixed and rolling cadences"));
                }
                None
            }
        };
        let offset_ms = offset_min as i64 * 60_000;
        let cadence = match options.reset_cadence {
            ResetCadence::Rolling => {
                let window = period_ms.unwrap_or_default();
                return Ok(Quota::Rolling(SlidingWindow::with_field_prefix("quota", limit, window, options.buckets)?));
            }
            ResetCadence::CalendarMonth => Cadence::Month { offset_ms },
            ResetCadence::CalendarWeek => Cadence::Week { offset_ms, week_starts_on: week_starts_on as i64 },
            ResetCadence::CalendarDay => Cadence::Day { offset_ms },
            ResetCadence::Fixed => Cadence::Fixed { period_ms: period_ms.unwrap_or(1.0) as i64, anchor: anchor as i64 },
        };
        Ok(Quota::Periodic { limit: limit as u64, cadence, options: options.clone() })
    }

    /// The reported ceiling: the limit.
    pub fn limit(&self) -> i64 {
        match self {
            Quota::Periodic { limit, .. } => *limit as i64,
            Quota::Rolling(w) => w.limit(),
        }
    }

    /// The period that contains `now`.
    pub(crate) fn period(cadence: &Cadence, now: i64) -> Period {
        let local_days = |offset_ms: i64| (now + offset_ms).div_euclid(DAY_MS);
        let (start_day, end_day, offset_ms) = match *cadence {
            Cadence::Fixed { period_ms, anchor } => {
                let start = anchor + (now - anchor).div_euclid(period_ms) * period_ms;
                return Period { start, end: start + period_ms };
            }
            Cadence::Day { offset_ms } => {
                let day = local_days(offset_ms);
                (day, day + 1, offset_ms)
            }
            Cadence::Week { offset_ms, week_starts_on } => {
                let day = local_days(offset_ms);
                let start = day - (weekday(day) - week_starts_on).rem_euclid(7);
                (start, start + 7, offset_ms)
            }
            Cadence::Month { offset_ms } => {
                let day = local_days(offset_ms);
                let (y, m, _) = civil_from_days(day);
                let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                (days_from_civil(y, m, 1), days_from_civil(ny, nm, 1), offset_ms)
            }
        };
        Period { start: start_day * DAY_MS - offset_ms, end: end_day * DAY_MS - offset_ms }
    }

    /// One request of `cost` at `now`.
    pub fn check(&self, slot: &mut Option<State>, now: i64, cost: u64, commit: bool) -> Step<Decision> {
        match self {
            Quota::Periodic { limit, cadence, .. } => {
                period_counter::check(*limit, Quota::period(cadence, now), slot, now, cost, commit)
            }
            Quota::Rolling(w) => w.check(slot, now, cost, commit),
        }
    }

    /// Current capacity without consuming.
    pub fn peek(&self, state: Option<&State>, now: i64) -> Decision {
        match self {
            Quota::Periodic { limit, cadence, .. } => {
                period_counter::peek(*limit, Quota::period(cadence, now), state, now)
            }
            Quota::Rolling(w) => w.peek(state, now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn period(cadence: Cadence, now: i64) -> (i64, i64) {
        let p = Quota::period(&cadence, now);
        (p.start, p.end)
    }

    #[test]
    fn a_month_runs_from_the_first_to_the_first_in_utc() {
        // 2024-02-10T12:00Z is in February of a leap year.
        let now = days_from_civil(2024, 2, 10) * DAY_MS + 12 * 3_600_000;
        let (s, e) = period(Cadence::Month { offset_ms: 0 }, now);
        assert_eq!(s, days_from_civil(2024, 2, 1) * DAY_MS);
        assert_eq!(e, days_from_civil(2024, 3, 1) * DAY_MS);
        assert_eq!((e - s) / DAY_MS, 29);
    }

    #[test]
    fn an_offset_shifts_the_boundary_to_local_midnight() {
        // 2024-03-01T02:00Z is still February 29th at UTC-05:00.
        let now = days_from_civil(2024, 3, 1) * DAY_MS + 2 * 3_600_000;
        let (s, e) = period(Cadence::Month { offset_ms: -300 * 60_000 }, now);
        assert_eq!(s, days_from_civil(2024, 2, 1) * DAY_MS + 5 * 3_600_000);
        assert_eq!(e, days_from_civil(2024, 3, 1) * DAY_MS + 5 * 3_600_000);
    }

    #[test]
    fn a_week_starts_on_the_last_week_start_day_at_or_before_today() {
        // 2026-11-22 is a Sunday. Monday-start weeks began on 2026-11-16.
        let sunday = days_from_civil(2026, 11, 22) * DAY_MS + 1;
        let (s, e) = period(Cadence::Week { offset_ms: 0, week_starts_on: 1 }, sunday);
        assert_eq!(s, days_from_civil(2026, 11, 16) * DAY_MS);
        assert_eq!(e - s, 7 * DAY_MS);
        // Sunday-start weeks begin that very day.
        let (s, _) = period(Cadence::Week { offset_ms: 0, week_starts_on: 0 }, sunday);
        assert_eq!(s, days_from_civil(2026, 11, 22) * DAY_MS);
    }

    #[test]
    fn fixed_periods_align_to_the_anchor_also_before_it() {
        assert_eq!(period(Cadence::Fixed { period_ms: 1000, anchor: 250 }, 1249), (250, 1250));
        assert_eq!(period(Cadence::Fixed { period_ms: 1000, anchor: 250 }, 1250), (1250, 2250));
        assert_eq!(period(Cadence::Fixed { period_ms: 1000, anchor: 250 }, 0), (-750, 250));
    }
}
