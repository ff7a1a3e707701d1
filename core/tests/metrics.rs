//! Per-limiter metrics: off by default; when on, every check is counted as allowed, denied,
//! a fallback admission or denial, or an error by code, and calls to a store outside the
//! process are timed into the latency histogram. With the `metrics` feature, the same events
//! reach the `metrics` crate facade.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use throttlekit::metrics::LATENCY_BOUNDS_US;
use throttlekit::store::{BoxFuture, DimensionCall, MultiReply, Now, Reply, Transform};
use throttlekit::{ErrorCode, FailPolicy, Limiter, ManualClock, MemoryStore, Rule, Store, Strategy};

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

/// A store outside the process, as far as the limiter can tell: a memory store behind the
/// trait, which goes down on request.
struct Remote {
    inner: MemoryStore,
    down: AtomicBool,
}

impl Remote {
    fn new() -> Arc<Remote> {
        Arc::new(Remote { inner: MemoryStore::new(), down: AtomicBool::new(false) })
    }
    fn check_up(&self) -> throttlekit::Result<()> {
        if self.down.load(Ordering::SeqCst) { Err(throttlekit::Error::store("connection refused")) } else { Ok(()) }
    }
}

impl Store for Remote {
    fn apply<'a>(&'a self, key: &'a str, now: Now, t: Transform<'a>) -> BoxFuture<'a, throttlekit::Result<Reply>> {
        match self.check_up() {
            Ok(()) => self.inner.apply(key, now, t),
            Err(e) => Box::pin(async { Err(e) }),
        }
    }
    fn apply_sync(&self, key: &str, now: throttlekit::store::Now, t: Transform<'_>) -> throttlekit::Result<Reply> {
        self.check_up()?;
        self.inner.apply_sync(key, now, t)
    }
    fn apply_multi<'a>(
        &'a self,
        r: Rule,
        d: &'a [DimensionCall<'a>],
        now: Now,
    ) -> BoxFuture<'a, throttlekit::Result<MultiReply>> {
        match self.check_up() {
            Ok(()) => self.inner.apply_multi(r, d, now),
            Err(e) => Box::pin(async { Err(e) }),
        }
    }
    fn apply_multi_sync(
        &self,
        r: Rule,
        d: &[DimensionCall<'_>],
        now: throttlekit::store::Now,
    ) -> throttlekit::Result<MultiReply> {
        self.check_up()?;
        self.inner.apply_multi_sync(r, d, now)
    }
    fn reset<'a>(&'a self, key: &'a str) -> BoxFuture<'a, throttlekit::Result<()>> {
        self.inner.reset(key)
    }
    fn is_sync(&self) -> bool {
        true
    }
}

#[test]
fn metrics_are_off_unless_asked() {
    let l = Limiter::new(Strategy::gcra(1, 1000, None).unwrap());
    l.check_sync("k", 1).unwrap();
    assert!(l.metrics().is_none());
}

#[test]
fn every_check_is_counted_by_outcome() {
    let clock = ManualClock::new(0);
    let l =
        Limiter::builder(Strategy::fixed_window(2, 1000).unwrap()).clock(Arc::new(clock.clone())).metrics(true).build();
    for _ in 0..5 {
        l.check_sync("k", 1).unwrap();
    }
    assert_eq!(l.check_sync("k", 0).unwrap_err().code(), ErrorCode::ConfigInvalid);
    assert!(block_on(l.check("other", 1)).unwrap().allowed);
    l.check_many_sync(&["a", "b"], 1).unwrap();
    // Peeks and forecasts are not checks.
    l.peek_sync("k").unwrap();
    l.forecast_sync("k", 1).unwrap();
    let m = l.metrics().unwrap().snapshot();
    assert_eq!((m.allowed, m.denied), (5, 3));
    assert_eq!(m.errors_of(ErrorCode::ConfigInvalid), 1);
    assert_eq!(m.errors.len(), ErrorCode::ALL.len());
    assert_eq!((m.fallback_allowed, m.fallback_denied), (0, 0));
    // The memory store is in process: counted, not timed.
    assert_eq!(m.latency_count(), 0);
    assert_eq!(m.latency_counts.len(), LATENCY_BOUNDS_US.len() + 1);
}

