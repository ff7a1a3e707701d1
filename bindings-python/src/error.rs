//! Every conversion of a failure into a Python exception happens here.
//!
//! Core errors carry a stable [`ErrorCode`]; each code becomes one exception class, all derived
//! from `ThrottleKitError`, which exposes the code as `.code`. The classes are created at import
//! time with `type(name, bases, ns)` because some need two bases, which `create_exception!`
//! cannot express: `ConfigInvalidError` is also a `ValueError` (what a Python caller catches
//! for a bad argument), and `ConfigTypeError` — an argument of the wrong Python type — is a
//! `ConfigInvalidError` and also a `TypeError`, so both idioms work and `.code` is still there.

use pyo3::exceptions::{PyException, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use throttlekit::{Error, ErrorCode};

/// The exception classes, created once per interpreter by [`register`].
struct Classes {
    base: Py<PyType>,
    config_invalid: Py<PyType>,
    config_type: Py<PyType>,
    store_unavailable: Py<PyType>,
    rate_limit_exceeded: Py<PyType>,
    queue_full: Py<PyType>,
    not_implemented: Py<PyType>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

/// `type(name, bases, {...})`, shown to users as `throttlekit.<name>`.
fn new_class<'py>(
    py: Python<'py>,
    name: &str,
    bases: Vec<Bound<'py, PyType>>,
    code: Option<&str>,
    doc: &str,
) -> PyResult<Bound<'py, PyType>> {
    let ns = PyDict::new(py);
    ns.set_item("__module__", "throttlekit")?;
    ns.set_item("__doc__", doc)?;
    if let Some(code) = code {
        ns.set_item("code", code)?;
    }
    let bases = PyTuple::new(py, bases)?;
    Ok(py.get_type::<PyType>().call1((name, bases, ns))?.cast_into::<PyType>()?)
}

/// Creates the exception classes and adds them to the module.
pub fn register<'py>(m: &Bound<'py, PyModule>) -> PyResult<()> {
    let py = m.py();
    let classes = CLASSES.get_or_try_init(py, || -> PyResult<Classes> {
        let base = new_class(
            py,
            "ThrottleKitError",
            vec![py.get_type::<PyException>()],
            None,
            "Base of every throttlekit error. `.code` is the stable reason (e.g. \"config_invalid\"); \
             `.retry_after_ms` is a retry hint when the error knows one, else None.",
        )?;
        base.setattr("code", "")?;
        base.setattr("retry_after_ms", py.None())?;
        let sub = |name: &str, extra: Option<Bound<'py, PyType>>, code: ErrorCode, doc: &str| {
            let mut bases = vec![base.clone()];
            bases.extend(extra);
            new_class(py, name, bases, Some(code.as_str()), doc)
        };
        let config_invalid = sub(
            "ConfigInvalidError",
            Some(py.get_type::<PyValueError>()),
            ErrorCode::ConfigInvalid,
            "An option, a cost or another argument is out of its domain (code \"config_invalid\"). \
             Also a ValueError.",
        )?;
        let config_type = new_class(
            py,
            "ConfigTypeError",
            vec![config_invalid.clone(), py.get_type::<PyTypeError>()],
            Some(ErrorCode::ConfigInvalid.as_str()),
            "An argument has the wrong Python type (code \"config_invalid\"). Also a TypeError.",
        )?;
        Ok(Classes {
            store_unavailable: sub(
                "StoreUnavailableError",
                None,
                ErrorCode::StoreUnavailable,
                "The store could not answer: connection refused, timeout, script error (code \"store_unavailable\").",
            )?
            .unbind(),
            rate_limit_exceeded: sub(
                "RateLimitExceededError",
                None,
                ErrorCode::RateLimitExceeded,
                "A request was refused with an error instead of a denied Decision (code \"rate_limit_exceeded\").",
            )?
            .unbind(),
            queue_full: sub(
                "QueueFullError",
                None,
                ErrorCode::QueueFull,
                "The shaper's queue would exceed max_queue_ms (code \"queue_full\"); `.retry_after_ms` says by how much.",
            )?
            .unbind(),
            not_implemented: sub(
                "OperationNotImplementedError",
                Some(py.get_type::<PyNotImplementedError>()),
                ErrorCode::NotImplemented,
                "The operation is not supported by this store or strategy (code \"not_implemented\"). \
                 Also a NotImplementedError.",
            )?
            .unbind(),
            base: base.unbind(),
            config_invalid: config_invalid.unbind(),
            config_type: config_type.unbind(),
        })
    })?;
    for class in [
        &classes.base,
        &classes.config_invalid,
        &classes.config_type,
        &classes.store_unavailable,
        &classes.rate_limit_exceeded,
        &classes.queue_full,
        &classes.not_implemented,
    ] {
        let class = class.bind(py);
        m.add(class.name()?, class)?;
    }
    Ok(())
}

/// An instance of `class(message)` with `retry_after_ms` set, as a raisable error.
fn raise(py: Python<'_>, class: &Py<PyType>, message: &str, retry_after_ms: Option<i64>) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let instance = class.bind(py).call1((message,))?;
        if let Some(ms) = retry_after_ms {
            instance.setattr("retry_after_ms", ms)?;
        }
        Ok(PyErr::from_value(instance))
    };
    build().unwrap_or_else(|e| e)
}

fn classes(py: Python<'_>) -> Result<&Classes, PyErr> {
    CLASSES.get(py).ok_or_else(|| PyRuntimeError::new_err("throttlekit's exception classes are not initialised"))
}

/// The Python exception for a core error: the class of its code, its message, its retry hint.
pub fn to_py(err: Error) -> PyErr {
    Python::attach(|py| {
        let classes = match classes(py) {
            Ok(c) => c,
            Err(e) => return e,
        };
        let class = match err.code() {
            ErrorCode::ConfigInvalid => &classes.config_invalid,
            ErrorCode::StoreUnavailable => &classes.store_unavailable,
            ErrorCode::RateLimitExceeded => &classes.rate_limit_exceeded,
            ErrorCode::QueueFull => &classes.queue_full,
            ErrorCode::NotImplemented => &classes.not_implemented,
        };
        raise(py, class, &err.to_string(), err.retry_after_ms())
    })
}

/// `config_invalid` for argument `arg` (messages read like core's: `"<arg> <problem>"`).
pub fn config(arg: &str, problem: &str) -> PyErr {
    to_py(Error::config(arg, problem))
}

/// `ConfigTypeError`: argument `arg` should be `expected` but is a `got`.
pub fn wrong_type(arg: &str, expected: &str, got: &Bound<'_, PyAny>) -> PyErr {
    let py = got.py();
    let type_name = got.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".to_owned());
    let message = format!("{}: {arg} must be {expected}, not {type_name}", ErrorCode::ConfigInvalid);
    match classes(py) {
        Ok(c) => raise(py, &c.config_type, &message, None),
        Err(e) => e,
    }
}

/// Extension: `result.py()?` turns a core `Result` into a `PyResult`.
pub trait IntoPyResult<T> {
    /// Maps the error with [`to_py`].
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for throttlekit::Result<T> {
    #[inline]
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// The stable codes, for `throttlekit.ERROR_CODES` (a test compares them with the classes).
pub fn codes() -> Vec<&'static str> {
    ErrorCode::ALL.iter().map(|c| c.as_str()).collect()
}
