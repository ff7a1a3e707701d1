//! `Strategy`: a validated algorithm, built with a typed constructor or from a dict spec.
//!
//! Every constructor builds core's `StrategySpec` and lets core validate it, so
//! `Strategy.gcra(limit=0, period_ms=1000)` and `Strategy.from_dict({"kind": "gcra", ...})` fail
//! with the same `config_invalid` message as every other language.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use throttlekit::spec::{
    GcraOptions, QuotaOptions, ResetCadence, SlidingWindowOptions, StrategySpec, TokenBucketOptions, WindowOptions,
};

use crate::error::{self, IntoPyResult};
use crate::spec;
use crate::validate::{opt_option, option, string};

/// A validated rate-limiting algorithm. Immutable; share it between limiters freely.
#[pyclass(frozen, eq, module = "throttlekit")]
#[derive(Clone, PartialEq)]
pub struct Strategy {
    pub(crate) inner: throttlekit::Strategy,
}

fn build(spec: StrategySpec) -> PyResult<Strategy> {
    Ok(Strategy { inner: spec.build().py()? })
}

/// The reset cadence's JSON name (`"calendar-month"`, ...) into core's enum.
fn cadence(obj: &Bound<'_, PyAny>) -> PyResult<ResetCadence> {
    let name = string(obj, "reset_cadence")?;
    serde_json::from_value(serde_json::Value::String(name.to_owned())).map_err(|_| {
        error::config("reset_cadence", "must be calendar-month, calendar-week, calendar-day, fixed or rolling")
    })
}

