//! `Limiter`: a strategy bound to a store, a clock and a key prefix.
//!
//! Each method converts its arguments, calls the core method of the same name and converts the
//! result. `*_sync` methods block; the others return awaitables driven by the tokio runtime, so
//! a Redis round trip never blocks the event loop. A blocking call on a store that does I/O
//! (Redis) releases the GIL while it waits; on the memory store it does not, because the call
//! is shorter than the release would be.

use std::sync::Arc;

use crate::aio::awaitable;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::clock;
use crate::decision::Decision;
use crate::error::IntoPyResult;
use crate::store::{self, blocking};
use crate::strategy::{self, Strategy};
use crate::validate::{self, Cost, string, strings};

/// A strategy bound to a store, a clock and a key prefix (`prefix:key`).
#[pyclass(frozen, module = "throttlekit")]
pub struct Limiter {
    pub(crate) inner: Arc<throttlekit::Limiter>,
    /// Whether blocking calls do I/O (and so release the GIL).
    pub(crate) io: bool,
    /// Whether checks take the sliding-window log's path on the memory store, which
    /// `check_sync` calls from a function of its own (`check_sync_log`).
    pub(crate) log: bool,
    /// Whether the store's clock decides (`HttpLimiter` then cannot render the fields at the
    /// decision's own clock reading; core has no getter for it).
    pub(crate) server_clock: bool,
}

/// A core result as the Python object the `*_sync` methods return. Matching on the core result
/// directly, rather than `result.py()?.into()`, builds the object from core's fields where they
/// are: the detour through `PyResult<Decision>` copied them twice, with store-forwarding stalls.
#[inline]
fn decision(py: Python<'_>, result: throttlekit::Result<throttlekit::Decision>) -> PyResult<Bound<'_, PyAny>> {
    match result {
        Ok(d) => Decision::from(d).into_pyobject(py),
        Err(err) => Err(crate::error::to_py(err)),
    }
}

/// `check_sync` for a sliding-window log on the memory store (no I/O, so the GIL is kept):
/// core's check inlined here (see core's `Limiter::check_sync_log_inlined`). A function of its
/// own, so that `check_sync`'s GCRA path, inlined there, is compiled as before.
///
/// The decision's fields are read one by one, each as wide as it was written. Why: the
/// compiler keeps the result of the check's ways (the log's, the fallback call's) in one slot
/// in memory, written 8 bytes (and 1, for the flags) at a time, and copied it out 16 bytes at a
/// time: a load spanning two stores waits for both to reach the cache (no store forwarding),
/// 15-25% of this function's samples in `perf` (docs/performance.md).
#[inline(never)]
fn check_sync_log<'py>(
    py: Python<'py>,
    limiter: &throttlekit::Limiter,
    key: &str,
    cost: u64,
) -> PyResult<Bound<'py, PyAny>> {
    match limiter.check_sync_log_inlined(key, cost) {
        Ok(d) => Decision::read_by_fields(&d).into_pyobject(py),
        Err(err) => Err(crate::error::to_py(err)),
    }
}

impl Limiter {
    /// `check_sync` once its arguments are read: what both PyO3's method and `fast_check`'s raw
    /// one call.
    #[inline(always)]
    pub(crate) fn check_one<'py>(&self, py: Python<'py>, key: &str, cost: u64) -> PyResult<Bound<'py, PyAny>> {
        if self.log {
            return check_sync_log(py, &self.inner, key, cost);
        }
        // By fields, as `check_sync_log` reads: the GCRA path inlined here and the call for the
        // other strategies leave their decision in one `Result` in memory, which a plain match
        // copied out 16 bytes at a time, waiting on the field-by-field stores (14% of a GCRA
        // check's samples in `perf`, docs/performance.md).
        match blocking(py, self.io, || self.inner.check_sync(key, cost)) {
            Ok(d) => Decision::read_by_fields(&d).into_pyobject(py),
            Err(err) => Err(crate::error::to_py(err)),
        }
    }
}

