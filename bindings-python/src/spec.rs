//! Strategy specs as Python dicts: `{"kind": "gcra", "options": {"limit": 10, "periodMs": 1000}}`.
//!
//! A dict is turned into JSON and handed to core's `StrategySpec::from_json`, so the format,
//! its strictness (unknown keys fail) and every message stay core's. The conversion refuses
//! what JSON cannot carry — NaN, infinities, non-str keys, arbitrary objects — naming the path
//! of the offending value, and keeps `bool` a JSON boolean so `{"limit": True}` is refused by
//! core instead of meaning 1.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use crate::error;

/// A Python value (dict, list, str, int, float, bool, None) as JSON; `path` names it in errors.
pub fn to_json(obj: &Bound<'_, PyAny>, path: &str) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(v) = obj.extract::<i64>() {
            return Ok(Value::Number(v.into()));
        }
        // Beyond i64: a float, so core's range check ("must be <= 2^53") speaks.
        let f = obj.extract::<f64>().map_err(|_| error::config(path, "is too large"))?;
        return Number::from_f64(f).map(Value::Number).ok_or_else(|| error::config(path, "is too large"));
    }
    if obj.is_instance_of::<PyFloat>() {
        let f = obj.extract::<f64>()?;
        return Number::from_f64(f).map(Value::Number).ok_or_else(|| error::config(path, "must be a finite number"));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in d.iter() {
            let key = match k.cast::<PyString>() {
                Ok(s) => s.to_cow()?.into_owned(),
                Err(_) => return Err(error::wrong_type(&format!("{path} keys"), "str", &k)),
            };
            let value = to_json(&v, &format!("{path}.{key}"))?;
            map.insert(key, value);
        }
        return Ok(Value::Object(map));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut out = Vec::new();
        for item in obj.try_iter()? {
            out.push(to_json(&item?, &format!("{path}[{}]", out.len()))?);
        }
        return Ok(Value::Array(out));
    }
    Err(error::wrong_type(path, "a JSON-like value (dict, list, str, int, float, bool or None)", obj))
}

/// JSON as a Python value; whole numbers within ±2^53 come back as `int` (specs hold options
/// as floats, but `{"limit": 10}` is what a reader expects to see).
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(f)) if f.fract() == 0.0 && f.abs() <= throttlekit::validate::MAX_SAFE_INTEGER => {
                (f as i64).into_pyobject(py)?.into_any()
            }
            (None, Some(f)) => f.into_pyobject(py)?.into_any(),
            (None, None) => py.None().into_bound(py),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}
