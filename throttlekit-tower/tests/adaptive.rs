//! The shedding layer on a real axum server, driven by a real hyper client over loopback TCP.

mod support;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing;
use http::StatusCode;
use support::{get, serve_router};
use throttlekit::concurrency::{AdaptiveConfig, AdaptiveLimiter, AlgorithmKind};
use throttlekit_tower::AdaptiveLayer;
use tokio::sync::Semaphore;

fn fixed(limit: i64) -> AdaptiveLimiter {
    AdaptiveLimiter::new(AdaptiveConfig { initial_limit: Some(limit), ..AdaptiveConfig::new(AlgorithmKind::Fixed) })
        .unwrap()
}

/// `/slow` waits for a token of `gate`; `/unavailable` answers 503 itself; `/ok` answers at once.
fn app(layer: AdaptiveLayer, gate: Arc<Semaphore>) -> Router {
    Router::new()
        .route(
            "/slow",
            routing::get(move || {
                let gate = gate.clone();
                async move {
                    gate.acquire().await.unwrap().forget();
                    "done"
                }
            }),
        )
        .route("/unavailable", routing::get(|| async { (StatusCode::SERVICE_UNAVAILABLE, "down") }))
        .route("/ok", routing::get(|| async { "ok" }))
        .layer(layer)
}

async fn until(mut f: impl FnMut() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached in 5 s");
}

#[tokio::test]
async fn a_full_limit_is_shed_with_503_and_retry_after_and_never_reaches_the_service() {
    let limiter = fixed(2);
    let gate = Arc::new(Semaphore::new(0));
    let addr = serve_router(app(AdaptiveLayer::new(limiter.clone()), gate.clone()), false).await;
    let slow: Vec<_> = (0..2).map(|_| tokio::spawn(async move { get(addr, "/slow").await })).collect();
    until(|| limiter.inflight() == 2).await;
    let shed = get(addr, "/ok").await;
    assert_eq!(shed.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(shed.header("retry-after"), Some("1"));
    assert_eq!(shed.body, "");
    gate.add_permits(2);
    for s in slow {
        assert_eq!(s.await.unwrap().status, StatusCode::OK);
    }
    assert_eq!(get(addr, "/ok").await.status, StatusCode::OK);
    let m = limiter.metrics();
    assert_eq!((m.inflight, m.rejected, m.succeeded, m.leaked), (0, 1, 3, 0));
}

#[tokio::test]
async fn a_503_from_below_is_a_drop_and_a_waiting_request_gets_the_freed_permit() {
    let limiter = fixed(1);
    let gate = Arc::new(Semaphore::new(0));
    let layer = AdaptiveLayer::new(limiter.clone()).wait(Duration::from_secs(10));
    let addr = serve_router(app(layer, gate.clone()), false).await;
    assert_eq!(get(addr, "/unavailable").await.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(limiter.metrics().dropped, 1);
    let slow = tokio::spawn(async move { get(addr, "/slow").await });
    until(|| limiter.inflight() == 1).await;
    let waiting = tokio::spawn(async move { get(addr, "/ok").await });
    until(|| limiter.metrics().waiting == 1).await;
    gate.add_permits(1);
    assert_eq!(slow.await.unwrap().status, StatusCode::OK);
    assert_eq!(waiting.await.unwrap().status, StatusCode::OK, "the waiter was served, not shed");
    assert_eq!(limiter.metrics().rejected, 0);
}

#[tokio::test]
async fn requests_are_partitioned_by_the_callers_function() {
    let config = AdaptiveConfig {
        initial_limit: Some(1),
        partitions: vec![throttlekit::concurrency::PartitionConfig { name: "live".into(), percent: 100.0 }],
        ..AdaptiveConfig::new(AlgorithmKind::Fixed)
    };
    let limiter = AdaptiveLimiter::new(config).unwrap();
    let gate = Arc::new(Semaphore::new(0));
    let layer = AdaptiveLayer::new(limiter.clone())
        .partition(|parts| parts.headers.get("x-class").map(|v| v.to_str().unwrap().to_string()));
    let addr = serve_router(app(layer, gate), false).await;
    let bad = support::get_with(addr, "/ok", &[("x-class", "unknown")]).await;
    assert_eq!(bad.status, StatusCode::INTERNAL_SERVER_ERROR, "an unknown partition is a configuration mistake");
    let live = support::get_with(addr, "/ok", &[("x-class", "live")]).await;
    assert_eq!(live.status, StatusCode::OK);
    assert_eq!(limiter.metrics().partitions, vec![("live".to_string(), 0)]);
}
