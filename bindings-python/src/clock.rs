//! Clocks: `ManualClock` (tests, replays) and `SystemClock` (the default).

use std::sync::Arc;

use pyo3::prelude::*;
use throttlekit::Clock;

use crate::error::{self, IntoPyResult};
use crate::validate;

/// A clock that moves only when told to. Limiters built with it read its time on every call,
/// and the memory store expires keys on it too. `advance` only goes forward; `set` may jump
/// back, to reproduce a wall clock that steps backwards.
#[pyclass(frozen, module = "throttlekit")]
#[derive(Clone)]
pub struct ManualClock {
    pub(crate) inner: throttlekit::ManualClock,
}

#[pymethods]
impl ManualClock {
    /// A clock showing `now_ms` (epoch milliseconds, default 0).
    #[new]
    #[pyo3(signature = (now_ms = None))]
    fn new(now_ms: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let now = match now_ms {
            Some(v) => validate::millis(v, "now_ms")?,
            None => 0,
        };
        Ok(ManualClock { inner: throttlekit::ManualClock::new(now) })
    }

    /// The current time, epoch milliseconds.
    fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }

    /// Moves time forward by `ms` (>= 0) and returns the new time.
    fn advance(&self, ms: &Bound<'_, PyAny>) -> PyResult<i64> {
        self.inner.advance(validate::millis(ms, "ms")?).py()
    }

    /// Sets the time, backwards included.
    fn set(&self, now_ms: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.set(validate::millis(now_ms, "now_ms")?);
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!("ManualClock(now_ms={})", self.inner.now_ms())
    }
}

/// The wall clock (epoch milliseconds); what limiters use when no clock is given.
#[pyclass(frozen, module = "throttlekit")]
pub struct SystemClock;

#[pymethods]
impl SystemClock {
    #[new]
    fn new() -> Self {
        SystemClock
    }

    /// The current time, epoch milliseconds.
    fn now_ms(&self) -> i64 {
        throttlekit::SystemClock.now_ms()
    }
}

/// The `clock=` argument: `None` (system), a `ManualClock` or a `SystemClock`.
pub fn from_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<dyn Clock>> {
    match obj {
        None => Ok(Arc::new(throttlekit::SystemClock)),
        Some(o) if o.is_none() || o.is_instance_of::<SystemClock>() => Ok(Arc::new(throttlekit::SystemClock)),
        Some(o) => match o.cast::<ManualClock>() {
            Ok(c) => Ok(Arc::new(c.get().inner.clone())),
            Err(_) => Err(error::wrong_type("clock", "a ManualClock, a SystemClock or None", o)),
        },
    }
}
