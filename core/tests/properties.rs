//! Property tests: exactness of retry hints, admission bounds, non-consumption, and no panic
//! on any input. Failing cases are persisted under `proptest-regressions/` and committed.

use std::sync::Arc;

use proptest::prelude::*;
use throttlekit::spec::{
    GcraOptions, QuotaOptions, ResetCadence, SlidingWindowOptions, TokenBucketOptions, WindowOptions,
};
use throttlekit::{ErrorCode, LeakyBucketOptions, Limiter, ManualClock, Shaper, StrategySpec};

fn limiter(s: throttlekit::Strategy, clock: &ManualClock) -> Limiter {
    Limiter::builder(s).clock(Arc::new(clock.clone())).build()
}

/// Every valid strategy kind, with small parameters so limits are actually reached.
fn any_strategy() -> impl Strategy<Value = throttlekit::Strategy> {
    prop_oneof![
        (1u64..20, 1u64..5000, 1u64..10).prop_map(|(l, p, b)| throttlekit::Strategy::gcra(l, p, Some(b)).unwrap()),
        (1u64..10, 1u64..50).prop_map(|(c, r)| throttlekit::Strategy::token_bucket(c, r as f64 / 3.0).unwrap()),
        (1u64..10, 1u64..3000).prop_map(|(l, w)| throttlekit::Strategy::fixed_window(l, w).unwrap()),
        (1u64..10, 1u64..3000, 1u64..12)
            .prop_map(|(l, w, b)| throttlekit::Strategy::sliding_window(l, w, Some(b)).unwrap()),
        (1u64..10, 1u64..3000).prop_map(|(l, w)| throttlekit::Strategy::sliding_window_log(l, w).unwrap()),
        (1u64..10, 0usize..3, -840i64..=840, 0u64..7).prop_map(|(l, c, off, wk)| {
            let cadence = [ResetCadence::CalendarDay, ResetCadence::CalendarWeek, ResetCadence::CalendarMonth][c];
            throttlekit::Strategy::quota(QuotaOptions {
                limit: l as f64,
                reset_cadence: cadence,
                period_ms: None,
                anchor: None,
                offset_minutes: Some(off as f64),
                week_starts_on: Some(wk as f64),
                buckets: None,
            })
            .unwrap()
        }),
    ]
}

