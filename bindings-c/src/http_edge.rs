//! [`tk_http_edge`]: core's `HttpEdge` through the C ABI, the HTTP path with no JSON per request.
//!
//! A middleware builds one edge from its options (JSON, parsed once), then per request passes
//! borrowed bytes (the peer address, the forwarding headers' values, the key) and gets the
//! client key, the outcome (`tk_http_outcome`: forward, shadow, deny 429, unavailable 503) and
//! the header lines back in caller buffers, and the problem body from `tk_http_outcome_body`. The lines are
//! `Name: value\n`, one per header line, exactly the lines `tk_http_headers` returns as JSON.
//! Text outputs follow `tk_http_headers`' buffer rule: truncated to `len - 1` bytes and
//! NUL-terminated, the full length in `*out_n`.

use std::borrow::Cow;
use std::cell::RefCell;
use std::ffi::c_char;

use throttlekit::http::{Action, Decided, HeaderBlock, HttpEdge, Outcome, error_response};
use throttlekit::{FailPolicy, MultiDecision};

use crate::args::{borrow, bytes, free_handle, into_handle, optional_string, out, strings, try_arg, try_core};
use crate::decision::tk_decision;
use crate::http::{TextBuf, TextOut, answer_text};
use crate::limiter::tk_limiter;
use crate::multi::tk_multi_limiter;
use crate::panic::{guard, guard_void};
use crate::result::tk_result;

/// A middleware's validated HTTP options: header family, policy name and partition-key secret,
/// client identity rules, its own fail policy and shadow mode.
///
/// Ownership: created by `tk_http_edge_new`, released with `tk_http_edge_free`.
///
/// Thread safety: immutable; every function except `tk_http_edge_free` may be called
/// concurrently from any thread.
pub struct tk_http_edge {
    inner: HttpEdge,
}

/// Builds an edge. `header_options_json` is core's HeaderOptions (`{"family", "policyName",
/// "partitionKeySecret"}`), `client_key_options_json` its ClientKeyOptions (`{"trustedProxies",
/// "ipv6Prefix", "forwardedHeader"}`); NULL or `""` means the defaults. `fail_policy` is the
/// middleware's own `tk_fail_policy` for a limiter that reports `store_unavailable`
/// (`TK_FAIL_POLICY_DEFAULT` is `TK_FAIL_POLICY_RAISE` here: the middleware answers 503).
/// `shadow` turns shadow mode on: a denied request is reported (`TK_HTTP_ACTION_SHADOW`) but
/// forwarded. Bad options are `TK_RESULT_CONFIG_INVALID`.
///
/// # Safety
/// The strings must be NULL or NUL-terminated; `out_edge` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_http_edge_new(
    header_options_json: *const c_char,
    client_key_options_json: *const c_char,
    fail_policy: u32,
    shadow: bool,
    out_edge: *mut *mut tk_http_edge,
) -> tk_result {
    guard(|| {
        let headers = try_arg!(unsafe { optional_string(header_options_json, "header_options_json") });
        let client = try_arg!(unsafe { optional_string(client_key_options_json, "client_key_options_json") });
        let policy = try_arg!(crate::config::fail_policy(fail_policy)).unwrap_or(FailPolicy::Raise);
        let o = try_arg!(unsafe { out(out_edge, "out_edge") });
        let edge =
            try_core!(HttpEdge::from_json(headers.unwrap_or(""), client.unwrap_or(""), policy)).with_shadow(shadow);
        into_handle(tk_http_edge { inner: edge }, o)
    })
}

/// Releases an edge; NULL is a no-op.
///
/// # Safety
/// `edge` must be NULL or a live handle from `tk_http_edge_new`, not in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_http_edge_free(edge: *mut tk_http_edge) {
    guard_void(|| unsafe { free_handle(edge) })
}

