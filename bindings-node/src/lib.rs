//! Node bindings of throttlekit (napi-rs): `@throttlekit/core`.
//!
//! An adapter and nothing more: every module converts JavaScript arguments, calls the core's
//! public API and converts the result back. Modules mirror the core's (`limiter`, `multi`,
//! `shaper`, `strategy`, `clock`, `store`, `redis`, `decision`); `convert` turns JS values into
//! core values and `error` turns core errors into JS errors with a stable `code`. Four modules
//! are plumbing for speed only: `fast` (raw-napi `checkSync`, with index.js) and `handles` (how
//! it finds its limiter), `promise` (how Promise methods get back to the event loop), and
//! `transport` (the core's Redis calls for index.js's own socket, lib/redis-transport.js).
//! Nothing here computes a decision, a time or a delay.
//!
//! Panics cannot cross into Node: napi-rs catches unwinding at every entry point, the raw
//! callbacks in `fast` and `promise` catch it themselves, and nothing here `unwrap`s on input.
#![deny(clippy::unwrap_used)]

use napi::Env;
use napi::bindgen_prelude::{JavaScriptClassExt, TypeTag, Unknown, validate_type_tag};
use napi_derive::napi;

mod adaptive;
mod adaptive_fast;
mod clock;
mod cluster;
mod convert;
mod decision;
mod error;
mod fast;
mod handles;
mod http;
mod limiter;
mod metrics;
mod multi;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_socket;
mod promise;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod redis_fast;
#[cfg(any(feature = "redis", feature = "postgres"))]
mod send;
mod shaper;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
mod strategy;
#[cfg(feature = "redis")]
mod transport;

use error::{CoreResult, config};

/// The version of the native core (the package version, too).
#[napi]
pub fn version() -> &'static str {
    throttlekit::VERSION
}

/// Every stable error `code`, in the core's order. Codes are only ever added, never renamed.
#[napi(ts_return_type = "ErrorCode[]")]
pub fn error_codes() -> Vec<&'static str> {
    throttlekit::ErrorCode::ALL.iter().map(|c| c.as_str()).collect()
}

/// The stable `code` of every error this package throws.
#[napi(string_enum)]
pub enum ErrorCode {
    #[napi(value = "config_invalid")]
    ConfigInvalid,
    #[napi(value = "store_unavailable")]
    StoreUnavailable,
    #[napi(value = "rate_limit_exceeded")]
    RateLimitExceeded,
    #[napi(value = "queue_full")]
    QueueFull,
    #[napi(value = "not_implemented")]
    NotImplemented,
}

/// `v` as an instance of the class `T`, `None` when it is not one.
///
/// The usual answer first: an object carrying `T`'s napi type tag is a constructed `T` (napi-rs
/// tags every instance it wraps), so its pointer is unwrapped at once. Anything else is checked
/// twice before the pointer is trusted: `instanceof`, then the type tag, so an object that
/// merely has `T.prototype` in its chain (`Object.create(Limiter.prototype)`) or wraps another
/// class is `config_invalid`, never a wrong cast. Why the tag first: `napi_instanceof` looks up
/// `Symbol.hasInstance` and walks the prototype chain, a few hundred ns per call on the Redis
/// transport's hot path (perf: 2.5 % of a sequential `check`), where the tag check is one
/// private-symbol lookup. The reference is used only within the current call, while `v` is alive.
pub(crate) fn instance<'a, T: JavaScriptClassExt + TypeTag + 'static>(
    env: &Env,
    v: &Unknown<'a>,
    field: &str,
) -> CoreResult<Option<&'a T>> {
    if convert::type_of(v) != napi::sys::ValueType::napi_object {
        return Ok(None);
    }
    let raw = napi::JsValue::value(v).value;
    let mut tagged = false;
    // SAFETY: `raw` is a live object of the current call.
    let checked = unsafe { napi::sys::napi_check_object_type_tag(env.raw(), raw, &T::type_tag(), &mut tagged) };
    if checked == napi::sys::Status::napi_ok && tagged {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: as above; the tag proves napi-rs wrapped a `T` in it.
        if unsafe { napi::sys::napi_unwrap(env.raw(), raw, &mut ptr) } == napi::sys::Status::napi_ok && !ptr.is_null() {
            // SAFETY: the type tag proves napi-rs wrapped a `T` at `ptr`; it lives as long as `v`.
            return Ok(Some(unsafe { &*ptr.cast::<T>() }));
        }
    }
    if !T::instance_of(env, v).unwrap_or(false) {
        return Ok(None);
    }
    let raw = napi::JsValue::value(v).value;
    let mut ptr = std::ptr::null_mut();
    // SAFETY: `raw` is a live object of the current call.
    let unwrapped = unsafe { napi::sys::napi_unwrap(env.raw(), raw, &mut ptr) } == napi::sys::Status::napi_ok;
    // SAFETY: as above.
    let tagged = unwrapped && unsafe { validate_type_tag(env.raw(), raw, &T::type_tag(), "") }.is_ok();
    if !tagged || ptr.is_null() {
        return Err(config(field, "is not a constructed instance"));
    }
    // SAFETY: the type tag proves napi-rs wrapped a `T` at `ptr`; it lives as long as `v`.
    Ok(Some(unsafe { &*ptr.cast::<T>() }))
}

/// napi's Tokio runtime, which drives every Promise method: one worker. The futures it runs
/// only wait (on Redis replies, which this runtime reads itself once a `RedisStore` is bound to
/// it, or on timers), so more workers add nothing but wake-ups and contention for the event
/// loop's core. IO and timers are enabled: `RedisStore.connect` binds the store to it.
#[napi_derive::module_init]
fn init() {
    if let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("throttlekit-node")
        .enable_all()
        .build()
    {
        napi::bindgen_prelude::create_custom_tokio_runtime(rt);
    }
}
