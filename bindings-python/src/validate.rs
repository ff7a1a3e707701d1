//! Python arguments into core's types.
//!
//! Only *type* conversion happens here: which Python objects may stand for a count, a cost, a
//! time or a key, and whether a Python int fits the number core expects without rounding. The
//! domain checks (positive, whole, in range) are core's `validate`, so a bad value is refused
//! with the same words in every language. Arguments arrive as `PyAny` rather than through
//! PyO3's typed extraction so that a wrong type is a `ConfigTypeError` carrying `.code`, not a
//! bare `TypeError`. `bool` is refused wherever a number is expected: Python treats `True` as
//! the int 1, which would silently turn a typo into a cost.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyString};
use throttlekit::FailPolicy;
#[cfg(any(feature = "postgres", feature = "sqlite"))]
use throttlekit::store::sql_options::{OptionKind, OptionValue};
use throttlekit::validate::{self as core, MAX_SAFE_INTEGER};

use crate::error::{self, IntoPyResult};

/// 2^53, the largest integer every path represents exactly.
const MAX_SAFE: i64 = MAX_SAFE_INTEGER as i64;

/// A number as Python gave it.
enum Number {
    Int(i64),
    /// An int beyond ±2^63 (only its sign matters: it is out of every range).
    Huge {
        negative: bool,
    },
    Float(f64),
}

/// An `int` (not `bool`) or a `float`; anything else is a `ConfigTypeError` naming `arg`.
fn number(obj: &Bound<'_, PyAny>, arg: &str, expected: &str) -> PyResult<Number> {
    if obj.is_instance_of::<PyBool>() {
        return Err(error::wrong_type(arg, expected, obj));
    }
    if obj.is_instance_of::<PyInt>() {
        return match obj.extract::<i64>() {
            Ok(v) => Ok(Number::Int(v)),
            Err(_) => Ok(Number::Huge { negative: obj.lt(0)? }),
        };
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Number::Float(obj.extract::<f64>()?));
    }
    Err(error::wrong_type(arg, expected, obj))
}

/// A `str` argument, as the UTF-8 that CPython caches inside the object (no copy).
///
/// This is PyO3's `PyString::to_str`, written out so that it inlines into the hot methods: the
/// call to it and its by-memory `Result<Cow>` cost a few nanoseconds per check. The exact-type
/// test comes first because under the stable ABI the subclass test is a call.
#[inline]
pub fn string<'a>(obj: &'a Bound<'_, PyAny>, arg: &str) -> PyResult<&'a str> {
    let ptr = obj.as_ptr();
    // SAFETY: `ptr` is a live object (borrowed for 'a).
    if unsafe { ffi::PyUnicode_CheckExact(ptr) == 0 && ffi::PyUnicode_Check(ptr) == 0 } {
        return Err(error::wrong_type(arg, "a str", obj));
    }
    let mut len: ffi::Py_ssize_t = 0;
    // SAFETY: `ptr` is a str. Its UTF-8 form is cached in the object, so the bytes live as long as
    // `obj` is borrowed ('a); a str with lone surrogates gives NULL and a UnicodeEncodeError.
    unsafe {
        let data = ffi::PyUnicode_AsUTF8AndSize(ptr, &mut len);
        if data.is_null() {
            return Err(PyErr::fetch(obj.py()));
        }
        Ok(std::str::from_utf8_unchecked(std::slice::from_raw_parts(data.cast::<u8>(), len as usize)))
    }
}

/// An iterable of `str` (a lone `str` is refused: iterating it would give one key per letter).
pub fn strings(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<Vec<String>> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(error::wrong_type(arg, "a list of str", obj));
    }
    let iter = obj.try_iter().map_err(|_| error::wrong_type(arg, "a list of str", obj))?;
    let mut out = Vec::new();
    for item in iter {
        let item = item?;
        out.push(string(&item, &format!("{arg}[{}]", out.len()))?.to_owned());
    }
    Ok(out)
}

/// The cost of a request: an int in `[1, 2^53]`, or a whole float. As an argument type it
/// lets the signature say `cost=1` while an explicit `cost=None` is still refused.
#[derive(Clone, Copy, Debug)]
pub struct Cost(pub u64);

impl<'a, 'py> FromPyObject<'a, 'py> for Cost {
    type Error = PyErr;

    #[inline]
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let v = match number(&obj, "cost", "an int")? {
            Number::Int(v) if v <= 0 => core::cost(0),
            Number::Int(v) => core::cost(v as u64),
            Number::Huge { negative: true } => core::cost(0),
            Number::Huge { negative: false } => core::cost(u64::MAX),
            Number::Float(f) => core::cost_from_f64(f),
        };
        v.py().map(Cost)
    }
}

/// `max_keys` of a memory store: a count as [`count`] reads it, or `None` for no bound. As an
/// argument type it lets the signature show core's default.
#[derive(Clone, Copy, Debug)]
pub struct MaxKeys(pub usize);

/// `max_key_length` of a memory store, read as [`MaxKeys`].
#[derive(Clone, Copy, Debug)]
pub struct MaxKeyLength(pub usize);

