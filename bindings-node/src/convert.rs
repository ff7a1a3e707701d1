//! JavaScript values in, core values out — with a stable `config_invalid` for every value of
//! the wrong type.
//!
//! Entry points take their arguments as raw `Unknown`s and convert them here instead of letting
//! napi-rs do it, because napi-rs reports a wrong type with its own status codes (`StringExpected`,
//! `InvalidArg`) and would accept `1.5` as a `u32`; callers must get `config_invalid` naming the
//! argument. Numbers stay `f64` until the core's validators (`validate::cost_from_f64`,
//! `validate::now_from_f64`, `StrategySpec::build`) decide what is acceptable — no range or
//! rounding rule lives here.

use std::cell::RefCell;

use napi::bindgen_prelude::{JsValue, Unknown};
use napi::sys;
use serde_json::{Map, Number, Value};
#[cfg(any(feature = "postgres", feature = "sqlite"))]
use throttlekit::store::sql_options::{OptionKind, OptionValue};
use throttlekit::validate;

use crate::error::{CoreResult, config};

thread_local! {
    /// Reused UTF-8 buffer for keys, so the sync hot path allocates nothing per call.
    static KEY_BUF: RefCell<Vec<u8>> = RefCell::new(vec![0; 256]);
}

/// How deep an options object may nest (specs nest two levels; this only stops cycles).
const MAX_DEPTH: usize = 8;

fn raw(v: &Unknown<'_>) -> (sys::napi_env, sys::napi_value) {
    let value = v.value();
    (value.env, value.value)
}

/// The JS type of `v`.
pub fn type_of(v: &Unknown<'_>) -> sys::napi_valuetype {
    let (env, value) = raw(v);
    let mut t = sys::ValueType::napi_undefined;
    // SAFETY: a live value of the current call.
    unsafe { sys::napi_typeof(env, value, &mut t) };
    t
}

/// Whether `v` is `undefined` (an omitted optional argument).
pub fn is_undefined(v: &Unknown<'_>) -> bool {
    type_of(v) == sys::ValueType::napi_undefined
}

/// Runs `f` on the string `v` without allocating; a non-string is `config_invalid` for `field`.
pub fn with_str<R>(v: &Unknown<'_>, field: &str, f: impl FnOnce(&str) -> CoreResult<R>) -> CoreResult<R> {
    let (env, value) = raw(v);
    KEY_BUF.with(|buf| with_str_in(buf, env, value, field, f))
}

/// [`with_str`] with the caller's reusable buffer (the fast path keeps one per environment
/// instead of paying for a thread-local lookup per call).
#[inline]
pub fn with_str_in<R>(
    buf: &RefCell<Vec<u8>>,
    env: sys::napi_env,
    value: sys::napi_value,
    field: &str,
    f: impl FnOnce(&str) -> CoreResult<R>,
) -> CoreResult<R> {
    // A re-entrant call (impossible today: `f` never calls back into JS) gets its own buffer.
    let mut guard = buf.try_borrow_mut().ok();
    let mut local = Vec::new();
    let buf: &mut Vec<u8> = match guard.as_deref_mut() {
        Some(b) => b,
        None => &mut local,
    };
    let mut len = 0usize;
    loop {
        // SAFETY: `value` is a live value of the current call; `buf` is writable for
        // `buf.len()` bytes; napi writes at most that many, NUL included, and reports the
        // bytes written (excluding the NUL) in `len`.
        let status =
            unsafe { sys::napi_get_value_string_utf8(env, value, buf.as_mut_ptr().cast(), buf.len(), &mut len) };
        if status != sys::Status::napi_ok {
            return Err(config(field, "must be a string"));
        }
        // V8 never writes part of a UTF-8 sequence, so a truncated copy stops up to 3 bytes
        // short of the buffer's end: only a copy ending that close can be incomplete.
        if len + 4 < buf.len() {
            break;
        }
        let mut full = 0usize;
        // SAFETY: a NULL buffer asks napi for the length only.
        unsafe { sys::napi_get_value_string_utf8(env, value, std::ptr::null_mut(), 0, &mut full) };
        if full == len {
            break;
        }
        buf.resize(full + 8, 0);
    }
    // napi writes whole UTF-8 sequences, so the prefix is valid UTF-8; lone surrogates in
    // the JS string arrive as U+FFFD.
    let s = std::str::from_utf8(&buf[..len]).map_err(|_| config(field, "must be valid UTF-16"))?;
    f(s)
}

/// The string `v` as an owned `String` (for async calls, which outlive the JS values).
pub fn string(v: &Unknown<'_>, field: &str) -> CoreResult<String> {
    with_str(v, field, |s| Ok(s.to_owned()))
}

