//! Stateless calls: strategy validation, core's number rules, the HTTP edge's JSON entry
//! points, the version, and a direct buffer's address.

use jni_sys::{JNIEnv, jbyteArray, jclass, jdouble, jint, jlong, jobject};
use throttlekit::{Error, Strategy};

use crate::env::{jni, new_bytes, text};
use crate::guard;

/// Validates a strategy spec (JSON) and returns `{"kind", "limit", "spec"}` (the spec as core
/// normalised it), so typed constructors and `fromJson` share core's validation and messages.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_strategyInfo(
    env: *mut JNIEnv,
    _: jclass,
    json: jbyteArray,
) -> jbyteArray {
    guard(env, || unsafe {
        let s = Strategy::from_json(&text(env, json, "strategy")?)?;
        let info = serde_json::json!({"kind": s.kind(), "limit": s.limit(), "spec": s.spec()});
        Ok(new_bytes(env, info.to_string().as_bytes()))
    })
}

/// Core's rule for a number that arrived as a double: 0 a cost, 1 an epoch-ms time.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_fromDouble(
    env: *mut JNIEnv,
    _: jclass,
    which: jint,
    v: jdouble,
) -> jlong {
    guard(env, || {
        if which == 0 {
            Ok(throttlekit::validate::cost_from_f64(v)? as jlong)
        } else {
            throttlekit::validate::now_from_f64(v)
        }
    })
}

/// The HTTP edge: 0 `headers_json`, 1 `client_key_json` (core's JSON in and out).
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_http(
    env: *mut JNIEnv,
    _: jclass,
    which: jint,
    request: jbyteArray,
) -> jbyteArray {
    guard(env, || unsafe {
        let request = text(env, request, "request")?;
        let out = if which == 0 {
            throttlekit::http::json::headers_json(&request)?
        } else {
            throttlekit::http::json::client_key_json(&request)?
        };
        Ok(new_bytes(env, out.as_bytes()))
    })
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_version(env: *mut JNIEnv, _: jclass) -> jbyteArray {
    guard(env, || Ok(unsafe { new_bytes(env, throttlekit::VERSION.as_bytes()) }))
}

/// The address of a direct `ByteBuffer` (once per thread's scratch buffer).
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_address(env: *mut JNIEnv, _: jclass, buffer: jobject) -> jlong {
    guard(env, || {
        let p = unsafe { jni!(env, GetDirectBufferAddress, buffer) };
        if p.is_null() {
            return Err(Error::config("buffer", "is not a direct buffer (internal)"));
        }
        Ok(p as jlong)
    })
}

/// Panics on purpose, so a test can see a panic arrive as an exception and the VM live on.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_panicForTest(env: *mut JNIEnv, _: jclass) {
    guard(env, || -> Result<(), Error> { panic!("a test asked for a panic") })
}