/// A `Strategy`, or a dict spec, as core's strategy.
pub fn from_any(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<throttlekit::Strategy> {
    if let Ok(s) = obj.cast::<Strategy>() {
        return Ok(s.get().inner.clone());
    }
    if obj.is_instance_of::<PyDict>() {
        return Strategy::from_dict(obj).map(|s| s.inner);
    }
    Err(error::wrong_type(arg, "a Strategy or a dict spec", obj))
}

#[pymethods]
impl Strategy {
    /// GCRA (the default algorithm): `limit` requests per `period_ms`, `burst` at once from idle
    /// (default `limit`). Decisions report `limit = burst`.
    #[staticmethod]
    #[pyo3(signature = (limit, period_ms, *, burst = None))]
    fn gcra(
        limit: &Bound<'_, PyAny>,
        period_ms: &Bound<'_, PyAny>,
        burst: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        build(StrategySpec::Gcra(GcraOptions {
            limit: option(limit, "limit")?,
            period_ms: option(period_ms, "period_ms")?,
            burst: opt_option(burst, "burst")?,
        }))
    }

    /// Token bucket of `capacity` tokens (starts full), refilling `refill_per_sec` a second.
    #[staticmethod]
    fn token_bucket(capacity: &Bound<'_, PyAny>, refill_per_sec: &Bound<'_, PyAny>) -> PyResult<Self> {
        build(StrategySpec::TokenBucket(TokenBucketOptions {
            capacity: option(capacity, "capacity")?,
            refill_per_sec: option(refill_per_sec, "refill_per_sec")?,
        }))
    }

    /// Fixed window: `limit` units per epoch-aligned window of `window_ms`.
    #[staticmethod]
    fn fixed_window(limit: &Bound<'_, PyAny>, window_ms: &Bound<'_, PyAny>) -> PyResult<Self> {
        build(StrategySpec::FixedWindow(WindowOptions {
            limit: option(limit, "limit")?,
            window_ms: option(window_ms, "window_ms")?,
        }))
    }

    /// Sliding window of `window_ms` estimated from `buckets` sub-buckets (default 10).
    #[staticmethod]
    #[pyo3(signature = (limit, window_ms, *, buckets = None))]
    fn sliding_window(
        limit: &Bound<'_, PyAny>,
        window_ms: &Bound<'_, PyAny>,
        buckets: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        build(StrategySpec::SlidingWindow(SlidingWindowOptions {
            limit: option(limit, "limit")?,
            window_ms: option(window_ms, "window_ms")?,
            buckets: opt_option(buckets, "buckets")?,
        }))
    }

    /// Exact sliding-window log: at most `limit` units in any trailing `window_ms`.
    #[staticmethod]
    fn sliding_window_log(limit: &Bound<'_, PyAny>, window_ms: &Bound<'_, PyAny>) -> PyResult<Self> {
        build(StrategySpec::SlidingWindowLog(WindowOptions {
            limit: option(limit, "limit")?,
            window_ms: option(window_ms, "window_ms")?,
        }))
    }

    /// A quota of `limit` units per period. `reset_cadence` is `"calendar-month"`,
    /// `"calendar-week"`, `"calendar-day"`, `"fixed"` (needs `period_ms`, aligned to `anchor`)
    /// or `"rolling"` (a sliding window of `period_ms`). Calendars use a fixed UTC offset of
    /// `offset_minutes` (±840); weeks start on `week_starts_on` (0 = Sunday, default 1 = Monday).
    #[staticmethod]
    #[pyo3(signature = (limit, reset_cadence, *, period_ms = None, anchor = None, offset_minutes = None, week_starts_on = None, buckets = None))]
    fn quota(
        limit: &Bound<'_, PyAny>,
        reset_cadence: &Bound<'_, PyAny>,
        period_ms: Option<&Bound<'_, PyAny>>,
        anchor: Option<&Bound<'_, PyAny>>,
        offset_minutes: Option<&Bound<'_, PyAny>>,
        week_starts_on: Option<&Bound<'_, PyAny>>,
        buckets: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        build(StrategySpec::Quota(QuotaOptions {
            limit: option(limit, "limit")?,
            reset_cadence: cadence(reset_cadence)?,
            period_ms: opt_option(period_ms, "period_ms")?,
            anchor: opt_option(anchor, "anchor")?,
            offset_minutes: opt_option(offset_minutes, "offset_minutes")?,
            week_starts_on: opt_option(week_starts_on, "week_starts_on")?,
            buckets: opt_option(buckets, "buckets")?,
        }))
    }

    /// From a dict in the vectors' format: `{"kind": "gcra", "options": {"limit": 10,
    /// "periodMs": 1000}}` (camelCase keys; unknown keys are refused).
    #[staticmethod]
    fn from_dict(spec: &Bound<'_, PyAny>) -> PyResult<Self> {
        if !spec.is_instance_of::<PyDict>() {
            return Err(error::wrong_type("spec", "a dict", spec));
        }
        let json = spec::to_json(spec, "strategy")?;
        Ok(Strategy { inner: throttlekit::Strategy::from_json(&json.to_string()).py()? })
    }

    /// Rates as configurations write them (`"10/second"`, `"1 per 5 minutes"`, several joined
    /// by `;`), each read by core as `strategy` (`"gcra"`, `"fixed-window"`,
    /// `"sliding-window"`, `"sliding-window-log"`): `[(text, Strategy), ...]`.
    #[staticmethod]
    #[pyo3(signature = (text, strategy = "gcra"))]
    fn from_rates(text: &Bound<'_, PyAny>, strategy: &str) -> PyResult<Vec<(String, Strategy)>> {
        let kind = throttlekit::RateStrategy::from_name(strategy).py()?;
        throttlekit::Rate::parse_list(string(text, "text")?)
            .py()?
            .into_iter()
            .map(|r| Ok((r.text.clone(), Strategy { inner: r.strategy(kind).py()? })))
            .collect()
    }

    /// From JSON text in the same format as [`Strategy::from_dict`].
    #[staticmethod]
    fn from_json(text: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Strategy { inner: throttlekit::Strategy::from_json(string(text, "text")?).py()? })
    }

    /// The spec's kind: `"gcra"`, `"tokenBucket"`, `"fixedWindow"`, `"slidingWindow"`,
    /// `"slidingWindowLog"` or `"quota"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    /// The `limit` its decisions report (GCRA: the burst; token bucket: the capacity).
    #[getter]
    fn limit(&self) -> i64 {
        self.inner.limit()
    }

    /// The spec as a dict (the format `from_dict` reads).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value = serde_json::to_value(self.inner.spec()).map_err(|e| error::config("strategy", &e.to_string()))?;
        spec::to_py(py, &value)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let dict = self.to_dict(py)?;
        Ok(format!("Strategy.from_dict({})", dict.repr()?.cast::<PyString>()?.to_cow()?))
    }
}
