//! A counter over one period `[start, end)`: the shared core of the fixed window and of the
//! calendar and fixed quotas. A count stored for another period reads as 0.

use crate::decision::Decision;
use crate::state::{State, Step};

/// The period that contains `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Period {
    pub start: i64,
    pub end: i64,
}

fn count_in(state: Option<&State>, period: Period) -> u64 {
    match state {
        Some(State::Counter { start, count }) if *start == period.start => *count,
        _ => 0,
    }
}

/// One request of `cost` at `now` against `limit` units per `period`.
#[inline]
pub(crate) fn check(
    limit: u64,
    period: Period,
    slot: &mut Option<State>,
    now: i64,
    cost: u64,
    commit: bool,
) -> Step<Decision> {
    let count = count_in(slot.as_ref(), period);
    let to_end = (period.end - now).max(1);
    let new_count = count.saturating_add(cost);
    if new_count <= limit {
        if commit {
            *slot = Some(State::Counter { start: period.start, count: new_count });
        }
        Step {
            reply: Decision {
                allowed: true,
                limit: limit as i64,
                remaining: (limit - new_count) as i64,
                reset_at: period.end,
                retry_after_ms: 0,
                fallback: false,
            },
            ttl_ms: Some(to_end),
        }
    } else {
        Step {
            reply: Decision {
                allowed: false,
                limit: limit as i64,
                remaining: limit.saturating_sub(count) as i64,
                reset_at: period.end,
                retry_after_ms: to_end,
                fallback: false,
            },
            ttl_ms: None,
        }
    }
}

/// Current capacity without consuming.
pub(crate) fn peek(limit: u64, period: Period, state: Option<&State>, now: i64) -> Decision {
    let count = count_in(state, period);
    let allowed = count < limit;
    Decision {
        allowed,
        limit: limit as i64,
        remaining: limit.saturating_sub(count) as i64,
        reset_at: period.end,
        retry_after_ms: if allowed { 0 } else { (period.end - now).max(1) },
        fallback: false,
    }
}
