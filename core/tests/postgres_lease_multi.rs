//! A multi limiter's leased mode on Postgres: `throttlekit_v1_multi` with leases plans and
//! commits exactly what the in-memory mirror (`store::multi_apply`) does, for every strategy and
//! both rules; a fleet of leased multi limiters, each on its own pool, admits exactly each
//! dimension's limit per coupled window; held credits outlive a stopped server, then the fail
//! policy decides.
#![cfg(feature = "postgres")]

#[path = "support/multi_fleet.rs"]
mod multi_fleet;
#[path = "support/postgres_server.rs"]
mod postgres_server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres_server::PostgresServer;
use throttlekit::postgres::{PostgresOptions, PostgresStore};
use throttlekit::store::{DimensionCall, DimensionLease, Now, Store};
use throttlekit::{
    Clock, Dimension, FailPolicy, LeaseOptions, ManualClock, MemoryStore, Mode, MultiLimiter, Rule, Strategy,
    SystemClock,
};

fn connect(url: &str, timeout: Duration) -> Arc<PostgresStore> {
    let o = PostgresOptions { timeout, sweep_interval: None, pool_size: 2, ..PostgresOptions::new(url) };
    Arc::new(PostgresStore::connect_blocking(o).expect("connect"))
}

#[test]
fn sql_multi_leases_match_the_in_memory_mirror() {
    let server = PostgresServer::start();
    let pg = connect(&server.url, Duration::from_secs(10));
    let t0 = 1_700_000_000_000i64;
    let mut granted = 0;
    for rule in [Rule::All, Rule::Any] {
        // Each strategy paired with a tighter fixed window, so both rules meet denials; the
        // third dimension repeats the first's key (each commit sees the ones before it).
        for (n, s) in multi_fleet::strategies().iter().enumerate() {
            let memory = MemoryStore::new();
            let tight = Strategy::fixed_window(7, 1_000).unwrap();
            let keys = [format!("m{n}{rule:?}:a"), format!("m{n}{rule:?}:b")];
            for i in 0..14i64 {
                let cost = 1 + (i % 2) as u64;
                let mut dims = vec![
                    DimensionCall { key: &keys[0], strategy: s, cost },
                    DimensionCall { key: &keys[1], strategy: &tight, cost },
                ];
                let mut leases = vec![
                    DimensionLease { want: 5, lifetime_ms: 700 },
                    DimensionLease { want: 3, lifetime_ms: if i % 3 == 0 { 0 } else { 700 } },
                ];
                if i % 5 == 4 {
                    dims.push(DimensionCall { key: &keys[0], strategy: s, cost: 1 });
                    leases.push(DimensionLease { want: 2, lifetime_ms: 500 });
                }
                let now = t0 + i * 37;
                let a = memory.apply_multi_lease_sync(rule, &dims, &leases, Now::At(now)).unwrap();
                let b = pg.apply_multi_lease_sync(rule, &dims, &leases, Now::At(now)).unwrap();
                assert_eq!(a, b, "{rule:?} {} step {i}", s.kind());
                granted += a.grants.iter().filter(|g| g.granted > 0).count();
                // A check between leases sees the same state on both stores.
                let check = [DimensionCall { key: &keys[0], strategy: s, cost: 1 }];
                assert_eq!(
                    memory.apply_multi_sync(rule, &check, Now::At(now + 1)).unwrap(),
                    pg.apply_multi_sync(rule, &check, Now::At(now + 1)).unwrap(),
                    "{rule:?} {} check after step {i}",
                    s.kind()
                );
            }
        }
    }
    assert!(granted > 50, "the leases granted: {granted}");
    let call = [DimensionCall { key: "x", strategy: &multi_fleet::strategies()[0], cost: 1 }];
    let e = pg.apply_multi_lease_sync(Rule::All, &call, &[], Now::At(t0)).unwrap_err();
    assert_eq!(e.code(), throttlekit::ErrorCode::ConfigInvalid, "{e}");
}

#[test]
fn a_coupled_multi_fleet_admits_exactly_each_limit_per_window() {
    let server = PostgresServer::start();
    // The server's clock (async path): with callers' clocks a statement delayed past the next
    // window's first one would reopen its window (docs/postgres.md, "Clocks").
    let store = || -> Arc<dyn Store> { connect(&server.url, Duration::from_secs(5)) };
    multi_fleet::coupled_fleet(store, 1_000, Duration::from_millis(3_500), true);
}

#[test]
fn the_async_path_and_a_stopped_server_on_postgres() {
    let server = PostgresServer::start();
    let dims = vec![
        Dimension::new("ip", Strategy::fixed_window(100, 60_000).unwrap()),
        Dimension::new("user", Strategy::gcra(100, 60_000, None).unwrap()),
    ];
    let options = LeaseOptions { batch: 5, ..LeaseOptions::default() };
    // Time stands still: the held credits belong to one window, and on the system clock a minute
    // boundary while the server stops would end them. Postgres judges expiry by the caller's `now`.
    let m = MultiLimiter::new(Rule::All, dims)
        .unwrap()
        .with_store(connect(&server.url, Duration::from_millis(1_000)))
        .with_clock(Arc::new(ManualClock::new(SystemClock.now_ms())))
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
    assert_eq!(m.tier_stats().leases, 2);
    server.stop();
    for _ in 0..4 {
        let d = m.check_sync(&["ip1", "u1"], 1).unwrap();
        assert!(d.decision.allowed && !d.decision.fallback, "held credits are spent: {d:?}");
    }
    let started = Instant::now();
    let d = m.check_sync(&["ip1", "u1"], 1).unwrap();
    assert!(!d.decision.allowed && d.decision.fallback, "fail-closed once they are gone: {d:?}");
    assert!(started.elapsed() < Duration::from_secs(3), "answered within the timeout: {:?}", started.elapsed());
}
