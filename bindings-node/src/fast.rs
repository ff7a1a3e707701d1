//! The fast path of `Limiter#checkSync`: a raw napi callback that talks to index.js through a
//! buffer they share. index.js writes the limiter's handle, the cost and (for a short ASCII
//! key) the key's bytes into it and calls `__checkSync()` with no arguments; the callback writes
//! the decision back, and index.js builds the returned object in JavaScript.
//!
//! Why: napi-rs's generated glue for a method (receiver unwrap, borrow tracking) plus building
//! a five-property object through napi (one `napi_set_named_property`, with its key string, per
//! field) costs about a microsecond, several times the decision itself. Even through raw napi,
//! each value read costs ~10-15 ns here (a number: `IsNumber` + `Value`; a string: V8's UTF-8
//! writer alone ~30 ns for `user:123`), while a JIT-compiled typed-array store costs ~1 ns. So a
//! call is `napi_get_cb_info`, a handle lookup (see handles.rs) and the core's `check_sync`.
//! Keys that are long or not ASCII, and costs that are not numbers, are passed as arguments
//! and read as before, so they mean (and fail) exactly as everywhere else.
//!
//! Everything a call needs (the shared array, the key buffer, the handle table) is a
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
use crate::http::{FieldsCore, RateLimitFields};
use crate::limiter::Limiter;

/// Slots of the shared `Float64Array`. Written here: allowed (0/1), limit, remaining, resetAt,
/// retryAfterMs, fallback (0/1), by `__fieldsValues` the id of its lines' names, and by the
/// fields calls core's action. Written by index.js before each call: the handle, the cost, and
/// the key's length when it put the key's bytes in the buffer after the slots (else -1).
pub(crate) const IO_LEN: usize = 11;
/// Where index.js puts the limiter's handle.
pub(crate) const IO_HANDLE: usize = 6;
/// Where index.js puts the cost when it is a number (1 for `undefined`).
pub(crate) const IO_COST: usize = 7;
/// Where index.js puts the length of an ASCII key it copied (-1: the key is an argument).
pub(crate) const IO_KEY_LEN: usize = 8;
/// Where `__fieldsValues` writes the id of its lines' names (see `Layouts`; -1: none, the
/// lines came back joined as `__fieldsCheck`'s).
pub(crate) const IO_NAMES: usize = 9;
/// Where `__fieldsCheck` and `__fieldsValues` write the code of core's action for the request
/// (`throttlekit::http::Action::code`: 0 forward, 1 shadow, 2 deny).
pub(crate) const IO_ACTION: usize = 10;
/// Room for key bytes after the slots, in the same `ArrayBuffer`.
pub(crate) const KEY_BYTES: usize = 64;

/// What the callbacks of one JS environment share. Each function holds an `Rc` of it as its
/// napi data, released by the function's finalizer, so the pointer napi passes back is valid
/// for as long as the function can be called.
#[derive(Default)]
pub(crate) struct Context {
    /// The shared buffer's data (IO_LEN slots, then KEY_BYTES bytes), made once by `bind_io`
    /// for index.js. It is kept alive by a napi reference that is never released (the
    /// environment frees it at teardown), V8 never moves an ArrayBuffer's backing store, and
    /// only index.js ever holds the buffer (so nobody can detach it): the pointer stays valid.
    pub(crate) io: Cell<*mut f64>,
    /// Reused UTF-8 buffer for keys, so a call allocates nothing.
    pub(crate) key: RefCell<Vec<u8>>,
    /// Reused buffer for `__fieldsCheck`'s joined lines and `__fieldsValues`' values.
    lines: RefCell<String>,
    /// The names of `__fieldsValues`' lines, and every list of names it has seen.
    layouts: RefCell<Layouts>,
    handles: handles::Shared,
    /// The `RateLimitFields` of `__fieldsCheck`, by handle (as `handles` for `Limiter`s).
    fields: handles::Shared<FieldsCore>,
    /// The `AdaptiveLimiter`s of `__adaptiveTryAcquire` and `__adaptiveRelease`, by handle
    /// (adaptive_fast.rs).
    pub(crate) adaptive: handles::Shared<crate::adaptive::AdaptiveCore>,
    /// The limiters whose Promise calls index.js carries over its socket, by handle
    /// (redis_fast.rs).
    #[cfg(feature = "redis")]
    pub(crate) redis: handles::Shared<crate::limiter::RedisLimiter>,
}

