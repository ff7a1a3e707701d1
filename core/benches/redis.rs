//! Redis store throughput against the physical ceiling, in one run (not part of the test suite):
//!
//!     cargo bench -p throttlekit --bench redis
//!
//! Starts a throwaway redis-server, then measures GCRA checks/s through `RedisStore`:
//! sequentially over one connection (sync `check_sync`, and async `check().await` from a
//! current-thread tokio runtime), and with 50 checks in flight on one multiplexed connection.
//! `redis-benchmark` running the identical `EVALSHA` (same script, key and arguments) with 1 and
//! 50 clients gives the ceiling; the ratios are what this bench is for. Each row is measured in
//! paired rounds: its own `redis-benchmark` run right before or after it (who goes first
//! alternates), after one warm-up round that is not counted; the row's ratio is the median of
//! the rounds' ratios. The servers run on one CPU and every client, ours and `redis-benchmark`,
//! on another, and each row prints the CPU per call of both clients and of the server
//! (`support/placement.rs` says why). `TK_BENCH_N` sets the calls per side per round (default
//! 20000), `TK_BENCH_ROUNDS` the rounds (default 5), `TK_BENCH_PIN` the CPUs. The async rows run
//! twice: as a program gets them (the runtime binds itself to the store on its first call, so
//! its calls never cross to the store's thread), and with that binding turned off
//! (`RedisStore::bind_runtimes(false)`: every call hands its request to the store's thread and
//! its reply back, the path of any executor that is not tokio).

#[path = "support/placement.rs"]
mod placement;
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

fn main() {
    let n: usize = std::env::var("TK_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let server = redis_server::RedisServer::start();
    // Every server on one CPU, every client on the other, before the store starts its threads
    // (they inherit the mask, as redis-benchmark does): `support/placement.rs`.
    let place = placement::Placement::from_env();
    place.pin_server(server.pid());
    place.pin_clients();
    let servers = vec![server.pid()];
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
    let per = n.max(IN_FLIGHT);
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
    let on_hop = |f: &dyn Fn() -> placement::Sample| {
        store.bind_runtimes(false);
        let r = f();
        store.bind_runtimes(true);
        r
    };
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
        let rate = if only == "hop" {
            on_hop(&|| placement::Sample { rate: run(), ..Default::default() }).rate
        } else {
            run()
        };
        println!("{only} sequential: {rate:.0} checks/s");
        return;
    }
    // Every row: ours and redis-benchmark back to back in each round, who goes first
    // alternating; round 0 is a warm-up, not counted (it fills the caches, faults the server's
    // pages in, and wakes a CPU that idled while the store connected).
    let peer = placement::RedisBenchmark {
        port: server.port,
        server_pids: servers.clone(),
        command: placement::gcra_evalsha(&SCRIPTS.gcra.sha, "bench:k", NOW),
    };
    let (fixed_1, fixed_50) = (peer.fixed(1), peer.fixed(IN_FLIGHT));
    let raw_conn = rt.block_on(async {
        redis::Client::open(server.url()).unwrap().get_multiplexed_async_connection().await.unwrap()
    });
    let raw_cmd = placement::command(&peer.command);
    let in_flight_on = |rt: &tokio::runtime::Runtime| {
        rt.block_on(async {
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
        })
    };
    let flight = per / IN_FLIGHT * IN_FLIGHT;
    let mut duels: [placement::Duel; 6] = Default::default();
    for round in 0..=rounds {
        let sequential = || peer.measure(1, per, fixed_1);
        let parallel = || peer.measure(IN_FLIGHT, flight, fixed_50);
        let mut rows: [placement::Duel; 6] = Default::default();
        rows[0].round(
            round,
            || {
                placement::ours(per, &servers, || {
                    for _ in 0..per {
                        limiter.check_sync_at("k", 1, NOW).unwrap();
                    }
                })
            },
            sequential,
        );
        rows[1].round(
            round,
            || {
                placement::ours(per, &servers, || {
                    rt.block_on(async {
                        for _ in 0..per {
                            limiter.check_at("k", 1, Now::At(NOW)).await.unwrap();
                        }
                    })
                })
            },
            sequential,
        );
        rows[2].round(round, || placement::ours(flight, &servers, || in_flight_on(&rt)), parallel);
        rows[3].round(
            round,
            || {
                placement::ours(per, &servers, || {
                    rt.block_on(async {
                        let mut c = raw_conn.clone();
                        for _ in 0..per {
                            let _: redis::Value = c.send_packed_command(&raw_cmd).await.unwrap();
                        }
                    })
                })
            },
            sequential,
        );
        rows[4].round(
            round,
            || {
                on_hop(&|| {
                    placement::ours(per, &servers, || {
                        hop.block_on(async {
                            for _ in 0..per {
                                limiter.check_at("k", 1, Now::At(NOW)).await.unwrap();
                            }
                        })
                    })
                })
            },
            sequential,
        );
        rows[5].round(round, || on_hop(&|| placement::ours(flight, &servers, || in_flight_on(&hop))), parallel);
        if round > 0 {
            for (all, this) in duels.iter_mut().zip(rows) {
                all.ours.extend(this.ours);
                all.peer.extend(this.peer);
            }
        }
    }
    println!(
        "redis-server {}; {}",
        String::from_utf8_lossy(&Command::new("redis-server").arg("--version").output().unwrap().stdout).trim(),
        place.describe()
    );
    println!(
        "{rounds} paired rounds of {per} calls a side (after one warm-up round); ratio: ours / redis-benchmark's calls/s"
    );
    for ((name, target), duel) in [
        ("sequential, one connection (check_sync)", 0.9),
        ("sequential async check (the default)", 0.9),
        ("50 in flight, one multiplexed connection", 0.7),
        ("reference: redis-rs on the caller's runtime", 0.9),
        ("sequential async, runtime not bound (hop)", 0.9),
        ("50 in flight, runtime not bound (hop)", 0.7),
    ]
    .into_iter()
    .zip(&duels)
    {
        let peer = if name.starts_with("50") { "redis-benchmark -c 50" } else { "redis-benchmark -c 1" };
        println!("{name:<44} {:>6.2}x  (target >= {target}x)", duel.ratio());
        println!("    {}", duel.detail(peer));
        println!(
            "ROW\tredis-core: {name}\tredis-benchmark, same EVALSHA\t{:.2}\t>={target}\t{}",
            duel.ratio(),
            duel.detail(peer)
        );
    }
}
