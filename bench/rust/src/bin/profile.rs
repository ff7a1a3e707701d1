//! One scenario for a profiler: `profile <one|many|order|denied|gov-one|gov-many|gov-order|log-order|log-hot|lapse> [ops]`
//! (the `gov-` ones run governor on the same workload; `log-order` and `log-hot` the
//! sliding-window log in the shapes of the Python bench's memory rows, 100k keys under 100 a
//! minute and 1k hot keys over 10 a second; `lapse` GCRA at 10^9 a second, so every key is at
//! full capacity again, its state expired, by its next visit)
//! (e.g. `valgrind --tool=callgrind target/release/profile many 200000`). `many` strides over
//! the keys, so each call also misses on the key's own `String`; `order` visits them in a
//! shuffled order in which they were allocated, as the bench's 100k-keys row does, so the
//! store's lines are the only cold ones (`perf record -e cpu-clock`: where the time waits).

use std::hint::black_box;
use std::sync::Arc;

use throttlekit::{Limiter, MemoryStore, Strategy};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map_or("one", String::as_str);
    let ops: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let strategy = match what {
        "denied" => Strategy::gcra(1, 3_600_000, Some(1)),
        "log-order" => Strategy::sliding_window_log(100, 60_000),
        "log-hot" => Strategy::sliding_window_log(10, 1000),
        "lapse" => Strategy::gcra(1_000_000_000, 1000, Some(1_000_000_000)),
        _ => Strategy::gcra(3600, 3_600_000, Some(1_000_000_000)),
    };
    let l = Limiter::builder(strategy.unwrap()).store(Arc::new(MemoryStore::new())).build();
    let keys: Vec<String> = (0..100_000u64)
        .map(|i| format!("user:{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17)))
        .collect();
    for k in &keys {
        l.check_sync(k, 1).unwrap();
    }
    let quota = governor::Quota::per_hour(std::num::NonZeroU32::new(3600).unwrap())
        .allow_burst(std::num::NonZeroU32::new(1_000_000_000).unwrap());
    let gov_keyed = governor::RateLimiter::keyed(quota);
    let gov_direct = governor::RateLimiter::direct(quota);
    if what == "gov-many" || what == "gov-order" {
        for k in &keys {
            let _ = gov_keyed.check_key(k);
        }
    }
    // The keys again, shuffled (a fixed multiplicative permutation of 100,000) and allocated
    // in that order.
    let order: Vec<String> = (0..keys.len()).map(|i| keys[(i * 7919) % keys.len()].clone()).collect();
    let start = std::time::Instant::now();
    let cpu_start = thread_cpu_ns();
    match what {
        "gov-one" => {
            for _ in 0..ops {
                black_box(gov_direct.check().is_ok());
            }
        }
        "gov-many" => {
            let mut i = 0usize;
            for _ in 0..ops {
                i = (i + 7919) % keys.len();
                black_box(gov_keyed.check_key(black_box(&keys[i])).is_ok());
            }
        }
        "order" | "log-order" | "lapse" => {
            for k in order.iter().cycle().take(ops) {
                black_box(l.check_sync(black_box(k), 1).unwrap());
            }
        }
        "gov-order" => {
            for k in order.iter().cycle().take(ops) {
                black_box(gov_keyed.check_key(black_box(k)).is_ok());
            }
        }
        "log-hot" => {
            for k in order[..1000].iter().cycle().take(ops) {
                black_box(l.check_sync(black_box(k), 1).unwrap());
            }
        }
        "one" => {
            for _ in 0..ops {
                black_box(l.check_sync(black_box("user:1"), 1).unwrap());
            }
        }
        _ => {
            let mut i = 0usize;
            for _ in 0..ops {
                i = (i + 7919) % keys.len();
                black_box(l.check_sync(black_box(&keys[i]), 1).unwrap());
            }
        }
    }
    let cpu = thread_cpu_ns() - cpu_start;
    eprintln!(
        "{what}: {:.1} ns/op ({:.1} ns/op thread CPU time)",
        start.elapsed().as_nanos() as f64 / ops as f64,
        cpu / ops as f64
    );
}

/// This thread's CPU time in ns (`CLOCK_THREAD_CPUTIME_ID`): on a loaded machine, the time the
/// checks ran, without the time the thread waited for a core.
fn thread_cpu_ns() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a valid out pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}
