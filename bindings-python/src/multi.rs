//! Multi-dimensional limits: `Dimension` and `MultiLimiter` (`"all"` / `"any"`).

use std::sync::Arc;

use crate::aio::awaitable;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use throttlekit::Rule;

use crate::clock;
use crate::decision::MultiDecision;
use crate::error::{self, IntoPyResult};
use crate::store::{self, blocking};
use crate::strategy::{self, Strategy};
use crate::validate::{self, Cost, string, strings};

/// One named dimension of a `MultiLimiter`: its strategy (a `Strategy` or a dict spec) and how
/// many of its units one unit of request cost spends (`cost_multiplier`, default 1).
#[pyclass(frozen, module = "throttlekit")]
#[derive(Clone)]
pub struct Dimension {
    inner: throttlekit::Dimension,
}

#[pymethods]
impl Dimension {
    #[new]
    #[pyo3(signature = (name, strategy, *, cost_multiplier = None))]
    #[pyo3(text_signature = "(name, strategy, *, cost_multiplier=1)")]
    fn new(
        name: &Bound<'_, PyAny>,
        strategy: &Bound<'_, PyAny>,
        cost_multiplier: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut inner =
            throttlekit::Dimension::new(string(name, "name")?.to_owned(), strategy::from_any(strategy, "strategy")?);
        if let Some(m) = cost_multiplier.filter(|m| !m.is_none()) {
            inner = inner.cost_multiplier(validate::count(m, "cost_multiplier")?);
        }
        Ok(Dimension { inner })
    }

    /// The name (part of the dimension's keys).
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// The strategy.
    #[getter]
    fn strategy(&self) -> Strategy {
        Strategy { inner: self.inner.strategy.clone() }
    }

    /// Units of this dimension per unit of request cost.
    #[getter]
    fn cost_multiplier(&self) -> u64 {
        self.inner.cost_multiplier
    }

    fn __repr__(&self) -> String {
        format!(
            "Dimension({:?}, kind={:?}, cost_multiplier={})",
            self.inner.name,
            self.inner.strategy.kind(),
            self.inner.cost_multiplier
        )
    }
}

fn parse_rule(obj: &Bound<'_, PyAny>) -> PyResult<Rule> {
    match string(obj, "rule")? {
        "all" => Ok(Rule::All),
        "any" => Ok(Rule::Any),
        _ => Err(error::config("rule", "must be \"all\" or \"any\"")),
    }
}

/// Several dimensions (per IP, per user, per route...) decided atomically together.
///
/// `"all"`: admitted only if every dimension allows; then all commit, else none does.
/// `"any"`: admitted if one allows; only the allowing dimensions commit. The returned decision
/// is the binding dimension's (see `MultiDecision.binding`).
#[pyclass(frozen, module = "throttlekit")]
pub struct MultiLimiter {
    pub(crate) inner: Arc<throttlekit::MultiLimiter>,
    pub(crate) io: bool,
    /// As `Limiter`'s: for `HttpLimiter`.
    pub(crate) server_clock: bool,
}

