//! The Rust service of `tests/adaptive-service.sh`: an axum server with a fixed number of
//! workers, each request holding one for a lognormal service time (median `SERVICE_MS`, sigma
//! 0.5, a seeded generator), behind [`AdaptiveLayer`] with the default algorithm (or not, with
//! `--no-shed`).
//!
//! `cargo run -p throttlekit-tower --example adaptive_service -- PORT WORKERS SERVICE_MS [--no-shed]`

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use throttlekit::concurrency::{AdaptiveConfig, AdaptiveLimiter};
use throttlekit_tower::AdaptiveLayer;
use tokio::sync::Semaphore;

/// A seeded splitmix64 stream: the same service times on every run.
struct Rng(AtomicU64);

impl Rng {
    fn uniform(&self) -> f64 {
        let mut z = self.0.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed).wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Box-Muller: a lognormal with median `median` and sigma 0.5.
    fn lognormal(&self, median: f64) -> f64 {
        let normal = (-2.0 * (1.0 - self.uniform()).ln()).sqrt() * (2.0 * std::f64::consts::PI * self.uniform()).cos();
        median * (0.5 * normal).exp()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: adaptive_service PORT WORKERS SERVICE_MS [--no-shed]";
    let port: u16 = args.get(1).ok_or(usage)?.parse()?;
    let workers: usize = args.get(2).ok_or(usage)?.parse()?;
    let service_ms: f64 = args.get(3).ok_or(usage)?.parse()?;
    let pool = Arc::new(Semaphore::new(workers));
    let rng = Arc::new(Rng(AtomicU64::new(1)));
    let handler = move || {
        let (pool, rng) = (pool.clone(), rng.clone());
        async move {
            let _worker = pool.acquire().await.expect("the pool is never closed");
            tokio::time::sleep(Duration::from_secs_f64(rng.lognormal(service_ms) / 1000.0)).await;
            "ok"
        }
    };
    let mut app = Router::new().route("/", get(handler));
    if !args.iter().any(|a| a == "--no-shed") {
        let config = AdaptiveConfig { window_min_samples: Some(20), ..AdaptiveConfig::default() };
        app = app.layer(AdaptiveLayer::new(AdaptiveLimiter::new(config)?));
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    axum::serve(listener, app).await?;
    Ok(())
}
