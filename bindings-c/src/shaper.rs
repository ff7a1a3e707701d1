//! [`tk_shaper`]: the leaky-bucket traffic shaper (core's `Shaper`). It delays instead of
//! denying: a reservation says how long to wait before departing.

use std::ffi::c_char;

use throttlekit::{LeakyBucketOptions, Reservation, Shaper};

use crate::args::{borrow, free_handle, into_handle, out, string, try_arg, try_core};
use crate::clock::tk_clock;
use crate::config::common;
use crate::decision::tk_reservation;
use crate::panic::{guard, guard_void};
use crate::result::{tk_result, write_out};
use crate::store::tk_store;

/// Optional settings of a shaper (zeroed or NULL: a fresh memory store, the system clock, no
/// prefix).
///
/// Ownership: caller-owned; read only during `tk_shaper_new*`.
#[repr(C)]
pub struct tk_shaper_config {
    /// The store (NULL: a fresh private memory store).
    pub store: *const tk_store,
    /// The clock of the clock-reading calls (NULL: the system clock).
    pub clock: *const tk_clock,
    /// The key prefix (NULL or "": none).
    pub prefix: *const c_char,
    /// Keep counters of its reservations (accepted as allowed, rejected as denied), read with
    /// `tk_shaper_metrics` (false: none).
    pub metrics: bool,
}

/// A leaky-bucket shaper.
///
/// Ownership: created by `tk_shaper_new` / `tk_shaper_new_json`, released with `tk_shaper_free`.
///
/// Thread safety: every function except `tk_shaper_free` may be called concurrently.
pub struct tk_shaper {
    pub(crate) inner: Shaper,
}

/// Builds the shaper and applies `config`.
///
/// # Safety
/// `config` must be NULL or valid.
unsafe fn build(options: &LeakyBucketOptions, config: *const tk_shaper_config, o: &mut *mut tk_shaper) -> tk_result {
    let mut shaper = try_core!(Shaper::new(options));
    if let Some(c) = unsafe { config.as_ref() } {
        let shared = try_arg!(unsafe { common(c.store, c.clock, c.prefix) });
        if let Some(s) = shared.store {
            shaper = shaper.with_store(s);
        }
        if let Some(k) = shared.clock {
            shaper = shaper.with_clock(k);
        }
        // After the prefix: the metrics are labelled with it.
        shaper = shaper.with_prefix(shared.prefix).with_server_clock(shared.server_clock).with_metrics(c.metrics);
    }
    into_handle(tk_shaper { inner: shaper }, o)
}

/// A shaper releasing `rate_per_sec` units a second (> 0) and accepting waits of at most
/// `max_queue_ms` (>= 0); other values are `TK_RESULT_CONFIG_INVALID`.
///
/// # Safety
/// `config` must be NULL or valid; `out_shaper` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_shaper_new(
    rate_per_sec: f64,
    max_queue_ms: f64,
    config: *const tk_shaper_config,
    out_shaper: *mut *mut tk_shaper,
) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { out(out_shaper, "out_shaper") });
        unsafe { build(&LeakyBucketOptions { rate_per_sec, max_queue_ms }, config, o) }
    })
}

/// A shaper from JSON options, e.g. `{"ratePerSec":10,"maxQueueMs":500}` (the vectors'
/// format; unknown fields are `TK_RESULT_CONFIG_INVALID`).
///
/// # Safety
/// `json` must be a NUL-terminated string; `config` NULL or valid; `out_shaper` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_shaper_new_json(
    json: *const c_char,
    config: *const tk_shaper_config,
    out_shaper: *mut *mut tk_shaper,
) -> tk_result {
    guard(|| {
        let json = try_arg!(unsafe { string(json, "json") });
        let o = try_arg!(unsafe { out(out_shaper, "out_shaper") });
        let options: LeakyBucketOptions =
            try_core!(serde_json::from_str(json).map_err(|e| {
                throttlekit::Error::config("shaper", &format!("is not valid leaky-bucket options: {e}"))
            }));
        unsafe { build(&options, config, o) }
    })
}

/// Shared body of the reservation exports.
///
/// # Safety
/// Pointers as documented on `tk_shaper_reserve`.
unsafe fn reserve(
    shaper: *const tk_shaper,
    key: *const c_char,
    out_reservation: *mut tk_reservation,
    op: impl FnOnce(&Shaper, &str) -> throttlekit::Result<Reservation>,
) -> tk_result {
    guard(|| {
        let s = &try_arg!(unsafe { borrow(shaper, "shaper") }).inner;
        let key = try_arg!(unsafe { string(key, "key") });
        let o = try_arg!(unsafe { out(out_reservation, "out_reservation") });
        write_out(op(s, key).map(tk_reservation::from), o)
    })
}

/// Reserves a departure for `cost` units of `key` at the shaper clock's time. A full queue is
/// `TK_RESULT_OK` with `accepted == false` (and `delay_ms` = how much too long the wait is).
///
/// # Safety
/// `shaper` must be a live handle, `key` a NUL-terminated string, `out_reservation` valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_shaper_reserve(
    shaper: *const tk_shaper,
    key: *const c_char,
    cost: u64,
    out_reservation: *mut tk_reservation,
) -> tk_result {
    unsafe { reserve(shaper, key, out_reservation, |s, k| s.reserve_sync(k, cost)) }
}

/// `tk_shaper_reserve` at an explicit `now` (epoch ms).
///
/// # Safety
/// As for `tk_shaper_reserve`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_shaper_reserve_at(
    shaper: *const tk_shaper,
    key: *const c_char,
    cost: u64,
    now_ms: i64,
    out_reservation: *mut tk_reservation,
) -> tk_result {
    unsafe { reserve(shaper, key, out_reservation, |s, k| s.reserve_sync_at(k, cost, now_ms)) }
}

/// Reserves, then blocks the calling thread for the delay (on the real clock, whatever the
/// shaper's clock). A full queue is `TK_RESULT_QUEUE_FULL`; the last error says how long to
/// wait before retrying.
///
/// # Safety
/// As for `tk_shaper_reserve`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_shaper_schedule(
    shaper: *const tk_shaper,
    key: *const c_char,
    cost: u64,
    out_reservation: *mut tk_reservation,
) -> tk_result {
    unsafe { reserve(shaper, key, out_reservation, |s, k| s.schedule_blocking(k, cost)) }
}

/// Forgets `key`'s queue.
///
/// # Safety
/// `shaper` must be a live handle and `key` a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_shaper_reset(shaper: *const tk_shaper, key: *const c_char) -> tk_result {
    guard(|| {
        let s = &try_arg!(unsafe { borrow(shaper, "shaper") }).inner;
        let key = try_arg!(unsafe { string(key, "key") });
        write_out(s.reset_sync(key), &mut ())
    })
}

/// Releases a shaper; NULL is a no-op.
///
/// # Safety
/// `shaper` must be NULL or a live handle from `tk_shaper_new*`, not in use elsewhere.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_shaper_free(shaper: *mut tk_shaper) {
    guard_void(|| unsafe { free_handle(shaper) })
}
