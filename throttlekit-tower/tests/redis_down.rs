//! The fail policy with a real Redis that goes away: a redis-server is started on a free port,
//! serves one request, and is killed by PID; each fail policy then answers as documented.

#[path = "../../core/tests/support/redis_server.rs"]
mod redis_server;
mod support;

use std::sync::{Arc, Mutex};

use redis_server::RedisServer;
use serde_json::Value;
use support::{get, serve};
use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::{Dimension, FailPolicy, Limiter, MultiLimiter, Rule, Strategy};
use throttlekit_tower::{LimitedEvent, RateLimitLayer};

async fn limiter_on(server: &RedisServer) -> Limiter {
    let options = RedisOptions { urls: vec![server.url()], timeout_ms: 300, ..RedisOptions::default() };
    let store = RedisStore::connect(options).await.expect("connect to the test's redis-server");
    Limiter::builder(Strategy::gcra(5, 60_000, Some(5)).unwrap()).store(Arc::new(store)).prefix("tower-test").build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_fail_policy_answers_as_documented_when_redis_is_down() {
    let mut server = RedisServer::start();
    let raise = serve(RateLimitLayer::new(limiter_on(&server).await)).await;
    let open = serve(RateLimitLayer::new(limiter_on(&server).await).fail_policy(FailPolicy::FailOpen)).await;
    let closed = serve(RateLimitLayer::new(limiter_on(&server).await).fail_policy(FailPolicy::FailClosed)).await;

    // Up: decided by Redis, fields sent.
    let up = get(raise, "/limited").await;
    assert_eq!(up.status, 200);
    assert!(up.header("ratelimit").unwrap().starts_with("\"default\";r=4;t="), "{:?}", up.header("ratelimit"));

    server.stop();

    // raise (the default): 503 with a temporary-reduced-capacity problem.
    let down = get(raise, "/limited").await;
    assert_eq!(down.status, 503);
    assert_eq!(down.header("content-type"), Some("application/problem+json"));
    let body: Value = serde_json::from_str(&down.body).unwrap();
    assert_eq!(body["type"], "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity");
    assert_eq!(body["status"], 503);

    // fail open: forwarded, and no rate-limit field (nothing is known about the quota).
    let through = get(open, "/limited").await;
    assert_eq!(through.status, 200);
    assert_eq!(through.body, "ok");
    assert!(through.rate_lines().is_empty(), "{:?}", through.rate_lines());

    // fail closed: a 429 whose only field is Retry-After: 1.
    let shut = get(closed, "/limited").await;
    assert_eq!(shut.status, 429);
    assert_eq!(shut.rate_lines(), vec!["retry-after: 1"]);

    // The health check never touches the store.
    assert_eq!(get(raise, "/healthz").await.status, 200);
}

async fn multi_on(server: &RedisServer) -> MultiLimiter {
    let options = RedisOptions { urls: vec![server.url()], timeout_ms: 300, ..RedisOptions::default() };
    let store = RedisStore::connect(options).await.expect("connect to the test's redis-server");
    let dims = vec![
        Dimension::new("burst", Strategy::gcra(5, 60_000, Some(5)).unwrap()),
        Dimension::new("daily", Strategy::fixed_window(100, 86_400_000).unwrap()),
    ];
    MultiLimiter::new(Rule::All, dims).unwrap().with_store(Arc::new(store)).with_prefix("tower-multi")
}

/// A multi limiter's store going away is settled as a single limiter's is (core's `HttpEdge`):
/// 503 under `raise`, forwarded with no field under fail-open, 429 with only `Retry-After: 1`
/// under fail-closed, whose hook is told of a denial that no dimension bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_limiter_answers_each_fail_policy_when_redis_is_down() {
    let mut server = RedisServer::start();
    let events: Arc<Mutex<Vec<LimitedEvent>>> = Arc::default();
    let seen = events.clone();
    let raise = serve(RateLimitLayer::multi(multi_on(&server).await)).await;
    let open = serve(RateLimitLayer::multi(multi_on(&server).await).fail_policy(FailPolicy::FailOpen)).await;
    let closed = serve(
        RateLimitLayer::multi(multi_on(&server).await)
            .fail_policy(FailPolicy::FailClosed)
            .on_limited(move |e| seen.lock().unwrap().push(e.clone())),
    )
    .await;

    let up = get(closed, "/limited").await;
    assert_eq!(up.status, 200);
    assert!(up.header("ratelimit").unwrap().starts_with("\"burst\";r=4;t="), "{:?}", up.header("ratelimit"));

    server.stop();

    let down = get(raise, "/limited").await;
    assert_eq!(down.status, 503);
    assert_eq!(down.header("content-type"), Some("application/problem+json"));
    let through = get(open, "/limited").await;
    assert_eq!(through.status, 200);
    assert_eq!(through.body, "ok");
    assert!(through.rate_lines().is_empty(), "{:?}", through.rate_lines());
    let shut = get(closed, "/limited").await;
    assert_eq!(shut.status, 429);
    assert_eq!(shut.rate_lines(), vec!["retry-after: 1"]);
    let body: Value = serde_json::from_str(&shut.body).unwrap();
    assert_eq!(body["status"], 429);
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(!events[0].decision.allowed && events[0].decision.fallback && events[0].binding.is_none(), "{events:?}");
}