pub(crate) type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

/// Registers the internal functions index.js uses (they are not part of the typed API).
#[napi(module_exports)]
pub fn register(exports: Object, env: Env) -> napi::Result<()> {
    let context = Rc::new(Context { key: RefCell::new(vec![0; 256]), ..Context::default() });
    let functions: [(&CStr, Callback); 8] = [
        (c"__bindIo", bind_io),
        (c"__handle", handle),
        (c"__checkSync", check_sync),
        (c"__liveHandles", live_handles),
        (c"__fieldsHandle", fields_handle),
        (c"__fieldsCheck", fields_check),
        (c"__fieldsValues", fields_values),
        (c"__fieldsNames", fields_names),
    ];
    let functions = functions.into_iter().chain(crate::adaptive_fast::FUNCTIONS);
    #[cfg(feature = "redis")]
    let functions = functions.chain(crate::redis_fast::FUNCTIONS);
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
/// `Error` (code `panic`) instead of unwinding into Node. `f` gets the first three arguments
/// (`undefined` where missing) and how many were passed.
pub(crate) fn guard(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    f: fn(sys::napi_env, &Context, &[sys::napi_value; 3], usize) -> CoreResult<sys::napi_value>,
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
        f(env, context, &argv, argc)
    }));
    match outcome {
        Ok(Ok(value)) => value,
        Ok(Err(e)) => {
            let error = crate::error::to_napi(env, e);
            // SAFETY: on the JS thread, inside a callback; throwing is how napi reports errors.
            unsafe { napi::JsError::from(error).throw_into(env) };
            ptr::null_mut()
        }
        Err(payload) => {
            // The panic's own text goes with it (a NUL in it would end the C string early).
            let text =
                format!("throttlekit: internal panic (please report): {}", throttlekit::panic_message(&*payload));
            let text = std::ffi::CString::new(text.replace('\0', " ")).unwrap_or_default();
            // SAFETY: as above; `text` outlives the call, which copies it.
            unsafe { sys::napi_throw_error(env, c"panic".as_ptr(), text.as_ptr()) };
            ptr::null_mut()
        }
    }
}

/// `__bindIo()`: makes this environment's shared buffer, once, and returns `{io, keyBytes}`: a
/// `Float64Array` of IO_LEN slots and a `Uint8Array` of the KEY_BYTES after them.
///
/// Made here rather than in JavaScript, so that no JS global (`ArrayBuffer`, a typed array
/// constructor or getter, a setter on `Object.prototype`) that user code may have replaced ever
/// sees it: the native side keeps a pointer into it, so nobody but index.js may hold it (and,
/// say, detach it). A second call is refused.
unsafe extern "C" fn bind_io(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, _, _| {
        if !context.io.get().is_null() {
            return Err(config("io", "is already bound"));
        }
        let failed = |_| config("io", "could not be created");
        let mut data = ptr::null_mut();
        let mut buffer = ptr::null_mut();
        let mut io = ptr::null_mut();
        let mut key_bytes = ptr::null_mut();
        let mut result = ptr::null_mut();
        let mut keep = ptr::null_mut();
        // SAFETY: on the JS thread, inside a callback; every out-pointer is a local. The
        // reference is deliberately never released (see `Context::io`).
        unsafe {
            status(sys::napi_create_arraybuffer(env, IO_LEN * 8 + KEY_BYTES, &mut data, &mut buffer))
                .map_err(failed)?;
            status(sys::napi_create_typedarray(env, sys::TypedarrayType::float64_array, IO_LEN, buffer, 0, &mut io))
                .map_err(failed)?;
            status(sys::napi_create_typedarray(
                env,
                sys::TypedarrayType::uint8_array,
                KEY_BYTES,
                buffer,
                IO_LEN * 8,
                &mut key_bytes,
            ))
            .map_err(failed)?;
            status(sys::napi_create_reference(env, buffer, 1, &mut keep)).map_err(failed)?;
            status(sys::napi_create_object(env, &mut result)).map_err(failed)?;
            // Defined, not assigned: no setter of `Object.prototype` runs.
            let properties = [property(c"io", io), property(c"keyBytes", key_bytes)];
            status(sys::napi_define_properties(env, result, properties.len(), properties.as_ptr())).map_err(failed)?;
        }
        if data.is_null() {
            return Err(config("io", "could not be created"));
        }
        context.io.set(data.cast());
        Ok(result)
    })
}

