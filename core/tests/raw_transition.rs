//! `Strategy::check`, the public raw transition, never panics, whatever `i64` `now` it is given
//! and whatever state an earlier call at another `now` left. The limiters refuse a `now` past
//! ±2^53 (and a sliding window's tick past it) before they call it, but a caller of the raw
//! transition may not: in a debug build (`cargo test` builds one) an arithmetic overflow would
//! panic, and in release it would wrap silently. The same holds for an in-process store's
//! `Store::apply_sync`, whose caller may pass any time too.

use proptest::prelude::*;
use throttlekit::store::{Now, Transform};
use throttlekit::{MemoryStore, Store, Strategy as Algorithm};

/// Every algorithm and quota cadence, from tiny to huge parameters, as JSON specs.
fn any_strategy() -> impl Strategy<Value = Algorithm> {
    let n = || prop_oneof![3 => 1u64..20, 1 => 1u64..1_000_000_000, 1 => Just(1u64 << 53)];
    let buckets = prop_oneof![3 => 1u64..12, 1 => 1u64..=1_000_000];
    let json = prop_oneof![
        (n(), n(), n()).prop_map(|(l, p, b)| format!(
            r#"{{"kind":"gcra","options":{{"limit":{l},"periodMs":{p},"burst":{b}}}}}"#
        )),
        (n(), 1u64..1_000_000).prop_map(|(c, r)| format!(
            r#"{{"kind":"tokenBucket","options":{{"capacity":{c},"refillPerSec":{}}}}}"#,
            r as f64 / 7.0
        )),
        (n(), n()).prop_map(|(l, w)| format!(r#"{{"kind":"fixedWindow","options":{{"limit":{l},"windowMs":{w}}}}}"#)),
        (n(), n(), buckets.clone()).prop_map(|(l, w, b)| format!(
            r#"{{"kind":"slidingWindow","options":{{"limit":{l},"windowMs":{w},"buckets":{b}}}}}"#
        )),
        (n(), n()).prop_map(|(l, w)| format!(
            r#"{{"kind":"slidingWindowLog","options":{{"limit":{l},"windowMs":{w}}}}}"#
        )),
        (n(), n(), buckets).prop_map(|(l, p, b)| format!(
            r#"{{"kind":"quota","options":{{"limit":{l},"resetCadence":"rolling","periodMs":{p},"buckets":{b}}}}}"#
        )),
        (n(), n(), -(1i64 << 53)..=(1i64 << 53)).prop_map(|(l, p, a)| format!(
            r#"{{"kind":"quota","options":{{"limit":{l},"resetCadence":"fixed","periodMs":{p},"anchor":{a}}}}}"#
        )),
        (n(), prop::sample::select(vec!["calendar-day", "calendar-week", "calendar-month"]), -840i64..=840, 0u8..7)
            .prop_map(|(l, c, o, d)| format!(
                r#"{{"kind":"quota","options":{{"limit":{l},"resetCadence":"{c}","offsetMinutes":{o},"weekStartsOn":{d}}}}}"#
            )),
    ];
    json.prop_filter_map("valid", |j| Algorithm::from_json(&j).ok())
}

/// Any `i64`, with the ends of the range and of ±2^53 weighted up.
fn any_now() -> impl Strategy<Value = i64> {
    prop_oneof![
        2 => any::<i64>(),
        1 => -1_000_000i64..1_000_000,
        1 => prop::sample::select(vec![i64::MIN, i64::MIN + 1, -(1i64 << 53), (1i64 << 53), i64::MAX - 1, i64::MAX]),
        1 => (prop::sample::select(vec![i64::MIN, -(1i64 << 53), 0, 1i64 << 53, i64::MAX]), -2000i64..2000)
            .prop_map(|(base, d)| base.saturating_add(d)),
    ]
}

/// A cost the limiters accept: 1 ..= 2^53.
fn any_cost() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..8, 1 => 1u64..=(1u64 << 53)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Two calls at arbitrary times (the second sees the state the first left), then a peek
    /// and a forecast: none panics, and what comes back is a decision (a denial's wait is at
    /// least 1 ms, an admission's 0).
    #[test]
    fn the_raw_transition_never_panics(
        strategy in any_strategy(),
        first in any_now(),
        second in any_now(),
        cost in any_cost(),
        commit in any::<bool>(),
    ) {
        let mut slot = None;
        for now in [first, second, first] {
            let d = strategy.check(&mut slot, now, cost, commit).reply;
            prop_assert_eq!(d.allowed, d.retry_after_ms == 0, "{:?} at {}: {:?}", strategy.spec(), now, d);
            prop_assert!(d.retry_after_ms >= 0, "{:?} at {}: {:?}", strategy.spec(), now, d);
        }
        let _ = strategy.peek(slot.as_ref(), second);
        let _ = strategy.forecast(slot.as_ref(), second, cost);
    }
}

/// The narrowest bucket allowed (1 microsecond, `windowMs 1000` with 1000000 buckets) at the
/// ends of the `i64` range and of ±2^53, after a call at 0 left a ring: its tick, 1000 * now,
/// is the largest any sliding window reaches, and `tick - buckets` must not overflow.
#[test]
fn the_narrowest_bucket_at_the_ends_of_time() {
    let s = Algorithm::sliding_window(10, 1000, Some(1_000_000)).unwrap();
    for now in [i64::MIN, -(1i64 << 53), 1i64 << 53, i64::MAX] {
        let mut slot = None;
        assert!(s.check(&mut slot, 0, 1, true).reply.allowed);
        let d = s.check(&mut slot, now, 1, true).reply;
        // A window far from 0 no longer holds the unit admitted at 0.
        assert!(d.allowed && d.remaining == 9, "{now}: {d:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// An in-process store takes its time from a direct caller of `Store::apply_sync` too, which
    /// the limiters' checks do not cover: any `i64` decides (as at ±2^53 past it) without a
    /// panic, on every path of the memory store (its inlined GCRA and log paths included) and
    /// for every transform a limiter sends.
    #[test]
    fn the_memory_store_never_panics(
        strategy in any_strategy(),
        first in any_now(),
        second in any_now(),
        cost in any_cost(),
    ) {
        let store = MemoryStore::new();
        for now in [first, second, first] {
            for transform in [
                Transform::Check { strategy: &strategy, cost },
                Transform::Forecast { strategy: &strategy, cost },
                Transform::Peek { strategy: &strategy },
            ] {
                let reply = store.apply_sync("k", Now::At(now), transform);
                prop_assert!(reply.is_ok(), "{:?} at {}: {:?}", strategy.spec(), now, reply);
            }
        }
    }
}
