//! [`tk_metrics`]: a copy of the counters of a limiter, a multi limiter or a shaper (core's
//! `metrics::MetricsSnapshot`), one struct and one filling function for all three.

use std::sync::Arc;

use throttlekit::ErrorCode;
use throttlekit::metrics::{LATENCY_BOUNDS_US, LimiterMetrics};

use crate::args::get;
use crate::limiter::tk_limiter;
use crate::multi::tk_multi_limiter;
use crate::result::tk_result;
use crate::shaper::tk_shaper;

/// The counters of a limiter (a multi limiter: its combined decisions; a shaper: reservations
/// accepted as allowed, rejected as denied), all cumulative since it was made (for
/// OpenTelemetry observable counters and an explicit-bucket histogram). Caller-owned; filled by
/// `tk_limiter_metrics`, `tk_multi_limiter_metrics` and `tk_shaper_metrics`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tk_metrics {
    /// Whether it keeps metrics (the `metrics` field of its config); all zeros when not.
    pub enabled: bool,
    /// Checks the store allowed.
    pub allowed: u64,
    /// Checks the store denied.
    pub denied: u64,
    /// Checks the fail policy allowed because the store was unavailable.
    pub fallback_allowed: u64,
    /// Checks the fail policy denied because the store was unavailable.
    pub fallback_denied: u64,
    /// Failed checks by error code: `errors[TK_RESULT_CONFIG_INVALID]` and so on (index 0 and
    /// codes not yet defined stay 0).
    pub errors: [u64; 8],
    /// Upper bounds (inclusive, µs) of the latency buckets of calls to a store outside the
    /// process; the last of `latency_counts` counts the calls above the last bound.
    pub latency_bounds_us: [u64; 14],
    /// Calls per latency bucket.
    pub latency_counts: [u64; 15],
    /// Calls timed.
    pub latency_count: u64,
    /// Sum of their latencies, µs.
    pub latency_sum_us: u64,
    /// Peeks answered (a failed one counts in `errors`), apart from the checks.
    pub peeks: u64,
    /// Forecasts answered (a failed one counts in `errors`), apart from the checks.
    pub forecasts: u64,
}

const _: () = assert!(LATENCY_BOUNDS_US.len() == 14 && ErrorCode::ALL.len() < 8);

/// The counters of `metrics` (zeros and `enabled == false` for `None`).
fn snapshot(metrics: Option<&Arc<LimiterMetrics>>) -> tk_metrics {
    let mut m = tk_metrics::default();
    if let Some(metrics) = metrics {
        let s = metrics.snapshot();
        m.enabled = true;
        m.allowed = s.allowed;
        m.denied = s.denied;
        m.fallback_allowed = s.fallback_allowed;
        m.fallback_denied = s.fallback_denied;
        m.peeks = s.peeks;
        m.forecasts = s.forecasts;
        for (code, n) in &s.errors {
            m.errors[*code as usize] = *n;
        }
        m.latency_bounds_us = LATENCY_BOUNDS_US;
        m.latency_counts.copy_from_slice(&s.latency_counts);
        m.latency_count = s.latency_count();
        m.latency_sum_us = s.latency_sum_us;
    }
    m
}

/// Copies `limiter`'s counters into `out_metrics` (`enabled == false` and zeros when it was made
/// without `metrics`).
///
/// # Safety
/// `limiter` must be a live handle; `out_metrics` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_metrics(limiter: *const tk_limiter, out_metrics: *mut tk_metrics) -> tk_result {
    unsafe { get(limiter, "limiter", out_metrics, "out_metrics", |l| snapshot(l.inner.metrics())) }
}

/// Copies `multi`'s counters (each check's combined decision) into `out_metrics` (`enabled ==
/// false` and zeros when it was made without `tk_multi_limiter_config.metrics`).
///
/// # Safety
/// `multi` must be a live handle; `out_metrics` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_multi_limiter_metrics(
    multi: *const tk_multi_limiter,
    out_metrics: *mut tk_metrics,
) -> tk_result {
    unsafe { get(multi, "multi", out_metrics, "out_metrics", |m| snapshot(m.inner.metrics())) }
}

/// Copies `shaper`'s counters (reservations accepted as `allowed`, rejected as `denied`) into
/// `out_metrics` (`enabled == false` and zeros when it was made without
/// `tk_shaper_config.metrics`).
///
/// # Safety
/// `shaper` must be a live handle; `out_metrics` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_shaper_metrics(shaper: *const tk_shaper, out_metrics: *mut tk_metrics) -> tk_result {
    unsafe { get(shaper, "shaper", out_metrics, "out_metrics", |s| snapshot(s.inner.metrics())) }
}