/// A JS number as `f64`; anything else (BigInt, string, undefined) is `config_invalid`.
pub fn number(v: &Unknown<'_>, field: &str) -> CoreResult<f64> {
    let (env, value) = raw(v);
    let mut out = 0.0;
    // SAFETY: a live value of the current call.
    if unsafe { sys::napi_get_value_double(env, value, &mut out) } != sys::Status::napi_ok {
        return Err(config(field, "must be a number"));
    }
    Ok(out)
}

/// A request cost: `undefined` means 1; otherwise a number the core accepts as a cost.
#[inline]
pub fn cost(v: &Unknown<'_>) -> CoreResult<u64> {
    let (env, value) = raw(v);
    let mut out = 0.0;
    // SAFETY: a live value of the current call.
    if unsafe { sys::napi_get_value_double(env, value, &mut out) } == sys::Status::napi_ok {
        return validate::cost_from_f64(out);
    }
    if is_undefined(v) { Ok(1) } else { Err(config("cost", "must be a positive integer")) }
}

/// An epoch-millisecond timestamp (a whole number within ±2^53).
pub fn epoch_ms(v: &Unknown<'_>, field: &str) -> CoreResult<i64> {
    let n = number(v, field)?;
    validate::now_from_f64(n).map_err(|_| config(field, "must be a whole number of milliseconds within ±2^53"))
}

/// A boolean; anything else is `config_invalid`.
pub fn boolean(v: &Unknown<'_>, field: &str) -> CoreResult<bool> {
    let (env, value) = raw(v);
    let mut out = false;
    // SAFETY: a live value of the current call.
    if unsafe { sys::napi_get_value_bool(env, value, &mut out) } != sys::Status::napi_ok {
        return Err(config(field, "must be a boolean"));
    }
    Ok(out)
}

fn is_array(env: sys::napi_env, value: sys::napi_value) -> bool {
    let mut out = false;
    // SAFETY: a live value of the current call.
    unsafe { sys::napi_is_array(env, value, &mut out) };
    out
}

/// The items of the array `v`.
pub fn array<'a>(v: &Unknown<'a>, field: &str) -> CoreResult<Vec<Unknown<'a>>> {
    let (env, value) = raw(v);
    if !is_array(env, value) {
        return Err(config(field, "must be an array"));
    }
    let mut len = 0u32;
    // SAFETY: `value` is an array of the current call.
    unsafe { sys::napi_get_array_length(env, value, &mut len) };
    (0..len)
        .map(|i| {
            let mut item = std::ptr::null_mut();
            // SAFETY: as above; a getter that throws leaves a pending exception, reported by
            // napi-rs when we return.
            if unsafe { sys::napi_get_element(env, value, i, &mut item) } != sys::Status::napi_ok {
                return Err(config(field, "could not be read"));
            }
            // SAFETY: `item` is a live value in `env`.
            Ok(unsafe { Unknown::from_raw_unchecked(env, item) })
        })
        .collect()
}

/// Key and cost of a Promise method, owned so the future can outlive the JS values.
pub fn key_and_cost(key: &Unknown<'_>, cost: &Unknown<'_>) -> CoreResult<(String, u64)> {
    let cost = self::cost(cost)?;
    Ok((string(key, "key")?, cost))
}

/// An array of strings (multi-dimensional keys, `checkMany` keys).
pub fn strings(v: &Unknown<'_>, field: &str) -> CoreResult<Vec<String>> {
    array(v, field)?.iter().map(|item| string(item, &format!("{field}[]"))).collect()
}

/// A plain options object: its own enumerable string-keyed properties, `undefined` values
/// left out (JavaScript's "not given"). Any name outside `allowed` is `config_invalid`, so a
/// typo such as `perfix` cannot silently fall back to a default.
pub struct Options<'a> {
    field: String,
    entries: Vec<(String, Unknown<'a>)>,
}