/// A timeline step: a time delta (mostly forward, sometimes backward) and a cost.
fn steps() -> impl Strategy<Value = Vec<(i64, u64)>> {
    prop::collection::vec((prop_oneof![4 => 0i64..300, 1 => -500i64..0, 1 => 0i64..100_000], 1u64..12), 1..80)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn decisions_are_well_formed_on_any_timeline(s in any_strategy(), start in -10_000_000_000_000i64..10_000_000_000_000, steps in steps()) {
        let clock = ManualClock::new(start);
        let l = limiter(s, &clock);
        for (dt, cost) in steps {
            clock.set(clock_now(&clock) + dt);
            let d = l.check_sync("k", cost).unwrap();
            prop_assert!(d.remaining >= 0);
            prop_assert!(d.limit >= 1);
            if d.allowed {
                prop_assert_eq!(d.retry_after_ms, 0);
            } else {
                prop_assert!(d.retry_after_ms >= 1, "{:?}", d);
            }
        }
    }

    #[test]
    fn forecast_equals_the_check_that_follows_and_peek_consumes_nothing(s in any_strategy(), steps in steps()) {
        let clock = ManualClock::new(1_700_000_000_000);
        let l = limiter(s, &clock);
        for (dt, cost) in steps {
            clock.set(clock_now(&clock) + dt);
            let p1 = l.peek_sync("k").unwrap();
            let f = l.forecast_sync("k", cost).unwrap();
            let p2 = l.peek_sync("k").unwrap();
            prop_assert_eq!(p1, p2, "forecast consumed");
            prop_assert_eq!(l.check_sync("k", cost).unwrap(), f);
        }
    }

    #[test]
    fn a_deny_changes_nothing(s in any_strategy(), steps in steps()) {
        let clock = ManualClock::new(1_700_000_000_000);
        let l = limiter(s, &clock);
        for (dt, cost) in steps {
            clock.set(clock_now(&clock) + dt);
            let d = l.check_sync("k", cost).unwrap();
            if !d.allowed {
                prop_assert_eq!(l.check_sync("k", cost).unwrap(), d);
            }
        }
    }

    /// GCRA's hint is exact: allowed at `now + retry`, denied 1 ms before. The token bucket's
    /// float arithmetic is fixed by docs/semantics.md (as ThrottleKit 1.5.2 computes it: the hint is
    /// `ceil((cost - tokens) / refillPerMs)`, while a later check refills `elapsed * refillPerMs`
    /// from the last *allowed* op), so the two can disagree by a rounding error either way:
    /// capacity 5, 1/s, cost 3 after 17 ms hints 984 where 983 would do; capacity 7, 2/s, cost 2
    /// hints 705 and at +705 finds 1.9999999999999998 tokens. For the bucket the property is
    /// "within 1 ms of the hint". Both cases are pinned in `properties.proptest-regressions`.
    #[test]
    fn retry_hints_are_exact_for_gcra_and_within_a_millisecond_for_the_bucket(
        limit in 1u64..50, period in 1u64..10_000, burst in 1u64..10, cost_seed in 0u64..1000,
        gaps in prop::collection::vec(0i64..500, 1..40), bucket in any::<bool>(),
    ) {
        let s = if bucket {
            throttlekit::Strategy::token_bucket(burst, limit as f64).unwrap()
        } else {
            throttlekit::Strategy::gcra(limit, period, Some(burst)).unwrap()
        };
        let cost = 1 + cost_seed % burst;
        let slack = if bucket { 1 } else { 0 };
        let clock = ManualClock::new(1_000_000);
        let l = limiter(s, &clock);
        for gap in gaps {
            clock.advance(gap).unwrap();
            let d = l.check_sync("k", cost).unwrap();
            if d.allowed {
                continue;
            }
            let now = clock_now(&clock);
            if d.retry_after_ms > 1 + slack {
                prop_assert!(!l.forecast_sync_at("k", cost, now + d.retry_after_ms - 1 - slack).unwrap().allowed,
                    "allowed {} ms before the retry hint {:?}", 1 + slack, d);
            }
            prop_assert!(l.forecast_sync_at("k", cost, now + d.retry_after_ms + slack).unwrap().allowed,
                "denied {} ms after the retry hint {:?}", slack, d);
        }
    }

    #[test]
    fn windows_and_logs_are_allowed_at_now_plus_retry(
        limit in 1u64..10, window in 1u64..3000, cost in 1u64..4, kind in 0usize..2,
        gaps in prop::collection::vec(0i64..400, 1..40),
    ) {
        prop_assume!(cost <= limit);
        let s = if kind == 0 {
            throttlekit::Strategy::fixed_window(limit, window).unwrap()
        } else {
            throttlekit::Strategy::sliding_window_log(limit, window).unwrap()
        };
        let clock = ManualClock::new(5_000_000);
        let l = limiter(s, &clock);
        for gap in gaps {
            clock.advance(gap).unwrap();
            let d = l.check_sync("k", cost).unwrap();
            if !d.allowed {
                let at = clock_now(&clock) + d.retry_after_ms;
                prop_assert!(l.forecast_sync_at("k", cost, at).unwrap().allowed, "{:?}", d);
            }
        }
    }

    #[test]
    fn gcra_never_admits_more_than_burst_plus_rate_times_elapsed(
        limit in 1u64..100, period in 1u64..5000, burst in 1u64..20,
        gaps in prop::collection::vec(0i64..200, 1..200),
    ) {
        let clock = ManualClock::new(0);
        let l = limiter(throttlekit::Strategy::gcra(limit, period, Some(burst)).unwrap(), &clock);
        let t = period as f64 / limit as f64;
        let mut admitted = 0u64;
        for gap in gaps {
            clock.advance(gap).unwrap();
            if l.check_sync("k", 1).unwrap().allowed {
                admitted += 1;
            }
            let bound = burst as f64 + clock_now(&clock) as f64 / t;
            prop_assert!(admitted as f64 <= bound + 1e-9, "{} admitted > {}", admitted, bound);
        }
    }

    #[test]
    fn token_bucket_never_admits_more_than_capacity_plus_refill(
        capacity in 1u64..20, rate in 1u64..100, gaps in prop::collection::vec(0i64..200, 1..200),
    ) {
        let clock = ManualClock::new(0);
        let l = limiter(throttlekit::Strategy::token_bucket(capacity, rate as f64).unwrap(), &clock);
        let mut admitted = 0u64;
        for gap in gaps {
            clock.advance(gap).unwrap();
            if l.check_sync("k", 1).unwrap().allowed {
                admitted += 1;
            }
            let bound = capacity as f64 + clock_now(&clock) as f64 * rate as f64 / 1000.0;
            prop_assert!(admitted as f64 <= bound + 1e-9);
        }
    }

    #[test]
    fn any_numbers_in_a_spec_build_or_fail_with_config_invalid(
        a in any::<f64>(), b in any::<f64>(), c in any::<f64>(), kind in 0usize..7,
    ) {
        let spec = match kind {
            0 => StrategySpec::Gcra(GcraOptions { limit: a, period_ms: b, burst: Some(c) }),
            1 => StrategySpec::TokenBucket(TokenBucketOptions { capacity: a, refill_per_sec: b }),
            2 => StrategySpec::FixedWindow(WindowOptions { limit: a, window_ms: b }),
            3 => StrategySpec::SlidingWindow(SlidingWindowOptions { limit: a, window_ms: b, buckets: Some(c) }),
            4 => StrategySpec::SlidingWindowLog(WindowOptions { limit: a, window_ms: b }),
            5 => StrategySpec::Quota(QuotaOptions {
                limit: a, reset_cadence: ResetCadence::Fixed, period_ms: Some(b), anchor: Some(c),
                offset_minutes: None, week_starts_on: None, buckets: None,
            }),
            _ => {
                let r = Shaper::new(&LeakyBucketOptions { rate_per_sec: a, max_queue_ms: b });
                if let Err(e) = r { prop_assert_eq!(e.code(), ErrorCode::ConfigInvalid); }
                return Ok(());
            }
        };
        match spec.build() {
            Ok(s) => {
                // A strategy that validated must decide without panicking, even at extreme times.
                let clock = ManualClock::new(0);
                let l = limiter(s, &clock);
                for now in [i64::MIN / 4, -1, 0, 1, 9_007_199_254_740_992] {
                    clock.set(now);
                    let _ = l.check_sync("k", 1).unwrap();
                }
            }
            Err(e) => prop_assert_eq!(e.code(), ErrorCode::ConfigInvalid),
        }
    }

    #[test]
    fn arbitrary_json_specs_never_panic(text in ".{0,80}") {
        if let Err(e) = throttlekit::Strategy::from_json(&text) {
            prop_assert_eq!(e.code(), ErrorCode::ConfigInvalid);
        }
    }
}

fn clock_now(c: &ManualClock) -> i64 {
    use throttlekit::Clock;
    c.now_ms()
}