#[test]
fn fallbacks_and_store_errors_are_counted_and_remote_calls_timed() {
    let store = Remote::new();
    let build = |policy| {
        Limiter::builder(Strategy::gcra(10, 1000, None).unwrap())
            .store(store.clone())
            .fail_policy(policy)
            .metrics(true)
            .build()
    };
    let (open, closed, raise) = (build(FailPolicy::FailOpen), build(FailPolicy::FailClosed), build(FailPolicy::Raise));
    assert!(open.check_sync("k", 1).unwrap().allowed);
    store.down.store(true, Ordering::SeqCst);
    assert!(open.check_sync("k", 1).unwrap().fallback);
    assert!(block_on(open.check("k", 1)).unwrap().fallback);
    assert!(!closed.check_sync("k", 1).unwrap().allowed);
    assert_eq!(raise.check_sync("k", 1).unwrap_err().code(), ErrorCode::StoreUnavailable);
    assert_eq!(block_on(raise.check("k", 1)).unwrap_err().code(), ErrorCode::StoreUnavailable);

    let o = open.metrics().unwrap().snapshot();
    assert_eq!((o.allowed, o.fallback_allowed, o.fallback_denied), (1, 2, 0));
    assert_eq!(o.latency_count(), 3, "every call to a store outside the process is timed");
    let c = closed.metrics().unwrap().snapshot();
    assert_eq!((c.allowed, c.denied, c.fallback_denied), (0, 0, 1));
    let r = raise.metrics().unwrap().snapshot();
    assert_eq!(r.errors_of(ErrorCode::StoreUnavailable), 2);
    assert_eq!(r.allowed + r.denied + r.fallback_allowed + r.fallback_denied, 0);
}

/// The `metrics` facade receives the same events, through handles registered at build.
#[cfg(feature = "metrics")]
mod facade {
    use std::collections::HashMap;
    use std::sync::atomic::AtomicU64;
    use std::sync::{Arc, Mutex};

    use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

    use super::*;

    #[derive(Default)]
    struct Recorded {
        counters: Mutex<HashMap<String, Arc<AtomicU64>>>,
    }

    fn render(key: &Key) -> String {
        let mut labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
        labels.sort();
        format!("{}{{{}}}", key.name(), labels.join(","))
    }

