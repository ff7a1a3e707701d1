//! The JVM bench's Redis peer: the same checks from Rust, on the same server, in the same run
//! (bindings-jvm/bench/run.sh). Prints `rust sequential <checks/s>` (blocking `check_sync`) and
//! `rust in-flight-64 <checks/s>` (64 `check().await`s in flight on the store's connection).
//!
//!     cargo run --release -p throttlekit-jvm --example redis_peer -- redis://127.0.0.1:PORT N [M]
//!
//! N sequential checks, then M in flight (default N; JvmBench times its in-flight rounds longer
//! than its sequential ones).
//!
//! With `window START END` (epoch ms) instead it runs blocking checks only, counting those made
//! between the two instants, and prints `rust window <checks/s>`; with `window-in-flight START
//! END`, 64 tasks of `check().await`, printing `rust window-in-flight-64 <checks/s>`. JvmBench
//! runs its own checks in the same window, so both sides meet the same load on this shared
//! machine (run one after the other, the two sides measured 0.27-1.54x of each other from one
//! run to the next: a round trip is mostly waiting to be scheduled).

use std::sync::Arc;
use std::time::Instant;

use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::{Limiter, Strategy};

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("a Redis URL");
    let n: usize = args.next().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let store = Arc::new(RedisStore::connect_blocking(RedisOptions::from_urls(&url)).expect("connect"));
    let strategy = Strategy::gcra(1_000_000_000, 1000, Some(1_000_000_000)).expect("strategy");
    let limiter = Arc::new(Limiter::builder(strategy).store(store).prefix("jvmbench:rust").build());
    for _ in 0..1000 {
        limiter.check_sync("k", 1).expect("check");
    }
    let mut in_flight = n;
    match args.next().as_deref() {
        Some("window") => {
            let (from, to) = instants(&mut args);
            println!("rust window {:.0}", window(from, to, || limiter.check_sync("k", 1).map(|_| ()).expect("check")));
            return;
        }
        Some("window-in-flight") => {
            let (from, to) = instants(&mut args);
            println!("rust window-in-flight-64 {:.0}", window_in_flight(&limiter, from, to));
            return;
        }
        Some(m) => in_flight = m.parse().expect("M: the checks in flight"),
        None => {}
    }
    let start = Instant::now();
    for _ in 0..n {
        limiter.check_sync("k", 1).expect("check");
    }
    println!("rust sequential {:.0}", n as f64 / start.elapsed().as_secs_f64());

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let rate = rt.block_on(async {
        let start = Instant::now();
        let per = in_flight / 64;
        let mut tasks = Vec::new();
        for _ in 0..64 {
            let l = limiter.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..per {
                    l.check("k", 1).await.expect("check");
                }
            }));
        }
        for t in tasks {
            t.await.expect("task");
        }
        (per * 64) as f64 / start.elapsed().as_secs_f64()
    });
    println!("rust in-flight-64 {rate:.0}");
}

/// Runs `check` until epoch ms `to`; returns the checks per second made from epoch ms `from` on
/// (JvmBench's `window` counts the same way).
fn window(from: u128, to: u128, mut check: impl FnMut()) -> f64 {
    while epoch_ms() < from {
        check();
    }
    let start = Instant::now();
    let mut n = 0u64;
    while epoch_ms() < to {
        check();
        n += 1;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn epoch_ms() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_millis()
}

/// The window's START and END (epoch ms) from the command line.
fn instants(args: &mut impl Iterator<Item = String>) -> (u128, u128) {
    let mut at = || args.next().and_then(|v| v.parse::<u128>().ok()).expect("START END (epoch ms)");
    (at(), at())
}

/// 64 tasks checking until epoch ms `to`; the checks per second completed from `from` on, over
/// the nominal window (JvmBench's `windowInFlight` counts the same way).
fn window_in_flight(limiter: &Arc<Limiter>, from: u128, to: u128) -> f64 {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let done = Arc::new(std::sync::atomic::AtomicU64::new(0));
    rt.block_on(async {
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let (l, done) = (limiter.clone(), done.clone());
                tokio::spawn(async move {
                    loop {
                        l.check("k", 1).await.expect("check");
                        let now = epoch_ms();
                        if now >= to {
                            break;
                        }
                        if now >= from {
                            done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("task");
        }
    });
    done.load(std::sync::atomic::Ordering::Relaxed) as f64 / ((to - from) as f64 / 1000.0)
}
