//! JavaScript values in, core values out, with the Node binding's `config_invalid` messages
//! (bindings-node/src/convert.rs, the same rules on `JsValue`s instead of napi values). Numbers
//! stay `f64` until the core's validators decide what is acceptable.

use js_sys::{Array, Object, Reflect};
use throttlekit::spec::{Data, Num};
use throttlekit::validate;
use wasm_bindgen::{JsCast, JsValue};

use crate::error::{CoreResult, config};

/// How deep an options object may nest (specs nest two levels; this only stops cycles).
const MAX_DEPTH: usize = 8;

/// The string `v`; anything else is `config_invalid` for `field`.
pub fn string(v: &JsValue, field: &str) -> CoreResult<String> {
    v.as_string().ok_or_else(|| config(field, "must be a string"))
}

/// A JS number as `f64`; anything else (BigInt, string, undefined) is `config_invalid`.
pub fn number(v: &JsValue, field: &str) -> CoreResult<f64> {
    v.as_f64().ok_or_else(|| config(field, "must be a number"))
}

/// A request cost: `undefined` means 1; otherwise a number the core accepts as a cost.
/// `undefined` is asked first: it is the common case, and `is_undefined` is a plain call where
/// `as_f64` writes its answer through the module's memory.
#[inline]
pub fn cost(v: &JsValue) -> CoreResult<u64> {
    if v.is_undefined() {
        return Ok(1);
    }
    match v.as_f64() {
        Some(n) => validate::cost_from_f64(n),
        None => Err(config("cost", "must be a positive integer")),
    }
}

/// An epoch-millisecond timestamp (a whole number within ±2^53).
pub fn epoch_ms(v: &JsValue, field: &str) -> CoreResult<i64> {
    let n = number(v, field)?;
    validate::now_from_f64(n).map_err(|_| config(field, "must be a whole number of milliseconds within ±2^53"))
}

/// A boolean; anything else is `config_invalid`.
pub fn boolean(v: &JsValue, field: &str) -> CoreResult<bool> {
    v.as_bool().ok_or_else(|| config(field, "must be a boolean"))
}

/// The items of the array `v`.
pub fn array(v: &JsValue, field: &str) -> CoreResult<Vec<JsValue>> {
    if !Array::is_array(v) {
        return Err(config(field, "must be an array"));
    }
    Ok(v.unchecked_ref::<Array>().iter().collect())
}

/// An array of strings (multi-dimensional keys, `checkMany` keys).
pub fn strings(v: &JsValue, field: &str) -> CoreResult<Vec<String>> {
    array(v, field)?.iter().map(|item| string(item, &format!("{field}[]"))).collect()
}

/// A plain options object: its own enumerable string-keyed properties, `undefined` values left
/// out. Any name outside `allowed` is `config_invalid`, so a typo cannot fall back to a default.
pub struct Options {
    field: String,
    entries: Vec<(String, JsValue)>,
}

impl Options {
    /// Reads `v` as an options object; `undefined` is an empty one when `optional`.
    pub fn read(v: &JsValue, field: &str, allowed: &[&str], optional: bool) -> CoreResult<Options> {
        if v.is_undefined() && optional {
            return Ok(Options { field: field.to_owned(), entries: Vec::new() });
        }
        if !v.is_object() || Array::is_array(v) || v.is_function() {
            return Err(config(field, "must be an options object"));
        }
        let mut entries = Vec::new();
        for (name, item) in own_entries(v, field)? {
            if item.is_undefined() {
                continue;
            }
            if !allowed.contains(&name.as_str()) {
                return Err(config(
                    &format!("{field}.{name}"),
                    &format!("is not an option (expected one of: {})", allowed.join(", ")),
                ));
            }
            entries.push((name, item));
        }
        Ok(Options { field: field.to_owned(), entries })
    }

    /// The value of option `name`, if given.
    pub fn get(&self, name: &str) -> Option<&JsValue> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The dotted path of option `name`, for messages (`limiter.prefix`).
    pub fn path(&self, name: &str) -> String {
        format!("{}.{name}", self.field)
    }

    /// A required option.
    pub fn require(&self, name: &str) -> CoreResult<&JsValue> {
        self.get(name).ok_or_else(|| config(&self.path(name), "is required"))
    }

    /// An optional string option.
    pub fn string(&self, name: &str) -> CoreResult<Option<String>> {
        self.get(name).map(|v| string(v, &self.path(name))).transpose()
    }

    /// An optional boolean option.
    pub fn boolean(&self, name: &str) -> CoreResult<Option<bool>> {
        self.get(name).map(|v| boolean(v, &self.path(name))).transpose()
    }

    /// An optional number option (range checks are the caller's core validator's).
    pub fn number(&self, name: &str) -> CoreResult<Option<f64>> {
        self.get(name).map(|v| number(v, &self.path(name))).transpose()
    }
}

/// The own enumerable string-keyed properties of the object `v`, in property order.
fn own_entries(v: &JsValue, field: &str) -> CoreResult<Vec<(String, JsValue)>> {
    let keys = Object::keys(v.unchecked_ref::<Object>());
    keys.iter()
        .map(|name| {
            let key = string(&name, field)?;
            let item = Reflect::get(v, &name).map_err(|_| config(&format!("{field}.{key}"), "could not be read"))?;
            Ok((key, item))
        })
        .collect()
}

/// Plain data (objects, arrays, strings, finite numbers, booleans, null) as the core's
/// [`Data`], for its spec and options readers; NaN, infinities, BigInts, functions and symbols
/// are `config_invalid` naming the path.
pub fn json(v: &JsValue, field: &str) -> CoreResult<Data> {
    json_at(v, field, 0)
}

fn json_at(v: &JsValue, field: &str, depth: usize) -> CoreResult<Data> {
    if depth > MAX_DEPTH {
        return Err(config(field, "nests too deeply"));
    }
    if v.is_null() {
        Ok(Data::Null)
    } else if let Some(b) = v.as_bool() {
        Ok(Data::Bool(b))
    } else if let Some(s) = v.as_string() {
        Ok(Data::String(s))
    } else if let Some(n) = v.as_f64() {
        if !n.is_finite() {
            return Err(config(field, "must be a finite number"));
        }
        // Whole numbers are integers, as serde_json reads them from a JSON text.
        Ok(Data::Number(if n.fract() == 0.0 && n.abs() <= validate::MAX_SAFE_INTEGER {
            if n >= 0.0 { Num::PosInt(n as u64) } else { Num::NegInt(n as i64) }
        } else {
            Num::Float(n)
        }))
    } else if Array::is_array(v) {
        Ok(Data::Array(
            array(v, field)?
                .iter()
                .enumerate()
                .map(|(i, item)| json_at(item, &format!("{field}[{i}]"), depth + 1))
                .collect::<CoreResult<_>>()?,
        ))
    } else if v.is_bigint() {
        Err(config(field, "must be a number, not a BigInt"))
    } else if v.is_undefined() {
        Err(config(field, "is required"))
    } else if v.is_object() && !v.is_function() {
        let mut members = Vec::new();
        for (name, item) in own_entries(v, field)? {
            if item.is_undefined() {
                continue;
            }
            let child = json_at(&item, &format!("{field}.{name}"), depth + 1)?;
            members.push((name, child));
        }
        Ok(Data::object(members))
    } else {
        Err(config(field, "must be plain data (objects, arrays, strings, numbers, booleans)"))
    }
}
