//! A throwaway `redis-server` for integration tests: started on a free loopback port with no
//! persistence, waited on until it answers `PING`, and killed by PID when dropped.
//!
//! Include it with `#[path = "support/redis_server.rs"] mod redis_server;`. A missing
//! `redis-server` is a test failure with a clear message, never a silent skip: `tests/redis.sh`
//! installs it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running redis-server owned by the test.
pub struct RedisServer {
    child: Option<Child>,
    /// Its TCP port on 127.0.0.1.
    pub port: u16,
    dir: std::path::PathBuf,
}

/// The `redis-server` binary: `$REDIS_SERVER`, else the one on `PATH`.
pub fn binary() -> String {
    let bin = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string());
    match Command::new(&bin).arg("--version").output() {
        Ok(out) if out.status.success() => bin,
        _ => panic!(
            "redis-server not found ({bin}): install it (`apt-get install -y redis-server`, or run tests/redis.sh) \
             or point REDIS_SERVER at the binary"
        ),
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free loopback port")
}

/// Sends one inline command and returns the raw reply (enough for PING and DEBUG).
pub fn raw_command(port: u16, line: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.write_all(format!("{line}\r\n").as_bytes())?;
    let mut buf = [0u8; 512];
    let n = s.read(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

impl RedisServer {
    /// Starts a server on a free port and waits (up to 10 s) until it answers `PING`.
    pub fn start() -> RedisServer {
        RedisServer::start_on(free_port())
    }

    /// Starts a server on `port` (to restart one where clients expect it).
    pub fn start_on(port: u16) -> RedisServer {
        let bin = binary();
        let dir = std::env::temp_dir().join(format!("throttlekit-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temp dir for redis-server");
        for attempt in 0.. {
            let child = Command::new(&bin)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .args([
                    "--dir",
                    dir.to_str().unwrap_or("."),
                    "--protected-mode",
                    "no",
                    "--enable-debug-command",
                    "local",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
            let mut server = RedisServer { child: Some(child), port, dir: dir.clone() };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if raw_command(port, "PING").is_ok_and(|r| r.starts_with("+PONG")) {
                    return server;
                }
                if let Some(Ok(Some(_))) = server.child.as_mut().map(|c| c.try_wait()) {
                    break; // exited: the port was taken after all
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            server.stop();
            assert!(attempt < 5, "redis-server on port {port} did not answer PING");
            std::thread::sleep(Duration::from_millis(200));
        }
        unreachable!()
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The server's PID.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).expect("a running server")
    }

    /// Sends a signal to the server by PID (`STOP`, `CONT`, `KILL`).
    pub fn signal(&self, sig: &str) {
        let status = Command::new("kill").args([&format!("-{sig}"), &self.pid().to_string()]).status().expect("kill");
        assert!(status.success(), "kill -{sig} {}", self.pid());
    }

    /// Kills the server by PID and reaps it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-CONT", &child.id().to_string()]).status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
