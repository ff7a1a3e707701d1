//! Redis store throughput against the physical ceiling, in one run (not part of the test suite):
//!
//!     cargo bench -p throttlekit --bench redis
//!
//! Starts a throwaway redis-server, then measures GCRA checks/s through `RedisStore`:
//! sequentially over one connection (sync `check_sync`, and async `check().await` from a
//! current-thread tokio runtime), and with 50 checks in flight on one multiplexed connection.
//! `redis-benchmark` running the identical `EVALSHA` (same script, key and arguments) with 1 and
//! 50 clients gives the ceiling; the ratios are what this bench is for. The measurements run in
//! interleaved rounds, each next to its ceiling, so a noisy neighbour skews a round's rate and its
//! ceiling alike; the report is the median over rounds. `TK_BENCH_N` sets the checks per
//! measurement (default 50000), `TK_BENCH_ROUNDS` the rounds (default 5). The async rows run
//! twice: as a program gets them (the runtime binds itself to the store on its first call, so
//! its calls never cross to the store's thread), and with that binding turned off
//! (`RedisStore::bind_runtimes(false)`: every call hands its request to the store's thread and
//! its reply back, the path of any executor that is not tokio).

#[path = "../tests/support/redis_server.rs"]
mod redis_server;

use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use throttlekit::redis::scripts::SCRIPTS;
use throttlekit::redis::{RedisOptions, RedisStore, Scripting};
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
    let store = Arc::new(
        // EVALSHA, like the redis-benchmark ceiling it is compared with (FCALL has its own
        // rows in benches/redis_topology.rs).
        RedisStore::connect_blocking(RedisOptions {
            urls: vec![server.url()],
            scripting: Scripting::Eval,
            ..RedisOptions::default()
        })
        .unwrap(),
    );
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

    let rounds: usize = std::env::var("TK_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let per = (n / rounds).max(IN_FLIGHT);
    // The runtime a program awaits on: its first call binds it to the store (its own connection,
    // made in the background; the warm-up waits until it is up).
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        limiter.check_at("k", 1, Now::At(NOW)).await.unwrap();
        while !store.bound_connection_ready() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    });
    // A runtime left unbound (`bind_runtimes(false)` while it runs): every call crosses to the
    // store's thread and back.
    let hop = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let on_hop = |f: &dyn Fn() -> f64| {
        store.bind_runtimes(false);
        let r = f();
        store.bind_runtimes(true);
        r
    };
    let mut rows: [Vec<(f64, f64)>; 6] = Default::default();
    // `TK_BENCH_ONLY=inflight`: `n` checks with 50 in flight on the bound current-thread runtime
    // alone, printing where the time goes (CPU per call of this process and of redis-server, and
    // calls per server read: the batches the server sees), numbers a busy machine blurs less
    // than the rate.
    if std::env::var("TK_BENCH_ONLY").as_deref() == Ok("inflight") {
        let cpu = |pid: &str| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let f: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().collect();
            // utime + stime, in ticks of 10 ms (USER_HZ 100).
            f.get(11).and_then(|u| u.parse::<f64>().ok()).unwrap_or(0.0)
                + f.get(12).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0)
        };
        let reads = || {
            let out = Command::new("redis-cli").args(["-p", &server.port.to_string(), "info", "stats"]).output();
            let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
            text.lines()
                .find_map(|l| l.strip_prefix("total_reads_processed:"))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let pid = server.pid().to_string();
        let (c0, s0, r0, start) = (cpu("self"), cpu(&pid), reads(), Instant::now());
        rt.block_on(async {
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
        });
        let secs = start.elapsed().as_secs_f64();
        let (c1, s1, r1) = (cpu("self"), cpu(&pid), reads());
        let per = |ticks: f64| ticks * 10_000.0 / n as f64;
        println!(
            "inflight: {:.0} checks/s; CPU per call: client {:.2} us, server {:.2} us; {:.1} calls per server read",
            n as f64 / secs,
            per(c1 - c0),
            per(s1 - s0),
            n as f64 / (r1 - r0).max(1.0)
        );
        return;
    }
    // `TK_BENCH_ONLY=async|hop|sync` runs only that sequential loop (for `strace`, callgrind).
    if let Ok(only @ ("async" | "hop" | "sync")) = std::env::var("TK_BENCH_ONLY").as_deref() {
        let run = || {
            let start = Instant::now();
            if only == "sync" {
                for _ in 0..n {
                    limiter.check_sync_at("k", 1, NOW).unwrap();
                }
            } else {
                if only == "hop" { &hop } else { &rt }.block_on(async {
                    for _ in 0..n {
                        limiter.check_at("k", 1, Now::At(NOW)).await.unwrap();
                    }
                });
            }
            n as f64 / start.elapsed().as_secs_f64()
        };
        let rate = if only == "hop" { on_hop(&run) } else { run() };
        println!("{only} sequential: {rate:.0} checks/s");
        return;
    }
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..per {
            limiter.check_sync_at("k", 1, NOW).unwrap();
        }
        let sync_seq = per as f64 / start.elapsed().as_secs_f64();
        let ceiling_seq = redis_benchmark(server.port, 1, per);

        let async_seq = rt.block_on(async {
            let start = Instant::now();
            for _ in 0..per {
                limiter.check_at("k", 1, Now::At(NOW)).await.unwrap();
            }
            per as f64 / start.elapsed().as_secs_f64()
        });

        let hop_seq = on_hop(&|| {
            hop.block_on(async {
                let start = Instant::now();
                for _ in 0..per {
                    limiter.check_at("k", 1, Now::At(NOW)).await.unwrap();
                }
                per as f64 / start.elapsed().as_secs_f64()
            })
        });
        let in_flight_on = |rt: &tokio::runtime::Runtime| {
            rt.block_on(async {
                let start = Instant::now();
                let tasks: Vec<_> = (0..IN_FLIGHT)
                    .map(|_| {
                        let l = limiter.clone();
                        tokio::spawn(async move {
                            for _ in 0..per / IN_FLIGHT {
                                l.check_at("k", 1, Now::At(NOW)).await.unwrap();
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await.unwrap();
                }
                (per / IN_FLIGHT * IN_FLIGHT) as f64 / start.elapsed().as_secs_f64()
            })
        };
        let in_flight = in_flight_on(&rt);
        let hop_in_flight = on_hop(&|| in_flight_on(&hop));
        let raw = rt.block_on(async {
            let client = redis::Client::open(server.url()).unwrap();
            let mut c = client.get_multiplexed_async_connection().await.unwrap();
            let mut cmd = redis::cmd("EVALSHA");
            cmd.arg(&SCRIPTS.gcra.sha)
                .arg(1)
                .arg("bench:k")
                .arg(NOW)
                .arg("check")
                .arg(1)
                .arg(1_000_000_000)
                .arg(1000)
                .arg(1_000_000_000);
            let start = Instant::now();
            for _ in 0..per {
                let _: redis::Value = c.send_packed_command(&cmd).await.unwrap();
            }
            per as f64 / start.elapsed().as_secs_f64()
        });
        rows[3].push((raw, ceiling_seq));
        let ceiling_50 = redis_benchmark(server.port, IN_FLIGHT, per * 2);
        rows[0].push((sync_seq, ceiling_seq));
        rows[1].push((async_seq, ceiling_seq));
        rows[2].push((in_flight, ceiling_50));
        rows[4].push((hop_seq, ceiling_seq));
        rows[5].push((hop_in_flight, ceiling_50));
    }
    println!(
        "redis-server {}",
        String::from_utf8_lossy(&Command::new("redis-server").arg("--version").output().unwrap().stdout).trim()
    );
    println!(
        "{:<44} {:>12} {:>12} {:>7}   ({rounds} rounds of {per}; medians; ratio per round)",
        "", "checks/s", "ceiling", "ratio"
    );
    for ((name, target), row) in [
        ("sequential, one connection (check_sync)", 0.9),
        ("sequential async check (the default)", 0.9),
        ("50 in flight, one multiplexed connection", 0.7),
        ("reference: redis-rs on the caller's runtime", 0.9),
        ("sequential async, runtime not bound (hop)", 0.9),
        ("50 in flight, runtime not bound (hop)", 0.7),
    ]
    .into_iter()
    .zip(rows)
    {
        let rate = median(row.iter().map(|r| r.0).collect());
        let ceiling = median(row.iter().map(|r| r.1).collect());
        let ratios: Vec<f64> = row.iter().map(|r| r.0 / r.1).collect();
        let list = ratios.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(" ");
        println!(
            "{name:<44} {rate:>12.0} {ceiling:>12.0} {:>6.2}x  (target >= {target}x)  [{list}]",
            median(ratios.clone())
        );
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}
