//! Whatever the inputs — any strategy, any cost (0, past 2^53, `u64::MAX`), any clock (backward
//! jumps, the ends of the representable range), any mix of operations — no call panics, bad
//! input is `config_invalid`, and every `Decision` keeps its invariants:
//! `0 <= remaining <= limit`, `retry_after_ms == 0` iff allowed (and never negative), and
//! `reset_at >= now` once state is persisted (after an allowed check).

use std::sync::Arc;

use proptest::prelude::*;
use throttlekit::multi::Dimension;
use throttlekit::{Decision, ErrorCode, Limiter, ManualClock, MemoryStore, MultiLimiter, Rule};

/// Any valid strategy, with parameters from tiny to huge.
fn any_strategy() -> impl Strategy<Value = throttlekit::Strategy> {
    let big = prop_oneof![3 => 1u64..20, 1 => 1u64..1_000_000_000, 1 => Just(9_007_199_254_740_992u64)];
    let small = || prop_oneof![3 => 1u64..20, 1 => 1u64..10_000];
    prop_oneof![
        (big.clone(), big.clone(), small()).prop_filter_map("valid", |(l, p, b)| throttlekit::Strategy::gcra(
            l,
            p,
            Some(b)
        )
        .ok()),
        (small(), 1u64..1000)
            .prop_filter_map("valid", |(c, r)| throttlekit::Strategy::token_bucket(c, r as f64 / 7.0).ok()),
        (big.clone(), big.clone()).prop_filter_map("valid", |(l, w)| throttlekit::Strategy::fixed_window(l, w).ok()),
        (small(), big.clone(), 1u64..12).prop_filter_map("valid", |(l, w, b)| throttlekit::Strategy::sliding_window(
            l,
            w,
            Some(b)
        )
        .ok()),
        (small(), big).prop_filter_map("valid", |(l, w)| throttlekit::Strategy::sliding_window_log(l, w).ok()),
    ]
}

/// Any cost, valid or not.
fn any_cost() -> impl Strategy<Value = u64> {
    prop_oneof![6 => 1u64..8, 1 => Just(0u64), 1 => 1u64..=9_007_199_254_740_992, 1 => Just(9_007_199_254_740_993u64), 1 => Just(u64::MAX)]
}

/// Any clock step: small forward, backward, huge jumps, or straight to an extreme.
fn any_time() -> impl Strategy<Value = i64> {
    prop_oneof![
        5 => 0i64..500,
        1 => -1000i64..0,
        1 => 0i64..100_000_000,
        1 => prop::sample::select(vec![i64::MIN, i64::MIN / 2, -9_007_199_254_740_992, 0, 9_007_199_254_740_992, i64::MAX / 2, i64::MAX]),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Check(u64),
    Peek,
    Forecast(u64),
    Reset,
}

fn any_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => any_cost().prop_map(Op::Check),
        1 => Just(Op::Peek),
        1 => any_cost().prop_map(Op::Forecast),
        1 => Just(Op::Reset),
    ]
}

fn well_formed(d: &Decision, now: i64, persisted: bool) -> Result<(), TestCaseError> {
    prop_assert!(d.limit >= 1, "{d:?}");
    prop_assert!(0 <= d.remaining && d.remaining <= d.limit, "remaining out of 0..=limit: {d:?}");
    prop_assert!(d.retry_after_ms >= 0, "{d:?}");
    prop_assert_eq!(d.allowed, d.retry_after_ms == 0, "retry 0 iff allowed: {:?}", d);
    if persisted {
        prop_assert!(d.reset_at >= now, "reset before now ({}) after an allowed check: {:?}", now, d);
    }
    Ok(())
}

const MAX_SAFE: u64 = 9_007_199_254_740_992;

/// Whether a sliding window's tick at `now` stays within 2^53 (docs/semantics.md, "Numbers"):
/// `|floor(now / w)| + buckets < 2^53`, `w = windowMs / buckets`. Other strategies: always.
fn tick_within(s: &throttlekit::Strategy, now: i64) -> bool {
    match s.spec() {
        throttlekit::StrategySpec::SlidingWindow(o) => {
            let b = o.buckets.unwrap_or(10.0);
            (now as f64 / (o.window_ms / b)).floor().abs() + b < MAX_SAFE as f64
        }
        _ => true,
    }
}