/// Per-thread text buffers reused by every per-request export: the client key and the header
/// lines are written here, then copied to the caller, so a request allocates nothing on this
/// side (a `String` per call was the largest cost left in `tk_http_edge_check` after the check).
struct Scratch {
    key: String,
    lines: String,
}

/// A buffer that grew past this (a long policy name, a huge key) is dropped after the call
/// rather than kept for the thread's life.
const SCRATCH_KEEP: usize = 4096;

thread_local! {
    static SCRATCH: RefCell<Scratch> = const { RefCell::new(Scratch { key: String::new(), lines: String::new() }) };
}

/// Runs `f` with this thread's cleared scratch buffers (fresh ones if they are unavailable: a
/// thread being torn down, or a nested call, which no export makes).
fn with_scratch<R>(f: impl FnOnce(&mut String, &mut String) -> R) -> R {
    let mut f = Some(f);
    let reused = SCRATCH.try_with(|cell| {
        let mut s = cell.try_borrow_mut().ok()?;
        let Scratch { key, lines } = &mut *s;
        key.clear();
        lines.clear();
        let r = (f.take()?)(key, lines);
        for b in [key, lines] {
            if b.capacity() > SCRATCH_KEEP {
                *b = String::new();
            }
        }
        Some(r)
    });
    match reused {
        Ok(Some(r)) => r,
        // `f` was not taken on either failure path.
        _ => (f.take().expect("scratch closure unused"))(&mut String::new(), &mut String::new()),
    }
}

/// Bytes a caller passed as header text: kept lossily when not UTF-8 (a hop that does not parse
/// ends the walk, as in every other binding), never dropped.
///
/// # Safety
/// As for `args::bytes`.
unsafe fn lossy<'a>(p: *const c_char, len: usize, name: &str) -> Result<Cow<'a, str>, tk_result> {
    unsafe { bytes(p, len, name) }.map(String::from_utf8_lossy)
}

/// The key a request counts against (as `tk_http_client_key`): `peer` is the socket peer
/// (`"192.0.2.1"`, `"192.0.2.1:5000"`, `"[2001:db8::1]:443"`), `x_forwarded_for` and
/// `forwarded` the values of those headers, a header's repeated lines joined with `\n` (length
/// 0 when absent; the pointer may then be NULL). Only the header the options name is read.
/// A peer that is not an IP address is `TK_RESULT_CONFIG_INVALID`. The key is copied into `buf`
/// (truncated to `len - 1` bytes, NUL-terminated) with its full length in `*out_n`.
///
/// # Safety
/// `edge` must be a live handle; each (pointer, length) pair readable for that many bytes;
/// `buf` valid for writes of `len` bytes (NULL when `len == 0`); `out_n` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_http_edge_client_key(
    edge: *const tk_http_edge,
    peer: *const c_char,
    peer_len: usize,
    x_forwarded_for: *const c_char,
    x_forwarded_for_len: usize,
    forwarded: *const c_char,
    forwarded_len: usize,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> tk_result {
    guard(|| {
        let edge = &try_arg!(unsafe { borrow(edge, "edge") }).inner;
        let peer = try_arg!(unsafe { lossy(peer, peer_len, "peer") });
        let xff = try_arg!(unsafe { lossy(x_forwarded_for, x_forwarded_for_len, "x_forwarded_for") });
        let fwd = try_arg!(unsafe { lossy(forwarded, forwarded_len, "forwarded") });
        with_scratch(|key, _| {
            try_core!(edge.write_client_key(&peer, &xff, &fwd, key));
            unsafe { answer_text(key, buf, len, out_n) }
        })
    })
}

