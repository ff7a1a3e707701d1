//! The per-key state of every algorithm: small plain data, one variant per shape.
//!
//! A store keeps one `State` per key and hands it to a strategy inside its atomic apply. A state
//! of the wrong shape (two limiters of different kinds sharing a key) reads as a fresh key.

use std::collections::VecDeque;

/// One key's state.
#[derive(Clone, Debug, PartialEq)]
pub enum State {
    /// GCRA's theoretical arrival time, or the shaper's next departure (epoch ms, fractional).
    Tat(f64),
    /// A token bucket: tokens present at `last` (epoch ms).
    Bucket {
        /// Tokens present at `last`.
        tokens: f64,
        /// When `tokens` was computed.
        last: i64,
    },
    /// A counter over the period that starts at `start` (fixed window, calendar/fixed quota).
    Counter {
        /// Start of the period the count belongs to (epoch ms).
        start: i64,
        /// Units admitted in that period.
        count: u64,
    },
    /// The sliding window's ring of `buckets + 1` slots.
    Ring(Box<[Slot]>),
    /// The sliding-window log: ascending `(stamp, units)` runs.
    Log(VecDeque<(i64, u64)>),
}

/// One slot of the sliding window's ring: the units admitted during `tick`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The tick this slot holds (`floor(now / w)`); a slot counts only for exactly this tick.
    pub tick: i64,
    /// Units admitted during `tick`.
    pub count: u64,
}

impl Slot {
    /// A slot that counts for no tick.
    pub const EMPTY: Slot = Slot { tick: i64::MIN, count: 0 };
}

/// What one transition did: the decision, and the TTL of the written state (`None` when
/// nothing was written — every deny, and every peek or forecast).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step<R> {
    /// The decision (or reservation).
    pub reply: R,
    /// TTL in ms of the new state, when it was (or, for a forecast, would be) persisted.
    pub ttl_ms: Option<i64>,
}

/// `ceil` of a float to an integer, saturating (Lua's `math.ceil` with Redis's integer reply).
#[inline]
pub(crate) fn ceil_i(v: f64) -> i64 {
    v.ceil() as i64
}

/// `floor` of a float to an integer, saturating.
#[inline]
pub(crate) fn floor_i(v: f64) -> i64 {
    v.floor() as i64
}
