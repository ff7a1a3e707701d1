//! The REST front end (`tests/restfront/restfront.py`) for integration tests: started on a free
//! loopback port in front of a redis-server, stopped by PID when dropped.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};

/// The token every test front end wants.
pub const TOKEN: &str = "test-token";

/// A running front end.
pub struct RestFront {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl RestFront {
    /// In front of the redis-server on `redis_port`, with `fault` (`none`, `hang`, `refuse`,
    /// `garbage`, `drop`).
    pub fn start(redis_port: u16, fault: &str) -> RestFront {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/restfront/restfront.py");
        let mut child = Command::new("python3")
            .args([script, "--redis-port", &redis_port.to_string(), "--token", TOKEN, "--fault", fault])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the REST front end");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("its stdout")).read_line(&mut line).expect("its first line");
        let port = line.trim().strip_prefix("listening ").and_then(|p| p.parse().ok());
        let Some(port) = port else {
            let _ = child.kill();
            panic!("the REST front end did not start: {line:?}");
        };
        RestFront { child, port }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its `/__stats` counters: (requests served, scripts seen with the key-locking flag).
    pub fn stats(&self) -> (u64, u64) {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect to the front end");
        s.write_all(b"GET /__stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").expect("write");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("read");
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        let v: serde_json::Value = serde_json::from_str(body).expect("stats JSON");
        (v["requests"].as_u64().unwrap_or(0), v["flagged"].as_u64().unwrap_or(0))
    }
}

impl Drop for RestFront {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
