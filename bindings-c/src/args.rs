//! Argument conversion at the boundary: NULL checks, C strings to `&str`, arrays to slices.
//! Every export goes through these, so each kind of bad input maps to one result everywhere.

use std::ffi::{CStr, c_char};

use crate::result::{set_last_error, tk_result};

/// Borrows `*p`, or fails with `TK_RESULT_NULL_PARAMETER` naming the argument.
///
/// # Safety
/// `p`, when not NULL, must point to a live `T` for the returned lifetime.
pub(crate) unsafe fn borrow<'a, T>(p: *const T, name: &str) -> Result<&'a T, tk_result> {
    // SAFETY: non-NULL is checked; validity is the caller's contract.
    unsafe { p.as_ref() }.ok_or_else(|| null(name))
}

/// Mutably borrows `*p` (an out-parameter), or fails with `TK_RESULT_NULL_PARAMETER`.
///
/// # Safety
/// `p`, when not NULL, must be valid for writes for the returned lifetime.
pub(crate) unsafe fn out<'a, T>(p: *mut T, name: &str) -> Result<&'a mut T, tk_result> {
    // SAFETY: as for `borrow`.
    unsafe { p.as_mut() }.ok_or_else(|| null(name))
}

/// A NUL-terminated UTF-8 string, or `TK_RESULT_NULL_PARAMETER` / `TK_RESULT_INVALID_UTF8`.
///
/// # Safety
/// `p`, when not NULL, must point to a NUL-terminated string live for the returned lifetime.
pub(crate) unsafe fn string<'a>(p: *const c_char, name: &str) -> Result<&'a str, tk_result> {
    if p.is_null() {
        return Err(null(name));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str().map_err(|_| {
        set_last_error(&format!("invalid_utf8: {name} is not valid UTF-8"));
        tk_result::InvalidUtf8
    })
}

/// Like [`string`], but NULL reads as `None` (for optional strings such as a prefix).
///
/// # Safety
/// As for [`string`].
pub(crate) unsafe fn optional_string<'a>(p: *const c_char, name: &str) -> Result<Option<&'a str>, tk_result> {
    if p.is_null() { Ok(None) } else { unsafe { string(p, name) }.map(Some) }
}

/// `len` C strings starting at `p` (which may be NULL only when `len == 0`).
///
/// # Safety
/// `p` must point to `len` pointers, each a NUL-terminated string live for the returned lifetime.
pub(crate) unsafe fn strings<'a>(p: *const *const c_char, len: usize, name: &str) -> Result<Vec<&'a str>, tk_result> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(null(name));
    }
    // SAFETY: non-NULL; `len` elements by the caller's contract.
    let ptrs = unsafe { std::slice::from_raw_parts(p, len) };
    ptrs.iter().map(|&s| unsafe { string(s, name) }).collect()
}

/// A slice of `len` `T`s at `p` (which may be NULL only when `len == 0`).
///
/// # Safety
/// `p` must point to `len` initialised `T`s live for the returned lifetime.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize, name: &str) -> Result<&'a [T], tk_result> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null(name));
    }
    // SAFETY: non-NULL; `len` initialised elements by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

pub(crate) fn null(name: &str) -> tk_result {
    set_last_error(&format!("null_parameter: {name} must not be NULL"));
    tk_result::NullParameter
}

/// Unwraps an argument conversion inside an export, returning its failure result.
macro_rules! try_arg {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(r) => return r,
        }
    };
}
pub(crate) use try_arg;

/// Unwraps a core result inside an export, recording the error and returning its result.
macro_rules! try_core {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return $crate::result::from_error(&e),
        }
    };
}
pub(crate) use try_core;

/// The body of every getter: inside the panic guard, borrows `handle`, checks `out_p`, and
/// writes what `read` returns into it (NULLs are `TK_RESULT_NULL_PARAMETER`, handle first).
///
/// # Safety
/// As for [`borrow`] (`handle`) and [`out`] (`out_p`).
pub(crate) unsafe fn get<H, T>(
    handle: *const H,
    handle_name: &str,
    out_p: *mut T,
    out_name: &str,
    read: impl FnOnce(&H) -> T,
) -> tk_result {
    crate::panic::guard(|| {
        let h = try_arg!(unsafe { borrow(handle, handle_name) });
        let o = try_arg!(unsafe { out(out_p, out_name) });
        *o = read(h);
        tk_result::Ok
    })
}

/// Moves `value` to the heap and hands the pointer to C through `out`. C owns it from here on
/// and gives it back to exactly one matching `_free` function.
pub(crate) fn into_handle<T>(value: T, out: &mut *mut T) -> tk_result {
    *out = Box::into_raw(Box::new(value));
    tk_result::Ok
}

/// Takes back a handle made by [`into_handle`] and drops it; NULL is a no-op.
///
/// # Safety
/// `p` must be NULL or a pointer from [`into_handle`] for the same `T`, not freed before and not
/// in use by another thread.
pub(crate) unsafe fn free_handle<T>(p: *mut T) {
    if !p.is_null() {
        // SAFETY: by the caller's contract the pointer came from `Box::into_raw`.
        drop(unsafe { Box::from_raw(p) });
    }
}

/// `len` bytes at `p` (which may be NULL only when `len == 0`), not NUL-terminated.
///
/// # Safety
/// `p` must point to `len` readable bytes live for the returned lifetime.
pub(crate) unsafe fn bytes<'a>(p: *const c_char, len: usize, name: &str) -> Result<&'a [u8], tk_result> {
    unsafe { slice(p.cast::<u8>(), len, name) }
}

/// `len` bytes at `p` as UTF-8 text, or `TK_RESULT_NULL_PARAMETER` / `TK_RESULT_INVALID_UTF8`.
///
/// # Safety
/// As for [`bytes`].
pub(crate) unsafe fn text<'a>(p: *const c_char, len: usize, name: &str) -> Result<&'a str, tk_result> {
    std::str::from_utf8(unsafe { bytes(p, len, name) }?).map_err(|_| {
        set_last_error(&format!("invalid_utf8: {name} is not valid UTF-8"));
        tk_result::InvalidUtf8
    })
}

/// A counted key: UTF-8 ([`text`]) without NUL bytes, which no NUL-terminated key can hold, so
/// a key means the same through every export (`TK_RESULT_CONFIG_INVALID` otherwise).
///
/// # Safety
/// As for [`bytes`].
pub(crate) unsafe fn key<'a>(p: *const c_char, len: usize, name: &str) -> Result<&'a str, tk_result> {
    let key = unsafe { text(p, len, name) }?;
    if key.as_bytes().contains(&0) {
        set_last_error(&format!("config_invalid: {name} must not contain NUL bytes"));
        return Err(tk_result::ConfigInvalid);
    }
    Ok(key)
}
