//! A multi limiter's leased mode on Redis: `multi.lua`'s lease section plans and commits exactly
//! what the in-memory mirror does, for every strategy and both rules; a fleet of multi limiters
//! on their own connections admits exactly each dimension's limit per coupled window.
#![cfg(feature = "redis")]

#[path = "support/multi_fleet.rs"]
mod multi_fleet;
#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/redis_store.rs"]
mod redis_store;

use std::sync::Arc;
use std::time::Duration;

use redis_server::RedisServer;
use redis_store::connect;
use throttlekit::store::{DimensionCall, DimensionLease, Now, Store};
use throttlekit::{
    Clock, Dimension, FailPolicy, LeaseOptions, ManualClock, MemoryStore, Mode, MultiLimiter, Rule, Strategy,
    SystemClock,
};

/// Long enough for a fleet of limiters on one server.
const TIMEOUT_MS: u64 = 1_000;

#[test]
fn lua_multi_leases_match_the_in_memory_mirror() {
    let server = RedisServer::start();
    let redis = connect(server.url(), TIMEOUT_MS);
    let t0 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let t0 = t0 - t0 % 1_000 + 1_000;
    let all = multi_fleet::strategies();
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
    let store = || -> Arc<dyn Store> { connect(server.url(), TIMEOUT_MS) };
    multi_fleet::coupled_fleet(store, 400, Duration::from_millis(1_300), false);
}

#[test]
fn the_async_path_and_a_dead_store_on_redis() {
    let mut server = RedisServer::start();
    let dims = vec![
        Dimension::new("ip", Strategy::fixed_window(100, 60_000).unwrap()),
        Dimension::new("user", Strategy::gcra(100, 60_000, None).unwrap()),
    ];
    let options = LeaseOptions { batch: 5, ..LeaseOptions::default() };
    // Time stands still at the start of the current minute: the held credits belong to one
    // window, and on the system clock a minute boundary while the server stops would end them.
    // Redis expires the window's key on its own clock at the window's end: a whole minute away.
    let now = SystemClock.now_ms();
    let m = MultiLimiter::new(Rule::All, dims)
        .unwrap()
        .with_store(connect(server.url(), TIMEOUT_MS))
        .with_clock(Arc::new(ManualClock::new(now - now % 60_000)))
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
