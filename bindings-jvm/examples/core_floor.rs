//! Core's `check_sync` alone on the JVM bench's 100k-keys pattern: the floor under the bench's
//! "100k keys" rows with no JVM, no JNI and no peer in the process (docs/bench-jvm.md).
//!
//! `cargo run --release -p throttlekit-jvm --example core_floor -- [THREADS] [ROUNDS] [fence]`
//!
//! The keys are `user:0` .. `user:99999`, visited in order (thread t starts 7919 keys further
//! on, as JvmBench's 2-thread row), GCRA at 10^9/s with a burst of 10^9 (every call admitted);
//! prints the median and the range of CPU ns a call over the rounds (the threads'
//! `/proc/thread-self/schedstat` run time over their calls). With `fence`, a full fence follows
//! each call, as the JNI stub's return to Java makes.

use std::sync::Arc;
use std::sync::atomic::{Ordering, fence};

use throttlekit::{Limiter, Strategy};

/// The calling thread's CPU time so far, in ns (Linux).
fn cpu_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    s.split_whitespace().next().and_then(|v| v.parse().ok()).expect("schedstat's first field")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().map_or(1, |a| a.parse().expect("THREADS"));
    let rounds: usize = args.next().map_or(5, |a| a.parse().expect("ROUNDS"));
    let fenced = args.next().is_some_and(|a| a == "fence");
    let keys: Arc<Vec<String>> = Arc::new((0..100_000).map(|i| format!("user:{i}")).collect());
    let strategy = Strategy::gcra(1_000_000_000, 1000, Some(1_000_000_000)).expect("strategy");
    let limiter = Arc::new(Limiter::builder(strategy).build());
    let n = 1_000_000 / threads;
    let mut per_call = Vec::new();
    // Round 0 fills the table and is not counted.
    for round in 0..=rounds {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (limiter, keys) = (limiter.clone(), keys.clone());
                std::thread::spawn(move || {
                    let c0 = cpu_ns();
                    let mut sum = 0i64;
                    for i in 0..n {
                        sum += limiter.check_sync(&keys[(i + t * 7919) % keys.len()], 1).expect("check").remaining;
                        if fenced {
                            fence(Ordering::SeqCst);
                        }
                    }
                    std::hint::black_box(sum);
                    cpu_ns() - c0
                })
            })
            .collect();
        let cpu: u64 = workers.into_iter().map(|w| w.join().expect("worker")).sum();
        if round > 0 {
            per_call.push(cpu as f64 / (n * threads) as f64);
        }
    }
    per_call.sort_by(f64::total_cmp);
    println!(
        "core alone, {threads} thread(s){}: median {:.1} ns of CPU a call [{:.1}..{:.1}]",
        if fenced { ", a fence after each call" } else { "" },
        per_call[per_call.len() / 2],
        per_call[0],
        per_call[per_call.len() - 1]
    );
}
