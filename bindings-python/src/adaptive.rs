//! `AdaptiveLimiter`, `Permit`, `Rejection` and `VirtualClock`: core's adaptive concurrency
//! limiter (`throttlekit::concurrency`) for Python.
//!
//! Arguments are converted here and every rule is core's: admission, waiting, the limit's
//! update, the round trip (measured on core's monotonic clock unless the caller gives one) and
//! every `config_invalid`. What is Python's own is the idiom: `try_acquire` answers at once,
//! `acquire_sync` blocks with the GIL released, `acquire` is an awaitable whose wait is a timer,
//! and a permit is a context manager (`with` / `async with`) whose exit releases it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::exceptions::PyTimeoutError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};
use throttlekit::concurrency as core;

use crate::aio::awaitable;
use crate::error::{self, IntoPyResult};
use crate::validate::{self, count, flag, integer, opt_option, string};

/// A monotonic clock that moves only when told to (nanoseconds), for replaying exact timelines.
#[pyclass(frozen, module = "throttlekit")]
#[derive(Clone)]
pub struct VirtualClock {
    inner: core::VirtualClock,
}

#[pymethods]
impl VirtualClock {
    /// A clock showing `now_ns` (default 0).
    #[new]
    #[pyo3(signature = (now_ns = None))]
    fn new(now_ns: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let now = match now_ns {
            Some(v) => count(v, "now_ns")?,
            None => 0,
        };
        Ok(VirtualClock { inner: core::VirtualClock::new(now) })
    }

    /// Moves time forward by `ns` (>= 0).
    fn advance(&self, ns: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.advance(count(ns, "ns")?);
        Ok(())
    }

    /// The current time, nanoseconds.
    fn now_ns(&self) -> u64 {
        use core::Ticks;
        self.inner.now_ns()
    }
}

/// A concurrency limit that follows the service's latency (`docs/adaptive.md`).
///
/// `try_acquire` returns a `Permit` or a `Rejection` (both have `.granted`); a refusal is an
/// ordinary answer, not an exception. Release a permit with `permit.release(outcome)` or use it
/// as a context manager. Bad options raise `ConfigInvalidError` naming the field.
#[pyclass(frozen, module = "throttlekit")]
pub struct AdaptiveLimiter {
    inner: core::AdaptiveLimiter,
}

/// The `clock=` argument: `None` (monotonic) or a `VirtualClock`.
/// The limiter; a `config_invalid` names its field through `names` (as the caller spelled it).
fn build(
    config: core::AdaptiveConfig,
    clock: Option<&Bound<'_, PyAny>>,
    names: fn(throttlekit::Error) -> throttlekit::Error,
) -> PyResult<AdaptiveLimiter> {
    let inner = match clock.filter(|c| !c.is_none()) {
        None => core::AdaptiveLimiter::new(config),
        Some(c) => match c.cast::<VirtualClock>() {
            Ok(v) => core::AdaptiveLimiter::with_clock(config, Arc::new(v.get().inner.clone())),
            Err(_) => return Err(error::wrong_type("clock", "a VirtualClock or None", c)),
        },
    };
    Ok(AdaptiveLimiter { inner: inner.map_err(names).py()? })
}

/// An argument given and not `None`.
fn present<'a, 'py>(obj: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    obj.filter(|o| !o.is_none())
}

fn opt_int(obj: Option<&Bound<'_, PyAny>>, arg: &str) -> PyResult<Option<i64>> {
    obj.filter(|o| !o.is_none()).map(|o| integer(o, arg)).transpose()
}

/// `{"live": 90, "batch": 10}`: names and percentages, in order.
fn partitions(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<core::PartitionConfig>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(Vec::new()) };
    let dict = obj.cast::<PyDict>().map_err(|_| error::wrong_type("partitions", "a dict of name to percent", obj))?;
    dict.iter()
        .map(|(name, percent)| {
            Ok(core::PartitionConfig {
                name: string(&name, "partitions")?.to_owned(),
                percent: validate::option(&percent, "partitions")?,
            })
        })
        .collect()
}

