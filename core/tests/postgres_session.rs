//! The sans-IO session (`throttlekit::postgres::session`) on a real Postgres 15 logging in with
//! SCRAM-SHA-256 (tests/postgres-server.sh), driven by a blocking socket here: every vectors
//! file and the random dual-path timelines decide through it as the memory store does; a
//! limiter's `prepare_sql`/`finish_sql` count and decide as its own path does; a wrong
//! password is coded as the tokio store codes it.
#![cfg(feature = "postgres")]

#[path = "support/postgres_server.rs"]
mod postgres_server;
#[path = "support/timelines.rs"]
mod timelines;
#[path = "support/vectors.rs"]
mod vectors;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use postgres_server::PostgresServer;
use throttlekit::postgres::call::{self, Op};
use throttlekit::postgres::schema::{Statements, Table};
use throttlekit::postgres::session::{Done, Endpoint, Session, Tls};
use throttlekit::postgres::{PostgresOptions, PostgresStore};
use throttlekit::store::scoped::{ClearNamespace, ScopedStore};
use throttlekit::store::{BoxFuture, DimensionCall, MultiReply, Now, Reply, Rule, Transform};
use throttlekit::{ErrorCode, Limiter, MemoryStore, Result, Store, Strategy};

/// One socket and its session, driven to completion call by call.
struct Conn {
    socket: TcpStream,
    session: Session<u64>,
}

impl Conn {
    fn open(url: &str) -> Result<Conn> {
        let endpoint = Endpoint::parse(url)?.expect("one host");
        assert_eq!(endpoint.tls, Tls::Prefer);
        let mut socket = TcpStream::connect((endpoint.host.as_str(), endpoint.port)).expect("connect");
        socket.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        // sslmode=prefer: ask, and go on in plain text when the test server (no TLS) declines.
        socket.write_all(&throttlekit::postgres::session::ssl_request()).unwrap();
        let mut answer = [0u8];
        socket.read_exact(&mut answer).unwrap();
        assert_eq!(answer[0], b'N');
        let table = Table::new("throttlekit")?;
        let session = Session::new(endpoint, Statements::new(&table), false)?;
        let mut conn = Conn { socket, session };
        conn.flush();
        while !conn.session.is_ready() {
            conn.read(&mut Vec::new())?;
        }
        Ok(conn)
    }

    fn flush(&mut self) {
        let out = self.session.take_output();
        if !out.is_empty() {
            self.socket.write_all(&out).unwrap();
        }
    }

    fn read(&mut self, done: &mut Vec<Done<u64>>) -> Result<()> {
        let mut buf = [0u8; 8192];
        let n = self.socket.read(&mut buf).expect("read");
        assert!(n > 0, "the server closed the connection");
        self.session.feed(&buf[..n], done)?;
        self.flush();
        Ok(())
    }

    /// Sends `c` and reads until it is done.
    fn run(&mut self, key: &str, c: call::StepCall) -> Done<u64> {
        self.session.call(1, key.to_string(), c).unwrap();
        self.flush();
        let mut done = Vec::new();
        while done.is_empty() {
            self.read(&mut done).expect("a healthy connection");
        }
        done.pop().unwrap()
    }
}

/// A store whose single-key calls go through the session; multi calls and resets through the
/// tokio store on the same table (the session does not carry them).
struct SessionStore {
    conn: Mutex<Conn>,
    tokio: Arc<PostgresStore>,
}

impl Store for SessionStore {
    fn apply<'a>(&'a self, key: &'a str, now: Now, transform: Transform<'a>) -> BoxFuture<'a, Result<Reply>> {
        Box::pin(std::future::ready(self.apply_sync(key, now, transform)))
    }

    fn apply_sync(&self, key: &str, now: Now, transform: Transform<'_>) -> Result<Reply> {
        let c = call::prepare(&transform, now)?;
        self.conn.lock().run(key, c).reply
    }

    fn apply_multi<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        now: Now,
    ) -> BoxFuture<'a, Result<MultiReply>> {
        self.tokio.apply_multi(rule, dims, now)
    }

    fn apply_multi_sync(&self, rule: Rule, dims: &[DimensionCall<'_>], now: Now) -> Result<MultiReply> {
        self.tokio.apply_multi_sync(rule, dims, now)
    }

    fn reset<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        self.tokio.reset(key)
    }

    fn reset_sync(&self, key: &str) -> Result<()> {
        self.tokio.reset_sync(key)
    }

    fn is_sync(&self) -> bool {
        true
    }
}

impl ClearNamespace for SessionStore {
    fn clear_namespace(&self, ns: &str) {
        let _ = self.tokio.delete_prefix_blocking(&format!("{ns}:"));
    }
}

fn options(url: &str) -> PostgresOptions {
    PostgresOptions {
        timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(30),
        sweep_interval: None,
        pool_size: 1,
        ..PostgresOptions::new(url)
    }
}