    impl Recorder for Recorded {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            let c = self.counters.lock().unwrap().entry(render(key)).or_default().clone();
            Counter::from_arc(c)
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    #[test]
    fn the_metrics_facade_sees_every_check() {
        let recorder = Recorded::default();
        let l = metrics::with_local_recorder(&recorder, || {
            // Time stands still: on the system clock a second's boundary between the checks would
            // admit a second one.
            Limiter::builder(Strategy::fixed_window(1, 1000).unwrap())
                .clock(Arc::new(ManualClock::new(1_000)))
                .prefix("api")
                .metrics(true)
                .build()
        });
        l.check_sync("k", 1).unwrap();
        l.check_sync("k", 1).unwrap();
        l.check_sync("k", 1).unwrap();
        let _ = l.check_sync("k", 0);
        let get = |k: &str| recorder.counters.lock().unwrap()[k].load(Ordering::Relaxed);
        assert_eq!(get("throttlekit_decisions_total{fallback=false,limiter=api,outcome=allowed}"), 1);
        assert_eq!(get("throttlekit_decisions_total{fallback=false,limiter=api,outcome=denied}"), 2);
        assert_eq!(get("throttlekit_errors_total{code=config_invalid,limiter=api}"), 1);
    }
}

#[test]
fn peeks_and_forecasts_are_counted_apart_from_checks() {
    let clock = ManualClock::new(1_000);
    let limiter =
        Limiter::builder(Strategy::fixed_window(1, 1000).unwrap()).clock(Arc::new(clock)).metrics(true).build();
    assert!(limiter.check_sync("k", 1).unwrap().allowed);
    assert!(!limiter.peek_sync("k").unwrap().allowed);
    assert!(limiter.peek_sync("other").is_ok());
    assert!(!limiter.forecast_sync("k", 1).unwrap().allowed);
    assert!(block_on(limiter.peek("k")).is_ok());
    assert!(block_on(limiter.forecast("k", 1)).is_ok());
    // Refused before the store: counted by code, not as answered.
    assert_eq!(limiter.forecast_sync("k", 0).unwrap_err().code(), ErrorCode::ConfigInvalid);
    assert_eq!(limiter.peek_sync(&"k".repeat(300)).unwrap_err().code(), ErrorCode::ConfigInvalid);
    let s = limiter.metrics().unwrap().snapshot();
    assert_eq!((s.allowed, s.denied), (1, 0), "a peek or a forecast is not a check");
    assert_eq!((s.peeks, s.forecasts), (3, 2));
    assert_eq!(s.errors_of(ErrorCode::ConfigInvalid), 2);
}

#[test]
fn a_multi_limiter_counts_its_combined_decisions_fallbacks_and_store_time() {
    use throttlekit::{Dimension, MultiLimiter};
    let remote = Remote::new();
    let multi = MultiLimiter::new(
        Rule::All,
        vec![
            Dimension::new("second", Strategy::fixed_window(2, 1000).unwrap()),
            Dimension::new("minute", Strategy::fixed_window(100, 60_000).unwrap()),
        ],
    )
    .unwrap()
    .with_store(remote.clone())
    .with_clock(Arc::new(ManualClock::new(1_000)))
    .with_fail_policy(FailPolicy::FailOpen)
    .with_metrics(true);
    assert!(
        MultiLimiter::new(Rule::All, vec![Dimension::new("d", Strategy::fixed_window(1, 1000).unwrap())])
            .unwrap()
            .metrics()
            .is_none()
    );
    assert!(multi.check_sync(&["a", "a"], 1).unwrap().decision.allowed);
    assert!(block_on(multi.check(&["a", "a"], 1)).unwrap().decision.allowed);
    assert!(!multi.check_sync(&["a", "a"], 1).unwrap().decision.allowed);
    remote.down.store(true, Ordering::SeqCst);
    let d = multi.check_sync(&["a", "a"], 1).unwrap();
    assert!(d.decision.allowed && d.decision.fallback);
    assert_eq!((d.binding.as_str(), &d.dimensions), ("second", &vec![d.decision; 2]), "the first dimension's, for all");
    assert_eq!(multi.check_sync(&["a"], 1).unwrap_err().code(), ErrorCode::ConfigInvalid);
    let s = multi.metrics().unwrap().snapshot();
    assert_eq!((s.allowed, s.denied, s.fallback_allowed, s.fallback_denied), (2, 1, 1, 0));
    assert_eq!(s.errors_of(ErrorCode::ConfigInvalid), 1);
    assert_eq!(s.latency_count(), 4, "every call that reached the remote store was timed");
}

/// The fused multi apply every strict multi check runs (and serve's requests): a store that
/// cannot answer gets the first dimension's fallback for every dimension, under the caller's
/// policy, at the caller's instant (the clock's reading for the server's clock); every call that
/// reached the store is timed.
#[test]
fn a_fused_multi_apply_falls_back_per_dimension_and_is_timed() {
    use throttlekit::metrics::LimiterMetrics;
    use throttlekit::multi::{apply_calls, apply_calls_sync};
    let remote = Remote::new();
    let (a, b) = (Strategy::fixed_window(2, 1000).unwrap(), Strategy::fixed_window(100, 60_000).unwrap());
    let calls = [DimensionCall { key: "x", strategy: &a, cost: 1 }, DimensionCall { key: "y", strategy: &b, cost: 1 }];
    let clock = ManualClock::new(5_000);
    let m = LimiterMetrics::new("");
    let up = block_on(apply_calls(&*remote, Rule::All, &calls, Now::At(1_000), &clock, FailPolicy::Raise, Some(&m)));
    let up = up.unwrap();
    assert!(up.allowed && up.decisions.iter().all(|d| !d.fallback), "{up:?}");
    remote.down.store(true, Ordering::SeqCst);
    for policy in [FailPolicy::FailOpen, FailPolicy::FailClosed] {
        let r = block_on(apply_calls(&*remote, Rule::All, &calls, Now::Server, &clock, policy, Some(&m))).unwrap();
        assert_eq!(r.allowed, policy == FailPolicy::FailOpen, "{policy:?}");
        let seen: Vec<(i64, bool, bool)> =
            r.decisions.iter().map(|d| (d.limit, d.fallback, d.reset_at >= 5_000)).collect();
        assert_eq!(seen, vec![(2, true, true); 2], "{policy:?}");
        assert_eq!(apply_calls_sync(&*remote, Rule::All, &calls, Now::At(5_000), &clock, policy, None).unwrap(), r);
    }
    let e = apply_calls_sync(&*remote, Rule::All, &calls, Now::At(5_000), &clock, FailPolicy::Raise, None).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StoreUnavailable);
    assert_eq!(m.snapshot().latency_count(), 3, "the three calls given the metrics were timed");
}

