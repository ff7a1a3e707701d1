//! The sliding window's tick bound: a sliding window (or rolling quota) ticks every
//! `w = windowMs / buckets` ms, `c = floor(now / w)`, and a `now` within ±2^53 can still put `c`
//! at 2^53 (w = 1) or far past it (w < 1). Past 2^53 a double's `t + 1 == t`: the Lua ring loop
//! never ended, blocking the whole Redis server (BUSY for every client), and the memory store's
//! `i64` ticks saturated and overflowed. Every store now gets the same answer: `config_invalid`
//! naming `now`, before any store is called; and the Lua loops end whatever the tick (the
//! server's clock is Redis's, which core does not see). On that clock the construction rule
//! (`buckets <= 1000 * windowMs`, each bucket at least 1 microsecond) keeps ticks below 2^53
//! until the year 2255.

use std::sync::Arc;

use throttlekit::spec::{QuotaOptions, ResetCadence};
use throttlekit::{Dimension, ErrorCode, FailPolicy, Limiter, ManualClock, MultiLimiter, Rule, Store, Strategy};

const TWO_53: i64 = 1 << 53;
/// A real epoch time (2027): far within every bound below.
const NOW: i64 = 1_800_000_000_000;

/// w = 1 ms: c = now.
fn w_one() -> Strategy {
    Strategy::sliding_window(10, 1, Some(1)).unwrap()
}

/// w = 0.1 ms: c = 10 * now, past 2^53 from now = 2^53 / 10.
fn w_tenth() -> Strategy {
    Strategy::sliding_window(10, 1, Some(10)).unwrap()
}

/// w = 1e-3 ms, the narrowest bucket a sliding window may have: c is ±1000 * now, near the
/// `i64` range (±9.2e18) at now = ±2^53.
fn w_micro() -> Strategy {
    Strategy::sliding_window(10, 1000, Some(1_000_000)).unwrap()
}

/// A rolling quota of w = 0.1 ms: the same window under the quota's name.
fn rolling_tenth() -> Strategy {
    Strategy::quota(QuotaOptions {
        limit: 10.0,
        reset_cadence: ResetCadence::Rolling,
        period_ms: Some(1.0),
        anchor: None,
        offset_minutes: None,
        week_starts_on: None,
        buckets: Some(10.0),
    })
    .unwrap()
}

/// The refusals every store gives: (strategy, now) whose tick leaves ±2^53.
fn refused() -> Vec<(&'static str, Strategy, i64)> {
    vec![
        ("w = 1 at 2^53", w_one(), TWO_53),
        ("w = 1 at 2^53 - 1 (c + 1 = 2^53)", w_one(), TWO_53 - 1),
        ("w = 1 at -2^53", w_one(), -TWO_53),
        ("w = 0.1 at 2^53 / 10 + 1", w_tenth(), TWO_53 / 10 + 1),
        ("w = 0.1 at 2^53 - 1", w_tenth(), TWO_53 - 1),
        ("w = 1e-3 at 2^53", w_micro(), TWO_53),
        ("w = 1e-3 at -2^53", w_micro(), -TWO_53),
        ("rolling quota w = 0.1 at 2^53 - 1", rolling_tenth(), TWO_53 - 1),
    ]
}

fn assert_refused(label: &str, result: throttlekit::Result<impl std::fmt::Debug>) {
    let e = result.expect_err(label);
    assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{label}: {e:?}");
    assert!(e.message().starts_with("now "), "{label}: {}", e.message());
}

fn limiter(strategy: Strategy, store: Arc<dyn Store>) -> Limiter {
    Limiter::builder(strategy)
        .store(store)
        .clock(Arc::new(ManualClock::new(NOW)))
        .fail_policy(FailPolicy::Raise)
        .prefix("tick")
        .build()
}

fn multi(strategy: Strategy, store: Arc<dyn Store>) -> MultiLimiter {
    let dims = vec![Dimension::new("ip", Strategy::gcra(100, 60_000, None).unwrap()), Dimension::new("user", strategy)];
    MultiLimiter::new(Rule::All, dims)
        .unwrap()
        .with_store(store)
        .with_clock(Arc::new(ManualClock::new(NOW)))
        .with_fail_policy(FailPolicy::Raise)
}

