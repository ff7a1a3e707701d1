//! The two-tier modes (core's `Mode`, docs/leasing.md): `LimiterOptions.mode` / `.lease` and
//! the `TierStats` record. Parsing and validation are core's (`LeaseOptions::from_fields`,
//! `Mode::parse`, the builder's check), so a bad value is core's `config_invalid` naming the
//! field.

use crate::convert::opt_int_option;
use crate::error::Result;

/// The leased mode's options (`max_keys` also serves `cached_deny`); a `nil` field takes core's
/// default.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct LeaseOptions {
    /// Units per lease, the asking request's included: 1..=2^53 (`nil`: 100).
    #[uniffi(default = None)]
    pub batch: Option<i64>,
    /// A spend that leaves this many credits or fewer also tops them up; below `batch`
    /// (`nil`: 0, only when they run out).
    #[uniffi(default = None)]
    pub low_water: Option<i64>,
    /// Credits expire at the fixed window's (or quota period's) reset: exactly `limit` per
    /// window. Fixed window and fixed/calendar quotas only (`nil`: false).
    #[uniffi(default = None)]
    pub window_coupled: Option<bool>,
    /// Keys the tier remembers, credits or a cached denial (`nil`: 10000).
    #[uniffi(default = None)]
    pub max_keys: Option<i64>,
}

/// Core's mode for `mode` (`nil`: `leased` when `lease` is given, else `strict`) and `lease`.
pub(crate) fn mode(mode: Option<&str>, lease: Option<&LeaseOptions>) -> Result<throttlekit::Mode> {
    let name = mode.unwrap_or(if lease.is_some() { "leased" } else { "strict" });
    let options = match lease {
        None => throttlekit::LeaseOptions::default(),
        Some(l) => throttlekit::LeaseOptions::from_fields(
            opt_int_option(l.batch, "lease.batch")?,
            opt_int_option(l.low_water, "lease.lowWater")?,
            l.window_coupled,
            opt_int_option(l.max_keys, "lease.maxKeys")?,
        )?,
    };
    Ok(throttlekit::Mode::parse(name, options)?)
}

/// A limiter's local tier counters, cumulative since it was made (all 0 in strict mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Record)]
pub struct TierStats {
    /// Requests admitted from local credits (no store call).
    pub local_admits: u64,
    /// Requests denied from a cached denial (no store call).
    pub local_denials: u64,
    /// Leases sent to the store (one store call each).
    pub leases: u64,
    /// Credits dropped because their grant arrived after its expiry.
    pub late_credits_dropped: u64,
    /// Credits given back to the store.
    pub credits_returned: u64,
}

impl From<throttlekit::lease::TierStats> for TierStats {
    fn from(s: throttlekit::lease::TierStats) -> Self {
        TierStats {
            local_admits: s.local_admits,
            local_denials: s.local_denials,
            leases: s.leases,
            late_credits_dropped: s.late_credits_dropped,
            credits_returned: s.credits_returned,
        }
    }
}

/// `idle_ms` of `release_leases` (`nil`: every key).
pub(crate) fn idle(idle_ms: Option<i64>) -> Result<Option<i64>> {
    let max = throttlekit::validate::MAX_SAFE_INTEGER;
    Ok(idle_ms
        .map(|v| throttlekit::validate::integer_in("idle_ms", v as f64, 0.0, max).map(|v| v as i64))
        .transpose()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(batch: Option<i64>, low_water: Option<i64>, max_keys: Option<i64>) -> LeaseOptions {
        LeaseOptions { batch, low_water, window_coupled: None, max_keys }
    }

    #[test]
    fn bad_modes_and_options_are_config_invalid() {
        for (m, l) in [
            (Some("ring"), None),
            (None, Some(lease(Some(0), None, None))),
            (None, Some(lease(Some(-1), None, None))),
            (None, Some(lease(Some((1 << 53) + 1), None, None))),
            (None, Some(lease(None, Some(-1), None))),
            (None, Some(lease(None, None, Some(0)))),
        ] {
            assert_eq!(mode(m, l.as_ref()).unwrap_err().code(), "config_invalid", "{m:?} {l:?}");
        }
        assert_eq!(idle(Some(-1)).unwrap_err().code(), "config_invalid");
    }

    #[test]
    fn nil_takes_cores_defaults() {
        assert_eq!(mode(None, None).unwrap(), throttlekit::Mode::Strict);
        let d = throttlekit::LeaseOptions::default();
        assert_eq!(mode(None, Some(&lease(None, None, None))).unwrap(), throttlekit::Mode::Leased(d));
        assert_eq!(
            mode(Some("cached_deny"), Some(&lease(None, None, Some(5)))).unwrap(),
            throttlekit::Mode::CachedDeny { max_keys: 5 }
        );
        assert_eq!(idle(None).unwrap(), None);
    }
}
