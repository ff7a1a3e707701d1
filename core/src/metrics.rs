//! Per-limiter metrics: decisions allowed and denied, errors by code, fail-policy fallbacks,
//! peeks and forecasts answered, and a latency histogram of calls to a remote store. The same
//! counters serve a [`crate::MultiLimiter`] (its combined decision) and a [`crate::Shaper`]
//! (a reservation accepted counts as allowed, one rejected as denied). Off unless asked
//! ([`crate::LimiterBuilder::metrics`]); when off, a call pays one branch on a `None`. On the
//! memory store's fast path a decision is counted under the shard lock the check holds anyway
//! (`LimiterMetrics::record_locked`), so counting costs no locked instruction.
//!
//! Readable two ways: [`LimiterMetrics::snapshot`] (cumulative counters and an explicit-bucket
//! histogram, the shape OpenTelemetry's asynchronous instruments and Prometheus take, which
//! the bindings expose), and, with the `metrics` cargo feature, every event is also reported
//! through the [`metrics`](https://docs.rs/metrics) crate facade to whatever recorder the
//! application installed.
//!
//! What is counted: every call, once, by the limiter, multi limiter or shaper that made it,
//! whichever way it went: sync or async, the memory store or Redis (one node, a cluster,
//! Sentinel), strict or two-tier, and a call a binding carries on its own transport
//! (`Limiter::prepare` and `finish` in core/src/redis/transport.rs: Node's default Promise
//! calls on a `RedisStore`). A call refused before it reaches a store (a bad cost, a key too
//! long) is counted once, as its error.
//!
//! What is timed: calls that leave the process through the store's own paths (a Redis round
//! trip). An in-process store answers in tens of nanoseconds, less than reading a clock twice
//! would cost, so its calls are counted but not timed; a binding's own transport is not timed
//! either (the core sees the call prepared and its reply, not when the bytes left).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::decision::Decision;
use crate::error::{ErrorCode, Result};
use crate::store::Store;

/// Upper bounds (inclusive, microseconds) of the store-latency histogram's buckets; a last,
/// unbounded bucket follows. From a fast local Redis (~50 µs) to a timeout (1 s and more).
pub const LATENCY_BOUNDS_US: [u64; 14] =
    [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000];

/// One store call being timed, for the limiters that time their calls the same way (the multi
/// limiter, the shaper, the limiter's async path): only when metrics are on and the store
/// leaves the process (see the module doc); otherwise it holds nothing and costs nothing.
pub(crate) struct StoreTimer<'a>(Option<(&'a LimiterMetrics, Instant)>);

impl<'a> StoreTimer<'a> {
    /// Starts timing a call to `store` when `metrics` are on and the store is not in-process.
    pub(crate) fn start(metrics: Option<&'a LimiterMetrics>, store: &dyn Store) -> StoreTimer<'a> {
        StoreTimer(metrics.filter(|_| store.as_memory().is_none()).map(|m| (m, Instant::now())))
    }

    /// Records the call's latency, if it was timed.
    pub(crate) fn stop(self) {
        if let Some((m, started)) = self.0 {
            m.record_latency(started.elapsed());
        }
    }
}

/// Counts `e` by its code when `metrics` are on, and hands it back: for a call refused before
/// it reached the store (a bad argument), whose error is its outcome.
pub(crate) fn count_error(metrics: Option<&LimiterMetrics>, e: crate::error::Error) -> crate::error::Error {
    if let Some(m) = metrics {
        m.record_error(e.code());
    }
    e
}

/// Counters of one limiter. Cheap to share (the bindings keep an `Arc`).
#[derive(Debug, Default)]
pub struct LimiterMetrics {
    allowed: AtomicU64,
    denied: AtomicU64,
    /// The memory store's fast path counts here, one stripe per shard of the limiter's store,
    /// while it holds that shard's lock (see [`LimiterMetrics::record_locked`]).
    stripes: Box<[Stripe]>,
    fallback_allowed: AtomicU64,
    fallback_denied: AtomicU64,
    peeks: AtomicU64,
    forecasts: AtomicU64,
    /// Indexed by `ErrorCode as usize - 1`.
    errors: [AtomicU64; ErrorCode::ALL.len()],
    latency_buckets: [AtomicU64; LATENCY_BOUNDS_US.len() + 1],
    latency_sum_us: AtomicU64,
    #[cfg(feature = "metrics")]
    facade: Option<facade::Handles>,
}

/// Allowed and denied counts of one memory-store shard, on a cache line of their own.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Stripe {
    allowed: AtomicU64,
    denied: AtomicU64,
}

