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
    /// The sliding-window log: ascending `(stamp, units)` runs and their total.
    Log(Log),
}

/// The sliding-window log's ascending `(stamp, units)` runs, with the sum of their units.
///
/// Why the sum is kept: a check needs the live count, and summing every run made a check cost
/// O(limit) and read the whole log (a cold log of 60 runs is a dozen cache lines); with the sum,
/// a check reads the front (to drop expired runs) and the back (to append), nothing between.
/// The fields are private so the sum always matches the runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Log {
    runs: VecDeque<(i64, u64)>,
    total: u64,
}

impl Log {
    /// An empty log.
    pub fn new() -> Log {
        Log::default()
    }

    /// The runs, oldest first.
    pub fn runs(&self) -> &VecDeque<(i64, u64)> {
        &self.runs
    }

    /// The units of every run, expired ones not yet dropped included (saturating).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Drops the oldest `n` runs, which hold `units` units together.
    pub(crate) fn drop_oldest(&mut self, n: usize, units: u64) {
        self.runs.drain(..n);
        self.total = self.total.saturating_sub(units);
    }

    /// Adds `units` at `stamp`, keeping the runs ascending and one run per stamp. Appending at
    /// the newest end is the common case and costs O(1); a stamp older than the newest (after
    /// a backward clock jump) is placed by binary search.
    pub(crate) fn add(&mut self, stamp: i64, units: u64) {
        self.total = self.total.saturating_add(units);
        match self.runs.back_mut() {
            Some(last) if last.0 == stamp => last.1 = last.1.saturating_add(units),
            Some(last) if last.0 > stamp => {
                let at = self.runs.partition_point(|&(s, _)| s < stamp);
                match self.runs.get_mut(at) {
                    Some(run) if run.0 == stamp => run.1 = run.1.saturating_add(units),
                    _ => self.runs.insert(at, (stamp, units)),
                }
            }
            _ => self.runs.push_back((stamp, units)),
        }
    }
}

impl From<VecDeque<(i64, u64)>> for Log {
    /// A log of these runs (which must be ascending by stamp).
    fn from(runs: VecDeque<(i64, u64)>) -> Log {
        let total = runs.iter().fold(0u64, |acc, r| acc.saturating_add(r.1));
        Log { runs, total }
    }
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
    // Truncate, then step up if that lost a positive fraction. Equal to `v.ceil() as i64` for
    // every input (NaN gives 0, out-of-range values saturate), but without a libm call: the
    // baseline x86-64 target has no rounding instruction, and this sits on every check.
    let t = v as i64;
    if (t as f64) < v { t.saturating_add(1) } else { t }
}

/// `floor` of a float to an integer, saturating.
#[inline]
pub(crate) fn floor_i(v: f64) -> i64 {
    // See `ceil_i`: truncate, then step down if that lost a negative fraction.
    let t = v as i64;
    if (t as f64) > v { t.saturating_sub(1) } else { t }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_rounding_equals_libm_rounding_everywhere() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut samples = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            2.5,
            -2.5,
            1e-300,
            -1e-300,
            4503599627370495.5,
            -4503599627370495.5,
            9007199254740993.0,
            9.3e18,
            -9.3e18,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            9.223372036854775e18,
            -9.223372036854775e18,
        ];
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x);
            samples.push(v);
            samples.push((x % 2_000_000_000_000) as f64 / 7.0 - 1e11);
        }
        for v in samples {
            assert_eq!(ceil_i(v), v.ceil() as i64, "ceil {v:e}");
            assert_eq!(floor_i(v), v.floor() as i64, "floor {v:e}");
        }
    }
}

#[cfg(test)]
mod log_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the order of stamps (a clock may jump back), the runs stay ascending with
        /// one run per stamp, and the kept total is their sum.
        #[test]
        fn the_total_is_the_sum_of_the_runs(ops in proptest::collection::vec((0i64..50, 1u64..5, 0usize..3), 0..60)) {
            let mut log = Log::new();
            for (stamp, units, drop) in ops {
                log.add(stamp, units);
                let n = drop.min(log.runs().len());
                let units: u64 = log.runs().iter().take(n).map(|r| r.1).sum();
                log.drop_oldest(n, units);
                let runs: Vec<_> = log.runs().iter().copied().collect();
                prop_assert!(runs.windows(2).all(|w| w[0].0 < w[1].0), "{runs:?}");
                prop_assert_eq!(log.total(), runs.iter().map(|r| r.1).sum::<u64>());
                prop_assert_eq!(Log::from(log.runs().clone()), log.clone());
            }
        }
    }
}
