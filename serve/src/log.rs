//! Structured logs: one JSON object per line on stderr (`ts`, `level`, `msg`, fields), which
//! log shippers parse without a grammar.

use serde_json::{Map, Value};

/// Writes one log line.
pub fn log(level: &str, msg: &str, fields: &[(&str, Value)]) {
    let mut m = Map::new();
    let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    m.insert("ts".into(), Value::from(ts as u64));
    m.insert("level".into(), Value::from(level));
    m.insert("msg".into(), Value::from(msg));
    for (k, v) in fields {
        m.insert((*k).into(), v.clone());
    }
    eprintln!("{}", Value::Object(m));
}

/// An info line.
pub fn info(msg: &str, fields: &[(&str, Value)]) {
    log("info", msg, fields);
}

/// A warning line.
pub fn warn(msg: &str, fields: &[(&str, Value)]) {
    log("warn", msg, fields);
}

/// An error line.
pub fn error(msg: &str, fields: &[(&str, Value)]) {
    log("error", msg, fields);
}