impl<'a> Options<'a> {
    /// Reads `v` as an options object; `undefined` is an empty one when `optional`.
    pub fn read(v: &Unknown<'a>, field: &str, allowed: &[&str], optional: bool) -> CoreResult<Options<'a>> {
        let t = type_of(v);
        if t == sys::ValueType::napi_undefined && optional {
            return Ok(Options { field: field.to_owned(), entries: Vec::new() });
        }
        let (env, value) = raw(v);
        if t != sys::ValueType::napi_object || is_array(env, value) {
            return Err(config(field, "must be an options object"));
        }
        let mut entries = Vec::new();
        for (name, item) in own_entries(env, value, field)? {
            if type_of(&item) == sys::ValueType::napi_undefined {
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
    pub fn get(&self, name: &str) -> Option<&Unknown<'a>> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The dotted path of option `name`, for messages (`limiter.prefix`).
    pub fn path(&self, name: &str) -> String {
        format!("{}.{name}", self.field)
    }

    /// A required option.
    pub fn require(&self, name: &str) -> CoreResult<&Unknown<'a>> {
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

    /// The SQL store options `names` as core's `(path, value)` pairs (`postgresStore.poolSize`),
    /// each read as core's `kind` of it says; core maps them (`PostgresOptions::from_pairs`,
    /// `SqliteOptions::from_pairs`) and checks the values (a negative count included).
    #[cfg(any(feature = "postgres", feature = "sqlite"))]
    pub fn sql_pairs(
        &self,
        names: &[&str],
        kind: fn(&str) -> Option<OptionKind>,
    ) -> CoreResult<Vec<(String, Option<OptionValue>)>> {
        let mut pairs = Vec::with_capacity(names.len());
        for name in names {
            let path = self.path(name);
            let value = match (self.get(name), kind(name)) {
                (None, _) => None,
                (Some(v), Some(OptionKind::Text)) => Some(OptionValue::Text(string(v, &path)?)),
                (Some(v), Some(OptionKind::Flag)) => Some(OptionValue::Flag(boolean(v, &path)?)),
                (Some(v), Some(OptionKind::Count)) => {
                    let n = validate::integer_at_least(&path, number(v, &path)?, -validate::MAX_SAFE_INTEGER)?;
                    Some(OptionValue::Int(n as i64))
                }
                (Some(_), None) => return Err(config(&path, "is not an option")),
            };
            pairs.push((path, value));
        }
        Ok(pairs)
    }
}

/// The own enumerable string-keyed properties of the object `value`, in property order.
fn own_entries<'a>(env: sys::napi_env, value: sys::napi_value, field: &str) -> CoreResult<Vec<(String, Unknown<'a>)>> {
    let mut names = std::ptr::null_mut();
    // SAFETY: `value` is an object of the current call.
    let status = unsafe {
        sys::napi_get_all_property_names(
            env,
            value,
            sys::KeyCollectionMode::own_only,
            sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
            sys::KeyConversion::numbers_to_strings,
            &mut names,
        )
    };
    if status != sys::Status::napi_ok {
        return Err(config(field, "could not be read"));
    }
    // SAFETY: `names` is an array created by napi in `env`.
    let names = array(&unsafe { Unknown::from_raw_unchecked(env, names) }, field)?;
    names
        .iter()
        .map(|name| {
            let key = string(name, field)?;
            let mut item = std::ptr::null_mut();
            // SAFETY: `value` is an object and `name` a key of it; a throwing getter fails here.
            if unsafe { sys::napi_get_property(env, value, name.value().value, &mut item) } != sys::Status::napi_ok {
                return Err(config(&format!("{field}.{key}"), "could not be read"));
            }
            // SAFETY: `item` is a live value in `env`.
            Ok((key, unsafe { Unknown::from_raw_unchecked(env, item) }))
        })
        .collect()
}

/// Plain data (objects, arrays, strings, finite numbers, booleans, null) as JSON, for the
/// core's serde-described specs. `undefined` properties are left out; NaN, infinities,
/// BigInts, functions and symbols are `config_invalid` naming the path.
pub fn json(v: &Unknown<'_>, field: &str) -> CoreResult<Value> {
    json_at(v, field, 0)
}

fn json_at(v: &Unknown<'_>, field: &str, depth: usize) -> CoreResult<Value> {
    if depth > MAX_DEPTH {
        return Err(config(field, "nests too deeply"));
    }
    let (env, value) = raw(v);
    match type_of(v) {
        sys::ValueType::napi_null => Ok(Value::Null),
        sys::ValueType::napi_boolean => Ok(Value::Bool(boolean(v, field)?)),
        sys::ValueType::napi_string => Ok(Value::String(string(v, field)?)),
        sys::ValueType::napi_number => {
            let n = number(v, field)?;
            if !n.is_finite() {
                return Err(config(field, "must be a finite number"));
            }
            // Whole numbers stay integers so that specs read back (`toSpec`) look as written.
            if n.fract() == 0.0 && n.abs() <= validate::MAX_SAFE_INTEGER {
                Ok(Value::Number(Number::from(n as i64)))
            } else {
                Number::from_f64(n).map(Value::Number).ok_or_else(|| config(field, "must be a finite number"))
            }
        }
        sys::ValueType::napi_object if is_array(env, value) => Ok(Value::Array(
            array(v, field)?
                .iter()
                .enumerate()
                .map(|(i, item)| json_at(item, &format!("{field}[{i}]"), depth + 1))
                .collect::<CoreResult<_>>()?,
        )),
        sys::ValueType::napi_object => {
            let mut map = Map::new();
            for (name, item) in own_entries(env, value, field)? {
                if type_of(&item) == sys::ValueType::napi_undefined {
                    continue;
                }
                let child = json_at(&item, &format!("{field}.{name}"), depth + 1)?;
                map.insert(name, child);
            }
            Ok(Value::Object(map))
        }
        sys::ValueType::napi_bigint => Err(config(field, "must be a number, not a BigInt")),
        sys::ValueType::napi_undefined => Err(config(field, "is required")),
        _ => Err(config(field, "must be plain data (objects, arrays, strings, numbers, booleans)")),
    }
}
