//! The dual-path proof: thousands of generated timelines — random arrivals, costs above the
//! limit, epoch-sized clocks, steps landing exactly on boundaries and expiry deadlines, backward
//! clock jumps, peeks, forecasts and resets — for every strategy, every quota cadence, multi
//! `all`/`any` over mixed kinds, and the shaper, run through the memory store and through the
//! Lua scripts on a real Redis. The two decision streams must be byte-equal.
//!
//! Redis runs in deterministic-replay mode so that expiry follows the timeline's clock.
#![cfg(feature = "redis")]

#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/timeline.rs"]
mod timeline;

use std::sync::Arc;

use throttlekit::redis::{RedisOptions, RedisStore, Scripting};
use throttlekit::{Dimension, Limiter, ManualClock, MemoryStore, MultiLimiter, Rule, Store, Strategy};
use timeline::{Rng, run_timeline};

/// Timelines per worker thread; four workers share the server.
const TIMELINES_PER_WORKER: u64 = 750;
const WORKERS: u64 = 4;

#[test]
fn memory_and_redis_decide_byte_for_byte_alike_on_generated_timelines() {
    let server = redis_server::RedisServer::start();
    let url = server.url();
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let url = url.clone();
            std::thread::spawn(move || {
                let options = RedisOptions {
                    urls: vec![url],
                    timeout_ms: 5000,
                    deterministic_replay: true,
                    ..RedisOptions::default()
                };
                let redis: Arc<dyn Store> = Arc::new(RedisStore::connect_blocking(options).expect("connect"));
                let mut ops = 0usize;
                for i in 0..TIMELINES_PER_WORKER {
                    let seed = w * TIMELINES_PER_WORKER + i;
                    let memory = run_timeline(seed, Arc::new(MemoryStore::new()));
                    let on_redis = run_timeline(seed, redis.clone());
                    if memory != on_redis {
                        let first = memory.lines().zip(on_redis.lines()).position(|(a, b)| a != b).unwrap_or(0);
                        panic!("timeline {seed} diverges at line {first}\n--- memory\n{memory}\n--- redis\n{on_redis}");
                    }
                    assert!(!memory.contains("Err("), "timeline {seed} hit an error:\n{memory}");
                    ops += memory.lines().count() - 1;
                }
                ops
            })
        })
        .collect();
    let ops: usize = workers.into_iter().map(|w| w.join().expect("a worker panicked")).sum();
    assert!(ops > 50_000, "only {ops} ops compared");
    eprintln!("{} timelines, {ops} ops: byte-equal", WORKERS * TIMELINES_PER_WORKER);
}

