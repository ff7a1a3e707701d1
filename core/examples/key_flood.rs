//! Floods a memory store with distinct keys and prints resident memory as it goes: the Rust
//! leg of `scripts/key-flood.sh`.
//!
//! `cargo run --release -p throttlekit --example key_flood -- [KEYS] [default|unbounded|MAX_KEYS]`
//! prints `keys rss_kib store_len evictions` twenty times over the flood.
use std::fmt::Write;
use std::sync::Arc;

use throttlekit::{Limiter, ManualClock, MemoryStore, Strategy};

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("procfs");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).expect("value").parse().expect("KiB")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(10_000_000, |s| s.parse().expect("KEYS"));
    let store = Arc::new(match args.next().as_deref().unwrap_or("default") {
        "default" => MemoryStore::new(),
        "unbounded" => MemoryStore::with_max_keys(usize::MAX).expect("valid"),
        m => MemoryStore::with_max_keys(m.parse().expect("MAX_KEYS")).expect("valid"),
    });
    let limiter = Limiter::builder(Strategy::gcra(10, 60_000, Some(5)).expect("valid"))
        .store(store.clone())
        .clock(Arc::new(ManualClock::new(1_000_000)))
        .build();
    let step = (n / 20).max(1);
    let mut key = String::new();
    for i in 0..n {
        key.clear();
        write!(key, "user:{i}").expect("a String takes writes");
        limiter.check_sync(&key, 1).expect("a valid check");
        if (i + 1) % step == 0 {
            println!("{} {} {} {}", i + 1, rss_kib(), store.len(), store.evictions());
        }
    }
}
