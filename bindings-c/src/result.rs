//! [`tk_result`]: the one status type every export returns, its static messages, and the
//! per-thread detail of the last error.
//!
//! Numbers 1..=5 are core's [`ErrorCode`] numbers, so a C caller and a Rust caller see the same
//! number for the same failure; numbers from 100 up are failures that only exist at the FFI
//! boundary. Numbers are never renumbered or reused: retire a variant by leaving a gap.

use std::cell::RefCell;
use std::ffi::c_char;

use throttlekit::{Error, ErrorCode};

/// The status of every call. `TK_RESULT_OK` (0) is success; everything else is a failure and
/// leaves every out-parameter untouched. A denied request is *not* a failure: it is an OK
/// result with `allowed == false` in the decision.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tk_result {
    /// Success.
    Ok = 0,
    /// A strategy option, cost, key list or other argument is out of its domain.
    ConfigInvalid = 1,
    /// The store could not answer (connection refused, timeout, script error).
    StoreUnavailable = 2,
    /// The caller asked to be refused with an error instead of a denied decision.
    RateLimitExceeded = 3,
    /// The shaper's queue would exceed `max_queue_ms` (from `tk_shaper_schedule`).
    QueueFull = 4,
    /// The operation is not supported by this store or strategy.
    NotImplemented = 5,
    /// A required pointer argument was NULL.
    NullParameter = 100,
    /// A Rust panic was caught at the boundary (a bug in throttlekit: please report it).
    Panic = 101,
    /// A string argument was not valid UTF-8.
    InvalidUtf8 = 102,
}

impl tk_result {
    /// Every result, in the order of their numbers (tests compare it with the header).
    pub const ALL: [tk_result; 9] = [
        tk_result::Ok,
        tk_result::ConfigInvalid,
        tk_result::StoreUnavailable,
        tk_result::RateLimitExceeded,
        tk_result::QueueFull,
        tk_result::NotImplemented,
        tk_result::NullParameter,
        tk_result::Panic,
        tk_result::InvalidUtf8,
    ];

    /// The result for a core error code. The match is exhaustive on purpose: a code added to
    /// core fails this build until it gets its own number here.
    pub fn from_code(code: ErrorCode) -> tk_result {
        match code {
            ErrorCode::ConfigInvalid => tk_result::ConfigInvalid,
            ErrorCode::StoreUnavailable => tk_result::StoreUnavailable,
            ErrorCode::RateLimitExceeded => tk_result::RateLimitExceeded,
            ErrorCode::QueueFull => tk_result::QueueFull,
            ErrorCode::NotImplemented => tk_result::NotImplemented,
        }
    }

    /// The stable string code (core's codes, plus the FFI-only ones), NUL-terminated.
    pub fn code_cstr(self) -> &'static [u8] {
        match self {
            tk_result::Ok => b"ok\0",
            tk_result::ConfigInvalid => b"config_invalid\0",
            tk_result::StoreUnavailable => b"store_unavailable\0",
            tk_result::RateLimitExceeded => b"rate_limit_exceeded\0",
            tk_result::QueueFull => b"queue_full\0",
            tk_result::NotImplemented => b"not_implemented\0",
            tk_result::NullParameter => b"null_parameter\0",
            tk_result::Panic => b"panic\0",
            tk_result::InvalidUtf8 => b"invalid_utf8\0",
        }
    }

    /// A fixed English sentence for the result, NUL-terminated.
    pub fn message_cstr(self) -> &'static [u8] {
        match self {
            tk_result::Ok => b"success\0",
            tk_result::ConfigInvalid => b"an option, cost or argument is out of its domain\0",
            tk_result::StoreUnavailable => b"the store could not answer\0",
            tk_result::RateLimitExceeded => b"the rate limit was exceeded\0",
            tk_result::QueueFull => b"the shaper's queue is full\0",
            tk_result::NotImplemented => b"the operation is not supported by this store or strategy\0",
            tk_result::NullParameter => b"a required pointer argument was NULL\0",
            tk_result::Panic => b"an internal panic was caught (a bug in throttlekit)\0",
            tk_result::InvalidUtf8 => b"a string argument was not valid UTF-8\0",
        }
    }

    fn from_u32(n: u32) -> Option<tk_result> {
        tk_result::ALL.into_iter().find(|r| *r as u32 == n)
    }
}

