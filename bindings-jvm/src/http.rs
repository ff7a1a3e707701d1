//! The HTTP edge for middleware (the servlet filter): one call per request takes the peer
//! address and the forwarding header's values, derives the client key (core's
//! `ClientIdentity`), checks it at one clock reading, and hands the result to core's `HttpEdge`,
//! which settles the outcome (forward, deny 429, unavailable 503) with the response header lines
//! and the problem body, the lines written in place by core's `LineSink` writer, so the Java
//! filter only copies bytes into the response.

use jni_sys::{JNIEnv, jbyteArray, jclass, jlong};
use throttlekit::http::{self, Action, ClientKeyOptions, ForwardedHeader, HeaderOptions, LineSink};
use throttlekit::{Error, FailPolicy, Limiter};

use crate::env::{bytes, new_bytes, text};
use crate::{guard, handle};

/// A filter's options: core's edge (the header family and policy, how to find the client, and
/// the `Raise` fail policy: the limiter's own policy decides, and a store error it lets through
/// is a 503), and the forwarding header's name.
pub(crate) struct HttpEdge {
    edge: http::HttpEdge,
    /// The forwarding header the trusted proxies write, lower case.
    header: &'static str,
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_httpEdgeNew(
    env: *mut JNIEnv,
    _: jclass,
    header_options: jbyteArray,
    client_options: jbyteArray,
) -> jlong {
    guard(env, || unsafe {
        let options = HeaderOptions::from_json(&text(env, header_options, "headerOptions")?)?;
        let client = ClientKeyOptions::from_json(&text(env, client_options, "clientKeyOptions")?)?;
        let header = match client.forwarded_header {
            ForwardedHeader::XForwardedFor => "x-forwarded-for",
            ForwardedHeader::Forwarded => "forwarded",
        };
        Ok(handle::leak(HttpEdge { edge: http::HttpEdge::new(options, &client, FailPolicy::Raise)?, header }))
    })
}

/// One request's verdict, packed (Java's `HttpLimiter.check` reads it): byte 0 the outcome (0
/// forward, 1 deny, 2 unavailable), byte 1 whether a decision follows, the decision's six longs
/// (little-endian; zeros without one), then strings, each a little-endian `u32` length and its
/// UTF-8: the key, the problem body ("" when forwarded), and the header lines as name, value,
/// name, value... to the end.
///
/// Why packed and not JSON: the lines come from core's in-place writer (a [`LineSink`]), so a
/// request builds no `String` per line, no JSON document and no parse on the Java side; the
/// lines are the same bytes, in the same order, as `rate_limit_headers` renders.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_httpEdgeCheck(
    env: *mut JNIEnv,
    _: jclass,
    edge: jlong,
    limiter: jlong,
    peer: jbyteArray,
    forwarded: jbyteArray,
    cost: jlong,
) -> jbyteArray {
    guard(env, || unsafe {
        let e = handle::get::<HttpEdge>(edge, "HTTP edge")?;
        let l = handle::get::<Limiter>(limiter, "limiter")?;
        let peer = text(env, peer, "peer")?;
        let values = crate::scratch::unpack_keys(&bytes(env, forwarded))?;
        let headers: Vec<(&str, &str)> = values.iter().map(|v| (e.header, v.as_str())).collect();
        let key = e.edge.identity().key_for_peer(&peer, &headers)?;
        let now = l.clock().now_ms();
        let outcome = e.edge.check(l, &key, crate::scratch::cost(cost)?, now)?;
        let mut out = Packed { out: Vec::with_capacity(256), name: "", value: String::new() };
        // The filter has no shadow mode: `Shadow` never comes back, and would forward.
        let code = match outcome.action {
            Action::Forward | Action::Shadow => 0,
            Action::Deny => 1,
            Action::Unavailable => 2,
        };
        out.out.extend_from_slice(&[code, u8::from(outcome.decision.is_some())]);
        for v in crate::scratch::decision_longs(&outcome.decision.unwrap_or_default()) {
            out.out.extend_from_slice(&v.to_le_bytes());
        }
        out.push(&key);
        out.push(&outcome.body().unwrap_or_default());
        e.edge.write_outcome_lines(l, &key, &outcome, &mut out)?;
        Ok(new_bytes(env, &out.out))
    })
}

/// [`Java_dev_throttlekit_internal_Native_httpEdgeCheck`]'s packed answer, and the
/// [`LineSink`] that appends each header line to it as two strings.
struct Packed {
    out: Vec<u8>,
    /// The line being written: its name, and its value as core appends it.
    name: &'static str,
    value: String,
}

impl Packed {
    fn push(&mut self, s: &str) {
        self.out.extend_from_slice(&u32::try_from(s.len()).unwrap_or(u32::MAX).to_le_bytes());
        self.out.extend_from_slice(s.as_bytes());
    }
}

impl LineSink for Packed {
    fn start(&mut self, name: &'static str) -> &mut String {
        self.name = name;
        self.value.clear();
        &mut self.value
    }

    fn end(&mut self) {
        let value = std::mem::take(&mut self.value);
        self.push(self.name);
        self.push(&value);
        self.value = value;
    }
}

/// The forwarding header's name (lower case), which the filter reads from each request.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_httpEdgeHeader(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
) -> jbyteArray {
    guard(env, || unsafe { Ok(new_bytes(env, handle::get::<HttpEdge>(h, "HTTP edge")?.header.as_bytes())) })
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_httpEdgeFree(env: *mut JNIEnv, _: jclass, h: jlong) {
    guard(env, || -> Result<(), Error> {
        unsafe { handle::free::<HttpEdge>(h) };
        Ok(())
    })
}
