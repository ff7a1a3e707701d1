//! [`tk_adaptive`]: the adaptive concurrency limiter (core's `concurrency::AdaptiveLimiter`), and
//! [`tk_adaptive_permit`], one admitted request.
//!
//! The configuration is core's JSON (`{"algorithm":"gradient2","initialLimit":20}`), validated by
//! core, so every problem is `TK_RESULT_CONFIG_INVALID` with the field named in the last error.
//! A rejection is not a failure: the call returns `TK_RESULT_OK` with a NULL permit and fills
//! the [`tk_adaptive_rejection`].

use std::ffi::c_char;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use throttlekit::concurrency::{
    AdaptiveConfig, AdaptiveLimiter, AdaptiveMetrics, Admission, Cancel, Outcome, Permit, Rejection, VirtualClock,
};

use crate::args::{borrow, free_handle, get, into_handle, optional_string, out, string, try_arg, try_core};
use crate::panic::{guard, guard_void};
use crate::result::{set_last_error, tk_result};

/// How a request that held a permit ended (passed as `uint32_t`; another number is
/// `TK_RESULT_CONFIG_INVALID` for `outcome`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tk_outcome {
    /// It completed: its round trip is a latency sample.
    Success = 0,
    /// Not a latency signal (a client error, a cancelled request, a cache hit).
    Ignore = 1,
    /// A timeout or a 503 from below: a congestion signal.
    Dropped = 2,
}

/// The core outcome for a `tk_outcome` number.
fn to_outcome(n: u32) -> throttlekit::Result<Outcome> {
    match n {
        0 => Ok(Outcome::Success),
        1 => Ok(Outcome::Ignore),
        2 => Ok(Outcome::Dropped),
        _ => Err(throttlekit::Error::config("outcome", "must be success, ignore or dropped")),
    }
}

/// An adaptive concurrency limiter.
///
/// Ownership: created by `tk_adaptive_new` / `tk_adaptive_new_virtual`, released with
/// `tk_adaptive_free`. Permits keep their own reference, so they may outlive it.
///
/// Thread safety: every function except `tk_adaptive_free` may be called concurrently.
pub struct tk_adaptive {
    inner: AdaptiveLimiter,
    /// The virtual clock, for a limiter made by `tk_adaptive_new_virtual`.
    clock: Option<VirtualClock>,
}

/// One admitted request: release it with `tk_adaptive_permit_release*`, then free it.
///
/// Ownership: written by `tk_adaptive_try_acquire` / `tk_adaptive_acquire`, released with
/// `tk_adaptive_permit_free`. Freeing a permit that was never released releases it as `ignore`
/// and counts it in the `leaked` metric.
///
/// Thread safety: every function except `tk_adaptive_permit_free` may be called concurrently;
/// releasing twice is harmless (the second call reports `released == false`).
pub struct tk_adaptive_permit {
    inner: Mutex<Permit>,
}

/// Ends a `tk_adaptive_acquire_cancellable` wait from another thread: a binding whose caller gave
/// up (Go's `context` cancelled) has its waiter leave the queue at once, instead of holding its
/// place and a thread until a grant or the timeout. One wait at a time; once fired it stays fired.
///
/// Ownership: created by `tk_cancel_new`, released with `tk_cancel_free` (after the wait it
/// serves has returned).
///
/// Thread safety: every function except `tk_cancel_free` may be called concurrently.
pub struct tk_cancel {
    inner: Cancel,
}

/// A refused acquire: the limit was full (or the wait timed out).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tk_adaptive_rejection {
    /// The limit when the request was refused.
    pub limit: u32,
    /// The requests in flight then.
    pub inflight: u32,
    /// A retry hint: the latest window's latency percentile, ms (1000 before any window).
    pub retry_after_ms: u64,
    /// The `Retry-After` header's value: whole seconds, rounded up, at least 1.
    pub retry_after_secs: u64,
}

impl From<Rejection> for tk_adaptive_rejection {
    fn from(r: Rejection) -> Self {
        tk_adaptive_rejection {
            limit: r.limit,
            inflight: r.inflight,
            retry_after_ms: r.retry_after_ms,
            retry_after_secs: r.retry_after_secs(),
        }
    }
}

