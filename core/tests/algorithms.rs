//! The seeds' "What proves it" lists, as specs, on the memory store and a manual clock.

use std::sync::Arc;

use throttlekit::spec::{QuotaOptions, ResetCadence};
use throttlekit::{Decision, Limiter, ManualClock, Strategy};

fn limiter(strategy: Strategy, start: i64) -> (Limiter, ManualClock) {
    let clock = ManualClock::new(start);
    (Limiter::builder(strategy).clock(Arc::new(clock.clone())).build(), clock)
}

fn admitted(l: &Limiter, n: usize) -> usize {
    (0..n).filter(|_| l.check_sync("k", 1).unwrap().allowed).count()
}

mod gcra {
    use super::*;

    #[test]
    fn admits_exactly_burst_then_denies() {
        let (l, _) = limiter(Strategy::gcra(10, 1000, Some(5)).unwrap(), 1_000);
        assert_eq!(admitted(&l, 5), 5);
        let d = l.check_sync("k", 1).unwrap();
        assert!(!d.allowed);
        assert_eq!((d.limit, d.remaining, d.retry_after_ms), (5, 0, 100));
    }

    #[test]
    fn paces_at_one_per_emission_interval() {
        let (l, clock) = limiter(Strategy::gcra(10, 1000, Some(1)).unwrap(), 0);
        let mut allowed = 0;
        for _ in 0..10_000 {
            clock.advance(1).unwrap();
            allowed += admitted(&l, 1);
        }
        // 10 s at 10/s; the burst of 1 may add one.
        assert!((100..=101).contains(&allowed), "{allowed}");
    }

    #[test]
    fn a_backward_jump_denies_then_recovers_and_never_over_admits() {
        let (l, clock) = limiter(Strategy::gcra(1, 1000, Some(1)).unwrap(), 10_000);
        assert!(l.check_sync("k", 1).unwrap().allowed);
        clock.set(5_000);
        let d = l.check_sync("k", 1).unwrap();
        assert!(!d.allowed, "a backward jump must not open a new slot");
        assert_eq!(d.retry_after_ms, 6_000, "retry is measured from the earlier now");
        clock.set(11_000);
        assert!(l.check_sync("k", 1).unwrap().allowed);
        assert!(!l.check_sync("k", 1).unwrap().allowed);
    }

    #[test]
    fn allows_on_equality_with_allow_at() {
        let (l, clock) = limiter(Strategy::gcra(10, 1000, Some(1)).unwrap(), 0);
        assert!(l.check_sync("k", 1).unwrap().allowed);
        clock.set(99);
        assert!(!l.check_sync("k", 1).unwrap().allowed);
        clock.set(100);
        assert!(l.check_sync("k", 1).unwrap().allowed);
    }

    #[test]
    fn a_cost_above_burst_is_denied_forever_with_a_finite_retry() {
        let (l, clock) = limiter(Strategy::gcra(10, 1000, Some(3)).unwrap(), 0);
        for t in [0, 1_000, 1_000_000] {
            clock.set(t);
            let d = l.check_sync("k", 4).unwrap();
            assert!(!d.allowed);
            assert_eq!(d.retry_after_ms, 100);
            assert_eq!(d.remaining, 3);
        }
    }

    #[test]
    fn reports_burst_as_the_limit() {
        let (l, _) = limiter(Strategy::gcra(100, 1000, Some(7)).unwrap(), 0);
        assert_eq!(l.check_sync("k", 1).unwrap().limit, 7);
    }
}

mod token_bucket {
    use super::*;

    #[test]
    fn starts_full_and_admits_a_full_burst() {
        let (l, _) = limiter(Strategy::token_bucket(10, 5.0).unwrap(), 0);
        assert_eq!(admitted(&l, 20), 10);
    }

    #[test]
    fn refills_lazily_at_the_rate() {
        let (l, clock) = limiter(Strategy::token_bucket(10, 5.0).unwrap(), 0);
        admitted(&l, 10);
        clock.advance(200).unwrap();
        assert_eq!(admitted(&l, 5), 1);
        clock.advance(1000).unwrap();
        assert_eq!(admitted(&l, 10), 5);
    }

