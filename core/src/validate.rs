//! Argument checks shared by every constructor, so that `config_invalid` says the same thing
//! for the same mistake in every language.

use crate::error::{Error, Result};

/// Largest integer every path (Rust, Lua, JavaScript, Python floats) represents exactly: 2^53.
pub const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_992.0;

/// A finite number `> 0`.
pub fn positive(field: &str, v: f64) -> Result<f64> {
    if !v.is_finite() {
        return Err(Error::config(field, "must be a finite number"));
    }
    if v <= 0.0 {
        return Err(Error::config(field, "must be > 0"));
    }
    if v > MAX_SAFE_INTEGER {
        return Err(Error::config(field, "must be <= 2^53"));
    }
    Ok(v)
}

/// A finite number `>= 0`.
pub fn non_negative(field: &str, v: f64) -> Result<f64> {
    if !v.is_finite() {
        return Err(Error::config(field, "must be a finite number"));
    }
    if v < 0.0 {
        return Err(Error::config(field, "must be >= 0"));
    }
    if v > MAX_SAFE_INTEGER {
        return Err(Error::config(field, "must be <= 2^53"));
    }
    Ok(v)
}

/// A whole number in `[min, 2^53]` (`min` a whole number).
pub fn integer_at_least(field: &str, v: f64, min: f64) -> Result<f64> {
    if !v.is_finite() {
        return Err(Error::config(field, "must be a finite number"));
    }
    if v.fract() != 0.0 {
        return Err(Error::config(field, "must be an integer"));
    }
    if v < min {
        return Err(Error::config(field, &format!("must be >= {}", whole(min))));
    }
    if v > MAX_SAFE_INTEGER {
        return Err(Error::config(field, "must be <= 2^53"));
    }
    Ok(v)
}

/// A whole-number bound as a message prints it: as an integer, the digits `f64`'s `Display`
/// prints for it, without the float formatter (which the WebAssembly module would carry for
/// these messages alone).
fn whole(bound: f64) -> i64 {
    bound as i64
}

/// A whole number in `[min, max]` (both within ±2^53).
pub fn integer_in(field: &str, v: f64, min: f64, max: f64) -> Result<f64> {
    if !v.is_finite() || v.fract() != 0.0 {
        return Err(Error::config(field, "must be an integer"));
    }
    if v < min || v > max {
        return Err(Error::config(field, &format!("must be between {} and {}", whole(min), whole(max))));
    }
    Ok(v)
}

/// The cost of one request: a positive integer up to 2^53.
pub fn cost(v: u64) -> Result<u64> {
    if v == 0 {
        return Err(Error::config("cost", "must be a positive integer"));
    }
    // Compared as integers: `v as f64` rounds 2^53 + 1 down to 2^53, which would let it pass.
    if v > MAX_SAFE_INTEGER as u64 {
        return Err(Error::config("cost", "must be <= 2^53"));
    }
    Ok(v)
}

/// A cost that arrived as a float (JavaScript numbers, JSON, Python floats): it must be a
/// positive whole number. Bindings call this rather than casting, so `1.5` or `NaN` is refused.
pub fn cost_from_f64(v: f64) -> Result<u64> {
    if !v.is_finite() || v.fract() != 0.0 || v <= 0.0 {
        return Err(Error::config("cost", "must be a positive integer"));
    }
    if v > MAX_SAFE_INTEGER {
        return Err(Error::config("cost", "must be <= 2^53"));
    }
    Ok(v as u64)
}

/// `now` clamped to ±2^53, the domain of [`now`], for the paths that take a time with no way to
/// refuse it: the raw transition (`Strategy::check`, `peek`) and an in-process store's
/// `apply_sync` called directly (`store::Now::in_process_ms`). The limiters refuse such a `now`
/// before either; a direct caller may not, and past the domain the arithmetic would overflow
/// (a panic in a debug build). Within it this changes nothing. Checked by
/// `core/tests/raw_transition.rs`.
#[inline]
pub(crate) fn in_domain(now: i64) -> i64 {
    const BOUND: i64 = MAX_SAFE_INTEGER as i64;
    now.clamp(-BOUND, BOUND)
}

/// An epoch-millisecond timestamp that arrived as a float: a whole number within ±2^53.
pub fn now_from_f64(v: f64) -> Result<i64> {
    if !v.is_finite() || v.fract() != 0.0 || v.abs() > MAX_SAFE_INTEGER {
        return Err(Error::config("now", "must be an integer number of epoch milliseconds"));
    }
    Ok(v as i64)
}

/// An epoch-millisecond timestamp given as an integer (the `*_at` calls): within ±2^53, the
/// domain in which every algorithm's arithmetic is exact and cannot overflow, and which Lua's
/// doubles hold exactly. Found by the decision-invariant property tests: `i64::MIN` overflowed
/// the fixed window's period start and the log's reset time.
#[inline]
pub fn now(v: i64) -> Result<i64> {
    if v.unsigned_abs() > MAX_SAFE_INTEGER as u64 {
        return Err(Error::config("now", "must be within ±2^53 epoch milliseconds"));
    }
    Ok(v)
}

/// [`now`] for a call's time: the caller's clock is checked, the server's clock is Redis's.
#[inline]
pub fn now_at(v: crate::store::Now) -> Result<crate::store::Now> {
    if let crate::store::Now::At(t) = v {
        now(t)?;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn costs_must_be_positive_whole_numbers() {
        for bad in [0.0, -1.0, 1.5, f64::NAN, f64::INFINITY, 1e300] {
            let e = cost_from_f64(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{bad}");
            assert!(e.message().contains("cost"));
        }
        assert_eq!(cost_from_f64(3.0).unwrap(), 3);
        assert!(cost(0).is_err());
    }
}
