//! The limiter's wiring: sync and async agree, prefixes isolate, the clock is read once per
//! call, stores expire on the injected clock, and errors carry stable codes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use throttlekit::store::{BoxFuture, DimensionCall, MultiReply, Now, Reply, Transform};
use throttlekit::{
    Clock, Dimension, ErrorCode, FailPolicy, Limiter, ManualClock, MemoryStore, MultiLimiter, Rule, Store, Strategy,
};

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

/// A clock that counts its reads.
#[derive(Default)]
struct CountingClock {
    reads: AtomicUsize,
}

impl Clock for CountingClock {
    fn now_ms(&self) -> i64 {
        self.reads.fetch_add(1, Ordering::SeqCst);
        1_000
    }
}

#[test]
fn check_sync_and_check_agree_decision_for_decision() {
    let clock_a = ManualClock::new(0);
    let clock_b = ManualClock::new(0);
    let s = Strategy::sliding_window(7, 1000, Some(5)).unwrap();
    let a = Limiter::builder(s.clone()).clock(Arc::new(clock_a.clone())).build();
    let b = Limiter::builder(s).clock(Arc::new(clock_b.clone())).build();
    for step in 0..500 {
        clock_a.advance(step % 7 * 13).unwrap();
        clock_b.advance(step % 7 * 13).unwrap();
        assert_eq!(a.check_sync("k", 1).unwrap(), block_on(b.check("k", 1)).unwrap(), "step {step}");
    }
}

#[test]
fn prefixes_isolate_limiters_on_one_store() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let s = Strategy::fixed_window(1, 60_000).unwrap();
    // Time stands still: on the system clock a minute boundary between a's checks would admit both.
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(1_000));
    let a = Limiter::builder(s.clone()).store(store.clone()).clock(clock.clone()).prefix("a").build();
    let b = Limiter::builder(s).store(store).clock(clock).prefix("b").build();
    assert!(a.check_sync("k", 1).unwrap().allowed);
    assert!(b.check_sync("k", 1).unwrap().allowed, "another prefix is another keyspace");
    assert!(!a.check_sync("k", 1).unwrap().allowed);
    assert_eq!(a.full_key("k"), "a:k");
}

#[test]
fn the_clock_is_read_once_per_check_sync_and_per_check_many() {
    let clock = Arc::new(CountingClock::default());
    let l = Limiter::builder(Strategy::gcra(100, 1000, None).unwrap()).clock(clock.clone()).build();
    l.check_sync("a", 1).unwrap();
    assert_eq!(clock.reads.load(Ordering::SeqCst), 1);
    l.check_many_sync(&["a", "b", "c", "d"], 1).unwrap();
    assert_eq!(clock.reads.load(Ordering::SeqCst), 2);
    block_on(l.check_many(&["a", "b", "c"], 1)).unwrap();
    assert_eq!(clock.reads.load(Ordering::SeqCst), 3);
}

#[test]
fn check_many_equals_per_key_checks_at_one_instant() {
    let clock = ManualClock::new(5_000);
    let s = Strategy::token_bucket(3, 1.0).unwrap();
    let many = Limiter::builder(s.clone()).clock(Arc::new(clock.clone())).build();
    let single = Limiter::builder(s).clock(Arc::new(clock.clone())).build();
    let keys = ["a", "b", "a", "a", "a", "c"];
    let got = many.check_many_sync(&keys, 1).unwrap();
    let want: Vec<_> = keys.iter().map(|k| single.check_sync(k, 1).unwrap()).collect();
    assert_eq!(got, want);
    assert!(!got[4].allowed, "the fourth 'a' exceeds capacity 3");
}

/// A store with only the async methods, like a network store.
struct AsyncOnly(MemoryStore);

impl Store for AsyncOnly {
    fn apply<'a>(&'a self, key: &'a str, now: Now, t: Transform<'a>) -> BoxFuture<'a, throttlekit::Result<Reply>> {
        self.0.apply(key, now, t)
    }
    fn apply_multi<'a>(
        &'a self,
        r: Rule,
        d: &'a [DimensionCall<'a>],
        now: Now,
    ) -> BoxFuture<'a, throttlekit::Result<MultiReply>> {
        self.0.apply_multi(r, d, now)
    }
    fn reset<'a>(&'a self, key: &'a str) -> BoxFuture<'a, throttlekit::Result<()>> {
        self.0.reset(key)
    }
}

