//! A multi limiter's leased mode on Redis: `multi.lua`'s lease section plans and commits exactly
//! what the in-memory mirror does, for every strategy and both rules; a fleet of multi limiters
//! on their own connections admits exactly each dimension's limit per coupled window.
#![cfg(feature = "redis")]

#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/redis_store.rs"]
mod redis_store;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use redis_server::RedisServer;
use redis_store::connect;
use throttlekit::store::{DimensionCall, DimensionLease, Now, Store};
use throttlekit::{Dimension, FailPolicy, LeaseOptions, MemoryStore, Mode, MultiLimiter, Rule, Strategy};

/// Long enough for a fleet of limiters on one server.
const TIMEOUT_MS: u64 = 1_000;

fn strategies() -> Vec<Strategy> {
    vec![
        Strategy::gcra(20, 1_000, Some(12)).unwrap(),
        Strategy::token_bucket(12, 20.0).unwrap(),
        Strategy::fixed_window(20, 1_000).unwrap(),
        Strategy::sliding_window(20, 1_000, Some(4)).unwrap(),
        Strategy::sliding_window_log(20, 1_000).unwrap(),
    ]
}

#[test]
fn lua_multi_leases_match_the_in_memory_mirror() {
    let server = RedisServer::start();
    let redis = connect(server.url(), TIMEOUT_MS);
    let t0 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let t0 = t0 - t0 % 1_000 + 1_000;
    let all = strategies();
    for rule in [Rule::All, Rule::Any] {
        // Each strategy paired with a tighter fixed window, so both rules meet denials.
        for (n, s) in all.iter().enumerate() {
            let memory = MemoryStore::new();
            let tight = Strategy::fixed_window(7, 1_000).unwrap();
            let keys = [format!("{{m{n}{rule:?}}}:a"), format!("{{m{n}{rule:?}}}:b")];
            for i in 0..10i64 {
                let cost = 1 + (i % 2) as u64;
                let dims = [
                    DimensionCall { key: &keys[0], strategy: s, cost },
                    DimensionCall { key: &keys[1], strategy: &tight, cost },
                ];
                let leases = [
                    DimensionLease { want: 5, lifetime_ms: 700 },
                    DimensionLease { want: 3, lifetime_ms: if i % 3 == 0 { 0 } else { 700 } },
                ];
                let now = t0 + i * 10;
                let a = memory.apply_multi_lease_sync(rule, &dims, &leases, Now::At(now)).unwrap();
                let b = redis.apply_multi_lease_sync(rule, &dims, &leases, Now::At(now)).unwrap();
                assert_eq!(a, b, "{rule:?} {} step {i}", s.kind());
            }
        }
    }
}

#[test]
fn a_coupled_multi_fleet_admits_exactly_each_limit_per_window() {
    let server = RedisServer::start();
    let (n, run) = (3, Duration::from_millis(1_300));
    let options = LeaseOptions { batch: 6, window_coupled: true, ..LeaseOptions::default() };
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let dims = vec![
                Dimension::new("tenant", Strategy::fixed_window(40, 400).unwrap()),
                Dimension::new("user", Strategy::fixed_window(30, 400).unwrap()),
            ];
            let m = MultiLimiter::new(Rule::All, dims)
                .unwrap()
                .with_store(connect(server.url(), TIMEOUT_MS))
                .with_fail_policy(FailPolicy::Raise)
                .with_mode(Mode::Leased(options))
                .unwrap();
            std::thread::spawn(move || {
                let mut per = BTreeMap::<(i64, &str), u64>::new();
                let start = Instant::now();
                let mut k = i;
                while start.elapsed() < run {
                    k += 1;
                    let user = if k % 2 == 0 { "u0" } else { "u1" };
                    let d = m.check_sync(&["t", user], 1).unwrap();
                    if d.decision.allowed {
                        // Every dimension's reset_at names its store window.
                        *per.entry((d.dimensions[0].reset_at, "t")).or_default() += 1;
                        *per.entry((d.dimensions[1].reset_at, user)).or_default() += 1;
                    }
                }
                per
            })
        })
        .collect();
    let mut total = BTreeMap::<(i64, &str), u64>::new();
    for t in threads {
        for (k, c) in t.join().unwrap() {
            *total.entry(k).or_default() += c;
        }
    }
    assert!(total.iter().all(|((_, k), c)| *c <= if *k == "t" { 40 } else { 30 }), "{total:?}");
    let tenant: Vec<u64> = total.iter().filter(|((_, k), _)| *k == "t").map(|(_, c)| *c).collect();
    assert!(tenant.len() >= 3, "{total:?}");
    // The inner windows (the first and last are partial): the tenant limit binds (2 × 30 > 40).
    assert!(tenant[1..tenant.len() - 1].iter().all(|&c| c == 40), "exactly the limit: {total:?}");
}

#[test]
fn the_async_path_and_a_dead_store_on_redis() {
    let mut server = RedisServer::start();
    let dims = vec![
        Dimension::new("ip", Strategy::fixed_window(100, 60_000).unwrap()),
        Dimension::new("user", Strategy::gcra(100, 60_000, None).unwrap()),
    ];
    let options = LeaseOptions { batch: 5, ..LeaseOptions::default() };
    let m = MultiLimiter::new(Rule::All, dims)
        .unwrap()
        .with_store(connect(server.url(), TIMEOUT_MS))
        .with_fail_policy(FailPolicy::FailClosed)
        .with_mode(Mode::Leased(options))
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for _ in 0..5 {
        assert!(rt.block_on(m.check(&["ip1", "u1"], 1)).unwrap().decision.allowed);
    }
    assert_eq!(m.tier_stats().leases, 1);
    assert_eq!(m.tier_stats().local_admits, 4);
    assert!(rt.block_on(m.check(&["ip1", "u1"], 1)).unwrap().decision.allowed);
    server.stop();
    for _ in 0..4 {
        let d = m.check_sync(&["ip1", "u1"], 1).unwrap();
        assert!(d.decision.allowed && !d.decision.fallback, "held credits are spent: {d:?}");
    }
    let d = m.check_sync(&["ip1", "u1"], 1).unwrap();
    assert!(!d.decision.allowed && d.decision.fallback, "fail-closed once they are gone: {d:?}");
}
