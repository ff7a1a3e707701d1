//! `Shaper`: the leaky bucket as a traffic shaper — it delays instead of denying.

use std::sync::Arc;

use crate::aio::awaitable;
use pyo3::prelude::*;
use throttlekit::LeakyBucketOptions;

use crate::clock;
use crate::decision::Reservation;
use crate::error::IntoPyResult;
use crate::store::{self, blocking};
use crate::validate::{Cost, option, string};

/// Departures at `rate_per_sec`, queueing at most `max_queue_ms` of wait.
///
/// `reserve` books a departure and says how long to wait; `schedule` books and waits, and
/// raises `QueueFullError` (with `.retry_after_ms`) when the wait would exceed `max_queue_ms`.
#[pyclass(frozen, module = "throttlekit")]
pub struct Shaper {
    inner: Arc<throttlekit::Shaper>,
    io: bool,
}

#[pymethods]
impl Shaper {
    #[new]
    #[pyo3(signature = (rate_per_sec, max_queue_ms, *, store = None, clock = None, prefix = None, server_clock = None, metrics = None))]
    #[pyo3(
        text_signature = "(rate_per_sec, max_queue_ms, *, store=None, clock=None, prefix='', server_clock=None, metrics=False)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        rate_per_sec: &Bound<'_, PyAny>,
        max_queue_ms: &Bound<'_, PyAny>,
        store: Option<&Bound<'_, PyAny>>,
        clock: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        server_clock: Option<&Bound<'_, PyAny>>,
        metrics: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let options = LeakyBucketOptions {
            rate_per_sec: option(rate_per_sec, "rate_per_sec")?,
            max_queue_ms: option(max_queue_ms, "max_queue_ms")?,
        };
        let store = store::from_arg(store)?;
        let (server_clock, _) = store.settings(server_clock, None)?;
        let io = store.does_io();
        let mut inner = throttlekit::Shaper::new(&options)
            .py()?
            .with_store(store.store)
            .with_clock(clock::from_arg(clock)?)
            .with_server_clock(server_clock);
        if let Some(p) = prefix.filter(|p| !p.is_none()) {
            inner = inner.with_prefix(string(p, "prefix")?.to_owned());
        }
        // After the prefix: the metrics are labelled with it.
        if let Some(m) = metrics.filter(|m| !m.is_none()) {
            inner = inner.with_metrics(crate::validate::flag(m, "metrics")?);
        }
        Ok(Shaper { inner: Arc::new(inner), io })
    }

    /// Books a departure for `cost` units of `key` now, without waiting.
    #[pyo3(signature = (key, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, key, cost=1)")]
    fn reserve_sync<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>, cost: Cost) -> PyResult<Bound<'py, PyAny>> {
        let key = string(key, "key")?;
        let cost = cost.0;
        let r = blocking(py, self.io, || self.inner.reserve_sync(key, cost));
        // Matched in place rather than `r.py()?.into()`, as `Limiter`'s `*_sync` methods do.
        match r {
            Ok(r) => Reservation::from(r).into_pyobject(py),
            Err(err) => Err(crate::error::to_py(err)),
        }
    }

    /// Awaitable `reserve_sync`.
    #[pyo3(signature = (key, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, key, cost=1)")]
    fn reserve<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>, cost: Cost) -> PyResult<Bound<'py, PyAny>> {
        let key = string(key, "key")?.to_owned();
        let cost = cost.0;
        let shaper = self.inner.clone();
        awaitable(py, async move { shaper.reserve(&key, cost).await.py().map(Reservation::from) })
    }

    /// Books a departure and sleeps until it (the GIL is released while sleeping).
    #[pyo3(signature = (key, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, key, cost=1)")]
    fn schedule_sync(&self, py: Python<'_>, key: &Bound<'_, PyAny>, cost: Cost) -> PyResult<Reservation> {
        let key = string(key, "key")?;
        let cost = cost.0;
        Ok(py.detach(|| self.inner.schedule_blocking(key, cost)).py()?.into())
    }

    /// Awaitable `schedule_sync`: the wait is a timer, not a blocked thread.
    #[pyo3(signature = (key, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, key, cost=1)")]
    fn schedule<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>, cost: Cost) -> PyResult<Bound<'py, PyAny>> {
        let key = string(key, "key")?.to_owned();
        let cost = cost.0;
        let shaper = self.inner.clone();
        awaitable(py, async move { shaper.schedule(&key, cost).await.py().map(Reservation::from) })
    }

    /// Forgets `key`'s queue.
    fn reset_sync(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = string(key, "key")?;
        blocking(py, self.io, || self.inner.reset_sync(key)).py()
    }

    /// Awaitable `reset_sync`.
    fn reset<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let key = string(key, "key")?.to_owned();
        let shaper = self.inner.clone();
        awaitable(py, async move { shaper.reset(&key).await.py().map(|()| crate::none()) })
    }

    /// Departures per second.
    #[getter]
    fn rate_per_sec(&self) -> f64 {
        self.inner.options().rate_per_sec
    }

    /// Longest accepted wait, ms.
    #[getter]
    fn max_queue_ms(&self) -> f64 {
        self.inner.options().max_queue_ms
    }

    /// The counters as a dict (`None` unless built with `metrics=True`), the shape of
    /// `Limiter.metrics()`: a reservation accepted counts as `allowed`, one rejected (the queue
    /// full) as `denied`, a failed one under `errors`.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, pyo3::types::PyDict>>> {
        crate::metrics::to_dict(py, self.inner.metrics())
    }

    fn __repr__(&self) -> String {
        let o = self.inner.options();
        format!("Shaper(rate_per_sec={}, max_queue_ms={})", o.rate_per_sec, o.max_queue_ms)
    }
}