/// A snapshot of an adaptive limiter's counters (per-partition counts: not included).
/// Caller-owned; filled by `tk_adaptive_metrics`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tk_adaptive_snapshot {
    /// The current limit.
    pub limit: u32,
    /// Permits held now.
    pub inflight: u32,
    /// Waiters in `tk_adaptive_acquire` now.
    pub waiting: u32,
    /// Permits granted.
    pub acquired: u64,
    /// Requests refused (including acquire timeouts).
    pub rejected: u64,
    /// Releases with success.
    pub succeeded: u64,
    /// Releases with dropped.
    pub dropped: u64,
    /// Releases with ignore, leaked permits included.
    pub ignored: u64,
    /// Permits freed without a release.
    pub leaked: u64,
    /// Successful samples shorter than `minRttUs`, left out of the windows.
    pub short_rtts: u64,
    /// Windows closed (limit updates).
    pub windows: u64,
    /// The no-load round trip, µs (0 before the first window).
    pub baseline_rtt_us: u64,
    /// The latest window's latency percentile, µs.
    pub latency_us: u64,
    /// Whether the limit is still in slow start.
    pub slow_start: bool,
}

impl From<AdaptiveMetrics> for tk_adaptive_snapshot {
    fn from(m: AdaptiveMetrics) -> Self {
        tk_adaptive_snapshot {
            limit: m.limit,
            inflight: m.inflight,
            waiting: m.waiting,
            acquired: m.acquired,
            rejected: m.rejected,
            succeeded: m.succeeded,
            dropped: m.dropped,
            ignored: m.ignored,
            leaked: m.leaked,
            short_rtts: m.short_rtts,
            windows: m.windows,
            baseline_rtt_us: m.baseline_rtt_us,
            latency_us: m.latency_us,
            slow_start: m.slow_start,
        }
    }
}

/// Shared body of the constructors.
///
/// # Safety
/// As for `tk_adaptive_new`.
unsafe fn new(json: *const c_char, out_limiter: *mut *mut tk_adaptive, virtual_clock: bool) -> tk_result {
    guard(|| {
        let json = try_arg!(unsafe { string(json, "json") });
        let o = try_arg!(unsafe { out(out_limiter, "out_limiter") });
        let config = try_core!(AdaptiveConfig::from_json(json));
        let handle = if virtual_clock {
            let clock = VirtualClock::new(0);
            let inner = try_core!(AdaptiveLimiter::with_clock(config, Arc::new(clock.clone())));
            tk_adaptive { inner, clock: Some(clock) }
        } else {
            tk_adaptive { inner: try_core!(AdaptiveLimiter::new(config)), clock: None }
        };
        into_handle(handle, o)
    })
}

/// An adaptive limiter from core's JSON configuration (`"{}"`: gradient2 with every default;
/// `docs/adaptive.md` lists the fields), measuring round trips on the monotonic clock. Bad
/// options are `TK_RESULT_CONFIG_INVALID` naming the field.
///
/// # Safety
/// `json` must be a NUL-terminated string; `out_limiter` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_adaptive_new(json: *const c_char, out_limiter: *mut *mut tk_adaptive) -> tk_result {
    unsafe { new(json, out_limiter, false) }
}

/// Like `tk_adaptive_new`, on a virtual clock at 0 that moves only with
/// `tk_adaptive_advance_virtual` (for tests and the vectors).
///
/// # Safety
/// As for `tk_adaptive_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_adaptive_new_virtual(json: *const c_char, out_limiter: *mut *mut tk_adaptive) -> tk_result {
    unsafe { new(json, out_limiter, true) }
}

/// Moves a virtual limiter's clock forward by `ns`. On a limiter made by `tk_adaptive_new`:
/// `TK_RESULT_NOT_IMPLEMENTED`.
///
/// # Safety
/// `limiter` must be a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_adaptive_advance_virtual(limiter: *const tk_adaptive, ns: u64) -> tk_result {
    guard(|| {
        let l = try_arg!(unsafe { borrow(limiter, "limiter") });
        match &l.clock {
            Some(c) => {
                c.advance(ns);
                tk_result::Ok
            }
            None => {
                set_last_error("not_implemented: only a limiter from tk_adaptive_new_virtual has a virtual clock");
                tk_result::NotImplemented
            }
        }
    })
}

/// Shared tail of the acquires: the permit, or NULL and the rejection.
fn admit(
    admission: throttlekit::Result<Admission>,
    o: &mut *mut tk_adaptive_permit,
    out_rejection: *mut tk_adaptive_rejection,
) -> tk_result {
    match try_core!(admission) {
        Admission::Granted(p) => into_handle(tk_adaptive_permit { inner: Mutex::new(p) }, o),
        Admission::Rejected(r) => {
            *o = std::ptr::null_mut();
            // SAFETY: NULL or valid for writes, by the caller's contract.
            if let Some(rej) = unsafe { out_rejection.as_mut() } {
                *rej = r.into();
            }
            tk_result::Ok
        }
    }
}

