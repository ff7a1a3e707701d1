//! The hot path of `AdaptiveLimiter#tryAcquire` and `Permit#release`: raw napi callbacks that
//! find the limiter by handle (handles.rs) and answer through the shared buffer (fast.rs), as
//! `__checkSync` does. lib/adaptive.js writes the limiter's handle (and for a release the
//! permit's id and the outcome as a small integer) into the buffer, calls with no arguments (or
//! the partition), and reads the answer back from it.
//!
//! Why: on the 2-vCPU guest `make bench` runs on, a napi-rs method call cost ~0.3 µs before it
//! did anything (`limit()`, which makes no object): its glue unwraps `this` (`napi_unwrap` and a
//! type-tag check, two V8 private-property lookups) and converts each argument and the result
//! through napi. A raw callback is `napi_get_cb_info` and a handle lookup, and a JIT-compiled
//! typed-array store or load costs ~1 ns.
//!
//! Everything else (a partition that is not a string, an outcome that is not one of the three
//! names, a round trip given, `acquire`) takes the napi-rs methods of adaptive.rs, which throw
//! the coded errors; both paths run the same `AdaptiveCore` calls.

// napi-derive leaves out export registration under cfg(test), so the unit-test build sees
// these functions as unused.
#![cfg_attr(test, allow(dead_code))]

use std::ffi::CStr;
use std::ptr;

use napi::sys;
use throttlekit::concurrency::Outcome;

use crate::adaptive::AdaptiveLimiter;
use crate::convert;
use crate::error::{CoreResult, config};
use crate::fast::{self, Callback, Context, IO_HANDLE, IO_LEN, guard};

/// The functions fast.rs registers for lib/adaptive.js.
pub(crate) const FUNCTIONS: [(&CStr, Callback); 4] = [
    (c"__adaptiveHandle", handle),
    (c"__adaptiveTryAcquire", try_acquire),
    (c"__adaptiveRelease", release),
    (c"__adaptiveForget", forget),
];

/// Where lib/adaptive.js puts the id of the permit to release (`__checkSync`'s cost slot).
const IO_PERMIT: usize = fast::IO_COST;
/// Where lib/adaptive.js puts the outcome to release with: 0 success, 1 ignore, 2 dropped
/// (`__checkSync`'s key-length slot).
const IO_OUTCOME: usize = fast::IO_KEY_LEN;

/// `__adaptiveHandle(limiter)`: the handle of an `AdaptiveLimiter` (a number), registering it
/// on first use; `config_invalid` for anything else. lib/adaptive.js calls it once per limiter
/// and keeps the answer in a private field.
unsafe extern "C" fn handle(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv, _| {
        let h = adaptive(env, argv[0])?.handle(&context.adaptive)?;
        fast::number(env, h)
    })
}

/// `__adaptiveTryAcquire([partition])`: `tryAcquire` for the limiter whose handle is in the
/// handle slot. A grant writes 1 and the permit's id to slots 0-1; a rejection writes 0, then
/// its limit, in-flight count, `retryAfterMs` and `retryAfterSecs` to slots 1-4.
unsafe extern "C" fn try_acquire(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv, argc| {
        let io = io(context)?;
        with_limiter(context, io[IO_HANDLE], |limiter| {
            let answer = if argc == 0 {
                limiter.try_acquire(None)?
            } else {
                convert::with_str_in(&context.key, env, argv[0], "partition", |p| limiter.try_acquire(Some(p)))?
            };
            match answer {
                Ok(id) => {
                    io[0] = 1.0;
                    io[1] = id as f64;
                }
                Err(r) => {
                    io[0] = 0.0;
                    io[1] = f64::from(r.limit);
                    io[2] = f64::from(r.inflight);
                    io[3] = r.retry_after_ms as f64;
                    io[4] = r.retry_after_secs() as f64;
                }
            }
            Ok(ptr::null_mut())
        })
    })
}

/// `__adaptiveRelease()`: releases the permit whose id is in IO_PERMIT, of the limiter whose
/// handle is in the handle slot, with the outcome coded in IO_OUTCOME, the round trip measured
/// by the core; writes whether this call released it (1 or 0) to slot 0.
unsafe extern "C" fn release(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |_, context, _, _| {
        let io = io(context)?;
        let outcome = match io[IO_OUTCOME] {
            0.0 => Outcome::Success,
            1.0 => Outcome::Ignore,
            2.0 => Outcome::Dropped,
            _ => return Err(config("outcome", "must be success, ignore or dropped")),
        };
        with_limiter(context, io[IO_HANDLE], |limiter| {
            io[0] = if limiter.release(io[IO_PERMIT], outcome, None)? { 1.0 } else { 0.0 };
            Ok(ptr::null_mut())
        })
    })
}

/// `__adaptiveForget()`: drops the permit whose id is in IO_PERMIT, of the limiter whose handle
/// is in the handle slot, unreleased, as a leak (`ignore`, counted in `leaked`): a `Permit` the
/// garbage collector took unreleased (the limiter's FinalizationRegistry calls this for every
/// collected permit, released or not), or the conformance runner's `drop` event. Nothing when
/// it was released already.
unsafe extern "C" fn forget(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |_, context, _, _| {
        let io = io(context)?;
        with_limiter(context, io[IO_HANDLE], |limiter| {
            limiter.forget(io[IO_PERMIT]);
            Ok(ptr::null_mut())
        })
    })
}

/// The shared buffer's slots (fast.rs's `__bindIo` made them).
#[allow(clippy::mut_from_ref)] // The buffer is JS memory; see the SAFETY comment.
fn io(context: &Context) -> CoreResult<&mut [f64]> {
    let io = context.io.get();
    if io.is_null() {
        return Err(config("io", "is not bound (load the package through index.js)"));
    }
    // SAFETY: `io` points at IO_LEN f64s (checked by `bind_io`), used on this thread only, and
    // no JS runs while the callback that asked for it (the slice's only user) runs.
    Ok(unsafe { std::slice::from_raw_parts_mut(io, IO_LEN) })
}

/// Runs `f` on the limiter whose handle is `handle` (`config_invalid` when there is none), with
/// the handle table borrowed for the call: the one lookup the three hot callbacks share.
fn with_limiter<R>(
    context: &Context,
    handle: f64,
    f: impl FnOnce(&crate::adaptive::AdaptiveCore) -> CoreResult<R>,
) -> CoreResult<R> {
    let table = context.adaptive.try_borrow().map_err(|_| config("this", "is busy"))?;
    f(table.get(handle).ok_or_else(|| config("this", "must be an AdaptiveLimiter"))?)
}

/// The `AdaptiveLimiter` wrapped by `value`; anything else is `config_invalid`.
fn adaptive<'a>(env: sys::napi_env, value: sys::napi_value) -> CoreResult<&'a AdaptiveLimiter> {
    fast::unwrap_tagged(env, value, "AdaptiveLimiter").ok_or_else(|| config("this", "must be an AdaptiveLimiter"))
}