/// Every refusal, single-key (check, peek) and multi, on `store`.
fn assert_all_refused(store: impl Fn() -> Arc<dyn Store>) {
    for (label, strategy, now) in refused() {
        let l = limiter(strategy.clone(), store());
        assert_refused(label, l.check_sync_at("k", 1, now));
        assert_refused(label, l.peek_sync_at("k", now));
        let m = multi(strategy, store());
        assert_refused(label, m.check_sync_at(&["ip", "u"], 1, now));
    }
    // Past ±2^53 the time itself is refused (the multi checks it once, then each tick), on a
    // multi of GCRA and a sliding window as on the window alone.
    for now in [TWO_53 + 1, -TWO_53 - 1, i64::MAX, i64::MIN] {
        let label = &format!("now = {now}");
        let e = multi(w_tenth(), store()).check_sync_at(&["ip", "u"], 1, now).expect_err(label);
        assert_eq!(e.message(), "now must be within ±2^53 epoch milliseconds", "{label}");
        let e = limiter(w_tenth(), store()).check_sync_at("k", 1, now).expect_err(label);
        assert_eq!(e.message(), "now must be within ±2^53 epoch milliseconds", "{label}");
    }
}

#[test]
fn memory_refuses_ticks_past_2_53_without_panicking() {
    // Before: w = 1e-6 (then constructible) at -2^53 saturated the tick to i64::MIN and
    // `tick - buckets` overflowed (a panic in a debug build, a silent wrap in release).
    assert_all_refused(|| Arc::new(throttlekit::MemoryStore::new()));
}

#[test]
fn ticks_just_within_the_bound_are_decided() {
    // |c| + buckets < 2^53: w = 1, buckets 1, c = 2^53 - 2.
    let store: Arc<dyn Store> = Arc::new(throttlekit::MemoryStore::new());
    let l = limiter(w_one(), store.clone());
    for now in [TWO_53 - 2, -(TWO_53 - 2)] {
        let d = l.check_sync_at(&format!("edge{now}"), 1, now).unwrap();
        assert!(d.allowed && d.remaining == 9, "{now}: {d:?}");
    }
    // A real epoch time with w = 0.1 and with the rolling quota: decided as ever.
    for s in [w_tenth(), rolling_tenth()] {
        let l = limiter(s, store.clone());
        assert!(l.check_sync_at("real", 1, NOW).unwrap().allowed);
    }
}

#[cfg(feature = "redis")]
#[path = "support/redis_server.rs"]
mod redis_server;
#[cfg(feature = "redis")]
#[path = "support/redis_store.rs"]
mod redis_store;

#[cfg(feature = "redis")]
mod redis {
    use super::*;

    use super::redis_server::{RedisServer, cli};
    use super::redis_store;
    use throttlekit::store::Now;

    /// Short: a script that never returns shows up as a timeout, quickly.
    const TIMEOUT_MS: u64 = 300;

    /// The server still answers other clients (a script that never ends makes it answer BUSY).
    fn assert_responsive(server: &RedisServer, label: &str) {
        assert_eq!(cli(server.port, &["ping"]).as_deref().map(str::trim), Some("PONG"), "{label}");
    }

    #[test]
    fn redis_refuses_ticks_past_2_53_and_never_hangs() {
        // Dropped last, it kills the server by PID, hung or not.
        let server = RedisServer::start();
        let store = redis_store::connect(server.url(), TIMEOUT_MS);
        assert_all_refused(|| store.clone());
        assert_responsive(&server, "after the refusals");
    }

    #[test]
    fn redis_scripts_decide_the_narrowest_bucket_on_the_servers_clock() {
        // On the server's clock core sees no `now`: the script computes c. w = 1e-4 ms at a real
        // time would put c near 1.8e16, past 2^53, so that config is refused at construction;
        // the narrowest bucket allowed, w = 1e-3 ms, puts c near 1.8e15, exact. (The ring loops
        // count offsets, so they would end whatever the tick.)
        let e = Strategy::sliding_window(10, 1, Some(10_000)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{e:?}");
        assert!(e.message().starts_with("slidingWindow.buckets "), "{}", e.message());
        let server = RedisServer::start();
        let store = redis_store::connect(server.url(), TIMEOUT_MS);
        let s = Strategy::sliding_window(10, 1, Some(1_000)).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let l = limiter(s.clone(), store.clone());
        let d = rt.block_on(l.check_at("server", 1, Now::Server)).expect("the single-key script returns");
        assert!(d.allowed, "{d:?}");
        assert_responsive(&server, "after the single-key script");
        let m = multi(s, store.clone());
        let d = rt.block_on(m.check_at(&["ip", "server"], 1, Now::Server)).expect("the multi script returns");
        assert!(d.decision.allowed, "{d:?}");
        assert_responsive(&server, "after the multi script");
    }
}
