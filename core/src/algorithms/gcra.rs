//! GCRA, the generic cell rate algorithm: one float per key, smooth pacing, a burst allowance.
//!
//! The order of floating-point operations follows docs/semantics.md exactly (and
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
    /// The same arithmetic in integers, when the emission interval is a whole number of ms
    /// (see [`IntGcra`]).
    int: Option<IntGcra>,
}

/// Values below this are exact in an `f64` (2^53).
const EXACT: i64 = 1 << 53;

/// [`Gcra::check_tat`] in integer arithmetic, for a configuration whose emission interval `t`
/// and burst tolerance `tau` are whole numbers of ms below 2^53 (`period_ms` a multiple of
/// `limit`: 3600 an hour, 10 a second, 100 a minute...).
///
/// Why: the float path's last steps, `floor((tau - (new_tat - now)) / t)` and the float-to-integer
/// conversions of the decision's fields, are one dependency chain of about 30 cycles (a
/// division, then a conversion) that every check waits for before its stores retire; over 100k
/// keys, with a cache miss a check, that chain delayed the next check's prefetch (measured: the
/// check without its `remaining` ran 10% faster, docs/performance.md). In integers the same
/// values are a compare, two additions and a multiply by a precomputed reciprocal.
///
/// Exactly the float path's decisions: when `now`, the stored TAT and every intermediate value
/// are integers in `[0, 2^53)` (checked per call; anything else takes the float path), every
/// float operation of [`Gcra::check_tat`] is exact, and `floor(fl(x / t)) == floor(x / t)` for
/// integers `0 < x < 2^53`, `t >= 1` (`x / t` is at least `1 / t` below the next integer, more
/// than half an ulp of a quotient below 2^53 / t). The proptest
/// `integer_path_equals_float_path` checks it against the float path.
#[derive(Clone, Debug, PartialEq)]
struct IntGcra {
    t: i64,
    tau: i64,
    /// Largest cost whose increment `t * cost` stays below 2^53.
    max_cost: u64,
    div: Reciprocal,
}

impl IntGcra {
    fn new(t: f64, tau: f64) -> Option<IntGcra> {
        let whole = |v: f64| (v >= 1.0 && v < EXACT as f64 && v.fract() == 0.0).then_some(v as i64);
        let (t, tau) = (whole(t)?, whole(tau)?);
        // `t = 1` (1000 a second) stays on the float path: its reciprocal needs 65 bits.
        if t == 1 {
            return None;
        }
        Some(IntGcra { t, tau, max_cost: ((EXACT - 1) / t) as u64, div: Reciprocal::new(t as u64) })
    }

    /// `floor(x / t).max(0)` for `x < 2^53`.
    #[inline(always)]
    fn remaining(&self, x: i64) -> i64 {
        if x > 0 { self.div.divide(x as u64) as i64 } else { 0 }
    }

    /// [`Gcra::check_tat`], or `None` when a value is outside the range where the two agree.
    #[inline(always)]
    fn check_tat(&self, limit: i64, stored: Option<f64>, now: i64, cost: u64) -> Option<(Decision, Option<Write>)> {
        if !(0..EXACT).contains(&now) || cost > self.max_cost {
            return None;
        }
        let tat = match stored {
            None => now,
            Some(s) => {
                // Not a whole number in [0, 2^53) (NaN and the infinities included): the float
                // path.
                if !(0.0..EXACT as f64).contains(&s) {
                    return None;
                }
                // SAFETY: `s` is finite and in [0, 2^53), so its integer part fits an i64.
                let whole = unsafe { s.to_int_unchecked::<i64>() };
                if whole as f64 != s {
                    return None;
                }
                whole.max(now)
            }
        };
        // `t * cost < 2^53` and `tat < 2^53`: no overflow.
        let new_tat = tat + self.t * cost as i64;
        if new_tat >= EXACT {
            return None;
        }
        let allow_at = new_tat - self.tau;
        if now < allow_at {
            let reply = Decision {
                allowed: false,
                limit,
                remaining: self.remaining(self.tau - (tat - now)),
                reset_at: tat,
                retry_after_ms: allow_at - now,
                fallback: false,
            };
            return Some((reply, None));
        }
        let reply = Decision {
            allowed: true,
            limit,
            remaining: self.remaining(self.tau - (new_tat - now)),
            reset_at: new_tat,
            retry_after_ms: 0,
            fallback: false,
        };
        Some((reply, Some(Write { tat: new_tat as f64, ttl_ms: (new_tat - now).max(1) })))
    }
}