/// Asks for a permit without waiting. Granted: `*out_permit` is the permit. Refused: `*out_permit`
/// is NULL and `*out_rejection` (when not NULL) says why; both are `TK_RESULT_OK`. `partition`
/// (NULL: none) must be a configured partition (else `TK_RESULT_CONFIG_INVALID`).
///
/// # Safety
/// `limiter` must be a live handle; `partition` NULL or a NUL-terminated string; `out_permit`
/// valid for writes; `out_rejection` NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_adaptive_try_acquire(
    limiter: *const tk_adaptive,
    partition: *const c_char,
    out_permit: *mut *mut tk_adaptive_permit,
    out_rejection: *mut tk_adaptive_rejection,
) -> tk_result {
    guard(|| {
        let l = try_arg!(unsafe { borrow(limiter, "limiter") });
        let partition = try_arg!(unsafe { optional_string(partition, "partition") });
        let o = try_arg!(unsafe { out(out_permit, "out_permit") });
        admit(l.inner.try_acquire(partition), o, out_rejection)
    })
}

/// Like `tk_adaptive_try_acquire`, but blocks the calling thread up to `timeout_ms` for a
/// permit, in the configured order (FIFO or LIFO). A timeout is a rejection (`TK_RESULT_OK`).
///
/// # Safety
/// As for `tk_adaptive_try_acquire`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_adaptive_acquire(
    limiter: *const tk_adaptive,
    partition: *const c_char,
    timeout_ms: u64,
    out_permit: *mut *mut tk_adaptive_permit,
    out_rejection: *mut tk_adaptive_rejection,
) -> tk_result {
    unsafe { acquire_blocking(limiter, partition, timeout_ms, None, out_permit, out_rejection) }
}

/// Like `tk_adaptive_acquire`, but `tk_cancel_fire(cancel)` from another thread ends the wait at
/// once: the waiter leaves the queue and the answer is a NULL permit with a rejection that the
/// metrics do not count (the caller gave up; the limiter refused nothing). A cancel fired before
/// the call takes no permit, even with room. A permit granted just before the cancel is the
/// caller's (release it as `TK_OUTCOME_IGNORE`).
///
/// # Safety
/// As for `tk_adaptive_try_acquire`; `cancel` a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_adaptive_acquire_cancellable(
    limiter: *const tk_adaptive,
    partition: *const c_char,
    timeout_ms: u64,
    cancel: *const tk_cancel,
    out_permit: *mut *mut tk_adaptive_permit,
    out_rejection: *mut tk_adaptive_rejection,
) -> tk_result {
    unsafe { acquire_blocking(limiter, partition, timeout_ms, Some(cancel), out_permit, out_rejection) }
}

/// Shared body of the blocking acquires (`cancel`: `Some` for the cancellable one, whose NULL
/// handle is `TK_RESULT_NULL_PARAMETER`).
///
/// # Safety
/// As for `tk_adaptive_acquire_cancellable`.
unsafe fn acquire_blocking(
    limiter: *const tk_adaptive,
    partition: *const c_char,
    timeout_ms: u64,
    cancel: Option<*const tk_cancel>,
    out_permit: *mut *mut tk_adaptive_permit,
    out_rejection: *mut tk_adaptive_rejection,
) -> tk_result {
    guard(|| {
        let l = try_arg!(unsafe { borrow(limiter, "limiter") });
        let partition = try_arg!(unsafe { optional_string(partition, "partition") });
        let cancel = try_arg!(cancel.map(|c| unsafe { borrow(c, "cancel") }).transpose());
        let o = try_arg!(unsafe { out(out_permit, "out_permit") });
        let timeout = Duration::from_millis(timeout_ms);
        let admission = match cancel {
            Some(c) => l.inner.acquire_blocking_cancellable(partition, timeout, &c.inner),
            None => l.inner.acquire_blocking(partition, timeout),
        };
        admit(admission, o, out_rejection)
    })
}

/// A cancel, not fired, for `tk_adaptive_acquire_cancellable`.
///
/// # Safety
/// `out_cancel` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_cancel_new(out_cancel: *mut *mut tk_cancel) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { out(out_cancel, "out_cancel") });
        into_handle(tk_cancel { inner: Cancel::new() }, o)
    })
}

/// Fires `cancel`: the wait it serves returns now, and a later one does not start.
///
/// # Safety
/// `cancel` must be a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_cancel_fire(cancel: *const tk_cancel) -> tk_result {
    guard(|| {
        let c = try_arg!(unsafe { borrow(cancel, "cancel") });
        c.inner.cancel();
        tk_result::Ok
    })
}