    #[test]
    fn an_idle_bucket_clamps_at_capacity() {
        let (l, clock) = limiter(Strategy::token_bucket(3, 1.0).unwrap(), 0);
        admitted(&l, 1);
        clock.advance(3_600_000).unwrap();
        assert_eq!(admitted(&l, 10), 3);
    }

    #[test]
    fn a_backward_jump_does_not_refill() {
        let (l, clock) = limiter(Strategy::token_bucket(2, 1.0).unwrap(), 10_000);
        admitted(&l, 2);
        clock.set(0);
        assert_eq!(admitted(&l, 3), 0);
        clock.set(10_999);
        assert_eq!(admitted(&l, 1), 0);
        clock.set(11_000);
        assert_eq!(admitted(&l, 2), 1);
    }

    #[test]
    fn reports_whole_tokens_and_capacity() {
        let (l, clock) = limiter(Strategy::token_bucket(7, 3.0).unwrap(), 0);
        let d = l.check_sync("k", 7).unwrap();
        assert_eq!((d.limit, d.remaining), (7, 0));
        clock.advance(500).unwrap(); // 1.5 tokens
        let d = l.check_sync("k", 2).unwrap();
        assert!(!d.allowed);
        assert_eq!(d.remaining, 1);
        assert_eq!(d.retry_after_ms, 167); // ceil(0.5 / 0.003)
    }
}

mod fixed_window {
    use super::*;

    #[test]
    fn admits_exactly_limit_per_window() {
        let (l, clock) = limiter(Strategy::fixed_window(5, 1000).unwrap(), 0);
        for w in 0..5 {
            clock.set(w * 1000 + 10);
            assert_eq!(admitted(&l, 8), 5);
        }
    }

    #[test]
    fn windows_are_epoch_aligned() {
        let (l, _) = limiter(Strategy::fixed_window(5, 1000).unwrap(), 12_345);
        let d = l.check_sync("k", 1).unwrap();
        assert_eq!(d.reset_at, 13_000);
    }

    #[test]
    fn allows_two_limits_across_one_boundary() {
        let (l, clock) = limiter(Strategy::fixed_window(5, 1000).unwrap(), 999);
        let mut n = admitted(&l, 10);
        clock.set(1000);
        n += admitted(&l, 10);
        assert_eq!(n, 10, "the documented 2 x limit burst across a boundary");
    }
}

mod sliding_window {
    use super::*;

    #[test]
    fn does_not_double_across_a_boundary() {
        let (l, clock) = limiter(Strategy::sliding_window(10, 1000, Some(10)).unwrap(), 999);
        let mut n = admitted(&l, 20);
        clock.set(1000);
        n += admitted(&l, 20);
        assert_eq!(n, 10, "a full window of hits still counts right after the boundary");
    }

    #[test]
    fn the_oldest_bucket_decays_smoothly() {
        // One bucket (the classic two-counter estimator): 10 hits at t=0; after one window the
        // old count weighs (w - elapsed) / w, so capacity comes back gradually.
        let (l, clock) = limiter(Strategy::sliding_window(10, 1000, Some(1)).unwrap(), 0);
        admitted(&l, 10);
        let mut last = 0;
        for t in [1000, 1250, 1500, 1750, 2000] {
            clock.set(t);
            let free = l.peek_sync("k").unwrap().remaining;
            assert!(free >= last, "capacity must not shrink as the old bucket ages: {free} < {last} at {t}");
            last = free;
        }
        assert_eq!(last, 10);
    }

    #[test]
    fn is_within_one_bucket_of_the_exact_count() {
        // Steady arrivals: the estimate may over-count by at most one bucket's worth.
        let (l, clock) = limiter(Strategy::sliding_window(100, 1000, Some(10)).unwrap(), 0);
        let mut admitted_at = Vec::new();
        for t in 0..5000 {
            clock.set(t);
            if l.check_sync("k", 1).unwrap().allowed {
                admitted_at.push(t);
            }
            let exact = admitted_at.iter().filter(|&&a| a > t - 1000).count();
            assert!(exact <= 100 + 10, "at {t}: {exact} in the last second");
        }
    }
}

mod sliding_window_log {
    use super::*;

