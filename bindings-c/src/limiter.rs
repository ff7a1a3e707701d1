//! [`tk_limiter`]: a strategy bound to a store, a clock and a key prefix (core's `Limiter`).
//!
//! Each operation comes in two forms: `tk_limiter_<verb>` reads the limiter's clock, and
//! `tk_limiter_<verb>_at` takes `now` (epoch ms) from the caller. Both run the store's
//! synchronous path; on Redis that blocks the calling thread for one round trip.

use std::ffi::c_char;

use throttlekit::{Decision, Limiter};

use crate::args::{borrow, free_handle, into_handle, out, string, try_arg, try_core};
use crate::clock::tk_clock;
use crate::config::{common, fail_policy};
use crate::decision::tk_decision;
use crate::panic::{guard, guard_void};
use crate::result::{tk_result, write_out};
use crate::store::tk_store;
use crate::strategy::tk_strategy;

/// Optional settings of a limiter. A zero-initialised struct (or a NULL config pointer) gives
/// core's defaults: a fresh private memory store, the system clock, no prefix, the default
/// fail policy and strict mode.
///
/// Ownership: caller-owned; read only during `tk_limiter_new`, which takes its own references
/// to the store and clock and copies the prefix and the lease options.
#[repr(C)]
pub struct tk_limiter_config {
    /// The store (NULL: a fresh memory store private to this limiter).
    pub store: *const tk_store,
    /// The clock of the clock-reading calls (NULL: the system clock).
    pub clock: *const tk_clock,
    /// The key prefix: keys are stored as `prefix:key` (NULL or "": the bare key).
    pub prefix: *const c_char,
    /// A `tk_fail_policy` number (0: core's default).
    pub fail_policy: u32,
    /// Keep counters of this limiter's checks, read with `tk_limiter_metrics` (false: none,
    /// and then they cost nothing but a branch).
    pub metrics: bool,
    /// A `tk_mode` number (0: `TK_MODE_STRICT`): how a hot key is spared store calls
    /// (docs/leasing.md).
    pub mode: u32,
    /// The options of `TK_MODE_LEASED` and `TK_MODE_CACHED_DENY` (NULL: core's defaults, as
    /// `tk_lease_options_default()` returns them). Set with `TK_MODE_STRICT`, it is
    /// `TK_RESULT_CONFIG_INVALID`.
    pub lease: *const crate::lease::tk_lease_options,
}

/// A rate limiter.
///
/// Ownership: created by `tk_limiter_new`, released with `tk_limiter_free`.
///
/// Thread safety: every function except `tk_limiter_free` may be called concurrently from any
/// thread; decisions on one key are atomic.
pub struct tk_limiter {
    pub(crate) inner: Limiter,
}

/// Creates a limiter for `strategy` (copied) with `config` (NULL: all defaults). A bad mode or
/// lease option (an unknown `mode`, `batch` 0, `low_water >= batch`, `window_coupled` on a
/// strategy without a window) is `TK_RESULT_CONFIG_INVALID` naming the field.
///
/// # Safety
/// `strategy` must be a live handle; `config` NULL or valid; `out_limiter` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_new(
    strategy: *const tk_strategy,
    config: *const tk_limiter_config,
    out_limiter: *mut *mut tk_limiter,
) -> tk_result {
    guard(|| {
        let strategy = try_arg!(unsafe { borrow(strategy, "strategy") });
        let o = try_arg!(unsafe { out(out_limiter, "out_limiter") });
        let mut builder = Limiter::builder(strategy.inner.clone());
        if let Some(c) = unsafe { config.as_ref() } {
            let shared = try_arg!(unsafe { common(c.store, c.clock, c.prefix) });
            if let Some(s) = shared.store {
                builder = builder.store(s);
            }
            if let Some(k) = shared.clock {
                builder = builder.clock(k);
            }
            builder = builder.prefix(shared.prefix).server_clock(shared.server_clock);
            if let Some(p) = try_arg!(fail_policy(c.fail_policy)) {
                builder = builder.fail_policy(p);
            }
            builder = builder.metrics(c.metrics);
            let mode = try_arg!(unsafe { crate::lease::mode(c.mode, c.lease) });
            builder = try_core!(builder.mode(mode));
        }
        into_handle(tk_limiter { inner: builder.build() }, o)
    })
}

/// Runs one synchronous operation at `now` (core applies the fail policy to an unavailable
/// store on the sync path too).
fn decide(
    l: &Limiter,
    now: i64,
    op: impl FnOnce(&Limiter, i64) -> throttlekit::Result<Decision>,
    o: &mut tk_decision,
) -> tk_result {
    write_out(op(l, now).map(tk_decision::from), o)
}

