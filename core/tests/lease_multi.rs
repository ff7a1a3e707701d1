//! The two-tier modes of a multi limiter on the in-memory store, on a manual clock: a request is
//! answered locally only when every dimension holds credits; a denial charges nothing (the
//! reserved credits go back); per dimension key the single limiter's bound holds across a fleet.

use std::sync::Arc;

use throttlekit::store::{Now, Reply, Store, Transform};
use throttlekit::{
    Clock, Dimension, ErrorCode, LeaseOptions, ManualClock, MemoryStore, Mode, MultiLimiter, Rule, Strategy,
};

const T0: i64 = 1_800_000_000_000;

fn multi(rule: Rule, dims: Vec<Dimension>, mode: Mode, clock: &ManualClock, store: &Arc<MemoryStore>) -> MultiLimiter {
    MultiLimiter::new(rule, dims)
        .unwrap()
        .with_store(store.clone())
        .with_clock(Arc::new(clock.clone()))
        .with_mode(mode)
        .unwrap()
}

fn leased(batch: u64, coupled: bool) -> Mode {
    Mode::Leased(LeaseOptions { batch, window_coupled: coupled, ..LeaseOptions::default() })
}

/// The units the store has counted for dimension `name`'s `key` (a fixed window's limit minus
/// what a peek says remains).
fn counted(m: &MultiLimiter, store: &MemoryStore, clock: &ManualClock, name: &str, key: &str) -> i64 {
    let dim = m.dimensions().iter().find(|d| d.name == name).unwrap();
    let full = m.dimension_key(name, key);
    let peek = store.apply_sync(&full, Now::At(clock.now_ms()), Transform::Peek { strategy: &dim.strategy });
    let d = peek.and_then(Reply::decision).unwrap();
    d.limit - d.remaining
}

fn window(limit: u64) -> Strategy {
    Strategy::fixed_window(limit, 1_000).unwrap()
}

#[test]
fn a_lease_covers_every_dimension_and_later_requests_spend_locally() {
    let (clock, store) = (ManualClock::new(T0), Arc::new(MemoryStore::new()));
    let dims = vec![Dimension::new("ip", window(10)), Dimension::new("user", window(100))];
    let m = multi(Rule::All, dims, leased(4, true), &clock, &store);
    let first = m.check_sync(&["1.2.3.4", "u1"], 1).unwrap();
    assert!(first.decision.allowed);
    assert_eq!(m.tier_stats().leases, 1);
    assert_eq!(counted(&m, &store, &clock, "ip", "1.2.3.4"), 4, "the ip dimension leased 4");
    assert_eq!(counted(&m, &store, &clock, "user", "u1"), 4, "the user dimension leased 4");
    for left in [2, 1, 0] {
        let d = m.check_sync(&["1.2.3.4", "u1"], 1).unwrap();
        assert!(d.decision.allowed);
        assert_eq!(d.decision.remaining, left, "the binding dimension's credits");
        assert_eq!(d.dimensions.len(), 2);
    }
    assert_eq!(m.tier_stats().local_admits, 3);
    assert_eq!(m.tier_stats().leases, 1);
    // Exactly the ip limit in this window (coupled), whatever the user dimension could give.
    let admitted = (0..30).filter(|_| m.check_sync(&["1.2.3.4", "u1"], 1).unwrap().decision.allowed).count();
    assert_eq!(admitted + 4, 10);
    assert_eq!(counted(&m, &store, &clock, "ip", "1.2.3.4"), 10);
}

#[test]
fn credits_of_one_dimension_key_serve_requests_with_other_keys() {
    let (clock, store) = (ManualClock::new(T0), Arc::new(MemoryStore::new()));
    let dims = vec![Dimension::new("ip", window(100)), Dimension::new("user", window(100))];
    let m = multi(Rule::All, dims, leased(5, true), &clock, &store);
    assert!(m.check_sync(&["ip1", "u1"], 1).unwrap().decision.allowed);
    // u2 has no credits: only the user dimension is leased; ip1's credit is reserved and spent.
    assert!(m.check_sync(&["ip1", "u2"], 1).unwrap().decision.allowed);
    assert_eq!(counted(&m, &store, &clock, "ip", "ip1"), 5, "ip1 was not leased again");
    assert_eq!(counted(&m, &store, &clock, "user", "u2"), 5);
    assert_eq!(m.tier_stats().leases, 2);
}

