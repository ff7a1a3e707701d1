//! [`StrategySpec`] read from [`Data`] and written to a `serde_json::Value` by hand, for the
//! WebAssembly build (bindings-wasm/), where serde's derived deserializers and serializer were a
//! quarter of the module's code.
//!
//! The reader is serde's: it accepts exactly what `serde_json::from_value::<StrategySpec>`
//! accepts (the adjacently tagged `{kind, options}` object and its `[kind, options]` array form,
//! each options struct as an object or as an array of its fields in order, a `resetCadence` as a
//! string or a single-key map) and fails with the same message at the same first problem (keys
//! in the map's order, which is sorted). `core/tests/spec_value.rs` holds the two to each other
//! over generated values (read through [`Data::from`]), valid and not, so they cannot drift; the
//! writer equals `serde_json::to_value`. The native bindings keep serde (their JSON-text errors
//! name a line and column).

use serde_json::{Map, Number, Value};

use super::data::{Data, Num};

use super::{
    GcraOptions, QuotaOptions, ResetCadence, SlidingWindowOptions, StrategySpec, TokenBucketOptions, WindowOptions,
};
use crate::error::{Error, Result};

/// serde's message for a value of the wrong type, the wrong length or an unknown name.
type Msg = std::result::Result<(), String>;

const KINDS: &[&str] = &["gcra", "tokenBucket", "fixedWindow", "slidingWindow", "slidingWindowLog", "quota"];
const CADENCES: &[&str] = &["calendar-month", "calendar-week", "calendar-day", "fixed", "rolling"];

/// How serde_json names a value it did not expect (`serde::de::Unexpected`, with its `null`
/// and its float format).
fn unexpected(v: &Data) -> String {
    match v {
        Data::Null => "null".to_owned(),
        Data::Bool(b) => format!("boolean `{b}`"),
        Data::Number(Num::PosInt(u)) => format!("integer `{u}`"),
        Data::Number(Num::NegInt(i)) => format!("integer `{i}`"),
        Data::Number(Num::Float(f)) => format!("floating point `{}`", zmij::Buffer::new().format(*f)),
        Data::String(s) => format!("string {s:?}"),
        Data::Array(_) => "sequence".to_owned(),
        Data::Object(_) => "map".to_owned(),
    }
}

pub(crate) fn invalid_type(v: &Data, expected: &str) -> String {
    format!("invalid type: {}, expected {expected}", unexpected(v))
}

fn invalid_length(n: usize, expected: &str) -> String {
    format!("invalid length {n}, expected {expected}")
}

/// serde's `OneOf`: `` `a` ``, `` `a` or `b` ``, `` one of `a`, `b`, `c` ``.
pub(crate) fn one_of(names: &[&str]) -> String {
    // Written out rather than joined: `[String]::join` would be the WebAssembly module's only
    // instance of it.
    let (mut out, separator) = match names.len() {
        1 | 2 => (String::new(), " or "),
        _ => (String::from("one of "), ", "),
    };
    for (i, n) in names.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        out.push('`');
        out.push_str(n);
        out.push('`');
    }
    out
}

/// A value array or object must be read whole: serde_json rejects what a visitor left over.
pub(crate) fn fewer(len: usize, read: usize, what: &str) -> Msg {
    if read < len { Err(invalid_length(len, &format!("fewer elements in {what}"))) } else { Ok(()) }
}

/// An identifier (a variant name) from a string.
fn variant(name: &str, names: &'static [&'static str]) -> std::result::Result<usize, String> {
    names.iter().position(|n| *n == name).ok_or_else(|| format!("unknown variant `{name}`, expected {}", one_of(names)))
}

/// A unit variant as serde_json's `deserialize_enum` reads it: a string, or a map of one key
/// whose value is `null`.
pub(crate) fn unit_enum(v: &Data, names: &'static [&'static str]) -> std::result::Result<usize, String> {
    match v {
        Data::String(s) => variant(s, names),
        Data::Object(m) => {
            let mut entries = m.iter();
            match (entries.next(), entries.next()) {
                (Some((name, value)), None) => {
                    let at = variant(name, names)?;
                    if value.is_null() { Ok(at) } else { Err(invalid_type(value, "unit")) }
                }
                _ => Err("invalid value: map, expected map with a single key".to_owned()),
            }
        }
        other => Err(invalid_type(other, "string or map")),
    }
}

/// The type of one options field.
#[derive(Clone, Copy, PartialEq)]
enum Ty {
    F64,
    OptF64,
    Cadence,
}

/// One field as read.
#[derive(Clone, Copy)]
enum Got {
    F64(f64),
    Cadence(ResetCadence),
}

