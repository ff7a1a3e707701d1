//! What checks return: `Decision`, the shaper's `Reservation`, and `MultiDecision`.
//!
//! All three are immutable value objects (frozen, hashable, comparable), built from core's
//! structs field by field; nothing is computed here.

use pyo3::prelude::*;

/// The result of one check. A denied request is a Decision with `allowed == False`, not an error.
#[pyclass(frozen, eq, hash, get_all, module = "throttlekit")]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decision {
    /// Whether the request was admitted (and, for a check, consumed).
    pub allowed: bool,
    /// The effective ceiling: GCRA's burst, a token bucket's capacity, a window's limit.
    pub limit: i64,
    /// Whole units still admissible; never negative.
    pub remaining: i64,
    /// Epoch milliseconds at which the limit is fully replenished.
    pub reset_at: i64,
    /// 0 when allowed; otherwise at least 1.
    pub retry_after_ms: i64,
    /// True when the store was unavailable and the fail policy decided without any state.
    pub fallback: bool,
}

impl From<throttlekit::Decision> for Decision {
    #[inline]
    fn from(d: throttlekit::Decision) -> Self {
        Decision {
            allowed: d.allowed,
            limit: d.limit,
            remaining: d.remaining,
            reset_at: d.reset_at,
            retry_after_ms: d.retry_after_ms,
            fallback: d.fallback,
        }
    }
}

#[pymethods]
impl Decision {
    /// A decision with the given fields (useful for test doubles).
    #[new]
    #[pyo3(signature = (*, allowed, limit, remaining, reset_at, retry_after_ms, fallback = false))]
    fn new(allowed: bool, limit: i64, remaining: i64, reset_at: i64, retry_after_ms: i64, fallback: bool) -> Self {
        Decision { allowed, limit, remaining, reset_at, retry_after_ms, fallback }
    }

    /// The fields as a dict with the vectors' camelCase keys (`resetAt`, `retryAfterMs`).
    // PyO3 methods take `&self`, even on `Copy` types.
    #[allow(clippy::wrong_self_convention)]
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let d = pyo3::types::PyDict::new(py);
        d.set_item("allowed", self.allowed)?;
        d.set_item("limit", self.limit)?;
        d.set_item("remaining", self.remaining)?;
        d.set_item("resetAt", self.reset_at)?;
        d.set_item("retryAfterMs", self.retry_after_ms)?;
        if self.fallback {
            d.set_item("fallback", true)?;
        }
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let py_bool = |b: bool| if b { "True" } else { "False" };
        format!(
            "Decision(allowed={}, limit={}, remaining={}, reset_at={}, retry_after_ms={}, fallback={})",
            py_bool(self.allowed),
            self.limit,
            self.remaining,
            self.reset_at,
            self.retry_after_ms,
            py_bool(self.fallback)
        )
    }
}

/// The shaper's answer. Accepted: wait `delay_ms` before departing. Rejected: the wait would
/// exceed `max_queue_ms` by `delay_ms`.
#[pyclass(frozen, eq, hash, get_all, module = "throttlekit")]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reservation {
    /// Whether the request got a departure slot.
    pub accepted: bool,
    /// Accepted: how long to wait. Rejected: by how much the queue is too long.
    pub delay_ms: i64,
}

impl From<throttlekit::Reservation> for Reservation {
    fn from(r: throttlekit::Reservation) -> Self {
        Reservation { accepted: r.accepted, delay_ms: r.delay_ms }
    }
}

#[pymethods]
impl Reservation {
    /// A reservation with the given fields (useful for test doubles).
    #[new]
    #[pyo3(signature = (*, accepted, delay_ms))]
    fn new(accepted: bool, delay_ms: i64) -> Self {
        Reservation { accepted, delay_ms }
    }

    fn __repr__(&self) -> String {
        format!("Reservation(accepted={}, delay_ms={})", if self.accepted { "True" } else { "False" }, self.delay_ms)
    }
}

/// The result of a multi-dimensional check: the binding dimension's decision and name, and
/// every dimension's own decision in declaration order. `allowed`, `remaining`, ... forward
/// to `decision`, so it reads like a Decision.
#[pyclass(frozen, eq, get_all, module = "throttlekit")]
#[derive(Clone, PartialEq)]
pub struct MultiDecision {
    /// The binding dimension's decision.
    pub decision: Decision,
    /// The binding dimension's name.
    pub binding: String,
    /// Every dimension's decision, in declaration order.
    pub dimensions: Vec<Decision>,
}

impl From<throttlekit::MultiDecision> for MultiDecision {
    fn from(m: throttlekit::MultiDecision) -> Self {
        MultiDecision {
            decision: m.decision.into(),
            binding: m.binding,
            dimensions: m.dimensions.into_iter().map(Decision::from).collect(),
        }
    }
}

#[pymethods]
impl MultiDecision {
    /// `decision.allowed`.
    #[getter]
    fn allowed(&self) -> bool {
        self.decision.allowed
    }
    /// `decision.limit`.
    #[getter]
    fn limit(&self) -> i64 {
        self.decision.limit
    }
    /// `decision.remaining`.
    #[getter]
    fn remaining(&self) -> i64 {
        self.decision.remaining
    }
    /// `decision.reset_at`.
    #[getter]
    fn reset_at(&self) -> i64 {
        self.decision.reset_at
    }
    /// `decision.retry_after_ms`.
    #[getter]
    fn retry_after_ms(&self) -> i64 {
        self.decision.retry_after_ms
    }
    /// `decision.fallback`.
    #[getter]
    fn fallback(&self) -> bool {
        self.decision.fallback
    }

    fn __repr__(&self) -> String {
        format!("MultiDecision(binding={:?}, decision={})", self.binding, self.decision.__repr__())
    }
}
