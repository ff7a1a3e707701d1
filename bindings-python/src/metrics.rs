//! A limiter's, multi limiter's or shaper's counters (core's `LimiterMetrics`) as the dict
//! Python reads: one shape for all three, built in one place.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use throttlekit::metrics::LimiterMetrics;

/// `None` when the object was built without metrics; else `allowed` / `denied`,
/// `fallback_allowed` / `fallback_denied`, `peeks`, `forecasts`, `errors` by code and
/// `store_latency` (`bounds_us`, `counts`, `sum_us`, `count`).
pub fn to_dict<'py>(py: Python<'py>, metrics: Option<&Arc<LimiterMetrics>>) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(m) = metrics else { return Ok(None) };
    let s = m.snapshot();
    let d = PyDict::new(py);
    d.set_item("allowed", s.allowed)?;
    d.set_item("denied", s.denied)?;
    d.set_item("fallback_allowed", s.fallback_allowed)?;
    d.set_item("fallback_denied", s.fallback_denied)?;
    d.set_item("peeks", s.peeks)?;
    d.set_item("forecasts", s.forecasts)?;
    let errors = PyDict::new(py);
    for (code, n) in &s.errors {
        errors.set_item(code.as_str(), n)?;
    }
    d.set_item("errors", errors)?;
    let latency = PyDict::new(py);
    latency.set_item("bounds_us", throttlekit::metrics::LATENCY_BOUNDS_US.to_vec())?;
    latency.set_item("count", s.latency_count())?;
    latency.set_item("counts", s.latency_counts)?;
    latency.set_item("sum_us", s.latency_sum_us)?;
    d.set_item("store_latency", latency)?;
    Ok(Some(d))
}
