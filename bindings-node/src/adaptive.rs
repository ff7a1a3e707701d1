//! [`AdaptiveLimiter`], [`Rejection`] and [`VirtualClock`]: the core's adaptive concurrency
//! limiter (`throttlekit::concurrency`) for Node. A granted permit crosses napi as a number (its
//! id in the limiter's table); lib/adaptive.js wraps it in the JS `Permit`.
//!
//! Options are the core's JSON form (camelCase, unknown fields refused), read by the core; every
//! rule (admission, waiting, the limit's update, the round trip on the core's monotonic clock)
//! is the core's. What is Node's own is the idiom: `tryAcquire` answers at once, `acquire` is a
//! Promise whose wait is a timer, and lib/adaptive.js gives `Permit` a `[Symbol.dispose]`
//! (releasing as `ignore` unless released) so `using` works.
//!
//! The methods here are the typed API and the general path; `tryAcquire` with no partition or a
//! string one, and `release` with a named outcome and no round trip, take adaptive_fast.rs's
//! raw callbacks instead (lib/adaptive.js decides). Both run the same [`AdaptiveCore`] calls.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi::Either;
use napi::Env;
use napi::bindgen_prelude::{PromiseRaw, Unknown};
use napi_derive::napi;
use throttlekit::concurrency as core;

use crate::convert::{self, Options};
use crate::error::{CoreResult, OrThrow, Settled, config, settle};
use crate::handles::{self, Registration};

/// A monotonic clock that moves only when told to (nanoseconds), for replaying exact timelines.
#[napi]
pub struct VirtualClock {
    inner: core::VirtualClock,
}

#[napi]
impl VirtualClock {
    /// A clock showing `nowNs` (default 0).
    #[napi(constructor, ts_args_type = "nowNs?: number")]
    pub fn new(env: &Env, now_ns: Unknown) -> napi::Result<VirtualClock> {
        let now = if convert::is_undefined(&now_ns) { Ok(0) } else { nanos(&now_ns, "nowNs") };
        Ok(VirtualClock { inner: core::VirtualClock::new(now.or_throw(env)?) })
    }

    /// Moves time forward by `ns` (a non-negative integer).
    #[napi(ts_args_type = "ns: number")]
    pub fn advance(&self, env: &Env, ns: Unknown) -> napi::Result<()> {
        self.inner.advance(nanos(&ns, "ns").or_throw(env)?);
        Ok(())
    }

    /// The current time, nanoseconds.
    #[napi]
    pub fn now_ns(&self) -> f64 {
        use core::Ticks;
        self.inner.now_ns() as f64
    }
}

/// A non-negative integer number of nanoseconds.
fn nanos(v: &Unknown<'_>, field: &str) -> CoreResult<u64> {
    let n = convert::number(v, field)?;
    if !(n.is_finite() && n.fract() == 0.0 && (0.0..=9.007_199_254_740_992e15).contains(&n)) {
        return Err(config(field, "must be an integer >= 0 and <= 2^53"));
    }
    Ok(n as u64)
}

/// A refused acquire (the limit was full, or a wait ran out): an answer, not an error.
#[napi(object, object_from_js = false)]
#[derive(Clone, Copy)]
pub struct Rejection {
    /// Always `false` (a `Permit`'s is `true`).
    pub granted: bool,
    /// The limit when the request was refused.
    pub limit: u32,
    /// The requests in flight then.
    pub inflight: u32,
    /// A retry hint: the latest window's latency percentile, ms.
    pub retry_after_ms: i64,
    /// The `Retry-After` header's value: whole seconds, rounded up, at least 1.
    pub retry_after_secs: i64,
}

impl From<core::Rejection> for Rejection {
    fn from(r: core::Rejection) -> Self {
        Rejection {
            granted: false,
            limit: r.limit,
            inflight: r.inflight,
            retry_after_ms: r.retry_after_ms as i64,
            retry_after_secs: r.retry_after_secs() as i64,
        }
    }
}

/// The permits granted and not yet released, by id. The JS side's `Permit` (lib/adaptive.js)
/// holds only its id: handing a number across napi costs far less than a native-backed object
/// with its own GC finalizer. Ids count up and are never reused, so a stale id (a permit
/// released, forgotten or collected already) finds nothing and does nothing.
#[derive(Default)]
struct Permits {
    next: u64,
    held: HashMap<u64, core::Permit>,
}

