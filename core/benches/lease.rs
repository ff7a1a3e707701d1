//! One hot key over Redis: the leased mode (batch 100) and cached denials against strict mode,
//! with 1 and 8 processes, in one run (`cargo bench -p throttlekit --bench lease`; `make bench`'s
//! `lease` part). Reports decisions/s and Redis commands per 1k decisions (from `INFO
//! commandstats`), each mode next to strict measured in the same run: the ratios are the result.
//!
//! Each process is this binary run again as a child (`TK_LEASE_CHILD=mode`), checking the key
//! for `TK_BENCH_MS` (default 2000) and printing its decision count.

#[path = "../tests/support/redis_server.rs"]
mod redis_server;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::{FailPolicy, LeaseOptions, Limiter, Mode, Strategy};

fn child(name: &str, url: &str, run_ms: u64) {
    let store = RedisStore::connect_blocking(RedisOptions::from_urls(url)).expect("connect");
    let (strategy, mode) = match name {
        // Admits everything: the cost of a decision, not of a denial.
        "strict" => (Strategy::gcra(1_000_000_000, 1_000, None).unwrap(), Mode::Strict),
        "leased" => (
            Strategy::gcra(1_000_000_000, 1_000, None).unwrap(),
            Mode::Leased(LeaseOptions { batch: 100, ..LeaseOptions::default() }),
        ),
        // A flood of denials: one unit an hour, spent by the parent before the run.
        "strict-denied" => (Strategy::fixed_window(1, 3_600_000).unwrap(), Mode::Strict),
        "cached_deny" => (Strategy::fixed_window(1, 3_600_000).unwrap(), Mode::CachedDeny { max_keys: 1_000 }),
        other => panic!("unknown mode {other}"),
    };
    let limiter = Limiter::builder(strategy)
        .store(Arc::new(store))
        .prefix("bench")
        .fail_policy(FailPolicy::Raise)
        .mode(mode)
        .unwrap()
        .build();
    let key = if name.ends_with("denied") || name == "cached_deny" { "flood" } else { "hot" };
    let end = Instant::now() + Duration::from_millis(run_ms);
    let mut n = 0u64;
    while Instant::now() < end {
        for _ in 0..64 {
            limiter.check_sync(key, 1).expect("check");
        }
        n += 64;
    }
    println!("{n}");
}

/// Round trips since the last `CONFIG RESETSTAT`: the script calls (`FCALL`, `EVALSHA`, `EVAL`)
/// the clients sent. The commands a script runs inside Redis are counted by `INFO
/// commandstats` too, but cost no round trip.
fn commands(port: u16) -> u64 {
    let text = redis_server::cli(port, &["info", "commandstats"]).unwrap_or_default();
    text.lines()
        .filter(|l| {
            ["cmdstat_fcall:", "cmdstat_fcall_ro:", "cmdstat_evalsha:", "cmdstat_eval:"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum()
}

/// Runs `procs` children in `mode`: (decisions/s, Redis commands per 1k decisions).
fn measure(mode: &str, procs: usize, url: &str, port: u16, run_ms: u64) -> (f64, f64) {
    redis_server::cli(port, &["config", "resetstat"]);
    let exe = std::env::current_exe().unwrap();
    let started = Instant::now();
    let kids: Vec<_> = (0..procs)
        .map(|_| {
            Command::new(&exe)
                .env("TK_LEASE_CHILD", mode)
                .env("TK_LEASE_URL", url)
                .env("TK_BENCH_MS", run_ms.to_string())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut decisions = 0u64;
    for k in kids {
        let out = k.wait_with_output().unwrap();
        decisions += String::from_utf8_lossy(&out.stdout).trim().parse::<u64>().unwrap_or(0);
    }
    let secs = started.elapsed().as_secs_f64().max(run_ms as f64 / 1000.0);
    let cmds = commands(port);
    (decisions as f64 / secs, cmds as f64 * 1000.0 / decisions.max(1) as f64)
}

/// `mode`'s round trips as a fraction of strict's.
fn ratio(strict: f64, mode: f64) -> String {
    if mode * 10_000.0 < strict { "<1/10000".to_string() } else { format!("1/{:.0}", strict / mode) }
}

fn main() {
    let run_ms: u64 = std::env::var("TK_BENCH_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000);
    if let Ok(mode) = std::env::var("TK_LEASE_CHILD") {
        return child(&mode, &std::env::var("TK_LEASE_URL").unwrap(), run_ms);
    }
    let server = redis_server::RedisServer::start();
    let (url, port) = (server.url(), server.port);
    // Spend the flood key's one unit.
    let store = RedisStore::connect_blocking(RedisOptions::from_urls(&url)).unwrap();
    let flood =
        Limiter::builder(Strategy::fixed_window(1, 3_600_000).unwrap()).store(Arc::new(store)).prefix("bench").build();
    assert!(flood.check_sync("flood", 1).unwrap().allowed);
    println!("one hot key on a local redis-server, {run_ms} ms per row; each mode next to strict in the same run");
    println!(
        "{:<28} {:>6} {:>12} {:>16} {:>10} {:>12}",
        "mode", "procs", "decisions/s", "calls/1k decisions", "rate x", "cmds ratio"
    );
    for procs in [1, 8] {
        let (strict_rate, strict_cmds) = measure("strict", procs, &url, port, run_ms);
        let (rate, cmds) = measure("leased", procs, &url, port, run_ms);
        println!(
            "{:<28} {procs:>6} {strict_rate:>12.0} {strict_cmds:>16.1} {:>10} {:>12}",
            "strict (admitting)", "1", "1"
        );
        println!(
            "{:<28} {procs:>6} {rate:>12.0} {cmds:>16.2} {:>9.1}x {:>11}",
            "leased batch 100",
            rate / strict_rate,
            ratio(strict_cmds, cmds)
        );
        let (deny_rate, deny_cmds) = measure("strict-denied", procs, &url, port, run_ms);
        let (cached_rate, cached_cmds) = measure("cached_deny", procs, &url, port, run_ms);
        println!(
            "{:<28} {procs:>6} {deny_rate:>12.0} {deny_cmds:>16.1} {:>10} {:>12}",
            "strict (flood of denials)", "1", "1"
        );
        println!(
            "{:<28} {procs:>6} {cached_rate:>12.0} {cached_cmds:>16.2} {:>9.1}x {:>11}",
            "cached_deny",
            cached_rate / deny_rate,
            ratio(deny_cmds, cached_cmds)
        );
    }
}