/// A point-in-time copy of a limiter's counters (all cumulative since the limiter was built).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// Checks allowed by the store's decision (fallbacks not included).
    pub allowed: u64,
    /// Checks denied by the store's decision (fallbacks not included).
    pub denied: u64,
    /// Checks the fail policy allowed because the store was unavailable (`fail_open`).
    pub fallback_allowed: u64,
    /// Checks the fail policy denied because the store was unavailable (`fail_closed`).
    pub fallback_denied: u64,
    /// Peeks answered (a failed one counts in `errors`). A peek consumes nothing, so it is
    /// counted apart from the checks.
    pub peeks: u64,
    /// Forecasts answered (a failed one counts in `errors`), apart from the checks too.
    pub forecasts: u64,
    /// Failed calls by error code, in [`ErrorCode::ALL`] order, zeros included.
    pub errors: Vec<(ErrorCode, u64)>,
    /// Calls to a remote store per latency bucket: `latency_counts[i]` counts calls of at most
    /// [`LATENCY_BOUNDS_US`]`[i]` µs (and more than the bound before); the last counts the rest.
    pub latency_counts: Vec<u64>,
    /// Sum of the timed calls' latencies, µs.
    pub latency_sum_us: u64,
}

impl MetricsSnapshot {
    /// Calls timed (the histogram's total count).
    pub fn latency_count(&self) -> u64 {
        self.latency_counts.iter().sum()
    }

    /// The count of failed calls with `code`.
    pub fn errors_of(&self, code: ErrorCode) -> u64 {
        self.errors.iter().find(|(c, _)| *c == code).map_or(0, |(_, n)| *n)
    }
}

impl LimiterMetrics {
    /// Fresh counters; `name` labels what the `metrics` facade reports (the limiter's prefix).
    pub fn new(name: &str) -> LimiterMetrics {
        LimiterMetrics::striped(name, 0)
    }

    /// Fresh counters with `stripes` per-shard stripes (the shard count of a memory store).
    pub(crate) fn striped(name: &str, stripes: usize) -> LimiterMetrics {
        #[cfg(not(feature = "metrics"))]
        let _ = name;
        LimiterMetrics {
            stripes: (0..stripes).map(|_| Stripe::default()).collect(),
            #[cfg(feature = "metrics")]
            facade: Some(facade::Handles::new(name)),
            ..LimiterMetrics::default()
        }
    }

    /// Counts a memory-store decision while the caller holds the lock of shard `shard`.
    ///
    /// Why: a shared atomic add costs a locked instruction, about a quarter of a one-key check.
    /// Every write to a shard's stripe happens under that shard's lock, which orders them, so a
    /// plain load and store (no locked instruction) count exactly; readers only load.
    #[inline(always)]
    pub(crate) fn record_locked(&self, shard: usize, allowed: bool) {
        let Some(stripe) = self.stripes.get(shard) else {
            // Not striped for this store: the shared counters.
            return self.record_check(&Ok(Decision { allowed, ..Decision::default() }));
        };
        let counter = if allowed { &stripe.allowed } else { &stripe.denied };
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        if let Some(f) = &self.facade {
            f.decision(&Decision { allowed, ..Decision::default() });
        }
    }

