//! The adaptive limiter's hot path: `try_acquire` + `release` (core measures the round trip on
//! its monotonic clock), from 1 thread and from 8. Criterion-free: prints `ROW` lines for
//! `bench/summarize.py` (`bench/run.sh`, part `adaptive`), and the raw numbers.
//!
//! Run with `cargo bench -p throttlekit --bench adaptive`; `TK_BENCH_N` sets the operations per
//! thread (default 2,000,000).

use std::time::Instant;

use throttlekit::concurrency::{AdaptiveConfig, AdaptiveLimiter, AlgorithmKind, Outcome};

fn limiter() -> AdaptiveLimiter {
    // gradient2 with its defaults, and a limit that never falls below the threads' demand (a
    // preempted thread's round trip is a slow sample): every acquire is granted and every
    // release is a sample (windows close and the limit is updated as in production).
    let config = AdaptiveConfig {
        initial_limit: Some(64),
        min_limit: Some(64),
        min_rtt_us: Some(0),
        ..AdaptiveConfig::new(AlgorithmKind::Gradient2)
    };
    AdaptiveLimiter::new(config).expect("valid")
}

fn run(threads: usize, n: u64) -> f64 {
    let limiter = limiter();
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let l = &limiter;
            s.spawn(move || {
                for _ in 0..n {
                    let mut p = l.try_acquire(None).expect("ok").permit().expect("granted");
                    p.release(Outcome::Success);
                }
            });
        }
    });
    start.elapsed().as_nanos() as f64 / (n as f64 * threads as f64)
}

fn main() {
    let n: u64 = std::env::var("TK_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000_000);
    run(1, n / 10); // warm up
    let one = run(1, n);
    let eight = run(8, n / 4);
    println!("adaptive acquire+release: 1 thread {one:.1} ns/op; 8 threads {eight:.1} ns/op aggregate");
    println!(
        "ROW\tadaptive acquire + release, uncontended (gradient2)\t100 ns target\t{:.2}\t>=1\t{one:.1} ns per acquire + release",
        100.0 / one
    );
    println!(
        "ROW\tadaptive acquire + release, 8 threads (aggregate time per op)\tthe same on 1 thread\t{:.2}\t-\t{eight:.1} ns vs {one:.1} ns per op, {} cores",
        one / eight,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
}