#[pymethods]
impl MultiLimiter {
    /// `hash_tag` puts every key of this limiter in one Redis Cluster hash slot (default: the
    /// prefix, or `tk`); the fused script needs one slot per request. `mode` is `"strict"`
    /// (default), `"cached_deny"` or `"leased"`, with `lease` as `Limiter`'s (`low_water` must
    /// be 0: a multi limiter leases a dimension when it runs short; docs/leasing.md).
    #[new]
    #[pyo3(signature = (rule, dimensions, *, store = None, clock = None, prefix = None, server_clock = None, fail_policy = None, hash_tag = None, metrics = None, mode = None, lease = None))]
    #[pyo3(
        text_signature = "(rule, dimensions, *, store=None, clock=None, prefix='', server_clock=None, fail_policy=None, hash_tag=None, metrics=False, mode='strict', lease=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        rule: &Bound<'_, PyAny>,
        dimensions: &Bound<'_, PyAny>,
        store: Option<&Bound<'_, PyAny>>,
        clock: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        server_clock: Option<&Bound<'_, PyAny>>,
        fail_policy: Option<&Bound<'_, PyAny>>,
        hash_tag: Option<&Bound<'_, PyAny>>,
        metrics: Option<&Bound<'_, PyAny>>,
        mode: Option<&Bound<'_, PyAny>>,
        lease: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let rule = parse_rule(rule)?;
        let mode = crate::lease::mode(mode, lease)?;
        let iter =
            dimensions.try_iter().map_err(|_| error::wrong_type("dimensions", "a list of Dimension", dimensions))?;
        let mut dims = Vec::new();
        for d in iter {
            let d = d?;
            match d.cast::<Dimension>() {
                Ok(d) => dims.push(d.get().inner.clone()),
                Err(_) => return Err(error::wrong_type(&format!("dimensions[{}]", dims.len()), "a Dimension", &d)),
            }
        }
        let store = store::from_arg(store)?;
        let (server_clock, fail_policy) = store.settings(server_clock, fail_policy)?;
        let io = store.does_io();
        let mut inner = throttlekit::MultiLimiter::new(rule, dims)
            .py()?
            .with_store(store.store)
            .with_clock(clock::from_arg(clock)?)
            .with_server_clock(server_clock);
        if let Some(p) = prefix.filter(|p| !p.is_none()) {
            inner = inner.with_prefix(string(p, "prefix")?.to_owned());
        }
        if let Some(policy) = fail_policy {
            inner = inner.with_fail_policy(policy);
        }
        if let Some(t) = hash_tag.filter(|t| !t.is_none()) {
            inner = inner.with_hash_tag(string(t, "hash_tag")?.to_owned()).py()?;
        }
        // After the prefix: the metrics are labelled with it.
        if let Some(m) = metrics.filter(|m| !m.is_none()) {
            inner = inner.with_metrics(crate::validate::flag(m, "metrics")?);
        }
        let inner = inner.with_mode(mode).py()?;
        Ok(MultiLimiter { inner: Arc::new(inner), io, server_clock })
    }

    /// The two-tier mode: `"strict"`, `"cached_deny"` or `"leased"`.
    #[getter]
    fn mode(&self) -> &'static str {
        self.inner.mode().name()
    }

    /// The local tier's counters: `local_admits` and `local_denials` (requests answered
    /// locally), `leases` (fused lease calls), `late_credits_dropped`, `credits_returned`.
    fn tier_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::lease::stats(py, self.inner.tier_stats())
    }

    /// Gives back the leased credits of dimension keys unused for `idle_ms` (every key:
    /// `None`, as on shutdown) where the dimension can take them back; the units taken back.
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

    /// Checks one request: `keys` holds one key per dimension, in declaration order.
    #[pyo3(signature = (keys, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, keys, cost=1)")]
    fn check_sync(&self, py: Python<'_>, keys: &Bound<'_, PyAny>, cost: Cost) -> PyResult<MultiDecision> {
        let keys = strings(keys, "keys")?;
        let cost = cost.0;
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        Ok(blocking(py, self.io, || self.inner.check_sync(&refs, cost)).py()?.into())
    }

    /// Awaitable `check_sync` (Redis: one fused script call).
    #[pyo3(signature = (keys, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, keys, cost=1)")]
    fn check<'py>(&self, py: Python<'py>, keys: &Bound<'_, PyAny>, cost: Cost) -> PyResult<Bound<'py, PyAny>> {
        let keys = strings(keys, "keys")?;
        let cost = cost.0;
        let limiter = self.inner.clone();
        awaitable(py, async move {
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            limiter.check(&refs, cost).await.py().map(MultiDecision::from)
        })
    }

    /// Forgets every dimension's state for `keys`.
    fn reset_sync(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<()> {
        let keys = strings(keys, "keys")?;
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        blocking(py, self.io, || self.inner.reset_sync(&refs)).py()
    }

    /// Awaitable `reset_sync`.
    fn reset<'py>(&self, py: Python<'py>, keys: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let keys = strings(keys, "keys")?;
        let limiter = self.inner.clone();
        awaitable(py, async move {
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            limiter.reset(&refs).await.py().map(|()| crate::none())
        })
    }

    /// `"all"` or `"any"`.
    #[getter]
    fn rule(&self) -> &'static str {
        match self.inner.rule() {
            Rule::All => "all",
            Rule::Any => "any",
        }
    }

    /// The dimensions, in declaration order.
    #[getter]
    fn dimensions(&self) -> Vec<Dimension> {
        self.inner.dimensions().iter().map(|d| Dimension { inner: d.clone() }).collect()
    }

    /// The counters as a dict (`None` unless built with `metrics=True`), the shape of
    /// `Limiter.metrics()`: each check counts its combined decision (`allowed`, `denied`, or a
    /// fail-policy fallback) or its error; calls to a store outside the process are timed.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, pyo3::types::PyDict>>> {
        crate::metrics::to_dict(py, self.inner.metrics())
    }

    fn __repr__(&self) -> String {
        let names: Vec<&str> = self.inner.dimensions().iter().map(|d| d.name.as_str()).collect();
        format!("MultiLimiter({:?}, dimensions={names:?})", self.rule())
    }
}