fn field(v: &Data, ty: Ty) -> std::result::Result<Option<Got>, String> {
    match (ty, v) {
        (Ty::OptF64, Data::Null) => Ok(None),
        (Ty::F64 | Ty::OptF64, Data::Number(n)) => Ok(Some(Got::F64(n.as_f64()))),
        (Ty::F64 | Ty::OptF64, other) => Err(invalid_type(other, "f64")),
        (Ty::Cadence, v) => {
            let at = unit_enum(v, CADENCES)?;
            let cadence = [
                ResetCadence::CalendarMonth,
                ResetCadence::CalendarWeek,
                ResetCadence::CalendarDay,
                ResetCadence::Fixed,
                ResetCadence::Rolling,
            ][at];
            Ok(Some(Got::Cadence(cadence)))
        }
    }
}

/// A `deny_unknown_fields` struct of `fields` (declaration order) named `name`, from a map or
/// from an array of its fields in order (serde's two forms).
fn fields(v: &Data, name: &str, fields: &[(&'static str, Ty)]) -> std::result::Result<Vec<Option<Got>>, String> {
    let mut got = vec![None; fields.len()];
    match v {
        Data::Object(m) => {
            for (key, item) in m {
                let Some(at) = fields.iter().position(|(n, _)| n == key) else {
                    let names: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
                    return Err(format!("unknown field `{key}`, expected {}", one_of(&names)));
                };
                got[at] = field(item, fields[at].1)?;
            }
            // serde names the first missing field in declaration order.
            if let Some(((missing, _), _)) =
                fields.iter().zip(&got).find(|((_, ty), g)| g.is_none() && *ty != Ty::OptF64)
            {
                return Err(format!("missing field `{missing}`"));
            }
        }
        Data::Array(items) => {
            for (at, (_, ty)) in fields.iter().enumerate() {
                match items.get(at) {
                    Some(item) => got[at] = field(item, *ty)?,
                    None if *ty == Ty::OptF64 => {}
                    None => return Err(invalid_length(at, &format!("struct {name} with {} elements", fields.len()))),
                }
            }
            fewer(items.len(), fields.len(), "array")?;
        }
        other => return Err(invalid_type(other, &format!("struct {name}"))),
    }
    Ok(got)
}

fn f64_at(got: &[Option<Got>], at: usize) -> Option<f64> {
    match got.get(at) {
        Some(Some(Got::F64(n))) => Some(*n),
        _ => None,
    }
}

/// The options of kind `kind` (an index into [`KINDS`]).
fn options(kind: usize, v: &Data) -> std::result::Result<StrategySpec, String> {
    use Ty::{Cadence, F64, OptF64};
    let window = |v: &Data| -> std::result::Result<WindowOptions, String> {
        let g = fields(v, "WindowOptions", &[("limit", F64), ("windowMs", F64)])?;
        Ok(WindowOptions { limit: f64_at(&g, 0).unwrap_or_default(), window_ms: f64_at(&g, 1).unwrap_or_default() })
    };
    let req = |g: &[Option<Got>], at| f64_at(g, at).unwrap_or_default();
    Ok(match kind {
        0 => {
            let g = fields(v, "GcraOptions", &[("limit", F64), ("periodMs", F64), ("burst", OptF64)])?;
            StrategySpec::Gcra(GcraOptions { limit: req(&g, 0), period_ms: req(&g, 1), burst: f64_at(&g, 2) })
        }
        1 => {
            let g = fields(v, "TokenBucketOptions", &[("capacity", F64), ("refillPerSec", F64)])?;
            StrategySpec::TokenBucket(TokenBucketOptions { capacity: req(&g, 0), refill_per_sec: req(&g, 1) })
        }
        2 => StrategySpec::FixedWindow(window(v)?),
        3 => {
            let g = fields(v, "SlidingWindowOptions", &[("limit", F64), ("windowMs", F64), ("buckets", OptF64)])?;
            StrategySpec::SlidingWindow(SlidingWindowOptions {
                limit: req(&g, 0),
                window_ms: req(&g, 1),
                buckets: f64_at(&g, 2),
            })
        }
        4 => StrategySpec::SlidingWindowLog(window(v)?),
        _ => {
            let g = fields(
                v,
                "QuotaOptions",
                &[
                    ("limit", F64),
                    ("resetCadence", Cadence),
                    ("periodMs", OptF64),
                    ("anchor", OptF64),
                    ("offsetMinutes", OptF64),
                    ("weekStartsOn", OptF64),
                    ("buckets", OptF64),
                ],
            )?;
            let reset_cadence = match g.get(1) {
                Some(Some(Got::Cadence(c))) => *c,
                _ => ResetCadence::Fixed,
            };
            StrategySpec::Quota(QuotaOptions {
                limit: req(&g, 0),
                reset_cadence,
                period_ms: f64_at(&g, 2),
                anchor: f64_at(&g, 3),
                offset_minutes: f64_at(&g, 4),
                week_starts_on: f64_at(&g, 5),
                buckets: f64_at(&g, 6),
            })
        }
    })
}

const SPEC: &str = "adjacently tagged enum StrategySpec";

/// The spec as `serde_json::from_value` reads it, with its message on failure.
fn read(v: &Data) -> std::result::Result<StrategySpec, String> {
    match v {
        Data::Object(m) => {
            // Sorted keys: an unknown key before `kind` fails first, then `kind`, then `options`.
            // (`options` before `kind` means no `kind`: serde buffers it, then finds no tag.)
            let mut kind = None;
            let mut spec = None;
            for (key, item) in m {
                match (key.as_str(), kind) {
                    ("kind", _) => kind = Some(unit_enum(item, KINDS)?),
                    ("options", Some(k)) => spec = Some(options(k, item)?),
                    ("options", None) => {}
                    _ => return Err(format!("invalid value: string {key:?}, expected \"kind\" or \"options\"")),
                }
            }
            match (kind, spec) {
                (Some(_), Some(spec)) => Ok(spec),
                (Some(_), None) => Err("missing field `options`".to_owned()),
                (None, _) => Err("missing field `kind`".to_owned()),
            }
        }
        Data::Array(items) => {
            let kind = match items.first() {
                Some(Data::String(s)) => variant(s, KINDS)?,
                Some(other) => return Err(invalid_type(other, "variant identifier")),
                None => return Err(invalid_length(0, SPEC)),
            };
            let spec = match items.get(1) {
                Some(o) => options(kind, o)?,
                None => return Err(invalid_length(1, SPEC)),
            };
            fewer(items.len(), 2, "array")?;
            Ok(spec)
        }
        other => Err(invalid_type(other, SPEC)),
    }
}

/// One option as a spec holds it: a number, or a name (a quota's `resetCadence`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptionValue {
    /// A numeric option.
    Number(f64),
    /// A named one.
    Name(&'static str),
}

impl StrategySpec {
    /// Parses a spec from JSON data, exactly as `serde_json::from_value` would (the same
    /// accepted forms, the same `is not a valid spec: ...` messages), without serde's
    /// deserializers. Malformed specs are `config_invalid`; ranges are [`StrategySpec::build`]'s.
    pub fn from_value(v: &Data) -> Result<StrategySpec> {
        read(v).map_err(|e| Error::config("strategy", &format!("is not a valid spec: {e}")))
    }

    /// The options as serde writes them, in declaration order, unset optional ones left out:
    /// what a binding builds its `toSpec` object from without serde's serializer.
    pub fn option_list(&self) -> Vec<(&'static str, OptionValue)> {
        use OptionValue::{Name, Number as N};
        let all: Vec<(&'static str, Option<OptionValue>)> = match self {
            StrategySpec::Gcra(g) => {
                vec![("limit", Some(N(g.limit))), ("periodMs", Some(N(g.period_ms))), ("burst", g.burst.map(N))]
            }
            StrategySpec::TokenBucket(t) => {
                vec![("capacity", Some(N(t.capacity))), ("refillPerSec", Some(N(t.refill_per_sec)))]
            }
            StrategySpec::FixedWindow(w) | StrategySpec::SlidingWindowLog(w) => {
                vec![("limit", Some(N(w.limit))), ("windowMs", Some(N(w.window_ms)))]
            }
            StrategySpec::SlidingWindow(s) => {
                vec![("limit", Some(N(s.limit))), ("windowMs", Some(N(s.window_ms))), ("buckets", s.buckets.map(N))]
            }
            StrategySpec::Quota(q) => vec![
                ("limit", Some(N(q.limit))),
                ("resetCadence", Some(Name(CADENCES[q.reset_cadence as usize]))),
                ("periodMs", q.period_ms.map(N)),
                ("anchor", q.anchor.map(N)),
                ("offsetMinutes", q.offset_minutes.map(N)),
                ("weekStartsOn", q.week_starts_on.map(N)),
                ("buckets", q.buckets.map(N)),
            ],
        };
        all.into_iter().filter_map(|(name, v)| Some((name, v?))).collect()
    }

    /// The spec as JSON data, equal to `serde_json::to_value`'s.
    pub fn to_value(&self) -> Value {
        let options = self.option_list().into_iter().map(|(name, v)| {
            let v = match v {
                OptionValue::Number(n) => Number::from_f64(n).map_or(Value::Null, Value::Number),
                OptionValue::Name(s) => Value::String(s.to_owned()),
            };
            (name.to_owned(), v)
        });
        let mut spec = Map::new();
        spec.insert("kind".to_owned(), Value::String(self.kind().to_owned()));
        spec.insert("options".to_owned(), Value::Object(options.collect()));
        Value::Object(spec)
    }
}