    /// Counts the outcome of one check.
    #[inline]
    pub fn record_check(&self, result: &Result<Decision>) {
        match result {
            Ok(d) => {
                let counter = match (d.fallback, d.allowed) {
                    (false, true) => &self.allowed,
                    (false, false) => &self.denied,
                    (true, true) => &self.fallback_allowed,
                    (true, false) => &self.fallback_denied,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                #[cfg(feature = "metrics")]
                if let Some(f) = &self.facade {
                    f.decision(d);
                }
            }
            Err(e) => self.record_error(e.code()),
        }
    }

    /// Counts the outcome of one peek.
    pub fn record_peek(&self, result: &Result<Decision>) {
        self.record_read(result, &self.peeks, ReadOp::Peek);
    }

    /// Counts the outcome of one forecast.
    pub fn record_forecast(&self, result: &Result<Decision>) {
        self.record_read(result, &self.forecasts, ReadOp::Forecast);
    }

    fn record_read(&self, result: &Result<Decision>, counter: &AtomicU64, _op: ReadOp) {
        match result {
            Ok(_) => {
                counter.fetch_add(1, Ordering::Relaxed);
                #[cfg(feature = "metrics")]
                if let Some(f) = &self.facade {
                    f.read(_op);
                }
            }
            Err(e) => self.record_error(e.code()),
        }
    }

    /// Counts one shaper reservation: accepted as allowed, rejected as denied.
    pub fn record_reservation(&self, result: &Result<crate::decision::Reservation>) {
        match result {
            Ok(r) => self.record_check(&Ok(Decision { allowed: r.accepted, ..Decision::default() })),
            Err(e) => self.record_error(e.code()),
        }
    }

    /// Counts a failed call.
    #[cold]
    pub fn record_error(&self, code: ErrorCode) {
        self.errors[code as usize - 1].fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        if let Some(f) = &self.facade {
            f.error(code);
        }
    }

    /// Records one remote store call's latency.
    pub fn record_latency(&self, elapsed: Duration) {
        let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let bucket = LATENCY_BOUNDS_US.iter().position(|&b| us <= b).unwrap_or(LATENCY_BOUNDS_US.len());
        self.latency_buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.latency_sum_us.fetch_add(us, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        if let Some(f) = &self.facade {
            f.latency(elapsed);
        }
    }

    /// The counters now. Each counter is read once; counters updated while it reads may be
    /// seen in one and not yet in another.
    pub fn snapshot(&self) -> MetricsSnapshot {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let striped = |pick: fn(&Stripe) -> &AtomicU64| self.stripes.iter().map(|s| get(pick(s))).sum::<u64>();
        MetricsSnapshot {
            allowed: get(&self.allowed) + striped(|s| &s.allowed),
            denied: get(&self.denied) + striped(|s| &s.denied),
            fallback_allowed: get(&self.fallback_allowed),
            fallback_denied: get(&self.fallback_denied),
            peeks: get(&self.peeks),
            forecasts: get(&self.forecasts),
            errors: ErrorCode::ALL.iter().map(|&c| (c, get(&self.errors[c as usize - 1]))).collect(),
            latency_counts: self.latency_buckets.iter().map(get).collect(),
            latency_sum_us: get(&self.latency_sum_us),
        }
    }
}

/// Which read a peek/forecast counter stands for (the facade's label).
#[derive(Clone, Copy, Debug)]
enum ReadOp {
    Peek,
    Forecast,
}

/// The `metrics` crate facade: handles registered once per limiter, so an event is one call
/// into the installed recorder (no lookup by name).
#[cfg(feature = "metrics")]
mod facade {
    use std::time::Duration;

    use metrics::{Counter, Histogram, counter, histogram};

    use super::ReadOp;
    use crate::decision::Decision;
    use crate::error::ErrorCode;

    pub(super) struct Handles {
        allowed: Counter,
        denied: Counter,
        fallback_allowed: Counter,
        fallback_denied: Counter,
        errors: Vec<Counter>,
        peeks: Counter,
        forecasts: Counter,
        latency: Histogram,
    }

    impl std::fmt::Debug for Handles {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Handles")
        }
    }

    impl Handles {
        pub(super) fn new(name: &str) -> Handles {
            let limiter = name.to_owned();
            let decision = |outcome: &'static str, fallback: &'static str| counter!("throttlekit_decisions_total", "limiter" => limiter.clone(), "outcome" => outcome, "fallback" => fallback);
            Handles {
                allowed: decision("allowed", "false"),
                denied: decision("denied", "false"),
                fallback_allowed: decision("allowed", "true"),
                fallback_denied: decision("denied", "true"),
                errors: ErrorCode::ALL
                    .iter()
                    .map(|c| counter!("throttlekit_errors_total", "limiter" => limiter.clone(), "code" => c.as_str()))
                    .collect(),
                peeks: counter!("throttlekit_reads_total", "limiter" => limiter.clone(), "op" => "peek"),
                forecasts: counter!("throttlekit_reads_total", "limiter" => limiter.clone(), "op" => "forecast"),
                latency: histogram!("throttlekit_store_call_seconds", "limiter" => limiter.clone()),
            }
        }

        pub(super) fn decision(&self, d: &Decision) {
            match (d.fallback, d.allowed) {
                (false, true) => &self.allowed,
                (false, false) => &self.denied,
                (true, true) => &self.fallback_allowed,
                (true, false) => &self.fallback_denied,
            }
            .increment(1);
        }

        pub(super) fn read(&self, op: ReadOp) {
            match op {
                ReadOp::Peek => &self.peeks,
                ReadOp::Forecast => &self.forecasts,
            }
            .increment(1);
        }

        pub(super) fn error(&self, code: ErrorCode) {
            self.errors[code as usize - 1].increment(1);
        }

        pub(super) fn latency(&self, elapsed: Duration) {
            self.latency.record(elapsed.as_secs_f64());
        }
    }
}
