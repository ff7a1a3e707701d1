//! `check_sync` on the in-memory store: GCRA on 1 key, on 1M keys, and from 2 threads; and the
//! same 1-key and 1M-key checks with the limiter's metrics on (`check_sync/metrics`).
//!
//! Run with `cargo bench -p throttlekit --bench check_sync`. Peer comparisons (governor and the
//! others) live in `bench/`, which measures them in the same run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use throttlekit::{Limiter, ManualClock, MemoryStore, Strategy};

const KEYS: usize = 1_000_000;

fn limiter(clock: &ManualClock) -> Limiter {
    limiter_with_metrics(clock, false)
}

fn limiter_with_metrics(clock: &ManualClock, metrics: bool) -> Limiter {
    // Generous, so every check takes the full allowed path (read and write the state). The
    // store is unbounded: 1M keys exceed the default bound, and this measures checks, not
    // evictions.
    Limiter::builder(Strategy::gcra(1_000_000_000, 1000, Some(1_000_000_000)).expect("valid"))
        .store(Arc::new(MemoryStore::with_max_keys(usize::MAX).expect("valid")))
        .clock(Arc::new(clock.clone()))
        .metrics(metrics)
        .build()
}

fn keys() -> Vec<String> {
    (0..KEYS).map(|i| format!("user:{:016x}", (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))).collect()
}

fn bench(c: &mut Criterion) {
    let clock = ManualClock::new(1_700_000_000_000);
    let mut group = c.benchmark_group("check_sync/gcra");
    group.measurement_time(Duration::from_secs(3));

    let one = limiter(&clock);
    group.bench_function("1 key", |b| b.iter(|| one.check_sync("user:1", 1).expect("ok")));

    let many = limiter(&clock);
    let keys = keys();
    for k in &keys {
        many.check_sync(k, 1).expect("ok");
    }
    let mut i = 0usize;
    group.bench_function("1M keys", |b| {
        b.iter(|| {
            i = (i + 7919) % KEYS;
            many.check_sync(&keys[i], 1).expect("ok")
        })
    });

    group.bench_function("1M keys, 2 threads (time per op, aggregate)", |b| {
        b.iter_custom(|iters| {
            let per_thread = iters.div_ceil(2);
            let start = Instant::now();
            std::thread::scope(|s| {
                for t in 0..2u64 {
                    let (many, keys) = (&many, &keys);
                    s.spawn(move || {
                        let mut i = (t as usize) * 500_000;
                        for _ in 0..per_thread {
                            i = (i + 7919) % KEYS;
                            many.check_sync(&keys[i], 1).expect("ok");
                        }
                    });
                }
            });
            start.elapsed()
        })
    });
    group.finish();
}

/// The cost of metrics on the fast path: the same checks with metrics off and on, side by side.
fn bench_metrics(c: &mut Criterion) {
    let clock = ManualClock::new(1_700_000_000_000);
    let mut group = c.benchmark_group("check_sync/metrics");
    group.measurement_time(Duration::from_secs(3));
    let keys = keys();
    for on in [false, true] {
        let label = if on { "on" } else { "off" };
        let one = limiter_with_metrics(&clock, on);
        group
            .bench_function(format!("1 key, metrics {label}"), |b| b.iter(|| one.check_sync("user:1", 1).expect("ok")));
        let many = limiter_with_metrics(&clock, on);
        for k in &keys {
            many.check_sync(k, 1).expect("ok");
        }
        let mut i = 0usize;
        group.bench_function(format!("1M keys, metrics {label}"), |b| {
            b.iter(|| {
                i = (i + 7919) % KEYS;
                many.check_sync(&keys[i], 1).expect("ok")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench, bench_metrics);
criterion_main!(benches);