fn admission(py: Python<'_>, a: core::Admission) -> PyResult<Py<PyAny>> {
    Ok(match a {
        core::Admission::Granted(p) => Py::new(py, Permit { inner: Mutex::new(p) })?.into_any(),
        core::Admission::Rejected(r) => Py::new(py, Rejection::from(r))?.into_any(),
    })
}

/// An admission handed back by an awaitable, made a Python object on the loop thread.
struct Answer(core::Admission);

impl<'py> IntoPyObject<'py> for Answer {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(admission(py, self.0)?.into_bound(py))
    }
}

fn timeout(obj: &Bound<'_, PyAny>) -> PyResult<Duration> {
    Ok(Duration::from_millis(count(obj, "timeout_ms")?))
}

#[pymethods]
impl AdaptiveLimiter {
    /// A limiter running `algorithm` (`"fixed"`, `"aimd"`, `"vegas"` or `"gradient2"`); every
    /// option left `None` takes core's default. `partitions` maps names to guaranteed percentages
    /// of the limit (enforced only when it is full); `order` is `"fifo"` or `"lifo"`.
    #[new]
    #[pyo3(signature = (
        algorithm = None, *, initial_limit = None, min_limit = None, max_limit = None, percentile = None,
        min_rtt_us = None, window_min_samples = None, peak_multiple = None, slow_start = None, order = None,
        partitions = None, tolerance = None, backoff = None, alpha = None, beta = None, smoothing = None,
        clock = None
    ))]
    #[pyo3(
        text_signature = "(algorithm='gradient2', *, initial_limit=None, min_limit=None, max_limit=None, percentile=None, min_rtt_us=None, window_min_samples=None, peak_multiple=None, slow_start=None, order='fifo', partitions=None, tolerance=None, backoff=None, alpha=None, beta=None, smoothing=None, clock=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        algorithm: Option<&Bound<'_, PyAny>>,
        initial_limit: Option<&Bound<'_, PyAny>>,
        min_limit: Option<&Bound<'_, PyAny>>,
        max_limit: Option<&Bound<'_, PyAny>>,
        percentile: Option<&Bound<'_, PyAny>>,
        min_rtt_us: Option<&Bound<'_, PyAny>>,
        window_min_samples: Option<&Bound<'_, PyAny>>,
        peak_multiple: Option<&Bound<'_, PyAny>>,
        slow_start: Option<&Bound<'_, PyAny>>,
        order: Option<&Bound<'_, PyAny>>,
        partitions: Option<&Bound<'_, PyAny>>,
        tolerance: Option<&Bound<'_, PyAny>>,
        backoff: Option<&Bound<'_, PyAny>>,
        alpha: Option<&Bound<'_, PyAny>>,
        beta: Option<&Bound<'_, PyAny>>,
        smoothing: Option<&Bound<'_, PyAny>>,
        clock: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let config = core::AdaptiveConfig {
            algorithm: match present(algorithm) {
                Some(a) => core::AlgorithmKind::parse(string(a, "algorithm")?).py()?,
                None => core::AlgorithmKind::default(),
            },
            initial_limit: opt_int(initial_limit, "initial_limit")?,
            min_limit: opt_int(min_limit, "min_limit")?,
            max_limit: opt_int(max_limit, "max_limit")?,
            percentile: opt_option(percentile, "percentile")?,
            min_rtt_us: opt_int(min_rtt_us, "min_rtt_us")?,
            window_min_samples: opt_int(window_min_samples, "window_min_samples")?,
            peak_multiple: opt_option(peak_multiple, "peak_multiple")?,
            slow_start: present(slow_start).map(|f| flag(f, "slow_start")).transpose()?,
            order: match present(order) {
                Some(o) => core::QueueOrder::parse(string(o, "order")?).py()?,
                None => core::QueueOrder::default(),
            },
            partitions: self::partitions(partitions)?,
            tolerance: opt_option(tolerance, "tolerance")?,
            backoff: opt_option(backoff, "backoff")?,
            alpha: opt_option(alpha, "alpha")?,
            beta: opt_option(beta, "beta")?,
            smoothing: opt_option(smoothing, "smoothing")?,
        };
        // Core names its fields in camelCase (its JSON); these were written in snake_case.
        build(config, clock, core::snake_case_fields)
    }

    /// A limiter from core's JSON form (camelCase, unknown fields refused), as in a config file
    /// or the vectors.
    #[classmethod]
    #[pyo3(signature = (text, *, clock = None))]
    fn from_json(
        _cls: &Bound<'_, PyType>,
        text: &Bound<'_, PyAny>,
        clock: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        build(core::AdaptiveConfig::from_json(string(text, "text")?).py()?, clock, std::convert::identity)
    }

    /// A `Permit` if the limit (and the partition's share, when it is full) has room, else a
    /// `Rejection`; never waits. An unknown partition is `ConfigInvalidError`.
    #[pyo3(signature = (partition = None))]
    fn try_acquire(&self, py: Python<'_>, partition: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let partition = partition.filter(|p| !p.is_none()).map(|p| string(p, "partition")).transpose()?;
        admission(py, self.inner.try_acquire(partition).py()?)
    }

    /// Waits up to `timeout_ms` for a permit, in the limiter's order (FIFO or LIFO), with the GIL
    /// released; a `Rejection` when the wait runs out.
    #[pyo3(signature = (partition = None, *, timeout_ms))]
    fn acquire_sync(
        &self,
        py: Python<'_>,
        partition: Option<&Bound<'_, PyAny>>,
        timeout_ms: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let partition = partition.filter(|p| !p.is_none()).map(|p| string(p, "partition")).transpose()?;
        let timeout = self::timeout(timeout_ms)?;
        let a = py.detach(|| self.inner.acquire_blocking(partition, timeout)).py()?;
        admission(py, a)
    }

    /// Awaitable `acquire_sync`: the wait is a timer, the event loop keeps running.
    #[pyo3(signature = (partition = None, *, timeout_ms))]
    fn acquire<'py>(
        &self,
        py: Python<'py>,
        partition: Option<&Bound<'_, PyAny>>,
        timeout_ms: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let partition = partition.filter(|p| !p.is_none()).map(|p| string(p, "partition").map(str::to_owned));
        let partition = partition.transpose()?;
        let timeout = self::timeout(timeout_ms)?;
        let limiter = self.inner.clone();
        awaitable(py, async move { limiter.acquire(partition.as_deref(), timeout).await.py().map(Answer) })
    }

    /// The current limit.
    fn limit(&self) -> u32 {
        self.inner.limit()
    }

    /// Permits held now.
    fn inflight(&self) -> u32 {
        self.inner.inflight()
    }

    /// A snapshot of every counter: `limit`, `inflight`, `waiting`, `acquired`, `rejected`,
    /// `succeeded`, `dropped`, `ignored`, `leaked`, `short_rtts`, `windows`, `baseline_rtt_us`,
    /// `latency_us`, `slow_start` and `partitions` (name to permits in flight).
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.inner.metrics();
        let d = PyDict::new(py);
        d.set_item("limit", m.limit)?;
        d.set_item("inflight", m.inflight)?;
        d.set_item("waiting", m.waiting)?;
        d.set_item("acquired", m.acquired)?;
        d.set_item("rejected", m.rejected)?;
        d.set_item("succeeded", m.succeeded)?;
        d.set_item("dropped", m.dropped)?;
        d.set_item("ignored", m.ignored)?;
        d.set_item("leaked", m.leaked)?;
        d.set_item("short_rtts", m.short_rtts)?;
        d.set_item("windows", m.windows)?;
        d.set_item("baseline_rtt_us", m.baseline_rtt_us)?;
        d.set_item("latency_us", m.latency_us)?;
        d.set_item("slow_start", m.slow_start)?;
        let parts = PyDict::new(py);
        for (name, inflight) in m.partitions {
            parts.set_item(name, inflight)?;
        }
        d.set_item("partitions", parts)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!("AdaptiveLimiter(limit={}, inflight={})", self.inner.limit(), self.inner.inflight())
    }
}