/// Division of numerators below 2^53 by a fixed divisor `d >= 2`, as a multiply and a shift
/// (Granlund and Montgomery, "Division by invariant integers using multiplication", 1994,
/// theorem 4.2: for `N`-bit numerators, with `l = ceil(log2 d)` and
/// `m = floor(2^(N + l) / d) + 1`, `2^(N+l) < m * d <= 2^(N+l) + 2^l`, so
/// `floor(n / d) == floor(m * n / 2^(N + l))` for every `n < 2^N`).
///
/// `N + l` is 64 when `l <= 11` (`N = 64 - l >= 53`) and `53 + l` above, so the quotient is
/// the high word of one 64x64-bit multiply shifted by `N + l - 64`; `m < 2^(N+1)` fits 64 bits
/// because `d > 2^(l-1)` and `l >= 1`.
#[derive(Clone, Debug, PartialEq)]
struct Reciprocal {
    m: u64,
    /// `N + l - 64`.
    shift: u32,
}

impl Reciprocal {
    /// For `2 <= d < 2^53`.
    fn new(d: u64) -> Reciprocal {
        debug_assert!((2..1 << 53).contains(&d));
        let l = 64 - (d - 1).leading_zeros();
        let shift = l.saturating_sub(11);
        Reciprocal { m: ((1u128 << (64 + shift)) / d as u128 + 1) as u64, shift }
    }

    /// `n / d`, for `n < 2^53`.
    #[inline(always)]
    fn divide(&self, n: u64) -> u64 {
        (((n as u128 * self.m as u128) >> 64) as u64) >> self.shift
    }
}

