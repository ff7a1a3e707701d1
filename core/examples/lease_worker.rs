//! One process of the leased-mode fleet test (tests/lease_fleet.py): checks one hot key on Redis
//! for a while and prints, per admitted request, `sent_ms recv_ms reset_at` (epoch ms; a request
//! answered locally has `sent_ms == recv_ms`).
//!
//! `lease_worker <redis-url> <strategy-json> <mode> <batch> <coupled 0|1> <run-ms> <key>`

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::{FailPolicy, LeaseOptions, Limiter, Mode, Strategy};

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 8 {
        return Err("usage: lease_worker <redis-url> <strategy-json> <mode> <batch> <coupled> <run-ms> <key>".into());
    }
    let store = RedisStore::connect_blocking(RedisOptions::from_urls(&a[1]))?;
    let options = LeaseOptions { batch: a[4].parse()?, window_coupled: a[5] == "1", ..LeaseOptions::default() };
    let limiter = Limiter::builder(Strategy::from_json(&a[2])?)
        .store(Arc::new(store))
        .prefix("fleet")
        .fail_policy(FailPolicy::Raise)
        .mode(Mode::parse(&a[3], options)?)?
        .build();
    let run = Duration::from_millis(a[6].parse()?);
    let mut out = Vec::new();
    let start = Instant::now();
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
    std::io::stdout().write_all(&out)?;
    Ok(())
}
