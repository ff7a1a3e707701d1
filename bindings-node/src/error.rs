//! Every conversion from a throttlekit error to a JavaScript error, in one place.
//!
//! A core [`throttlekit::Error`] becomes a plain JS `Error` whose `code` is the stable string
//! (`config_invalid`, `store_unavailable`, ...), plus `retryAfterMs` when the core knows it
//! (`queue_full`). napi-rs would otherwise set `code` to its own status names (`InvalidArg`),
//! which are not part of our contract, so every fallible entry point converts here — also the
//! asynchronous ones, whose errors are built on the JS thread by [`Settled`].

use napi::bindgen_prelude::{PromiseRaw, ToNapiValue, TypeName, Unknown};
use napi::{Env, Status, ValueType, sys};
use throttlekit::Error as CoreError;

/// A core result, the currency of everything below the JS boundary.
pub type CoreResult<T> = throttlekit::Result<T>;

/// Builds the JS error object for `e` (`message`, `code`, and `retryAfterMs` when known).
fn build(env: sys::napi_env, e: &CoreError) -> napi::Result<sys::napi_value> {
    let code = e.code().as_str();
    let message = e.message();
    let mut js_code = std::ptr::null_mut();
    let mut js_message = std::ptr::null_mut();
    let mut error = std::ptr::null_mut();
    // SAFETY: `env` is the live env of the current call (we are on the JS thread), and every
    // out-pointer is a local that outlives the call.
    unsafe {
        check(sys::napi_create_string_utf8(env, code.as_ptr().cast(), code.len() as isize, &mut js_code))?;
        check(sys::napi_create_string_utf8(env, message.as_ptr().cast(), message.len() as isize, &mut js_message))?;
        check(sys::napi_create_error(env, js_code, js_message, &mut error))?;
        if let Some(ms) = e.retry_after_ms() {
            let mut js_ms = std::ptr::null_mut();
            check(sys::napi_create_int64(env, ms, &mut js_ms))?;
            check(sys::napi_set_named_property(env, error, c"retryAfterMs".as_ptr(), js_ms))?;
        }
    }
    Ok(error)
}

/// The JS error object for `e`, as a value (a Promise that rejects with it, settled from JS).
pub(crate) fn value(env: sys::napi_env, e: &CoreError) -> napi::Result<sys::napi_value> {
    build(env, e)
}

fn check(status: sys::napi_status) -> napi::Result<()> {
    if status == sys::Status::napi_ok { Ok(()) } else { Err(napi::Error::from_status(Status::from(status))) }
}

/// Converts `e` into a `napi::Error` that napi-rs throws (or rejects with) as exactly the
/// error object built by [`build`]. If the engine cannot even allocate that object, the
/// fallback still carries the code in its message.
pub fn to_napi(env: sys::napi_env, e: CoreError) -> napi::Error {
    match build(env, &e) {
        // SAFETY: `value` was just created in `env`, on this thread.
        Ok(value) => napi::Error::from(unsafe { Unknown::from_raw_unchecked(env, value) }),
        Err(_) => napi::Error::new(Status::GenericFailure, e.to_string()),
    }
}

/// Lifts core results into napi results with our error objects.
pub trait OrThrow<T> {
    /// The value, or the JS error for the core error.
    fn or_throw(self, env: &Env) -> napi::Result<T>;
}

impl<T> OrThrow<T> for CoreResult<T> {
    #[inline]
    fn or_throw(self, env: &Env) -> napi::Result<T> {
        self.map_err(|e| to_napi(env.raw(), e))
    }
}

/// The outcome of an asynchronous call, converted on the JS thread when its Promise settles:
/// `Ok` resolves with the value, `Err` rejects with our error object. (napi-rs converts
/// errors of the future itself with its own status codes; this keeps ours.)
pub struct Settled<T>(pub CoreResult<T>);

impl<T: ToNapiValue> ToNapiValue for Settled<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        match val.0 {
            // SAFETY: forwarded from the caller's contract (a live env on the JS thread).
            Ok(v) => unsafe { T::to_napi_value(env, v) },
            Err(e) => Err(to_napi(env, e)),
        }
    }
}

impl<T: TypeName> TypeName for Settled<T> {
    fn type_name() -> &'static str {
        T::type_name()
    }

    fn value_type() -> ValueType {
        T::value_type()
    }
}

/// The Promise of every asynchronous method: it settles with `call(args)`, or rejects with the
/// argument error without starting any I/O when converting the arguments already failed.
/// Settled through the environment's one threadsafe function (see promise.rs).
pub fn settle<'e, A, T, Fut>(
    env: &'e Env,
    args: CoreResult<A>,
    call: impl FnOnce(A) -> Fut + Send + 'static,
) -> napi::Result<PromiseRaw<'e, Settled<T>>>
where
    A: Send + 'static,
    T: ToNapiValue + Send + 'static,
    Fut: std::future::Future<Output = CoreResult<T>> + Send + 'static,
{
    crate::promise::spawn(env, async move {
        Settled(match args {
            Ok(a) => call(a).await,
            Err(e) => Err(e),
        })
    })
}

/// `config_invalid` for `field` (the core's constructor, so messages read the same everywhere).
pub fn config(field: &str, problem: &str) -> CoreError {
    CoreError::config(field, problem)
}