fn bound_arg(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<usize> {
    if obj.is_none() {
        return Ok(usize::MAX);
    }
    count(obj, arg).map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

impl<'a, 'py> FromPyObject<'a, 'py> for MaxKeys {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        bound_arg(&obj, "max_keys").map(MaxKeys)
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for MaxKeyLength {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        bound_arg(&obj, "max_key_length").map(MaxKeyLength)
    }
}

/// A strategy option (`limit`, `period_ms`, ...) as the `f64` a spec holds. Ints must survive
/// the conversion exactly; core then checks the domain (and that integers are whole).
pub fn option(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<f64> {
    match number(obj, arg, "an int or a float")? {
        Number::Int(v) if v > MAX_SAFE => Err(error::config(arg, "must be <= 2^53")),
        Number::Int(v) if v < -MAX_SAFE => Err(error::config(arg, "must be >= -2^53")),
        Number::Int(v) => Ok(v as f64),
        Number::Huge { negative: false } => Err(error::config(arg, "must be <= 2^53")),
        Number::Huge { negative: true } => Err(error::config(arg, "must be >= -2^53")),
        Number::Float(f) => Ok(f),
    }
}

/// An optional strategy option (`None` means "core's default").
pub fn opt_option(obj: Option<&Bound<'_, PyAny>>, arg: &str) -> PyResult<Option<f64>> {
    match obj {
        Some(o) if !o.is_none() => option(o, arg).map(Some),
        _ => Ok(None),
    }
}

/// Epoch or duration milliseconds: an int within ±2^53, or a whole float.
pub fn millis(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<i64> {
    let bad = || error::config(arg, "must be an integer number of milliseconds within ±2^53");
    match number(obj, arg, "an int")? {
        Number::Int(v) if v.abs() > MAX_SAFE => Err(bad()),
        Number::Int(v) => Ok(v),
        Number::Huge { .. } => Err(bad()),
        Number::Float(f) => core::now_from_f64(f).map_err(|_| bad()),
    }
}

/// A signed integer option (`initial_limit`, `rtt_ns`): an int within ±2^53, or a whole float.
/// Its domain (positive, not negative) is core's to check.
pub fn integer(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<i64> {
    let bad = || error::config(arg, "must be an integer within ±2^53");
    match number(obj, arg, "an int")? {
        Number::Int(v) if v.abs() > MAX_SAFE => Err(bad()),
        Number::Int(v) => Ok(v),
        Number::Huge { .. } => Err(bad()),
        Number::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER => Ok(f as i64),
        Number::Float(_) => Err(bad()),
    }
}

/// A count (`max_keys`, `cost_multiplier`, `timeout_ms`): an int in `[0, 2^53]`, or a whole
/// float. Whether 0 is allowed is core's decision.
pub fn count(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<u64> {
    let bad = || error::config(arg, "must be an integer >= 0 and <= 2^53");
    match number(obj, arg, "an int")? {
        Number::Int(v) if !(0..=MAX_SAFE).contains(&v) => Err(bad()),
        Number::Int(v) => Ok(v as u64),
        Number::Huge { .. } => Err(bad()),
        Number::Float(f) if f.is_finite() && f.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&f) => Ok(f as u64),
        Number::Float(_) => Err(bad()),
    }
}

/// The SQL store options among a constructor's arguments as core's `(name, value)` pairs, each
/// read as core's `kind` of it says (a wrong type is `ConfigTypeError` naming the argument, a
/// negative count `ConfigInvalidError`); absent and `None` both mean core's default. Core maps
/// the pairs (`PostgresOptions::from_pairs`, `SqliteOptions::from_pairs`).
#[cfg(any(feature = "postgres", feature = "sqlite"))]
pub fn sql_options<'n>(
    args: &[(&'n str, Option<&Bound<'_, PyAny>>)],
    kind: fn(&str) -> Option<OptionKind>,
) -> PyResult<Vec<(&'n str, Option<OptionValue>)>> {
    let mut pairs = Vec::with_capacity(args.len());
    for &(name, arg) in args {
        let value = match (given(arg), kind(name)) {
            (None, _) => None,
            (Some(v), Some(OptionKind::Text)) => Some(OptionValue::Text(string(v, name)?.to_owned())),
            (Some(v), Some(OptionKind::Flag)) => Some(OptionValue::Flag(flag(v, name)?)),
            // <= 2^53, so it fits.
            (Some(v), Some(OptionKind::Count)) => Some(OptionValue::Int(count(v, name)? as i64)),
            (Some(_), None) => return Err(throttlekit::Error::config(name, "is not an option")).py(),
        };
        pairs.push((name, value));
    }
    Ok(pairs)
}

/// An optional argument that was given (absent and `None` both mean the default).
pub fn given<'a, 'py>(o: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    o.filter(|v| !v.is_none())
}

/// A `bool` flag (ints are refused: `server_clock=1` is more likely a slip than a choice).
pub fn flag(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<bool> {
    match obj.cast::<PyBool>() {
        Ok(b) => Ok(b.is_true()),
        Err(_) => Err(error::wrong_type(arg, "a bool", obj)),
    }
}

/// `"fail_closed"`, `"fail_open"` or `"raise"`.
pub fn fail_policy(obj: &Bound<'_, PyAny>) -> PyResult<FailPolicy> {
    FailPolicy::parse(string(obj, "fail_policy")?).py()
}

/// The stable name of a fail policy (the inverse of [`fail_policy`]).
pub fn fail_policy_name(policy: FailPolicy) -> &'static str {
    match policy {
        FailPolicy::FailClosed => "fail_closed",
        FailPolicy::FailOpen => "fail_open",
        FailPolicy::Raise => "raise",
    }
}
