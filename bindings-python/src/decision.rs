//! What checks return: `Decision`, the shaper's `Reservation`, and `MultiDecision`.
//!
//! All three are immutable value objects (frozen, hashable, comparable), built from core's
//! structs field by field; nothing is computed here. `Decision` and `Reservation` are made once
//! per call on the hot paths, so they are plain non-GC types (`value_type`) rather than
//! `#[pyclass]`es; `MultiDecision` holds a string and a list and stays a pyclass.

use std::ptr;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::value_type::{self, Field, Keywords, Method, Scalar, Statics, ValueType};

/// The result of one check. A denied request is a Decision with `allowed == False`, not an error.
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

impl Decision {
    /// `d`'s fields, each read with a load of its own width (volatile, so the compiler cannot
    /// merge them into wider copies): for a decision core wrote to memory field by field, where
    /// a wider load would wait for the stores to reach the cache (see `limiter::check_sync_log`).
    #[inline(always)]
    pub fn read_by_fields(d: &throttlekit::Decision) -> Self {
        // SAFETY: each pointer comes from a reference to a live, initialized field.
        unsafe {
            Decision {
                allowed: ptr::read_volatile(&d.allowed),
                limit: ptr::read_volatile(&d.limit),
                remaining: ptr::read_volatile(&d.remaining),
                reset_at: ptr::read_volatile(&d.reset_at),
                retry_after_ms: ptr::read_volatile(&d.retry_after_ms),
                fallback: ptr::read_volatile(&d.fallback),
            }
        }
    }
}

static DECISION: Statics = Statics::new();

impl ValueType for Decision {
    const NAME: &'static std::ffi::CStr = c"throttlekit.Decision";
    const DOC: &'static str =
        "The result of one check. A denied request is a Decision with `allowed == False`, not an error.";
    const FIELDS: &'static [Field<Self>] = &[
        Field {
            name: c"allowed",
            doc: c"Whether the request was admitted (and, for a check, consumed).",
            get: |d| Scalar::Bool(d.allowed),
            default: None,
        },
        Field {
            name: c"limit",
            doc: c"The effective ceiling: GCRA's burst, a token bucket's capacity, a window's limit.",
            get: |d| Scalar::Int(d.limit),
            default: None,
        },
        Field {
            name: c"remaining",
            doc: c"Whole units still admissible; never negative.",
            get: |d| Scalar::Int(d.remaining),
            default: None,
        },
        Field {
            name: c"reset_at",
            doc: c"Epoch milliseconds at which the limit is fully replenished.",
            get: |d| Scalar::Int(d.reset_at),
            default: None,
        },
        Field {
            name: c"retry_after_ms",
            doc: c"0 when allowed; otherwise at least 1.",
            get: |d| Scalar::Int(d.retry_after_ms),
            default: None,
        },
        Field {
            name: c"fallback",
            doc: c"True when the store was unavailable and the fail policy decided without any state.",
            get: |d| Scalar::Bool(d.fallback),
            default: Some("False"),
        },
    ];
    const METHODS: &'static [Method] = &[Method {
        name: c"to_dict",
        doc:
            c"to_dict($self)\n--\n\nThe fields as a dict with the vectors' camelCase keys (`resetAt`, `retryAfterMs`).",
        function: decision_to_dict,
    }];

    fn statics() -> &'static Statics {
        &DECISION
    }

    fn from_keywords(kw: &Keywords<'_>) -> PyResult<Self> {
        Ok(Decision {
            allowed: kw.required(0)?,
            limit: kw.required(1)?,
            remaining: kw.required(2)?,
            reset_at: kw.required(3)?,
            retry_after_ms: kw.required(4)?,
            fallback: kw.get(5)?.unwrap_or(false),
        })
    }
}

impl Decision {
    /// The fields as a dict with the vectors' camelCase keys (`resetAt`, `retryAfterMs`).
    fn to_dict<'py>(self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
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
}

/// `Decision.to_dict` as a `METH_NOARGS` method.
unsafe extern "C" fn decision_to_dict(object: *mut ffi::PyObject, _: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: the method descriptor checked that `object` is a Decision; CPython calls methods
    // on an attached thread.
    unsafe {
        value_type::boundary(ptr::null_mut(), |py| {
            Ok(value_type::value_of::<Decision>(object).to_dict(py)?.into_any().into_ptr())
        })
    }
}

value_type::into_pyobject!(Decision);

value_type::into_pyobject!(ref Decision);

/// The shaper's answer. Accepted: wait `delay_ms` before departing. Rejected: the wait would
/// exceed `max_queue_ms` by `delay_ms`.
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

static RESERVATION: Statics = Statics::new();

impl ValueType for Reservation {
    const NAME: &'static std::ffi::CStr = c"throttlekit.Reservation";
    const DOC: &'static str = "The shaper's answer. Accepted: wait `delay_ms` before departing. Rejected: the wait would\nexceed `max_queue_ms` by `delay_ms`.";
    const FIELDS: &'static [Field<Self>] = &[
        Field {
            name: c"accepted",
            doc: c"Whether the request got a departure slot.",
            get: |r| Scalar::Bool(r.accepted),
            default: None,
        },
        Field {
            name: c"delay_ms",
            doc: c"Accepted: how long to wait. Rejected: by how much the queue is too long.",
            get: |r| Scalar::Int(r.delay_ms),
            default: None,
        },
    ];

    fn statics() -> &'static Statics {
        &RESERVATION
    }

    fn from_keywords(kw: &Keywords<'_>) -> PyResult<Self> {
        Ok(Reservation { accepted: kw.required(0)?, delay_ms: kw.required(1)? })
    }
}

value_type::into_pyobject!(Reservation);

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
        format!("MultiDecision(binding={:?}, decision={})", self.binding, value_type::repr_text(&self.decision))
    }
}
