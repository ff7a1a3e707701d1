//! The fast path of `Limiter#checkSync`: a raw napi callback that writes the decision into a
//! `Float64Array` shared with index.js, which builds the returned object in JavaScript.
//!
//! Why: napi-rs's generated glue for a method (receiver unwrap, borrow tracking) plus building
//! a five-property object through napi (one `napi_set_named_property`, with its key string, per
//! field) costs about a microsecond, several times the decision itself. Here a call does
//! `napi_get_cb_info`, reads the limiter's handle (a number; see handles.rs), the cost and the
//! key (into a reused buffer), and runs the core's `check_sync`; V8 then allocates the object
//! literal on the JS side. index.js passes `cost === undefined` as 1, which is what it means.
//!
//! Everything a call needs (the output array, the key buffer, the handle table) is a
//! [`Context`] per JS environment (main thread or worker), reached through the data pointer
//! napi hands every callback: no thread-locals, and workers get their own for free.
//!
//! The semantics are the napi-rs method's (`Limiter::check_sync` in limiter.rs): a test replays
//! random timelines through both and compares every field.

// napi-derive leaves out export registration under cfg(test), so the unit-test build sees
// these functions as unused.
#![cfg_attr(test, allow(dead_code))]

use std::cell::{Cell, RefCell};
use std::ffi::{CStr, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::rc::Rc;

use napi::bindgen_prelude::{Object, TypeTag, validate_type_tag};
use napi::{Env, JsValue, sys};
use napi_derive::napi;
use throttlekit::validate;

use crate::convert;
use crate::error::{CoreResult, config};
use crate::handles;
use crate::limiter::Limiter;

/// Slots of the output array: allowed (0/1), limit, remaining, resetAt, retryAfterMs, fallback.
const OUT_LEN: usize = 6;

/// What the callbacks of one JS environment share. Each function holds an `Rc` of it as its
/// napi data, released by the function's finalizer, so the pointer napi passes back is valid
/// for as long as the function can be called.
#[derive(Default)]
struct Context {
    /// The output array's data, bound once by index.js. The array is kept alive by a napi
    /// reference that is never released (the environment frees it at teardown), and V8 never
    /// moves an ArrayBuffer's backing store, so the pointer stays valid.
    out: Cell<*mut f64>,
    /// Reused UTF-8 buffer for keys, so a call allocates nothing.
    key: RefCell<Vec<u8>>,
    handles: handles::Shared,
}

type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

/// Registers the internal functions index.js uses (they are not part of the typed API).
#[napi(module_exports)]
pub fn register(exports: Object, env: Env) -> napi::Result<()> {
    let context = Rc::new(Context { key: RefCell::new(vec![0; 256]), ..Context::default() });
    let functions: [(&CStr, Callback); 4] = [
        (c"__bindOutput", bind_output),
        (c"__handle", handle),
        (c"__checkSync", check_sync),
        (c"__liveHandles", live_handles),
    ];
    for (name, cb) in functions {
        let data = Box::into_raw(Box::new(context.clone()));
        let mut f = ptr::null_mut();
        // SAFETY: a valid env during module init; `name` is NUL-terminated; `data` is released
        // by `release` when the function is collected (or, on failure, right here).
        let status = unsafe {
            let mut status =
                sys::napi_create_function(env.raw(), name.as_ptr(), usize::MAX as isize, Some(cb), data.cast(), &mut f);
            if status == sys::Status::napi_ok {
                status =
                    sys::napi_add_finalizer(env.raw(), f, data.cast(), Some(release), ptr::null_mut(), ptr::null_mut());
            }
            if status != sys::Status::napi_ok {
                drop(Box::from_raw(data));
            }
            status
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

/// The finalizer of each function: drops its `Rc<Context>`.
unsafe extern "C" fn release(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the `Box<Rc<Context>>` made for this function in `register`, and napi
    // calls a finalizer once.
    drop(unsafe { Box::from_raw(data.cast::<Rc<Context>>()) });
}

/// Runs `f` as a napi callback body: errors become our JS errors, a panic becomes a thrown
/// `Error` (code `panic`) instead of unwinding into Node.
fn guard(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    f: fn(sys::napi_env, &Context, &[sys::napi_value; 3]) -> CoreResult<sys::napi_value>,
) -> sys::napi_value {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut argc = 3usize;
        let mut argv = [ptr::null_mut(); 3];
        let mut data = ptr::null_mut();
        // SAFETY: `info` is the current callback's; `argv` has room for `argc` values, and napi
        // fills missing arguments with `undefined`.
        let status =
            unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), &mut data) };
        if status != sys::Status::napi_ok || data.is_null() {
            return Err(config("arguments", "could not be read"));
        }
        // SAFETY: every function made in `register` has a `Box<Rc<Context>>` as its data, which
        // lives until the function's finalizer, so at least for this call.
        let context = unsafe { &**data.cast::<Rc<Context>>() };
        f(env, context, &argv)
    }));
    match outcome {
        Ok(Ok(value)) => value,
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
    guard(env, info, |env, context, argv| {
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
        // SAFETY: as above. The reference is deliberately never released (see `Context::out`).
        if unsafe { sys::napi_create_reference(env, argv[0], 1, &mut keep) } != sys::Status::napi_ok {
            return Err(config("output", "could not be kept alive"));
        }
        context.out.set(data.cast());
        Ok(ptr::null_mut())
    })
}

