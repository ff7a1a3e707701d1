//! The HTTP edge (core's `throttlekit::http`) through the C ABI: JSON in, text out.
//!
//! Both functions take the JSON request objects of `conformance-vectors/FORMAT.md` ("HTTP
//! vectors") and copy their answer into the caller's buffer, like [`crate::tk_last_error_message`]:
//! truncated to `len - 1` bytes and NUL-terminated, with the full length in `*out_n`, so a
//! caller whose buffer was too small (`*out_n >= len`) retries with `*out_n + 1` bytes.

use std::ffi::c_char;

use throttlekit::Decision;
use throttlekit::http::json::{client_key_json, headers_json};
use throttlekit::http::{quota_exceeded_body, unavailable_body};

use crate::args::{borrow, string, try_arg};
use crate::decision::tk_decision;
use crate::panic::guard;
use crate::result::{from_error, tk_result};
use crate::strategy::tk_strategy;

/// A caller's text buffer, checked: `buf` may be NULL only when `len == 0`. The first half of
/// [`TextOut`], apart so that an export with another output between `len` and `out_n`
/// (`tk_http_edge_check_request`'s `out_key_n`) still checks its arguments in their order.
pub(crate) struct TextBuf {
    buf: *mut c_char,
    len: usize,
}

impl TextBuf {
    pub(crate) fn new(buf: *mut c_char, len: usize) -> Result<Self, tk_result> {
        if buf.is_null() && len > 0 {
            return Err(crate::args::null("buf"));
        }
        Ok(Self { buf, len })
    }

    /// The buffer with its checked `out_n`.
    ///
    /// # Safety
    /// `out_n`, when not NULL, must be valid for writes for `'a`.
    pub(crate) unsafe fn with_n<'a>(self, out_n: *mut usize) -> Result<TextOut<'a>, tk_result> {
        let n = unsafe { crate::args::out(out_n, "out_n") }?;
        Ok(TextOut { buf: self.buf, len: self.len, n })
    }
}

/// The checked output arguments of a text export (`buf`, `len`, `out_n`, in that order). The
/// exports that count something check them before counting, so that a NULL output fails the
/// call without spending a unit.
pub(crate) struct TextOut<'a> {
    buf: *mut c_char,
    len: usize,
    n: &'a mut usize,
}

impl TextOut<'_> {
    /// Checks `buf` (NULL only when `len == 0`), then `out_n`.
    ///
    /// # Safety
    /// `out_n`, when not NULL, must be valid for writes for the returned lifetime.
    pub(crate) unsafe fn new(buf: *mut c_char, len: usize, out_n: *mut usize) -> Result<Self, tk_result> {
        unsafe { TextBuf::new(buf, len)?.with_n(out_n) }
    }

    /// Copies `text` into the buffer (see the module doc).
    ///
    /// # Safety
    /// `buf` must be valid for writes of `len` bytes.
    pub(crate) unsafe fn write(self, text: &str) -> tk_result {
        let bytes = text.as_bytes();
        if self.len > 0 {
            let n = bytes.len().min(self.len - 1);
            // SAFETY: the caller guarantees `len` writable bytes at `buf`; n + 1 <= len.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.buf.cast::<u8>(), n);
                *self.buf.add(n) = 0;
            }
        }
        *self.n = bytes.len();
        tk_result::Ok
    }
}

/// Checks the output arguments of a text export and copies `text` out (see the module doc).
///
/// # Safety
/// As for the exports: `buf` valid for `len` bytes (or NULL with `len == 0`), `out_n` writable.
pub(crate) unsafe fn answer_text(text: &str, buf: *mut c_char, len: usize, out_n: *mut usize) -> tk_result {
    let out = try_arg!(unsafe { TextOut::new(buf, len, out_n) });
    unsafe { out.write(text) }
}

/// Shared body of the two JSON exports.
///
/// # Safety
/// As for the exports.
unsafe fn answer(
    request_json: *const c_char,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
    f: fn(&str) -> throttlekit::Result<String>,
) -> tk_result {
    guard(|| {
        let request = try_arg!(unsafe { string(request_json, "request_json") });
        match f(request) {
            Ok(text) => unsafe { answer_text(&text, buf, len, out_n) },
            Err(e) => from_error(&e),
        }
    })
}