#[test]
fn check_sync_on_an_async_only_store_is_not_implemented() {
    let l =
        Limiter::builder(Strategy::gcra(1, 1000, None).unwrap()).store(Arc::new(AsyncOnly(MemoryStore::new()))).build();
    assert_eq!(l.check_sync("k", 1).unwrap_err().code(), ErrorCode::NotImplemented);
    assert!(block_on(l.check("k", 1)).unwrap().allowed);
}

/// A store that is always down.
struct Down;

impl Store for Down {
    fn apply<'a>(&'a self, _: &'a str, _: Now, _: Transform<'a>) -> BoxFuture<'a, throttlekit::Result<Reply>> {
        Box::pin(async { Err(throttlekit::Error::store("connection refused")) })
    }
    fn apply_multi<'a>(
        &'a self,
        _: Rule,
        _: &'a [DimensionCall<'a>],
        _: Now,
    ) -> BoxFuture<'a, throttlekit::Result<MultiReply>> {
        Box::pin(async { Err(throttlekit::Error::store("connection refused")) })
    }
    fn reset<'a>(&'a self, _: &'a str) -> BoxFuture<'a, throttlekit::Result<()>> {
        Box::pin(async { Err(throttlekit::Error::store("connection refused")) })
    }
}

#[test]
fn the_fail_policy_decides_what_an_unavailable_store_means() {
    let s = Strategy::gcra(10, 1000, None).unwrap();
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(50));
    let with =
        |p: FailPolicy| Limiter::builder(s.clone()).store(Arc::new(Down)).clock(clock.clone()).fail_policy(p).build();

    let open = block_on(with(FailPolicy::FailOpen).check("k", 1)).unwrap();
    assert!(open.allowed && open.fallback);
    let closed = block_on(with(FailPolicy::FailClosed).check("k", 1)).unwrap();
    assert!(!closed.allowed && closed.fallback && closed.retry_after_ms >= 1);
    let err = block_on(with(FailPolicy::Raise).check("k", 1)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StoreUnavailable);
    assert!(err.message().contains("connection refused"), "the cause is carried: {err}");
    // Bad input is never hidden by a fail-open policy.
    assert_eq!(block_on(with(FailPolicy::FailOpen).check("k", 0)).unwrap_err().code(), ErrorCode::ConfigInvalid);
}

#[test]
fn quotas_fail_closed_by_default_and_rate_limits_raise() {
    let q = Strategy::from_json(r#"{"kind":"quota","options":{"limit":1,"resetCadence":"calendar-day"}}"#).unwrap();
    assert_eq!(Limiter::new(q).fail_policy(), FailPolicy::FailClosed);
    assert_eq!(Limiter::new(Strategy::gcra(1, 1, None).unwrap()).fail_policy(), FailPolicy::Raise);
}

#[test]
fn the_memory_store_expires_on_the_injected_clock() {
    let clock = ManualClock::new(0);
    let store = Arc::new(MemoryStore::new());
    let l = Limiter::builder(Strategy::fixed_window(1, 1000).unwrap())
        .store(store.clone())
        .clock(Arc::new(clock.clone()))
        .build();
    l.check_sync("k", 1).unwrap();
    assert_eq!(store.len(), 1);
    clock.set(1000); // deadline = 0 + ttl 1000: not yet expired (expired only when now > deadline)
    assert_eq!(store.purge_expired(1000), 0);
    assert_eq!(store.purge_expired(1001), 1);
    assert!(store.is_empty());
}

#[test]
fn a_bounded_memory_store_evicts_the_least_recently_used() {
    let store = Arc::new(MemoryStore::with_max_keys(100).unwrap());
    let l = Limiter::builder(Strategy::gcra(10, 1000, None).unwrap()).store(store.clone()).build();
    l.check_sync("hot", 1).unwrap();
    for i in 0..10_000 {
        l.check_sync(&format!("flood:{i}"), 1).unwrap();
        if i % 50 == 0 {
            l.check_sync("hot", 1).unwrap();
        }
    }
    assert!(store.len() <= 128, "bounded store grew to {}", store.len());
    assert_eq!(MemoryStore::with_max_keys(0).unwrap_err().code(), ErrorCode::ConfigInvalid);
}

#[test]
fn n_threads_on_one_key_admit_exactly_k() {
    for _ in 0..5 {
        // Time stands still: on the system clock an hour boundary mid-round would admit more.
        let l = Arc::new(
            Limiter::builder(Strategy::fixed_window(1000, 3_600_000).unwrap())
                .clock(Arc::new(ManualClock::new(1_000)))
                .build(),
        );
        let admitted = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..500 {
                        if l.check_sync("shared", 1).unwrap().allowed {
                            admitted.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                });
            }
        });
        assert_eq!(admitted.load(Ordering::SeqCst), 1000);
    }
}

