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
    /// The TLS port, when the arguments asked for one with `{tls_port}`.
    pub tls_port: Option<u16>,
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

/// A loopback port nobody holds right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free loopback port")
}

/// A free loopback port below 55536 whose cluster bus port (port + 10000) is free too.
pub fn free_port_with_bus() -> u16 {
    loop {
        let port = free_port();
        if port < 55536 && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
}

/// `redis-cli` arguments, output as text (`None` if it could not run or failed).
///
/// Bounded by coreutils' `timeout` (20 s), so a server that hangs fails the test instead of
/// hanging it.
pub fn cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("timeout")
        .args(["20", "redis-cli", "-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).replace('\r', ""))
}

/// The value of `field` in an `INFO`-style reply.
pub fn field(text: &str, field: &str) -> Option<String> {
    text.lines().find_map(|l| l.strip_prefix(&format!("{field}:")).map(|v| v.trim().to_string()))
}

/// How many times the server on `port` ran `cmd` (`INFO commandstats`: `cmdstat_<cmd>`'s
/// `calls=`; 0 when the line is absent).
pub fn calls(port: u16, cmd: &str) -> u64 {
    let stats = cli(port, &["info", "commandstats"]).unwrap_or_default();
    field(&stats, &format!("cmdstat_{cmd}"))
        .and_then(|v| v.split(',').find_map(|kv| kv.strip_prefix("calls=").and_then(|n| n.parse().ok())))
        .unwrap_or(0)
}

/// Blocks the server on `port` with `DEBUG SLEEP secs` from a thread of its own, and returns
/// only once the server is in that sleep, so a call made next is certain to wait behind it.
/// Join the handle to wait for the sleep to end.
///
/// "In that sleep" is read from the kernel: the server's main thread waiting in `nanosleep`
/// (`/proc/PID/wchan`), which it does for nothing but `DEBUG SLEEP` (idle, it waits in
/// `epoll_wait`). A fixed pause lost the race on a loaded machine (the call went out before the
/// sleep and succeeded), and so did the test this replaced, a `PING` unanswered for 50 ms: a
/// server not scheduled for 50 ms, still to read the `DEBUG SLEEP`, looked blocked too. That
/// test remains only for a kernel that does not name wait channels (or no `/proc`).
pub fn block_server(port: u16, secs: u32) -> std::thread::JoinHandle<std::io::Result<String>> {
    let pid = server_pid(port).expect("the server's PID (INFO server)");
    // Idle, the server waits in a named channel (`do_epoll_wait`) unless the kernel hides them
    // (`0`, which a running process shows too: so several readings).
    let named = (0..200).any(|_| {
        let named = wchan(pid).is_some_and(|w| w != "0");
        if !named {
            std::thread::sleep(Duration::from_millis(1));
        }
        named
    });
    let sleeper = std::thread::spawn(move || raw_command(port, &format!("DEBUG SLEEP {secs}")));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "DEBUG SLEEP never blocked the server on port {port}");
        let blocked = if named {
            wchan(pid).is_some_and(|w| w.contains("nanosleep"))
        } else {
            !answers_ping_within(port, Duration::from_millis(50))
        };
        if blocked {
            return sleeper;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Where the main thread of process `pid` waits (`/proc/PID/wchan`: a kernel function, or `0`
/// while it runs); `None` without that file.
fn wchan(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/wchan")).ok().map(|w| w.trim().to_string())
}

/// Whether the server on `port` answers `PING` within `wait`.
fn answers_ping_within(port: u16, wait: Duration) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    if s.set_read_timeout(Some(wait)).is_err() || s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 16];
    matches!(s.read(&mut buf), Ok(n) if n > 0)
}

/// Sends one inline command and returns the raw reply (enough for PING and DEBUG), waiting for
/// it up to 10 s (longer than any `DEBUG SLEEP` the tests send).
pub fn raw_command(port: u16, line: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(format!("{line}\r\n").as_bytes())?;
    let mut buf = [0u8; 512];
    let n = s.read(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// The PID of whichever server answers on `port` (from `INFO server`), read until that line
/// arrives: the reply is longer than one read may return.
pub fn server_pid(port: u16) -> std::io::Result<u32> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.write_all(b"INFO server\r\n")?;
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    while reply.len() < 64 * 1024 {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&reply);
        if let Some(rest) = text.split("process_id:").nth(1)
            && let Some((pid, _)) = rest.split_once("\r\n")
        {
            return pid.trim().parse().map_err(|_| std::io::Error::other("a malformed process_id"));
        }
    }
    Err(std::io::Error::other("no process_id in INFO server"))
}

impl RedisServer {
    /// Starts a server on a free port and waits (up to 10 s) until it answers `PING`.
    ///
    /// A port that was free when we asked can be taken by another process before our server binds
    /// it (other tests start servers too). So each attempt asks for a fresh port: retrying the same
    /// port would fail every time once someone else holds it.
    pub fn start() -> RedisServer {
        RedisServer::start_with(&[], free_port)
    }

    /// [`RedisServer::start`] with `extra` arguments appended to the command line (TLS, cluster
    /// and ACL settings), on ports from `port` (a fresh one per attempt). `{port}` and `{dir}`
    /// in an argument stand for the attempt's port and the server's own directory; `{tls_port}`
    /// for a second fresh port (then in [`RedisServer::tls_port`]).
    pub fn start_with(extra: &[String], port: fn() -> u16) -> RedisServer {
        for attempt in 0..6 {
            let port = port();
            if let Some(server) = RedisServer::try_start(port, extra) {
                return server;
            }
            eprintln!("redis-server could not serve port {port} (attempt {attempt}); trying another port");
        }
        panic!("redis-server did not start on any of 6 fresh ports");
    }

    /// Starts a server on `port` (to restart one where clients expect it). The port was ours a
    /// moment ago, so a failure is retried on the same port for a while (the kernel may still hold
    /// it briefly after the old server's exit).
    pub fn start_on(port: u16) -> RedisServer {
        RedisServer::start_on_with(port, &[])
    }

    /// [`RedisServer::start_on`] with `extra` arguments (`--replicaof`, to bring a killed
    /// master back as a replica).
    pub fn start_on_with(port: u16, extra: &[String]) -> RedisServer {
        for _ in 0..6 {
            if let Some(server) = RedisServer::try_start(port, extra) {
                return server;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("redis-server on port {port} did not answer PING");
    }

    /// One attempt: spawns the server and waits until *it* (checked by its PID, not just anyone
    /// on the port) answers. `None` if it exited or never answered; the child is reaped.
    fn try_start(port: u16, extra: &[String]) -> Option<RedisServer> {
        let bin = binary();
        let dir = std::env::temp_dir().join(format!("throttlekit-redis-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temp dir for redis-server");
        let dir_s = dir.to_str().expect("a UTF-8 temp dir").to_string();
        // Its bus port (+10000) is free too, for a cluster whose bus runs on TLS.
        let tls_port = extra.iter().any(|a| a.contains("{tls_port}")).then(free_port_with_bus);
        let extra = extra.iter().map(|a| {
            a.replace("{port}", &port.to_string())
                .replace("{dir}", &dir_s)
                .replace("{tls_port}", &tls_port.unwrap_or(0).to_string())
        });
        let child = Command::new(&bin)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--dir", &dir_s, "--protected-mode", "no", "--enable-debug-command", "local"])
            // A replica's first sync starts at once (default: 5 s later), so failover tests
            // need not wait for it.
            .args(["--repl-diskless-sync-delay", "0"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
        let pid = child.id();
        let mut server = RedisServer { child: Some(child), port, tls_port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(Ok(Some(_))) = server.child.as_mut().map(|c| c.try_wait()) {
                break; // exited: the port was taken after all
            }
            if server_pid(port).is_ok_and(|p| p == pid) {
                return Some(server);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        server.stop();
        None
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The server's own directory (its `--dir`).
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Whether the server process is still running (not killed, not exited).
    pub fn is_running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(None)))
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