#[test]
fn a_denial_charges_nothing_and_the_reserved_credits_go_back() {
    let (clock, store) = (ManualClock::new(T0), Arc::new(MemoryStore::new()));
    let dims = vec![Dimension::new("ip", window(100)), Dimension::new("user", window(1))];
    let m = multi(Rule::All, dims, leased(4, true), &clock, &store);
    assert!(m.check_sync(&["ip1", "u1"], 1).unwrap().decision.allowed, "ip leases 4, user grants its 1");
    assert_eq!(counted(&m, &store, &clock, "user", "u1"), 1);
    let denied = m.check_sync(&["ip1", "u1"], 1).unwrap();
    assert!(!denied.decision.allowed);
    assert_eq!(denied.binding, "user");
    assert!(denied.decision.retry_after_ms >= 1);
    assert_eq!(counted(&m, &store, &clock, "ip", "ip1"), 4, "nothing more was charged to ip");
    // The ip credit reserved for the denied request is back: three requests of other users spend
    // ip1's three credits (each leasing its own user key), and the store never sees ip1 again.
    for u in ["u2", "u3", "u4"] {
        assert!(m.check_sync(&["ip1", u], 1).unwrap().decision.allowed, "{u}");
    }
    assert_eq!(counted(&m, &store, &clock, "ip", "ip1"), 4);
    // The fourth needs a new ip lease.
    assert!(m.check_sync(&["ip1", "u5"], 1).unwrap().decision.allowed);
    assert_eq!(counted(&m, &store, &clock, "ip", "ip1"), 8);
    // The denial of (ip1, u1) was cached: answered locally until the user window resets.
    let before = m.tier_stats().local_denials;
    assert!(!m.check_sync(&["ip1", "u1"], 1).unwrap().decision.allowed);
    assert_eq!(m.tier_stats().local_denials, before + 1);
}

#[test]
fn cached_deny_answers_a_repeated_denial_locally_until_its_retry() {
    let (clock, store) = (ManualClock::new(T0), Arc::new(MemoryStore::new()));
    let dims = vec![Dimension::new("ip", window(2)), Dimension::new("user", window(100))];
    let m = multi(Rule::All, dims, Mode::CachedDeny { max_keys: 100 }, &clock, &store);
    for _ in 0..2 {
        assert!(m.check_sync(&["ip1", "u1"], 1).unwrap().decision.allowed);
    }
    let first = m.check_sync(&["ip1", "u1"], 1).unwrap();
    assert!(!first.decision.allowed);
    assert_eq!(m.tier_stats().local_denials, 0, "the first denial came from the store");
    clock.advance(400).unwrap();
    let again = m.check_sync(&["ip1", "u1"], 1).unwrap();
    assert!(!again.decision.allowed);
    assert_eq!(again.decision.retry_after_ms, first.decision.retry_after_ms - 400);
    assert_eq!(again.binding, "ip");
    assert_eq!(m.tier_stats().local_denials, 1);
    assert_eq!(counted(&m, &store, &clock, "user", "u1"), 2, "a denial charged no dimension");
    clock.set(T0 + 1_000);
    assert!(m.check_sync(&["ip1", "u1"], 1).unwrap().decision.allowed, "the window reset: asked the store");
    assert_eq!(m.tier_stats().local_denials, 1);
}

#[test]
fn any_admits_through_one_dimensions_credits_and_charges_every_dimension_that_allows() {
    let (clock, store) = (ManualClock::new(T0), Arc::new(MemoryStore::new()));
    let dims = vec![Dimension::new("a", window(100)), Dimension::new("b", window(1))];
    let m = multi(Rule::Any, dims, leased(4, true), &clock, &store);
    assert!(m.check_sync(&["k", "k"], 1).unwrap().decision.allowed, "both lease: a 4, b its 1");
    assert_eq!(counted(&m, &store, &clock, "b", "k"), 1);
    // b is exhausted: each request leases b (denied) and is admitted on a's reserved credits.
    for _ in 0..3 {
        assert!(m.check_sync(&["k", "k"], 1).unwrap().decision.allowed);
    }
    assert_eq!(counted(&m, &store, &clock, "a", "k"), 4, "a's three credits were spent, not leased again");
    assert_eq!(counted(&m, &store, &clock, "b", "k"), 1);
}

#[test]
fn release_gives_unspent_credits_back_to_each_dimension() {
    let (clock, store) = (ManualClock::new(T0), Arc::new(MemoryStore::new()));
    let dims = vec![
        Dimension::new("ip", window(100)),
        Dimension::new("user", Strategy::sliding_window_log(100, 1_000).unwrap()),
    ];
    let m = multi(Rule::All, dims, leased(10, false), &clock, &store);
    assert!(m.check_sync(&["ip1", "u1"], 1).unwrap().decision.allowed);
    assert_eq!(counted(&m, &store, &clock, "ip", "ip1"), 10);
    clock.advance(10).unwrap();
    // The fixed window takes back its 9 (same period); the log cannot (they age out).
    assert_eq!(m.release_leases_sync(None).unwrap(), 9);
    assert_eq!(counted(&m, &store, &clock, "ip", "ip1"), 1);
    let m = multi(
        Rule::All,
        vec![Dimension::new("ip", window(100)), Dimension::new("gcra", Strategy::gcra(100, 1_000, None).unwrap())],
        leased(10, false),
        &clock,
        &store,
    );
    assert!(m.check_sync(&["ip2", "g"], 1).unwrap().decision.allowed);
    assert_eq!(counted(&m, &store, &clock, "ip", "ip2"), 10);
    assert_eq!(m.release_leases_sync(None).unwrap(), 18, "9 per dimension");
    assert_eq!(counted(&m, &store, &clock, "ip", "ip2"), 1);
    assert_eq!(m.tier_stats().credits_returned, 18);
}