/// A result: a well-formed decision, or `config_invalid` for a cost out of `1..=2^53`, a time
/// out of ±2^53 or a sliding-window tick past 2^53 (and for nothing else).
fn judge(
    r: throttlekit::Result<Decision>,
    s: &throttlekit::Strategy,
    cost: Option<u64>,
    now: i64,
    persisted: bool,
) -> Result<(), TestCaseError> {
    let valid =
        cost.is_none_or(|c| (1..=MAX_SAFE).contains(&c)) && now.unsigned_abs() <= MAX_SAFE && tick_within(s, now);
    match r {
        Ok(d) => {
            prop_assert!(valid, "cost {:?} at {} accepted", cost, now);
            well_formed(&d, now, persisted && d.allowed)
        }
        Err(e) => {
            prop_assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{}", e);
            prop_assert!(!valid, "valid cost {:?} at {} refused: {}", cost, now, e);
            Ok(())
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_decision_keeps_its_invariants(
        s in any_strategy(), start in any_time(), ops in prop::collection::vec((any_time(), any_op()), 1..60),
    ) {
        let clock = ManualClock::new(start.clamp(-9_007_199_254_740_992, 9_007_199_254_740_992));
        let l = Limiter::builder(s.clone()).clock(Arc::new(clock.clone())).build();
        let mut now = start;
        for (dt, op) in ops {
            // Steps may leave the clock's range: the explicit-now calls take any i64.
            now = if dt.unsigned_abs() > 1 << 62 { dt } else { now.saturating_add(dt) };
            match op {
                Op::Check(c) => judge(l.check_sync_at("k", c, now), &s, Some(c), now, true)?,
                Op::Peek => judge(l.peek_sync_at("k", now), &s, None, now, false)?,
                Op::Forecast(c) => judge(l.forecast_sync_at("k", c, now), &s, Some(c), now, false)?,
                Op::Reset => l.reset_sync("k").unwrap(),
            }
        }
    }

    #[test]
    fn every_multi_decision_keeps_its_invariants(
        a in any_strategy(), b in any_strategy(), any in any::<bool>(), mult in 1u64..4,
        steps in prop::collection::vec((any_time(), any_cost()), 1..40),
    ) {
        let rule = if any { Rule::Any } else { Rule::All };
        let ticks = (a.clone(), b.clone());
        let m = MultiLimiter::new(rule, vec![Dimension::new("a", a), Dimension::new("b", b).cost_multiplier(mult)]).unwrap();
        let mut now = 1_700_000_000_000i64;
        for (dt, cost) in steps {
            now = if dt.unsigned_abs() > 1 << 62 { dt } else { now.saturating_add(dt) };
            // A dimension's cost is the request's times its multiplier, within 2^53 too.
            let valid = (1..=MAX_SAFE).contains(&cost) && cost.saturating_mul(mult) <= MAX_SAFE && now.unsigned_abs() <= MAX_SAFE
                && tick_within(&ticks.0, now) && tick_within(&ticks.1, now);
            match m.check_sync_at(&["x", "y"], cost, now) {
                Ok(md) => {
                    prop_assert!(valid, "cost {} at {} accepted", cost, now);
                    well_formed(&md.decision, now, false)?;
                    for d in &md.dimensions {
                        prop_assert!(0 <= d.remaining && d.remaining <= d.limit, "{:?}", d);
                        prop_assert!(d.retry_after_ms >= 0, "{:?}", d);
                    }
                }
                Err(e) => {
                    prop_assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{}", e);
                    prop_assert!(!valid, "valid cost {} at {} refused: {}", cost, now, e);
                }
            }
        }
    }

    #[test]
    fn a_tiny_bounded_store_keeps_every_invariant_while_it_evicts(
        s in any_strategy(), keys in prop::collection::vec((0u16..200, 1u64..4, 0i64..50), 1..300),
    ) {
        let store = Arc::new(MemoryStore::with_max_keys(8).unwrap());
        let l = Limiter::builder(s.clone()).store(store.clone()).build();
        let mut now = 1_700_000_000_000i64;
        for (k, cost, dt) in keys {
            now += dt;
            judge(l.check_sync_at(&format!("key-{k}"), cost, now), &s, Some(cost), now, true)?;
            prop_assert!(store.len() <= 8);
        }
    }
}
