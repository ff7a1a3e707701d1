//! What metrics cost on the fast path: `check_sync` (GCRA, memory store) with metrics off and on,
//! interleaved round by round so both see the same machine load; prints the median ns/op of
//! each and their ratio. `cargo run --release -p throttlekit --example metrics_cost`.
//! (The criterion bench `check_sync/metrics` measures the same pair one after the other.)
use std::sync::Arc;
use std::time::Instant;

use throttlekit::{Limiter, ManualClock, MemoryStore, Strategy};

fn limiter(clock: &ManualClock, metrics: bool) -> Limiter {
    Limiter::builder(Strategy::gcra(1_000_000_000, 1000, Some(1_000_000_000)).expect("valid"))
        .store(Arc::new(MemoryStore::new()))
        .clock(Arc::new(clock.clone()))
        .metrics(metrics)
        .build()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let clock = ManualClock::new(1_700_000_000_000);
    let keys: Vec<String> =
        (0..100_000u64).map(|i| format!("user:{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15))).collect();
    for (label, n_keys) in [("1 key", 1usize), ("100k keys", keys.len())] {
        let (off, on) = (limiter(&clock, false), limiter(&clock, true));
        for k in &keys[..n_keys] {
            off.check_sync(k, 1).expect("ok");
            on.check_sync(k, 1).expect("ok");
        }
        let (mut t_off, mut t_on) = (Vec::new(), Vec::new());
        const OPS: usize = 1_000_000;
        for round in 0..40 {
            for (l, out) in if round % 2 == 0 {
                [(&off, &mut t_off), (&on, &mut t_on)]
            } else {
                [(&on, &mut t_on), (&off, &mut t_off)]
            } {
                let mut i = 0usize;
                let start = Instant::now();
                for _ in 0..OPS {
                    i = (i + 7919) % n_keys;
                    std::hint::black_box(l.check_sync(&keys[i], 1).expect("ok"));
                }
                out.push(start.elapsed().as_nanos() as f64 / OPS as f64);
            }
        }
        let (a, b) = (median(t_off), median(t_on));
        println!("{label}: metrics off {a:.1} ns, on {b:.1} ns: {:+.1} %", (b / a - 1.0) * 100.0);
    }
}