/// One admitted request's slot in the limit: release it once, with how the request ended.
///
/// As a context manager (`with` / `async with`) its exit releases it unless the body already
/// did: `success` when the body returns, `dropped` when it raises `TimeoutError` (a congestion
/// signal), `ignore` for any other exception (an application error says nothing about load).
/// Releasing twice does nothing and returns `False`; a permit garbage-collected unreleased
/// counts as `ignore` and in `metrics()["leaked"]`.
#[pyclass(frozen, module = "throttlekit")]
pub struct Permit {
    inner: Mutex<core::Permit>,
}

impl Permit {
    fn exit(&self, exc_type: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let py_outcome = match exc_type.filter(|t| !t.is_none()) {
            None => core::Outcome::Success,
            Some(t) => match t.cast::<PyType>() {
                Ok(t) if t.is_subclass_of::<PyTimeoutError>()? => core::Outcome::Dropped,
                _ => core::Outcome::Ignore,
            },
        };
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).release(py_outcome);
        Ok(false)
    }
}

#[pymethods]
impl Permit {
    /// Releases with `outcome` (`"success"`, `"ignore"` or `"dropped"`); the round trip is
    /// measured by core since the grant unless `rtt_ns` gives it. Returns whether this call
    /// released the permit (`False`: it already was).
    #[pyo3(signature = (outcome = None, *, rtt_ns = None))]
    fn release(&self, outcome: Option<&Bound<'_, PyAny>>, rtt_ns: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let outcome = match outcome.filter(|o| !o.is_none()) {
            Some(o) => core::Outcome::parse(string(o, "outcome")?).py()?,
            None => core::Outcome::Success,
        };
        let rtt = opt_int(rtt_ns, "rtt_ns")?;
        let mut permit = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match rtt {
            None => Ok(permit.release(outcome)),
            Some(ns) => permit.release_with_rtt_ns(outcome, ns).py(),
        }
    }

    /// Always `True` (a `Rejection`'s is `False`).
    #[getter]
    fn granted(&self) -> bool {
        true
    }

    /// Whether it was released.
    #[getter]
    fn released(&self) -> bool {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).is_released()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.exit(exc_type)
    }

    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let permit = slf.unbind();
        awaitable(py, async move { Ok(permit) })
    }

    #[pyo3(signature = (exc_type = None, _exc = None, _tb = None))]
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let suppress = self.exit(exc_type)?;
        awaitable(py, async move { Ok(suppress) })
    }

    fn __repr__(&self) -> String {
        format!("Permit(released={})", self.released())
    }
}