impl Gcra {
    /// Validates `options`: `limit` an integer >= 1, `periodMs` > 0, `burst` an integer >= 1.
    pub fn new(options: &GcraOptions) -> Result<Gcra> {
        let limit = validate::integer_at_least("gcra.limit", options.limit, 1.0)?;
        let period_ms = validate::positive("gcra.periodMs", options.period_ms)?;
        let burst = validate::integer_at_least("gcra.burst", options.burst.unwrap_or(limit), 1.0)?;
        let t = period_ms / limit;
        let tau = t * burst;
        Ok(Gcra { limit, period_ms, burst, t, tau, reported_limit: burst as i64, int: IntGcra::new(t, tau) })
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
    ///
    /// In integers when the configuration and the values allow it ([`IntGcra`]), with the
    /// same results.
    #[inline(always)]
    pub(crate) fn check_tat(&self, stored: Option<f64>, now: i64, cost: u64) -> (Decision, Option<Write>) {
        if let Some(int) = &self.int
            && let Some(result) = int.check_tat(self.limit(), stored, now, cost)
        {
            return result;
        }
        self.check_tat_float(stored, now, cost)
    }

    /// [`Gcra::check_tat`] in floats, the order of operations of docs/semantics.md.
    #[inline(always)]
    pub(crate) fn check_tat_float(&self, stored: Option<f64>, now: i64, cost: u64) -> (Decision, Option<Write>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;

    fn gcra(limit: u64, period_ms: f64, burst: u64) -> Gcra {
        Gcra::new(&GcraOptions { limit: limit as f64, period_ms, burst: Some(burst as f64) }).unwrap()
    }

    /// The two paths' results, compared bit for bit (the written TAT by its bits).
    fn same(g: &Gcra, stored: Option<f64>, now: i64, cost: u64) -> std::result::Result<(), TestCaseError> {
        let (d_int, w_int) = g.check_tat(stored, now, cost);
        let (d_float, w_float) = g.check_tat_float(stored, now, cost);
        prop_assert_eq!(d_int, d_float, "stored {:?} now {} cost {} {:?}", stored, now, cost, g);
        let bits = |w: Option<Write>| w.map(|w| (w.tat.to_bits(), w.ttl_ms));
        prop_assert_eq!(bits(w_int), bits(w_float), "stored {:?} now {} cost {} {:?}", stored, now, cost, g);
        Ok(())
    }

    /// A stored TAT around `now`: absent, whole, fractional, or one of the awkward values.
    fn stored_near(now: i64) -> impl Strategy<Value = Option<f64>> {
        prop_oneof![
            Just(None),
            (-5_000_000i64..5_000_000).prop_map(move |d| Some((now + d) as f64)),
            (-5_000_000i64..5_000_000, 0.0f64..1.0).prop_map(move |(d, f)| Some((now + d) as f64 + f)),
            prop::sample::select(vec![
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                -0.0,
                -1.0,
                (EXACT - 1) as f64,
                EXACT as f64,
                EXACT as f64 * 2.0,
                1e300,
            ])
            .prop_map(Some),
        ]
    }

    #[test]
    fn whole_intervals_take_the_integer_path_and_fractional_ones_do_not() {
        assert!(gcra(3600, 3_600_000.0, 1_000_000_000).int.is_some());
        assert!(gcra(10, 1000.0, 10).int.is_some());
        assert!(gcra(3, 1000.0, 3).int.is_none(), "t = 333.33...");
        assert!(gcra(1000, 1.0, 1).int.is_none(), "t = 0.001");
        assert!(gcra(1, 1.5, 1).int.is_none(), "t = 1.5");
        assert!(gcra(1000, 1000.0, 1000).int.is_none(), "t = 1: the float path");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn integer_path_equals_float_path(
            limit in prop_oneof![1u64..20, 1u64..1_000_000_000],
            period_ms in prop_oneof![
                (1u64..4_000_000).prop_map(|p| p as f64),
                Just(1000.0), Just(60_000.0), Just(3_600_000.0), Just(86_400_000.0),
                (1u64..1000, 1u64..1000).prop_map(|(a, b)| a as f64 / b as f64),
            ],
            burst in prop_oneof![1u64..50, 1u64..2_000_000_000, Just((1u64 << 53) - 1)],
            now in prop_oneof![0i64..10_000_000, 1_700_000_000_000i64..1_800_000_000_000, (EXACT - 10_000_000)..EXACT + 10, -10_000_000i64..0],
            cost in prop_oneof![1u64..5, 1u64..1_000_000, (1u64 << 53) - 10..(1u64 << 53) + 1],
            seed in any::<u64>(),
        ) {
            let g = gcra(limit, period_ms, burst);
            // `limit` a multiple of the period's ms half the time, so `t` is whole.
            let whole = gcra(limit, (limit * (1 + seed % 1000)) as f64, burst);
            for g in [&g, &whole] {
                let mut runner = proptest::test_runner::TestRunner::deterministic();
                for _ in 0..4 {
                    let stored = stored_near(now).new_tree(&mut runner).unwrap().current();
                    same(g, stored, now, cost)?;
                }
                // A key's life: each check stores the TAT the previous wrote.
                let mut tat = None;
                for step in 0..6 {
                    let at = now + (step * (seed as i64 % 5000)).min(1 << 20);
                    same(g, tat, at, cost)?;
                    if let Some(w) = g.check_tat(tat, at, cost).1 {
                        tat = Some(w.tat);
                    }
                }
            }
        }

        #[test]
        fn reciprocal_divides_exactly(d in prop_oneof![2u64..2000, 2u64..(1 << 53)], n in prop_oneof![0u64..1_000_000, 0u64..(1 << 53)]) {
            let r = Reciprocal::new(d);
            prop_assert_eq!(r.divide(n), n / d, "{} / {}", n, d);
            let top = (1u64 << 53) - 1;
            prop_assert_eq!(r.divide(top), top / d);
            // Next to each multiple of d, where a truncating reciprocal goes wrong first.
            let k = n / d.max(1);
            for m in [k * d, (k * d).saturating_sub(1), k * d + 1, (k + 1) * d - 1] {
                if m < 1 << 53 {
                    prop_assert_eq!(r.divide(m), m / d, "{} / {}", m, d);
                }
            }
        }
    }

    #[test]
    fn reciprocal_divides_exactly_for_small_and_power_of_two_divisors() {
        for d in (2u64..=4100)
            .chain((1..53).map(|e| 1u64 << e))
            .chain((2..54).map(|e| (1u64 << e) - 1))
            .chain((1..53).map(|e| (1u64 << e) + 1))
        {
            let r = Reciprocal::new(d);
            for n in (0..3000u64).chain(((1u64 << 53) - 3000)..(1u64 << 53)) {
                assert_eq!(r.divide(n), n / d, "{n} / {d}");
            }
        }
    }
}
