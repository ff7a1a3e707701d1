//! Python bindings of throttlekit: the native module `throttlekit._throttlekit`, re-exported by
//! the pure-Python package `throttlekit`.
//!
//! One file per core module, each a thin adapter: convert the arguments (`validate`), call the
//! core method of the same name, convert the result (`decision`) or the error (`error`). No
//! arithmetic and no time math live here; every decision is core's.

use pyo3::prelude::*;

mod adaptive;
mod aio;
mod clock;
mod decision;
mod error;
mod fast_check;
mod http;
mod lease;
mod limiter;
mod metrics;
mod multi;
#[cfg(feature = "postgres")]
mod postgres;
mod shaper;
mod spec;
#[cfg(feature = "sqlite")]
mod sqlite_store;
mod store;
mod strategy;
mod validate;
mod value_type;

/// Python's `None`, for awaitables with nothing to return (a Rust `()` would become `()`).
pub(crate) fn none() -> Py<PyAny> {
    Python::attach(|py| py.None())
}

#[pymodule]
fn _throttlekit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", throttlekit::VERSION)?;
    m.add("ERROR_CODES", error::codes())?;
    error::register(m)?;
    m.add("Decision", value_type::type_object::<decision::Decision>(m.py())?)?;
    m.add("Reservation", value_type::type_object::<decision::Reservation>(m.py())?)?;
    m.add_class::<decision::MultiDecision>()?;
    m.add_class::<strategy::Strategy>()?;
    m.add_class::<clock::ManualClock>()?;
    m.add_class::<clock::SystemClock>()?;
    m.add_class::<store::MemoryStore>()?;
    #[cfg(feature = "redis")]
    m.add_class::<store::RedisStore>()?;
    #[cfg(feature = "sqlite")]
    m.add_class::<sqlite_store::SqliteStore>()?;
    #[cfg(feature = "postgres")]
    m.add_class::<postgres::PostgresStore>()?;
    m.add_class::<limiter::Limiter>()?;
    fast_check::install(&m.py().get_type::<limiter::Limiter>())?;
    m.add_class::<multi::Dimension>()?;
    m.add_class::<multi::MultiLimiter>()?;
    m.add_class::<shaper::Shaper>()?;
    m.add_class::<adaptive::AdaptiveLimiter>()?;
    m.add_class::<adaptive::Permit>()?;
    m.add_class::<adaptive::Rejection>()?;
    m.add_class::<adaptive::VirtualClock>()?;
    m.add_class::<http::ClientIdentity>()?;
    m.add_class::<http::HttpLimiter>()?;
    m.add_class::<http::HttpDecision>()?;
    m.add_function(wrap_pyfunction!(http::http_headers_json, m)?)?;
    m.add_function(wrap_pyfunction!(http::http_client_key_json, m)?)?;
    m.add_function(wrap_pyfunction!(http::http_unavailable_body, m)?)?;
    m.add_function(wrap_pyfunction!(http::http_error_response, m)?)?;
    Ok(())
}
