//! Native objects as `long` handles with a closed flag.
//!
//! Java holds the handle in a final field and never reuses it. `close()` only sets the flag
//! (calls after it fail with `store_unavailable`: "closed"); the box is freed by the Java
//! object's `Cleaner`, which runs only once the object is unreachable, and every Java method
//! keeps its object reachable until its native call returns (`Reference.reachabilityFence`).
//! So a call racing `close()` either runs on a live object or sees the flag, never freed memory.

use std::sync::atomic::{AtomicBool, Ordering};

use jni_sys::jlong;
use throttlekit::{Error, ErrorCode};

/// A boxed native object and whether it was closed.
pub(crate) struct Handle<T> {
    closed: AtomicBool,
    value: T,
}

/// Boxes `value` and returns its address for Java.
pub(crate) fn leak<T>(value: T) -> jlong {
    Box::into_raw(Box::new(Handle { closed: AtomicBool::new(false), value })) as jlong
}

fn closed_error(what: &str) -> Error {
    Error::new(ErrorCode::StoreUnavailable, format!("store unavailable: this {what} is closed"))
}

/// The object behind `h`, unless it was closed.
///
/// # Safety
/// `h` is 0 or a handle of type `T` made by [`leak`] and not yet freed.
#[inline]
pub(crate) unsafe fn get<'a, T>(h: jlong, what: &str) -> Result<&'a T, Error> {
    if h == 0 {
        return Err(closed_error(what));
    }
    let handle = unsafe { &*(h as *const Handle<T>) };
    if handle.closed.load(Ordering::Acquire) {
        return Err(closed_error(what));
    }
    Ok(&handle.value)
}

/// Marks `h` closed; returns the object if this call closed it (so closing twice is a no-op).
///
/// # Safety
/// As for [`get`].
pub(crate) unsafe fn close<'a, T>(h: jlong) -> Option<&'a T> {
    if h == 0 {
        return None;
    }
    let handle = unsafe { &*(h as *const Handle<T>) };
    if handle.closed.swap(true, Ordering::AcqRel) { None } else { Some(&handle.value) }
}

/// Frees `h`.
///
/// # Safety
/// `h` is 0 or a live handle of type `T`, and no call on it runs now or later (the Cleaner).
pub(crate) unsafe fn free<T>(h: jlong) {
    if h != 0 {
        drop(unsafe { Box::from_raw(h as *mut Handle<T>) });
    }
}

/// The exports every object type shares, written once: a typed getter (`$get`, failing with
/// `store_unavailable` once closed), `close` (marks it closed; `$on_close` runs on the object
/// when this call was the one that closed it) and `free` (called by the Java `Cleaner`).
///
/// ```ignore
/// handle_exports!(Shaper, "shaper", shaper, Java_..._shaperClose, Java_..._shaperFree);
/// ```
macro_rules! handle_exports {
    ($ty:ty, $what:literal, $get:ident, $close:ident, $free:ident $(, on_close = $on_close:expr)?) => {
        #[inline]
        unsafe fn $get<'a>(h: jni_sys::jlong) -> Result<&'a $ty, throttlekit::Error> {
            unsafe { $crate::handle::get::<$ty>(h, $what) }
        }

        #[unsafe(no_mangle)]
        extern "system" fn $close(env: *mut jni_sys::JNIEnv, _: jni_sys::jclass, h: jni_sys::jlong) {
            $crate::guard(env, || {
                let closed: Option<&$ty> = unsafe { $crate::handle::close::<$ty>(h) };
                $(if let Some(value) = closed {
                    ($on_close)(value);
                })?
                let _ = closed;
                Ok(())
            })
        }

        #[unsafe(no_mangle)]
        extern "system" fn $free(env: *mut jni_sys::JNIEnv, _: jni_sys::jclass, h: jni_sys::jlong) {
            $crate::guard(env, || {
                unsafe { $crate::handle::free::<$ty>(h) };
                Ok(())
            })
        }
    };
}
pub(crate) use handle_exports;
