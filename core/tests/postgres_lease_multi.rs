//! A multi limiter's leased mode on Postgres: `throttlekit_v1_multi` with leases plans and
//! commits exactly what the in-memory mirror (`store::multi_apply`) does, for every strategy and
//! both rules; a fleet of leased multi limiters, each on its own pool, admits exactly each
//! dimension's limit per coupled window; held credits outlive a stopped server, then the fail
//! policy decides.
#![cfg(feature = "postgres")]

#[path = "support/postgres_server.rs"]
mod postgres_server;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres_server::PostgresServer;
use throttlekit::postgres::{PostgresOptions, PostgresStore};
use throttlekit::store::{DimensionCall, DimensionLease, Store};
use throttlekit::{Dimension, FailPolicy, LeaseOptions, MemoryStore, Mode, MultiLimiter, Rule, Strategy};

fn connect(url: &str, timeout: Duration) -> Arc<PostgresStore> {
    let o = PostgresOptions { timeout, sweep_interval: None, pool_size: 2, ..PostgresOptions::new(url) };
    Arc::new(PostgresStore::connect_blocking(o).expect("connect"))
}

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
fn sql_multi_leases_match_the_in_memory_mirror() {
    let server = PostgresServer::start();
    let pg = connect(&server.url, Duration::from_secs(10));
    let t0 = 1_700_000_000_000i64;
    let mut granted = 0;
    for rule in [Rule::All, Rule::Any] {
        // Each strategy paired with a tighter fixed window, so both rules meet denials; the
        // third dimension repeats the first's key (each commit sees the ones before it).
        for (n, s) in strategies().iter().enumerate() {
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
                let a = memory.apply_multi_lease_sync(rule, &dims, &leases, now).unwrap();
                let b = pg.apply_multi_lease_sync(rule, &dims, &leases, now).unwrap();
                assert_eq!(a, b, "{rule:?} {} step {i}", s.kind());
                granted += a.grants.iter().filter(|g| g.granted > 0).count();
                // A check between leases sees the same state on both stores.
                let check = [DimensionCall { key: &keys[0], strategy: s, cost: 1 }];
                assert_eq!(
                    memory.apply_multi_sync(rule, &check, now + 1).unwrap(),
                    pg.apply_multi_sync(rule, &check, now + 1).unwrap(),
                    "{rule:?} {} check after step {i}",
                    s.kind()
                );
            }
        }
    }
    assert!(granted > 50, "the leases granted: {granted}");
    let call = [DimensionCall { key: "x", strategy: &strategies()[0], cost: 1 }];
    let e = pg.apply_multi_lease_sync(Rule::All, &call, &[], t0).unwrap_err();
    assert_eq!(e.code(), throttlekit::ErrorCode::ConfigInvalid, "{e}");
}

#[test]
fn a_coupled_multi_fleet_admits_exactly_each_limit_per_window() {
    let server = PostgresServer::start();
    let (n, run) = (3, Duration::from_millis(3_500));
    let options = LeaseOptions { batch: 6, window_coupled: true, ..LeaseOptions::default() };
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let dims = vec![
                Dimension::new("tenant", Strategy::fixed_window(40, 1_000).unwrap()),
                Dimension::new("user", Strategy::fixed_window(30, 1_000).unwrap()),
            ];
            // The server's clock (async path): with callers' clocks a statement delayed past the
            // next window's first one would reopen its window (docs/postgres.md, "Clocks").
            let m = MultiLimiter::new(Rule::All, dims)
                .unwrap()
                .with_store(connect(&server.url, Duration::from_secs(5)))
                .with_fail_policy(FailPolicy::Raise)
                .with_server_clock(true)
                .with_mode(Mode::Leased(options))
                .unwrap();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                let mut per = BTreeMap::<(i64, &str), u64>::new();
                let start = Instant::now();
                let mut k = i;
                while start.elapsed() < run {
                    k += 1;
                    let user = if k % 2 == 0 { "u0" } else { "u1" };
                    let d = rt.block_on(m.check(&["t", user], 1)).unwrap();
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
fn the_async_path_and_a_stopped_server_on_postgres() {
    let server = PostgresServer::start();
    let dims = vec![
        Dimension::new("ip", Strategy::fixed_window(100, 60_000).unwrap()),
        Dimension::new("user", Strategy::gcra(100, 60_000, None).unwrap()),
    ];
    let options = LeaseOptions { batch: 5, ..LeaseOptions::default() };
    let m = MultiLimiter::new(Rule::All, dims)
        .unwrap()
        .with_store(connect(&server.url, Duration::from_millis(1_000)))
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
