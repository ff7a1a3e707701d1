//! A throwaway Sentinel setup for integration tests: one master, one replica and three
//! sentinels monitoring service [`SERVICE`] (quorum 2, down after 1 s), each sentinel on a fresh
//! port per attempt with its own rewritable config file, checked by PID like every server here.
//! Waits until every sentinel knows the replica and the other two sentinels, so a failover can
//! happen. Include it beside `redis_server.rs`.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::redis_server::{RedisServer, cli, free_port, server_pid};

/// The monitored service's name.
pub const SERVICE: &str = "tkmain";

/// A sentinel process owned by the test.
pub struct Sentinel {
    child: Child,
    pub port: u16,
    /// Its TLS port, when [`SentinelConf::lines`] asked for one with `{tls_port}`.
    pub tls_port: Option<u16>,
    dir: std::path::PathBuf,
}

/// How the sentinels differ from the plain setup.
#[derive(Clone, Debug, Default)]
pub struct SentinelConf {
    /// Extra `sentinel.conf` lines; `{tls_port}` stands for a fresh port (TLS, `requirepass`).
    pub lines: Vec<String>,
    /// `redis-cli` arguments that log in to a sentinel (`-a pw`), for the readiness checks.
    pub cli_auth: Vec<String>,
    /// Monitor the master (and reach it for replication) on its TLS port.
    pub tls: bool,
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The whole setup.
pub struct SentinelSetup {
    pub master: RedisServer,
    pub replica: RedisServer,
    pub sentinels: Vec<Sentinel>,
}

fn start_sentinel(master_port: u16, conf_lines: &SentinelConf) -> Sentinel {
    for attempt in 0..6 {
        let port = free_port();
        let tls_port = conf_lines.lines.iter().any(|l| l.contains("{tls_port}")).then(free_port);
        let extra: String = conf_lines
            .lines
            .iter()
            .map(|l| l.replace("{tls_port}", &tls_port.unwrap_or(0).to_string()) + "\n")
            .collect();
        let dir = std::env::temp_dir().join(format!("throttlekit-sentinel-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a sentinel dir");
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor {SERVICE} 127.0.0.1 {master_port} 2\n\
                 sentinel down-after-milliseconds {SERVICE} 1000\nsentinel failover-timeout {SERVICE} 3000\n\
                 sentinel parallel-syncs {SERVICE} 1\n{extra}",
                dir.display()
            ),
        )
        .expect("write sentinel.conf");
        let mut child = Command::new(crate::redis_server::binary())
            .arg(&conf)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start a sentinel");
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            if sentinel_pid(port, &conf_lines.cli_auth) == Some(pid) {
                return Sentinel { child, port, tls_port, dir };
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        eprintln!("sentinel could not serve port {port} (attempt {attempt}); trying another port");
    }
    panic!("a sentinel did not start on any of 6 fresh ports");
}

/// The PID of whichever process answers on `port`, logging in with `auth` (redis-cli args).
fn sentinel_pid(port: u16, auth: &[String]) -> Option<u32> {
    if auth.is_empty() {
        return server_pid(port).ok();
    }
    let mut args: Vec<&str> = auth.iter().map(String::as_str).collect();
    args.extend(["info", "server"]);
    crate::redis_server::field(&cli(port, &args)?, "process_id")?.parse().ok()
}

/// `SENTINEL MASTER <service>` field `name` as seen by the sentinel on `port`.
fn master_field(port: u16, auth: &[String], name: &str) -> Option<String> {
    let mut args: Vec<&str> = auth.iter().map(String::as_str).collect();
    args.extend(["sentinel", "master", SERVICE]);
    let text = cli(port, &args)?;
    let lines: Vec<&str> = text.lines().collect();
    lines.chunks(2).find(|kv| kv[0] == name).and_then(|kv| kv.get(1).map(|v| v.to_string()))
}

impl SentinelSetup {
    /// The setup, with `extra` arguments for the master and the replica (an ACL user, say).
    pub fn start_with(extra: &[String]) -> SentinelSetup {
        SentinelSetup::start_configured(extra, &SentinelConf::default())
    }

    /// [`SentinelSetup::start_with`], the sentinels configured by `conf`.
    pub fn start_configured(extra: &[String], conf: &SentinelConf) -> SentinelSetup {
        SentinelSetup::start_monitoring(extra, conf, |port| port)
    }

    /// [`SentinelSetup::start_configured`] with the sentinels monitoring the master at
    /// `monitor(its port)` (a fault proxy in front of it, say); the replica replicates from the
    /// master directly.
    pub fn start_monitoring(extra: &[String], conf: &SentinelConf, monitor: impl FnOnce(u16) -> u16) -> SentinelSetup {
        let master = RedisServer::start_with(extra, free_port);
        let master_port = if conf.tls { master.tls_port.expect("a TLS master") } else { master.port };
        let mut replica_args = vec!["--replicaof".to_string(), "127.0.0.1".to_string(), master_port.to_string()];
        replica_args.extend_from_slice(extra);
        let replica = RedisServer::start_with(&replica_args, free_port);
        let monitored = monitor(master_port);
        let setup =
            SentinelSetup { sentinels: (0..3).map(|_| start_sentinel(monitored, conf)).collect(), master, replica };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let ready = setup.sentinels.iter().all(|s| {
                master_field(s.port, &conf.cli_auth, "num-slaves").as_deref() == Some("1")
                    && master_field(s.port, &conf.cli_auth, "num-other-sentinels").as_deref() == Some("2")
            });
            let linked = cli(setup.replica.port, &["info", "replication"])
                .is_some_and(|i| crate::redis_server::field(&i, "master_link_status").as_deref() == Some("up"));
            if ready && linked {
                return setup;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the sentinels did not discover the replica and each other within 30 s");
    }

    /// `redis://127.0.0.1:<port>` of every sentinel.
    pub fn urls(&self) -> Vec<String> {
        self.sentinels.iter().map(|s| format!("redis://127.0.0.1:{}", s.port)).collect()
    }

    /// The master's port when every sentinel names the same one now, else `None`.
    pub fn agreed_master_port(&self) -> Option<u16> {
        let ports: Vec<Option<u16>> = self
            .sentinels
            .iter()
            .map(|s| {
                let text = cli(s.port, &["sentinel", "get-master-addr-by-name", SERVICE])?;
                text.lines().nth(1)?.trim().parse().ok()
            })
            .collect();
        ports.windows(2).all(|w| w[0] == w[1]).then_some(ports[0]).flatten()
    }

    /// The master's port as the first sentinel that answers says now.
    pub fn master_port(&self) -> Option<u16> {
        self.sentinels.iter().find_map(|s| {
            let text = cli(s.port, &["sentinel", "get-master-addr-by-name", SERVICE])?;
            text.lines().nth(1)?.trim().parse().ok()
        })
    }
}