/// An id as a JS number: below 2^53, exactly.
fn permit_id(v: f64) -> Option<u64> {
    (v.is_finite() && v.fract() == 0.0 && (0.0..9.007_199_254_740_992e15).contains(&v)).then_some(v as u64)
}

/// One limiter and its held permits: what the napi class and the fast path (adaptive_fast.rs,
/// by handle) share.
pub(crate) struct AdaptiveCore {
    limiter: core::AdaptiveLimiter,
    permits: Mutex<Permits>,
}

impl AdaptiveCore {
    fn permits(&self) -> std::sync::MutexGuard<'_, Permits> {
        self.permits.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A granted permit's id (now in the table), or the rejection.
    pub(crate) fn admit(&self, a: core::Admission) -> Result<u64, core::Rejection> {
        match a {
            core::Admission::Granted(p) => {
                let mut t = self.permits();
                let id = t.next;
                t.next += 1;
                t.held.insert(id, p);
                Ok(id)
            }
            core::Admission::Rejected(r) => Err(r),
        }
    }

    /// `tryAcquire`: the core's answer, a granted permit put in the table.
    pub(crate) fn try_acquire(&self, partition: Option<&str>) -> CoreResult<Result<u64, core::Rejection>> {
        self.limiter.try_acquire(partition).map(|a| self.admit(a))
    }

    /// Releases permit `id` (a JS number) with `outcome`, and the round trip `rtt_ns` when
    /// given; whether this call released it (`false` for an id not held: released, forgotten
    /// or never granted).
    pub(crate) fn release(&self, id: f64, outcome: core::Outcome, rtt_ns: Option<i64>) -> CoreResult<bool> {
        let Some(id) = permit_id(id) else { return Ok(false) };
        // Taken out before releasing, so the table's lock is not held while the core updates
        // the limit; put back if the core refuses the round trip (a negative one).
        let Some(mut permit) = self.permits().held.remove(&id) else { return Ok(false) };
        match rtt_ns {
            None => Ok(permit.release(outcome)),
            Some(ns) => permit.release_with_rtt_ns(outcome, ns).inspect_err(|_| {
                self.permits().held.insert(id, permit);
            }),
        }
    }

    /// Drops permit `id` (a JS number) unreleased, as a leak; nothing when it is not held.
    pub(crate) fn forget(&self, id: f64) {
        let permit = permit_id(id).and_then(|id| self.permits().held.remove(&id));
        drop(permit);
    }
}

/// A snapshot of an `AdaptiveLimiter`'s counters and state.
#[napi(object, object_from_js = false)]
pub struct AdaptiveMetrics {
    /// The current limit.
    pub limit: u32,
    /// Permits held now.
    pub inflight: u32,
    /// Waiters in `acquire` now.
    pub waiting: u32,
    /// Permits granted (directly or to a waiter).
    pub acquired: i64,
    /// Requests refused (including `acquire` timeouts).
    pub rejected: i64,
    /// Releases with `success`.
    pub succeeded: i64,
    /// Releases with `dropped`.
    pub dropped: i64,
    /// Releases with `ignore`, leaked permits included.
    pub ignored: i64,
    /// Permits garbage-collected without a release.
    pub leaked: i64,
    /// Successful samples shorter than `minRttUs`, left out of the windows.
    pub short_rtts: i64,
    /// Windows closed (limit updates).
    pub windows: i64,
    /// The no-load round trip in microseconds (0 before the first window).
    pub baseline_rtt_us: i64,
    /// The latest window's latency percentile in microseconds.
    pub latency_us: i64,
    /// Whether the limit is still in slow start.
    pub slow_start: bool,
    /// Per partition: its permits in flight.
    pub partitions: HashMap<String, u32>,
}

/// A concurrency limit that follows the service's latency (docs/adaptive.md).
#[napi]
pub struct AdaptiveLimiter {
    core: Arc<AdaptiveCore>,
    /// This limiter's entry in its environment's table (adaptive_fast.rs), made by the first
    /// `__adaptiveHandle`; dropping the `AdaptiveLimiter` frees it.
    handle: OnceCell<Registration<AdaptiveCore>>,
}