/// The arguments of a call about one key of one limiter, checked in this order: the edge, the
/// limiter, the key (`key_len` bytes of UTF-8 without NUL bytes).
///
/// # Safety
/// `edge` and `limiter` NULL or live handles; `key` NULL or readable for `key_len` bytes.
unsafe fn limiter_key<'a>(
    edge: *const tk_http_edge,
    limiter: *const tk_limiter,
    key: *const c_char,
    key_len: usize,
) -> Result<(&'a HttpEdge, &'a throttlekit::Limiter, &'a str), tk_result> {
    let edge = unsafe { borrow(edge, "edge") }?;
    let limiter = unsafe { borrow(limiter, "limiter") }?;
    let key = unsafe { crate::args::key(key, key_len, "key") }?;
    Ok((&edge.inner, &limiter.inner, key))
}

/// What the middleware does with a request (core's `http::Action`): the number in
/// `tk_http_outcome.action`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tk_http_action {
    /// Admitted (or admitted by fail-open): call the handler, add the header lines to its
    /// response.
    Forward = 0,
    /// Denied in shadow mode: call the hook, then forward with the lines (`Retry-After`
    /// included).
    Shadow = 1,
    /// Denied (by the limiter or by fail-closed): call the hook, then answer `status` (429) with
    /// the lines and `tk_http_outcome_body`.
    Deny = 2,
    /// The store did not answer and the fail policy raises: answer `status` (503) with
    /// `tk_http_outcome_body` and no rate-limit field.
    Unavailable = 3,
}

/// What the edge decided for a request (core's `http::Outcome`).
///
/// Ownership: caller-allocated plain data, written only on `TK_RESULT_OK`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tk_http_outcome {
    /// A `tk_http_action`.
    pub action: u32,
    /// The status the middleware answers with itself: 429, 503, or 0 to forward.
    pub status: u32,
    /// The request's decision (a multi limiter's binding one): the limiter's, or the fail
    /// policy's fallback (`fallback` set); all zero for `TK_HTTP_ACTION_UNAVAILABLE`.
    pub decision: tk_decision,
    /// A multi limiter's binding dimension, its index in declaration order (0 otherwise).
    pub binding: usize,
}

impl tk_http_outcome {
    fn new<D: Decided>(o: &Outcome<D>, binding: usize) -> tk_http_outcome {
        tk_http_outcome {
            action: o.action.code(),
            status: u32::from(o.status()),
            decision: o.request_decision().map(|d| (*d).into()).unwrap_or_default(),
            binding,
        }
    }

    /// The core outcome this struct describes (its body depends on nothing else).
    fn core(&self) -> Result<Outcome, tk_result> {
        let Some(action) = Action::from_code(self.action) else {
            crate::result::set_last_error(&format!("config_invalid: action {} is not a tk_http_action", self.action));
            return Err(tk_result::ConfigInvalid);
        };
        let decision = (action != Action::Unavailable).then(|| self.decision.into());
        Ok(Outcome { action, decision, now_ms: 0 })
    }
}

/// Checks `cost` units for `key` (`key_len` bytes of UTF-8 without NUL bytes, not
/// NUL-terminated, as for `tk_limiter_check_n`) on `limiter` at `now_ms`, settles the result
/// with the edge's fail policy and shadow mode into `*out_outcome`, and writes the header lines
/// (`Name: value\n` each) into `buf` as for `tk_http_edge_client_key`. An unavailable store is
/// not an error: under `TK_FAIL_POLICY_RAISE` it is `TK_HTTP_ACTION_UNAVAILABLE` (status 503, no
/// lines). The check happens once: when `*out_n >= len` the outcome is still written, and
/// `tk_http_edge_lines` renders the lines again into a larger buffer.
///
/// # Safety
/// `edge` and `limiter` must be live handles; `key` readable for `key_len` bytes;
/// `out_outcome` writable; `buf` valid for writes of `len` bytes; `out_n` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_http_edge_check(
    edge: *const tk_http_edge,
    limiter: *const tk_limiter,
    key: *const c_char,
    key_len: usize,
    cost: u64,
    now_ms: i64,
    out_outcome: *mut tk_http_outcome,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> tk_result {
    guard(|| {
        let (edge, limiter, key) = try_arg!(unsafe { limiter_key(edge, limiter, key, key_len) });
        let o = try_arg!(unsafe { out(out_outcome, "out_outcome") });
        let text = try_arg!(unsafe { TextOut::new(buf, len, out_n) });
        let outcome = try_core!(edge.check(limiter, key, cost, now_ms));
        with_scratch(|_, lines| {
            try_core!(edge.write_outcome_lines(limiter, key, &outcome, &mut HeaderBlock(lines)));
            *o = tk_http_outcome::new(&outcome, 0);
            unsafe { text.write(lines) }
        })
    })
}

