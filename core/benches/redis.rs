//! Redis store throughput against the physical ceiling, in one run (not part of the test suite):
//!
//!     cargo bench -p throttlekit --bench redis
//!
//! Starts a throwaway redis-server, then measures GCRA checks/s through `RedisStore`:
//! sequentially over one connection (sync `check_sync`, and async `check().await`), and with 50
//! checks in flight on one multiplexed connection. `redis-benchmark` running the identical
//! `EVALSHA` (same script, key and arguments) with 1 and 50 clients gives the ceiling; the
//! ratios are what this bench is for. Set `TK_BENCH_N` to change the number of checks.

#[path = "../tests/support/redis_server.rs"]
mod redis_server;

use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use throttlekit::redis::scripts::SCRIPTS;
use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::store::Now;
use throttlekit::{Limiter, Strategy};

const NOW: i64 = 1_800_000_000_000;
const IN_FLIGHT: usize = 50;

fn redis_benchmark(port: u16, clients: usize, n: usize) -> f64 {
    let sha = &SCRIPTS.gcra.sha;
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-n", &n.to_string(), "-c", &clients.to_string(), "--csv"])
        .args(["EVALSHA", sha, "1", "bench:k", &NOW.to_string(), "check", "1", "1000000000", "1000", "1000000000"])
        .output()
        .expect("redis-benchmark (apt-get install redis-tools)");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("EVALSHA")).unwrap_or_else(|| panic!("no result in {text}"));
    line.split(',')
        .nth(1)
        .and_then(|f| f.trim_matches('"').parse().ok())
        .unwrap_or_else(|| panic!("cannot parse {line}"))
}

fn main() {
    let n: usize = std::env::var("TK_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(50_000);
    let server = redis_server::RedisServer::start();
    let store =
        Arc::new(RedisStore::connect_blocking(RedisOptions { url: server.url(), ..RedisOptions::default() }).unwrap());
    // The same arguments redis-benchmark sends: limit 1e9 per second, so every check is allowed and writes.
    let limiter = Arc::new(
        Limiter::builder(Strategy::gcra(1_000_000_000, 1000, None).unwrap())
            .store(store.clone())
            .prefix("bench")
            .build(),
    );
    for _ in 0..2000 {
        limiter.check_sync_at("k", 1, NOW).unwrap(); // warm up; caches the script
    }

    let start = Instant::now();
    for _ in 0..n {
        limiter.check_sync_at("k", 1, NOW).unwrap();
    }
    let sync_seq = n as f64 / start.elapsed().as_secs_f64();

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let async_seq = rt.block_on(async {
        let start = Instant::now();
        for _ in 0..n {
            limiter.check_at("k", 1, Now::At(NOW)).await.unwrap();
        }
        n as f64 / start.elapsed().as_secs_f64()
    });

    let in_flight = rt.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..IN_FLIGHT)
            .map(|_| {
                let l = limiter.clone();
                tokio::spawn(async move {
                    for _ in 0..n / IN_FLIGHT {
                        l.check_at("k", 1, Now::At(NOW)).await.unwrap();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        (n / IN_FLIGHT * IN_FLIGHT) as f64 / start.elapsed().as_secs_f64()
    });

    let ceiling_seq = redis_benchmark(server.port, 1, n);
    let ceiling_50 = redis_benchmark(server.port, IN_FLIGHT, n * 2);
    println!(
        "redis-server {}",
        String::from_utf8_lossy(&Command::new("redis-server").arg("--version").output().unwrap().stdout).trim()
    );
    println!("{:<44} {:>12} {:>12} {:>7}", "", "checks/s", "ceiling", "ratio");
    for (name, rate, ceiling, target) in [
        ("sequential, one connection (check_sync)", sync_seq, ceiling_seq, 0.9),
        ("sequential, one connection (async check)", async_seq, ceiling_seq, 0.9),
        ("50 in flight, one multiplexed connection", in_flight, ceiling_50, 0.7),
    ] {
        println!("{name:<44} {rate:>12.0} {ceiling:>12.0} {:>6.2}x  (target >= {target}x)", rate / ceiling);
    }
}
