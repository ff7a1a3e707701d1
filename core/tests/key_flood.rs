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

/// A store that checks nothing itself and records every key it is given: what the limiters
/// let through to a store that is not the memory store (Redis, or a user's own).
#[derive(Default)]
struct Recording {
    inner: MemoryStore,
    seen: std::sync::Mutex<Vec<usize>>,
}

impl Recording {
    fn saw(&self, key: &str) {
        self.seen.lock().unwrap().push(key.len());
    }
}

impl throttlekit::Store for Recording {
    fn apply<'a>(
        &'a self,
        key: &'a str,
        now: throttlekit::store::Now,
        t: throttlekit::store::Transform<'a>,
    ) -> throttlekit::store::BoxFuture<'a, throttlekit::Result<throttlekit::store::Reply>> {
        self.saw(key);
        self.inner.apply(key, now, t)
    }
    fn apply_sync(
        &self,
        key: &str,
        now: throttlekit::store::Now,
        t: throttlekit::store::Transform<'_>,
    ) -> throttlekit::Result<throttlekit::store::Reply> {
        self.saw(key);
        self.inner.apply_sync(key, now, t)
    }
    fn apply_multi<'a>(
        &'a self,
        r: throttlekit::Rule,
        d: &'a [throttlekit::store::DimensionCall<'a>],
        now: throttlekit::store::Now,
    ) -> throttlekit::store::BoxFuture<'a, throttlekit::Result<throttlekit::store::MultiReply>> {
        d.iter().for_each(|c| self.saw(c.key));
        self.inner.apply_multi(r, d, now)
    }
    fn apply_multi_sync(
        &self,
        r: throttlekit::Rule,
        d: &[throttlekit::store::DimensionCall<'_>],
        now: throttlekit::store::Now,
    ) -> throttlekit::Result<throttlekit::store::MultiReply> {
        d.iter().for_each(|c| self.saw(c.key));
        self.inner.apply_multi_sync(r, d, now)
    }
    fn reset<'a>(&'a self, key: &'a str) -> throttlekit::store::BoxFuture<'a, throttlekit::Result<()>> {
        self.saw(key);
        self.inner.reset(key)
    }
    fn reset_sync(&self, key: &str) -> throttlekit::Result<()> {
        self.saw(key);
        self.inner.reset_sync(key)
    }
    fn is_sync(&self) -> bool {
        true
    }
}

#[test]
fn every_store_gets_the_same_key_length_rule_before_it_sees_a_key() {
    use throttlekit::{Dimension, LeakyBucketOptions, MultiLimiter, Rule, Shaper};
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let store = Arc::new(Recording::default());
    assert_eq!(throttlekit::Store::max_key_length(&*store), 256, "the default, as on the memory store");
    let limiter = Limiter::builder(Strategy::fixed_window(10, 1000).unwrap()).store(store.clone()).prefix("p").build();
    // "p:" + 254 bytes is exactly 256: accepted; one byte more is refused on every path.
    let (fits, long) = ("k".repeat(254), "k".repeat(255));
    assert!(limiter.check_sync(&fits, 1).unwrap().allowed);
    let multi = MultiLimiter::new(Rule::All, vec![Dimension::new("d", Strategy::fixed_window(10, 1000).unwrap())])
        .unwrap()
        .with_store(store.clone());
    let shaper = Shaper::new(&LeakyBucketOptions { rate_per_sec: 10.0, max_queue_ms: 1000.0 })
        .unwrap()
        .with_store(store.clone())
        .with_prefix("p");
    let seen_before = store.seen.lock().unwrap().len();
    let errors = vec![
        limiter.check_sync(&long, 1).unwrap_err(),
        limiter.peek_sync(&long).unwrap_err(),
        limiter.forecast_sync(&long, 1).unwrap_err(),
        limiter.reset_sync(&long).unwrap_err(),
        rt.block_on(limiter.check(&long, 1)).unwrap_err(),
        rt.block_on(limiter.peek(&long)).unwrap_err(),
        rt.block_on(limiter.reset(&long)).unwrap_err(),
        // The multi key is "{tk}:d:" + key: 7 + 250 = 257 bytes.
        multi.check_sync(&[&"k".repeat(250)], 1).unwrap_err(),
        rt.block_on(multi.check(&[&"k".repeat(250)], 1)).unwrap_err(),
        multi.reset_sync(&[&"k".repeat(250)]).unwrap_err(),
        shaper.reserve_sync(&long, 1).unwrap_err(),
        rt.block_on(shaper.reserve(&long, 1)).unwrap_err(),
        shaper.reset_sync(&long).unwrap_err(),
    ];
    for err in errors {
        assert_eq!(err.code(), throttlekit::ErrorCode::ConfigInvalid, "{err}");
        assert!(err.message().contains("at most 256 bytes") && err.message().contains("got 257"), "{err}");
    }
    assert_eq!(store.seen.lock().unwrap().len(), seen_before, "the store saw none of the refused keys");
    // The multi limiter's longest accepted key is exactly 256 bytes too.
    assert!(multi.check_sync(&[&"k".repeat(249)], 1).unwrap().decision.allowed);
    assert_eq!(store.seen.lock().unwrap().last(), Some(&256));
}
