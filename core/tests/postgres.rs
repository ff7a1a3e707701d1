//! The Postgres store on a real Postgres 15 (tests/postgres-server.sh): every vectors file and
//! the random dual-path timelines decide as the memory store does, byte for byte; exactly K
//! admissions under concurrency on a new and on an existing key; multi checks over overlapping
//! dimensions in different orders neither deadlock nor charge in part; a stopped or paused
//! server answers every call within its timeout through the fail policy; bad configuration is
//! a coded error.
#![cfg(feature = "postgres")]

#[path = "support/postgres_server.rs"]
mod postgres_server;
#[path = "support/timelines.rs"]
mod timelines;
#[path = "support/vectors.rs"]
mod vectors;

use std::fmt::Write as _;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres_server::PostgresServer;
use throttlekit::postgres::{PostgresOptions, PostgresStore};
use throttlekit::{
    Clock, Dimension, ErrorCode, FailPolicy, Limiter, ManualClock, MemoryStore, MultiLimiter, Rule, Store, Strategy,
    SystemClock,
};

/// Connecting gets 30 s: these tests time calls, not connecting, and a new backend of the
/// freshly started test server took 0.9-2.5 s at load 20 on 2 cores (psql alike: ~1 s alone,
/// 1.5 s for three at once), past the 3 s default now and then.
fn options(url: &str) -> PostgresOptions {
    PostgresOptions {
        timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(30),
        sweep_interval: None,
        ..PostgresOptions::new(url)
    }
}

