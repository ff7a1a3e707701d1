//! The two-tier modes on the in-memory store, on a manual clock: what each mode answers locally,
//! what it asks the store, and the edges of issue #23 (late grants, expiry, give-back, validation).

use std::sync::Arc;

use throttlekit::{ErrorCode, LeaseOptions, Limiter, ManualClock, MemoryStore, Mode, Strategy};

const T0: i64 = 1_800_000_000_000;

fn leased(strategy: Strategy, batch: u64, coupled: bool) -> (Limiter, ManualClock, Arc<MemoryStore>) {
    let clock = ManualClock::new(T0);
    let store = Arc::new(MemoryStore::new());
    let options = LeaseOptions { batch, window_coupled: coupled, ..LeaseOptions::default() };
    let l = Limiter::builder(strategy)
        .clock(Arc::new(clock.clone()))
        .store(store.clone())
        .mode(Mode::Leased(options))
        .unwrap()
        .build();
    (l, clock, store)
}

/// What the store itself holds for `key` (a strict peek on the same store).
fn store_remaining(strategy: Strategy, store: &Arc<MemoryStore>, clock: &ManualClock, key: &str) -> i64 {
    let peek = Limiter::builder(strategy).clock(Arc::new(clock.clone())).store(store.clone()).build();
    peek.peek_sync(key).unwrap().remaining
}

