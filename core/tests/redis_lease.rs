//! The leased mode on Redis: `lease.lua` grants and gives back exactly what the in-memory
//! mirror (`lease::grant`) does, for every strategy; a fleet of limiters with their own
//! connections admits exactly `limit` per window when coupled; a dead store follows the fail
//! policy and never admits through credits a node does not hold.
#![cfg(feature = "redis")]

#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/redis_store.rs"]
mod redis_store;

use std::collections::BTreeMap;
use std::time::Duration;

use redis_server::RedisServer;
use redis_store::connect;
use throttlekit::lease::Grant;
use throttlekit::spec::{QuotaOptions, ResetCadence};
use throttlekit::store::{Now, Reply, Store, Transform};
use throttlekit::{Clock, FailPolicy, LeaseOptions, Limiter, ManualClock, MemoryStore, Mode, Strategy, SystemClock};

/// Long enough for a fleet of limiters on one server.
const TIMEOUT_MS: u64 = 1_000;

fn strategies() -> Vec<Strategy> {
    vec![
        Strategy::gcra(20, 1_000, Some(12)).unwrap(),
        Strategy::token_bucket(12, 20.0).unwrap(),
        Strategy::fixed_window(20, 1_000).unwrap(),
        Strategy::sliding_window(20, 1_000, Some(4)).unwrap(),
        Strategy::sliding_window_log(20, 1_000).unwrap(),
        Strategy::quota(QuotaOptions {
            limit: 20.0,
            reset_cadence: ResetCadence::Fixed,
            period_ms: Some(1_000.0),
            anchor: None,
            offset_minutes: None,
            week_starts_on: None,
            buckets: None,
        })
        .unwrap(),
    ]
}

fn grant(store: &dyn Store, key: &str, now: i64, t: Transform<'_>) -> Grant {
    store.apply_sync(key, Now::At(now), t).and_then(Reply::grant).expect("a grant")
}

#[test]
fn lua_leases_and_give_backs_match_the_in_memory_mirror() {
    let server = RedisServer::start();
    let redis = connect(server.url(), TIMEOUT_MS);
    // Wall-clock times: Redis expires keys on its own clock.
    let t0 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let t0 = t0 - t0 % 1_000 + 1_000;
    for (n, s) in strategies().iter().enumerate() {
        let memory = MemoryStore::new();
        let key = format!("dual:{n}");
        let lifetime = if n == 2 { 0 } else { 700 };
        // Leases of 5 until the strategy runs dry (partial grants, then denials), a give-back,
        // a lease after it, then time passing.
        let mut script = Vec::new();
        for i in 0..6 {
            script.push((t0 + i * 10, Transform::Lease { strategy: s, cost: 1, want: 5, lifetime_ms: lifetime }));
        }
        script.push((t0 + 70, Transform::GiveBack { strategy: s, units: 3, reset_at: t0 + 1_000 }));
        script.push((t0 + 80, Transform::Lease { strategy: s, cost: 2, want: 5, lifetime_ms: lifetime }));
        script.push((t0 + 500, Transform::Lease { strategy: s, cost: 1, want: 9, lifetime_ms: lifetime }));
        for (i, (now, t)) in script.into_iter().enumerate() {
            let a = grant(&memory, &key, now, t);
            let b = grant(&*redis, &key, now, t);
            assert_eq!(a, b, "{} step {i} at +{}", s.kind(), now - t0);
        }
    }
}

/// `n` limiters, each on its own connection, hammer one key; returns per window (by the grant's
/// `reset_at`, the store's window end) the admissions.
fn fleet(server: &RedisServer, strategy: &Strategy, mode: Mode, n: usize, run: Duration) -> BTreeMap<i64, u64> {
    let limiters = (0..n)
        .map(|_| {
            let store = connect(server.url(), TIMEOUT_MS);
            Limiter::builder(strategy.clone())
                .store(store)
                .prefix("fleet")
                .fail_policy(FailPolicy::Raise)
                .mode(mode)
                .unwrap()
                .build()
        })
        .collect();
    fleet::admissions_per_window(limiters, run)
}

#[test]
fn a_coupled_fleet_admits_exactly_the_limit_per_window() {
    let server = RedisServer::start();
    let s = Strategy::fixed_window(60, 400).unwrap();
    let options = LeaseOptions { batch: 8, window_coupled: true, ..LeaseOptions::default() };
    let windows = fleet(&server, &s, Mode::Leased(options), 4, Duration::from_millis(1_500));
    let counts: Vec<u64> = windows.values().copied().collect();
    assert!(counts.len() >= 3, "{windows:?}");
    assert!(counts.iter().all(|&c| c <= 60), "never above the limit: {windows:?}");
    // Every window the fleet saw from its start to its end (the first and last are partial).
    assert!(counts[1..counts.len() - 1].iter().all(|&c| c == 60), "exactly the limit: {windows:?}");
}

#[test]
fn a_dead_store_follows_the_fail_policy_and_held_credits_stay_spendable() {
    let mut server = RedisServer::start();
    let s = Strategy::fixed_window(100, 60_000).unwrap();
    let options = LeaseOptions { batch: 5, window_coupled: true, ..LeaseOptions::default() };
    // Time stands still at the start of the current minute: the held credits belong to one
    // window, and on the system clock a minute boundary while the server stops would end them.
    // Redis expires the window's key on its own clock at the window's end: a whole minute away.
    let now = SystemClock.now_ms();
    let clock: std::sync::Arc<dyn Clock> = std::sync::Arc::new(ManualClock::new(now - now % 60_000));
    let make = |policy| {
        Limiter::builder(s.clone())
            .store(connect(server.url(), TIMEOUT_MS))
            .clock(clock.clone())
            .fail_policy(policy)
            .mode(Mode::Leased(options))
            .unwrap()
            .build()
    };
    let closed = make(FailPolicy::FailClosed);
    let open = make(FailPolicy::FailOpen);
    assert!(closed.check_sync("a", 1).unwrap().allowed);
    server.stop();
    // Four credits were counted before the store died: they are still spent locally.
    for _ in 0..4 {
        let d = closed.check_sync("a", 1).unwrap();
        assert!(d.allowed && !d.fallback);
    }
    let d = closed.check_sync("a", 1).unwrap();
    assert!(!d.allowed && d.fallback, "fail-closed denies once the credits are gone: {d:?}");
    let d = open.check_sync("b", 1).unwrap();
    assert!(d.allowed && d.fallback, "fail-open admits, marked: outside the bound: {d:?}");
    assert_eq!(open.tier_stats().local_admits, 0, "no credits came from a failed lease");
}
