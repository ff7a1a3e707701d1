//! A fleet of limiters on one hot key, each checking from a thread of its own: the admissions
//! per window (by each decision's `reset_at`), for the leased-mode proofs on a shared store.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use throttlekit::Limiter;

/// Every limiter checks `hot` for `run`; the admissions per `reset_at`, summed over the fleet.
pub fn admissions_per_window(limiters: Vec<Limiter>, run: Duration) -> BTreeMap<i64, u64> {
    let threads: Vec<_> = limiters
        .into_iter()
        .map(|limiter| {
            std::thread::spawn(move || {
                let mut per_window = BTreeMap::new();
                let start = Instant::now();
                while start.elapsed() < run {
                    let d = limiter.check_sync("hot", 1).unwrap();
                    if d.allowed {
                        *per_window.entry(d.reset_at).or_insert(0u64) += 1;
                    }
                }
                per_window
            })
        })
        .collect();
    let mut total = BTreeMap::new();
    for t in threads {
        for (w, c) in t.join().unwrap() {
            *total.entry(w).or_insert(0) += c;
        }
    }
    total
}