    #[test]
    fn counts_exactly_and_retries_exactly() {
        let (l, clock) = limiter(Strategy::sliding_window_log(3, 1000).unwrap(), 0);
        for t in [0, 100, 200] {
            clock.set(t);
            assert!(l.check_sync("k", 1).unwrap().allowed);
        }
        clock.set(300);
        let d = l.check_sync("k", 1).unwrap();
        assert!(!d.allowed);
        assert_eq!(d.retry_after_ms, 700, "until the oldest hit (0) exits at 1000");
        clock.set(999);
        assert!(!l.check_sync("k", 1).unwrap().allowed);
        clock.set(1000);
        assert!(l.check_sync("k", 1).unwrap().allowed, "a slot frees precisely as the oldest hit exits");
        assert!(!l.check_sync("k", 1).unwrap().allowed);
    }

    #[test]
    fn keeps_every_unit_admitted_in_the_same_millisecond() {
        let (l, clock) = limiter(Strategy::sliding_window_log(5, 1000).unwrap(), 0);
        assert!(l.check_sync("k", 2).unwrap().allowed);
        assert!(l.check_sync("k", 2).unwrap().allowed);
        clock.set(500);
        let d = l.check_sync("k", 2).unwrap();
        assert!(!d.allowed);
        assert_eq!(d.remaining, 1);
    }
}

mod quota {
    use super::*;

    fn q(cadence: ResetCadence) -> QuotaOptions {
        QuotaOptions {
            limit: 3.0,
            reset_cadence: cadence,
            period_ms: None,
            anchor: None,
            offset_minutes: None,
            week_starts_on: None,
            buckets: None,
        }
    }

    #[test]
    fn a_calendar_day_budget_resets_at_midnight() {
        let (l, clock) = limiter(Strategy::quota(q(ResetCadence::CalendarDay)).unwrap(), 86_400_000 * 100 + 5);
        assert_eq!(admitted(&l, 5), 3);
        let d = l.check_sync("k", 1).unwrap();
        assert_eq!(d.reset_at, 86_400_000 * 101);
        clock.set(86_400_000 * 101);
        assert_eq!(admitted(&l, 5), 3);
    }

    #[test]
    fn rolling_equals_the_sliding_window() {
        let rolling =
            Strategy::quota(QuotaOptions { period_ms: Some(1000.0), buckets: Some(4.0), ..q(ResetCadence::Rolling) })
                .unwrap();
        let sliding = Strategy::sliding_window(3, 1000, Some(4)).unwrap();
        let (a, ca) = limiter(rolling, 0);
        let (b, cb) = limiter(sliding, 0);
        for t in (0..5000).step_by(37) {
            ca.set(t);
            cb.set(t);
            assert_eq!(a.check_sync("k", 1).unwrap(), b.check_sync("k", 1).unwrap(), "at {t}");
        }
    }

    #[test]
    fn periods_that_do_not_match_their_cadence_are_refused() {
        let e = Strategy::quota(q(ResetCadence::Fixed)).unwrap_err();
        assert!(e.message().contains("quota.periodMs"), "{e}");
        let e = Strategy::quota(QuotaOptions { period_ms: Some(5.0), ..q(ResetCadence::CalendarDay) }).unwrap_err();
        assert!(e.message().contains("quota.periodMs"), "{e}");
    }
}

#[test]
fn a_denied_request_never_consumes() {
    let strategies = [
        Strategy::gcra(5, 1000, None).unwrap(),
        Strategy::token_bucket(5, 5.0).unwrap(),
        Strategy::fixed_window(5, 1000).unwrap(),
        Strategy::sliding_window(5, 1000, None).unwrap(),
        Strategy::sliding_window_log(5, 1000).unwrap(),
    ];
    for s in strategies {
        let kind = s.kind();
        let (l, _) = limiter(s, 1_000_000);
        admitted(&l, 5);
        let first: Decision = l.check_sync("k", 1).unwrap();
        assert!(!first.allowed, "{kind}");
        for _ in 0..100 {
            assert_eq!(l.check_sync("k", 1).unwrap(), first, "{kind}: a deny changed the state");
        }
    }
}