fn property(name: &'static CStr, value: sys::napi_value) -> sys::napi_property_descriptor {
    sys::napi_property_descriptor {
        utf8name: name.as_ptr(),
        name: ptr::null_mut(),
        method: None,
        getter: None,
        setter: None,
        value,
        attributes: sys::PropertyAttributes::default,
        data: ptr::null_mut(),
    }
}

fn status(s: sys::napi_status) -> Result<(), sys::napi_status> {
    if s == sys::Status::napi_ok { Ok(()) } else { Err(s) }
}

/// `__handle(limiter)`: the limiter's handle (a number), registering it on first use.
/// index.js calls it once per `Limiter` object and keeps the answer in a private field.
unsafe extern "C" fn handle(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv, _| {
        let h = limiter(env, argv[0])?.handle(&context.handles)?;
        number(env, h)
    })
}

/// `__checkSync([key[, cost]])`: decides for the limiter whose handle is in the shared array
/// and writes the decision there. The key is the buffer's when its length is there (index.js
/// copies short ASCII keys: a JIT-compiled loop beats napi's string read), else the argument;
/// the cost is the array's unless passed (index.js passes a cost that is not a number, for its
/// error).
unsafe extern "C" fn check_sync(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv, argc| {
        let io = context.io.get();
        if io.is_null() {
            return Err(config("io", "is not bound (load the package through index.js)"));
        }
        // SAFETY: `io` points at IO_LEN f64s (checked by `bind_io`), used on this thread only,
        // and no JS runs while this slice lives.
        let io = unsafe { std::slice::from_raw_parts_mut(io, IO_LEN) };
        let cost = if argc < 2 {
            io[IO_COST]
        } else {
            let mut cost = f64::NAN;
            // SAFETY: a live value of the current call; a non-number fails with a status.
            if unsafe { sys::napi_get_value_double(env, argv[1], &mut cost) } != sys::Status::napi_ok {
                return Err(config("cost", "must be a positive integer"));
            }
            cost
        };
        // 1, the usual cost, without the validator's libm call (`fract`); the same answer.
        let cost = if cost == 1.0 { 1 } else { validate::cost_from_f64(cost)? };
        let table = context.handles.try_borrow().map_err(|_| config("this", "is busy"))?;
        let limiter = table.get(io[IO_HANDLE]).ok_or_else(|| config("this", "must be a Limiter"))?;
        let key_len = io[IO_KEY_LEN];
        let d = if (0.0..=KEY_BYTES as f64).contains(&key_len) {
            // SAFETY: the KEY_BYTES bytes after the slots are in the same buffer (checked by
            // `bind_io`); `key_len` is at most KEY_BYTES.
            let bytes = unsafe { std::slice::from_raw_parts(io.as_ptr().add(IO_LEN).cast::<u8>(), key_len as usize) };
            // index.js copies only ASCII; anything else is refused, never misread.
            let key = std::str::from_utf8(bytes).map_err(|_| config("key", "must be valid UTF-16"))?;
            limiter.check_sync(key, cost)?
        } else {
            convert::with_str_in(&context.key, env, argv[0], "key", |k| limiter.check_sync(k, cost))?
        };
        put_decision(io, &d);
        Ok(ptr::null_mut())
    })
}

