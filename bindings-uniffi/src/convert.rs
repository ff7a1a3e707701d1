//! Argument conversions: Kotlin and Ruby pass integers as `i64` (a `Long`, which Java can call;
//! an unsigned type would be mangled out of Java's reach), core takes `u64` costs and `f64`
//! options. Conversions refuse what would change the value, with core's `config_invalid`.

use throttlekit::validate::MAX_SAFE_INTEGER;

use crate::error::{Result, ThrottleKitError};

/// A cost as core's `u64`; zero and negatives are refused by core's own rule.
pub fn cost(v: i64) -> Result<u64> {
    let c = u64::try_from(v).map_err(|_| ThrottleKitError::config("cost", "must be a positive integer"))?;
    Ok(throttlekit::validate::cost(c)?)
}

/// A validated `u64` cost back as `i64` (it is at most 2^53, so it always fits).
pub fn cost_to_i64(v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| ThrottleKitError::config("cost", "must be <= 2^53"))
}

/// An integer option as the `f64` core's spec holds. Beyond ±2^53 a double would round, and
/// the rounded value could pass validation, so those are refused here.
pub fn int_option(v: i64, field: &str) -> Result<f64> {
    if v.unsigned_abs() > MAX_SAFE_INTEGER as u64 {
        return Err(ThrottleKitError::config(field, "must be <= 2^53"));
    }
    Ok(v as f64)
}

/// An optional integer option.
pub fn opt_int_option(v: Option<i64>, field: &str) -> Result<Option<f64>> {
    v.map(|v| int_option(v, field)).transpose()
}

/// A list of keys as the borrowed slice core takes.
pub fn refs(keys: &[String]) -> Vec<&str> {
    keys.iter().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_outside_1_to_2_pow_53_are_config_invalid() {
        for bad in [0, -1, i64::MIN, (1 << 53) + 1, i64::MAX] {
            assert_eq!(cost(bad).unwrap_err().code(), "config_invalid", "{bad}");
        }
        assert_eq!(cost(1).unwrap(), 1);
        assert_eq!(cost(1 << 53).unwrap(), 1 << 53);
    }

    #[test]
    fn integer_options_never_round() {
        assert_eq!(int_option((1 << 53) + 1, "limit").unwrap_err().code(), "config_invalid");
        assert_eq!(int_option(-(1 << 53) - 1, "anchor").unwrap_err().code(), "config_invalid");
        assert_eq!(int_option(1 << 53, "limit").unwrap(), MAX_SAFE_INTEGER);
    }
}
