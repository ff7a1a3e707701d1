//! The Postgres server's CPU per statement: the store's statements (sent as the store sends
//! them: prepared, binary parameters, pipelined) against a bare one-row upsert
//! (docs/postgres.md, "Numbers").
//!
//!     url=$(tests/postgres-server.sh start /tmp/pg.pid)
//!     cargo run --release -p throttlekit --features postgres --example postgres_statement_cost -- "$url"
//!     tests/postgres-server.sh stop /tmp/pg.pid
//!
//! The server must run on this machine: the CPU is the user + system time of every process of
//! the server (backends, WAL writer, autovacuum, ...; `/proc/PID/stat`) while one statement runs
//! `STATEMENTS` times over 1,000 existing keys from 4 connections, 16 in flight on each, divided
//! by `STATEMENTS`; the median of `ROUNDS` interleaved rounds. Also the share of the table's
//! updates that were HOT (`pg_stat_user_tables`: no index entry written). Every limit is far
//! above the load, so every check is allowed (the common path).

use std::sync::Arc;
use std::time::Instant;

use throttlekit::postgres::call::{Op, StepCall};
use throttlekit::postgres::inline::Inline;
use throttlekit::postgres::schema::{Statements, Table};
use throttlekit::postgres::{PostgresOptions, PostgresStore};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Statement};

const KEYS: usize = 1000;
const CONNECTIONS: usize = 4;
const IN_FLIGHT: usize = 16;
const TABLE: &str = "tk_cost";

/// A statement to measure: its text, the table it updates and its parameters after the key.
struct Case {
    name: &'static str,
    sql: String,
    table: &'static str,
    params: fn(i64) -> Vec<Box<dyn ToSql + Sync + Send>>,
}

/// The parameters of a check of `cost` as the store binds them, for the inline statement `want`.
fn inline_params(
    want: Inline,
    algo: i16,
    params: [f64; 4],
    cost: i64,
) -> impl Fn(i64) -> Vec<Box<dyn ToSql + Sync + Send>> {
    move |now| {
        let [a, b, c, d] = params;
        let call = StepCall { now: Some(now), op: Op::Check, algo, params: [a, b, c, d, 0.0, 0.0], cost };
        let (inline, values) = Inline::bind(&call).expect("an inline check");
        assert_eq!(inline, want, "the statement the store sends");
        values.into_iter().map(|v| Box::new(v) as Box<dyn ToSql + Sync + Send>).collect()
    }
}

// Limits far above the load: GCRA 1e9 per second, a bucket of 1e12, a window of 1e12 per minute.
const GCRA: [f64; 4] = [1e-6, 1e-6 * 1e9, 1e9, 0.0];
const BUCKET: [f64; 4] = [1e12, 1e9, 0.0, 0.0];
const WINDOW: [f64; 4] = [1e12, 60_000.0, 0.0, 0.0];

fn cases(s: &Statements) -> Vec<Case> {
    vec![
        Case {
            name: "the bare upsert (pgbench's)",
            sql: "INSERT INTO tk_ceiling (key, n) VALUES ($1, 1) ON CONFLICT (key) DO UPDATE SET n = tk_ceiling.n + 1"
                .into(),
            table: "tk_ceiling",
            params: |_| vec![],
        },
        Case {
            name: "fixed window, inline, cost 1",
            sql: s.inline[Inline::FixedWindowUnit.index()].clone(),
            table: TABLE,
            params: |now| inline_params(Inline::FixedWindowUnit, 3, WINDOW, 1)(now),
        },
        Case {
            name: "fixed window, inline, cost 2",
            sql: s.inline[Inline::FixedWindow.index()].clone(),
            table: TABLE,
            params: |now| inline_params(Inline::FixedWindow, 3, WINDOW, 2)(now),
        },
        Case {
            name: "GCRA, inline",
            sql: s.inline[Inline::Gcra.index()].clone(),
            table: TABLE,
            params: |now| inline_params(Inline::Gcra, 1, GCRA, 1)(now),
        },
        Case {
            name: "token bucket, inline",
            sql: s.inline[Inline::TokenBucket.index()].clone(),
            table: TABLE,
            params: |now| inline_params(Inline::TokenBucket, 2, BUCKET, 1)(now),
        },
        Case {
            name: "GCRA, throttlekit_v1_step",
            sql: s.step.clone(),
            table: TABLE,
            params: |now| {
                let p: Vec<f64> = [GCRA[0], GCRA[1], GCRA[2], GCRA[3], 0.0, 0.0].to_vec();
                vec![Box::new(Some(now)), Box::new(Op::Check as i16), Box::new(1i16), Box::new(p), Box::new(1i64)]
            },
        },
    ]
}

/// User + system CPU of every process of the server whose postmaster is `postmaster`, in ticks.
fn server_ticks(postmaster: u32) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // The fields after the command's closing parenthesis: state, ppid, ..., utime (the
        // 12th), stime, then the reaped children's cutime, cstime (the postmaster's: the
        // autovacuum workers that exited).
        let Some((head, rest)) = stat.rsplit_once(')') else { continue };
        let pid: u32 = head.split_whitespace().next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let f: Vec<u64> = rest.split_whitespace().skip(1).map(|v| v.parse().unwrap_or(0)).collect();
        if pid == postmaster {
            total += f[10] + f[11] + f[12] + f[13];
        } else if f[0] == u64::from(postmaster) {
            total += f[10] + f[11];
        }
    }
    total
}

