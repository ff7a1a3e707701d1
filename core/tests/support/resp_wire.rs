//! A socket as a binding's own transport would use it (the tests of `redis::transport`): the
//! prepared bytes written, the RESP reply frames read back whole.
//!
//! Include it with `#[path = "support/resp_wire.rs"] mod resp_wire;`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use throttlekit::redis::transport::{self, Hop, PreparedCall};

/// `call`'s first send (`FCALL` when `functions`, else `EVALSHA`).
pub fn first(call: &PreparedCall, functions: bool) -> Vec<u8> {
    let mut out = Vec::new();
    call.write(functions, Hop::default(), &mut out);
    out
}

/// What `call` sends once after the server lacked its script or function.
pub fn retry(call: &PreparedCall, functions: bool) -> Vec<u8> {
    let mut out = Vec::new();
    call.write(functions, Hop::default().with_fallback(), &mut out);
    out
}

/// One call as a binding's own transport sends it: `EVALSHA`, and `EVAL` once after `NOSCRIPT`.
pub fn send(wire: &mut Wire, call: &PreparedCall) -> Vec<u8> {
    let reply = wire.roundtrip(&first(call, false));
    if transport::is_missing(&reply) { wire.roundtrip(&retry(call, false)) } else { reply }
}

/// A socket that writes bytes and reads back exactly one RESP reply frame.
pub struct Wire(pub TcpStream);

impl Wire {
    pub fn open(port: u16) -> Wire {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Wire(s)
    }

    /// Writes `bytes` and reads back `n` reply frames (integers, strings, errors and arrays of
    /// them: every reply here).
    pub fn frames(&mut self, bytes: &[u8], n: usize) -> Vec<Vec<u8>> {
        self.0.write_all(bytes).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let mut out = Vec::new();
            let mut at = 0;
            while out.len() < n {
                // The core's one frame scanner, as every driver finds a reply's end.
                let Some(len) = transport::frame_len(&got[at..]).expect("RESP") else { break };
                out.push(got[at..at + len].to_vec());
                at += len;
            }
            if out.len() == n {
                assert_eq!(at, got.len(), "more replies than asked for");
                return out;
            }
            let k = self.0.read(&mut buf).unwrap();
            assert!(k > 0, "the server closed the connection");
            got.extend_from_slice(&buf[..k]);
        }
    }

    pub fn roundtrip(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.0.write_all(bytes).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = self.0.read(&mut buf).unwrap();
            assert!(n > 0, "the server closed the connection");
            got.extend_from_slice(&buf[..n]);
            // Complete once the parser accepts it (every reply here is small).
            if redis::parse_redis_value(&got).is_ok() {
                return got;
            }
        }
    }
}
