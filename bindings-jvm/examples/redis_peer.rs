//! The JVM bench's Redis peer: the same checks from Rust, on the same server, in the same run
//! (bindings-jvm/bench/run.sh). Prints `rust sequential <checks/s>` (blocking `check_sync`) and
//! `rust in-flight-64 <checks/s>` (64 `check().await`s in flight on the store's connection).
//!
//!     cargo run --release -p throttlekit-jvm --example redis_peer -- redis://127.0.0.1:PORT N

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
    let start = Instant::now();
    for _ in 0..n {
        limiter.check_sync("k", 1).expect("check");
    }
    println!("rust sequential {:.0}", n as f64 / start.elapsed().as_secs_f64());

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let rate = rt.block_on(async {
        let start = Instant::now();
        let per = n / 64;
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