#[test]
fn multi_all_on_memory_is_atomic_across_threads() {
    let dims = vec![
        Dimension::new("ip", Strategy::fixed_window(300, 3_600_000).unwrap()),
        Dimension::new("user", Strategy::fixed_window(1000, 3_600_000).unwrap()),
    ];
    // Time stands still: on the system clock an hour boundary mid-test would admit more.
    let m = Arc::new(MultiLimiter::new(Rule::All, dims).unwrap().with_clock(Arc::new(ManualClock::new(1_000))));
    let admitted = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..200 {
                    if m.check_sync(&["1.2.3.4", "alice"], 1).unwrap().decision.allowed {
                        admitted.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    assert_eq!(admitted.load(Ordering::SeqCst), 300);
    // The user dimension was charged only for admitted requests.
    let d = m.check_sync(&["5.6.7.8", "alice"], 1).unwrap();
    assert_eq!(d.dimensions[1].remaining, 1000 - 301);
}

#[test]
fn multi_keys_share_one_hash_tag() {
    let m = MultiLimiter::new(Rule::All, vec![Dimension::new("ip", Strategy::gcra(1, 1, None).unwrap())])
        .unwrap()
        .with_prefix("api");
    assert_eq!(m.dimension_key("ip", "1.2.3.4"), "api:{api}:ip:1.2.3.4");
    let m = m.with_hash_tag("tenant-7").unwrap();
    assert_eq!(m.dimension_key("ip", "1.2.3.4"), "api:{tenant-7}:ip:1.2.3.4");
}

#[test]
fn multi_needs_one_key_per_dimension() {
    let m = MultiLimiter::new(Rule::Any, vec![Dimension::new("ip", Strategy::gcra(1, 1, None).unwrap())]).unwrap();
    assert_eq!(m.check_sync(&["a", "b"], 1).unwrap_err().code(), ErrorCode::ConfigInvalid);
}

#[test]
fn error_codes_are_the_documented_list() {
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(codes, ["config_invalid", "store_unavailable", "rate_limit_exceeded", "queue_full", "not_implemented"]);
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap_or_default();
    for c in codes {
        assert_eq!(ErrorCode::parse(c).unwrap().as_str(), c);
        assert!(readme.contains(&format!("`{c}`")), "README.md does not document {c}");
    }
}

#[test]
fn manual_clock_advances_only_forward_and_sets_anywhere() {
    let c = ManualClock::new(100);
    assert_eq!(c.advance(5).unwrap(), 105);
    assert_eq!(c.advance(-1).unwrap_err().code(), ErrorCode::ConfigInvalid);
    c.set(7);
    assert_eq!(c.now_ms(), 7);
    let shared = c.clone();
    shared.set(9);
    assert_eq!(c.now_ms(), 9, "clones share one time");
}

#[test]
fn a_denied_decision_can_become_a_rate_limit_exceeded_error() {
    // Time stands still: on the system clock a minute boundary between the checks would admit both.
    let l =
        Limiter::builder(Strategy::fixed_window(1, 60_000).unwrap()).clock(Arc::new(ManualClock::new(1_000))).build();
    assert!(l.check_sync("k", 1).unwrap().or_exceeded().is_ok());
    let e = l.check_sync("k", 1).unwrap().or_exceeded().unwrap_err();
    assert_eq!(e.code(), ErrorCode::RateLimitExceeded);
    assert!(e.retry_after_ms().is_some_and(|ms| ms >= 1));
}
