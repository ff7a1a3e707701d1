//! [`tk_metrics`]: a copy of a limiter's counters (core's `metrics::MetricsSnapshot`).

use throttlekit::ErrorCode;
use throttlekit::metrics::LATENCY_BOUNDS_US;

use crate::args::{borrow, out, try_arg};
use crate::limiter::tk_limiter;
use crate::panic::guard;
use crate::result::tk_result;

/// A limiter's counters, all cumulative since it was made (for OpenTelemetry observable
/// counters and an explicit-bucket histogram). Caller-owned; filled by `tk_limiter_metrics`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tk_metrics {
    /// Whether the limiter keeps metrics (`tk_limiter_config.metrics`); all zeros when not.
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
}

const _: () = assert!(LATENCY_BOUNDS_US.len() == 14 && ErrorCode::ALL.len() < 8);

/// Copies `limiter`'s counters into `out_metrics` (`enabled == false` and zeros when it was made
/// without `metrics`).
///
/// # Safety
/// `limiter` must be a live handle; `out_metrics` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_metrics(limiter: *const tk_limiter, out_metrics: *mut tk_metrics) -> tk_result {
    guard(|| {
        let l = try_arg!(unsafe { borrow(limiter, "limiter") });
        let o = try_arg!(unsafe { out(out_metrics, "out_metrics") });
        let mut m = tk_metrics::default();
        if let Some(metrics) = l.inner.metrics() {
            let s = metrics.snapshot();
            m.enabled = true;
            m.allowed = s.allowed;
            m.denied = s.denied;
            m.fallback_allowed = s.fallback_allowed;
            m.fallback_denied = s.fallback_denied;
            for (code, n) in &s.errors {
                m.errors[*code as usize] = *n;
            }
            m.latency_bounds_us = LATENCY_BOUNDS_US;
            m.latency_counts.copy_from_slice(&s.latency_counts);
            m.latency_count = s.latency_count();
            m.latency_sum_us = s.latency_sum_us;
        }
        *o = m;
        tk_result::Ok
    })
}
