//! `DirectLimiter` decides exactly as a keyed `Limiter` on the memory store decides for one key,
//! is exact under contention, and refuses bad input with coded errors.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use proptest::prelude::{Just, ProptestConfig, prop_assert_eq, prop_oneof, proptest};
use proptest::strategy::Strategy as _;
use throttlekit::{DirectLimiter, ErrorCode, Limiter, ManualClock, Strategy};

/// One step of a sequence: move the clock by `dt` ms (backwards too), then check, peek or reset.
#[derive(Clone, Debug)]
enum Op {
    Check { dt: i64, cost: u64 },
    Peek { dt: i64 },
    Reset,
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    // Clock moves mostly small and forward, sometimes far ahead or backwards, so TATs in the
    // past, TTL expiry in the store and a clock that goes back are all exercised.
    let dt = prop_oneof![6 => 0i64..40, 2 => 40i64..3_000, 1 => -500i64..0];
    prop_oneof![
        8 => (dt.clone(), 1u64..6).prop_map(|(dt, cost)| Op::Check { dt, cost }),
        2 => dt.prop_map(|dt| Op::Peek { dt }),
        1 => Just(Op::Reset),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn decides_as_a_keyed_limiter_on_the_memory_store(
        limit in 1u64..50,
        period_ms in 1u64..5_000,
        burst in proptest::option::of(1u64..60),
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let strategy = Strategy::gcra(limit, period_ms, burst).unwrap();
        let clock = ManualClock::new(1_700_000_000_000);
        let keyed = Limiter::builder(strategy.clone()).clock(Arc::new(clock.clone())).build();
        let direct = DirectLimiter::with_clock(strategy, Arc::new(clock.clone())).unwrap();
        let mut now = 1_700_000_000_000i64;
        for op in ops {
            match op {
                Op::Check { dt, cost } => {
                    now += dt;
                    clock.set(now);
                    prop_assert_eq!(direct.check(cost).unwrap(), keyed.check_sync("k", cost).unwrap());
                }
                Op::Peek { dt } => {
                    now += dt;
                    clock.set(now);
                    prop_assert_eq!(direct.peek().unwrap(), keyed.peek_sync("k").unwrap());
                }
                Op::Reset => {
                    direct.reset();
                    keyed.reset_sync("k").unwrap();
                }
            }
        }
    }
}

#[test]
fn admits_exactly_the_burst_from_many_threads_at_one_instant() {
    // A limit that refills 1 request a day: at one instant exactly `burst` are admitted, however
    // the threads' compare-and-swaps interleave.
    let burst = 1_000u64;
    let clock = ManualClock::new(1_700_000_000_000);
    let limiter = Arc::new(
        DirectLimiter::with_clock(Strategy::gcra(1, 86_400_000, Some(burst)).unwrap(), Arc::new(clock)).unwrap(),
    );
    let admitted = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (limiter, admitted) = (limiter.clone(), admitted.clone());
            std::thread::spawn(move || {
                for _ in 0..500 {
                    if limiter.check(1).unwrap().allowed {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(admitted.load(Ordering::Relaxed), burst);
    assert_eq!(limiter.peek().unwrap().remaining, 0);
}

#[test]
fn refuses_other_strategies_and_bad_arguments_with_codes() {
    let e = DirectLimiter::new(Strategy::fixed_window(10, 1000).unwrap()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConfigInvalid);
    let l = DirectLimiter::new(Strategy::gcra(10, 1000, None).unwrap()).unwrap();
    assert_eq!(l.check(0).unwrap_err().code(), ErrorCode::ConfigInvalid);
    assert_eq!(l.check(u64::MAX).unwrap_err().code(), ErrorCode::ConfigInvalid);
    assert_eq!(l.check_at(1, i64::MIN).unwrap_err().code(), ErrorCode::ConfigInvalid);
    assert_eq!(l.peek_at(i64::MAX).unwrap_err().code(), ErrorCode::ConfigInvalid);
    // Refused calls consumed nothing.
    assert_eq!(l.peek().unwrap().remaining, 10);
    assert_eq!(l.limit(), 10);
}