/// A granted permit's id (lib/adaptive.js wraps it in a `Permit`), or the rejection.
type Answer = Either<f64, Rejection>;

fn answer(a: Result<u64, core::Rejection>) -> Answer {
    match a {
        Ok(id) => Either::A(id as f64),
        Err(r) => Either::B(r.into()),
    }
}

fn partition(v: &Unknown<'_>) -> CoreResult<Option<String>> {
    if convert::is_undefined(v) || convert::type_of(v) == napi::sys::ValueType::napi_null {
        return Ok(None);
    }
    convert::string(v, "partition").map(Some)
}

#[napi]
impl AdaptiveLimiter {
    /// A limiter; `options` is the core's `AdaptiveConfig` (`algorithm`, `initialLimit`,
    /// `partitions: [{ name, percent }]`, ...; docs/adaptive.md lists them and their defaults).
    /// `clock` is for tests (default: the monotonic clock).
    #[napi(constructor, ts_args_type = "options?: AdaptiveOptions, clock?: VirtualClock")]
    pub fn new(env: &Env, options: Unknown, clock: Option<&VirtualClock>) -> napi::Result<AdaptiveLimiter> {
        let build = || -> CoreResult<core::AdaptiveLimiter> {
            let config = if convert::is_undefined(&options) {
                core::AdaptiveConfig::default()
            } else {
                core::AdaptiveConfig::from_json(&convert::json(&options, "adaptive")?.to_string())?
            };
            match clock {
                None => core::AdaptiveLimiter::new(config),
                Some(c) => core::AdaptiveLimiter::with_clock(config, Arc::new(c.inner.clone())),
            }
        };
        let core = AdaptiveCore { limiter: build().or_throw(env)?, permits: Mutex::default() };
        Ok(AdaptiveLimiter { core: Arc::new(core), handle: OnceCell::new() })
    }

    /// The handle of this limiter in `table`, registering it on first use.
    pub(crate) fn handle(&self, table: &handles::Shared<AdaptiveCore>) -> CoreResult<f64> {
        handles::handle_in(&self.handle, table, || self.core.clone())
    }

    /// A `Permit` if the limit (and the partition's share, when it is full) has room, else a
    /// `Rejection`; never waits. An unknown partition throws `config_invalid`.
    #[napi(ts_args_type = "partition?: string", ts_return_type = "Permit | Rejection")]
    pub fn try_acquire(&self, env: &Env, partition: Unknown) -> napi::Result<Answer> {
        self::partition(&partition).and_then(|p| self.core.try_acquire(p.as_deref())).map(answer).or_throw(env)
    }

