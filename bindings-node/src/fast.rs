//! The fast path of `Limiter#checkSync`: a raw napi callback that writes the decision into a
//! `Float64Array` shared with index.js, which builds the returned object in JavaScript.
//!
//! Why: napi-rs's generated glue for a method (receiver unwrap, borrow tracking) plus building
//! a five-property object through napi (one `napi_set_named_property`, with its key string, per
//! field) costs about a microsecond, several times the decision itself. Here a call does
//! `napi_get_cb_info`, one unwrap of the limiter, a type-tag check, the key copy into a reused
//! buffer and the core's `check_sync`; V8 then allocates the object literal on the JS side.
//! The semantics are the napi-rs method's (`Limiter::check_sync` in limiter.rs): a test replays
//! random timelines through both and compares every field.

// napi-derive leaves out export registration under cfg(test), so the unit-test build sees
// these functions as unused.
#![cfg_attr(test, allow(dead_code))]

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use napi::bindgen_prelude::{Object, TypeTag, Unknown, validate_type_tag};
use napi::{Env, JsValue, sys};
use napi_derive::napi;

use crate::convert;
use crate::error::{CoreResult, config};
use crate::limiter::Limiter;

/// Slots of the output array: allowed (0/1), limit, remaining, resetAt, retryAfterMs, fallback.
const OUT_LEN: usize = 6;

thread_local! {
    /// The output array's data, bound once per JS thread (main or worker) by index.js. The
    /// array is kept alive by a leaked napi reference, and V8 never moves an ArrayBuffer's
    /// backing store, so the pointer stays valid for the life of that thread's environment.
    static OUT: Cell<*mut f64> = const { Cell::new(ptr::null_mut()) };
}

/// Registers the internal functions index.js uses (they are not part of the typed API).
#[napi(module_exports)]
pub fn register(exports: Object, env: Env) -> napi::Result<()> {
    for (name, cb) in [
        (
            c"__bindOutput",
            bind_output as unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value,
        ),
        (c"__checkSyncInto", check_sync_into),
    ] {
        let mut f = ptr::null_mut();
        // SAFETY: a valid env during module init; `name` is NUL-terminated.
        let status = unsafe {
            sys::napi_create_function(env.raw(), name.as_ptr(), usize::MAX as isize, Some(cb), ptr::null_mut(), &mut f)
        };
        if status != sys::Status::napi_ok {
            return Err(napi::Error::from_status(napi::Status::from(status)));
        }
        // SAFETY: `exports` and `f` are live values in `env`.
        let status = unsafe { sys::napi_set_named_property(env.raw(), exports.value().value, name.as_ptr(), f) };
        if status != sys::Status::napi_ok {
            return Err(napi::Error::from_status(napi::Status::from(status)));
        }
    }
    Ok(())
}

/// Runs `f` as a napi callback body: errors become our JS errors, a panic becomes a thrown
/// `Error` (code `panic`) instead of unwinding into Node.
fn guard(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    f: fn(sys::napi_env, &[sys::napi_value; 3]) -> CoreResult<()>,
) -> sys::napi_value {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut argc = 3usize;
        let mut argv = [ptr::null_mut(); 3];
        // SAFETY: `info` is the current callback's; `argv` has room for `argc` values, and napi
        // fills missing arguments with `undefined`.
        let status =
            unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut()) };
        if status != sys::Status::napi_ok {
            return Err(config("arguments", "could not be read"));
        }
        f(env, &argv)
    }));
    match outcome {
        Ok(Ok(())) => ptr::null_mut(),
        Ok(Err(e)) => {
            let error = crate::error::to_napi(env, e);
            // SAFETY: on the JS thread, inside a callback; throwing is how napi reports errors.
            unsafe { napi::JsError::from(error).throw_into(env) };
            ptr::null_mut()
        }
        Err(_) => {
            // SAFETY: as above.
            unsafe {
                sys::napi_throw_error(env, c"panic".as_ptr(), c"throttlekit: internal panic (please report)".as_ptr())
            };
            ptr::null_mut()
        }
    }
}

unsafe extern "C" fn bind_output(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, argv| {
        let mut kind = sys::TypedarrayType::int8_array;
        let mut len = 0usize;
        let mut data = ptr::null_mut();
        // SAFETY: a live value of the current call; non-typed-arrays fail with a status.
        let status = unsafe {
            sys::napi_get_typedarray_info(
                env,
                argv[0],
                &mut kind,
                &mut len,
                &mut data,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        if status != sys::Status::napi_ok
            || kind != sys::TypedarrayType::float64_array
            || len < OUT_LEN
            || data.is_null()
        {
            return Err(config("output", &format!("must be a Float64Array of length >= {OUT_LEN}")));
        }
        let mut keep = ptr::null_mut();
        // SAFETY: as above. The reference is deliberately never released (see `OUT`).
        unsafe { sys::napi_create_reference(env, argv[0], 1, &mut keep) };
        OUT.with(|o| o.set(data.cast()));
        Ok(())
    })
}

unsafe extern "C" fn check_sync_into(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, argv| {
        let out = OUT.with(Cell::get);
        if out.is_null() {
            return Err(config("output", "is not bound (load the package through index.js)"));
        }
        let limiter = limiter(env, argv[0])?;
        // SAFETY: live values of the current call.
        let (key, cost) =
            unsafe { (Unknown::from_raw_unchecked(env, argv[1]), Unknown::from_raw_unchecked(env, argv[2])) };
        let cost = convert::cost(&cost)?;
        let d = convert::with_str(&key, "key", |k| limiter.inner.check_sync(k, cost))?;
        // SAFETY: `out` points at OUT_LEN f64s (checked by `bind_output`), on this thread only.
        let out = unsafe { std::slice::from_raw_parts_mut(out, OUT_LEN) };
        out[0] = if d.allowed { 1.0 } else { 0.0 };
        out[1] = d.limit as f64;
        out[2] = d.remaining as f64;
        out[3] = d.reset_at as f64;
        out[4] = d.retry_after_ms as f64;
        out[5] = if d.fallback { 1.0 } else { 0.0 };
        Ok(())
    })
}

/// The `Limiter` wrapped by `value`: napi's type tag proves the wrapped pointer is one (so
/// `checkSync.call({})` or another class's instance is `config_invalid`, never a bad cast).
fn limiter<'a>(env: sys::napi_env, value: sys::napi_value) -> CoreResult<&'a Limiter> {
    let mut p = ptr::null_mut();
    // SAFETY: a live value of the current call; non-objects and unwrapped objects fail.
    let unwrapped = unsafe { sys::napi_unwrap(env, value, &mut p) } == sys::Status::napi_ok;
    // SAFETY: as above.
    if !unwrapped || p.is_null() || unsafe { validate_type_tag(env, value, &Limiter::type_tag(), "Limiter") }.is_err() {
        return Err(config("this", "must be a Limiter"));
    }
    // SAFETY: the tag proves napi-rs wrapped a `Limiter` at `p`; `value` keeps it alive for
    // the duration of this call.
    Ok(unsafe { &*p.cast::<Limiter>() })
}
