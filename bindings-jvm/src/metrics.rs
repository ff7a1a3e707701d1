//! The counters of a limiter, a multi limiter or a shaper (core's `LimiterMetrics`) as the longs
//! `Metrics.of` reads, built in one place for all three.

use std::sync::Arc;

use jni_sys::{JNIEnv, jclass, jlong, jlongArray};
use throttlekit::metrics::{LATENCY_BOUNDS_US, LimiterMetrics};
use throttlekit::{MultiLimiter, Shaper};

use crate::{guard, handle};

/// enabled, allowed, denied, fallbackAllowed, fallbackDenied, the error counts in code order,
/// latencySumUs, peeks, forecasts, then (bound, count) pairs, the last bound `Long.MAX_VALUE`;
/// all zeros (no pairs) when `metrics` is `None`.
pub(crate) fn longs(metrics: Option<&Arc<LimiterMetrics>>) -> Vec<jlong> {
    let as_long = |v: u64| jlong::try_from(v).unwrap_or(jlong::MAX);
    let mut out = Vec::new();
    match metrics.map(|m| m.snapshot()) {
        None => out.resize(8 + throttlekit::ErrorCode::ALL.len(), 0),
        Some(s) => {
            out.extend([1, as_long(s.allowed), as_long(s.denied)]);
            out.extend([as_long(s.fallback_allowed), as_long(s.fallback_denied)]);
            out.extend(s.errors.iter().map(|(_, n)| as_long(*n)));
            out.extend([as_long(s.latency_sum_us), as_long(s.peeks), as_long(s.forecasts)]);
            for (i, n) in s.latency_counts.iter().enumerate() {
                let bound = LATENCY_BOUNDS_US.get(i).map_or(jlong::MAX, |b| as_long(*b));
                out.extend([bound, as_long(*n)]);
            }
        }
    }
    out
}

/// A multi limiter's counters (its combined decisions), as [`longs`].
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_multiMetrics(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
) -> jlongArray {
    guard(env, || unsafe {
        let m = handle::get::<MultiLimiter>(h, "multi limiter")?;
        Ok(crate::env::new_longs(env, &longs(m.metrics())))
    })
}

/// A shaper's counters (reservations accepted as allowed, rejected as denied), as [`longs`].
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_shaperMetrics(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
) -> jlongArray {
    guard(env, || unsafe {
        let s = handle::get::<Shaper>(h, "shaper")?;
        Ok(crate::env::new_longs(env, &longs(s.metrics())))
    })
}