/// The response header lines for a request's limiting decision(s), as a JSON array of
/// `[name, value]` pairs, e.g. `[["RateLimit-Policy","\"default\";q=5;w=60"],["RateLimit",
/// "\"default\";r=4;t=12"]]`. `request_json` is
/// `{"options": {"family", "policyName", "partitionKeySecret"}, "nowMs": N, "limits":
/// [{"name"?, "key"?, "strategy": spec, "decision": {allowed, limit, remaining, resetAt,
/// retryAfterMs, fallback?}}]}` with the binding limit first. Bad JSON or values are
/// `TK_RESULT_CONFIG_INVALID`. The answer is copied into `buf` (truncated to `len - 1` bytes,
/// NUL-terminated); `*out_n` receives its full length, so `*out_n >= len` means "retry with
/// `*out_n + 1` bytes". `buf` may be NULL when `len == 0` (to ask for the length).
///
/// # Safety
/// `request_json` must be a NUL-terminated string; `buf` must be valid for writes of `len`
/// bytes; `out_n` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_http_headers(
    request_json: *const c_char,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> tk_result {
    unsafe { answer(request_json, buf, len, out_n, headers_json) }
}

/// The key a request counts against: the socket peer, or the rightmost untrusted hop of the
/// forwarding header behind trusted proxies, IPv6 grouped by prefix (e.g. `"203.0.113.7"`,
/// `"2001:db8::/64"`). `request_json` is `{"peer": "10.0.0.1", "headers": [["X-Forwarded-For",
/// "..."]], "options": {"trustedProxies": [...], "ipv6Prefix": 64, "forwardedHeader":
/// "x-forwarded-for"}}`. A peer that is not an IP address, bad options or bad JSON are
/// `TK_RESULT_CONFIG_INVALID`. The key is copied into `buf` as for `tk_http_headers`.
///
/// # Safety
/// As for `tk_http_headers`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_http_client_key(
    request_json: *const c_char,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> tk_result {
    unsafe { answer(request_json, buf, len, out_n, client_key_json) }
}

/// The strategy's JSON spec (the vectors' format, e.g.
/// `{"kind":"gcra","options":{"limit":5.0,"periodMs":60000.0,"burst":5.0}}`), which
/// `tk_strategy_from_json` reads back to the same strategy. Bindings put it in the `strategy`
/// field of a `tk_http_headers` request, so a strategy built with a typed constructor needs no
/// second description. Copied into `buf` as for `tk_http_headers`.
///
/// # Safety
/// `strategy` must be NULL or a live strategy; `buf` must be valid for writes of `len` bytes;
/// `out_n` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_strategy_to_json(
    strategy: *const tk_strategy,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> tk_result {
    guard(|| {
        let strategy = try_arg!(unsafe { borrow(strategy, "strategy") });
        match serde_json::to_string(strategy.inner.spec()) {
            Ok(text) => unsafe { answer_text(&text, buf, len, out_n) },
            Err(e) => from_error(&throttlekit::Error::config("strategy", &e.to_string())),
        }
    })
}

/// The RFC 9457 `application/problem+json` body of a `429` for the denied `decision`
/// (`quota-exceeded`, with a `detail` naming the same wait as `Retry-After`), or, when
/// `decision` is NULL, the body of the `503` a middleware sends when the store could not decide
/// (`temporary-reduced-capacity`). Copied into `buf` as for `tk_http_headers`.
///
/// # Safety
/// `decision` must be NULL or point to a `tk_decision`; `buf` must be valid for writes of `len`
/// bytes; `out_n` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_http_problem_body(
    decision: *const tk_decision,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> tk_result {
    guard(|| {
        let body = if decision.is_null() {
            unavailable_body()
        } else {
            // SAFETY: non-NULL, and the caller's contract makes it a readable tk_decision.
            quota_exceeded_body(&Decision::from(unsafe { *decision }))
        };
        unsafe { answer_text(&body, buf, len, out_n) }
    })
}