/// A refused acquire (the limit was full, or a wait ran out): an answer, not an exception.
#[pyclass(frozen, module = "throttlekit")]
pub struct Rejection {
    inner: core::Rejection,
}

impl From<core::Rejection> for Rejection {
    fn from(inner: core::Rejection) -> Self {
        Rejection { inner }
    }
}

#[pymethods]
impl Rejection {
    /// Always `False` (a `Permit`'s is `True`).
    #[getter]
    fn granted(&self) -> bool {
        false
    }

    /// The limit when the request was refused.
    #[getter]
    fn limit(&self) -> u32 {
        self.inner.limit
    }

    /// The requests in flight then.
    #[getter]
    fn inflight(&self) -> u32 {
        self.inner.inflight
    }

    /// A retry hint: the latest window's latency percentile, milliseconds.
    #[getter]
    fn retry_after_ms(&self) -> u64 {
        self.inner.retry_after_ms
    }

    /// The `Retry-After` header's value: whole seconds, rounded up, at least 1.
    #[getter]
    fn retry_after_secs(&self) -> u64 {
        self.inner.retry_after_secs()
    }

    fn __repr__(&self) -> String {
        format!(
            "Rejection(limit={}, inflight={}, retry_after_ms={})",
            self.inner.limit, self.inner.inflight, self.inner.retry_after_ms
        )
    }
}