    /// Waits up to `timeoutMs` for a permit, in the limiter's order (FIFO or LIFO), without
    /// blocking the event loop; resolves with a `Rejection` when the wait runs out.
    #[napi(
        ts_args_type = "options: { timeoutMs: number, partition?: string }",
        ts_return_type = "Promise<Permit | Rejection>"
    )]
    pub fn acquire<'e>(&self, env: &'e Env, options: Unknown) -> napi::Result<PromiseRaw<'e, Settled<Answer>>> {
        let args = (|| -> CoreResult<(Option<String>, Duration)> {
            let o = Options::read(&options, "options", &["timeoutMs", "partition"], false)?;
            let ms = o.number("timeoutMs")?.ok_or_else(|| config("timeoutMs", "is required"))?;
            if !(ms.is_finite() && ms >= 0.0 && ms.fract() == 0.0) {
                return Err(config("timeoutMs", "must be an integer >= 0"));
            }
            let p = match o.get("partition") {
                Some(v) => partition(v)?,
                None => None,
            };
            Ok((p, Duration::from_millis(ms as u64)))
        })();
        let core = self.core.clone();
        settle(env, args, move |(p, timeout)| async move {
            core.limiter.acquire(p.as_deref(), timeout).await.map(|a| answer(core.admit(a)))
        })
    }

    /// Releases permit `id` with `outcome` (`'success'` by default, `'ignore'` or `'dropped'`);
    /// the round trip is measured by the core since the grant unless `rttNs` gives it. Whether
    /// this call released it: `false` when it was released (or forgotten) already.
    #[napi(js_name = "__release", skip_typescript)]
    pub fn release(&self, env: &Env, id: f64, outcome: Unknown, rtt_ns: Unknown) -> napi::Result<bool> {
        let run = || -> CoreResult<bool> {
            let outcome = if convert::is_undefined(&outcome) {
                core::Outcome::Success
            } else {
                convert::with_str(&outcome, "outcome", core::Outcome::parse)?
            };
            let rtt = if convert::is_undefined(&rtt_ns) {
                None
            } else {
                let ns = convert::number(&rtt_ns, "rttNs")?;
                if !(ns.is_finite() && ns.fract() == 0.0 && ns.abs() <= 9.007_199_254_740_992e15) {
                    return Err(config("rttNs", "must be an integer within ±2^53"));
                }
                Some(ns as i64)
            };
            self.core.release(id, outcome, rtt)
        };
        run().or_throw(env)
    }

    /// Whether permit `id` was released (or forgotten).
    #[napi(js_name = "__released", skip_typescript)]
    pub fn released(&self, id: f64) -> bool {
        permit_id(id).is_none_or(|id| !self.core.permits().held.contains_key(&id))
    }

    /// The current limit.
    #[napi]
    pub fn limit(&self) -> u32 {
        self.core.limiter.limit()
    }

    /// Permits held now.
    #[napi]
    pub fn inflight(&self) -> u32 {
        self.core.limiter.inflight()
    }

    /// A snapshot of every counter.
    #[napi]
    pub fn metrics(&self) -> AdaptiveMetrics {
        let m = self.core.limiter.metrics();
        AdaptiveMetrics {
            limit: m.limit,
            inflight: m.inflight,
            waiting: m.waiting,
            acquired: m.acquired as i64,
            rejected: m.rejected as i64,
            succeeded: m.succeeded as i64,
            dropped: m.dropped as i64,
            ignored: m.ignored as i64,
            leaked: m.leaked as i64,
            short_rtts: m.short_rtts as i64,
            windows: m.windows as i64,
            baseline_rtt_us: m.baseline_rtt_us as i64,
            latency_us: m.latency_us as i64,
            slow_start: m.slow_start,
            partitions: m.partitions.into_iter().collect(),
        }
    }
}

/// The options of `new AdaptiveLimiter()`: the core's `AdaptiveConfig` (docs/adaptive.md).
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; the core parses the JSON.
pub struct AdaptiveOptions {
    /// The update rule (default `'gradient2'`).
    #[napi(ts_type = "'fixed' | 'aimd' | 'vegas' | 'gradient2'")]
    pub algorithm: Option<String>,
    /// The limit before any sample (default 20; for `fixed`, the limit).
    pub initial_limit: Option<f64>,
    /// The lowest the limit goes (default 1).
    pub min_limit: Option<f64>,
    /// The highest the limit goes (default 1000).
    pub max_limit: Option<f64>,
    /// The window's latency percentile, in (0, 1] (default 0.9).
    pub percentile: Option<f64>,
    /// Round trips shorter than this (µs) are ignored (default 100).
    pub min_rtt_us: Option<f64>,
    /// A window closes after this many samples, or `limit` if more (default 50).
    pub window_min_samples: Option<f64>,
    /// The limit never exceeds this multiple of the window's in-flight peak (default 2).
    pub peak_multiple: Option<f64>,
    /// Double the limit each uncongested window until the first congestion signal.
    pub slow_start: Option<bool>,
    /// The order `acquire` waiters are served in (default `'fifo'`).
    #[napi(ts_type = "'fifo' | 'lifo'")]
    pub order: Option<String>,
    /// Guaranteed shares of the limit, enforced only when it is full.
    #[napi(ts_type = "{ name: string, percent: number }[]")]
    pub partitions: Option<serde_json::Value>,
    /// aimd: congestion threshold (× no-load RTT, default 2); gradient2: tolerated latency
    /// (default 1.5).
    pub tolerance: Option<f64>,
    /// aimd: the factor a congested window multiplies the limit by (default 0.9).
    pub backoff: Option<f64>,
    /// vegas: the queue below which the limit grows, × log10(limit) (default 3).
    pub alpha: Option<f64>,
    /// vegas: the queue above which the limit shrinks, × log10(limit) (default 6).
    pub beta: Option<f64>,
    /// gradient2: how far each window moves the limit toward its estimate (default 0.5).
    pub smoothing: Option<f64>,
}