/// Writes a decision into the shared buffer's first six slots, where index.js reads it:
/// allowed, limit, remaining, reset_at, retry_after_ms, fallback (booleans as 0/1).
pub(crate) fn put_decision(io: &mut [f64], d: &throttlekit::Decision) {
    io[..6].copy_from_slice(&crate::http::decided(d));
}

/// `__fieldsHandle(fields)`: the handle of a `RateLimitFields` (a number), registering it on
/// first use; `null` when `fields` is not one (index.js then lets the native method answer).
/// index.js calls it once per object and keeps the answer in a private field, as for limiters.
unsafe extern "C" fn fields_handle(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv, _| match fields(env, argv[0]) {
        Some(f) => number(env, f.handle(&context.fields)?),
        None => null(env),
    })
}

/// `__fieldsCheck([key[, cost]])`: `RateLimitFields#checkSync` through the shared buffer, for
/// the middlewares' hot path (index.js): the fields' handle (from `__fieldsHandle`) in the
/// handle slot, the key as for `__checkSync` (its bytes in the buffer when its length is there,
/// else the argument), the cost the array's unless passed; the decision goes to slots 0-5 and
/// the lines come back as one string, `name\nvalue\n...` (no header name or value holds a line
/// break). The checks, their order, the decision and the errors are `checkSync`'s (http.rs:
/// `sync_limiter`, then `check_joined`).
///
/// Why: napi-rs building `{decision: {...}, lines: [...]}` (eleven property sets and four
/// strings) was 4-5 µs of a 5 µs call; a napi-rs function returning one string and filling a
/// `Float64Array` still spent about half of its 1.4 µs in napi-rs's glue (borrow scopes, four
/// arguments, the typed array's info) and V8's UTF-8 read of the key (perf). Finding the
/// receiver by `napi_unwrap` and its type tag was then ~12 % of the rest (perf), hence the
/// handle; and core renders the lines straight into the reused `lines` buffer.
unsafe extern "C" fn fields_check(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv, argc| fields_call(env, context, argv, argc, false))
}

/// `__fieldsValues([key[, cost]])`: `__fieldsCheck`, with the lines' values alone joined by
/// '\n' (`value\nvalue...`) and the id of their names in the IO_NAMES slot (`__fieldsNames`
/// gives the names). The names of one limiter's lines hardly ever change (the family's, and
/// `Retry-After` on a denial), so a middleware reads them once per id and hands its framework
/// the same name strings every time: Fastify's `reply.header` lowercases each name and stores it
/// as a property key, which for a new string means two allocations and a string-table lookup.
/// When more than MAX_LAYOUTS lists of names were seen (never, for the families core has), the
/// slot holds -1 and the lines come back joined as from `__fieldsCheck`.
unsafe extern "C" fn fields_values(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv, argc| fields_call(env, context, argv, argc, true))
}

/// `__fieldsNames(id)`: the names of the lines `__fieldsValues` answered with the names id
/// `id`, joined by '\n' ('' for none); `config_invalid` for an id it never gave.
unsafe extern "C" fn fields_names(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv, _| {
        let mut id = f64::NAN;
        // SAFETY: a live value of the current call; a non-number fails with a status.
        let _ = unsafe { sys::napi_get_value_double(env, argv[0], &mut id) };
        let layouts = context.layouts.try_borrow().map_err(|_| config("this", "is busy"))?;
        let names = (id >= 0.0 && id.fract() == 0.0)
            .then(|| layouts.seen.get(id as usize))
            .flatten()
            .ok_or_else(|| config("id", "is not a names id"))?;
        string(env, &names.join("\n"))
    })
}

/// The lists of line names `__fieldsValues` has seen, each's index its id.
#[derive(Default)]
struct Layouts {
    /// The names of the current call's lines.
    current: Vec<&'static str>,
    seen: Vec<Vec<&'static str>>,
}

/// How many lists of names get an id (a single limiter's lines have a handful).
const MAX_LAYOUTS: usize = 64;

