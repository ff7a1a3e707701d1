//! A flood of distinct keys against a default `MemoryStore` keeps resident memory flat at the
//! documented bound (`MemoryLimits::DEFAULT_MAX_KEYS`, about 110 MB).
//!
//! The flood runs in a child process (this test binary re-run with `TK_FLOOD_KEYS` set), so
//! `VmRSS` measures the store and nothing another test allocated. CI floods 3 million keys,
//! more than three times the bound (`TK_FLOOD_TOTAL` changes it); `scripts/key-flood.sh` floods 10 million in every language.

use std::process::Command;
use std::sync::Arc;

use throttlekit::{Limiter, ManualClock, MemoryLimits, MemoryStore, Strategy};

/// Resident memory a default store may reach at its bound, with the test process's own baseline.
const DOCUMENTED_CEILING_KIB: u64 = 120 * 1024;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("procfs");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS line");
    line.split_whitespace().nth(1).expect("value").parse().expect("KiB")
}

/// The child: floods, then prints `rss_at_2x_bound rss_at_end len evictions`.
fn flood(keys: u64) {
    let store = Arc::new(MemoryStore::new());
    let clock = ManualClock::new(1_000_000);
    let limiter = Limiter::builder(Strategy::gcra(10, 60_000, Some(5)).unwrap())
        .store(store.clone())
        .clock(Arc::new(clock))
        .prefix("flood")
        .build();
    let settled_at = 2 * MemoryLimits::DEFAULT_MAX_KEYS as u64;
    let mut rss_settled = 0;
    let mut key = String::new();
    for i in 0..keys {
        use std::fmt::Write;
        key.clear();
        write!(key, "user:{i}").unwrap();
        assert!(limiter.check_sync(&key, 1).unwrap().allowed);
        if i + 1 == settled_at {
            rss_settled = rss_kib();
        }
    }
    println!("{rss_settled} {} {} {}", rss_kib(), store.len(), store.evictions());
}

#[test]
fn a_flood_of_distinct_keys_keeps_a_default_store_flat_at_its_bound() {
    if let Ok(keys) = std::env::var("TK_FLOOD_KEYS") {
        return flood(keys.parse().expect("TK_FLOOD_KEYS"));
    }
    let keys: u64 = std::env::var("TK_FLOOD_TOTAL").map_or(3_000_000, |n| n.parse().expect("TK_FLOOD_TOTAL"));
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_flood_of_distinct_keys_keeps_a_default_store_flat_at_its_bound", "--nocapture"])
        .env("TK_FLOOD_KEYS", keys.to_string())
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout.lines().find(|l| l.split(' ').count() == 4 && l.chars().all(|c| c.is_ascii_digit() || c == ' '));
    let v: Vec<u64> = line.expect("a result line").split(' ').map(|x| x.parse().unwrap()).collect();
    let (settled, end, len, evictions) = (v[0], v[1], v[2], v[3]);
    let bound = MemoryLimits::DEFAULT_MAX_KEYS as u64;
    println!("rust flood of {keys} keys: settled {settled} KiB, end {end} KiB, {len} held, {evictions} evictions");
    assert!(len <= bound, "{len} keys held, bound {bound}");
    assert!(evictions >= keys - bound, "{evictions} evictions for {keys} keys");
    assert!(end <= DOCUMENTED_CEILING_KIB, "{end} KiB resident, documented ceiling {DOCUMENTED_CEILING_KIB} KiB");
    // Flat: another million keys past the settled point add at most 2 %.
    assert!(end <= settled + settled / 50, "resident memory grew from {settled} to {end} KiB");
}

#[test]
fn a_key_longer_than_the_limit_is_config_invalid_on_every_path() {
    let store = Arc::new(MemoryStore::with_limits(MemoryLimits { max_keys: 1000, max_key_length: 16 }).unwrap());
    let gcra = Limiter::builder(Strategy::gcra(10, 1000, None).unwrap()).store(store.clone()).prefix("p").build();
    let window = Limiter::builder(Strategy::fixed_window(10, 1000).unwrap()).store(store.clone()).build();
    // "p:" + 14 bytes is exactly 16: accepted.
    assert!(gcra.check_sync(&"k".repeat(14), 1).unwrap().allowed);
    assert!(window.check_sync(&"k".repeat(16), 1).unwrap().allowed);
    for err in [
        gcra.check_sync(&"k".repeat(15), 1).unwrap_err(),
        gcra.peek_sync(&"k".repeat(15)).unwrap_err(),
        gcra.reset_sync(&"k".repeat(15)).unwrap_err(),
        window.check_sync(&"k".repeat(17), 1).unwrap_err(),
        window.forecast_sync(&"k".repeat(1 << 20), 1).unwrap_err(),
    ] {
        assert_eq!(err.code(), throttlekit::ErrorCode::ConfigInvalid, "{err}");
        assert!(err.message().contains("maxKeyLength"), "{err}");
    }
    assert_eq!(store.len(), 2, "nothing stored for a rejected key");
}

#[test]
fn the_default_limits_are_the_documented_ones() {
    let limits = MemoryStore::new().limits();
    assert_eq!(limits, MemoryLimits::default());
    assert_eq!(limits.max_keys, 917_504);
    assert_eq!(limits.max_key_length, 256);
    let key = "k".repeat(256);
    let l = Limiter::new(Strategy::gcra(1, 1000, None).unwrap());
    assert!(l.check_sync(&key, 1).is_ok());
    assert_eq!(l.check_sync(&format!("{key}k"), 1).unwrap_err().code(), throttlekit::ErrorCode::ConfigInvalid);
    for bad in [MemoryLimits { max_keys: 0, ..limits }, MemoryLimits { max_key_length: 0, ..limits }] {
        assert_eq!(MemoryStore::with_limits(bad).unwrap_err().code(), throttlekit::ErrorCode::ConfigInvalid);
    }
}

#[test]
fn evictions_count_live_keys_pushed_out_by_the_bound() {
    let store = Arc::new(MemoryStore::with_max_keys(64).unwrap());
    let clock = ManualClock::new(0);
    let l = Limiter::builder(Strategy::gcra(10, 60_000, None).unwrap())
        .store(store.clone())
        .clock(Arc::new(clock.clone()))
        .build();
    for i in 0..64 {
        l.check_sync(&format!("k{i}"), 1).unwrap();
    }
    assert_eq!(store.evictions(), 0);
    for i in 64..164 {
        l.check_sync(&format!("k{i}"), 1).unwrap();
    }
    assert_eq!(store.evictions(), 100);
    assert_eq!(store.len(), 64);
    // Expired keys pushed out are not evictions: their state was gone anyway.
    clock.advance(120_000).unwrap();
    for i in 164..214 {
        l.check_sync(&format!("k{i}"), 1).unwrap();
    }
    assert_eq!(store.evictions(), 100);
}
