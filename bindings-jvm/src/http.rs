//! The HTTP edge for middleware (the servlet filter): one call per request takes the peer
//! address and the forwarding header's values, derives the client key (core's
//! `ClientIdentity`), checks it at one clock reading, and renders the response header lines and
//! the 429 problem body (core's), so the Java filter only copies bytes into the response.

use jni_sys::{JNIEnv, jbyteArray, jclass, jlong};
use serde_json::json;
use throttlekit::http::{self, ClientIdentity, ClientKeyOptions, ForwardedHeader, HeaderOptions, LimitStatus};
use throttlekit::{Error, ErrorCode, Limiter};

use crate::env::{bytes, new_bytes, text};
use crate::{guard, handle};

/// A filter's options: the header family and policy, and how to find the client.
pub(crate) struct HttpEdge {
    options: HeaderOptions,
    identity: ClientIdentity,
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
        Ok(handle::leak(HttpEdge { options, identity: ClientIdentity::new(&client)?, header }))
    })
}

/// One request: `{"outcome": "forward"|"deny"|"unavailable", "key", "decision", "lines", "body"}`.
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
        let key = e.identity.key_for_peer(&peer, &headers)?;
        let now = l.clock().now_ms();
        let out = match l.check_sync_at(&key, crate::scratch::cost(cost)?, now) {
            Ok(d) => {
                let lines =
                    http::rate_limit_headers(&[LimitStatus::single(l.strategy(), d, Some(&key))], &e.options, now)?;
                json!({
                    "outcome": if d.allowed { "forward" } else { "deny" },
                    "key": key,
                    "decision": crate::scratch::decision_longs(&d),
                    "lines": lines,
                    "body": if d.allowed { String::new() } else { http::quota_exceeded_body(&d) },
                })
            }
            Err(err) if err.code() == ErrorCode::StoreUnavailable => json!({
                "outcome": "unavailable", "key": key, "lines": [], "body": http::unavailable_body(),
            }),
            Err(err) => return Err(err),
        };
        Ok(new_bytes(env, out.to_string().as_bytes()))
    })
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
