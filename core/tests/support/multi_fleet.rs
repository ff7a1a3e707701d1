//! The leased multi limiter's proofs on a shared store (Redis, Postgres): the strategies its
//! mirror comparisons run over, and a window-coupled fleet of multi limiters over a tenant and
//! two users that must admit exactly the tenant's limit in every inner window.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use throttlekit::store::Store;
use throttlekit::{Dimension, FailPolicy, LeaseOptions, Mode, MultiLimiter, Rule, Strategy};

/// One of each strategy a multi lease plans over, with limits small enough to meet denials.
pub fn strategies() -> Vec<Strategy> {
    vec![
        Strategy::gcra(20, 1_000, Some(12)).unwrap(),
        Strategy::token_bucket(12, 20.0).unwrap(),
        Strategy::fixed_window(20, 1_000).unwrap(),
        Strategy::sliding_window(20, 1_000, Some(4)).unwrap(),
        Strategy::sliding_window_log(20, 1_000).unwrap(),
    ]
}

/// Three leased (batch 6, window-coupled) multi limiters, one store each from `store`, over
/// `tenant` (40 a window) and `user` (30 a window, two users) for `run`; asserts that no window
/// admits more than its limit and every inner one exactly the tenant's (2 × 30 > 40 binds it).
/// `server_clock` checks through the async path on the store's clock, else `check_sync`.
pub fn coupled_fleet(store: impl Fn() -> Arc<dyn Store>, window_ms: u64, run: Duration, server_clock: bool) {
    let options = LeaseOptions { batch: 6, window_coupled: true, ..LeaseOptions::default() };
    let threads: Vec<_> = (0..3)
        .map(|i| {
            let dims = vec![
                Dimension::new("tenant", Strategy::fixed_window(40, window_ms).unwrap()),
                Dimension::new("user", Strategy::fixed_window(30, window_ms).unwrap()),
            ];
            let m = MultiLimiter::new(Rule::All, dims)
                .unwrap()
                .with_store(store())
                .with_fail_policy(FailPolicy::Raise)
                .with_server_clock(server_clock)
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
                    let d = match server_clock {
                        true => rt.block_on(m.check(&["t", user], 1)),
                        false => m.check_sync(&["t", user], 1),
                    };
                    let d = d.unwrap();
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
    // The inner windows (the first and last are partial).
    assert!(tenant[1..tenant.len() - 1].iter().all(|&c| c == 40), "exactly the limit: {total:?}");
}
