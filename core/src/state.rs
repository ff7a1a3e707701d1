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

/// How many of the newest runs a [`Log`] keeps beside its counters instead of in its buffer.
const PENDING: usize = 3;

/// The sliding-window log's ascending `(stamp, units)` runs, with the sum of their units and
/// the stamps of the oldest and the newest run.
///
/// Why the sum is kept: a check needs the live count, and summing every run made a check cost
/// O(limit) and read the whole log (a cold log of 60 runs is a dozen cache lines).
///
/// Why the stamps and the newest runs are kept beside it: on a store of many keys, every cache
/// line a check touches beyond the key's own is a miss, and each waits on the one before (the
/// table entry, then this holder, then the runs' buffer). With the oldest stamp here, a check
/// whose log has nothing expired (the common case: the next admitted check drops what expired)
/// learns that, its count and `resetAt` without reading the buffer; with the newest runs here
/// (`pending`, up to `PENDING`), an admitted unit is written here too, and the buffer takes
/// the pending runs `PENDING` at a time. Writing the buffer at every new stamp stalled the
/// check on the line's fetch even for a write (measured with `perf` on Python `check_sync`,
/// 100k keys of ~40 runs: ~50 ns of ~300 a call; docs/performance.md).
///
/// The logical log is `runs` followed by `pending[..np]`. The fields are private so the sum and
/// the stamps always match the runs.
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct Log {
    total: u64,
    /// The oldest run's stamp (0 when there is no run).
    oldest: i64,
    /// The newest run's stamp (0 when there is no run).
    newest: i64,
    /// How many of `pending` hold runs.
    np: usize,
    /// The newest runs, ascending, each newer than every run in `runs`.
    pending: [(i64, u64); PENDING],
    /// The older runs, ascending.
    runs: VecDeque<(i64, u64)>,
}

impl PartialEq for Log {
    /// The same runs (the sum and the stamps follow from them), however they are split between
    /// the buffer and the pending ones.
    fn eq(&self, other: &Log) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Log {
    /// An empty log.
    pub fn new() -> Log {
        Log::default()
    }

    /// Empties the log in place, keeping the buffer's allocation (an expired key's log is
    /// reused by its next check instead of freed and allocated again).
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.runs.clear();
        (self.total, self.oldest, self.newest, self.np) = (0, 0, 0, 0);
    }

    /// The runs, oldest first, as up to three ascending slices: the buffer's two halves, then
    /// the pending runs.
    #[inline]
    pub fn parts(&self) -> [&[(i64, u64)]; 3] {
        let (front, back) = self.runs.as_slices();
        [front, back, &self.pending[..self.np]]
    }

