//! [`AdaptiveConfig`]: every knob of the adaptive limiter, as plain data.
//!
//! Bindings pass it as JSON (camelCase, unknown fields rejected) or build it field by field; it is
//! validated once, in [`AdaptiveConfig::validate`], and every problem is `config_invalid` naming
//! the field. An option that is absent takes the algorithm's documented default.

use serde::{Deserialize, Serialize};

use super::algorithm::Algorithm;
use crate::error::{Error, Result};

/// The four update rules (`docs/adaptive.md` has each rule).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlgorithmKind {
    /// A constant limit: the control, and a plain concurrency cap.
    Fixed,
    /// Additive increase, multiplicative decrease on a latency or drop signal.
    Aimd,
    /// A queue estimate from the no-load round trip, kept between `alpha` and `beta`.
    Vegas,
    /// The limit scaled by the ratio of the no-load round trip to the current one.
    #[default]
    Gradient2,
}

impl AlgorithmKind {
    /// The stable name (`"gradient2"`).
    pub fn as_str(self) -> &'static str {
        match self {
            AlgorithmKind::Fixed => "fixed",
            AlgorithmKind::Aimd => "aimd",
            AlgorithmKind::Vegas => "vegas",
            AlgorithmKind::Gradient2 => "gradient2",
        }
    }

    /// Parses the stable name (bindings that take it as a string); anything else is
    /// `config_invalid` for `algorithm`.
    pub fn parse(name: &str) -> Result<AlgorithmKind> {
        [AlgorithmKind::Fixed, AlgorithmKind::Aimd, AlgorithmKind::Vegas, AlgorithmKind::Gradient2]
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| Error::config("algorithm", "must be fixed, aimd, vegas or gradient2"))
    }
}

/// The order in which `acquire` waiters get a freed permit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueOrder {
    /// Oldest waiter first: fair.
    #[default]
    Fifo,
    /// Newest waiter first: under sustained overload the freshest requests (whose callers are
    /// still waiting) are served and old ones time out.
    Lifo,
}

impl QueueOrder {
    /// Parses `"fifo"` or `"lifo"`; anything else is `config_invalid` for `order`.
    pub fn parse(name: &str) -> Result<QueueOrder> {
        match name {
            "fifo" => Ok(QueueOrder::Fifo),
            "lifo" => Ok(QueueOrder::Lifo),
            _ => Err(Error::config("order", "must be fifo or lifo")),
        }
    }
}

/// One partition's guaranteed share of the limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PartitionConfig {
    /// The name `try_acquire` is given.
    pub name: String,
    /// The share of the limit this partition keeps when the limit is full, in percent.
    pub percent: f64,
}

/// The adaptive limiter's configuration. `Default` is gradient2 with every default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AdaptiveConfig {
    /// The update rule (default `gradient2`).
    pub algorithm: AlgorithmKind,
    /// The limit before any sample (default 20; for `fixed`, the limit).
    pub initial_limit: Option<i64>,
    /// The lowest the limit goes (default 1).
    pub min_limit: Option<i64>,
    /// The highest the limit goes (default 1000).
    pub max_limit: Option<i64>,
    /// The window's latency percentile, in (0, 1] (default 0.9).
    pub percentile: Option<f64>,
    /// Round trips shorter than this (in microseconds) are ignored (default 100): a cache hit or
    /// an immediate failure says nothing about the service's queue.
    pub min_rtt_us: Option<i64>,
    /// A window closes after this many samples, or after `limit` samples if more (default 50).
    pub window_min_samples: Option<i64>,
    /// The limit never exceeds this multiple of the window's in-flight peak (default 2), so idle
    /// time cannot inflate it.
    pub peak_multiple: Option<f64>,
    /// Double the limit each uncongested window until the first congestion signal (default true
    /// for the adaptive algorithms).
    pub slow_start: Option<bool>,
    /// The order `acquire` waiters are served in (default FIFO).
    pub order: QueueOrder,
    /// Guaranteed shares of the limit, enforced only when the limit is full (default none).
    pub partitions: Vec<PartitionConfig>,
    /// aimd: the congestion threshold as a multiple of the no-load round trip (default 2);
    /// gradient2: the latency the gradient tolerates, as a multiple (default 1.5).
    pub tolerance: Option<f64>,
    /// aimd: the factor a congested window multiplies the limit by, in (0, 1) (default 0.9).
    pub backoff: Option<f64>,
    /// vegas: the queue below which the limit grows, times log10(limit) (default 3).
    pub alpha: Option<f64>,
    /// vegas: the queue above which the limit shrinks, times log10(limit) (default 6).
    pub beta: Option<f64>,
    /// gradient2: how far each window moves the limit toward its new estimate, in (0, 1]
    /// (default 0.5).
    pub smoothing: Option<f64>,
}

/// A validated configuration with every default filled in.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Resolved {
    pub algorithm: Algorithm,
    pub initial_limit: f64,
    pub min_limit: f64,
    pub max_limit: f64,
    pub percentile: f64,
    pub min_rtt_ns: u64,
    pub window_min_samples: usize,
    pub peak_multiple: f64,
    pub slow_start: bool,
    pub order: QueueOrder,
    pub partitions: Vec<PartitionConfig>,
}

fn positive(field: &str, v: i64) -> Result<f64> {
    if v < 1 {
        return Err(Error::config(field, "must be at least 1"));
    }
    Ok(v as f64)
}