/// A whole request in one call: the client key (as `tk_http_edge_client_key`), then the check of
/// `cost` units for that key, its outcome and its header lines (as `tk_http_edge_check`). `buf`
/// receives the key immediately followed by the lines, as one text under the buffer rule of
/// `tk_http_edge_client_key` (truncated to `len - 1` bytes, NUL-terminated, the full length in
/// `*out_n`); `*out_key_n` is the key's length, so the key is `buf[0..*out_key_n]` and the
/// lines `buf[*out_key_n..*out_n]`. A peer that is not an IP address is
/// `TK_RESULT_CONFIG_INVALID` and nothing is checked. The check happens once: when
/// `*out_n >= len` the outcome is still written, and `tk_http_edge_lines` renders the lines
/// again into a larger buffer.
///
/// Why one call: a middleware made two (the key, then the check), and on Go each crossing costs
/// more than the key's parsing.
///
/// # Safety
/// `edge` and `limiter` must be live handles; each (pointer, length) pair readable for that
/// many bytes (a pointer may be NULL when its length is 0); `out_outcome`, `out_key_n` and
/// `out_n` writable; `buf` valid for writes of `len` bytes (NULL when `len == 0`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_http_edge_check_request(
    edge: *const tk_http_edge,
    limiter: *const tk_limiter,
    peer: *const c_char,
    peer_len: usize,
    x_forwarded_for: *const c_char,
    x_forwarded_for_len: usize,
    forwarded: *const c_char,
    forwarded_len: usize,
    cost: u64,
    now_ms: i64,
    out_outcome: *mut tk_http_outcome,
    buf: *mut c_char,
    len: usize,
    out_key_n: *mut usize,
    out_n: *mut usize,
) -> tk_result {
    guard(|| {
        let edge = &try_arg!(unsafe { borrow(edge, "edge") }).inner;
        let limiter = &try_arg!(unsafe { borrow(limiter, "limiter") }).inner;
        let peer = try_arg!(unsafe { lossy(peer, peer_len, "peer") });
        let xff = try_arg!(unsafe { lossy(x_forwarded_for, x_forwarded_for_len, "x_forwarded_for") });
        let fwd = try_arg!(unsafe { lossy(forwarded, forwarded_len, "forwarded") });
        let o = try_arg!(unsafe { out(out_outcome, "out_outcome") });
        let text_buf = try_arg!(TextBuf::new(buf, len));
        let key_n = try_arg!(unsafe { out(out_key_n, "out_key_n") });
        let text_out = try_arg!(unsafe { text_buf.with_n(out_n) });
        with_scratch(|key, text| {
            try_core!(edge.write_client_key(&peer, &xff, &fwd, key));
            let outcome = try_core!(edge.check(limiter, key, cost, now_ms));
            text.push_str(key);
            try_core!(edge.write_outcome_lines(limiter, key, &outcome, &mut HeaderBlock(text)));
            *o = tk_http_outcome::new(&outcome, 0);
            *key_n = key.len();
            unsafe { text_out.write(text) }
        })
    })
}

