//! [`tk_strategy`]: a validated algorithm, built from the JSON strategy spec (the vectors'
//! format, every kind and option) or from typed constructors for the common kinds. Validation
//! happens once, in core; these functions only convert arguments.

use std::ffi::c_char;

use throttlekit::Strategy;

use crate::args::{free_handle, get, into_handle, out, string, try_arg, try_core};
use crate::panic::{guard, guard_void};
use crate::result::tk_result;

/// An immutable, validated rate-limiting algorithm.
///
/// Ownership: created by `tk_strategy_from_json` or a typed `tk_strategy_*` constructor,
/// released with `tk_strategy_free`. Limiters copy what they need, so a strategy may be freed
/// right after the limiters using it are created, or reused for many of them.
///
/// Thread safety: immutable; every function may be called concurrently (except the free).
pub struct tk_strategy {
    pub(crate) inner: Strategy,
}

fn publish(res: throttlekit::Result<Strategy>, o: &mut *mut tk_strategy) -> tk_result {
    let inner = try_core!(res);
    into_handle(tk_strategy { inner }, o)
}

/// The body of every typed constructor: inside the panic guard, checks `out_strategy`, then
/// publishes what `build` (core's constructor, which validates) returns.
///
/// # Safety
/// `out_strategy` must be valid for writes.
unsafe fn construct(
    out_strategy: *mut *mut tk_strategy,
    build: impl FnOnce() -> throttlekit::Result<Strategy>,
) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { out(out_strategy, "out_strategy") });
        publish(build(), o)
    })
}

/// Parses and validates a JSON strategy spec, e.g.
/// `{"kind":"gcra","options":{"limit":10,"periodMs":1000,"burst":5}}`. Kinds: `gcra`,
/// `tokenBucket`, `fixedWindow`, `slidingWindow`, `slidingWindowLog`, `quota`. Malformed JSON,
/// an unknown kind or option, or an out-of-range value is `TK_RESULT_CONFIG_INVALID` (the last
/// error names the field).
///
/// # Safety
/// `json` must be a NUL-terminated string; `out_strategy` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_strategy_from_json(json: *const c_char, out_strategy: *mut *mut tk_strategy) -> tk_result {
    guard(|| {
        let json = try_arg!(unsafe { string(json, "json") });
        let o = try_arg!(unsafe { out(out_strategy, "out_strategy") });
        publish(Strategy::from_json(json), o)
    })
}

/// GCRA: `limit` requests per `period_ms`, at most `burst` at once; `burst == 0` selects the
/// default, `limit`.
///
/// # Safety
/// `out_strategy` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_strategy_gcra(
    limit: u64,
    period_ms: u64,
    burst: u64,
    out_strategy: *mut *mut tk_strategy,
) -> tk_result {
    unsafe { construct(out_strategy, || Strategy::gcra(limit, period_ms, (burst != 0).then_some(burst))) }
}

/// Token bucket of `capacity` tokens, refilled at `refill_per_sec` tokens a second (may be
/// fractional). A new bucket starts full.
///
/// # Safety
/// `out_strategy` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_strategy_token_bucket(
    capacity: u64,
    refill_per_sec: f64,
    out_strategy: *mut *mut tk_strategy,
) -> tk_result {
    unsafe { construct(out_strategy, || Strategy::token_bucket(capacity, refill_per_sec)) }
}

/// Fixed window: `limit` units per epoch-aligned window of `window_ms`.
///
/// # Safety
/// `out_strategy` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_strategy_fixed_window(
    limit: u64,
    window_ms: u64,
    out_strategy: *mut *mut tk_strategy,
) -> tk_result {
    unsafe { construct(out_strategy, || Strategy::fixed_window(limit, window_ms)) }
}

/// Sliding window: `limit` units per rolling `window_ms`, estimated from `buckets` sub-buckets;
/// `buckets == 0` selects the default, 10.
///
/// # Safety
/// `out_strategy` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_strategy_sliding_window(
    limit: u64,
    window_ms: u64,
    buckets: u64,
    out_strategy: *mut *mut tk_strategy,
) -> tk_result {
    unsafe { construct(out_strategy, || Strategy::sliding_window(limit, window_ms, (buckets != 0).then_some(buckets))) }
}

/// Sliding-window log: exactly `limit` units per trailing `window_ms`.
///
/// # Safety
/// `out_strategy` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_strategy_sliding_window_log(
    limit: u64,
    window_ms: u64,
    out_strategy: *mut *mut tk_strategy,
) -> tk_result {
    unsafe { construct(out_strategy, || Strategy::sliding_window_log(limit, window_ms)) }
}

/// The `limit` field this strategy's decisions report (GCRA's burst, a bucket's capacity, a
/// window's limit).
///
/// # Safety
/// `strategy` must be a live handle; `out_limit` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_strategy_limit(strategy: *const tk_strategy, out_limit: *mut i64) -> tk_result {
    unsafe { get(strategy, "strategy", out_limit, "out_limit", |s| s.inner.limit()) }
}

/// Releases a strategy; NULL is a no-op.
///
/// # Safety
/// `strategy` must be NULL or a live handle from a `tk_strategy_*` constructor.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_strategy_free(strategy: *mut tk_strategy) {
    guard_void(|| unsafe { free_handle(strategy) })
}