#[test]
fn a_lease_takes_a_batch_from_the_store_and_spends_it_locally() {
    let s = Strategy::fixed_window(10, 1_000).unwrap();
    let (l, clock, store) = leased(s.clone(), 4, true);
    let first = l.check_sync("k", 1).unwrap();
    assert!(first.allowed);
    assert_eq!(first.remaining, 3, "three credits kept");
    assert_eq!(store_remaining(s.clone(), &store, &clock, "k"), 6, "the store counted all four");
    for left in [2, 1, 0] {
        assert_eq!(l.check_sync("k", 1).unwrap().remaining, left);
    }
    assert_eq!(l.tier_stats().leases, 1);
    assert_eq!(l.tier_stats().local_admits, 3);
    // Two more batches (4 + 2: partial), then denied: exactly the limit in this window.
    let mut admitted = 4;
    for _ in 0..20 {
        if l.check_sync("k", 1).unwrap().allowed {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 10);
}

#[test]
fn coupled_credits_expire_at_the_window_reset() {
    let s = Strategy::fixed_window(10, 1_000).unwrap();
    let (l, clock, store) = leased(s.clone(), 5, true);
    clock.set(T0 + 900); // 100 ms before the window's end (T0 is a multiple of 1000)
    assert!(l.check_sync("k", 1).unwrap().allowed);
    clock.set(T0 + 1_000);
    // The four credits died with the window: this request leases again from the new window.
    let d = l.check_sync("k", 1).unwrap();
    assert!(d.allowed);
    assert_eq!(l.tier_stats().leases, 2);
    assert_eq!(store_remaining(s, &store, &clock, "k"), 5);
}

#[test]
fn uncoupled_credits_outlive_the_window_but_not_the_lease() {
    let s = Strategy::fixed_window(10, 1_000).unwrap();
    let (l, clock, _) = leased(s, 5, false);
    clock.set(T0 + 900);
    assert!(l.check_sync("k", 1).unwrap().allowed);
    clock.set(T0 + 1_100);
    assert!(l.check_sync("k", 1).unwrap().allowed);
    assert_eq!(l.tier_stats().leases, 1, "spent from the old lease (within N·(batch−1))");
    clock.set(T0 + 1_900); // the lease lived one window: 900 + 1000
    assert!(l.check_sync("k", 1).unwrap().allowed);
    assert_eq!(l.tier_stats().leases, 2);
}

#[test]
fn window_coupled_is_refused_where_there_is_no_window() {
    for s in [Strategy::gcra(10, 1_000, None).unwrap(), Strategy::sliding_window_log(10, 1_000).unwrap()] {
        let o = LeaseOptions { window_coupled: true, ..LeaseOptions::default() };
        let e = Limiter::builder(s).mode(Mode::Leased(o)).err().expect("refused");
        assert_eq!(e.code(), ErrorCode::ConfigInvalid);
        assert!(e.to_string().contains("windowCoupled"), "{e}");
    }
    let bad = [
        LeaseOptions { batch: 0, ..LeaseOptions::default() },
        LeaseOptions { batch: 5, low_water: 5, ..LeaseOptions::default() },
        LeaseOptions { max_keys: 0, ..LeaseOptions::default() },
    ];
    for o in bad {
        let e =
            Limiter::builder(Strategy::gcra(10, 1_000, None).unwrap()).mode(Mode::Leased(o)).err().expect("refused");
        assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{o:?}");
    }
    assert!(Mode::parse("twoTier", LeaseOptions::default()).is_err());
    assert_eq!(Mode::parse("cached-deny", LeaseOptions::default()).unwrap().name(), "cached_deny");
}

#[test]
fn cached_denials_are_answered_locally_until_their_retry() {
    let clock = ManualClock::new(T0);
    let l = Limiter::builder(Strategy::gcra(10, 1_000, Some(1)).unwrap())
        .clock(Arc::new(clock.clone()))
        .mode(Mode::CachedDeny { max_keys: 100 })
        .unwrap()
        .build();
    assert!(l.check_sync("k", 1).unwrap().allowed);
    let denied = l.check_sync("k", 1).unwrap();
    assert!(!denied.allowed);
    assert_eq!(denied.retry_after_ms, 100);
    clock.advance(40).unwrap();
    let cached = l.check_sync("k", 1).unwrap();
    assert!(!cached.allowed);
    assert_eq!(cached.retry_after_ms, 60, "the retry counts down locally");
    assert_eq!(l.tier_stats().local_denials, 1);
    clock.advance(60).unwrap();
    assert!(l.check_sync("k", 1).unwrap().allowed, "exact: admitted the moment the store would");
}

#[test]
fn every_strategy_admits_the_same_total_leased_as_strict_in_one_process() {
    let strategies = [
        Strategy::gcra(20, 1_000, Some(20)).unwrap(),
        Strategy::token_bucket(20, 20.0).unwrap(),
        Strategy::fixed_window(20, 1_000).unwrap(),
        Strategy::sliding_window(20, 1_000, None).unwrap(),
        Strategy::sliding_window_log(20, 1_000).unwrap(),
    ];
    for s in strategies {
        let (l, _, _) = leased(s.clone(), 6, false);
        let admitted = (0..100).filter(|_| l.check_sync("k", 1).unwrap().allowed).count();
        assert_eq!(admitted, 20, "{}: one node spends only what it leased", s.kind());
    }
}

#[test]
fn close_gives_unspent_credits_back_where_the_strategy_can_take_them() {
    for s in [
        Strategy::gcra(10, 1_000, None).unwrap(),
        Strategy::token_bucket(10, 1.0).unwrap(),
        Strategy::fixed_window(10, 1_000).unwrap(),
    ] {
        let (l, clock, store) = leased(s.clone(), 5, false);
        assert!(l.check_sync("k", 1).unwrap().allowed);
        assert_eq!(store_remaining(s.clone(), &store, &clock, "k"), 5, "{}", s.kind());
        assert_eq!(l.release_leases_sync(None).unwrap(), 4, "{}", s.kind());
        assert_eq!(store_remaining(s.clone(), &store, &clock, "k"), 9, "{}", s.kind());
        assert_eq!(l.tier_stats().credits_returned, 4);
    }
    // The log cannot say which stamps were leased: its credits age out instead.
    let s = Strategy::sliding_window_log(10, 1_000).unwrap();
    let (l, clock, store) = leased(s.clone(), 5, false);
    assert!(l.check_sync("k", 1).unwrap().allowed);
    assert_eq!(l.release_leases_sync(None).unwrap(), 0);
    assert_eq!(store_remaining(s, &store, &clock, "k"), 5);
}

#[test]
fn idle_keys_give_back_and_busy_ones_keep_their_credits() {
    let s = Strategy::fixed_window(100, 60_000).unwrap();
    let (l, clock, _) = leased(s, 10, true);
    assert!(l.check_sync("idle", 1).unwrap().allowed);
    clock.advance(500).unwrap();
    assert!(l.check_sync("busy", 1).unwrap().allowed);
    assert_eq!(l.release_leases_sync(Some(300)).unwrap(), 9, "only the idle key's nine");
    assert!(l.check_sync("busy", 1).unwrap().allowed);
    assert_eq!(l.tier_stats().leases, 2);
}

#[test]
fn a_request_larger_than_the_batch_goes_strict_and_the_tier_stays_bounded() {
    let s = Strategy::fixed_window(1_000, 60_000).unwrap();
    let options = LeaseOptions { batch: 4, max_keys: 8, ..LeaseOptions::default() };
    let l = Limiter::builder(s).mode(Mode::Leased(options)).unwrap().build();
    let d = l.check_sync("k", 10).unwrap();
    assert!(d.allowed);
    assert_eq!(l.tier_stats().leases, 0);
    for i in 0..100 {
        assert!(l.check_sync(&format!("k{i}"), 1).unwrap().allowed);
    }
    // Evicted keys' credits are parked and given back: 8 keys' worth at most are kept live.
    let back = l.release_leases_sync(None).unwrap();
    assert!((8 * 3..=16 * 3).contains(&back), "{back}");
}

#[test]
fn async_checks_lease_too() {
    let s = Strategy::fixed_window(10, 1_000).unwrap();
    let (l, _, _) = leased(s, 4, true);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let admitted = rt.block_on(async {
        let mut n = 0;
        for _ in 0..30 {
            if l.check("k", 1).await.unwrap().allowed {
                n += 1;
            }
        }
        n
    });
    assert_eq!(admitted, 10);
    // 4 + 4 + 2 (partial), then one denied lease whose denial is cached for the rest.
    assert_eq!(l.tier_stats().leases, 4);
    assert_eq!(l.tier_stats().local_denials, 19);
}

fn low_water(strategy: Strategy, batch: u64, low: u64) -> (Limiter, ManualClock, Arc<MemoryStore>) {
    let clock = ManualClock::new(T0);
    let store = Arc::new(MemoryStore::new());
    let options = LeaseOptions { batch, low_water: low, window_coupled: true, ..LeaseOptions::default() };
    let l = Limiter::builder(strategy)
        .clock(Arc::new(clock.clone()))
        .store(store.clone())
        .mode(Mode::Leased(options))
        .unwrap()
        .build();
    (l, clock, store)
}

#[test]
fn low_water_tops_up_before_the_credits_run_out() {
    let s = Strategy::fixed_window(100, 1_000).unwrap();
    let (l, clock, store) = low_water(s.clone(), 4, 1);
    assert!(l.check_sync("k", 1).unwrap().allowed, "a lease: 3 credits");
    assert!(l.check_sync("k", 1).unwrap().allowed, "2 left");
    assert_eq!(l.tier_stats().leases, 1);
    assert!(l.check_sync("k", 1).unwrap().allowed, "1 left: at the mark, a top-up of 4");
    assert_eq!(l.tier_stats().leases, 2);
    assert_eq!(store_remaining(s.clone(), &store, &clock, "k"), 92, "the store counted both leases");
    // 1 + 4 = 5 credits (low_water + batch): the most a node holds.
    for _ in 0..4 {
        assert!(l.check_sync("k", 1).unwrap().allowed);
    }
    assert_eq!(l.tier_stats().local_admits, 6);
    assert_eq!(l.tier_stats().leases, 3, "the spend that left 1 topped up again");
}

#[test]
fn a_denied_top_up_leaves_the_held_credits_spendable() {
    // Limit 4, batch 4: the first lease takes the whole window; the top-up at 2 is denied.
    let s = Strategy::fixed_window(4, 1_000).unwrap();
    let (l, _clock, _store) = low_water(s, 4, 2);
    assert!(l.check_sync("k", 1).unwrap().allowed);
    let d = l.check_sync("k", 1).unwrap();
    assert!(d.allowed && d.remaining == 2, "{d:?}");
    assert_eq!(l.tier_stats().leases, 2, "a top-up was asked (and denied)");
    for left in [1, 0] {
        let d = l.check_sync("k", 1).unwrap();
        assert!(d.allowed && d.remaining == left, "counted credits stay spendable: {d:?}");
    }
    assert!(!l.check_sync("k", 1).unwrap().allowed, "exactly the limit");
}