impl Layouts {
    /// The id of `current` (-1 when none is left to give).
    fn id(&mut self) -> f64 {
        if let Some(i) = self.seen.iter().position(|names| *names == self.current) {
            return i as f64;
        }
        if self.seen.len() >= MAX_LAYOUTS {
            return -1.0;
        }
        self.seen.push(self.current.clone());
        (self.seen.len() - 1) as f64
    }
}

/// A [`throttlekit::http::LineSink`] that keeps the names in `names` and writes the values
/// joined by '\n' (no header value holds a line break).
struct Values<'a> {
    values: &'a mut String,
    names: &'a mut Vec<&'static str>,
}

impl throttlekit::http::LineSink for Values<'_> {
    fn start(&mut self, name: &'static str) -> &mut String {
        if !self.names.is_empty() {
            self.values.push('\n');
        }
        self.names.push(name);
        self.values
    }
}

/// The body of `__fieldsCheck` (`values`: false) and `__fieldsValues` (true).
fn fields_call(
    env: sys::napi_env,
    context: &Context,
    argv: &[sys::napi_value; 3],
    argc: usize,
    values: bool,
) -> CoreResult<sys::napi_value> {
    let io = context.io.get();
    if io.is_null() {
        return Err(config("io", "is not bound (load the package through index.js)"));
    }
    // SAFETY: `io` points at IO_LEN f64s (checked by `bind_io`), used on this thread only,
    // and no JS runs while this slice lives.
    let io = unsafe { std::slice::from_raw_parts_mut(io, IO_LEN) };
    let table = context.fields.try_borrow().map_err(|_| config("this", "is busy"))?;
    let f = table.get(io[IO_HANDLE]).ok_or_else(|| config("this", "must be a RateLimitFields"))?;
    let l = f.sync_limiter()?;
    // Read after the key (so a bad key's error wins, as in `checkSync`).
    let cost_in_io = io[IO_COST];
    let cost = || -> CoreResult<u64> {
        let cost = if argc < 2 {
            cost_in_io
        } else {
            let mut cost = f64::NAN;
            // SAFETY: a live value of the current call; a non-number fails with a status.
            if unsafe { sys::napi_get_value_double(env, argv[1], &mut cost) } != sys::Status::napi_ok {
                return Err(config("cost", "must be a positive integer"));
            }
            cost
        };
        // 1, the usual cost, without the validator's libm call (`fract`); the same answer.
        if cost == 1.0 { Ok(1) } else { validate::cost_from_f64(cost) }
    };
    let mut lines = context.lines.try_borrow_mut().map_err(|_| config("this", "is busy"))?;
    lines.clear();
    let mut layouts = context.layouts.try_borrow_mut().map_err(|_| config("this", "is busy"))?;
    layouts.current.clear();
    let mut check = |key: &str| -> CoreResult<(throttlekit::Decision, throttlekit::http::Action)> {
        if values {
            f.check_into(l, key, cost()?, &mut Values { values: &mut lines, names: &mut layouts.current })
        } else {
            f.check_joined(l, key, cost()?, &mut lines)
        }
    };
    let key_len = io[IO_KEY_LEN];
    let (d, action) = if (0.0..=KEY_BYTES as f64).contains(&key_len) {
        // SAFETY: as in `check_sync`.
        let bytes = unsafe { std::slice::from_raw_parts(io.as_ptr().add(IO_LEN).cast::<u8>(), key_len as usize) };
        let key = std::str::from_utf8(bytes).map_err(|_| config("key", "must be valid UTF-16"))?;
        check(key)?
    } else {
        convert::with_str_in(&context.key, env, argv[0], "key", &mut check)?
    };
    put_decision(io, &d);
    io[IO_ACTION] = f64::from(action.code());
    if values {
        let id = layouts.id();
        io[IO_NAMES] = id;
        if id < 0.0 {
            // No id: the names go back into the string, as `__fieldsCheck` writes it.
            let joined = layouts.current.iter().zip(lines.split('\n')).fold(String::new(), |mut j, (name, value)| {
                if !j.is_empty() {
                    j.push('\n');
                }
                j.push_str(name);
                j.push('\n');
                j.push_str(value);
                j
            });
            *lines = joined;
        }
    }
    string(env, &lines)
}

