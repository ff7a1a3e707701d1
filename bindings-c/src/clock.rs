//! [`tk_clock`]: the time source of the clock-reading calls (`tk_limiter_check` etc.). The
//! `_at` variants take `now` explicitly and ignore the clock.

use std::sync::Arc;

use throttlekit::{Clock, ManualClock, SystemClock};

use crate::args::{borrow, free_handle, get, into_handle, out, try_arg, try_core};
use crate::panic::{guard, guard_void};
use crate::result::{set_last_error, tk_result};

/// A clock: the system's wall clock, or a manual clock that moves only when told to (for tests
/// and simulations).
///
/// Ownership: created by `tk_clock_new_system` / `tk_clock_new_manual`, released with
/// `tk_clock_free`. Objects configured with a clock keep their own reference, so setting a
/// manual clock moves every limiter built on it, and freeing the handle does not stop them.
///
/// Thread safety: all functions may be called concurrently (except `tk_clock_free`).
pub struct tk_clock {
    pub(crate) inner: Arc<dyn Clock>,
    manual: Option<ManualClock>,
}

/// The system wall clock (epoch milliseconds).
///
/// # Safety
/// `out_clock` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_clock_new_system(out_clock: *mut *mut tk_clock) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { out(out_clock, "out_clock") });
        into_handle(tk_clock { inner: Arc::new(SystemClock), manual: None }, o)
    })
}

/// A manual clock showing `now_ms`.
///
/// # Safety
/// `out_clock` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_clock_new_manual(now_ms: i64, out_clock: *mut *mut tk_clock) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { out(out_clock, "out_clock") });
        let manual = ManualClock::new(now_ms);
        into_handle(tk_clock { inner: Arc::new(manual.clone()), manual: Some(manual) }, o)
    })
}

/// Reads the clock.
///
/// # Safety
/// `clock` must be a live handle; `out_now` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_clock_now(clock: *const tk_clock, out_now: *mut i64) -> tk_result {
    unsafe { get(clock, "clock", out_now, "out_now", |c| c.inner.now_ms()) }
}

/// Sets a manual clock to `now_ms` (backwards allowed). On the system clock:
/// `TK_RESULT_NOT_IMPLEMENTED`.
///
/// # Safety
/// `clock` must be a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_clock_set(clock: *const tk_clock, now_ms: i64) -> tk_result {
    guard(|| {
        let m = try_arg!(manual(try_arg!(unsafe { borrow(clock, "clock") })));
        m.set(now_ms);
        tk_result::Ok
    })
}

/// Moves a manual clock forward by `ms` (negative: `TK_RESULT_CONFIG_INVALID`); the new time is
/// written to `out_now` when it is not NULL. On the system clock: `TK_RESULT_NOT_IMPLEMENTED`.
///
/// # Safety
/// `clock` must be a live handle; `out_now` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_clock_advance(clock: *const tk_clock, ms: i64, out_now: *mut i64) -> tk_result {
    guard(|| {
        let m = try_arg!(manual(try_arg!(unsafe { borrow(clock, "clock") })));
        let now = try_core!(m.advance(ms));
        if let Some(o) = unsafe { out_now.as_mut() } {
            *o = now;
        }
        tk_result::Ok
    })
}

fn manual(c: &tk_clock) -> Result<&ManualClock, tk_result> {
    c.manual.as_ref().ok_or_else(|| {
        set_last_error("not_implemented: only a manual clock can be set or advanced");
        tk_result::NotImplemented
    })
}

/// Releases a clock handle; NULL is a no-op.
///
/// # Safety
/// `clock` must be NULL or a live handle from a `tk_clock_new_*` constructor.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_clock_free(clock: *mut tk_clock) {
    guard_void(|| unsafe { free_handle(clock) })
}
