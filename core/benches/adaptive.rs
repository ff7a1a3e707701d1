//! The adaptive limiter's hot path: `try_acquire` + `release` (core measures the round trip on
//! its monotonic clock), from 1 thread and from 8. Criterion-free: prints `ROW` lines for
//! `bench/summarize.py` (`bench/run.sh`, part `adaptive`), and the raw numbers.
//!
//! Run with `cargo bench -p throttlekit --bench adaptive`; `TK_BENCH_N` sets the operations per
//! thread (default 2,000,000).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use throttlekit::concurrency::{
    AdaptiveConfig, AdaptiveLimiter, AlgorithmKind, MonotonicClock, Outcome, Ticks, VirtualClock,
};

fn config() -> AdaptiveConfig {
    // gradient2 with its defaults, and a limit that never falls below the threads' demand (a
    // preempted thread's round trip is a slow sample): every acquire is granted and every
    // release is a sample (windows close and the limit is updated as in production).
    AdaptiveConfig {
        initial_limit: Some(64),
        min_limit: Some(64),
        min_rtt_us: Some(0),
        ..AdaptiveConfig::new(AlgorithmKind::Gradient2)
    }
}

fn run(threads: usize, n: u64) -> f64 {
    run_on(AdaptiveLimiter::new(config()).expect("valid"), threads, n)
}

/// The same loop on a virtual clock that a release moves by 1 µs: every decision as above
/// (the window still closes every 64 samples), without the two monotonic clock reads.
fn run_virtual(n: u64) -> f64 {
    let clock = VirtualClock::new(0);
    let limiter = AdaptiveLimiter::with_clock(config(), Arc::new(clock.clone())).expect("valid");
    let start = Instant::now();
    for _ in 0..n {
        let mut p = limiter.try_acquire(None).expect("ok").permit().expect("granted");
        clock.advance(1000);
        p.release(Outcome::Success);
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

/// One monotonic clock read, the kind an acquire + release makes two of.
fn clock_read(n: u64) -> f64 {
    let clock = MonotonicClock::default();
    let start = Instant::now();
    for _ in 0..n {
        black_box(clock.now_ns());
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

/// One thread in batches of 10,000 acquire + release pairs: the median batch's time per op. On a
/// loaded machine a batch the scheduler preempted is an outlier the median ignores, where the
/// mean of one long run counts it.
fn median_batch(n: u64) -> f64 {
    let limiter = AdaptiveLimiter::new(config()).expect("valid");
    const BATCH: u64 = 10_000;
    let mut times: Vec<f64> = (0..(n / BATCH).max(1))
        .map(|_| {
            let start = Instant::now();
            for _ in 0..BATCH {
                let mut p = limiter.try_acquire(None).expect("ok").permit().expect("granted");
                p.release(Outcome::Success);
            }
            start.elapsed().as_nanos() as f64 / BATCH as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn run_on(limiter: AdaptiveLimiter, threads: usize, n: u64) -> f64 {
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
    let two = run(2, n / 2);
    let virt = run_virtual(n);
    let clock = clock_read(n);
    let median = median_batch(n);
    println!(
        "adaptive acquire+release: 1 thread {one:.1} ns/op; 2 threads {two:.1}; 8 threads {eight:.1} ns/op aggregate"
    );
    println!(
        "  breakdown (same run): one monotonic clock read {clock:.1} ns (two per op); on a virtual clock (no clock reads, \
         one atomic add) {virt:.1} ns/op; 1 thread, median of 10,000-op batches {median:.1} ns/op"
    );
    println!(
        "ROW\tadaptive acquire + release, uncontended (gradient2)\t100 ns target\t{:.2}\t>=1\t{median:.1} ns per acquire + release (median 10,000-op batch; mean of one run {one:.1})",
        100.0 / median
    );
    println!(
        "ROW\tadaptive acquire + release, 8 threads (aggregate time per op)\tthe same on 1 thread\t{:.2}\t-\t{eight:.1} ns vs {one:.1} ns per op, {} cores",
        one / eight,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "ROW\tadaptive acquire + release, 2 threads (aggregate time per op)\tthe same on 1 thread\t{:.2}\t-\t{two:.1} ns vs {one:.1} ns per op",
        one / two
    );
}
