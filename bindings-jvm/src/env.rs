//! The few JNI calls this library makes, over raw `jni-sys`, and only off the hot path.
//!
//! The hot path (`check`, `tryAcquire`) makes no JNI call at all: the key arrives as UTF-8 bytes
//! in a per-thread direct buffer whose address Java passes in, and the decision goes back into
//! the same buffer. JNI is used for the cold calls (byte arrays in and out, `long[]` results),
//! for throwing an exception (built by one static Java factory, so the Java side owns the
//! exception classes), and for completing a `CompletableFuture` from a runtime thread.

use std::ptr;
use std::sync::OnceLock;

use jni_sys::{
    JNI_OK, JNI_VERSION_1_8, JNIEnv, JavaVM, jbyteArray, jclass, jint, jlong, jlongArray, jmethodID, jobject, jsize,
};
use throttlekit::Error;

/// Calls a function of the JNI function table.
macro_rules! jni {
    ($env:expr, $name:ident $(, $arg:expr)*) => {
        ((**$env).$name.expect(concat!("JNI function ", stringify!($name))))($env $(, $arg)*)
    };
}
pub(crate) use jni;

/// The JVM and the `Native` class's static callbacks, resolved once in `JNI_OnLoad`.
struct Cached {
    vm: *mut JavaVM,
    native: jclass,
    exception: jmethodID,
    complete: jmethodID,
    complete_small: jmethodID,
    fail: jmethodID,
    /// `Native.runtimeThreadAttached()`, called once on each runtime thread the VM attaches.
    runtime_thread: jmethodID,
}

// SAFETY: a JavaVM pointer, a global class reference and method ids are valid on every thread
// for the life of the VM (the JNI specification says so for all three).
unsafe impl Send for Cached {}
unsafe impl Sync for Cached {}

static CACHED: OnceLock<Cached> = OnceLock::new();

const NATIVE_CLASS: &[u8] = b"dev/throttlekit/internal/Native\0";

/// Resolves the callbacks. Called by the JVM when `System.load` loads the library.
#[unsafe(no_mangle)]
pub extern "system" fn JNI_OnLoad(vm: *mut JavaVM, _reserved: *mut std::ffi::c_void) -> jint {
    let result = std::panic::catch_unwind(|| unsafe {
        let mut env: *mut JNIEnv = ptr::null_mut();
        let get_env = (**vm).GetEnv.expect("GetEnv");
        if get_env(vm, (&mut env as *mut *mut JNIEnv).cast(), JNI_VERSION_1_8) != JNI_OK {
            return -1;
        }
        let local = jni!(env, FindClass, NATIVE_CLASS.as_ptr().cast());
        if local.is_null() {
            return -1;
        }
        let native = jni!(env, NewGlobalRef, local);
        let method =
            |name: &[u8], sig: &[u8]| jni!(env, GetStaticMethodID, native, name.as_ptr().cast(), sig.as_ptr().cast());
        let exception = method(b"exception\0", b"(IJ[B)Ljava/lang/Throwable;\0");
        let complete = method(b"complete\0", b"(Ljava/util/concurrent/CompletableFuture;[J)V\0");
        let complete_small = method(b"completeSmall\0", b"(Ljava/util/concurrent/CompletableFuture;IJJJJJJ)V\0");
        let fail = method(b"fail\0", b"(Ljava/util/concurrent/CompletableFuture;Ljava/lang/Throwable;)V\0");
        let runtime_thread = method(b"runtimeThreadAttached\0", b"()V\0");
        if exception.is_null()
            || complete.is_null()
            || complete_small.is_null()
            || fail.is_null()
            || runtime_thread.is_null()
        {
            return -1;
        }
        let _ = CACHED.set(Cached { vm, native, exception, complete, complete_small, fail, runtime_thread });
        JNI_VERSION_1_8
    });
    result.unwrap_or(-1)
}

fn cached() -> &'static Cached {
    CACHED.get().expect("JNI_OnLoad ran")
}