#[test]
fn every_vectors_file_and_the_random_timelines_decide_through_the_session_as_memory_does() {
    let server = PostgresServer::start();
    // The tokio store creates the schema; the session then prepares on it.
    let tokio = Arc::new(PostgresStore::connect_blocking(options(&server.url)).expect("connect"));
    let store = Arc::new(SessionStore { conn: Mutex::new(Conn::open(&server.url).expect("login")), tokio });
    let counter = AtomicU64::new(0);
    let mut stores = || {
        let ns = format!("session-test:{}", counter.fetch_add(1, Ordering::Relaxed));
        Ok(Arc::new(ScopedStore::new(store.clone(), ns)) as Arc<dyn Store>)
    };
    let total = vectors::replay_every_file_as_memory(&mut stores, "through the session");
    assert!(total > 100, "only {total} ops replayed");
    let mut ops = 0;
    for seed in 0..200u64 {
        let memory = timelines::run_timeline(seed, Arc::new(MemoryStore::new()));
        let through = timelines::run_timeline(seed, stores().expect("a store"));
        ops += timelines::assert_same(seed, &memory, &through, "the postgres session");
    }
    assert!(ops > 2_000, "only {ops} ops compared");
}

#[test]
fn a_limiters_prepared_calls_decide_and_count_as_its_own_path_does() {
    let server = PostgresServer::start();
    let tokio: Arc<dyn Store> = Arc::new(PostgresStore::connect_blocking(options(&server.url)).expect("connect"));
    let mut conn = Conn::open(&server.url).expect("login");
    let clock = throttlekit::ManualClock::new(1_765_000_000_000);
    let strategies = [
        Strategy::gcra(5, 1_000, None).unwrap(),
        Strategy::token_bucket(5, 2.0).unwrap(),
        Strategy::fixed_window(5, 1_000).unwrap(),
        Strategy::sliding_window(5, 1_000, None).unwrap(),
    ];
    for (n, strategy) in strategies.into_iter().enumerate() {
        let build = |store: Arc<dyn Store>, prefix: &str| {
            Limiter::builder(strategy.clone())
                .store(store)
                .clock(Arc::new(clock.clone()))
                .prefix(prefix)
                .metrics(true)
                .build()
        };
        let on_session = build(tokio.clone(), &format!("s{n}"));
        let on_memory = build(Arc::new(MemoryStore::new()), "m");
        for i in 0..12u64 {
            let (op, cost) = [(Op::Check, 1), (Op::Peek, 1), (Op::Forecast, 2), (Op::Check, 2)][i as usize % 4];
            let key = format!("k{}", i % 2);
            let c = on_session.prepare_sql(op, &key, cost).expect("prepared");
            let done = conn.run(&c.key, c.call.clone());
            let got = on_session.finish_sql(&done.call, done.reply).expect("a decision");
            let want = match op {
                Op::Peek => on_memory.peek_sync(&key),
                Op::Forecast => on_memory.forecast_sync(&key, cost),
                _ => on_memory.check_sync(&key, cost),
            }
            .unwrap();
            assert_eq!(got, want, "{strategy:?} call {i} ({op:?})");
            clock.advance(90).unwrap();
        }
        let (s, m) = (on_session.metrics().unwrap().snapshot(), on_memory.metrics().unwrap().snapshot());
        let counts = |x: &throttlekit::metrics::MetricsSnapshot| (x.allowed, x.denied, x.peeks, x.forecasts);
        assert_eq!(counts(&s), counts(&m), "{strategy:?}");
        assert_eq!((s.allowed + s.denied, s.peeks, s.forecasts), (6, 3, 3));
    }
    // A bad cost is refused before the wire, counted as an error.
    let l = Limiter::builder(Strategy::gcra(5, 1_000, None).unwrap()).store(tokio.clone()).metrics(true).build();
    assert_eq!(l.prepare_sql(Op::Check, "k", 0).unwrap_err().code(), ErrorCode::ConfigInvalid);
    // A lost connection through the fail policy: fail-open allows with `fallback`.
    let open = Limiter::builder(Strategy::gcra(5, 1_000, None).unwrap())
        .store(tokio)
        .fail_policy(throttlekit::FailPolicy::FailOpen)
        .build();
    let c = open.prepare_sql(Op::Check, "k", 1).unwrap();
    let d = open.finish_sql(&c.call, Err(throttlekit::Error::store("lost"))).unwrap();
    assert!(d.allowed && d.fallback);
}

#[test]
fn a_wrong_password_is_a_coded_error_naming_authentication() {
    let server = PostgresServer::start();
    let url = server.url.replace("throttlekit:throttlekit@", "throttlekit:wrong@");
    let e = Conn::open(&url).err().expect("refused");
    assert_eq!(e.code(), ErrorCode::StoreUnavailable);
    assert!(e.message().contains("authentication failed"), "{e}");
    let tokio = PostgresStore::connect_blocking(options(&url)).err().expect("refused");
    assert_eq!(tokio.code(), e.code());
}
