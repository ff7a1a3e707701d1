//! Decisions a second on the Postgres store: one caller in sequence, then 64 in flight, GCRA
//! checks over 10,000 keys (docs/postgres.md, "Numbers").
//!
//!     url=$(tests/postgres-server.sh start /tmp/pg.pid)
//!     cargo run --release -p throttlekit --features postgres --example postgres_bench -- "$url"
//!     tests/postgres-server.sh stop /tmp/pg.pid

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use throttlekit::postgres::{PostgresOptions, PostgresStore};
use throttlekit::{Limiter, Strategy};

#[tokio::main]
async fn main() {
    let url = std::env::args().nth(1).expect("usage: postgres_bench URL");
    let seconds: u64 = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let store =
        PostgresStore::connect(PostgresOptions { pool_size: 4, ..PostgresOptions::new(url) }).await.expect("connect");
    let limiter =
        Arc::new(Limiter::builder(Strategy::gcra(1_000_000, 1000, None).unwrap()).store(Arc::new(store)).build());
    for inflight in [1usize, 64] {
        let done = Arc::new(AtomicU64::new(0));
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let tasks: Vec<_> = (0..inflight)
            .map(|t| {
                let (limiter, done) = (limiter.clone(), done.clone());
                tokio::spawn(async move {
                    let mut i = t as u64;
                    while Instant::now() < deadline {
                        let d = limiter.check(&format!("k{}", i % 10_000), 1).await.expect("a decision");
                        assert!(!d.fallback);
                        done.fetch_add(1, Ordering::Relaxed);
                        i += 64;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let n = done.load(Ordering::Relaxed);
        println!("{inflight:>3} in flight: {:>8.0} decisions/s", n as f64 / seconds as f64);
    }
}
