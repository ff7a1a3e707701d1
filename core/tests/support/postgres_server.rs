//! A throwaway Postgres 15 for integration tests: `tests/postgres-server.sh start` (initdb into a
//! temp dir, a free loopback port), stopped by its postmaster's PID when dropped. A missing
//! Postgres is a failure with a clear message, never a skip: scripts/install-deps.sh installs it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// A running Postgres owned by the test.
pub struct PostgresServer {
    /// `postgres://throttlekit:throttlekit@127.0.0.1:<port>/postgres`.
    pub url: String,
    pidfile: PathBuf,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/postgres-server.sh")
}

impl PostgresServer {
    pub fn start() -> PostgresServer {
        PostgresServer::start_with(false)
    }

    /// A server with TLS on (`TLS=1`): its certificate is from a throwaway CA ([`Self::tls_file`]
    /// `ca.crt`) and names `localhost` only.
    pub fn start_tls() -> PostgresServer {
        PostgresServer::start_with(true)
    }

    /// A file of the TLS server's: `ca.crt` (its CA) or `other-ca.crt` (a CA that signed nothing).
    pub fn tls_file(&self, name: &str) -> PathBuf {
        let text = std::fs::read_to_string(&self.pidfile).expect("the pidfile");
        PathBuf::from(text.split_whitespace().nth(1).expect("a dir")).join("tls").join(name)
    }

    fn start_with(tls: bool) -> PostgresServer {
        let pidfile = std::env::temp_dir().join(format!(
            "throttlekit-pg-{}-{}.pid",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
        ));
        let out = Command::new(script())
            .env("TLS", if tls { "1" } else { "0" })
            .arg("start")
            .arg(&pidfile)
            .output()
            .expect("run tests/postgres-server.sh");
        assert!(
            out.status.success(),
            "could not start Postgres (scripts/install-deps.sh installs postgresql-15): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
        PostgresServer { url, pidfile }
    }

    /// The postmaster's PID (to SIGSTOP it).
    pub fn pid(&self) -> i32 {
        let text = std::fs::read_to_string(&self.pidfile).expect("the pidfile");
        text.split_whitespace().next().and_then(|p| p.parse().ok()).expect("a PID")
    }

    /// Stops the server now (the drop does nothing more).
    pub fn stop(&self) {
        let _ = Command::new(script()).arg("stop").arg(&self.pidfile).status();
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.stop();
    }
}