#[test]
fn modes_are_validated_against_every_dimension() {
    let dims = || vec![Dimension::new("ip", window(10)), Dimension::new("g", Strategy::gcra(10, 1_000, None).unwrap())];
    let coupled = MultiLimiter::new(Rule::All, dims()).unwrap().with_mode(leased(4, true));
    let e = coupled.unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConfigInvalid);
    assert!(e.to_string().contains("windowCoupled"), "{e}");
    let low = Mode::Leased(LeaseOptions { batch: 4, low_water: 1, ..LeaseOptions::default() });
    let e = MultiLimiter::new(Rule::All, dims()).unwrap().with_mode(low).unwrap_err();
    assert!(e.to_string().contains("lowWater"), "{e}");
    let m = MultiLimiter::new(Rule::All, dims()).unwrap().with_mode(leased(4, false)).unwrap();
    assert_eq!(m.mode(), leased(4, false));
}

#[test]
fn a_request_costlier_than_a_batch_takes_the_strict_path() {
    let (clock, store) = (ManualClock::new(T0), Arc::new(MemoryStore::new()));
    let dims = vec![Dimension::new("ip", window(100)), Dimension::new("user", window(100)).cost_multiplier(3)];
    let m = multi(Rule::All, dims, leased(4, true), &clock, &store);
    assert!(m.check_sync(&["ip1", "u1"], 2).unwrap().decision.allowed, "user costs 6 > 4: strict");
    assert_eq!(m.tier_stats().leases, 0);
    assert_eq!(counted(&m, &store, &clock, "user", "u1"), 6);
    assert_eq!(counted(&m, &store, &clock, "ip", "ip1"), 2);
}

/// A small deterministic fleet: `n` multi limiters on one store, requests interleaved by a
/// seeded generator over shared and private keys; per window, the units charged to each
/// dimension key stay within its bound (exactly the limit when coupled).
fn fleet_bound(coupled: bool) {
    let (clock, store) = (ManualClock::new(T0), Arc::new(MemoryStore::new()));
    let (n, batch, limit) = (3u64, 4u64, 20u64);
    let fleet: Vec<MultiLimiter> = (0..n)
        .map(|_| {
            let dims = vec![Dimension::new("tenant", window(limit)), Dimension::new("user", window(limit / 2))];
            multi(Rule::All, dims, leased(batch, coupled), &clock, &store)
        })
        .collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut per = std::collections::BTreeMap::<(i64, String), u64>::new();
    for _ in 0..3_000 {
        let r = next();
        clock.advance((r % 3) as i64).unwrap();
        let node = &fleet[(r >> 8) as usize % n as usize];
        let user = format!("u{}", (r >> 16) % 3);
        let d = node.check_sync(&["t", &user], 1).unwrap();
        if d.decision.allowed {
            let w = clock.now_ms() / 1_000;
            *per.entry((w, "t".into())).or_default() += 1;
            *per.entry((w, user)).or_default() += 1;
        }
    }
    let bound = |l: u64| if coupled { l } else { l + n * (batch - 1) };
    let mut tenant_full = 0;
    for ((w, k), c) in &per {
        let l = if k == "t" { limit } else { limit / 2 };
        assert!(*c <= bound(l), "window {w} key {k}: {c} > {}", bound(l));
        if k == "t" && *c == l {
            tenant_full += 1;
        }
    }
    assert!(tenant_full > 0, "some window reached the tenant limit: {per:?}");
}

#[test]
fn a_coupled_fleet_never_admits_more_than_each_limit_per_window() {
    fleet_bound(true);
}

#[test]
fn an_uncoupled_fleet_stays_within_limit_plus_n_times_batch_minus_one() {
    fleet_bound(false);
}

#[test]
fn the_async_path_leases_and_spends_as_the_sync_path_does() {
    let (clock, store) = (ManualClock::new(T0), Arc::new(MemoryStore::new()));
    let dims = vec![Dimension::new("ip", window(10)), Dimension::new("user", window(100))];
    let m = multi(Rule::All, dims, leased(4, true), &clock, &store);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let admitted = rt.block_on(async {
        let mut n = 0;
        for _ in 0..20 {
            if m.check(&["ip1", "u1"], 1).await.unwrap().decision.allowed {
                n += 1;
            }
        }
        n
    });
    assert_eq!(admitted, 10);
    assert_eq!(m.tier_stats().leases, 4, "4 + 4 + 2 (partial), then one denied lease (cached)");
    assert_eq!(m.tier_stats().local_admits, 7);
}