/// The lean paths of fixed-window multi checks (fixed_window.lua's `count` mode for one
/// dimension, multi.lua's for several: replies of counts from which core's Rust derives the
/// decisions, and no `PEXPIRE` when the window's key already holds the window) against the
/// general paths, on one real Redis in production mode (keys expire on Redis's own clock, not
/// the timeline's): the single-key check (the same `count` call since single-key checks send
/// it too, decoded as a decision), the fused multi script's six integers per dimension (a GCRA dimension that never binds, so the first decides), the
/// fused script's counts (a second fixed window that never binds), and the memory store; random sequences with costs above the limit,
/// steps within a window, to the next, across many and back, under `FCALL` and `EVALSHA`.
/// Odd seeds step back too; they are compared among the Redis paths only, since a key that the
/// memory store expired on the timeline's clock (a later window passed its deadline) still
/// lives on Redis's (the replay-mode proof above covers backward jumps against memory).
#[test]
fn a_one_dimension_fixed_window_multi_decides_as_the_general_paths() {
    let server = redis_server::RedisServer::start();
    // An hour's window, and every `now` in the first half of its window: each key written
    // lives at least half an hour on Redis's clock, longer than the test, so only the
    // timeline's own steps change windows (as on the memory store).
    const WINDOW: u64 = 3_600_000;
    let mut checked = 0;
    for scripting in [Scripting::Functions, Scripting::Eval] {
        let options = RedisOptions { urls: vec![server.url()], timeout_ms: 5000, scripting, ..RedisOptions::default() };
        let redis: Arc<dyn Store> = Arc::new(RedisStore::connect_blocking(options).expect("connect"));
        for seed in 0..150u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let limit = rng.range(1, 12);
            let s = Strategy::fixed_window(limit, WINDOW).unwrap();
            // (a GCRA allows what a step back of 80 windows leaves: tau is 1000 windows)
            let never_binds = Strategy::gcra(1_000_000_000, 1000 * WINDOW, None).unwrap();
            let never_binds_window = Strategy::fixed_window(1_000_000_000, WINDOW).unwrap();
            let clock = ManualClock::new(0);
            let prefix = format!("lean:{scripting:?}:{seed}");
            let multi = |store: &Arc<dyn Store>, dims: Vec<Dimension>, tag: &str| {
                MultiLimiter::new(Rule::All, dims)
                    .unwrap()
                    .with_store(store.clone())
                    .with_clock(Arc::new(clock.clone()))
                    .with_prefix(format!("{prefix}:{tag}"))
            };
            let lean = multi(&redis, vec![Dimension::new("w", s.clone())], "lean");
            let memory =
                multi(&(Arc::new(MemoryStore::new()) as Arc<dyn Store>), vec![Dimension::new("w", s.clone())], "mem");
            let fused = multi(&redis, vec![Dimension::new("w", s.clone()), Dimension::new("x", never_binds)], "fused");
            let counts =
                multi(&redis, vec![Dimension::new("w", s.clone()), Dimension::new("x", never_binds_window)], "counts");
            let single = Limiter::builder(s)
                .store(redis.clone())
                .clock(Arc::new(clock.clone()))
                .prefix(format!("{prefix}:single"))
                .build();
            let mut window = 470_000 + rng.below(1000) as i64;
            let back = seed % 2 == 1;
            for op in 0..rng.range(10, 40) {
                window = match rng.below(10) {
                    0..=5 => window,
                    6 | 7 => window + 1,
                    8 => window + rng.range(2, 30) as i64,
                    _ if back => window - rng.range(1, 2) as i64,
                    _ => window,
                };
                let now = window * WINDOW as i64 + rng.below(WINDOW / 2) as i64;
                let cost = if rng.chance(10) { rng.range(limit, limit + 2) } else { rng.range(1, 3) };
                let want = memory.check_sync_at(&["k"], cost, now).unwrap();
                let got = lean.check_sync_at(&["k"], cost, now).unwrap();
                if !back {
                    assert_eq!(got, want, "seed {seed} op {op} ({scripting:?}): the lean path against memory");
                }
                let general = single.check_sync_at("k", cost, now).unwrap();
                assert_eq!(got.decision, general, "seed {seed} op {op} ({scripting:?}): against the single-key check");
                let f = fused.check_sync_at(&["k", "j"], cost, now).unwrap();
                assert_eq!(
                    (f.decision.allowed, f.dimensions[0]),
                    (got.decision.allowed, got.decision),
                    "seed {seed} op {op} ({scripting:?}): against the fused script"
                );
                let c = counts.check_sync_at(&["k", "j"], cost, now).unwrap();
                assert_eq!(
                    (c.decision.allowed, c.dimensions[0]),
                    (got.decision.allowed, got.decision),
                    "seed {seed} op {op} ({scripting:?}): against the fused script's counts"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 5_000, "only {checked} ops compared");
}

#[test]
fn the_generator_covers_every_kind_and_backward_jumps() {
    // Guards the proof above against a generator that silently stopped producing some case.
    let mut seen = std::collections::BTreeSet::new();
    let mut backward = 0;
    for seed in 0..WORKERS * TIMELINES_PER_WORKER {
        let text = run_timeline(seed, Arc::new(MemoryStore::new()));
        let head = text.lines().next().unwrap_or("");
        for kind in [
            "shaper",
            "multi All",
            "multi Any",
            "Gcra",
            "TokenBucket",
            "FixedWindow",
            "SlidingWindow(",
            "SlidingWindowLog",
            "CalendarDay",
            "CalendarWeek",
            "CalendarMonth",
            "Fixed,",
            "Rolling",
        ] {
            if head.contains(kind) {
                seen.insert(kind);
            }
        }
        let times: Vec<i64> = text.lines().skip(1).filter_map(|l| l.split(' ').next()?.parse().ok()).collect();
        backward += times.windows(2).filter(|w| w[1] < w[0]).count();
    }
    assert_eq!(seen.len(), 13, "kinds seen: {seen:?}");
    assert!(backward > 1000, "only {backward} backward jumps");
}