/// The error code numbers the Java side maps to exception classes: core's codes, and 0 for a
/// panic caught at the boundary (a bug in throttlekit, reported instead of unwinding into the VM).
pub(crate) const PANIC_CODE: jint = 0;

/// A Java `byte[]` holding `bytes` (null if the VM is out of memory: an exception is pending).
pub(crate) unsafe fn new_bytes(env: *mut JNIEnv, bytes: &[u8]) -> jbyteArray {
    unsafe {
        let len = jsize::try_from(bytes.len()).unwrap_or(jsize::MAX);
        let array = jni!(env, NewByteArray, len);
        if !array.is_null() {
            jni!(env, SetByteArrayRegion, array, 0, len, bytes.as_ptr().cast());
        }
        array
    }
}

/// The bytes of a Java `byte[]` (empty for null).
pub(crate) unsafe fn bytes(env: *mut JNIEnv, array: jbyteArray) -> Vec<u8> {
    unsafe {
        if array.is_null() {
            return Vec::new();
        }
        let len = jni!(env, GetArrayLength, array);
        let mut out = vec![0u8; usize::try_from(len).unwrap_or(0)];
        jni!(env, GetByteArrayRegion, array, 0, len, out.as_mut_ptr().cast());
        out
    }
}

/// A Java `byte[]` as UTF-8 text (Java encodes it; invalid UTF-8 is `config_invalid`).
pub(crate) unsafe fn text(env: *mut JNIEnv, array: jbyteArray, what: &str) -> Result<String, Error> {
    String::from_utf8(unsafe { bytes(env, array) }).map_err(|_| Error::config(what, "must be valid UTF-8"))
}

/// A builder's options, sent by Java as JSON (`what`: the class, for the `config_invalid` message).
pub(crate) unsafe fn options<T: serde::de::DeserializeOwned>(
    env: *mut JNIEnv,
    config: jbyteArray,
    what: &str,
) -> Result<T, Error> {
    let text = unsafe { text(env, config, "options")? };
    serde_json::from_str(&text).map_err(|e| Error::config(&format!("{what} options"), &e.to_string()))
}

/// A new Java `long[]` holding `values`.
pub(crate) unsafe fn new_longs(env: *mut JNIEnv, values: &[jlong]) -> jlongArray {
    unsafe {
        let array = jni!(env, NewLongArray, values.len() as jsize);
        if !array.is_null() {
            jni!(env, SetLongArrayRegion, array, 0, values.len() as jsize, values.as_ptr());
        }
        array
    }
}

/// The exception the Java factory builds for `code` (core's number, or [`PANIC_CODE`]).
unsafe fn exception(env: *mut JNIEnv, code: jint, retry_after_ms: jlong, message: &str) -> jobject {
    unsafe {
        let c = cached();
        let msg = new_bytes(env, message.as_bytes());
        if msg.is_null() {
            return ptr::null_mut();
        }
        let args = [jni_sys::jvalue { i: code }, jni_sys::jvalue { j: retry_after_ms }, jni_sys::jvalue { l: msg }];
        let e = jni!(env, CallStaticObjectMethodA, c.native, c.exception, args.as_ptr());
        jni!(env, DeleteLocalRef, msg);
        e
    }
}

/// Throws `code`/`message` as the matching `ThrottleKitException` subclass (unless an exception
/// is already pending, which then wins).
pub(crate) unsafe fn throw(env: *mut JNIEnv, code: jint, retry_after_ms: jlong, message: &str) {
    unsafe {
        if jni!(env, ExceptionCheck) != 0 {
            return;
        }
        let e = exception(env, code, retry_after_ms, message);
        if !e.is_null() && jni!(env, ExceptionCheck) == 0 {
            jni!(env, Throw, e);
        }
    }
}

/// A core error as the factory's arguments.
pub(crate) fn parts(err: &Error) -> (jint, jlong, String) {
    (err.code() as jint, err.retry_after_ms().unwrap_or(-1), err.message().to_owned())
}

/// Throws a core error.
pub(crate) unsafe fn throw_error(env: *mut JNIEnv, err: &Error) {
    unsafe { throw(env, err.code() as jint, err.retry_after_ms().unwrap_or(-1), err.message()) }
}