/// Shared body of every decision-returning export.
///
/// # Safety
/// Pointers as documented on the exports.
unsafe fn run(
    limiter: *const tk_limiter,
    key: *const c_char,
    now: Option<i64>,
    out_decision: *mut tk_decision,
    op: impl FnOnce(&Limiter, &str, i64) -> throttlekit::Result<Decision>,
) -> tk_result {
    guard(|| {
        let l = &try_arg!(unsafe { borrow(limiter, "limiter") }).inner;
        let key = try_arg!(unsafe { string(key, "key") });
        let o = try_arg!(unsafe { out(out_decision, "out_decision") });
        let now = now.unwrap_or_else(|| l.clock().now_ms());
        decide(l, now, |l, now| op(l, key, now), o)
    })
}

/// Checks a request of `cost` units for `key` at the limiter clock's time, consuming them when
/// allowed. A denial is `TK_RESULT_OK` with `allowed == false`; `cost == 0` or above 2^53 is
/// `TK_RESULT_CONFIG_INVALID`.
///
/// # Safety
/// `limiter` must be a live handle, `key` a NUL-terminated string, `out_decision` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_check(
    limiter: *const tk_limiter,
    key: *const c_char,
    cost: u64,
    out_decision: *mut tk_decision,
) -> tk_result {
    unsafe { run(limiter, key, None, out_decision, |l, k, now| l.check_sync_at(k, cost, now)) }
}

/// `tk_limiter_check` at an explicit `now` (epoch ms; backward jumps are allowed).
///
/// # Safety
/// As for `tk_limiter_check`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_check_at(
    limiter: *const tk_limiter,
    key: *const c_char,
    cost: u64,
    now_ms: i64,
    out_decision: *mut tk_decision,
) -> tk_result {
    unsafe { run(limiter, key, Some(now_ms), out_decision, |l, k, now| l.check_sync_at(k, cost, now)) }
}

/// The current capacity of `key`, consuming nothing: `allowed` says whether a cost-1 request
/// would pass and `remaining` how many units would.
///
/// # Safety
/// As for `tk_limiter_check`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_peek(
    limiter: *const tk_limiter,
    key: *const c_char,
    out_decision: *mut tk_decision,
) -> tk_result {
    unsafe { run(limiter, key, None, out_decision, |l, k, now| l.peek_sync_at(k, now)) }
}

/// `tk_limiter_peek` at an explicit `now`.
///
/// # Safety
/// As for `tk_limiter_check`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_peek_at(
    limiter: *const tk_limiter,
    key: *const c_char,
    now_ms: i64,
    out_decision: *mut tk_decision,
) -> tk_result {
    unsafe { run(limiter, key, Some(now_ms), out_decision, |l, k, now| l.peek_sync_at(k, now)) }
}

/// The decision a check of `cost` would get, consuming nothing.
///
/// # Safety
/// As for `tk_limiter_check`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_forecast(
    limiter: *const tk_limiter,
    key: *const c_char,
    cost: u64,
    out_decision: *mut tk_decision,
) -> tk_result {
    unsafe { run(limiter, key, None, out_decision, |l, k, now| l.forecast_sync_at(k, cost, now)) }
}

/// `tk_limiter_forecast` at an explicit `now`.
///
/// # Safety
/// As for `tk_limiter_check`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_forecast_at(
    limiter: *const tk_limiter,
    key: *const c_char,
    cost: u64,
    now_ms: i64,
    out_decision: *mut tk_decision,
) -> tk_result {
    unsafe { run(limiter, key, Some(now_ms), out_decision, |l, k, now| l.forecast_sync_at(k, cost, now)) }
}

/// Forgets `key`'s state.
///
/// # Safety
/// `limiter` must be a live handle and `key` a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_reset(limiter: *const tk_limiter, key: *const c_char) -> tk_result {
    guard(|| {
        let l = &try_arg!(unsafe { borrow(limiter, "limiter") }).inner;
        let key = try_arg!(unsafe { string(key, "key") });
        write_out(l.reset_sync(key), &mut ())
    })
}

/// Releases a limiter; NULL is a no-op.
///
/// # Safety
/// `limiter` must be NULL or a live handle from `tk_limiter_new`, not in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_free(limiter: *mut tk_limiter) {
    guard_void(|| unsafe { free_handle(limiter) })
}

/// `tk_limiter_check` with the key given as `key_len` bytes of UTF-8 (not NUL-terminated; the
/// pointer may be NULL when `key_len == 0`), so a caller holding a counted string (Go, Rust,
/// Zig) passes it without copying it into a NUL-terminated one first. A key holding a NUL byte
/// is `TK_RESULT_CONFIG_INVALID` (no other export could name that key).
///
/// # Safety
/// `limiter` must be a live handle, `key` readable for `key_len` bytes, `out_decision` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_check_n(
    limiter: *const tk_limiter,
    key: *const c_char,
    key_len: usize,
    cost: u64,
    out_decision: *mut tk_decision,
) -> tk_result {
    guard(|| {
        let l = &try_arg!(unsafe { borrow(limiter, "limiter") }).inner;
        let key = try_arg!(unsafe { crate::args::key(key, key_len, "key") });
        let o = try_arg!(unsafe { out(out_decision, "out_decision") });
        write_out(l.check_sync(key, cost).map(tk_decision::from), o)
    })
}