#[pymethods]
impl Limiter {
    /// A limiter for `strategy` (a `Strategy` or a dict spec). Defaults: a fresh `MemoryStore`,
    /// the system clock, no prefix, the store's `server_clock` and `fail_policy` (without
    /// either: the caller's clock, and fail-closed for quotas / raise otherwise).
    #[new]
    ///
    /// `mode` is `"strict"` (default), `"cached_deny"` or `"leased"`; `lease` a dict of the
    /// leased mode's options (`batch`, `low_water`, `window_coupled`, `max_keys`; see
    /// docs/leasing.md).
    #[pyo3(signature = (strategy, *, store = None, clock = None, prefix = None, server_clock = None, fail_policy = None, metrics = None, mode = None, lease = None))]
    #[pyo3(
        text_signature = "(strategy, *, store=None, clock=None, prefix='', server_clock=None, fail_policy=None, metrics=False, mode='strict', lease=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        strategy: &Bound<'_, PyAny>,
        store: Option<&Bound<'_, PyAny>>,
        clock: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        server_clock: Option<&Bound<'_, PyAny>>,
        fail_policy: Option<&Bound<'_, PyAny>>,
        metrics: Option<&Bound<'_, PyAny>>,
        mode: Option<&Bound<'_, PyAny>>,
        lease: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let strategy = strategy::from_any(strategy, "strategy")?;
        let mode = crate::lease::mode(mode, lease)?;
        let store = store::from_arg(store)?;
        let (server_clock, fail_policy) = store.settings(server_clock, fail_policy)?;
        let io = store.does_io();
        let mut builder = throttlekit::Limiter::builder(strategy)
            .store(store.store)
            .clock(clock::from_arg(clock)?)
            .server_clock(server_clock)
            .metrics(metrics.map(|m| validate::flag(m, "metrics")).transpose()?.unwrap_or(false));
        if let Some(p) = prefix.filter(|p| !p.is_none()) {
            builder = builder.prefix(string(p, "prefix")?.to_owned());
        }
        if let Some(policy) = fail_policy {
            builder = builder.fail_policy(policy);
        }
        let builder = builder.mode(mode).py()?;
        let inner = builder.build();
        let log = inner.is_log_on_memory();
        Ok(Limiter { inner: Arc::new(inner), io, log, server_clock })
    }

    /// Checks a request of `cost` units for `key`, consuming them when allowed.
    #[pyo3(signature = (key, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, key, cost=1)")]
    //
    // The class's `check_sync` attribute is `fast_check`'s raw method, which answers a call with
    // one `str` key on a memory store itself (`check_one`) and passes every other call here.
    fn check_sync<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>, cost: Cost) -> PyResult<Bound<'py, PyAny>> {
        self.check_one(py, string(key, "key")?, cost.0)
    }

    /// Awaitable `check_sync` (Redis: one round trip, off the event loop).
    #[pyo3(signature = (key, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, key, cost=1)")]
    fn check<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>, cost: Cost) -> PyResult<Bound<'py, PyAny>> {
        let key = string(key, "key")?.to_owned();
        let cost = cost.0;
        let limiter = self.inner.clone();
        awaitable(py, async move { limiter.check(&key, cost).await.py().map(Decision::from) })
    }

    /// Checks one request of `cost` per key, all at one clock reading (not atomic together).
    #[pyo3(signature = (keys, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, keys, cost=1)")]
    fn check_many_sync(&self, py: Python<'_>, keys: &Bound<'_, PyAny>, cost: Cost) -> PyResult<Vec<Decision>> {
        let keys = strings(keys, "keys")?;
        let cost = cost.0;
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let decisions = blocking(py, self.io, || self.inner.check_many_sync(&refs, cost)).py()?;
        Ok(decisions.into_iter().map(Decision::from).collect())
    }

    /// Awaitable `check_many_sync`; on Redis the checks are pipelined.
    #[pyo3(signature = (keys, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, keys, cost=1)")]
    fn check_many<'py>(&self, py: Python<'py>, keys: &Bound<'_, PyAny>, cost: Cost) -> PyResult<Bound<'py, PyAny>> {
        let keys = strings(keys, "keys")?;
        let cost = cost.0;
        let limiter = self.inner.clone();
        awaitable(py, async move {
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            let decisions = limiter.check_many(&refs, cost).await.py()?;
            Ok(decisions.into_iter().map(Decision::from).collect::<Vec<_>>())
        })
    }

    /// The key's current capacity, consuming nothing: `allowed` says whether a cost-1 request
    /// would pass, `remaining` how many units would.
    fn peek_sync<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let key = string(key, "key")?;
        decision(py, blocking(py, self.io, || self.inner.peek_sync(key)))
    }

    /// Awaitable `peek_sync`.
    fn peek<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let key = string(key, "key")?.to_owned();
        let limiter = self.inner.clone();
        awaitable(py, async move { limiter.peek(&key).await.py().map(Decision::from) })
    }

    /// The decision a check of `cost` would get now, consuming nothing.
    #[pyo3(signature = (key, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, key, cost=1)")]
    fn forecast_sync<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>, cost: Cost) -> PyResult<Bound<'py, PyAny>> {
        let key = string(key, "key")?;
        let cost = cost.0;
        decision(py, blocking(py, self.io, || self.inner.forecast_sync(key, cost)))
    }

    /// Awaitable `forecast_sync`.
    #[pyo3(signature = (key, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, key, cost=1)")]
    fn forecast<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>, cost: Cost) -> PyResult<Bound<'py, PyAny>> {
        let key = string(key, "key")?.to_owned();
        let cost = cost.0;
        let limiter = self.inner.clone();
        awaitable(py, async move { limiter.forecast(&key, cost).await.py().map(Decision::from) })
    }

    /// Forgets `key`'s state.
    fn reset_sync(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = string(key, "key")?;
        blocking(py, self.io, || self.inner.reset_sync(key)).py()
    }

    /// Awaitable `reset_sync`.
    fn reset<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let key = string(key, "key")?.to_owned();
        let limiter = self.inner.clone();
        awaitable(py, async move { limiter.reset(&key).await.py().map(|()| crate::none()) })
    }

    /// The strategy.
    #[getter]
    fn strategy(&self) -> Strategy {
        Strategy { inner: self.inner.strategy().clone() }
    }

    /// The key prefix (`""` for none).
    #[getter]
    fn prefix(&self) -> &str {
        self.inner.prefix()
    }

    /// The two-tier mode: `"strict"`, `"cached_deny"` or `"leased"`.
    #[getter]
    fn mode(&self) -> &'static str {
        self.inner.mode().name()
    }

    /// The local tier's counters: `local_admits`, `local_denials`, `leases`,
    /// `late_credits_dropped`, `credits_returned` (all 0 in strict mode).
    fn tier_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::lease::stats(py, self.inner.tier_stats())
    }

    /// Gives back the leased credits of keys unused for `idle_ms` (every key: `None`, as on
    /// shutdown) where the strategy can take them back; returns the units taken back.
    #[pyo3(signature = (idle_ms = None))]
    fn release_leases_sync(&self, py: Python<'_>, idle_ms: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        let idle = crate::lease::idle(idle_ms)?;
        blocking(py, self.io, || self.inner.release_leases_sync(idle)).py()
    }

    /// Awaitable `release_leases_sync`.
    #[pyo3(signature = (idle_ms = None))]
    fn release_leases<'py>(&self, py: Python<'py>, idle_ms: Option<&Bound<'_, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        let idle = crate::lease::idle(idle_ms)?;
        let limiter = self.inner.clone();
        awaitable(py, async move { limiter.release_leases(idle).await.py() })
    }

    /// The limiter's counters as a dict (`None` unless built with `metrics=True`): checks
    /// `allowed` / `denied`, `fallback_allowed` / `fallback_denied`, `peeks` and `forecasts`
    /// answered (apart from the checks), `errors` by code, and
    /// `store_latency` (`bounds_us`, `counts`, `sum_us`, `count`) of calls to a store outside
    /// the process. All cumulative: feed them to OpenTelemetry observable counters.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        crate::metrics::to_dict(py, self.inner.metrics())
    }

    /// `"fail_closed"`, `"fail_open"` or `"raise"`.
    #[getter]
    fn fail_policy(&self) -> &'static str {
        validate::fail_policy_name(self.inner.fail_policy())
    }

    fn __repr__(&self) -> PyResult<String> {
        Ok(format!("Limiter(kind={:?}, prefix={:?})", self.inner.strategy().kind(), self.inner.prefix()))
    }
}
