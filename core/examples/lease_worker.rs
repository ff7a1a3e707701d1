//! One process of the leased-mode fleet test (tests/lease_fleet.py): checks one hot key on Redis
//! for a while and prints, per admitted request, `sent_ms recv_ms reset_at` (epoch ms; a request
//! answered locally has `sent_ms == recv_ms`).
//!
//! `lease_worker <redis-url> <strategy-json> <mode> <batch> <coupled 0|1> <run-ms> <key>`
//!
//! Once its limiter is built it prints `ready` and waits for a line on stdin, so the fleet's
//! processes run their timed loops side by side however long each took to start.
//!
//! A strategy JSON that is a list of `[name, spec]` pairs makes a multi limiter (rule `all`) over
//! those dimensions: the first dimension's key is `<key>`, the others' alternate between `u0` and
//! `u1`; each line then reads `sent_ms recv_ms reset_at user reset_at...` (every dimension's
//! `reset_at`, and the user key's index).

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::{
    Clock, Dimension, FailPolicy, LeaseOptions, Limiter, Mode, MultiLimiter, Rule, Strategy, SystemClock,
};

/// The time on the clock the limiter decides by (its published millisecond, which lags the
/// wall clock when the ticker thread is starved): a decision's time then lies between `sent`
/// and `recv`, so the fleet test puts each admission in the window the limiter put it in, even
/// on a loaded machine. (Read with `SystemTime`, a lagging decision near a window's end was
/// counted in the next window: 41 in a window of 40.)
fn now_ms() -> i64 {
    SystemClock.now_ms()
}

/// Says `ready` and blocks until the fleet writes a line: the start of the timed loop.
fn wait_for_go() -> std::io::Result<Instant> {
    let mut stdout = std::io::stdout();
    stdout.write_all(b"ready\n")?;
    stdout.flush()?;
    std::io::stdin().read_line(&mut String::new())?;
    Ok(Instant::now())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 8 {
        return Err("usage: lease_worker <redis-url> <strategy-json> <mode> <batch> <coupled> <run-ms> <key>".into());
    }
    let store = Arc::new(RedisStore::connect_blocking(RedisOptions::from_urls(&a[1]))?);
    let options = LeaseOptions { batch: a[4].parse()?, window_coupled: a[5] == "1", ..LeaseOptions::default() };
    let mode = Mode::parse(&a[3], options)?;
    let run = Duration::from_millis(a[6].parse()?);
    let mut out = Vec::new();
    if a[2].trim_start().starts_with('[') {
        let pairs: Vec<(String, serde_json::Value)> = serde_json::from_str(&a[2])?;
        let dims = pairs
            .into_iter()
            .map(|(name, spec)| Ok(Dimension::new(name, Strategy::from_json(&spec.to_string())?)))
            .collect::<Result<Vec<_>, throttlekit::Error>>()?;
        let limiter = MultiLimiter::new(Rule::All, dims)?
            .with_store(store)
            .with_prefix("fleet")
            .with_fail_policy(FailPolicy::Raise)
            .with_mode(mode)?;
        let start = wait_for_go()?;
        let mut n = 0u64;
        while start.elapsed() < run {
            n += 1;
            let user = format!("u{}", n % 2);
            let mut keys = vec![a[7].as_str()];
            keys.resize(limiter.dimensions().len(), user.as_str());
            let sent = now_ms();
            let d = limiter.check_sync(&keys, 1)?;
            let recv = now_ms();
            if d.decision.allowed {
                write!(out, "{sent} {recv} {} {}", d.dimensions[0].reset_at, n % 2)?;
                for x in &d.dimensions[1..] {
                    write!(out, " {}", x.reset_at)?;
                }
                writeln!(out)?;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        limiter.release_leases_sync(None)?;
    } else {
        let limiter = Limiter::builder(Strategy::from_json(&a[2])?)
            .store(store)
            .prefix("fleet")
            .fail_policy(FailPolicy::Raise)
            .mode(mode)?
            .build();
        let start = wait_for_go()?;
        while start.elapsed() < run {
            let sent = now_ms();
            let d = limiter.check_sync(&a[7], 1)?;
            let recv = now_ms();
            if d.allowed {
                writeln!(out, "{sent} {recv} {}", d.reset_at)?;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        limiter.release_leases_sync(None)?;
    }
    std::io::stdout().write_all(&out)?;
    Ok(())
}
