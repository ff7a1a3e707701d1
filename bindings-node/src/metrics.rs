//! The counters of a limiter, a multi limiter or a shaper (core's `LimiterMetrics`) as the
//! object JavaScript reads: one shape for all three, built in one place.

use std::collections::HashMap;
use std::sync::Arc;

use napi_derive::napi;

/// Counters, all cumulative since the limiter (multi limiter, shaper) was made: decisions
/// allowed and denied by the store (a shaper's reservations accepted and rejected), fail-policy
/// fallbacks, peeks and forecasts answered, errors by code, and the latency of calls to a store
/// outside the process. Feed them to OpenTelemetry observable counters and a histogram.
#[napi(object)]
pub struct LimiterMetrics {
    pub allowed: f64,
    pub denied: f64,
    pub fallback_allowed: f64,
    pub fallback_denied: f64,
    /// Peeks answered (a failed one counts in `errors`), apart from the checks.
    pub peeks: f64,
    /// Forecasts answered (a failed one counts in `errors`), apart from the checks.
    pub forecasts: f64,
    /// Failed calls by error code (`config_invalid`, `store_unavailable`, ...).
    pub errors: HashMap<String, f64>,
    pub store_latency: LatencyHistogram,
}

/// An explicit-bucket histogram: `counts[i]` calls took at most `boundsUs[i]` µs (and more than
/// the bound before); the last count is the rest.
#[napi(object)]
pub struct LatencyHistogram {
    pub bounds_us: Vec<f64>,
    pub counts: Vec<f64>,
    pub count: f64,
    pub sum_us: f64,
}

/// The counters now, or `None` when they were not asked for.
pub fn of(metrics: Option<&Arc<throttlekit::metrics::LimiterMetrics>>) -> Option<LimiterMetrics> {
    let s = metrics?.snapshot();
    Some(LimiterMetrics {
        allowed: s.allowed as f64,
        denied: s.denied as f64,
        fallback_allowed: s.fallback_allowed as f64,
        fallback_denied: s.fallback_denied as f64,
        peeks: s.peeks as f64,
        forecasts: s.forecasts as f64,
        errors: s.errors.iter().map(|(c, n)| (c.as_str().to_owned(), *n as f64)).collect(),
        store_latency: LatencyHistogram {
            bounds_us: throttlekit::metrics::LATENCY_BOUNDS_US.iter().map(|&b| b as f64).collect(),
            count: s.latency_count() as f64,
            counts: s.latency_counts.iter().map(|&n| n as f64).collect(),
            sum_us: s.latency_sum_us as f64,
        },
    })
}
