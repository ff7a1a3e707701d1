//! [`Data`]: plain JSON data for the hand-written readers of specs and options
//! (`StrategySpec::from_value`, `ClientKeyOptions::from_value`), which the WebAssembly build
//! fills from JavaScript values. It holds what `serde_json::Value` holds, as those readers see
//! it (an object's keys sorted, each once, as serde_json's map keeps them; a number as serde's
//! positive integer, negative integer or float), without serde_json's `BTreeMap` and its code
//! in the module. [`Data::from`] a `serde_json::Value` is how the tests hold the readers to
//! serde's.

/// A JSON number as serde_json keeps it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    /// An integer `>= 0`.
    PosInt(u64),
    /// An integer `< 0`.
    NegInt(i64),
    /// Any other number (finite).
    Float(f64),
}

impl Num {
    /// The number as a `u64`, when it is a non-negative integer (serde_json's `as_u64`).
    pub fn as_u64(self) -> Option<u64> {
        match self {
            Num::PosInt(u) => Some(u),
            _ => None,
        }
    }

    /// The number as an `i64`, when it is an integer that fits (serde_json's `as_i64`).
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Num::PosInt(u) => i64::try_from(u).ok(),
            Num::NegInt(i) => Some(i),
            Num::Float(_) => None,
        }
    }

    /// The number as an `f64` (serde_json's `as_f64`).
    pub fn as_f64(self) -> f64 {
        match self {
            Num::PosInt(u) => u as f64,
            Num::NegInt(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// JSON data: what a spec or an options object is read from.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(Num),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Data>),
    /// An object: its members sorted by key, each key once (build it with [`Data::object`]).
    Object(Vec<(String, Data)>),
}

impl Data {
    /// An object of `members`: sorted by key, a repeated key keeping its last value (as
    /// serde_json's map does on insert).
    pub fn object(mut members: Vec<(String, Data)>) -> Data {
        members.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(String, Data)> = Vec::with_capacity(members.len());
        for (key, value) in members {
            match out.last_mut() {
                Some(last) if last.0 == key => last.1 = value,
                _ => out.push((key, value)),
            }
        }
        Data::Object(out)
    }

    /// `true` for `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Data::Null)
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Data::String(s) => Some(s),
            _ => None,
        }
    }
}

impl From<&serde_json::Value> for Data {
    fn from(v: &serde_json::Value) -> Data {
        use serde_json::Value;
        match v {
            Value::Null => Data::Null,
            Value::Bool(b) => Data::Bool(*b),
            Value::Number(n) => Data::Number(match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Num::PosInt(u),
                (None, Some(i)) => Num::NegInt(i),
                _ => Num::Float(n.as_f64().unwrap_or_default()),
            }),
            Value::String(s) => Data::String(s.clone()),
            Value::Array(items) => Data::Array(items.iter().map(Data::from).collect()),
            Value::Object(m) => Data::object(m.iter().map(|(k, v)| (k.clone(), Data::from(v))).collect()),
        }
    }
}