#[test]
fn a_shaper_counts_reservations_accepted_and_rejected() {
    use throttlekit::{LeakyBucketOptions, Shaper};
    let shaper = Shaper::new(&LeakyBucketOptions { rate_per_sec: 1.0, max_queue_ms: 1000.0 })
        .unwrap()
        .with_clock(Arc::new(ManualClock::new(1_000)))
        .with_metrics(true);
    let mut accepted = 0;
    for _ in 0..5 {
        accepted += shaper.reserve_sync("k", 1).unwrap().accepted as u64;
    }
    assert!(block_on(shaper.reserve("k", 1)).is_ok());
    assert_eq!(shaper.reserve_sync("k", 0).unwrap_err().code(), ErrorCode::ConfigInvalid);
    let s = shaper.metrics().unwrap().snapshot();
    assert!((1..5).contains(&accepted), "{accepted} of 5 accepted: the queue bound must bite");
    assert_eq!((s.allowed, s.denied), (accepted, 6 - accepted), "the async reserve was rejected too");
    assert_eq!(s.errors_of(ErrorCode::ConfigInvalid), 1);
    assert_eq!(s.latency_count(), 0, "the memory store is not timed");
}

/// One way a limiter's call can go: its name and the call.
type LimiterPath = (&'static str, fn(&Limiter, &str) -> throttlekit::Result<throttlekit::Decision>);

/// Every way into a limiter's checks (sync and async, one key and many, and the sliding-window
/// log's inlined entry a binding calls).
const CHECKS: [LimiterPath; 6] = [
    ("check_sync", |l, k| l.check_sync(k, 1)),
    ("check_sync_log_inlined", |l, k| l.check_sync_log_inlined(k, 1)),
    ("check", |l, k| block_on(l.check(k, 1))),
    ("check_at", |l, k| block_on(l.check_at(k, 1, Now::At(1_000)))),
    ("check_many_sync", |l, k| l.check_many_sync(&[k], 1).map(|d| d[0])),
    ("check_many", |l, k| block_on(l.check_many(&[k], 1)).map(|d| d[0])),
];

/// Every way into a limiter's peeks (`.0`) and forecasts (`.1`).
const READS: [(LimiterPath, LimiterPath); 2] = [
    (("peek_sync", |l, k| l.peek_sync(k)), ("forecast_sync", |l, k| l.forecast_sync(k, 1))),
    (("peek", |l, k| block_on(l.peek(k))), ("forecast", |l, k| block_on(l.forecast(k, 1)))),
];

/// N calls down each path of a limiter on the memory store, for every strategy kind that has a
/// path of its own (GCRA's and the log's inlined ones, the store's for the rest) and in every
/// mode, move its counters by exactly N: a check as allowed or denied, a peek or a forecast as
/// such, and nothing else.
#[test]
fn every_path_of_a_limiter_counts_each_call_once() {
    const N: u64 = 7;
    let strategies = [
        Strategy::gcra(4, 60_000, None).unwrap(),
        Strategy::sliding_window_log(4, 60_000).unwrap(),
        Strategy::fixed_window(4, 60_000).unwrap(),
        Strategy::token_bucket(4, 0.001).unwrap(),
    ];
    let leased = throttlekit::Mode::Leased(throttlekit::LeaseOptions { batch: 2, ..Default::default() });
    let modes = [throttlekit::Mode::Strict, throttlekit::Mode::CachedDeny { max_keys: 100 }, leased];
    for strategy in &strategies {
        for mode in modes {
            let builder = || Limiter::builder(strategy.clone()).clock(Arc::new(ManualClock::new(1_000))).metrics(true);
            if let Err(e) = builder().mode(mode) {
                // A mode that does not fit the strategy (the leased mode needs a strategy that
                // can lease) has no paths to count.
                assert_eq!(e.code(), ErrorCode::ConfigInvalid);
                continue;
            }
            let build = || builder().mode(mode).unwrap().build();
            for (name, path) in CHECKS {
                let l = build();
                for _ in 0..N {
                    path(&l, "k").unwrap();
                }
                let s = l.metrics().unwrap().snapshot();
                let what = format!("{name} on {} in {mode:?}", strategy.kind());
                assert_eq!(s.allowed + s.denied, N, "{what}: {s:?}");
                if mode == throttlekit::Mode::Strict {
                    assert_eq!((s.allowed, s.denied), (4, 3), "{what}");
                }
                assert_eq!((s.peeks, s.forecasts, s.fallback_allowed + s.fallback_denied), (0, 0, 0), "{what}");
                assert_eq!(s.errors.iter().map(|e| e.1).sum::<u64>(), 0, "{what}");
            }
            for ((peek, peek_path), (forecast, forecast_path)) in READS {
                let l = build();
                for _ in 0..N {
                    peek_path(&l, "k").unwrap();
                    forecast_path(&l, "k").unwrap();
                }
                let s = l.metrics().unwrap().snapshot();
                assert_eq!((s.peeks, s.forecasts, s.allowed + s.denied), (N, N, 0), "{peek}/{forecast} in {mode:?}");
            }
        }
    }
}

/// Refused calls are counted once each, by code, on every path; and an async `check_many`
/// whose calls all went out counts each of them, also those after one that failed.
#[test]
fn refused_calls_are_counted_once_on_every_path() {
    let l = Limiter::builder(Strategy::gcra(4, 60_000, None).unwrap())
        .clock(Arc::new(ManualClock::new(1_000)))
        .metrics(true)
        .build();
    let long = "k".repeat(600);
    for (name, path) in CHECKS {
        assert_eq!(path(&l, &long).unwrap_err().code(), ErrorCode::ConfigInvalid, "{name}");
    }
    for ((_, peek), (_, forecast)) in READS {
        assert!(peek(&l, &long).is_err() && forecast(&l, &long).is_err());
    }
    let s = l.metrics().unwrap().snapshot();
    assert_eq!(s.errors_of(ErrorCode::ConfigInvalid), (CHECKS.len() + 2 * READS.len()) as u64);
    assert_eq!((s.allowed + s.denied, s.peeks, s.forecasts), (0, 0, 0));

    let l = Limiter::builder(Strategy::gcra(4, 60_000, None).unwrap()).metrics(true).build();
    assert!(block_on(l.check_many(&["a", &long, "b"], 1)).is_err());
    assert_eq!(block_on(l.check_many(&["a", "b"], 0)).unwrap_err().code(), ErrorCode::ConfigInvalid);
    let s = l.metrics().unwrap().snapshot();
    assert_eq!((s.allowed, s.errors_of(ErrorCode::ConfigInvalid)), (2, 2), "{s:?}");
}