/// The header lines (`Name: value\n` each) of `limiter`'s `decision` for `key` at `now_ms`, as
/// `tk_http_edge_check` writes them; for a retry with a larger buffer, or for a decision made
/// elsewhere. Copied into `buf` as for `tk_http_edge_client_key`.
///
/// # Safety
/// As for `tk_http_edge_check`; `decision` must point to a readable `tk_decision`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_http_edge_lines(
    edge: *const tk_http_edge,
    limiter: *const tk_limiter,
    key: *const c_char,
    key_len: usize,
    decision: *const tk_decision,
    now_ms: i64,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> tk_result {
    guard(|| {
        let (edge, limiter, key) = try_arg!(unsafe { limiter_key(edge, limiter, key, key_len) });
        let decision = *try_arg!(unsafe { borrow(decision, "decision") });
        with_scratch(|_, lines| {
            try_core!(edge.write_lines(limiter, key, &decision.into(), now_ms, lines));
            unsafe { answer_text(lines, buf, len, out_n) }
        })
    })
}

/// The arguments of a call about a multi limiter's keys, checked in this order: the edge, the
/// limiter, the keys.
///
/// # Safety
/// `edge` and `multi` NULL or live handles; `keys` NULL or `keys_len` NUL-terminated strings.
unsafe fn multi_keys<'a>(
    edge: *const tk_http_edge,
    multi: *const tk_multi_limiter,
    keys: *const *const c_char,
    keys_len: usize,
) -> Result<(&'a HttpEdge, &'a throttlekit::MultiLimiter, Vec<&'a str>), tk_result> {
    let edge = unsafe { borrow(edge, "edge") }?;
    let multi = unsafe { borrow(multi, "multi") }?;
    let keys = unsafe { strings(keys, keys_len, "keys") }?;
    Ok((&edge.inner, &multi.inner, keys))
}

/// A multi limiter's request: checks `cost` units for `keys` (one NUL-terminated key per
/// dimension, in declaration order; a count other than the dimensions' is
/// `TK_RESULT_CONFIG_INVALID`) at `now_ms`, settles the result with the edge's fail policy and
/// shadow mode into `*out_outcome` (its `binding` the binding dimension's index), and writes the
/// header lines (one list member per dimension, the binding one first) into `buf` as for
/// `tk_http_edge_client_key`. An unavailable store under `TK_FAIL_POLICY_RAISE` is
/// `TK_HTTP_ACTION_UNAVAILABLE`. When `*out_n >= len` the outcome is still written, and
/// `out_dimensions` (nullable; `keys_len` slots, every dimension's own decision) lets
/// `tk_http_edge_multi_lines` render the lines again into a larger buffer.
///
/// # Safety
/// `edge` and `multi` must be live handles; `keys` must point to `keys_len` NUL-terminated
/// strings; `out_outcome` writable; `out_dimensions` NULL or valid for `keys_len` writes; `buf`
/// valid for writes of `len` bytes; `out_n` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_http_edge_check_multi(
    edge: *const tk_http_edge,
    multi: *const tk_multi_limiter,
    keys: *const *const c_char,
    keys_len: usize,
    cost: u64,
    now_ms: i64,
    out_outcome: *mut tk_http_outcome,
    out_dimensions: *mut tk_decision,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> tk_result {
    guard(|| {
        let (edge, m, keys) = try_arg!(unsafe { multi_keys(edge, multi, keys, keys_len) });
        let o = try_arg!(unsafe { out(out_outcome, "out_outcome") });
        let text = try_arg!(unsafe { TextOut::new(buf, len, out_n) });
        let outcome = try_core!(edge.check_multi(m, &keys, cost, now_ms));
        with_scratch(|_, lines| {
            try_core!(edge.write_multi_outcome_lines(m, &keys, &outcome, &mut HeaderBlock(lines)));
            let binding = outcome
                .decision
                .as_ref()
                .and_then(|d| m.dimensions().iter().position(|x| x.name == d.binding))
                .unwrap_or(0);
            *o = tk_http_outcome::new(&outcome, binding);
            if let (false, Some(d)) = (out_dimensions.is_null(), &outcome.decision) {
                for (i, dim) in d.dimensions.iter().enumerate().take(keys_len) {
                    // SAFETY: the caller provides `keys_len` slots.
                    unsafe { *out_dimensions.add(i) = (*dim).into() };
                }
            }
            unsafe { text.write(lines) }
        })
    })
}

