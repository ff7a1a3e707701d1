//! The leased and cached-deny modes on Postgres: leases and give-backs grant exactly what the
//! in-memory mirror (`lease::grant`) does on random sequences for every strategy; a fleet of
//! leased limiters, each on its own pool, admits exactly the limit per window when coupled, and a
//! cached-deny fleet never more.
#![cfg(feature = "postgres")]

#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/postgres_server.rs"]
mod postgres_server;
#[path = "support/timelines.rs"]
mod timelines;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use postgres_server::PostgresServer;
use throttlekit::postgres::{PostgresOptions, PostgresStore};
use throttlekit::spec::{QuotaOptions, ResetCadence};
use throttlekit::store::{Now, Reply, Store, Transform};
use throttlekit::{FailPolicy, LeaseOptions, Limiter, MemoryStore, Mode, Strategy};
use timelines::Rng;

fn connect(url: &str) -> Arc<PostgresStore> {
    let o = PostgresOptions { timeout: Duration::from_secs(10), sweep_interval: None, ..PostgresOptions::new(url) };
    Arc::new(PostgresStore::connect_blocking(o).expect("connect"))
}

fn strategies() -> Vec<Strategy> {
    let quota = |cadence, period_ms| QuotaOptions {
        limit: 20.0,
        reset_cadence: cadence,
        period_ms,
        anchor: None,
        offset_minutes: None,
        week_starts_on: None,
        buckets: None,
    };
    vec![
        Strategy::gcra(20, 1_000, Some(12)).unwrap(),
        Strategy::token_bucket(12, 20.0).unwrap(),
        Strategy::fixed_window(20, 1_000).unwrap(),
        Strategy::sliding_window(20, 1_000, Some(4)).unwrap(),
        Strategy::sliding_window_log(20, 1_000).unwrap(),
        Strategy::quota(quota(ResetCadence::Fixed, Some(1_000.0))).unwrap(),
        Strategy::quota(quota(ResetCadence::CalendarDay, None)).unwrap(),
    ]
}

#[test]
fn leases_and_give_backs_grant_as_the_in_memory_mirror_does() {
    let server = PostgresServer::start();
    let pg = connect(&server.url);
    let mut compared = 0;
    for seed in 0..60u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let memory = MemoryStore::new();
        for (n, s) in strategies().iter().enumerate() {
            let key = format!("lease:{seed}:{n}");
            let mut now = 1_700_000_000_000 + rng.below(10_000) as i64;
            let mut last_reset = now;
            for i in 0..30 {
                now += match rng.below(10) {
                    0 => -(rng.below(300) as i64),
                    1 => 1_000 + rng.below(2_000) as i64,
                    _ => rng.below(120) as i64,
                };
                let cost = rng.range(1, 3);
                let lifetime_ms = if rng.chance(50) { 0 } else { 700 };
                let t = match rng.below(4) {
                    0 => Transform::GiveBack {
                        strategy: s,
                        units: rng.range(1, 4),
                        reset_at: if rng.chance(80) { last_reset } else { now + 5 },
                    },
                    1 => Transform::Check { strategy: s, cost },
                    _ => Transform::Lease { strategy: s, cost, want: cost + rng.below(9), lifetime_ms },
                };
                let a = memory.apply_sync(&key, Now::At(now), t).expect("memory");
                let b = pg.apply_sync(&key, Now::At(now), t).expect("postgres");
                assert_eq!(a, b, "seed {seed} {} op {i} {t:?} at {now}", s.kind());
                if let Reply::Grant(g) = a
                    && g.granted > 0
                    && g.reset_at > 0
                {
                    last_reset = g.reset_at;
                }
                compared += 1;
            }
        }
    }
    assert!(compared > 10_000);
}

/// `n` leased limiters, each on its own pool, check one key for `run`; admissions per window.
/// On the server's clock: with callers' clocks a statement delayed past the next window's
/// first one would reopen its window (docs/postgres.md, "Clocks").
fn fleet(url: &str, strategy: &Strategy, mode: Mode, n: usize, run: Duration) -> BTreeMap<i64, u64> {
    let limiters = (0..n)
        .map(|_| {
            Limiter::builder(strategy.clone())
                .store(connect(url))
                .prefix("fleet")
                .fail_policy(FailPolicy::Raise)
                .server_clock(true)
                .mode(mode)
                .unwrap()
                .build()
        })
        .collect();
    fleet::admissions_per_window(limiters, run)
}

#[test]
fn a_coupled_leased_fleet_and_a_cached_deny_fleet_admit_exactly_the_limit_per_window() {
    let server = PostgresServer::start();
    // Windows of 1 s: room for four debug-build limiters on a loaded machine to reach the limit.
    let s = Strategy::fixed_window(60, 1_000).unwrap();
    let leased = Mode::Leased(LeaseOptions { batch: 8, window_coupled: true, ..LeaseOptions::default() });
    for mode in [leased, Mode::CachedDeny { max_keys: 100 }] {
        let windows = fleet(&server.url, &s, mode, 4, Duration::from_millis(3_500));
        let counts: Vec<u64> = windows.values().copied().collect();
        assert!(counts.len() >= 3, "{mode:?} {windows:?}");
        assert!(counts.iter().all(|&c| c <= 60), "{mode:?}: never above the limit: {windows:?}");
        if let Mode::Leased(_) = mode {
            // Every window from the fleet's start to its end (the first and last are partial):
            // batches of 8 saturate each one.
            assert!(counts[1..counts.len() - 1].iter().all(|&c| c == 60), "{mode:?}: exactly the limit: {windows:?}");
        } else {
            // One round trip a check: a loaded machine may not reach the limit in every window.
            assert!(counts.contains(&60), "{mode:?}: the limit is reached: {windows:?}");
        }
    }
}
