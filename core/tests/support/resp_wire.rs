//! A socket as a binding's own transport would use it (the tests of `redis::transport`): the
//! prepared bytes written, the RESP reply frames read back whole.
//!
//! Include it with `#[path = "support/resp_wire.rs"] mod resp_wire;`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

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
                let Some(end) = frame_end(&got, at) else { break };
                out.push(got[at..end].to_vec());
                at = end;
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

/// The end of the RESP2 frame at `b[at..]`, or `None` while it is incomplete.
pub fn frame_end(b: &[u8], at: usize) -> Option<usize> {
    let cr = at + b.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
    let head = std::str::from_utf8(&b[at + 1..cr]).ok();
    let next = cr + 2;
    match b[at] {
        b'$' => {
            let len: i64 = head?.parse().ok()?;
            let end = if len < 0 { next } else { next + len as usize + 2 };
            (end <= b.len()).then_some(end)
        }
        b'*' => (0..head?.parse::<usize>().ok()?).try_fold(next, |k, _| frame_end(b, k)),
        _ => Some(next),
    }
}