/// Releases a cancel handle; NULL is a no-op.
///
/// # Safety
/// `cancel` must be NULL or a live handle, no wait or fire in progress on it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_cancel_free(cancel: *mut tk_cancel) {
    guard_void(|| unsafe { free_handle(cancel) })
}

/// Shared body of the releases.
///
/// # Safety
/// As for `tk_adaptive_permit_release`.
unsafe fn release(
    permit: *const tk_adaptive_permit,
    out_released: *mut bool,
    op: impl FnOnce(&mut Permit) -> throttlekit::Result<bool>,
) -> tk_result {
    guard(|| {
        let p = try_arg!(unsafe { borrow(permit, "permit") });
        let released = {
            let mut p = p.inner.lock().unwrap_or_else(|e| e.into_inner());
            try_core!(op(&mut p))
        };
        // SAFETY: NULL or valid for writes, by the caller's contract.
        if let Some(o) = unsafe { out_released.as_mut() } {
            *o = released;
        }
        tk_result::Ok
    })
}

/// Releases the permit with `outcome` (a `tk_outcome`), its round trip measured by the limiter's
/// clock since the grant. `*out_released` (when not NULL) is whether this call released it
/// (false: it already was; releasing twice is harmless). The permit must still be freed.
///
/// # Safety
/// `permit` must be a live handle; `out_released` NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_adaptive_permit_release(
    permit: *const tk_adaptive_permit,
    outcome: u32,
    out_released: *mut bool,
) -> tk_result {
    unsafe { release(permit, out_released, |p| Ok(p.release(to_outcome(outcome)?))) }
}

/// Like `tk_adaptive_permit_release`, with a round trip the caller measured, in nanoseconds (a
/// negative one is `TK_RESULT_CONFIG_INVALID` for `rtt`, and the permit stays held).
///
/// # Safety
/// As for `tk_adaptive_permit_release`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_adaptive_permit_release_rtt(
    permit: *const tk_adaptive_permit,
    outcome: u32,
    rtt_ns: i64,
    out_released: *mut bool,
) -> tk_result {
    unsafe { release(permit, out_released, |p| p.release_with_rtt_ns(to_outcome(outcome)?, rtt_ns)) }
}

/// The `tk_outcome` named `name` (`"success"`, `"ignore"`, `"dropped"`); another name is
/// `TK_RESULT_CONFIG_INVALID` for `outcome`.
///
/// # Safety
/// `name` must be a NUL-terminated string; `out_outcome` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_outcome_from_name(name: *const c_char, out_outcome: *mut u32) -> tk_result {
    guard(|| {
        let name = try_arg!(unsafe { string(name, "name") });
        let o = try_arg!(unsafe { out(out_outcome, "out_outcome") });
        *o = match try_core!(Outcome::parse(name)) {
            Outcome::Success => tk_outcome::Success,
            Outcome::Ignore => tk_outcome::Ignore,
            Outcome::Dropped => tk_outcome::Dropped,
        } as u32;
        tk_result::Ok
    })
}

/// Releases a permit handle; NULL is a no-op. A permit never released is released as `ignore`
/// and counted as leaked.
///
/// # Safety
/// `permit` must be NULL or a live handle, not in use elsewhere.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_adaptive_permit_free(permit: *mut tk_adaptive_permit) {
    guard_void(|| unsafe { free_handle(permit) })
}

/// The current limit.
///
/// # Safety
/// `limiter` must be a live handle; `out_limit` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_adaptive_limit(limiter: *const tk_adaptive, out_limit: *mut u32) -> tk_result {
    unsafe { get(limiter, "limiter", out_limit, "out_limit", |l| l.inner.limit()) }
}

/// Permits held now.
///
/// # Safety
/// `limiter` must be a live handle; `out_inflight` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_adaptive_inflight(limiter: *const tk_adaptive, out_inflight: *mut u32) -> tk_result {
    unsafe { get(limiter, "limiter", out_inflight, "out_inflight", |l| l.inner.inflight()) }
}

/// A consistent snapshot of the limiter's counters.
///
/// # Safety
/// `limiter` must be a live handle; `out_metrics` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_adaptive_metrics(
    limiter: *const tk_adaptive,
    out_metrics: *mut tk_adaptive_snapshot,
) -> tk_result {
    unsafe { get(limiter, "limiter", out_metrics, "out_metrics", |l| l.inner.metrics().into()) }
}

/// Releases a limiter handle; NULL is a no-op. Permits still held stay valid.
///
/// # Safety
/// `limiter` must be NULL or a live handle, not in use elsewhere.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_adaptive_free(limiter: *mut tk_adaptive) {
    guard_void(|| unsafe { free_handle(limiter) })
}