/// A global reference to `obj`, for a future completed later on another thread.
pub(crate) struct Global(jobject);

// SAFETY: a global reference is valid on every thread until deleted.
unsafe impl Send for Global {}

impl Global {
    pub(crate) unsafe fn new(env: *mut JNIEnv, obj: jobject) -> Option<Global> {
        let g = unsafe { jni!(env, NewGlobalRef, obj) };
        if g.is_null() { None } else { Some(Global(g)) }
    }
}

/// The calling thread's JNI environment, attaching it (as a daemon, once) if it is a runtime
/// worker the VM has not seen yet.
unsafe fn attached_env() -> Option<*mut JNIEnv> {
    unsafe {
        let vm = cached().vm;
        let mut env: *mut JNIEnv = ptr::null_mut();
        let get_env = (**vm).GetEnv.expect("GetEnv");
        if get_env(vm, (&mut env as *mut *mut JNIEnv).cast(), JNI_VERSION_1_8) == JNI_OK {
            return Some(env);
        }
        let attach = (**vm).AttachCurrentThreadAsDaemon.expect("AttachCurrentThreadAsDaemon");
        if attach(vm, (&mut env as *mut *mut JNIEnv).cast(), ptr::null_mut()) != JNI_OK {
            return None;
        }
        // Once per runtime thread: Java marks it, so a stage that would wait here for a
        // throttlekit call (and so wait forever) gets an exception instead (`NativeFuture`).
        let c = cached();
        jni!(env, CallStaticVoidMethodA, c.native, c.runtime_thread, ptr::null());
        if jni!(env, ExceptionCheck) != 0 {
            jni!(env, ExceptionClear);
        }
        Some(env)
    }
}

/// The most result longs `Native.completeSmall` takes as arguments.
const SMALL: usize = 6;

/// Completes a `CompletableFuture<long[]>` with `values`, or fails it with `err`, from any
/// thread. Then drops the global reference.
pub(crate) fn complete(future: Global, result: Result<Vec<jlong>, (jint, jlong, String)>) {
    unsafe {
        let Some(env) = attached_env() else { return };
        let c = cached();
        match result {
            // Up to six longs (a decision, a reservation, a count: every call but `checkMany`'s)
            // go as arguments of the upcall: a `NewLongArray` from native code cost a JNI call
            // into the VM and a local reference per completion (`docs/bench-jvm.md`).
            Ok(values) if values.len() <= SMALL => {
                let mut args = [jni_sys::jvalue { j: 0 }; 2 + SMALL];
                args[0] = jni_sys::jvalue { l: future.0 };
                args[1] = jni_sys::jvalue { i: values.len() as jint };
                for (arg, v) in args[2..].iter_mut().zip(&values) {
                    *arg = jni_sys::jvalue { j: *v };
                }
                jni!(env, CallStaticVoidMethodA, c.native, c.complete_small, args.as_ptr());
            }
            Ok(values) => {
                let array = new_longs(env, &values);
                if !array.is_null() {
                    let args = [jni_sys::jvalue { l: future.0 }, jni_sys::jvalue { l: array }];
                    jni!(env, CallStaticVoidMethodA, c.native, c.complete, args.as_ptr());
                    jni!(env, DeleteLocalRef, array);
                }
            }
            Err((code, retry_after_ms, message)) => {
                let e = exception(env, code, retry_after_ms, &message);
                if !e.is_null() {
                    let args = [jni_sys::jvalue { l: future.0 }, jni_sys::jvalue { l: e }];
                    jni!(env, CallStaticVoidMethodA, c.native, c.fail, args.as_ptr());
                    jni!(env, DeleteLocalRef, e);
                }
            }
        }
        // A Java exception from the callbacks themselves (out of memory) cannot be reported to
        // anyone on a runtime thread: clear it so the thread stays usable.
        if jni!(env, ExceptionCheck) != 0 {
            jni!(env, ExceptionClear);
        }
        jni!(env, DeleteGlobalRef, future.0);
    }
}