/// A JS string of `s`. Header lines are ASCII (names, integers, escaped sf-strings, base64),
/// which V8 copies as Latin-1 without the UTF-8 decoder's pass; anything else goes as UTF-8.
fn string(env: sys::napi_env, s: &str) -> CoreResult<sys::napi_value> {
    let mut v = ptr::null_mut();
    let (p, len) = (s.as_ptr().cast(), s.len() as isize);
    // SAFETY: on the JS thread, inside a callback; `s` is valid UTF-8 of its length, and
    // Latin-1 of it when it is ASCII.
    let status = unsafe {
        if s.is_ascii() {
            sys::napi_create_string_latin1(env, p, len, &mut v)
        } else {
            sys::napi_create_string_utf8(env, p, len, &mut v)
        }
    };
    if status != sys::Status::napi_ok {
        return Err(config("result", "could not be created"));
    }
    Ok(v)
}

/// The `RateLimitFields` wrapped by `value` (None: not one).
fn fields<'a>(env: sys::napi_env, value: sys::napi_value) -> Option<&'a RateLimitFields> {
    unwrap_tagged(env, value, "RateLimitFields")
}

pub(crate) fn null(env: sys::napi_env) -> CoreResult<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: on the JS thread, inside a callback.
    if unsafe { sys::napi_get_null(env, &mut v) } != sys::Status::napi_ok {
        return Err(config("result", "could not be created"));
    }
    Ok(v)
}

/// `__liveHandles([kind])`: how many limiters (or, with `'fields'`, `RateLimitFields`) this
/// environment's tables list (for the tests that finalizing an object frees its slot).
unsafe extern "C" fn live_handles(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv, _| {
        let busy = |_| config("handles", "are busy");
        let mut kind = sys::ValueType::napi_undefined;
        // SAFETY: a live value of the current call (`undefined` when omitted).
        unsafe { sys::napi_typeof(env, argv[0], &mut kind) };
        let live = if kind == sys::ValueType::napi_string {
            context.fields.try_borrow().map_err(busy)?.live()
        } else {
            context.handles.try_borrow().map_err(busy)?.live()
        };
        number(env, live as f64)
    })
}

pub(crate) fn number(env: sys::napi_env, n: f64) -> CoreResult<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: on the JS thread, inside a callback.
    if unsafe { sys::napi_create_double(env, n, &mut v) } != sys::Status::napi_ok {
        return Err(config("result", "could not be created"));
    }
    Ok(v)
}

/// The `Limiter` wrapped by `value`: napi's type tag proves the wrapped pointer is one (so
/// `checkSync.call({})` or another class's instance is `config_invalid`, never a bad cast).
pub(crate) fn limiter<'a>(env: sys::napi_env, value: sys::napi_value) -> CoreResult<&'a Limiter> {
    unwrap_tagged(env, value, "Limiter").ok_or_else(|| config("this", "must be a Limiter"))
}

/// The napi-rs class instance of type `T` (named `name`) that `value` wraps, or `None`: napi's
/// type tag proves the wrapped pointer is a `T`, so an object of another class, or none, is
/// never cast.
pub(crate) fn unwrap_tagged<'a, T: TypeTag>(env: sys::napi_env, value: sys::napi_value, name: &str) -> Option<&'a T> {
    let mut p = ptr::null_mut();
    // SAFETY: a live value of the current call; non-objects and unwrapped objects fail.
    let unwrapped = unsafe { sys::napi_unwrap(env, value, &mut p) } == sys::Status::napi_ok;
    // SAFETY: as above.
    if !unwrapped || p.is_null() || unsafe { validate_type_tag(env, value, &T::type_tag(), name) }.is_err() {
        return None;
    }
    // SAFETY: the tag proves napi-rs wrapped a `T` at `p`; `value` keeps it alive for the
    // duration of this call.
    Some(unsafe { &*p.cast::<T>() })
}
