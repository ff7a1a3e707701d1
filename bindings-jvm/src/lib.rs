//! The native half of throttlekit's JVM library: `extern "system"` functions that the Java class
//! `dev.throttlekit.internal.Native` declares, written by hand over raw `jni-sys`.
//!
//! Why by hand: uniffi's Kotlin path goes through JNA and costs tens of microseconds a call
//! (issue #21); a direct JNI call costs tens of nanoseconds. The contract between the halves:
//! - Objects (stores, clocks, limiters, multi limiters, shapers) are boxed [`handle::Handle`]s
//!   whose address Java keeps as a `long`. `close()` marks one closed (later calls fail with a
//!   coded exception); the memory is freed only by the Java object's `Cleaner`, after no call
//!   can be running on it any more.
//! - The hot path reads the key as UTF-8 from a per-thread direct buffer at a Java-given address
//!   and writes the decision's integers back there ([`scratch`]): no JNI call, no Java object.
//! - Every body runs inside [`guard`]: an error becomes the matching Java exception, and a panic
//!   becomes one too (code 0) instead of unwinding into the VM.
//! - There is no arithmetic here: costs, times and options are validated and decided by core.

mod adaptive;
mod env;
mod handle;
mod http;
mod lease;
mod limiter;
mod metrics;
mod misc;
mod multi;
mod runtime;
mod scratch;
mod shaper;
mod sql;
mod store;

use std::panic::{AssertUnwindSafe, catch_unwind};

use jni_sys::{JNIEnv, jboolean, jint, jlong, jobject};
use throttlekit::Error;

/// The value a native method returns when it threw (Java never sees it: the exception wins).
pub(crate) trait Zero {
    fn zero() -> Self;
}
impl Zero for () {
    fn zero() {}
}
impl Zero for jlong {
    fn zero() -> jlong {
        0
    }
}
impl Zero for jint {
    fn zero() -> jint {
        0
    }
}
impl Zero for jboolean {
    fn zero() -> jboolean {
        0
    }
}
impl Zero for jobject {
    fn zero() -> jobject {
        std::ptr::null_mut()
    }
}

/// Runs a native method's body: `Err` becomes a thrown `ThrottleKitException` subclass, and a
/// panic becomes the `internal` one with the panic text, never an unwind across JNI.
///
/// Inlined into each export, with both failure arms out of line ([`fail`], [`fail_panic`]): the
/// hot path (`check`, `tryAcquire`) then runs the body and returns, with no error-building code
/// between it and the JNI stub (measured: ~3 ns a call of the ~55 ns of a 1-key check).
///
/// `AssertUnwindSafe` is sound: a panicking body leaves nothing half-built that Java can see
/// (handles are returned only on success), and core's locks do not poison.
#[inline(always)]
pub(crate) fn guard<T: Zero>(env: *mut JNIEnv, body: impl FnOnce() -> Result<T, Error>) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => v,
        Ok(Err(err)) => fail(env, err),
        Err(payload) => fail_panic(env, payload),
    }
}

/// [`guard`]'s error arm: throws `err`.
#[cold]
#[inline(never)]
fn fail<T: Zero>(env: *mut JNIEnv, err: Error) -> T {
    unsafe { env::throw_error(env, &err) };
    T::zero()
}

/// [`guard`]'s panic arm: throws the `internal` exception with the panic's text.
#[cold]
#[inline(never)]
fn fail_panic<T: Zero>(env: *mut JNIEnv, payload: Box<dyn std::any::Any + Send>) -> T {
    unsafe { env::throw(env, env::PANIC_CODE, -1, &panic_message(&*payload)) };
    T::zero()
}

/// The `internal` exception's message for a caught panic: `panic: ` and the panic's text.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    format!("panic: {}", throttlekit::panic_message(payload))
}

/// A Java `boolean`.
pub(crate) fn jbool(b: bool) -> jboolean {
    jboolean::from(b)
}