    /// The runs, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &(i64, u64)> {
        self.runs.iter().chain(self.pending[..self.np].iter())
    }

    /// How many runs.
    #[inline]
    pub fn len(&self) -> usize {
        self.runs.len() + self.np
    }

    /// Whether there is no run.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.np == 0 && self.runs.is_empty()
    }

    /// The units of every run, expired ones not yet dropped included (saturating).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The oldest run's stamp, read without touching the runs' buffer.
    #[inline]
    pub fn oldest(&self) -> Option<i64> {
        if self.is_empty() { None } else { Some(self.oldest) }
    }

    /// Drops the oldest `n` runs, which hold `units` units together.
    #[inline]
    pub(crate) fn drop_oldest(&mut self, n: usize, units: u64) {
        if n == 0 {
            return;
        }
        let from_buffer = n.min(self.runs.len());
        self.runs.drain(..from_buffer);
        let from_pending = (n - from_buffer).min(self.np);
        if from_pending > 0 {
            self.pending.copy_within(from_pending..self.np, 0);
            self.np -= from_pending;
        }
        self.total = self.total.saturating_sub(units);
        let first = self.iter().next().map(|r| r.0);
        match first {
            Some(stamp) => self.oldest = stamp,
            None => (self.oldest, self.newest) = (0, 0),
        }
    }

    /// Moves the pending runs to the buffer.
    #[cold]
    fn settle(&mut self) {
        self.runs.extend(&self.pending[..self.np]);
        self.np = 0;
    }

    /// Adds `units` at `stamp`, keeping the runs ascending and one run per stamp. Appending at
    /// the newest end is the common case and costs O(1), in the pending runs; a stamp older than
    /// the newest (after a backward clock jump) is placed by binary search. Zero units add no
    /// run (as the Redis script adds no member), so every run holds at least one unit and the
    /// oldest unit's stamp is the oldest run's.
    #[inline]
    pub(crate) fn add(&mut self, stamp: i64, units: u64) {
        if units == 0 {
            return;
        }
        self.total = self.total.saturating_add(units);
        if self.is_empty() {
            self.pending[0] = (stamp, units);
            self.np = 1;
            (self.oldest, self.newest) = (stamp, stamp);
        } else if stamp > self.newest {
            if self.np == PENDING {
                self.settle();
            }
            self.pending[self.np] = (stamp, units);
            self.np += 1;
            self.newest = stamp;
        } else if stamp == self.newest {
            let last = if self.np > 0 { self.pending.get_mut(self.np - 1) } else { self.runs.back_mut() };
            if let Some(last) = last {
                last.1 = last.1.saturating_add(units);
            }
        } else {
            self.settle();
            let at = self.runs.partition_point(|&(s, _)| s < stamp);
            match self.runs.get_mut(at) {
                Some(run) if run.0 == stamp => run.1 = run.1.saturating_add(units),
                _ => self.runs.insert(at, (stamp, units)),
            }
            if stamp < self.oldest {
                self.oldest = stamp;
            }
        }
    }
}

impl From<VecDeque<(i64, u64)>> for Log {
    /// A log of these runs (which must be ascending by stamp).
    fn from(runs: VecDeque<(i64, u64)>) -> Log {
        let total = runs.iter().fold(0u64, |acc, r| acc.saturating_add(r.1));
        let oldest = runs.front().map_or(0, |r| r.0);
        let newest = runs.back().map_or(0, |r| r.0);
        Log { total, oldest, newest, np: 0, pending: [(0, 0); PENDING], runs }
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
        /// one run per stamp, none empty, and the kept total is their sum and the kept stamps
        /// their ends.
        #[test]
        fn the_total_is_the_sum_of_the_runs(ops in proptest::collection::vec((0i64..50, 0u64..5, 0usize..3), 0..60)) {
            let mut log = Log::new();
            let mut model: Vec<(i64, u64)> = Vec::new();
            for (stamp, units, drop) in ops {
                log.add(stamp, units);
                if units > 0 {
                    match model.binary_search_by_key(&stamp, |r| r.0) {
                        Ok(i) => model[i].1 += units,
                        Err(i) => model.insert(i, (stamp, units)),
                    }
                }
                let n = drop.min(log.len());
                let units: u64 = log.iter().take(n).map(|r| r.1).sum();
                log.drop_oldest(n, units);
                model.drain(..n);
                let runs: Vec<_> = log.iter().copied().collect();
                prop_assert_eq!(&runs, &model);
                prop_assert_eq!(log.parts().concat(), runs.clone());
                prop_assert!(runs.windows(2).all(|w| w[0].0 < w[1].0), "{runs:?}");
                prop_assert!(runs.iter().all(|r| r.1 > 0), "{runs:?}");
                prop_assert_eq!(log.total(), runs.iter().map(|r| r.1).sum::<u64>());
                prop_assert_eq!(Log::from(runs.iter().copied().collect::<VecDeque<_>>()), log.clone());
                prop_assert_eq!(log.oldest(), runs.first().map(|r| r.0));
                prop_assert_eq!((log.oldest, log.newest), (runs.first().map_or(0, |r| r.0), runs.last().map_or(0, |r| r.0)));
            }
        }
    }
}