/// The clock ticks of `/proc/PID/stat` a second (`getconf CLK_TCK`).
fn ticks_per_second() -> f64 {
    let out = std::process::Command::new("getconf").arg("CLK_TCK").output().expect("getconf");
    String::from_utf8_lossy(&out.stdout).trim().parse().expect("CLK_TCK")
}

async fn connect(url: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

/// `(updates, hot updates)` of `table` so far.
async fn updates(client: &Client, table: &str) -> (i64, i64) {
    let row = client
        .query_one("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = $1", &[&table])
        .await
        .expect("stats");
    (row.get(0), row.get(1))
}

/// Runs `case` `total` times: `CONNECTIONS` connections, `IN_FLIGHT` statements in flight on each.
async fn run(clients: &[(Arc<Client>, Statement)], case: &Case, total: usize, now: i64) {
    let mut tasks = tokio::task::JoinSet::new();
    let per_task = total / (clients.len() * IN_FLIGHT);
    for (c, (client, statement)) in clients.iter().enumerate() {
        for lane in 0..IN_FLIGHT {
            let (client, statement, params) = (client.clone(), statement.clone(), (case.params)(now));
            tasks.spawn(async move {
                let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| &**p as &(dyn ToSql + Sync)).collect();
                for i in 0..per_task {
                    let key = format!("user:{}", (c * IN_FLIGHT + lane + i * CONNECTIONS * IN_FLIGHT) % KEYS);
                    let mut all: Vec<&(dyn ToSql + Sync)> = vec![&key];
                    all.extend(refs.iter().copied());
                    client.query(&statement, &all).await.expect("the statement");
                }
            });
        }
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("a lane");
    }
}

/// Makes `clients`' backends report their table counts (each reports when idle, at most once a
/// second, unless told to).
async fn settle(clients: &[(Arc<Client>, Statement)]) {
    for (client, _) in clients {
        client.simple_query("SELECT pg_stat_force_next_flush()").await.expect("flush");
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
}

#[tokio::main]
async fn main() {
    let url = std::env::args().nth(1).expect("usage: postgres_statement_cost URL");
    let total: usize = std::env::var("STATEMENTS").ok().and_then(|s| s.parse().ok()).unwrap_or(32_000);
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    PostgresStore::migrate(PostgresOptions { table: TABLE.into(), ..PostgresOptions::new(url.clone()) })
        .await
        .expect("migrate");
    let admin = connect(&url).await;
    admin
        .batch_execute("CREATE TABLE IF NOT EXISTS tk_ceiling (key text PRIMARY KEY, n bigint NOT NULL)")
        .await
        .expect("the ceiling's table");
    let postmaster: i32 = admin
        .query_one("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'", &[])
        .await
        .map(|r| r.get::<_, i32>(0))
        .expect("the checkpointer");
    let postmaster = std::fs::read_to_string(format!("/proc/{postmaster}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok()))
        .expect("the server runs on this machine (its processes are read from /proc)");
    let statements = Statements::new(&Table::new(TABLE).expect("table"));
    let cases = cases(&statements);
    let mut prepared = Vec::new();
    for case in &cases {
        let mut clients = Vec::new();
        for _ in 0..CONNECTIONS {
            let client = connect(&url).await;
            let statement = client.prepare(&case.sql).await.expect("prepare");
            clients.push((Arc::new(client), statement));
        }
        prepared.push(clients);
    }
    let epoch = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    // Every key exists, and each connection's plan cache has settled (Postgres plans a prepared
    // statement afresh for its first 5 executions).
    for (case, clients) in cases.iter().zip(&prepared) {
        run(clients, case, KEYS.max(CONNECTIONS * IN_FLIGHT * 8), epoch()).await;
        settle(clients).await;
    }
    let tick = ticks_per_second();
    let mut us: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let mut hot: Vec<(i64, i64)> = vec![(0, 0); cases.len()];
    for _ in 0..rounds {
        for (i, (case, clients)) in cases.iter().zip(&prepared).enumerate() {
            let before = updates(&admin, case.table).await;
            let cpu = server_ticks(postmaster);
            let start = Instant::now();
            run(clients, case, total, epoch()).await;
            let cpu = server_ticks(postmaster) - cpu;
            let wall = start.elapsed();
            us[i].push(cpu as f64 / tick * 1e6 / total as f64);
            settle(clients).await;
            let after = updates(&admin, case.table).await;
            hot[i].0 += after.0 - before.0;
            hot[i].1 += after.1 - before.1;
            eprintln!("  {}: {:.0} us, {:.0}/s", case.name, us[i].last().unwrap(), total as f64 / wall.as_secs_f64());
        }
    }
    println!(
        "server CPU per statement, {total} statements a round, {CONNECTIONS} connections x {IN_FLIGHT} in flight, \
         {KEYS} keys, median of {rounds} rounds"
    );
    for (i, case) in cases.iter().enumerate() {
        us[i].sort_by(f64::total_cmp);
        let (upd, hot_upd) = hot[i];
        println!(
            "{:<32} {:>6.1} us   HOT {:>3.0}% of {} updates",
            case.name,
            us[i][rounds / 2],
            100.0 * hot_upd as f64 / upd.max(1) as f64,
            upd
        );
    }
}