#[test]
fn every_vectors_file_and_the_random_timelines_decide_as_memory_does() {
    let server = PostgresServer::start();
    let mut stores = throttlekit::postgres::conformance_stores(&server.url).expect("connect");
    let total = vectors::replay_every_file_as_memory(&mut stores, "on Postgres");
    assert!(total > 100, "only {total} ops replayed");

    let mut ops = 0;
    for seed in 0..400u64 {
        let memory = timelines::run_timeline(seed, Arc::new(MemoryStore::new()));
        let on_pg = timelines::run_timeline(seed, stores().expect("a store"));
        ops += timelines::assert_same(seed, &memory, &on_pg, "postgres");
    }
    assert!(ops > 5_000, "only {ops} ops compared");
    // Each suite's and timeline's rows went with its store.
    drop(stores);
    let out = Command::new("psql").args([&server.url, "-tAc", "SELECT count(*) FROM throttlekit"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0", "rows left behind");
}

/// One key checked, peeked and forecast by limiters of different strategies in turn: each
/// reads the row only under its own kind (the inline checks leave the other kinds' columns as
/// they found them), so the decisions are memory's.
fn mixed_timeline(seed: u64, store: Arc<dyn Store>) -> String {
    let mut rng = timelines::Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut out = String::new();
    let mut now = timelines::start_time(&mut rng);
    let limiters: Vec<(Limiter, i64, i64)> = (0..3)
        .map(|_| {
            let (s, period) = timelines::strategy(&mut rng);
            writeln!(out, "limiter {:?}", s.spec()).ok();
            let limit = s.limit();
            (Limiter::builder(s).store(store.clone()).build(), limit, period)
        })
        .collect();
    let key = format!("mixed{seed}");
    for _ in 0..60 {
        let (limiter, limit, period) = &limiters[rng.below(3) as usize];
        now = timelines::step(&mut rng, now, *period);
        let c = timelines::cost(&mut rng, *limit);
        match rng.below(10) {
            0 => writeln!(out, "{now} peek {:?}", limiter.peek_sync_at(&key, now)),
            1 => writeln!(out, "{now} forecast {c} {:?}", limiter.forecast_sync_at(&key, c, now)),
            _ => writeln!(out, "{now} check {c} {:?}", limiter.check_sync_at(&key, c, now)),
        }
        .ok();
    }
    out
}

#[test]
fn one_key_under_strategies_in_turn_decides_as_memory_does() {
    let server = PostgresServer::start();
    let mut stores = throttlekit::postgres::conformance_stores(&server.url).expect("connect");
    let mut ops = 0;
    for seed in 0..60u64 {
        let memory = mixed_timeline(seed, Arc::new(MemoryStore::new()));
        let on_pg = mixed_timeline(seed, stores().expect("a store"));
        ops += timelines::assert_same(seed, &memory, &on_pg, "postgres");
    }
    assert!(ops > 3_000, "only {ops} ops compared");
}

fn psql(url: &str, sql: &str) {
    let out = Command::new("psql").args([url, "-v", "ON_ERROR_STOP=1", "-qc", sql]).output().expect("psql");
    assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A clock standing still at the present, for tests that count a window's admissions across
/// many round trips (or a paused server): on the system clock a window boundary (or a GCRA
/// interval) passing mid-test would hand out credit again. The store judges expiry by the
/// caller's `now`.
fn still() -> Arc<dyn Clock> {
    Arc::new(ManualClock::new(SystemClock.now_ms()))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().unwrap()
}

/// `tasks` tasks over `stores` stores (separate pools) check `key` `each` times; the admissions.
async fn admitted(
    stores: &[Arc<dyn Store>],
    strategy: &Strategy,
    clock: &Arc<dyn Clock>,
    key: &str,
    tasks: usize,
    each: usize,
) -> usize {
    let mut handles = Vec::new();
    for t in 0..tasks {
        let limiter =
            Limiter::builder(strategy.clone()).store(stores[t % stores.len()].clone()).clock(clock.clone()).build();
        let key = key.to_string();
        handles.push(tokio::spawn(async move {
            let mut n = 0;
            for _ in 0..each {
                let d = limiter.check(&key, 1).await.expect("a decision");
                assert!(!d.fallback);
                n += d.allowed as usize;
            }
            n
        }));
    }
    let mut total = 0;
    for h in handles {
        total += h.await.unwrap();
    }
    total
}

#[test]
fn exactly_k_admitted_under_concurrency_on_a_new_and_an_existing_key() {
    let server = PostgresServer::start();
    runtime().block_on(async {
        let mut stores: Vec<Arc<dyn Store>> = Vec::new();
        for _ in 0..4 {
            stores.push(Arc::new(PostgresStore::connect(options(&server.url)).await.expect("connect")));
        }
        for strategy in [
            Strategy::fixed_window(50, 3_600_000).unwrap(),
            Strategy::gcra(50, 3_600_000, None).unwrap(),
            Strategy::sliding_window_log(50, 3_600_000).unwrap(),
        ] {
            let clock = still();
            // A key nobody has touched: 64 tasks race to create its row.
            let fresh = format!("new-{}", strategy.kind());
            assert_eq!(admitted(&stores, &strategy, &clock, &fresh, 64, 4).await, 50, "{}", strategy.kind());
            // A key that exists with 10 units spent: 40 more.
            let old = format!("old-{}", strategy.kind());
            let limiter = Limiter::builder(strategy.clone()).store(stores[0].clone()).clock(clock.clone()).build();
            assert!(limiter.check(&old, 10).await.unwrap().allowed);
            assert_eq!(admitted(&stores, &strategy, &clock, &old, 64, 4).await, 40, "{}", strategy.kind());
        }
    });
}

#[test]
fn multi_checks_over_overlapping_dimensions_in_either_order_neither_deadlock_nor_charge_in_part() {
    let server = PostgresServer::start();
    runtime().block_on(async {
        let store: Arc<dyn Store> = Arc::new(PostgresStore::connect(options(&server.url)).await.expect("connect"));
        let tight = Strategy::fixed_window(30, 3_600_000).unwrap();
        let loose = Strategy::fixed_window(1000, 3_600_000).unwrap();
        let clock = still();
        let mut handles = Vec::new();
        for t in 0..8 {
            let dims = if t % 2 == 0 {
                vec![Dimension::new("a", tight.clone()), Dimension::new("b", loose.clone())]
            } else {
                vec![Dimension::new("b", loose.clone()), Dimension::new("a", tight.clone())]
            };
            let multi = MultiLimiter::new(Rule::All, dims).unwrap().with_store(store.clone()).with_clock(clock.clone());
            handles.push(tokio::spawn(async move {
                let mut n = 0;
                for _ in 0..20 {
                    n += multi.check(&["k", "k"], 1).await.expect("no deadlock, no error").decision.allowed as usize;
                }
                n
            }));
        }
        let started = Instant::now();
        let mut total = 0;
        for h in handles {
            total += h.await.unwrap();
        }
        assert!(started.elapsed() < Duration::from_secs(30));
        assert_eq!(total, 30);
        // Both dimensions were charged exactly the admitted units: "b" allowed every check, but
        // only the admitted ones committed.
        let peek = |s: &Strategy, key: &str| {
            let limiter = Limiter::builder(s.clone()).store(store.clone()).clock(clock.clone()).build();
            let key = key.to_string();
            async move { limiter.peek(&key).await.unwrap().remaining }
        };
        let keys = MultiLimiter::new(Rule::All, vec![Dimension::new("a", tight.clone())]).unwrap();
        assert_eq!(peek(&tight, &keys.dimension_key("a", "k")).await, 0);
        assert_eq!(peek(&loose, &keys.dimension_key("b", "k")).await, 1000 - 30);
    });
}

/// The server's processes: the postmaster and its children (its backends).
fn server_pids(postmaster: i32) -> Vec<String> {
    let out = Command::new("pgrep").args(["-P", &postmaster.to_string()]).output().expect("pgrep");
    let mut pids: Vec<String> = String::from_utf8_lossy(&out.stdout).split_whitespace().map(String::from).collect();
    pids.push(postmaster.to_string());
    pids
}

#[test]
fn a_paused_or_stopped_server_answers_within_the_timeout_through_the_fail_policy() {
    let server = PostgresServer::start();
    runtime().block_on(async {
        let timeout = Duration::from_millis(500);
        let store: Arc<dyn Store> = Arc::new(
            PostgresStore::connect(PostgresOptions { timeout, ..options(&server.url) }).await.expect("connect"),
        );
        let window = Strategy::fixed_window(100, 3_600_000).unwrap();
        let clock = still();
        let open = Limiter::builder(window.clone())
            .store(store.clone())
            .clock(clock.clone())
            .fail_policy(FailPolicy::FailOpen)
            .build();
        let closed = Limiter::builder(window.clone())
            .store(store.clone())
            .clock(clock.clone())
            .fail_policy(FailPolicy::FailClosed)
            .build();
        assert!(!open.check("k", 1).await.unwrap().fallback);

        let pids = server_pids(server.pid());
        assert!(Command::new("kill").arg("-STOP").args(&pids).status().unwrap().success());
        for (limiter, allowed) in [(&open, true), (&closed, false)] {
            let started = Instant::now();
            let d = limiter.check("k", 1).await.unwrap();
            assert!(d.fallback && d.allowed == allowed, "{d:?}");
            assert!(started.elapsed() < timeout * 3, "answered after {:?}", started.elapsed());
        }
        assert!(Command::new("kill").arg("-CONT").args(&pids).status().unwrap().success());
        // The two statements sent into the paused server ran once each when it resumed: they
        // were not resent by the store (that would charge 4), and calls work again.
        let spent = || async { 100 - open.peek("k").await.unwrap().remaining };
        let deadline = Instant::now() + Duration::from_secs(5);
        while spent().await < 3 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(spent().await, 3);
        let d = open.check("k", 1).await.unwrap();
        assert!(!d.fallback && d.remaining == 96, "{d:?}");

        server.stop();
        for (limiter, allowed) in [(&open, true), (&closed, false)] {
            let started = Instant::now();
            let d = limiter.check("k", 1).await.unwrap();
            assert!(d.fallback && d.allowed == allowed, "{d:?}");
            assert!(started.elapsed() < timeout * 3, "answered after {:?}", started.elapsed());
        }
    });
}

#[test]
fn bad_configuration_is_a_coded_error_with_a_clear_message() {
    let server = PostgresServer::start();
    let connect = |o: PostgresOptions| PostgresStore::connect_blocking(o).map(|_| ()).unwrap_err();

    let e = connect(options("definitely not a url ::"));
    assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{e}");
    assert!(e.message().contains("postgres.url"), "{e}");

    let e = connect(PostgresOptions { table: "Bad;Name".into(), ..options(&server.url) });
    assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{e}");

    let e = connect(options(&server.url.replace("throttlekit:throttlekit@", "throttlekit:wrong@")));
    assert_eq!(e.code(), ErrorCode::StoreUnavailable, "{e}");
    assert!(e.message().contains("authentication failed"), "{e}");

    let e = connect(PostgresOptions { table: "missing".into(), migrate: false, ..options(&server.url) });
    assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{e}");
    assert!(e.message().contains("does not exist"), "{e}");

    psql(&server.url, "CREATE TABLE misshapen (key text PRIMARY KEY, hits int)");
    for migrate in [false, true] {
        let e = connect(PostgresOptions { table: "misshapen".into(), migrate, ..options(&server.url) });
        assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{e}");
        assert!(e.message().contains("key text, hits integer"), "{e}");
    }

    // migrate, then a store with migrate off works on the table it made.
    let o = PostgresOptions { table: "app.limits".into(), ..options(&server.url) };
    psql(&server.url, "CREATE SCHEMA app");
    runtime().block_on(PostgresStore::migrate(o.clone())).expect("migrate");
    let store = PostgresStore::connect_blocking(PostgresOptions { migrate: false, ..o }).expect("connect");
    let limiter = Limiter::builder(Strategy::gcra(1, 1000, None).unwrap()).store(Arc::new(store)).build();
    assert!(limiter.check_sync_at("k", 1, 5).unwrap().allowed);
    assert!(!limiter.check_sync_at("k", 1, 5).unwrap().allowed);

    let closed_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let e = connect(options(&format!("postgres://throttlekit:throttlekit@127.0.0.1:{closed_port}/postgres")));
    assert_eq!(e.code(), ErrorCode::StoreUnavailable, "{e}");
}

#[test]
fn the_sweeper_deletes_expired_rows_and_one_process_sweeps_at_a_time() {
    let server = PostgresServer::start();
    runtime().block_on(async {
        let store = Arc::new(PostgresStore::connect(options(&server.url)).await.expect("connect"));
        let limiter = Limiter::builder(Strategy::gcra(10, 1000, None).unwrap()).store(store.clone()).build();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
        // Expired in 2001: its deadline is past the grace (60 s) as a number too, so only a
        // sweep that compares it with the server's clock less the grace deletes it.
        limiter.check_at("old", 1, throttlekit::store::Now::At(1_000_000_000_000)).await.unwrap();
        limiter.check_at("live", 1, throttlekit::store::Now::At(now)).await.unwrap();
        limiter.peek("peeked").await.unwrap();
        // Another session holds the sweep lock: this store does not sweep. The session holds it
        // until this test ends it (no sleep of its own to outlast), and the sweep runs only once
        // the lock shows as granted (psql's start-up took over 800 ms on a loaded machine).
        let mut other = Command::new("psql")
            .args([&server.url, "-qc", "SELECT pg_advisory_lock(128002910322690); SELECT pg_sleep(600)"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let held = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted";
        while psql_value(&server.url, held) != "1" {
            assert!(other.try_wait().unwrap().is_none(), "the session holding the lock exited early");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(store.sweep().await.unwrap(), None);
        let ended = "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory'";
        assert_eq!(psql_value(&server.url, ended), "1");
        other.wait().unwrap();
        // The other session's backend releases the lock when it has exited, a moment after psql.
        while psql_value(&server.url, held) != "0" {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // "old" (expired long ago) and "peeked" (a row that reads as no state) go; "live" stays.
        assert_eq!(store.sweep().await.unwrap(), Some(2));
        assert_eq!(limiter.peek_at("live", throttlekit::store::Now::At(now)).await.unwrap().remaining, 9);
    });
}

fn psql_value(url: &str, sql: &str) -> String {
    let out = Command::new("psql").args([url, "-tAc", sql]).output().expect("psql");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn the_server_clock_unlogged_and_asynchronous_commit_options() {
    let server = PostgresServer::start();
    runtime().block_on(async {
        let o = PostgresOptions {
            table: "fast".into(),
            unlogged: true,
            synchronous_commit_off: true,
            ..options(&server.url)
        };
        let store: Arc<dyn Store> = Arc::new(PostgresStore::connect(o).await.expect("connect"));
        assert_eq!(psql_value(&server.url, "SELECT relpersistence FROM pg_class WHERE relname = 'fast'"), "u");

        // The server's clock decides: a GCRA check's reset is the server's now plus one interval.
        // An hour's interval: with a second's, a loaded machine pausing a second between the two
        // checks would let the second one through.
        const PERIOD: i64 = 3_600_000;
        let limiter = Limiter::builder(Strategy::gcra(1, PERIOD as u64, None).unwrap())
            .store(store.clone())
            .server_clock(true)
            .build();
        let ms = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
        let before = ms();
        let d = limiter.check("k", 1).await.unwrap();
        let after = ms();
        assert!(
            d.allowed && d.reset_at >= before + PERIOD && d.reset_at <= after + PERIOD + 1,
            "{d:?} {before} {after}"
        );
        let d = limiter.check("k", 1).await.unwrap();
        assert!(!d.allowed && d.retry_after_ms > 0 && d.retry_after_ms <= PERIOD, "{d:?}");

        // A calendar quota's period is computed in Rust: the server clock cannot decide it.
        let spec = r#"{"kind": "quota", "options": {"limit": 5, "resetCadence": "calendar-day"}}"#;
        let quota = Limiter::builder(Strategy::from_json(spec).unwrap()).store(store).server_clock(true).build();
        let e = quota.check("q", 1).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::NotImplemented, "{e}");
    });
}

#[test]
fn table_names_are_plain_identifiers() {
    use throttlekit::postgres::schema::Table;
    for ok in ["throttlekit", "tk_2", "app.limits", "_x"] {
        assert!(Table::new(ok).is_ok(), "{ok}");
    }
    for bad in ["", "9t", "a.b.c", "Tk", "t;drop table x", "t k", "\"t\"", "a.", &"x".repeat(64)] {
        let e = Table::new(bad).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{bad}");
        assert!(e.message().contains("postgres.table"), "{bad}: {}", e.message());
    }
}

#[test]
fn a_table_of_another_shape_is_named_with_its_columns() {
    use throttlekit::postgres::schema::{COLUMNS, Table, check_shape};
    let t = Table::new("tk").unwrap();
    assert!(check_shape(&t, &[]).unwrap_err().message().contains("does not exist"));
    let cols: Vec<(String, String)> = COLUMNS.iter().map(|(c, t)| (c.to_string(), t.to_string())).collect();
    assert!(check_shape(&t, &cols).is_ok());
    let e = check_shape(&t, &cols[..3]).unwrap_err();
    assert!(e.message().contains("key text, kind smallint, f double precision"), "{}", e.message());
}