pub(crate) fn check_range(field: &str, v: f64, lo_exclusive: f64, hi_inclusive: f64) -> Result<f64> {
    if !(v.is_finite() && v > lo_exclusive && v <= hi_inclusive) {
        return Err(Error::config(field, &format!("must be in ({lo_exclusive}, {hi_inclusive}]")));
    }
    Ok(v)
}

/// A `config_invalid` from this configuration with its field names as Python's and Ruby's
/// keyword arguments spell them (`initialLimit` → `initial_limit`, `minRttUs` → `min_rtt_us`):
/// an error names the field the way the caller wrote it. Other errors pass unchanged.
pub fn snake_case_fields(e: Error) -> Error {
    if e.code() != crate::ErrorCode::ConfigInvalid {
        return e;
    }
    let mut out = String::with_capacity(e.message().len() + 8);
    let mut prev = ' ';
    for c in e.message().chars() {
        if c.is_ascii_uppercase() && (prev.is_ascii_lowercase() || prev.is_ascii_digit()) {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
        prev = c;
    }
    Error::new(crate::ErrorCode::ConfigInvalid, out)
}

impl AdaptiveConfig {
    /// A configuration for `algorithm` with every default.
    pub fn new(algorithm: AlgorithmKind) -> AdaptiveConfig {
        AdaptiveConfig { algorithm, ..AdaptiveConfig::default() }
    }

    /// Parses the JSON form strictly; any problem is `config_invalid`.
    pub fn from_json(text: &str) -> Result<AdaptiveConfig> {
        serde_json::from_str(text).map_err(|e| Error::config("adaptive", &format!("config is not valid: {e}")))
    }

    /// Checks every field and fills in the defaults.
    pub(crate) fn validate(&self) -> Result<Resolved> {
        let initial_limit = positive("initialLimit", self.initial_limit.unwrap_or(20))?;
        let min_limit = positive("minLimit", self.min_limit.unwrap_or(1))?;
        let max_limit = positive("maxLimit", self.max_limit.unwrap_or(1000))?;
        if max_limit > u32::MAX as f64 {
            return Err(Error::config("maxLimit", "must be at most 4294967295"));
        }
        if min_limit > max_limit {
            return Err(Error::config("minLimit", "must not exceed maxLimit"));
        }
        if initial_limit < min_limit || initial_limit > max_limit {
            return Err(Error::config("initialLimit", "must be between minLimit and maxLimit"));
        }
        let percentile = check_range("percentile", self.percentile.unwrap_or(0.9), 0.0, 1.0)?;
        let min_rtt_us = self.min_rtt_us.unwrap_or(100);
        if min_rtt_us < 0 {
            return Err(Error::config("minRttUs", "must not be negative"));
        }
        let window_min_samples = positive("windowMinSamples", self.window_min_samples.unwrap_or(50))? as usize;
        let peak_multiple = self.peak_multiple.unwrap_or(2.0);
        if !(peak_multiple.is_finite() && peak_multiple >= 1.0) {
            return Err(Error::config("peakMultiple", "must be at least 1"));
        }
        let mut total = 0.0;
        for (i, p) in self.partitions.iter().enumerate() {
            if p.name.is_empty() {
                return Err(Error::config(&format!("partitions[{i}].name"), "must not be empty"));
            }
            if self.partitions[..i].iter().any(|q| q.name == p.name) {
                return Err(Error::config(&format!("partitions[{i}].name"), "is a duplicate"));
            }
            check_range(&format!("partitions[{i}].percent"), p.percent, 0.0, 100.0)?;
            total += p.percent;
        }
        if total > 100.0 + 1e-9 {
            return Err(Error::config("partitions", "percentages must sum to at most 100"));
        }
        if self.partitions.len() > u16::MAX as usize {
            return Err(Error::config("partitions", "must be at most 65535"));
        }
        Ok(Resolved {
            algorithm: Algorithm::resolve(self)?,
            initial_limit,
            min_limit,
            max_limit,
            percentile,
            min_rtt_ns: (min_rtt_us as u64).saturating_mul(1000),
            window_min_samples,
            peak_multiple,
            slow_start: self.slow_start.unwrap_or(self.algorithm != AlgorithmKind::Fixed),
            order: self.order,
            partitions: self.partitions.clone(),
        })
    }
}

/// Validates an option that only `allowed` algorithms take: another algorithm naming it is a
/// mistake worth reporting, not a silently ignored field.
pub(crate) fn option_for(
    config: &AdaptiveConfig,
    field: &str,
    value: Option<f64>,
    allowed: &[AlgorithmKind],
) -> Result<Option<f64>> {
    match value {
        Some(_) if !allowed.contains(&config.algorithm) => {
            Err(Error::config(field, &format!("does not apply to {}", config.algorithm.as_str())))
        }
        other => Ok(other),
    }
}

#[cfg(test)]
mod snake_case_tests {
    use super::*;

    #[test]
    fn field_names_become_snake_case_and_prose_stays() {
        let e = snake_case_fields(Error::config("initialLimit", "must be between minLimit and maxLimit"));
        assert_eq!(e.message(), "initial_limit must be between min_limit and max_limit");
        assert_eq!(
            snake_case_fields(Error::config("minRttUs", "must not be negative")).message(),
            "min_rtt_us must not be negative"
        );
        let e = snake_case_fields(Error::config("partitions[0].percent", "must be in (0, 100]"));
        assert_eq!(e.message(), "partitions[0].percent must be in (0, 100]");
        let other = Error::new(crate::ErrorCode::NotImplemented, "noCase");
        assert_eq!(snake_case_fields(other).message(), "noCase");
    }
}