/// `__handle(limiter)`: the limiter's handle (a number), registering it on first use.
/// index.js calls it once per `Limiter` object and keeps the answer in a private field.
unsafe extern "C" fn handle(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv| {
        let h = limiter(env, argv[0])?.handle(&context.handles)?;
        number(env, h)
    })
}

/// `__checkSync(handle, key, cost)`: decides and writes the decision into the output array.
unsafe extern "C" fn check_sync(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv| {
        let out = context.out.get();
        if out.is_null() {
            return Err(config("output", "is not bound (load the package through index.js)"));
        }
        let mut handle = f64::NAN;
        let mut cost = f64::NAN;
        // SAFETY: live values of the current call; a non-number fails with a status, which
        // leaves NaN behind (not a handle, not a cost).
        unsafe {
            sys::napi_get_value_double(env, argv[0], &mut handle);
            if sys::napi_get_value_double(env, argv[2], &mut cost) != sys::Status::napi_ok {
                return Err(config("cost", "must be a positive integer"));
            }
        }
        let cost = validate::cost_from_f64(cost)?;
        let table = context.handles.try_borrow().map_err(|_| config("this", "is busy"))?;
        let limiter = table.get(handle).ok_or_else(|| config("this", "must be a Limiter"))?;
        let d = convert::with_str_in(&context.key, env, argv[1], "key", |k| limiter.check_sync(k, cost))?;
        // SAFETY: `out` points at OUT_LEN f64s (checked by `bind_output`), on this thread only.
        let out = unsafe { std::slice::from_raw_parts_mut(out, OUT_LEN) };
        out[0] = if d.allowed { 1.0 } else { 0.0 };
        out[1] = d.limit as f64;
        out[2] = d.remaining as f64;
        out[3] = d.reset_at as f64;
        out[4] = d.retry_after_ms as f64;
        out[5] = if d.fallback { 1.0 } else { 0.0 };
        Ok(ptr::null_mut())
    })
}

/// `__liveHandles()`: how many limiters this environment's table lists (for the test that
/// finalizing a `Limiter` frees its slot).
unsafe extern "C" fn live_handles(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, _| {
        let live = context.handles.try_borrow().map_err(|_| config("handles", "are busy"))?.live();
        number(env, live as f64)
    })
}

fn number(env: sys::napi_env, n: f64) -> CoreResult<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: on the JS thread, inside a callback.
    if unsafe { sys::napi_create_double(env, n, &mut v) } != sys::Status::napi_ok {
        return Err(config("result", "could not be created"));
    }
    Ok(v)
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