/// The header lines of a multi limiter's outcome, as `tk_http_edge_check_multi` writes them:
/// `outcome` and `dimensions` (`keys_len` decisions) as it returned them, for a retry with a
/// larger buffer. Copied into `buf` as for `tk_http_edge_client_key`.
///
/// # Safety
/// As for `tk_http_edge_check_multi`; `outcome` readable, `dimensions` readable for `keys_len`
/// decisions.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_http_edge_multi_lines(
    edge: *const tk_http_edge,
    multi: *const tk_multi_limiter,
    keys: *const *const c_char,
    keys_len: usize,
    outcome: *const tk_http_outcome,
    dimensions: *const tk_decision,
    now_ms: i64,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> tk_result {
    guard(|| {
        let (edge, m, keys) = try_arg!(unsafe { multi_keys(edge, multi, keys, keys_len) });
        let outcome = *try_arg!(unsafe { borrow(outcome, "outcome") });
        if dimensions.is_null() && keys_len > 0 {
            return crate::args::null("dimensions");
        }
        let action = try_arg!(outcome.core()).action;
        let decision = (action != Action::Unavailable).then(|| MultiDecision {
            decision: outcome.decision.into(),
            binding: m.dimensions().get(outcome.binding).map(|d| d.name.clone()).unwrap_or_default(),
            // SAFETY: the caller provides `keys_len` readable decisions.
            dimensions: (0..keys_len).map(|i| unsafe { *dimensions.add(i) }.into()).collect(),
        });
        let outcome = Outcome { action, decision, now_ms };
        with_scratch(|_, lines| {
            try_core!(edge.write_multi_outcome_lines(m, &keys, &outcome, &mut HeaderBlock(lines)));
            unsafe { answer_text(lines, buf, len, out_n) }
        })
    })
}

/// The body of the middleware's own answer to `outcome`: core's RFC 9457
/// `application/problem+json` text, `quota-exceeded` for `TK_HTTP_ACTION_DENY` (its `detail`
/// names the same wait as `Retry-After`), `temporary-reduced-capacity` for
/// `TK_HTTP_ACTION_UNAVAILABLE`, empty when the request is forwarded. Copied into `buf` as for
/// `tk_http_edge_client_key`. An unknown action is `TK_RESULT_CONFIG_INVALID`.
///
/// # Safety
/// `outcome` readable; `buf` valid for writes of `len` bytes; `out_n` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_http_outcome_body(
    outcome: *const tk_http_outcome,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> tk_result {
    guard(|| {
        let outcome = try_arg!(try_arg!(unsafe { borrow(outcome, "outcome") }).core());
        unsafe { answer_text(&outcome.body().unwrap_or_default(), buf, len, out_n) }
    })
}

/// The answer to a request that could not be decided because of an error whose code is `code`
/// (NUL-terminated; `"config_invalid"` for a bad peer or a key function's error, `"internal"`
/// for an error without one): `*out_status` is 503 for `"store_unavailable"` and 500 otherwise,
/// and the `application/problem+json` body is copied into `buf` as for
/// `tk_http_edge_client_key`.
///
/// # Safety
/// `code` NUL-terminated; `out_status` writable; `buf` valid for writes of `len` bytes; `out_n`
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_http_error_response(
    code: *const c_char,
    out_status: *mut u32,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> tk_result {
    guard(|| {
        let code = try_arg!(unsafe { crate::args::string(code, "code") });
        let status = try_arg!(unsafe { out(out_status, "out_status") });
        let (s, body) = error_response(code);
        *status = u32::from(s);
        unsafe { answer_text(&body, buf, len, out_n) }
    })
}