thread_local! {
    /// The detail of the last failure on this thread. Kept per thread so that concurrent
    /// callers never read each other's message; a success does not clear it.
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Records `message` as this thread's last error detail.
pub(crate) fn set_last_error(message: &str) {
    LAST_ERROR.with(|m| {
        let mut m = m.borrow_mut();
        m.clear();
        m.push_str(message);
    });
}

/// Converts a core error: records its message, returns its result.
pub(crate) fn from_error(err: &Error) -> tk_result {
    set_last_error(&err.to_string());
    tk_result::from_code(err.code())
}

/// Shorthand for the common tail of an export: write `value` through `out` on success.
pub(crate) fn write_out<T>(res: throttlekit::Result<T>, out: &mut T) -> tk_result {
    match res {
        Ok(v) => {
            *out = v;
            tk_result::Ok
        }
        Err(e) => from_error(&e),
    }
}

fn static_str(result: u32, pick: fn(tk_result) -> &'static [u8]) -> *const c_char {
    let bytes = tk_result::from_u32(result).map_or(b"unknown result\0" as &[u8], pick);
    bytes.as_ptr().cast()
}

/// A fixed, human-readable sentence for `result`: a static NUL-terminated string that the
/// caller must not free. Unknown numbers give "unknown result". Never fails.
#[unsafe(no_mangle)]
pub extern "C" fn tk_result_message(result: u32) -> *const c_char {
    // Reads only static data: cannot panic, so no boundary is needed.
    static_str(result, tk_result::message_cstr)
}

/// The stable machine-readable code of `result`, e.g. `"config_invalid"` (core's codes) or
/// `"null_parameter"` (FFI-only): a static NUL-terminated string the caller must not free.
/// Unknown numbers give "unknown result". Never fails.
#[unsafe(no_mangle)]
pub extern "C" fn tk_result_code(result: u32) -> *const c_char {
    static_str(result, tk_result::code_cstr)
}

/// Copies the detail of the last failure *on the calling thread* (e.g.
/// `"config_invalid: gcra.burst must be >= 1"`) into `buf`, truncated to `len - 1` bytes and
/// always NUL-terminated when `len > 0`. `out_n` (nullable) receives the full length without the
/// NUL, so a caller can retry with a larger buffer. The text is not stable: branch on the
/// result number, not on this. Returns `TK_RESULT_NULL_PARAMETER` if `buf` is NULL and
/// `len > 0`.
///
/// # Safety
/// `buf` must be valid for writes of `len` bytes; `out_n`, when not NULL, must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_last_error_message(buf: *mut c_char, len: usize, out_n: *mut usize) -> tk_result {
    crate::panic::guard(|| {
        if buf.is_null() && len > 0 {
            return tk_result::NullParameter;
        }
        LAST_ERROR.with(|m| {
            let m = m.borrow();
            let bytes = m.as_bytes();
            if len > 0 {
                let n = bytes.len().min(len - 1);
                // SAFETY: the caller guarantees `len` writable bytes at `buf`; n + 1 <= len.
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), n);
                    *buf.add(n) = 0;
                }
            }
            if !out_n.is_null() {
                // SAFETY: checked non-NULL; the caller guarantees it is valid.
                unsafe { *out_n = bytes.len() };
            }
        });
        tk_result::Ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_codes_keep_their_numbers() {
        for code in ErrorCode::ALL {
            let r = tk_result::from_code(code);
            assert_eq!(r as u32, code as u32);
            assert_eq!(&r.code_cstr()[..r.code_cstr().len() - 1], code.as_str().as_bytes());
        }
    }

    #[test]
    fn every_result_has_distinct_strings() {
        for (i, a) in tk_result::ALL.iter().enumerate() {
            assert_eq!(tk_result::from_u32(*a as u32), Some(*a));
            for b in &tk_result::ALL[i + 1..] {
                assert_ne!(a.code_cstr(), b.code_cstr());
                assert_ne!(a.message_cstr(), b.message_cstr());
            }
        }
    }
}
